package dev.protobench.server.stream;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import dev.protobench.v1.FeedEvent;
import dev.protobench.v1.Item;
import dev.protobench.v1.PollRequest;
import dev.protobench.v1.StreamMessage;
import dev.protobench.v1.SubscribeRequest;
import dev.protobench.v1.UploadSummary;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The streaming operations' rules (contract/README.md, "Streaming"), shared by every transport:
 * the limits and their error messages, the feed's schedule and events, a poll's page, the
 * upload tally, the query forms of SSE and polling, and the canonical JSON (protobuf's own
 * JsonFormat, every field printed).
 */
public final class StreamRules {

    public static final int MAX_COUNT = 1_000_000;
    public static final int MAX_ITEMS = 1395;
    public static final int MAX_RATE = 1_000_000;
    public static final int MAX_PAGE_EVENTS = 1000;
    public static final int MAX_PAGE_ITEMS = 16_384;
    /** Messages a client may send on one echo stream or upload. */
    public static final int MAX_STREAM_MESSAGES = 1_000_000;
    public static final String TOO_MANY_MESSAGES = "more than " + MAX_STREAM_MESSAGES + " messages on one stream";

    public static final int CLOSE_NORMAL = 1000;
    public static final int CLOSE_INVALID = 1007;
    public static final int CLOSE_POLICY = 1008;
    public static final int CLOSE_TOO_BIG = 1009;

    private static final JsonFormat.Printer PRINTER =
            JsonFormat.printer().alwaysPrintFieldsWithNoPresence().omittingInsignificantWhitespace();
    private static final JsonFormat.Parser PARSER = JsonFormat.parser();

    private StreamRules() {
    }

    /** A request outside the contract's limits; the message names the value and the range. */
    public static final class Invalid extends Exception {
        public Invalid(String message) {
            super(message, null, false, false);
        }
    }

    private static void validateFeed(long count, long items, long rate) throws Invalid {
        if (count < 1 || count > MAX_COUNT) {
            throw new Invalid("count is " + count + ", expected 1..=" + MAX_COUNT);
        }
        if (items < 0 || items > MAX_ITEMS) {
            throw new Invalid("items is " + items + ", expected 0..=" + MAX_ITEMS);
        }
        if (rate < 0 || rate > MAX_RATE) {
            throw new Invalid("rate is " + rate + ", expected 0 (as fast as possible) ..=" + MAX_RATE);
        }
    }

    public static void validate(SubscribeRequest r) throws Invalid {
        validateFeed(Integer.toUnsignedLong(r.getCount()), Integer.toUnsignedLong(r.getItems()),
                Integer.toUnsignedLong(r.getRate()));
    }

    public static void validate(PollRequest r) throws Invalid {
        validateFeed(Integer.toUnsignedLong(r.getCount()), Integer.toUnsignedLong(r.getItems()),
                Integer.toUnsignedLong(r.getRate()));
        long max = Integer.toUnsignedLong(r.getMax());
        if (max < 1 || max > MAX_PAGE_EVENTS) {
            throw new Invalid("max is " + max + ", expected 1..=" + MAX_PAGE_EVENTS);
        }
        if (Integer.toUnsignedLong(r.getAfter()) > r.getCount()) {
            throw new Invalid("after is " + Integer.toUnsignedLong(r.getAfter()) + ", beyond the feed's count "
                    + r.getCount());
        }
        if (r.getStartNs() < 0 || (r.getRate() > 0 && r.getStartNs() == 0)) {
            throw new Invalid("startNs is " + r.getStartNs()
                    + ", expected the feed's start in ns since the Unix epoch (> 0 when rate > 0)");
        }
    }

    /** Event seq's offset from the feed's start: floor((seq - 1) * 1e9 / rate); 0 at rate 0. */
    public static long offsetNs(long seq, long rate) {
        if (rate == 0 || seq == 0) {
            return 0;
        }
        return (seq - 1) * 1_000_000_000L / rate;
    }

    /** Now, in ns since the Unix epoch. */
    public static long nowNs() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    /** Event seq of a feed of `items` items per event: the dataset's items ((seq-1)*items + j) mod 1395. */
    public static <T> List<T> eventItems(List<T> dataset, int seq, int items) {
        List<T> out = new ArrayList<>(items);
        long first = (Math.max(seq, 1) - 1L) * items;
        int n = dataset.size();
        for (int j = 0; j < items; j++) {
            out.add(dataset.get((int) ((first + j) % n)));
        }
        return out;
    }

    /** The feed's events as protobuf (gRPC, binary WebSocket frames). */
    public static Feed.Maker<FeedEvent> protobuf(List<Item> dataset) {
        return (seq, items, stamp) -> FeedEvent.newBuilder().setSeq(seq).setScheduledNs(stamp)
                .addAllItems(eventItems(dataset, seq, items)).build();
    }

    /** One page of a polled feed, in a transport's form. */
    public record Page<E>(List<E> events, boolean done) {
    }

    /** The events after `after` that are due at nowNs, at most max (and 16,384 items). */
    public static <E> Page<E> page(PollRequest r, long nowNs, Feed.Maker<E> maker) throws Invalid {
        validate(r);
        int byItems = r.getItems() == 0 ? Integer.MAX_VALUE : Math.max(1, MAX_PAGE_ITEMS / r.getItems());
        int last = (int) Math.min(r.getCount(), (long) r.getAfter() + Math.min(r.getMax(), byItems));
        List<E> events = new ArrayList<>();
        int lastSeq = 0;
        for (int seq = r.getAfter() + 1; seq <= last; seq++) {
            long stamp = nowNs;
            if (r.getRate() > 0) {
                long due = r.getStartNs() + offsetNs(seq, r.getRate());
                if (due > nowNs) {
                    break;
                }
                stamp = due;
            }
            events.add(maker.event(seq, r.getItems(), stamp));
            lastSeq = seq;
        }
        return new Page<>(events, lastSeq == r.getCount() || r.getAfter() == r.getCount());
    }

    /** What an upload has received so far: count, payload bytes and their 32-bit FNV-1a. */
    public static final class Tally {
        private int count;
        private long bytes;
        private int checksum = 0x811C9DC5;

        /** Adds one message; false when it is one past MAX_STREAM_MESSAGES. */
        public boolean add(StreamMessage m) {
            if (count >= MAX_STREAM_MESSAGES) {
                return false;
            }
            count++;
            byte[] payload = m.getPayloadBytes().toByteArray();
            bytes += payload.length;
            int h = checksum;
            for (byte b : payload) {
                h ^= b & 0xFF;
                h *= 0x01000193;
            }
            checksum = h;
            return true;
        }

        public UploadSummary summary() {
            return UploadSummary.newBuilder().setCount(count).setBytes(bytes).setChecksum(checksum).build();
        }
    }

    /**
     * The query parameters `names` as decimal integers (a missing one is 0); an unknown, repeated
     * or non-integer parameter is Invalid, naming it.
     */
    static long[] parseQuery(String query, String... names) throws Invalid {
        long[] values = new long[names.length];
        boolean[] seen = new boolean[names.length];
        if (query == null) {
            return values;
        }
        for (String pair : query.split("&")) {
            if (pair.isEmpty()) {
                continue;
            }
            int eq = pair.indexOf('=');
            String name = eq < 0 ? pair : pair.substring(0, eq);
            String value = eq < 0 ? "" : pair.substring(eq + 1);
            int index = List.of(names).indexOf(name);
            if (index < 0) {
                throw new Invalid("unknown query parameter \"" + truncate(name) + "\"; expected "
                        + String.join(", ", names));
            }
            if (seen[index]) {
                throw new Invalid("query parameter " + name + " is given twice");
            }
            seen[index] = true;
            values[index] = -1;
            if (!value.isEmpty() && value.length() <= 19 && value.chars().allMatch(c -> c >= '0' && c <= '9')) {
                try {
                    values[index] = Long.parseLong(value);
                } catch (NumberFormatException e) {
                    values[index] = -1;
                }
            }
            if (values[index] < 0) {
                throw new Invalid("query parameter " + name + " is \"" + truncate(value)
                        + "\", expected a non-negative decimal integer");
            }
        }
        return values;
    }

    private static String truncate(String s) {
        String t = s.length() > 40 ? s.substring(0, 40) : s;
        return t.replace("\"", "'").replace("\\", "/");
    }

    private static int field(String name, long value) throws Invalid {
        if (value > 0xFFFF_FFFFL) {
            throw new Invalid(name + " is " + value + ", too large");
        }
        return (int) value;
    }

    /** GET /v1/stream/sse?count=N&items=K&rate=R, validated. */
    public static SubscribeRequest subscribeFromQuery(String query) throws Invalid {
        long[] v = parseQuery(query, "count", "items", "rate");
        SubscribeRequest r = SubscribeRequest.newBuilder().setCount(field("count", v[0]))
                .setItems(field("items", v[1])).setRate(field("rate", v[2])).build();
        validate(r);
        return r;
    }

    /** GET /v1/stream/poll?count=N&items=K&rate=R&startNs=T&after=S&max=M, validated. */
    public static PollRequest pollFromQuery(String query) throws Invalid {
        long[] v = parseQuery(query, "count", "items", "rate", "startNs", "after", "max");
        PollRequest r = PollRequest.newBuilder().setCount(field("count", v[0])).setItems(field("items", v[1]))
                .setRate(field("rate", v[2])).setStartNs(v[3]).setAfter(field("after", v[4]))
                .setMax(field("max", v[5])).build();
        validate(r);
        return r;
    }

    /** A message's canonical JSON (every field, int64 as strings, no whitespace). */
    public static String json(Message m) {
        try {
            return PRINTER.print(m);
        } catch (InvalidProtocolBufferException e) {
            throw new IllegalStateException("contract messages always print", e);
        }
    }

    public static byte[] jsonBytes(Message m) {
        return json(m).getBytes(StandardCharsets.UTF_8);
    }

    /** Parses canonical JSON strictly (unknown members are errors) into builder's message. */
    @SuppressWarnings("unchecked")
    public static <M extends Message> M fromJson(String json, Message.Builder builder) throws Invalid {
        try {
            PARSER.merge(json, builder);
            return (M) builder.build();
        } catch (InvalidProtocolBufferException | RuntimeException e) {
            throw new Invalid("not a valid JSON message: " + e.getMessage());
        }
    }
}
