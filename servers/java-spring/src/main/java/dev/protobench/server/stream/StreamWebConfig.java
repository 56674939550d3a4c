package dev.protobench.server.stream;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.protobench.server.BenchConfig;
import dev.protobench.server.Dataset;
import dev.protobench.server.RequestPolicy;
import dev.protobench.server.grpc.GrpcData;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.Enumeration;
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
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.core.Ordered;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.server.ServerHttpRequest;
import org.springframework.http.server.ServerHttpResponse;
import org.springframework.web.socket.WebSocketHandler;
import org.springframework.web.filter.OncePerRequestFilter;
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
    private static final String EXTENSIONS = "Sec-WebSocket-Extensions";

    private final BenchConfig config;
    private final RequestPolicy policy;
    private final List<dev.protobench.v1.Item> items;
    private final FeedJson json;
    private final ExecutorService feeds;
    private final ScheduledExecutorService timer;

    public StreamWebConfig(BenchConfig config, RequestPolicy policy, GrpcData data, Dataset dataset,
            ObjectMapper mapper) {
        this.config = config;
        this.policy = policy;
        this.items = data.itemList.getItemsList();
        this.json = new FeedJson(mapper, dataset.items);
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
        return new StreamController(json, policy, feeds);
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
        WsStreams ws = new WsStreams(items, json, feeds, timer, config.maxRequestBytes, config.idleTimeout);
        HandshakeInterceptor admit = new Admission(policy);
        registry.addHandler(ws.echo(), "/v1/stream/ws/echo")
                .addHandler(ws.subscribe(), "/v1/stream/ws/subscribe")
                .addHandler(ws.upload(), "/v1/stream/ws/upload")
                .addInterceptors(admit).setAllowedOriginPatterns("*");
    }

    /**
     * No WebSocket extensions: the WebSocket paths see requests without Sec-WebSocket-Extensions,
     * so permessage-deflate (which Tomcat accepts whenever a client offers it, as Python's
     * websockets does, and which no Spring setting turns off: Tomcat adds its installed extensions
     * to any list Spring gives) is never negotiated. Frames then carry the messages as they are,
     * as on the other stacks, so bytes per message compare. Tomcat 10.1.55 with permessage-deflate
     * and partial messages also let a 65,537-byte message past a 65,536-byte limit here.
     */
    @Bean
    public FilterRegistrationBean<OncePerRequestFilter> noWebSocketExtensions() {
        FilterRegistrationBean<OncePerRequestFilter> reg = new FilterRegistrationBean<>(new OncePerRequestFilter() {
            @Override
            protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response,
                    FilterChain chain) throws ServletException, IOException {
                chain.doFilter(new HttpServletRequestWrapper(request) {
                    private boolean hidden(String name) {
                        return EXTENSIONS.equalsIgnoreCase(name);
                    }

                    @Override
                    public String getHeader(String name) {
                        return hidden(name) ? null : super.getHeader(name);
                    }

                    @Override
                    public Enumeration<String> getHeaders(String name) {
                        return hidden(name) ? Collections.emptyEnumeration() : super.getHeaders(name);
                    }

                    @Override
                    public Enumeration<String> getHeaderNames() {
                        List<String> names = Collections.list(super.getHeaderNames());
                        names.removeIf(this::hidden);
                        return Collections.enumeration(names);
                    }
                }, response);
            }
        });
        reg.addUrlPatterns("/v1/stream/ws/*");
        reg.setOrder(Ordered.HIGHEST_PRECEDENCE + 1);
        return reg;
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
            } catch (IOException e) {
                // the client is gone
            }
            return false;
        }
    }
}
