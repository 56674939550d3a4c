package dev.protobench.server.web;

import dev.protobench.server.BenchConfig;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Map;
import org.apache.catalina.connector.Connector;

/** Which contract listener each Tomcat connector is. */
public final class ConnectorRegistry {

    /** Request attribute holding the BenchConfig.Protocol of the connector a request came in on. */
    public static final String PROTOCOL_ATTRIBUTE = "protobench.protocol";

    private final Map<Connector, BenchConfig.Listener> byConnector =
            Collections.synchronizedMap(new IdentityHashMap<>());

    public void put(Connector connector, BenchConfig.Listener listener) {
        byConnector.put(connector, listener);
    }

    public BenchConfig.Listener get(Connector connector) {
        return byConnector.get(connector);
    }
}
