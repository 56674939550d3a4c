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

	"protobench.dev/servers/go/internal/core"
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

	var services []*service
	for _, proto := range []string{core.ProtoREST, core.ProtoRESTH2, core.ProtoGRPC, core.ProtoSOAP} {
		addr, ok := cfg.Addrs[proto]
		if !ok {
			continue
		}
		var svc *service
		switch proto {
		case core.ProtoREST:
			svc = httpService(cfg, cert, rest.Handler(c), false)
		case core.ProtoRESTH2:
			svc = httpService(cfg, cert, rest.Handler(c), true)
		case core.ProtoSOAP:
			h, err := soap.Handler(c)
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
func httpService(cfg *core.Config, cert tls.Certificate, h http.Handler, h2 bool) *service {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
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
		serve:    srv.Serve,
		shutdown: func(ctx context.Context) { srv.Shutdown(ctx) },
	}
	if cfg.TLS() {
		// net/http sets NextProtos from Protocols: ["h2"] or ["http/1.1"].
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		svc.serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
	}
	return svc
}

func grpcService(cfg *core.Config, cert tls.Certificate, c *core.Core) (*service, error) {
	opts := append(grpcsrv.Options(),
		grpc.MaxRecvMsgSize(int(min(cfg.MaxRequestBytes, 1<<31-1))),
		grpc.MaxSendMsgSize(grpcsrv.MaxSendMsgSize),
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
