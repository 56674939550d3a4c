// Command server is the protobench reference server for Go: REST (HTTP/1.1
// and HTTP/2), gRPC and SOAP from one process, configured only by the
// PROTOBENCH_* environment variables of contract/README.md.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"protobench.dev/servers/go/internal/core"
	"protobench.dev/servers/go/internal/graphql"
	"protobench.dev/servers/go/internal/grpcsrv"
	"protobench.dev/servers/go/internal/rest"
	"protobench.dev/servers/go/internal/soap"
)

// drainTimeout bounds how long requests in flight may finish after SIGTERM.
const drainTimeout = 10 * time.Second

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "protobench-go:", err)
		os.Exit(1)
	}
}

// service is one listener with its server.
type service struct {
	proto    string
	ln       net.Listener
	serve    func(net.Listener) error
	shutdown func(context.Context)
}

func run() error {
	cfg, err := core.FromEnv()
	if err != nil {
		return err
	}
	if cfg.Workers > 0 {
		runtime.GOMAXPROCS(cfg.Workers)
	}
	if len(cfg.Addrs) == 0 {
		return errors.New("no protocol to serve: set at least one PROTOBENCH_<P>_ADDR")
	}
	c, err := core.New(cfg)
	if err != nil {
		return err
	}
	var cert tls.Certificate
	if cfg.TLS() {
		if cert, err = tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey); err != nil {
			return fmt.Errorf("load TLS certificate: %w", err)
		}
	}

	// One GraphQL executor and persisted-query store for both its listeners.
	gq := graphql.New(c)
	var services []*service
	for _, proto := range core.Protocols {
		addr, ok := cfg.Addrs[proto]
		if !ok {
			continue
		}
		var svc *service
		switch proto {
		case core.ProtoREST, core.ProtoRESTH2:
			h, err := rest.Handler(c)
			if err != nil {
				return err
			}
			svc = httpService(cfg, cert, h, proto == core.ProtoRESTH2)
		case core.ProtoSOAP:
			h, err := soap.Handler(c)
			if err != nil {
				return err
			}
			svc = httpService(cfg, cert, h, false)
		case core.ProtoGraphQL, core.ProtoGraphQLGet:
			svc = httpService(cfg, cert, gq.Handler(proto == core.ProtoGraphQLGet), false)
		case core.ProtoConnect, core.ProtoConnectJSON, core.ProtoGRPCWeb:
			flavor := grpcsrv.Connect
			if proto == core.ProtoGRPCWeb {
				flavor = grpcsrv.GRPCWeb
			}
			h, err := grpcsrv.ConnectHandler(c, flavor)
			if err != nil {
				return err
			}
			svc = httpService(cfg, cert, h, false)
		case core.ProtoGRPC:
			if svc, err = grpcService(cfg, cert, c); err != nil {
				return err
			}
		}
		svc.proto = proto
		if svc.ln, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("%s: %w", proto, err)
		}
		services = append(services, svc)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	failed := make(chan error, len(services))
	for _, svc := range services {
		go func() {
			if err := svc.serve(svc.ln); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, grpc.ErrServerStopped) {
				failed <- fmt.Errorf("%s: %w", svc.proto, err)
			}
		}()
		// os.Stdout is unbuffered: the line is out when Printf returns.
		fmt.Printf("listening protocol=%s addr=%s tls=%t\n", svc.proto, svc.ln.Addr(), cfg.TLS())
	}

	select {
	case <-ctx.Done():
	case err := <-failed:
		return err
	}
	stop()
	// Stop accepting and let requests in flight finish, at most drainTimeout.
	dctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, svc := range services {
		wg.Go(func() { svc.shutdown(dctx) })
	}
	wg.Wait()
	return nil
}

// httpService serves h with net/http: HTTP/1.1 only, or HTTP/2 only (h2 by
// ALPN with TLS, h2c with prior knowledge without).
//
// Timeouts (contract/README.md, PROTOBENCH_IDLE_TIMEOUT and
// PROTOBENCH_READ_TIMEOUT), all net/http's own:
//   - ReadHeaderTimeout and ReadTimeout = the read timeout: the headers, and
//     the headers plus the body, of a request must arrive within it (a
//     total, not an inactivity timeout), counted from the request's first
//     byte on a keep-alive connection and from the accept (or the end of the
//     TLS handshake) for a connection's first request. It also bounds the
//     TLS handshake. On HTTP/2 net/http applies ReadTimeout to each stream's
//     body.
//   - IdleTimeout = the idle timeout: between HTTP/1.1 keep-alive requests,
//     and for an HTTP/2 connection with no open stream (net/http's HTTP/2
//     server sends GOAWAY and closes).
//   - ConnState (firstRequestGuard): a connection on which no request has
//     begun within the idle timeout of its accept is closed: one that sends
//     nothing, never finishes its TLS handshake, or (HTTP/2) never sends its
//     client preface (net/http would otherwise wait 10 s for it after TLS).
func httpService(cfg *core.Config, cert tls.Certificate, h http.Handler, h2 bool) *service {
	guard := &firstRequestGuard{timeout: cfg.IdleTimeout}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.ReadTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ConnState:         guard.connState,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: int(cfg.MaxStreams)},
		Protocols:         new(http.Protocols),
	}
	switch {
	case !h2:
		srv.Protocols.SetHTTP1(true)
	case cfg.TLS():
		srv.Protocols.SetHTTP2(true)
	default:
		srv.Protocols.SetUnencryptedHTTP2(true)
	}
	svc := &service{
		serve: srv.Serve,
		shutdown: func(ctx context.Context) {
			srv.Shutdown(ctx)
			// WebSocket streams run on hijacked connections, which
			// Shutdown does not wait for.
			if ws, ok := h.(interface{ WaitStreams(context.Context) }); ok {
				ws.WaitStreams(ctx)
			}
		},
	}
	if cfg.TLS() {
		// net/http sets NextProtos from Protocols: ["h2"] or ["http/1.1"].
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		svc.serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
	}
	return svc
}

// grpcService serves the gRPC front end with grpc-go.
//
// Timeouts, all grpc-go's own: ConnectionTimeout = the idle timeout bounds
// the TLS handshake and the HTTP/2 preface and first SETTINGS frame (a
// connection that sends nothing, or only part of these, is closed);
// keepalive MaxConnectionIdle = the idle timeout closes an established
// connection with no open stream (GOAWAY, then the connection is closed once
// the client acknowledges the PING that follows it, or 5 s later).
func grpcService(cfg *core.Config, cert tls.Certificate, c *core.Core) (*service, error) {
	opts := append(grpcsrv.Options(),
		grpc.MaxRecvMsgSize(int(min(cfg.MaxRequestBytes, 1<<31-1))),
		grpc.MaxSendMsgSize(grpcsrv.MaxSendMsgSize),
		grpc.MaxConcurrentStreams(cfg.MaxStreams),
		grpc.ConnectionTimeout(cfg.IdleTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: cfg.IdleTimeout}),
	)
	if cfg.TLS() {
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{
			Certificates: []tls.Certificate{cert},
			NextProtos:   []string{"h2"},
		})))
	}
	srv := grpc.NewServer(opts...)
	if err := grpcsrv.Register(srv, c); err != nil {
		return nil, err
	}
	return &service{
		serve: srv.Serve,
		shutdown: func(ctx context.Context) {
			done := make(chan struct{})
			go func() { srv.GracefulStop(); close(done) }()
			select {
			case <-done:
			case <-ctx.Done():
				srv.Stop()
			}
		},
	}, nil
}

// firstRequestGuard closes a connection on which no request has begun within
// timeout of its accept. net/http reports every connection to ConnState:
// StateNew on accept, then StateActive once a request's headers (HTTP/1.1)
// or the client preface (HTTP/2) have been read, or StateClosed. The guard
// arms a timer on StateNew and disarms it on the first later state; from
// then on net/http's own IdleTimeout and ReadTimeout apply.
type firstRequestGuard struct {
	timeout time.Duration
	timers  sync.Map // net.Conn -> *time.Timer
}

func (g *firstRequestGuard) connState(c net.Conn, state http.ConnState) {
	if state == http.StateNew {
		g.timers.Store(c, time.AfterFunc(g.timeout, func() {
			// Also reached for a connection net/http closed without a
			// StateClosed report (HTTP/2 before its preface): Close is
			// then a no-op, and the entry goes either way.
			g.timers.Delete(c)
			c.Close()
		}))
		return
	}
	if t, ok := g.timers.LoadAndDelete(c); ok {
		t.(*time.Timer).Stop()
	}
}
