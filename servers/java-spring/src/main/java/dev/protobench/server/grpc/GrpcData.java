package dev.protobench.server.grpc;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import dev.protobench.server.Dataset;
import dev.protobench.v1.DeviceList;
import dev.protobench.v1.IntegerList;
import dev.protobench.v1.InventoryStatus;
import dev.protobench.v1.ItemList;
import dev.protobench.v1.ObjectList;
import java.util.HashMap;
import java.util.Map;

/**
 * The dataset as protobuf messages, built once at start-up by protobuf's own JSON parser from
 * the canonical JSON of dataset.json.
 */
public final class GrpcData {

    public final InventoryStatus inventoryStatus;
    public final DeviceList deviceList;
    public final ItemList itemList;
    public final ObjectList objectList;
    public final IntegerList integerList;
    public final Map<String, ByteString> files;

    public GrpcData(Dataset data) throws InvalidProtocolBufferException {
        JsonNode tree = data.tree;
        inventoryStatus = parse(tree.get("inventoryStatus"), InventoryStatus.newBuilder());
        deviceList = parse(wrap("devices", tree.get("devices")), DeviceList.newBuilder());
        itemList = parse(wrap("items", tree.get("items")), ItemList.newBuilder());
        objectList = parse(wrap("people", tree.get("people")), ObjectList.newBuilder());
        IntegerList.Builder ints = IntegerList.newBuilder();
        for (int v : data.integers) {
            ints.addValues(v);
        }
        integerList = ints.build();
        Map<String, ByteString> f = new HashMap<>();
        data.files.forEach((name, bytes) -> f.put(name, ByteString.copyFrom(bytes)));
        files = Map.copyOf(f);
    }

    private static JsonNode wrap(String field, JsonNode value) {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.set(field, value);
        return o;
    }

    @SuppressWarnings("unchecked")
    private static <M extends Message> M parse(JsonNode json, Message.Builder builder)
            throws InvalidProtocolBufferException {
        JsonFormat.parser().merge(json.toString(), builder);
        return (M) builder.build();
    }
}
