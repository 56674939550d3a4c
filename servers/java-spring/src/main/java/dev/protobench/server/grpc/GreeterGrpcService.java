package dev.protobench.server.grpc;

import io.grpc.examples.helloworld.GreeterGrpc;
import io.grpc.examples.helloworld.HelloReply;
import io.grpc.examples.helloworld.HelloRequest;
import io.grpc.stub.StreamObserver;

/** grpc_bench's helloworld.Greeter/SayHello: response = request. */
public final class GreeterGrpcService extends GreeterGrpc.GreeterImplBase {

    private final GrpcResponder respond;

    public GreeterGrpcService(GrpcResponder respond) {
        this.respond = respond;
    }

    @Override
    public void sayHello(HelloRequest request, StreamObserver<HelloReply> out) {
        respond.with(out, () -> {
            HelloReply.Builder reply = HelloReply.newBuilder();
            if (request.hasRequest()) {
                reply.setResponse(request.getRequest());
            }
            return reply.build();
        });
    }
}
