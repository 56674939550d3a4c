package dev.protobench.server;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The server's whole configuration, read once from the PROTOBENCH_* environment variables
 * (contract/README.md, "The server environment contract"). Nothing else configures the server.
 */
public final class BenchConfig {

    /** The protocols of the contract, in the order their listening lines are printed. */
    public enum Protocol {
        REST("rest", "PROTOBENCH_REST_ADDR"),
        REST_H2("rest-h2", "PROTOBENCH_REST_H2_ADDR"),
        SOAP("soap", "PROTOBENCH_SOAP_ADDR"),
        GRPC("grpc", "PROTOBENCH_GRPC_ADDR");

        public final String wireName;
        public final String envVar;

        Protocol(String wireName, String envVar) {
            this.wireName = wireName;
            this.envVar = envVar;
        }

        public boolean isHttpServlet() {
            return this != GRPC;
        }
    }

    /** One listener: a protocol and the host:port it binds. */
    public record Listener(Protocol protocol, String host, InetAddress address, int port) {
        /** ip:port as printed in the listening line ([v6]:port for IPv6). */
        public String printable(int actualPort) {
            // an IP literal is printed as given ("::1", not "0:0:0:0:0:0:0:1"); a name resolved
            boolean literal = host.indexOf(':') >= 0 || host.matches("[0-9.]+");
            String ip = literal ? host : address.getHostAddress();
            if (ip.indexOf(':') >= 0) {
                ip = "[" + ip + "]";
            }
            return ip + ":" + actualPort;
        }
    }

    public enum ServiceTimeKind { NONE, SLEEP, SPIN }

    public final List<Listener> listeners;
    public final int workers;
    public final Path tlsCert;
    public final Path tlsKey;
    public final double failureRate;
    public final long failureSeed;
    public final ServiceTimeKind serviceTimeKind;
    public final long serviceTimeNanos;
    public final int maxRequestBytes;
    public final Path dataset;

    private BenchConfig(Map<String, String> env) {
        List<Listener> ls = new ArrayList<>();
        for (Protocol p : Protocol.values()) {
            String v = env.get(p.envVar);
            if (v != null && !v.isBlank()) {
                ls.add(parseAddr(p, v.trim()));
            }
        }
        this.listeners = List.copyOf(ls);

        String w = env.get("PROTOBENCH_WORKERS");
        int workers = Runtime.getRuntime().availableProcessors();
        if (w != null && !w.isBlank()) {
            workers = Integer.parseInt(w.trim());
            if (workers < 1) {
                throw new IllegalArgumentException("PROTOBENCH_WORKERS must be >= 1");
            }
        }
        this.workers = workers;

        String cert = env.get("PROTOBENCH_TLS_CERT");
        String key = env.get("PROTOBENCH_TLS_KEY");
        if (cert != null && !cert.isBlank() && key != null && !key.isBlank()) {
            this.tlsCert = Paths.get(cert).toAbsolutePath();
            this.tlsKey = Paths.get(key).toAbsolutePath();
        } else {
            this.tlsCert = null;
            this.tlsKey = null;
        }

        String rate = env.get("PROTOBENCH_FAILURE_RATE");
        this.failureRate = rate == null || rate.isBlank() ? 0.0 : Double.parseDouble(rate.trim());
        if (!(failureRate >= 0.0 && failureRate <= 1.0)) {
            throw new IllegalArgumentException("PROTOBENCH_FAILURE_RATE must be in 0..1");
        }
        String seed = env.get("PROTOBENCH_FAILURE_SEED");
        this.failureSeed = seed == null || seed.isBlank() ? 1L : Long.parseUnsignedLong(seed.trim());

        String st = env.get("PROTOBENCH_SERVICE_TIME");
        if (st == null || st.isBlank() || st.trim().equals("none")) {
            this.serviceTimeKind = ServiceTimeKind.NONE;
            this.serviceTimeNanos = 0;
        } else {
            String s = st.trim();
            int colon = s.indexOf(':');
            if (colon < 0) {
                throw new IllegalArgumentException("PROTOBENCH_SERVICE_TIME must be sleep:<d> or spin:<d>");
            }
            String kind = s.substring(0, colon);
            long nanos = parseDuration(s.substring(colon + 1)).toNanos();
            switch (kind) {
                case "sleep" -> this.serviceTimeKind = ServiceTimeKind.SLEEP;
                case "spin" -> this.serviceTimeKind = ServiceTimeKind.SPIN;
                default -> throw new IllegalArgumentException("PROTOBENCH_SERVICE_TIME kind must be sleep or spin");
            }
            this.serviceTimeNanos = nanos;
        }

        String max = env.get("PROTOBENCH_MAX_REQUEST_BYTES");
        long maxBytes = max == null || max.isBlank() ? 8388608L : Long.parseLong(max.trim());
        if (maxBytes < 0) {
            throw new IllegalArgumentException("PROTOBENCH_MAX_REQUEST_BYTES must be >= 0");
        }
        this.maxRequestBytes = (int) Math.min(maxBytes, Integer.MAX_VALUE - 8);

        String ds = env.get("PROTOBENCH_DATASET");
        this.dataset = ds == null || ds.isBlank() ? findDataset() : Paths.get(ds);
    }

    public static BenchConfig fromEnvironment() {
        return new BenchConfig(System.getenv());
    }

    public boolean tls() {
        return tlsCert != null;
    }

    public boolean anyHttp() {
        return listeners.stream().anyMatch(l -> l.protocol().isHttpServlet());
    }

    public Listener listener(Protocol p) {
        return listeners.stream().filter(l -> l.protocol() == p).findFirst().orElse(null);
    }

    static Listener parseAddr(Protocol p, String addr) {
        int colon = addr.lastIndexOf(':');
        if (colon < 0) {
            throw new IllegalArgumentException(p.envVar + " must be host:port, got " + addr);
        }
        String host = addr.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port = Integer.parseInt(addr.substring(colon + 1));
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException(p.envVar + ": bad port " + port);
        }
        try {
            InetAddress address = InetAddress.getByName(host.isEmpty() ? "127.0.0.1" : host);
            return new Listener(p, host, address, port);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException(p.envVar + ": unknown host " + host, e);
        }
    }

    /** Parses durations such as 50ms, 1.5s, 200us, 10ns. */
    static Duration parseDuration(String s) {
        String t = s.trim();
        String[][] units = {{"ns", "1"}, {"us", "1000"}, {"µs", "1000"}, {"ms", "1000000"}, {"s", "1000000000"}};
        for (String[] u : units) {
            if (t.endsWith(u[0])) {
                String num = t.substring(0, t.length() - u[0].length());
                if (u[0].equals("s") && (num.endsWith("m") || num.endsWith("u") || num.endsWith("n"))) {
                    continue;
                }
                double v = Double.parseDouble(num);
                if (v < 0) {
                    throw new IllegalArgumentException("negative service time");
                }
                return Duration.ofNanos(Math.round(v * Long.parseLong(u[1])));
            }
        }
        throw new IllegalArgumentException("bad duration " + s);
    }

    /** contract/data/dataset.json, searched from the working directory upwards. */
    private static Path findDataset() {
        Path dir = Paths.get("").toAbsolutePath();
        while (dir != null) {
            Path candidate = dir.resolve("contract").resolve("data").resolve("dataset.json");
            if (Files.isRegularFile(candidate)) {
                return candidate;
            }
            dir = dir.getParent();
        }
        return Paths.get("../../contract/data/dataset.json");
    }
}
