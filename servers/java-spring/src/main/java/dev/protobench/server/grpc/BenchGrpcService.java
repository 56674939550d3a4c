package dev.protobench.server.grpc;

import com.google.protobuf.ByteString;
import dev.protobench.server.Dataset;
import dev.protobench.v1.BenchGrpc;
import dev.protobench.v1.CloneRequest;
import dev.protobench.v1.CloneResponse;
import dev.protobench.v1.DeviceList;
import dev.protobench.v1.EchoMessage;
import dev.protobench.v1.Empty;
import dev.protobench.v1.FileContent;
import dev.protobench.v1.FileRequest;
import dev.protobench.v1.IntegerList;
import dev.protobench.v1.IntegerValue;
import dev.protobench.v1.InventoryStatus;
import dev.protobench.v1.ItemList;
import dev.protobench.v1.ObjectList;
import dev.protobench.v1.Product;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.Collections;

/** protobench.v1.Bench over gRPC. */
public final class BenchGrpcService extends BenchGrpc.BenchImplBase {

    private static final Empty EMPTY = Empty.getDefaultInstance();

    private final GrpcData data;
    private final GrpcResponder respond;

    public BenchGrpcService(GrpcData data, GrpcResponder respond) {
        this.data = data;
        this.respond = respond;
    }

    @Override
    public void getInventoryXs(Empty request, StreamObserver<Empty> out) {
        respond.with(out, () -> EMPTY);
    }

    @Override
    public void getInventoryS(Empty request, StreamObserver<InventoryStatus> out) {
        respond.with(out, () -> data.inventoryStatus);
    }

    @Override
    public void getInventoryM(Empty request, StreamObserver<DeviceList> out) {
        respond.with(out, () -> data.deviceList);
    }

    @Override
    public void getInventoryL(Empty request, StreamObserver<ItemList> out) {
        respond.with(out, () -> data.itemList);
    }

    @Override
    public void echoProduct(Product request, StreamObserver<Product> out) {
        respond.with(out, () -> request);
    }

    @Override
    public void modifyProduct(Product request, StreamObserver<Product> out) {
        respond.with(out, () -> request.toBuilder()
                .setDescription(Dataset.reverseScalars(request.getDescription())).build());
    }

    @Override
    public void cloneText(CloneRequest request, StreamObserver<CloneResponse> out) {
        String invalid = Dataset.validateClone(request.getText(), request.getTimes());
        if (invalid != null) {
            out.onError(Status.INVALID_ARGUMENT.withDescription(invalid).asRuntimeException());
            return;
        }
        respond.with(out, () -> CloneResponse.newBuilder()
                .addAllTexts(Collections.nCopies(request.getTimes(), request.getText())).build());
    }

    @Override
    public void getInteger(Empty request, StreamObserver<IntegerValue> out) {
        respond.with(out, () -> IntegerValue.newBuilder().setValue(Dataset.INTEGER_VALUE).build());
    }

    @Override
    public void getIntegers(Empty request, StreamObserver<IntegerList> out) {
        respond.with(out, () -> data.integerList);
    }

    @Override
    public void getObjects(Empty request, StreamObserver<ObjectList> out) {
        respond.with(out, () -> data.objectList);
    }

    @Override
    public void getFile(FileRequest request, StreamObserver<FileContent> out) {
        ByteString content = data.files.get(request.getName());
        if (content == null) {
            out.onError(Status.NOT_FOUND.withDescription("unknown file: " + request.getName()).asRuntimeException());
            return;
        }
        respond.with(out, () -> FileContent.newBuilder().setName(request.getName()).setContent(content).build());
    }

    @Override
    public void echo(EchoMessage request, StreamObserver<EchoMessage> out) {
        respond.with(out, () -> request);
    }
}
