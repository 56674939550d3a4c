package dev.protobench.server.stream;

import dev.protobench.server.RequestPolicy;
import dev.protobench.server.rest.BenchController;
import dev.protobench.server.rest.RestErrors;
import dev.protobench.v1.PollRequest;
import dev.protobench.v1.SubscribeRequest;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicReference;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.http.server.ServerHttpResponse;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.mvc.method.annotation.ResponseBodyEmitter;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;

/**
 * The feed over plain HTTP on the rest and rest-h2 listeners: Server-Sent Events (an MVC
 * SseEmitter, written by a feed thread) and polling (one FeedPage as JSON).
 *
 * Both read the feed's parameters from the raw query (StreamRules.parseQuery: unknown, repeated
 * or non-integer parameters are 400 naming them), validate, then admit the call on the request
 * thread (service time, failure draw: an injected failure is the contract's 500).
 */
@RestController
public class StreamController {

    private final FeedJson json;
    private final RequestPolicy policy;
    private final ExecutorService feeds;

    public StreamController(FeedJson json, RequestPolicy policy, ExecutorService feeds) {
        this.json = json;
        this.policy = policy;
        this.feeds = feeds;
    }

    /** GET /v1/stream/sse?count=N&items=K&rate=R (Last-Event-ID resumes after that seq). */
    @GetMapping(path = "/v1/stream/sse")
    public ResponseEntity<SseEmitter> sse(HttpServletRequest http) {
        SubscribeRequest request;
        int after = 0;
        try {
            request = StreamRules.subscribeFromQuery(http.getQueryString());
        } catch (StreamRules.Invalid e) {
            throw new BenchController.BadRequest(e.getMessage());
        }
        String last = http.getHeader("Last-Event-ID");
        if (last != null) {
            long a = -1;
            String t = last.trim();
            if (!t.isEmpty() && t.length() <= 10 && t.chars().allMatch(c -> c >= '0' && c <= '9')) {
                a = Long.parseLong(t);
            }
            if (a < 0 || a > request.getCount()) {
                throw new BenchController.BadRequest(
                        "Last-Event-ID is not an event of this feed; expected 0..=" + request.getCount());
            }
            after = (int) a;
        }
        policy.serviceTimeThenDraw();
        FeedEmitter emitter = new FeedEmitter();
        Feed<FeedJson.Event> feed = new Feed<>(json.maker(), request, after);
        emitter.task.set(feeds.submit(() -> emitter.run(feed, json)));
        return ResponseEntity.ok().header(HttpHeaders.CACHE_CONTROL, "no-cache").body(emitter);
    }

    /**
     * An SseEmitter without a timeout whose feed thread writes each event itself (a blocking write:
     * the next event is built only when the previous one has been written). The thread starts
     * writing once Spring MVC has taken the emitter (extendResponse), so events are not queued
     * in the emitter before its handler is set.
     */
    private static final class FeedEmitter extends SseEmitter {
        private final CountDownLatch taken = new CountDownLatch(1);
        final AtomicReference<Future<?>> task = new AtomicReference<>();

        FeedEmitter() {
            super(0L);
            Runnable stop = () -> {
                Future<?> f = task.get();
                if (f != null) {
                    f.cancel(true);
                }
            };
            onCompletion(stop);
            onError(e -> stop.run());
        }

        @Override
        protected void extendResponse(ServerHttpResponse outputMessage) {
            super.extendResponse(outputMessage);
            taken.countDown();
        }

        void run(Feed<FeedJson.Event> feed, FeedJson json) {
            try {
                taken.await();
                FeedJson.Event event;
                while ((event = feed.awaitNext()) != null) {
                    send(new Lines().id(Long.toString(event.seq())).name("feed").data(json.write(event)));
                }
                send(new Lines().name("end").data("{\"count\":" + feed.count() + "}"));
                complete();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (IOException | IllegalStateException e) {
                // the client went away (or the response was completed): nothing more to send
            }
        }
    }

    /**
     * One event as the contract writes it: `field: value` lines (Spring's own builder writes no
     * space after the colon, which SSE allows but the contract's form has), then a blank line.
     */
    private static final class Lines implements SseEmitter.SseEventBuilder {
        private static final MediaType UTF8_TEXT = new MediaType("text", "plain", StandardCharsets.UTF_8);
        private final StringBuilder text = new StringBuilder();

        private Lines line(String field, String value) {
            text.append(field).append(": ").append(value).append('\n');
            return this;
        }

        @Override
        public Lines id(String id) {
            return line("id", id);
        }

        @Override
        public Lines name(String name) {
            return line("event", name);
        }

        @Override
        public Lines comment(String comment) {
            text.append(": ").append(comment).append('\n');
            return this;
        }

        @Override
        public Lines reconnectTime(long millis) {
            return line("retry", Long.toString(millis));
        }

        @Override
        public Lines data(Object object) {
            return line("data", object.toString());
        }

        @Override
        public Lines data(Object object, MediaType mediaType) {
            return data(object);
        }

        @Override
        public Set<ResponseBodyEmitter.DataWithMediaType> build() {
            return Set.of(new ResponseBodyEmitter.DataWithMediaType(text + "\n", UTF8_TEXT));
        }
    }

    /** GET /v1/stream/poll?count=N&items=K&rate=R&startNs=T&after=S&max=M. */
    @GetMapping(path = "/v1/stream/poll")
    public ResponseEntity<Object> poll(HttpServletRequest http) {
        PollRequest request;
        try {
            request = StreamRules.pollFromQuery(http.getQueryString());
        } catch (StreamRules.Invalid e) {
            return RestErrors.body(HttpStatus.BAD_REQUEST, e.getMessage(), null);
        }
        policy.serviceTimeThenDraw();
        try {
            String page = json.write(StreamRules.page(request, StreamRules.nowNs(), json.maker()));
            return ResponseEntity.ok().contentType(MediaType.APPLICATION_JSON).body(page);
        } catch (StreamRules.Invalid e) {
            return RestErrors.body(HttpStatus.BAD_REQUEST, e.getMessage(), null);
        }
    }
}
