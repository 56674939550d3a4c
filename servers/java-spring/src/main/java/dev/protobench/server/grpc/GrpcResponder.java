package dev.protobench.server.grpc;

import dev.protobench.server.RequestPolicy;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Completes a unary call after the injected service time and the failure draw. A sleep
 * service time is asynchronous (a timer hands the rest of the call back to the gRPC executor),
 * so it never holds an executor thread; a spin burns the handling thread.
 */
public final class GrpcResponder {

    private final RequestPolicy policy;
    private final ScheduledExecutorService timer;
    private final Executor executor;

    public GrpcResponder(RequestPolicy policy, ScheduledExecutorService timer, Executor executor) {
        this.policy = policy;
        this.timer = timer;
        this.executor = executor;
    }

    public <T> void with(StreamObserver<T> out, Supplier<T> handler) {
        if (policy.isSleep()) {
            timer.schedule(() -> executor.execute(() -> finish(out, handler)), policy.serviceTimeNanos(),
                    TimeUnit.NANOSECONDS);
            return;
        }
        if (policy.hasServiceTime()) {
            policy.spin();
        }
        finish(out, handler);
    }

    /**
     * Admits a stream once, before its first message: the service time (a sleep on the timer,
     * never holding an executor thread), then the failure draw; an injected failure ends the call
     * with UNAVAILABLE, otherwise `then` runs (on a gRPC executor thread).
     */
    public void admit(StreamObserver<?> out, Runnable then) {
        if (policy.isSleep()) {
            timer.schedule(() -> executor.execute(() -> drawThen(out, then)), policy.serviceTimeNanos(),
                    TimeUnit.NANOSECONDS);
            return;
        }
        if (policy.hasServiceTime()) {
            policy.spin();
        }
        drawThen(out, then);
    }

    private void drawThen(StreamObserver<?> out, Runnable then) {
        if (policy.drawFailure()) {
            safeError(out, Status.UNAVAILABLE.withDescription("injected failure"));
            return;
        }
        then.run();
    }

    /** The timer that waits out a sleep service time; streams wait for their feed's events on it. */
    public ScheduledExecutorService timer() {
        return timer;
    }

    private <T> void finish(StreamObserver<T> out, Supplier<T> handler) {
        try {
            if (policy.drawFailure()) {
                out.onError(Status.UNAVAILABLE.withDescription("injected failure").asRuntimeException());
                return;
            }
            out.onNext(handler.get());
            out.onCompleted();
        } catch (StatusRuntimeException e) {
            // the call was cancelled by the client meanwhile: nothing to answer
            if (e.getStatus().getCode() != Status.Code.CANCELLED) {
                safeError(out, Status.INTERNAL.withDescription("internal error"));
            }
        } catch (RuntimeException e) {
            safeError(out, Status.INTERNAL.withDescription("internal error"));
        }
    }

    private static <T> void safeError(StreamObserver<T> out, Status status) {
        try {
            out.onError(status.asRuntimeException());
        } catch (RuntimeException ignored) {
            // already closed
        }
    }
}
