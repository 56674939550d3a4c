package dev.protobench.server.rest;

import com.fasterxml.jackson.annotation.JsonFormat;
import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;

/**
 * The REST (canonical JSON) form of the contract's messages as Java records, serialized by
 * Jackson. Member names are the proto JSON names; every non-optional field is always present
 * (records never hold null there: request records normalize a missing or null member to the
 * proto3 default); optional fields and oneof members are null when unset and omitted
 * (spring.jackson.default-property-inclusion=non_null).
 */
public final class Model {
    private Model() {
    }

    private static String str(String s) {
        return s == null ? "" : s;
    }

    private static <T> List<T> list(List<T> l) {
        if (l == null) {
            return List.of();
        }
        for (T t : l) {
            if (t == null) {
                throw new IllegalArgumentException("null in a repeated field");
            }
        }
        return l;
    }

    @JsonInclude(JsonInclude.Include.ALWAYS)
    public record Empty() {
    }

    // --- inventory ---

    public record InventoryStatus(String serviceName, String regionCode, String statusMessage,
                                  List<String> recentErrors, double cpuUtilization,
                                  double memoryUtilization, double averageResponseMillis,
                                  int activeDeviceCount) {
        public InventoryStatus {
            serviceName = str(serviceName);
            regionCode = str(regionCode);
            statusMessage = str(statusMessage);
            recentErrors = list(recentErrors);
        }
    }

    public enum DeviceState {
        DEVICE_STATE_UNSPECIFIED, DEVICE_STATE_ONLINE, DEVICE_STATE_OFFLINE, DEVICE_STATE_MAINTENANCE
    }

    public record Device(String deviceId, DeviceState state, int readingCount) {
        public Device {
            deviceId = str(deviceId);
            state = state == null ? DeviceState.DEVICE_STATE_UNSPECIFIED : state;
        }
    }

    public record DeviceList(List<Device> devices) {
        public DeviceList {
            devices = list(devices);
        }
    }

    public enum ItemCategory {
        ITEM_CATEGORY_UNSPECIFIED, ITEM_CATEGORY_HARDWARE, ITEM_CATEGORY_ELECTRONICS,
        ITEM_CATEGORY_TOOLS, ITEM_CATEGORY_SUPPLIES
    }

    public record Location(String warehouse, int aisle, int shelf, String bin) {
        public Location {
            warehouse = str(warehouse);
            bin = str(bin);
        }
    }

    /** description and supplier are proto3 optional: null = unset = omitted. */
    public record Item(String id, String name, ItemCategory category, double unitPrice, float weightKg,
                       int quantity, boolean inStock, boolean fragile, Location location,
                       String description, String supplier) {
        public Item {
            id = str(id);
            name = str(name);
            category = category == null ? ItemCategory.ITEM_CATEGORY_UNSPECIFIED : category;
        }
    }

    public record ItemList(List<Item> items) {
        public ItemList {
            items = list(items);
        }
    }

    /**
     * Floating-point values travel as JSON numbers (contract/openapi.yaml): a
     * value that is not finite once read (beyond float range, or the strings
     * "Infinity"/"NaN") is a 400, never echoed back as "Infinity".
     */
    static void finite(String field, double value) {
        if (!Double.isFinite(value)) {
            throw new IllegalArgumentException(field + " is not a finite number in its type's range");
        }
    }

    // --- product ---

    public record Product(int id, String name, String description, double price, int stock, List<String> tags) {
        public Product {
            finite("price", price);
            name = str(name);
            description = str(description);
            tags = list(tags);
        }
    }

    // --- communication tasks ---

    public record CloneRequest(String text, int times) {
        public CloneRequest {
            text = str(text);
        }
    }

    public record CloneResponse(List<String> texts) {
    }

    public record IntegerValue(int value) {
    }

    public record IntegerList(int[] values) {
    }

    public record Person(int id, String firstName, String lastName, String email, int age, boolean active,
                         double balance) {
        public Person {
            firstName = str(firstName);
            lastName = str(lastName);
            email = str(email);
        }
    }

    public record ObjectList(List<Person> people) {
        public ObjectList {
            people = list(people);
        }
    }

    /** content is written as standard base64 with padding (Jackson's default for byte[]). */
    public record FileContent(String name, byte[] content) {
    }

    // --- payload sweep ---

    public record EchoMessage(String payload) {
        public EchoMessage {
            payload = str(payload);
        }
    }

    // --- helloworld (grpc_bench) ---

    public enum Color { BLACK, WHITE, BLUE, RED, YELLOW, GREEN }

    public record Pet(String name, Color color) {
        public Pet {
            name = str(name);
            color = color == null ? Color.BLACK : color;
        }
    }

    /** l is int64: a JSON string. c1/c2 are the oneof "choice": null = unset = omitted. */
    public record Hello(String name, double d, float f, boolean b, int n,
                        @JsonFormat(shape = JsonFormat.Shape.STRING) long l,
                        String c1, Boolean c2, List<Pet> pets) {
        public Hello {
            finite("request.d", d);
            finite("request.f", f);
            name = str(name);
            pets = list(pets);
            if (c1 != null && c2 != null) {
                throw new IllegalArgumentException("oneof choice: both c1 and c2 are set");
            }
        }
    }

    /** request is a message field: null = unset = omitted. */
    public record HelloRequest(Hello request) {
    }

    public record HelloReply(Hello response) {
    }

    /** The error body of every REST error response. */
    public record ErrorBody(int code, String message) {
    }
}
