package dev.protobench.server.stream;

import dev.protobench.v1.SubscribeRequest;
import java.util.concurrent.locks.LockSupport;

/**
 * The events of one subscription still to send, built one at a time when they are due (never
 * prepared in advance). The schedule is anchored once, when the stream starts: System.nanoTime
 * for waiting, the wall clock for the stamps. An event is never sent before its time; a late one
 * is sent at once with its scheduled stamp. At rate 0 each event is stamped when it is built.
 * The event's form is the transport's (a protobuf FeedEvent, or the record Jackson writes as
 * JSON): `maker` builds it. Not thread-safe: one stream uses it from one thread at a time.
 */
public final class Feed<E> {

    /** Builds event seq of `items` items stamped scheduledNs, in a transport's form. */
    @FunctionalInterface
    public interface Maker<E> {
        E event(int seq, int items, long scheduledNs);
    }

    private final Maker<E> maker;
    private final int count;
    private final int items;
    private final int rate;
    private final long baseNanos;
    private final long baseNs;
    /** The schedule offset of the first event sent (non-zero after an SSE Last-Event-ID): due at once. */
    private final long skew;
    private int next;

    /** A feed of `request` (validated) starting now with the event after `after`. */
    public Feed(Maker<E> maker, SubscribeRequest request, int after) {
        this.maker = maker;
        this.count = request.getCount();
        this.items = request.getItems();
        this.rate = request.getRate();
        this.baseNanos = System.nanoTime();
        this.baseNs = StreamRules.nowNs();
        this.next = after + 1;
        this.skew = StreamRules.offsetNs(next, rate);
    }

    public boolean done() {
        return next > count;
    }

    public int count() {
        return count;
    }

    /** Nanoseconds until the next event is due (<= 0: due now). */
    public long delayNanos() {
        if (rate == 0) {
            return 0;
        }
        long offset = StreamRules.offsetNs(next, rate) - skew;
        return baseNanos + offset - System.nanoTime();
    }

    /** Builds the next event (call when done() is false and delayNanos() <= 0). */
    public E take() {
        int seq = next++;
        long stamp = rate == 0 ? StreamRules.nowNs() : baseNs + StreamRules.offsetNs(seq, rate) - skew;
        return maker.event(seq, items, stamp);
    }

    /** Waits (parking this thread) until the next event is due, then builds it; null after the last. */
    public E awaitNext() throws InterruptedException {
        if (done()) {
            return null;
        }
        long delay;
        while ((delay = delayNanos()) > 0) {
            LockSupport.parkNanos(delay);
            if (Thread.interrupted()) {
                throw new InterruptedException();
            }
        }
        return take();
    }
}
