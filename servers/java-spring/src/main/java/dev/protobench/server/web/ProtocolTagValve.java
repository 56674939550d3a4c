package dev.protobench.server.web;

import dev.protobench.server.BenchConfig;
import jakarta.servlet.ServletException;
import java.io.IOException;
import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.valves.ValveBase;

/** Tags every request with the protocol of the connector (listener) it arrived on. */
public final class ProtocolTagValve extends ValveBase {

    private final ConnectorRegistry registry;

    public ProtocolTagValve(ConnectorRegistry registry) {
        super(true);
        this.registry = registry;
    }

    @Override
    public void invoke(Request request, Response response) throws IOException, ServletException {
        BenchConfig.Listener l = registry.get(request.getConnector());
        if (l != null) {
            request.setAttribute(ConnectorRegistry.PROTOCOL_ATTRIBUTE, l.protocol());
        }
        getNext().invoke(request, response);
    }
}
