package dev.protobench.server.grpc;

import dev.protobench.server.stream.Feed;
import dev.protobench.server.stream.StreamRules;
import dev.protobench.v1.FeedEvent;
import dev.protobench.v1.FeedPage;
import dev.protobench.v1.Item;
import dev.protobench.v1.PollRequest;
import dev.protobench.v1.StreamMessage;
import dev.protobench.v1.StreamsGrpc;
import dev.protobench.v1.SubscribeRequest;
import dev.protobench.v1.UploadSummary;
import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * protobench.v1.Streams over grpc-java: bidirectional echo, server-streaming subscription,
 * client-streaming upload and unary poll.
 *
 * Each call is admitted once (GrpcResponder.admit: service time, then the failure draw) before its
 * first message. Flow control is grpc-java's manual one: inbound messages are requested one at a
 * time (disableAutoRequest + request(1)) and only when the reply to the previous one has been
 * handed on and the call is ready (isReady), and a feed builds its next event only when the call
 * is ready and the event is due, so no call holds more than one message per direction. Over the
 * size limit is grpc-java's RESOURCE_EXHAUSTED (maxInboundMessageSize); an undecodable message
 * INVALID_ARGUMENT (ParseErrors); one past MAX_STREAM_MESSAGES RESOURCE_EXHAUSTED.
 */
public final class StreamsGrpcService extends StreamsGrpc.StreamsImplBase {

    private final List<Item> items;
    private final GrpcResponder respond;

    public StreamsGrpcService(List<Item> items, GrpcResponder respond) {
        this.items = items;
        this.respond = respond;
    }

    /**
     * The service as served: undecodable messages are INVALID_ARGUMENT (ParseErrors), and a
     * bidirectional call sends its response headers at once. grpc-java otherwise sends them with
     * the first reply; a client that waits for the headers before its first message (protobench's
     * engine does) would then wait forever on an echo stream. tonic sends them at once too.
     */
    public ServerServiceDefinition definition() {
        ServerInterceptor headersFirst = new ServerInterceptor() {
            @Override
            public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                    ServerCallHandler<Q, R> next) {
                if (call.getMethodDescriptor().getType() != MethodDescriptor.MethodType.BIDI_STREAMING) {
                    return next.startCall(call, headers);
                }
                call.sendHeaders(new Metadata());
                // the stub sends headers with its first reply: they are out already
                return next.startCall(new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
                    @Override
                    public void sendHeaders(Metadata ignored) {
                    }
                }, headers);
            }
        };
        return ServerInterceptors.intercept(ParseErrors.invalidArgument(bindService()), headersFirst);
    }

    private static Status tooMany() {
        return Status.RESOURCE_EXHAUSTED.withDescription(StreamRules.TOO_MANY_MESSAGES);
    }

    /** The inbound side of an echo stream or an upload: one message requested at a time. */
    private abstract static class Inbound<R> implements StreamObserver<StreamMessage> {
        final ServerCallStreamObserver<R> out;
        private boolean admitted;
        /** The next message may be requested (the previous one has been answered). */
        private boolean wanted = true;
        boolean ended;
        int count;

        Inbound(ServerCallStreamObserver<R> out) {
            this.out = out;
            out.disableAutoRequest();
            out.setOnReadyHandler(this::requestNext);
            out.setOnCancelHandler(this::cancelled);
        }

        synchronized void admitted() {
            admitted = true;
            requestNext();
        }

        synchronized void cancelled() {
            ended = true;
        }

        /** Requests the next message once admitted, answered and ready. */
        synchronized void requestNext() {
            if (admitted && wanted && !ended && out.isReady()) {
                wanted = false;
                out.request(1);
            }
        }

        /** Handles one message; false when the call has been ended. */
        abstract boolean handle(StreamMessage message);

        @Override
        public synchronized void onNext(StreamMessage message) {
            if (ended) {
                return;
            }
            if (count >= StreamRules.MAX_STREAM_MESSAGES) {
                ended = true;
                out.onError(tooMany().asRuntimeException());
                return;
            }
            count++;
            if (handle(message)) {
                wanted = true;
                requestNext();
            }
        }

        @Override
        public synchronized void onError(Throwable t) {
            ended = true;
        }
    }

    @Override
    public StreamObserver<StreamMessage> echoStream(StreamObserver<StreamMessage> responseObserver) {
        ServerCallStreamObserver<StreamMessage> out = (ServerCallStreamObserver<StreamMessage>) responseObserver;
        Inbound<StreamMessage> echo = new Inbound<>(out) {
            @Override
            boolean handle(StreamMessage message) {
                out.onNext(message);
                return true;
            }

            @Override
            public synchronized void onCompleted() {
                if (!ended) {
                    ended = true;
                    out.onCompleted();
                }
            }
        };
        respond.admit(out, echo::admitted);
        return echo;
    }

    @Override
    public StreamObserver<StreamMessage> upload(StreamObserver<UploadSummary> responseObserver) {
        ServerCallStreamObserver<UploadSummary> out = (ServerCallStreamObserver<UploadSummary>) responseObserver;
        StreamRules.Tally tally = new StreamRules.Tally();
        Inbound<UploadSummary> upload = new Inbound<>(out) {
            @Override
            boolean handle(StreamMessage message) {
                tally.add(message);
                return true;
            }

            @Override
            public synchronized void onCompleted() {
                if (!ended) {
                    ended = true;
                    out.onNext(tally.summary());
                    out.onCompleted();
                }
            }
        };
        respond.admit(out, upload::admitted);
        return upload;
    }

    @Override
    public void subscribe(SubscribeRequest request, StreamObserver<FeedEvent> responseObserver) {
        try {
            StreamRules.validate(request);
        } catch (StreamRules.Invalid e) {
            responseObserver.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
            return;
        }
        ServerCallStreamObserver<FeedEvent> out = (ServerCallStreamObserver<FeedEvent>) responseObserver;
        Pump pump = new Pump(out, request);
        out.setOnReadyHandler(pump::run);
        out.setOnCancelHandler(pump::cancel);
        respond.admit(out, pump::start);
    }

    /** Sends a feed's events as they fall due and the call is ready; waits on the timer otherwise. */
    private final class Pump {
        private final ServerCallStreamObserver<FeedEvent> out;
        private final SubscribeRequest request;
        private Feed<FeedEvent> feed;
        private boolean ended;
        private boolean timerSet;

        Pump(ServerCallStreamObserver<FeedEvent> out, SubscribeRequest request) {
            this.out = out;
            this.request = request;
        }

        synchronized void start() {
            // the schedule starts when the stream is admitted
            feed = new Feed<>(StreamRules.protobuf(items), request, 0);
            run();
        }

        synchronized void cancel() {
            ended = true;
        }

        private synchronized void wake() {
            timerSet = false;
            run();
        }

        synchronized void run() {
            if (feed == null || ended) {
                return;
            }
            while (true) {
                if (feed.done()) {
                    ended = true;
                    out.onCompleted();
                    return;
                }
                if (!out.isReady()) {
                    return; // the ready handler runs this again
                }
                long delay = feed.delayNanos();
                if (delay > 0) {
                    if (!timerSet) {
                        timerSet = true;
                        respond.timer().schedule(this::wake, delay, TimeUnit.NANOSECONDS);
                    }
                    return;
                }
                out.onNext(feed.take());
            }
        }
    }

    @Override
    public void poll(PollRequest request, StreamObserver<FeedPage> out) {
        try {
            StreamRules.validate(request);
        } catch (StreamRules.Invalid e) {
            out.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
            return;
        }
        respond.with(out, () -> {
            try {
                StreamRules.Page<FeedEvent> page = StreamRules.page(request, StreamRules.nowNs(),
                        StreamRules.protobuf(items));
                return FeedPage.newBuilder().addAllEvents(page.events()).setDone(page.done()).build();
            } catch (StreamRules.Invalid e) {
                throw new IllegalStateException("validated above", e);
            }
        });
    }
}
