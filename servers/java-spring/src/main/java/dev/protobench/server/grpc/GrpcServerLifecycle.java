package dev.protobench.server.grpc;

import dev.protobench.server.BenchConfig;
import dev.protobench.server.RequestPolicy;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.ServerChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioServerSocketChannel;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import io.grpc.protobuf.services.ProtoReflectionService;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.context.SmartLifecycle;

/**
 * The gRPC server: a plain grpc-java NettyServerBuilder (grpc-netty-shaded), started and
 * stopped by Spring as a SmartLifecycle bean alongside Tomcat.
 *
 * Threads: 1 Netty boss (accept) loop, PROTOBENCH_WORKERS Netty worker event loops (epoll when
 * available), and a fixed pool of PROTOBENCH_WORKERS application threads that run the handlers
 * (ServerBuilder.executor); plus one timer thread for the sleep service time.
 */
public final class GrpcServerLifecycle implements SmartLifecycle {

    private final BenchConfig config;
    private final BenchConfig.Listener listener;
    private final GrpcData data;
    private final RequestPolicy policy;

    private volatile boolean running;
    private Server server;
    private EventLoopGroup boss;
    private EventLoopGroup workers;
    private ExecutorService executor;
    private ScheduledExecutorService timer;

    public GrpcServerLifecycle(BenchConfig config, GrpcData data, RequestPolicy policy) {
        this.config = config;
        this.listener = config.listener(BenchConfig.Protocol.GRPC);
        this.data = data;
        this.policy = policy;
    }

    private static ThreadFactory named(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    @Override
    public synchronized void start() {
        if (listener == null || running) {
            return;
        }
        int n = config.workers;
        Class<? extends ServerChannel> channelType;
        if (Epoll.isAvailable()) {
            boss = new EpollEventLoopGroup(1, new DefaultThreadFactory("grpc-boss", true));
            workers = new EpollEventLoopGroup(n, new DefaultThreadFactory("grpc-worker", true));
            channelType = EpollServerSocketChannel.class;
        } else {
            boss = new NioEventLoopGroup(1, new DefaultThreadFactory("grpc-boss", true));
            workers = new NioEventLoopGroup(n, new DefaultThreadFactory("grpc-worker", true));
            channelType = NioServerSocketChannel.class;
        }
        executor = Executors.newFixedThreadPool(n, named("grpc-exec-"));
        timer = Executors.newSingleThreadScheduledExecutor(named("grpc-timer-"));
        GrpcResponder responder = new GrpcResponder(policy, timer, executor);

        NettyServerBuilder b = NettyServerBuilder
                .forAddress(new InetSocketAddress(listener.address(), listener.port()))
                .channelType(channelType)
                .bossEventLoopGroup(boss)
                .workerEventLoopGroup(workers)
                .executor(executor)
                .maxInboundMessageSize(config.maxRequestBytes)
                // PROTOBENCH_IDLE_TIMEOUT, before the client's first SETTINGS frame (a TCP or TLS
                // handshake that never completes, a connection that sends nothing or only the
                // preface): the transport is closed outright
                .handshakeTimeout(config.idleTimeout.toNanos(), TimeUnit.NANOSECONDS)
                // ...and after it, with no call open: GOAWAY, then closed once the client has
                // answered the GOAWAY's PING (grpc-java waits at most 10 s for that answer)
                .maxConnectionIdle(config.idleTimeout.toNanos(), TimeUnit.NANOSECONDS)
                // PROTOBENCH_MAX_STREAMS as SETTINGS_MAX_CONCURRENT_STREAMS (grpc-java takes an int)
                .maxConcurrentCallsPerConnection((int) Math.min(config.maxStreams, Integer.MAX_VALUE))
                .addService(ParseErrors.invalidArgument(new BenchGrpcService(data, responder).bindService()))
                .addService(ParseErrors.invalidArgument(new GreeterGrpcService(responder).bindService()))
                .addService(new StreamsGrpcService(data.itemList.getItemsList(), responder).definition())
                .addService(ProtoReflectionServiceV1.newInstance())
                .addService(ProtoReflectionService.newInstance());
        if (config.tls()) {
            try {
                b.sslContext(GrpcSslContexts.forServer(config.tlsCert.toFile(), config.tlsKey.toFile()).build());
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        try {
            server = b.build().start();
        } catch (IOException e) {
            throw new UncheckedIOException("gRPC server could not bind " + listener, e);
        }
        running = true;
    }

    /** The bound port (the real one when 0 was asked for). */
    public int port() {
        return server == null ? -1 : server.getPort();
    }

    @Override
    public void stop(Runnable callback) {
        Thread t = new Thread(() -> {
            try {
                stop();
            } finally {
                callback.run();
            }
        }, "grpc-shutdown");
        t.start();
    }

    @Override
    public synchronized void stop() {
        if (!running) {
            return;
        }
        running = false;
        server.shutdown();
        try {
            if (!server.awaitTermination(10, TimeUnit.SECONDS)) {
                server.shutdownNow();
                server.awaitTermination(2, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            server.shutdownNow();
            Thread.currentThread().interrupt();
        }
        timer.shutdownNow();
        executor.shutdown();
        boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }

    /** Blocks until the server has terminated (used when gRPC is the only protocol). */
    public void awaitTermination() throws InterruptedException {
        Server s = server;
        if (s != null) {
            s.awaitTermination();
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    @Override
    public int getPhase() {
        // the phase of Tomcat's graceful shutdown: both drain at the same time
        return SmartLifecycle.DEFAULT_PHASE;
    }
}
