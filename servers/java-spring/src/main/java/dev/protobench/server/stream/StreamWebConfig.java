package dev.protobench.server.stream;

import dev.protobench.server.BenchConfig;
import dev.protobench.server.RequestPolicy;
import dev.protobench.server.grpc.GrpcData;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.server.ServerHttpRequest;
import org.springframework.http.server.ServerHttpResponse;
import org.springframework.web.socket.WebSocketHandler;
import org.springframework.web.socket.config.annotation.EnableWebSocket;
import org.springframework.web.socket.config.annotation.WebSocketConfigurer;
import org.springframework.web.socket.config.annotation.WebSocketHandlerRegistry;
import org.springframework.web.socket.server.HandshakeInterceptor;
import org.springframework.web.socket.server.standard.ServletServerContainerFactoryBean;

/**
 * The streaming operations on the HTTP listeners: the SSE and polling controller and the three
 * WebSocket paths, with the threads they use: a feed pool (one thread per open SSE or WebSocket
 * subscription, like Tomcat's thread per request) and one timer for the WebSocket idle timeout.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnWebApplication
@EnableWebSocket
public class StreamWebConfig implements WebSocketConfigurer {

    /** Tomcat's WebSocket frame buffers (per connection); a message may be larger, gathered by the handler. */
    static final int FRAME_BUFFER_BYTES = 64 * 1024;

    private final BenchConfig config;
    private final RequestPolicy policy;
    private final List<dev.protobench.v1.Item> items;
    private final ExecutorService feeds;
    private final ScheduledExecutorService timer;

    public StreamWebConfig(BenchConfig config, RequestPolicy policy, GrpcData data) {
        this.config = config;
        this.policy = policy;
        this.items = data.itemList.getItemsList();
        AtomicInteger n = new AtomicInteger();
        this.feeds = Executors.newCachedThreadPool(r -> daemon(r, "feed-" + n.incrementAndGet()));
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> daemon(r, "ws-idle"));
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    @Bean
    public StreamController streamController() {
        return new StreamController(items, policy, feeds);
    }

    @Bean
    public ServletServerContainerFactoryBean webSocketContainer() {
        ServletServerContainerFactoryBean c = new ServletServerContainerFactoryBean();
        c.setMaxTextMessageBufferSize(FRAME_BUFFER_BYTES);
        c.setMaxBinaryMessageBufferSize(FRAME_BUFFER_BYTES);
        return c;
    }

    @Override
    public void registerWebSocketHandlers(WebSocketHandlerRegistry registry) {
        WsStreams ws = new WsStreams(items, feeds, timer, config.maxRequestBytes, config.idleTimeout);
        HandshakeInterceptor admit = new Admission(policy);
        registry.addHandler(ws.echo(), "/v1/stream/ws/echo").addInterceptors(admit).setAllowedOriginPatterns("*");
        registry.addHandler(ws.subscribe(), "/v1/stream/ws/subscribe").addInterceptors(admit)
                .setAllowedOriginPatterns("*");
        registry.addHandler(ws.upload(), "/v1/stream/ws/upload").addInterceptors(admit)
                .setAllowedOriginPatterns("*");
    }

    /**
     * Before the upgrade: a request that is no WebSocket upgrade gets the contract's JSON error
     * (instead of Spring's plain-text one), then the call is admitted like a unary call (service
     * time, failure draw: an injected failure is the contract's 500, no WebSocket).
     */
    static final class Admission implements HandshakeInterceptor {
        private final RequestPolicy policy;

        Admission(RequestPolicy policy) {
            this.policy = policy;
        }

        @Override
        public boolean beforeHandshake(ServerHttpRequest request, ServerHttpResponse response,
                WebSocketHandler wsHandler, Map<String, Object> attributes) {
            HttpHeaders h = request.getHeaders();
            if (request.getMethod() != HttpMethod.GET) {
                response.getHeaders().setAllow(java.util.Set.of(HttpMethod.GET));
                return error(response, HttpStatus.METHOD_NOT_ALLOWED,
                        "method not allowed: a WebSocket path takes GET with Upgrade: websocket");
            }
            String upgrade = h.getUpgrade();
            if (upgrade == null || !upgrade.toLowerCase(Locale.ROOT).contains("websocket")
                    || h.getConnection().stream().noneMatch(c -> c.toLowerCase(Locale.ROOT).contains("upgrade"))) {
                response.getHeaders().setUpgrade("websocket");
                response.getHeaders().setConnection("Upgrade");
                return error(response, HttpStatus.UPGRADE_REQUIRED,
                        "expected a WebSocket upgrade (GET with Upgrade: websocket and Connection: Upgrade)");
            }
            if (!"13".equals(h.getFirst("Sec-WebSocket-Version")) || h.getFirst("Sec-WebSocket-Key") == null) {
                response.getHeaders().set("Sec-WebSocket-Version", "13");
                return error(response, HttpStatus.BAD_REQUEST,
                        "expected Sec-WebSocket-Version: 13 and a Sec-WebSocket-Key");
            }
            try {
                policy.serviceTimeThenDraw();
            } catch (RequestPolicy.InjectedFailure e) {
                return error(response, HttpStatus.INTERNAL_SERVER_ERROR, "injected failure");
            }
            return true;
        }

        @Override
        public void afterHandshake(ServerHttpRequest request, ServerHttpResponse response,
                WebSocketHandler wsHandler, Exception exception) {
        }

        private static boolean error(ServerHttpResponse response, HttpStatus status, String message) {
            byte[] body = ("{\"code\":" + status.value() + ",\"message\":\"" + message + "\"}")
                    .getBytes(StandardCharsets.UTF_8);
            response.setStatusCode(status);
            response.getHeaders().setContentType(MediaType.APPLICATION_JSON);
            response.getHeaders().setContentLength(body.length);
            try {
                response.getBody().write(body);
            } catch (java.io.IOException e) {
                // the client is gone
            }
            return false;
        }
    }
}
