package dev.protobench.server.rest;

import dev.protobench.server.Dataset;
import dev.protobench.server.RequestPolicy;
import java.util.Collections;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/** The REST form of every operation (contract/openapi.yaml). */
@RestController
public class BenchController {

    /** Thrown for an invalid value: 400. */
    public static final class BadRequest extends RuntimeException {
        public BadRequest(String message) {
            super(message, null, false, false);
        }
    }

    /** Thrown for an unknown file: 404. */
    public static final class NotFound extends RuntimeException {
        public NotFound(String message) {
            super(message, null, false, false);
        }
    }

    private static final String JSON = MediaType.APPLICATION_JSON_VALUE;

    private final Dataset data;
    private final RequestPolicy policy;
    private final Model.DeviceList deviceList;
    private final Model.ItemList itemList;
    private final Model.ObjectList objectList;

    public BenchController(Dataset data, RequestPolicy policy) {
        this.data = data;
        this.policy = policy;
        this.deviceList = new Model.DeviceList(data.devices);
        this.itemList = new Model.ItemList(data.items);
        this.objectList = new Model.ObjectList(data.people);
    }

    @GetMapping(path = "/v1/inventory/xs", produces = JSON)
    public Model.Empty getInventoryXs() {
        policy.serviceTimeThenDraw();
        return new Model.Empty();
    }

    @GetMapping(path = "/v1/inventory/s", produces = JSON)
    public Model.InventoryStatus getInventoryS() {
        policy.serviceTimeThenDraw();
        return data.inventoryStatus;
    }

    @GetMapping(path = "/v1/inventory/m", produces = JSON)
    public Model.DeviceList getInventoryM() {
        policy.serviceTimeThenDraw();
        return deviceList;
    }

    @GetMapping(path = "/v1/inventory/l", produces = JSON)
    public Model.ItemList getInventoryL() {
        policy.serviceTimeThenDraw();
        return itemList;
    }

    @PostMapping(path = "/v1/products/echo", consumes = JSON, produces = JSON)
    public Model.Product echoProduct(@RequestBody Model.Product product) {
        policy.serviceTimeThenDraw();
        return product;
    }

    @PostMapping(path = "/v1/products/modify", consumes = JSON, produces = JSON)
    public Model.Product modifyProduct(@RequestBody Model.Product p) {
        policy.serviceTimeThenDraw();
        return new Model.Product(p.id(), p.name(), Dataset.reverseScalars(p.description()), p.price(), p.stock(),
                p.tags());
    }

    @PostMapping(path = "/v1/tasks/clone", consumes = JSON, produces = JSON)
    public Model.CloneResponse cloneText(@RequestBody Model.CloneRequest req) {
        String invalid = Dataset.validateClone(req.text(), req.times());
        if (invalid != null) {
            throw new BadRequest(invalid);
        }
        policy.serviceTimeThenDraw();
        return new Model.CloneResponse(Collections.nCopies(req.times(), req.text()));
    }

    @GetMapping(path = "/v1/tasks/integer", produces = JSON)
    public Model.IntegerValue getInteger() {
        policy.serviceTimeThenDraw();
        return new Model.IntegerValue(Dataset.INTEGER_VALUE);
    }

    @GetMapping(path = "/v1/tasks/integers", produces = JSON)
    public Model.IntegerList getIntegers() {
        policy.serviceTimeThenDraw();
        return new Model.IntegerList(data.integers);
    }

    @GetMapping(path = "/v1/tasks/objects", produces = JSON)
    public Model.ObjectList getObjects() {
        policy.serviceTimeThenDraw();
        return objectList;
    }

    @GetMapping(path = "/v1/tasks/files/{name}", produces = JSON)
    public Model.FileContent getFile(@PathVariable("name") String name) {
        byte[] content = data.files.get(name);
        if (content == null) {
            throw new NotFound("unknown file: " + name);
        }
        policy.serviceTimeThenDraw();
        return new Model.FileContent(name, content);
    }

    @PostMapping(path = "/v1/echo", consumes = JSON, produces = JSON)
    public Model.EchoMessage echo(@RequestBody Model.EchoMessage message) {
        policy.serviceTimeThenDraw();
        return message;
    }

    @PostMapping(path = "/v1/greeter/hello", consumes = JSON, produces = JSON)
    public Model.HelloReply sayHello(@RequestBody Model.HelloRequest request) {
        policy.serviceTimeThenDraw();
        return new Model.HelloReply(request.request());
    }
}
