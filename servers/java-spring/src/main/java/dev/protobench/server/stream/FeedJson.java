package dev.protobench.server.stream;

import com.fasterxml.jackson.annotation.JsonFormat;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.protobench.server.rest.Model;
import java.util.List;

/**
 * The feed's events in their canonical JSON form (SSE data, text WebSocket frames, polling pages),
 * as Java records written by the application's Jackson mapper over the REST records: the same
 * encoder as REST's GetInventoryL, so that a feed's JSON costs what REST's does per item.
 */
public final class FeedJson {

    /** A FeedEvent: scheduledNs is int64, a JSON string. */
    public record Event(long seq, @JsonFormat(shape = JsonFormat.Shape.STRING) long scheduledNs,
                        List<Model.Item> items) {
    }

    private final ObjectMapper mapper;
    private final List<Model.Item> dataset;

    public FeedJson(ObjectMapper mapper, List<Model.Item> dataset) {
        this.mapper = mapper;
        this.dataset = dataset;
    }

    public Feed.Maker<Event> maker() {
        return (seq, items, stamp) -> new Event(Integer.toUnsignedLong(seq), stamp,
                StreamRules.eventItems(dataset, seq, items));
    }

    /** The JSON text of an event or a page. */
    public String write(Object value) {
        try {
            return mapper.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("feed records always serialize", e);
        }
    }
}
