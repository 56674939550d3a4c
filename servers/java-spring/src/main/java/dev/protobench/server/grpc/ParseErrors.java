package dev.protobench.server.grpc;

import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;

/**
 * grpc-java answers a request message its marshaller cannot parse with UNKNOWN ("Application
 * error processing RPC"); the contract wants INVALID_ARGUMENT. This rebinds a service so that
 * a parse failure is handed to the call as a null message, and the call is then closed with
 * INVALID_ARGUMENT before the generated handler sees it.
 */
final class ParseErrors {
    private ParseErrors() {
    }

    static ServerServiceDefinition invalidArgument(ServerServiceDefinition def) {
        ServiceDescriptor sd = def.getServiceDescriptor();
        ServiceDescriptor.Builder sdb = ServiceDescriptor.newBuilder(sd.getName())
                .setSchemaDescriptor(sd.getSchemaDescriptor());
        List<ServerMethodDefinition<?, ?>> methods = new ArrayList<>();
        for (ServerMethodDefinition<?, ?> m : def.getMethods()) {
            ServerMethodDefinition<?, ?> w = wrap(m);
            methods.add(w);
            sdb.addMethod(w.getMethodDescriptor());
        }
        ServerServiceDefinition.Builder b = ServerServiceDefinition.builder(sdb.build());
        for (ServerMethodDefinition<?, ?> m : methods) {
            b.addMethod(m);
        }
        return b.build();
    }

    private static <Q, R> ServerMethodDefinition<Q, R> wrap(ServerMethodDefinition<Q, R> m) {
        MethodDescriptor<Q, R> md = m.getMethodDescriptor();
        MethodDescriptor.Marshaller<Q> inner = md.getRequestMarshaller();
        MethodDescriptor.Marshaller<Q> nullOnError = new MethodDescriptor.Marshaller<>() {
            @Override
            public InputStream stream(Q value) {
                return inner.stream(value);
            }

            @Override
            public Q parse(InputStream stream) {
                try {
                    return inner.parse(stream);
                } catch (RuntimeException e) {
                    return null;
                }
            }
        };
        MethodDescriptor<Q, R> wrapped = md.toBuilder(nullOnError, md.getResponseMarshaller()).build();
        ServerCallHandler<Q, R> handler = m.getServerCallHandler();
        ServerCallHandler<Q, R> guarded = (call, headers) -> new GuardListener<>(handler.startCall(call, headers), call);
        return ServerMethodDefinition.create(wrapped, guarded);
    }

    private static final class GuardListener<Q, R>
            extends ForwardingServerCallListener.SimpleForwardingServerCallListener<Q> {
        private final ServerCall<Q, R> call;
        private boolean closed;

        GuardListener(ServerCall.Listener<Q> delegate, ServerCall<Q, R> call) {
            super(delegate);
            this.call = call;
        }

        @Override
        public void onMessage(Q message) {
            if (closed) {
                return;
            }
            if (message == null) {
                closed = true;
                call.close(Status.INVALID_ARGUMENT.withDescription("request is not a valid protobuf message"),
                        new Metadata());
                return;
            }
            super.onMessage(message);
        }

        @Override
        public void onHalfClose() {
            if (!closed) {
                super.onHalfClose();
            }
        }

        @Override
        public void onReady() {
            if (!closed) {
                super.onReady();
            }
        }
    }
}
