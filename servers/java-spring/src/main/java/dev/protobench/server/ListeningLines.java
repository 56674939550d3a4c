package dev.protobench.server;

import dev.protobench.server.grpc.GrpcServerLifecycle;
import dev.protobench.server.web.ConnectorRegistry;
import java.util.EnumMap;
import java.util.Map;
import org.apache.catalina.connector.Connector;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.web.embedded.tomcat.TomcatWebServer;
import org.springframework.boot.web.servlet.context.ServletWebServerApplicationContext;
import org.springframework.context.ApplicationListener;

/**
 * Prints the contract's listening lines once everything accepts connections (Tomcat's
 * connectors and the gRPC server are started before ApplicationReadyEvent), with the real
 * ports, then flushes stdout.
 */
public class ListeningLines implements ApplicationListener<ApplicationReadyEvent> {

    private final BenchConfig config;
    private final ObjectProvider<ConnectorRegistry> registry;
    private final GrpcServerLifecycle grpc;

    public ListeningLines(BenchConfig config, ObjectProvider<ConnectorRegistry> registry, GrpcServerLifecycle grpc) {
        this.config = config;
        this.registry = registry;
        this.grpc = grpc;
    }

    @Override
    public void onApplicationEvent(ApplicationReadyEvent event) {
        Map<BenchConfig.Protocol, Integer> ports = new EnumMap<>(BenchConfig.Protocol.class);
        if (event.getApplicationContext() instanceof ServletWebServerApplicationContext web
                && web.getWebServer() instanceof TomcatWebServer tomcat) {
            ConnectorRegistry reg = registry.getObject();
            for (Connector c : tomcat.getTomcat().getService().findConnectors()) {
                BenchConfig.Listener l = reg.get(c);
                if (l != null) {
                    ports.put(l.protocol(), c.getLocalPort());
                }
            }
        }
        if (grpc.port() >= 0) {
            ports.put(BenchConfig.Protocol.GRPC, grpc.port());
        }
        StringBuilder out = new StringBuilder();
        for (BenchConfig.Listener l : config.listeners) {
            Integer port = ports.get(l.protocol());
            if (port == null) {
                throw new IllegalStateException("listener not started: " + l.protocol().wireName);
            }
            out.append("listening protocol=").append(l.protocol().wireName)
                    .append(" addr=").append(l.printable(port))
                    .append(" tls=").append(config.tls())
                    .append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }
}
