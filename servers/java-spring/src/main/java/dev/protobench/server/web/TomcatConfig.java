package dev.protobench.server.web;

import dev.protobench.server.BenchConfig;
import dev.protobench.server.BenchConfig.Listener;
import dev.protobench.server.BenchConfig.Protocol;
import java.util.List;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.core.StandardThreadExecutor;
import org.apache.coyote.http11.AbstractHttp11Protocol;
import org.apache.coyote.http2.Http2Protocol;
import org.apache.tomcat.util.net.SSLHostConfig;
import org.apache.tomcat.util.net.SSLHostConfigCertificate;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.embedded.tomcat.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.http.MediaType;
import org.springframework.web.servlet.config.annotation.ContentNegotiationConfigurer;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/**
 * Embedded Tomcat with one connector per HTTP listener of the contract (rest, rest-h2, soap),
 * all sharing one thread pool sized from PROTOBENCH_WORKERS.
 *
 * - rest, soap: HTTP/1.1 (TLS: ALPN http/1.1).
 * - rest-h2: HTTP/1.1 plus Tomcat's Http2Protocol: clear text = h2c (prior knowledge, and the
 *   HTTP/1.1 Upgrade), TLS = h2 by ALPN.
 * Spring Boot's own connector (the "primary" one) becomes the first HTTP listener; the others
 * are additional connectors. Spring Boot's server.* settings are not used for any of this.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnWebApplication
public class TomcatConfig implements WebMvcConfigurer {

    /** Tomcat worker threads per PROTOBENCH_WORKERS (Tomcat's default of 200 on 2 CPUs). */
    public static final int THREADS_PER_WORKER = 100;

    @Bean
    public ConnectorRegistry connectorRegistry() {
        return new ConnectorRegistry();
    }

    @Bean
    public WebServerFactoryCustomizer<TomcatServletWebServerFactory> protobenchTomcat(BenchConfig config,
            ConnectorRegistry registry) {
        return new WebServerFactoryCustomizer<>() {
            @Override
            public void customize(TomcatServletWebServerFactory factory) {
                List<Listener> http = config.listeners.stream().filter(l -> l.protocol().isHttpServlet()).toList();
                StandardThreadExecutor executor = new StandardThreadExecutor();
                executor.setName("protobench-http");
                executor.setNamePrefix("http-exec-");
                executor.setMaxThreads(config.workers * THREADS_PER_WORKER);
                executor.setMinSpareThreads(Math.min(10, config.workers * THREADS_PER_WORKER));
                executor.setDaemon(true);

                Listener first = http.get(0);
                factory.setAddress(first.address());
                factory.setPort(first.port());
                factory.setSsl(null);
                factory.setHttp2(null);
                factory.addConnectorCustomizers(c -> configure(c, first, config, executor, registry));
                for (Listener l : http.subList(1, http.size())) {
                    Connector c = new Connector(TomcatServletWebServerFactory.DEFAULT_PROTOCOL);
                    c.setThrowOnFailure(true);
                    c.setPort(l.port());
                    configure(c, l, config, executor, registry);
                    factory.addAdditionalTomcatConnectors(c);
                }
                factory.addEngineValves(new ProtocolTagValve(registry), new ReadTimeoutValve());
            }

            @Override
            public String toString() {
                return "protobenchTomcat";
            }
        };
    }

    static void configure(Connector c, Listener l, BenchConfig config, StandardThreadExecutor executor,
            ConnectorRegistry registry) {
        c.setProperty("address", l.address().getHostAddress());
        AbstractHttp11Protocol<?> p = (AbstractHttp11Protocol<?>) c.getProtocolHandler();
        p.setExecutor(executor);
        // keep connections open for any number of requests (Tomcat's default closes after 100)
        p.setMaxKeepAliveRequests(-1);
        // PROTOBENCH_READ_TIMEOUT: Tomcat's connectionTimeout is the socket read timeout while a
        // request's line, headers and body are read (per read: an inactivity timeout)
        p.setConnectionTimeout(BenchConfig.millis(config.readTimeout));
        // PROTOBENCH_IDLE_TIMEOUT: the wait for the next request on a kept-alive connection
        p.setKeepAliveTimeout(BenchConfig.millis(config.idleTimeout));
        if (l.protocol() == Protocol.REST_H2) {
            Http2Protocol h2 = new Http2Protocol();
            // no open stream: the connection is closed after the idle timeout
            h2.setKeepAliveTimeout(BenchConfig.millis(config.idleTimeout));
            // a frame that has started must be complete within the read timeout, and a handler
            // reading a request body waits at most that long for its next DATA frame
            h2.setReadTimeout(BenchConfig.millis(config.readTimeout));
            h2.setStreamReadTimeout(BenchConfig.millis(config.readTimeout));
            h2.setMaxConcurrentStreams(config.maxStreams);
            c.addUpgradeProtocol(h2);
        }
        if (config.tls()) {
            c.setScheme("https");
            c.setSecure(true);
            p.setSSLEnabled(true);
            SSLHostConfig ssl = new SSLHostConfig();
            ssl.setHostName("_default_");
            SSLHostConfigCertificate cert = new SSLHostConfigCertificate(ssl, SSLHostConfigCertificate.Type.UNDEFINED);
            cert.setCertificateFile(config.tlsCert.toString());
            cert.setCertificateKeyFile(config.tlsKey.toString());
            ssl.addCertificate(cert);
            c.addSslHostConfig(ssl);
            c.addUpgradeProtocol(new Http11AlpnMarker());
        }
        registry.put(c, l);
    }

    @Bean
    public ContainerErrors containerErrors() {
        return new ContainerErrors();
    }

    @Bean
    public FilterRegistrationBean<ProtocolGuardFilter> protocolGuardFilter(BenchConfig config) {
        FilterRegistrationBean<ProtocolGuardFilter> reg =
                new FilterRegistrationBean<>(new ProtocolGuardFilter(config.maxRequestBytes));
        reg.setOrder(Ordered.HIGHEST_PRECEDENCE);
        reg.addUrlPatterns("/*");
        return reg;
    }

    /** REST always answers JSON, whatever the Accept header says. */
    @Override
    public void configureContentNegotiation(ContentNegotiationConfigurer configurer) {
        configurer.ignoreAcceptHeader(true).defaultContentType(MediaType.APPLICATION_JSON);
    }
}
