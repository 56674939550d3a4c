package dev.protobench.server.stream;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.Parser;
import dev.protobench.v1.FeedEvent;
import dev.protobench.v1.Item;
import dev.protobench.v1.StreamMessage;
import dev.protobench.v1.SubscribeRequest;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.springframework.web.socket.BinaryMessage;
import org.springframework.web.socket.CloseStatus;
import org.springframework.web.socket.TextMessage;
import org.springframework.web.socket.WebSocketHandler;
import org.springframework.web.socket.WebSocketMessage;
import org.springframework.web.socket.WebSocketSession;

/**
 * The WebSocket forms of the echo stream, the subscription and the upload: plain Spring
 * WebSocketHandlers on Tomcat's WebSocket container (RFC 6455 over HTTP/1.1).
 *
 * A text frame carries a message's canonical JSON, a binary frame its protobuf; a reply goes in
 * the frame type of the message it answers. Feed events in JSON are Jackson's (FeedJson, as
 * REST); the small echo and upload messages go through protobuf's JsonFormat. Handlers take partial messages, so Tomcat holds
 * only its small frame buffers and the handler gathers one message up to
 * PROTOBENCH_MAX_REQUEST_BYTES, closing with 1009 as soon as a message passes it (before it is
 * buffered whole). Close codes: 1000 the clean end, 1007 a message that does not decode or is
 * invalid (Tomcat itself closes a text frame that is not UTF-8 with 1007), 1008 more than
 * 1,000,000 messages or no message for PROTOBENCH_IDLE_TIMEOUT while one is awaited, 1009 over
 * the size limit. Echo and upload answer on the thread that reads (a blocking send), so the next
 * message is read when the previous reply has been written; a subscription's events are written
 * by a feed thread, one at a time.
 */
public final class WsStreams {

    /** The longest close reason (a control frame holds 125 bytes, two of them the code). */
    private static final int MAX_REASON = 123;
    private static final String STATE = "protobench.ws";

    private final List<Item> items;
    private final FeedJson json;
    private final ExecutorService feeds;
    private final ScheduledExecutorService timer;
    private final int maxMessageBytes;
    private final Duration idleTimeout;

    public WsStreams(List<Item> items, FeedJson json, ExecutorService feeds, ScheduledExecutorService timer,
            int maxMessageBytes, Duration idleTimeout) {
        this.items = items;
        this.json = json;
        this.feeds = feeds;
        this.timer = timer;
        this.maxMessageBytes = maxMessageBytes;
        this.idleTimeout = idleTimeout;
    }

    public WebSocketHandler echo() {
        return new Handler() {
            @Override
            void message(Stream s, boolean text, byte[] bytes) throws IOException {
                if (s.count == StreamRules.MAX_STREAM_MESSAGES) {
                    close(s.session, StreamRules.CLOSE_POLICY, StreamRules.TOO_MANY_MESSAGES);
                    return;
                }
                s.count++;
                StreamMessage m = decode(s, text, bytes, StreamMessage.newBuilder(), StreamMessage.parser());
                if (m != null) {
                    send(s.session, text, m);
                }
            }
        };
    }

    public WebSocketHandler upload() {
        return new Handler() {
            @Override
            void message(Stream s, boolean text, byte[] bytes) throws IOException {
                // an empty frame ends the upload (no message encodes to nothing: seq >= 1)
                if (bytes.length == 0) {
                    s.awaiting = false;
                    send(s.session, text, s.tally.summary());
                    close(s.session, StreamRules.CLOSE_NORMAL, "");
                    return;
                }
                StreamMessage m = decode(s, text, bytes, StreamMessage.newBuilder(), StreamMessage.parser());
                if (m != null && !s.tally.add(m)) {
                    close(s.session, StreamRules.CLOSE_POLICY, StreamRules.TOO_MANY_MESSAGES);
                }
            }
        };
    }

    public WebSocketHandler subscribe() {
        return new Handler() {
            @Override
            void message(Stream s, boolean text, byte[] bytes) throws IOException {
                if (!s.awaiting) {
                    close(s.session, StreamRules.CLOSE_INVALID, "no message is expected during a subscription");
                    return;
                }
                s.awaiting = false;
                SubscribeRequest r = decode(s, text, bytes, SubscribeRequest.newBuilder(), SubscribeRequest.parser());
                if (r == null) {
                    return;
                }
                try {
                    StreamRules.validate(r);
                } catch (StreamRules.Invalid e) {
                    close(s.session, StreamRules.CLOSE_INVALID, e.getMessage());
                    return;
                }
                // the events in the request's frame type: JSON text (Jackson, as REST) or protobuf
                if (text) {
                    Feed<FeedJson.Event> feed = new Feed<>(json.maker(), r, 0);
                    s.feed = feeds.submit(() -> sendFeed(s.session, feed, e -> new TextMessage(json.write(e))));
                } else {
                    Feed<FeedEvent> feed = new Feed<>(StreamRules.protobuf(items), r, 0);
                    s.feed = feeds.submit(() -> sendFeed(s.session, feed, e -> new BinaryMessage(e.toByteArray())));
                }
            }
        };
    }

    private static <E> void sendFeed(WebSocketSession session, Feed<E> feed,
            Function<E, WebSocketMessage<?>> frame) {
        try {
            E event;
            while ((event = feed.awaitNext()) != null) {
                if (!send(session, frame.apply(event))) {
                    return;
                }
            }
            close(session, StreamRules.CLOSE_NORMAL, "");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException | RuntimeException e) {
            // the connection is gone
        }
    }

    /** One connection's state. */
    private static final class Stream {
        final WebSocketSession session;
        final StreamRules.Tally tally = new StreamRules.Tally();
        /** The current message's pieces (partial frames), its frame type and size so far. */
        final ByteArrayOutputStream pieces = new ByteArrayOutputStream();
        boolean pieceText;
        long pieceBytes;
        int count;
        /** A client message is awaited (the idle timeout applies). */
        volatile boolean awaiting = true;
        volatile long lastNanos = System.nanoTime();
        volatile Future<?> idle;
        volatile Future<?> feed;

        Stream(WebSocketSession session) {
            this.session = session;
        }
    }

    private abstract class Handler implements WebSocketHandler {

        /** One whole message (bytes: its UTF-8 text or its binary payload). */
        abstract void message(Stream s, boolean text, byte[] bytes) throws IOException;

        @Override
        public void afterConnectionEstablished(WebSocketSession session) {
            Stream s = new Stream(session);
            session.getAttributes().put(STATE, s);
            watchIdle(s, idleTimeout.toNanos());
        }

        @Override
        public void handleMessage(WebSocketSession session, WebSocketMessage<?> message) throws IOException {
            Stream s = (Stream) session.getAttributes().get(STATE);
            boolean text;
            byte[] piece;
            if (message instanceof TextMessage t) {
                text = true;
                piece = t.getPayload().getBytes(StandardCharsets.UTF_8);
            } else if (message instanceof BinaryMessage b) {
                text = false;
                ByteBuffer buf = b.getPayload();
                piece = new byte[buf.remaining()];
                buf.get(piece);
            } else {
                return; // ping / pong: Tomcat answers pings
            }
            s.lastNanos = System.nanoTime();
            if (s.pieceBytes == 0 && s.pieces.size() == 0) {
                s.pieceText = text;
            }
            s.pieceBytes += piece.length;
            if (s.pieceBytes > maxMessageBytes) {
                close(session, StreamRules.CLOSE_TOO_BIG,
                        "message larger than " + maxMessageBytes + " bytes");
                return;
            }
            if (message.isLast() && s.pieces.size() == 0) {
                s.pieceBytes = 0;
                message(s, text, piece);
                return;
            }
            s.pieces.write(piece);
            if (message.isLast()) {
                byte[] whole = s.pieces.toByteArray();
                s.pieces.reset();
                s.pieceBytes = 0;
                message(s, s.pieceText, whole);
            }
        }

        @Override
        public void handleTransportError(WebSocketSession session, Throwable exception) {
            // the connection is gone or Tomcat has closed it (e.g. 1007 for text that is not UTF-8)
        }

        @Override
        public void afterConnectionClosed(WebSocketSession session, CloseStatus closeStatus) {
            Stream s = (Stream) session.getAttributes().get(STATE);
            if (s != null) {
                Future<?> f = s.idle;
                if (f != null) {
                    f.cancel(false);
                }
                f = s.feed;
                if (f != null) {
                    f.cancel(true);
                }
            }
        }

        @Override
        public boolean supportsPartialMessages() {
            return true;
        }
    }

    /** Closes the stream with 1008 once no message has come for the idle timeout while one is awaited. */
    private void watchIdle(Stream s, long delayNanos) {
        s.idle = timer.schedule(() -> {
            if (!s.session.isOpen() || !s.awaiting) {
                return;
            }
            long left = s.lastNanos + idleTimeout.toNanos() - System.nanoTime();
            if (left > 0) {
                watchIdle(s, left);
                return;
            }
            try {
                close(s.session, StreamRules.CLOSE_POLICY, "no message for " + idleTimeout.toSeconds() + "s");
            } catch (IOException e) {
                // already gone
            }
        }, delayNanos, TimeUnit.NANOSECONDS);
    }

    /** Decodes one message from its frame type; on failure closes with 1007 and returns null. */
    private static <M extends Message> M decode(Stream s, boolean text, byte[] bytes, Message.Builder builder,
            Parser<M> parser) throws IOException {
        try {
            if (text) {
                return StreamRules.fromJson(new String(bytes, StandardCharsets.UTF_8), builder);
            }
            return parser.parseFrom(bytes);
        } catch (StreamRules.Invalid | InvalidProtocolBufferException e) {
            close(s.session, StreamRules.CLOSE_INVALID,
                    text ? e.getMessage() : "not a valid protobuf message: " + e.getMessage());
            return null;
        }
    }

    /** Sends one message in the given frame type; false when the session is closed. */
    private static boolean send(WebSocketSession session, boolean text, Message m) throws IOException {
        return send(session, text ? new TextMessage(StreamRules.json(m)) : new BinaryMessage(m.toByteArray()));
    }

    private static boolean send(WebSocketSession session, WebSocketMessage<?> frame) throws IOException {
        synchronized (session) {
            if (!session.isOpen()) {
                return false;
            }
            session.sendMessage(frame);
            return true;
        }
    }

    private static void close(WebSocketSession session, int code, String reason) throws IOException {
        byte[] r = reason.getBytes(StandardCharsets.UTF_8);
        String cut = reason;
        if (r.length > MAX_REASON) {
            int end = MAX_REASON;
            while (end > 0 && (r[end] & 0xC0) == 0x80) {
                end--;
            }
            cut = new String(r, 0, end, StandardCharsets.UTF_8);
        }
        synchronized (session) {
            if (session.isOpen()) {
                session.close(new CloseStatus(code, cut));
            }
        }
    }
}
