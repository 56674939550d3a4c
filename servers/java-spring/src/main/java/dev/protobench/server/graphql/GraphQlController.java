package dev.protobench.server.graphql;

import dev.protobench.server.Dataset;
import dev.protobench.server.RequestPolicy;
import dev.protobench.server.rest.BenchController;
import dev.protobench.server.rest.Model;
import java.util.Collections;
import java.util.Map;
import org.springframework.graphql.data.method.annotation.Argument;
import org.springframework.graphql.data.method.annotation.MutationMapping;
import org.springframework.graphql.data.method.annotation.QueryMapping;
import org.springframework.stereotype.Controller;

/**
 * The root fields of the GraphQL schema: one per operation, over the same Java records as REST
 * (graphql-java reads their accessors field by field). Each root field is admitted like a
 * unary call (service time, failure draw), after its input has been checked.
 */
@Controller
public class GraphQlController {

    private final Dataset data;
    private final RequestPolicy policy;
    private final Model.DeviceList deviceList;
    private final Model.ItemList itemList;
    private final Model.ObjectList objectList;

    public GraphQlController(Dataset data, RequestPolicy policy) {
        this.data = data;
        this.policy = policy;
        this.deviceList = new Model.DeviceList(data.devices);
        this.itemList = new Model.ItemList(data.items);
        this.objectList = new Model.ObjectList(data.people);
    }

    @QueryMapping
    public Map<String, Object> inventoryXs() {
        policy.serviceTimeThenDraw();
        return Map.of();
    }

    @QueryMapping
    public Model.InventoryStatus inventoryS() {
        policy.serviceTimeThenDraw();
        return data.inventoryStatus;
    }

    @QueryMapping
    public Model.DeviceList inventoryM() {
        policy.serviceTimeThenDraw();
        return deviceList;
    }

    @QueryMapping
    public Model.ItemList inventoryL() {
        policy.serviceTimeThenDraw();
        return itemList;
    }

    @QueryMapping
    public Model.IntegerValue integer() {
        policy.serviceTimeThenDraw();
        return new Model.IntegerValue(Dataset.INTEGER_VALUE);
    }

    @QueryMapping
    public Model.IntegerList integers() {
        policy.serviceTimeThenDraw();
        return new Model.IntegerList(data.integers);
    }

    @QueryMapping
    public Model.ObjectList objects() {
        policy.serviceTimeThenDraw();
        return objectList;
    }

    @QueryMapping
    public Model.FileContent file(@Argument String name) {
        byte[] content = data.files.get(name);
        if (content == null) {
            throw new BenchController.NotFound("unknown file: " + name);
        }
        policy.serviceTimeThenDraw();
        return new Model.FileContent(name, content);
    }

    @MutationMapping
    public Model.Product echoProduct(@Argument Model.Product input) {
        policy.serviceTimeThenDraw();
        return input;
    }

    @MutationMapping
    public Model.Product modifyProduct(@Argument Model.Product input) {
        policy.serviceTimeThenDraw();
        return new Model.Product(input.id(), input.name(), Dataset.reverseScalars(input.description()), input.price(),
                input.stock(), input.tags());
    }

    @MutationMapping
    public Model.CloneResponse cloneText(@Argument Model.CloneRequest input) {
        String invalid = Dataset.validateClone(input.text(), input.times());
        if (invalid != null) {
            throw new BenchController.BadRequest(invalid);
        }
        policy.serviceTimeThenDraw();
        return new Model.CloneResponse(Collections.nCopies(input.times(), input.text()));
    }

    @MutationMapping
    public Model.EchoMessage echo(@Argument Model.EchoMessage input) {
        policy.serviceTimeThenDraw();
        return input;
    }

    @MutationMapping
    public Model.HelloReply sayHello(@Argument Model.HelloRequest input) {
        policy.serviceTimeThenDraw();
        return new Model.HelloReply(input.request());
    }
}
