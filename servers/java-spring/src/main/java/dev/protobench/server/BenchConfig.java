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
        GRAPHQL("graphql", "PROTOBENCH_GRAPHQL_ADDR"),
        /** The graphql handler on a listener of its own that also takes persisted queries by GET. */
        GRAPHQL_GET("graphql-get", "PROTOBENCH_GRAPHQL_GET_ADDR"),
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

        /** Whether the listener serves the GraphQL handler at /graphql. */
        public boolean isGraphQl() {
            return this == GRAPHQL || this == GRAPHQL_GET;
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
    /** PROTOBENCH_IDLE_TIMEOUT: a connection with no request in progress is closed after this long. */
    public final Duration idleTimeout;
    /** PROTOBENCH_READ_TIMEOUT: an HTTP/1.1 request must keep arriving within this long. */
    public final Duration readTimeout;
    /** PROTOBENCH_MAX_STREAMS: SETTINGS_MAX_CONCURRENT_STREAMS of every HTTP/2 listener (1..2^32-1). */
    public final long maxStreams;

    public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(60);
    public static final Duration DEFAULT_READ_TIMEOUT = Duration.ofSeconds(30);
    public static final long DEFAULT_MAX_STREAMS = 1000;
    private static final String DURATION_ACCEPTED =
            "expected a duration above 0 with a unit ns, us, ms or s, e.g. 60s or 500ms";

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
            workers = (int) parseLong("PROTOBENCH_WORKERS", w, 1, Integer.MAX_VALUE, "expected a whole number >= 1");
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
        double failureRate = 0.0;
        if (rate != null && !rate.isBlank()) {
            try {
                failureRate = Double.parseDouble(rate.trim());
            } catch (NumberFormatException e) {
                failureRate = Double.NaN;
            }
        }
        if (!(failureRate >= 0.0 && failureRate <= 1.0)) {
            throw new IllegalArgumentException(invalid("PROTOBENCH_FAILURE_RATE", rate, "expected a number in 0..1"));
        }
        this.failureRate = failureRate;
        String seed = env.get("PROTOBENCH_FAILURE_SEED");
        try {
            this.failureSeed = seed == null || seed.isBlank() ? 1L : Long.parseUnsignedLong(seed.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(invalid("PROTOBENCH_FAILURE_SEED", seed,
                    "expected an unsigned 64-bit integer"));
        }

        String st = env.get("PROTOBENCH_SERVICE_TIME");
        if (st == null || st.isBlank() || st.trim().equals("none")) {
            this.serviceTimeKind = ServiceTimeKind.NONE;
            this.serviceTimeNanos = 0;
        } else {
            String s = st.trim();
            int colon = s.indexOf(':');
            String kind = colon < 0 ? "" : s.substring(0, colon);
            long nanos = -1;
            try {
                nanos = colon < 0 ? -1 : parseDuration(s.substring(colon + 1)).toNanos();
            } catch (IllegalArgumentException e) {
                nanos = -1;
            }
            switch (nanos < 0 ? "" : kind) {
                case "sleep" -> this.serviceTimeKind = ServiceTimeKind.SLEEP;
                case "spin" -> this.serviceTimeKind = ServiceTimeKind.SPIN;
                default -> throw new IllegalArgumentException(invalid("PROTOBENCH_SERVICE_TIME", st,
                        "expected none, sleep:<duration> or spin:<duration> (ns, us, ms or s), e.g. sleep:5ms"));
            }
            this.serviceTimeNanos = nanos;
        }

        String max = env.get("PROTOBENCH_MAX_REQUEST_BYTES");
        long maxBytes = max == null || max.isBlank() ? 8388608L
                : parseLong("PROTOBENCH_MAX_REQUEST_BYTES", max, 0, Long.MAX_VALUE, "expected a whole number of bytes");
        this.maxRequestBytes = (int) Math.min(maxBytes, Integer.MAX_VALUE - 8);

        String ds = env.get("PROTOBENCH_DATASET");
        this.dataset = ds == null || ds.isBlank() ? findDataset() : Paths.get(ds);

        this.idleTimeout = positiveDuration(env, "PROTOBENCH_IDLE_TIMEOUT", DEFAULT_IDLE_TIMEOUT);
        this.readTimeout = positiveDuration(env, "PROTOBENCH_READ_TIMEOUT", DEFAULT_READ_TIMEOUT);
        String streams = env.get("PROTOBENCH_MAX_STREAMS");
        long maxStreams = DEFAULT_MAX_STREAMS;
        if (streams != null && !streams.isBlank()) {
            try {
                maxStreams = Long.parseLong(streams.trim());
            } catch (NumberFormatException e) {
                maxStreams = -1;
            }
            if (maxStreams < 1 || maxStreams > 0xFFFF_FFFFL) {
                throw new IllegalArgumentException(invalid("PROTOBENCH_MAX_STREAMS", streams,
                        "expected a whole number of streams from 1 to 4294967295"));
            }
        }
        this.maxStreams = maxStreams;
    }

    private static long parseLong(String var, String value, long min, long max, String accepted) {
        long v;
        try {
            v = Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(invalid(var, value, accepted));
        }
        if (v < min || v > max) {
            throw new IllegalArgumentException(invalid(var, value, accepted));
        }
        return v;
    }

    /** The message of a start-up error: which variable, its value and what is accepted. */
    static String invalid(String var, String value, String accepted) {
        return var + "=\"" + value + "\": " + accepted;
    }

    private static Duration positiveDuration(Map<String, String> env, String var, Duration dflt) {
        String v = env.get(var);
        if (v == null || v.isBlank()) {
            return dflt;
        }
        Duration d;
        try {
            d = parseDuration(v);
        } catch (IllegalArgumentException e) {
            d = Duration.ZERO;
        }
        if (d.isZero() || d.isNegative()) {
            throw new IllegalArgumentException(invalid(var, v, DURATION_ACCEPTED));
        }
        return d;
    }

    /** A duration as whole milliseconds for the stacks that take milliseconds (at least 1). */
    public static int millis(Duration d) {
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, d.toMillis()));
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
            throw new IllegalArgumentException(invalid(p.envVar, addr, "expected host:port"));
        }
        String host = addr.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port;
        try {
            port = (int) parseLong(p.envVar, addr.substring(colon + 1), 0, 65535, "");
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    invalid(p.envVar, addr, "expected host:port with a port from 0 to 65535"));
        }
        try {
            InetAddress address = InetAddress.getByName(host.isEmpty() ? "127.0.0.1" : host);
            return new Listener(p, host, address, port);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException(invalid(p.envVar, addr, "expected host:port with a known host"),
                    e);
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
                if (!num.matches("[0-9]+(\\.[0-9]+)?")) {
                    throw new IllegalArgumentException("bad duration " + s);
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
