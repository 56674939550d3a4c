package dev.protobench.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.protobench.server.rest.Model;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * contract/data/dataset.json read once at start-up, plus the in-memory files of GetFile and
 * the 10,000 integers of GetIntegers. Each protocol builds its own native objects from this
 * once (REST: the records here; gRPC: protobuf messages; SOAP: JAXB objects).
 */
public final class Dataset {

    public static final int INTEGER_VALUE = 2147483647;
    public static final int INTEGER_COUNT = 10_000;
    public static final int CLONE_MAX_TIMES = 100_000;
    public static final long CLONE_MAX_TEXT_BYTES = 64L * 1024 * 1024;

    private record DatasetJson(Model.InventoryStatus inventoryStatus, List<Model.Device> devices,
                               List<Model.Item> items, List<Model.Person> people) {
    }

    public final JsonNode tree;
    public final Model.InventoryStatus inventoryStatus;
    public final List<Model.Device> devices;
    public final List<Model.Item> items;
    public final List<Model.Person> people;
    public final int[] integers;
    /** GetFile's files by name: byte i is (i * 131 + 7) mod 251. */
    public final Map<String, byte[]> files;

    public Dataset(Path path, ObjectMapper mapper) throws IOException {
        byte[] json = Files.readAllBytes(path);
        this.tree = mapper.readTree(json);
        DatasetJson d = mapper.treeToValue(tree, DatasetJson.class);
        this.inventoryStatus = d.inventoryStatus();
        this.devices = List.copyOf(d.devices());
        this.items = List.copyOf(d.items());
        this.people = List.copyOf(d.people());
        this.integers = IntStream.range(0, INTEGER_COUNT).toArray();
        this.files = Map.of("file-455k", makeFile(455_000), "file-3m4", makeFile(3_400_000));
    }

    private static byte[] makeFile(int size) {
        byte[] b = new byte[size];
        for (int i = 0; i < size; i++) {
            b[i] = (byte) ((i * 131L + 7) % 251);
        }
        return b;
    }

    /** Reverses a string by Unicode scalar values (code points), not UTF-16 units or bytes. */
    public static String reverseScalars(String s) {
        // StringBuilder.reverse keeps surrogate pairs together: it reverses code points.
        return new StringBuilder(s).reverse().toString();
    }

    /** CloneText's validation; returns an error message or null when valid. */
    public static String validateClone(String text, int times) {
        if (times < 0 || times > CLONE_MAX_TIMES) {
            return "times must be in 0..=100000";
        }
        long bytes = utf8Length(text) * (long) times;
        if (bytes > CLONE_MAX_TEXT_BYTES) {
            return "response would exceed 64 MiB of text";
        }
        return null;
    }

    static long utf8Length(String s) {
        long n = 0;
        for (int i = 0, len = s.length(); i < len; i++) {
            char c = s.charAt(i);
            if (c < 0x80) {
                n += 1;
            } else if (c < 0x800) {
                n += 2;
            } else if (Character.isHighSurrogate(c) && i + 1 < len && Character.isLowSurrogate(s.charAt(i + 1))) {
                n += 4;
                i++;
            } else {
                n += 3;
            }
        }
        return n;
    }
}
