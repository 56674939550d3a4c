package dev.protobench.server;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The injected service time and the failure draw of contract/README.md, shared by every
 * protocol: one process-wide request counter k; request k fails when
 * splitmix64(seed + k) / 2^64 < rate.
 */
public final class RequestPolicy {

    /** Thrown (or reported) when the failure draw says this request fails. */
    public static final class InjectedFailure extends RuntimeException {
        public InjectedFailure() {
            super("injected failure", null, false, false);
        }
    }

    private final AtomicLong counter = new AtomicLong();
    private final long seed;
    private final boolean never;
    private final boolean always;
    /** ceil(rate * 2^64) as an unsigned 64-bit value: z / 2^64 < rate  <=>  z < threshold. */
    private final long threshold;
    private final BenchConfig.ServiceTimeKind serviceTimeKind;
    private final long serviceTimeNanos;

    public RequestPolicy(BenchConfig config) {
        this.seed = config.failureSeed;
        double rate = config.failureRate;
        this.never = rate <= 0.0;
        this.always = rate >= 1.0;
        this.threshold = never || always ? 0 : unsignedCeil(rate * 0x1p64);
        this.serviceTimeKind = config.serviceTimeKind;
        this.serviceTimeNanos = config.serviceTimeNanos;
    }

    public static long splitmix64(long x) {
        long z = x + 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** ceil(t) for 0 <= t < 2^64, as an unsigned long (exact: doubles >= 2^53 are integers). */
    private static long unsignedCeil(double t) {
        double c = Math.ceil(t);
        if (c < 0x1p63) {
            return (long) c;
        }
        return (long) (c - 0x1p63) ^ Long.MIN_VALUE;
    }

    /** Draws for the next request: true when it must be answered with the injected failure. */
    public boolean drawFailure() {
        long k = counter.getAndIncrement();
        if (never) {
            return false;
        }
        if (always) {
            return true;
        }
        long z = splitmix64(seed + k);
        return Long.compareUnsigned(z, threshold) < 0;
    }

    public boolean hasServiceTime() {
        return serviceTimeKind != BenchConfig.ServiceTimeKind.NONE && serviceTimeNanos > 0;
    }

    public boolean isSleep() {
        return serviceTimeKind == BenchConfig.ServiceTimeKind.SLEEP && serviceTimeNanos > 0;
    }

    public long serviceTimeNanos() {
        return serviceTimeNanos;
    }

    /** Burns CPU on the calling thread for the spin service time. */
    public void spin() {
        long end = System.nanoTime() + serviceTimeNanos;
        while (System.nanoTime() - end < 0) {
            Thread.onSpinWait();
        }
    }

    /**
     * For thread-per-request stacks (Tomcat: REST and SOAP): the service time on the request's
     * own thread (sleep parks only this thread), then the draw; throws InjectedFailure.
     */
    public void serviceTimeThenDraw() {
        if (hasServiceTime()) {
            if (isSleep()) {
                sleepNanos(serviceTimeNanos);
            } else {
                spin();
            }
        }
        if (drawFailure()) {
            throw new InjectedFailure();
        }
    }

    private static void sleepNanos(long nanos) {
        long end = System.nanoTime() + nanos;
        long left = nanos;
        while (left > 0) {
            LockSupport.parkNanos(left);
            if (Thread.interrupted()) {
                Thread.currentThread().interrupt();
                return;
            }
            left = end - System.nanoTime();
        }
    }
}
