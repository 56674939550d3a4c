package main

// Tests of the server limits of contract/README.md (issue 14, items 4-7)
// against the real server where net/http and grpc-go apply them their own
// way: this test binary re-runs itself as the server (TestMain), listening
// on 127.0.0.1:0, with short timeouts. The cross-stack probe
// (contract/tests/probe.sh go) owns the rest: connections that send nothing
// or idle after a response or a stream in clear text, the default
// SETTINGS_MAX_CONCURRENT_STREAMS, descriptor exhaustion, the SOAP element
// bound, a missing or JSON gRPC content type and two messages on a unary call.
//
//   - TestLimitVariablesRefused: bad PROTOBENCH_IDLE_TIMEOUT, _READ_TIMEOUT,
//     _MAX_STREAMS values stop the server, naming the variable.
//   - TestIdleTimeout / TestIdleTimeoutTLS: HTTP/2 connections that send only
//     the preface, or the preface and SETTINGS and then answer PINGs; with
//     TLS, every listener's connections that send nothing, never finish TLS,
//     or idle between requests, are closed after the idle timeout, not before.
//   - TestReadTimeout: slow headers and slow bodies are abandoned (408).
//   - TestMaxStreams: SETTINGS_MAX_CONCURRENT_STREAMS on rest-h2 and grpc.
//   - TestGRPCFraming: 415 for other non-gRPC content types, 200 for
//     application/grpc+proto; an undecodable second (or first) message on a
//     unary call is not answered with OK.

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

func TestMain(m *testing.M) {
	if os.Getenv("PB_TEST_RUN_SERVER") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

var allAddrs = []string{
	"PROTOBENCH_REST_ADDR=127.0.0.1:0", "PROTOBENCH_REST_H2_ADDR=127.0.0.1:0",
	"PROTOBENCH_GRPC_ADDR=127.0.0.1:0", "PROTOBENCH_SOAP_ADDR=127.0.0.1:0",
}

type testServer struct {
	cmd    *exec.Cmd
	addr   map[string]string
	stderr *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startServer runs the server with the four protocols on port 0 and env,
// and waits (at most 30 s) for its listening lines.
func startServer(t *testing.T, env ...string) *testServer {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(append(os.Environ(), "PB_TEST_RUN_SERVER=1", "PROTOBENCH_WORKERS=1"), allAddrs...), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{cmd: cmd, addr: map[string]string{}, stderr: &syncBuffer{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(30 * time.Second)
	for len(s.addr) < 4 {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("server exited before listening: %s", s.stderr)
			}
			var proto, addr, tlsFlag string
			if _, err := fmt.Sscanf(line, "listening protocol=%s addr=%s tls=%s", &proto, &addr, &tlsFlag); err == nil {
				s.addr[proto] = addr
			}
		case <-deadline:
			t.Fatalf("server did not start in 30 s: %s", s.stderr)
		}
	}
	go func() {
		for range lines {
		}
	}()
	return s
}

// waitClosed reads from c until the server closes it and returns how long
// that took; it fails if c is still open after max.
func waitClosed(t *testing.T, what string, c net.Conn, start time.Time, min, max time.Duration) {
	t.Helper()
	c.SetReadDeadline(start.Add(max))
	_, err := io.Copy(io.Discard, c)
	took := time.Since(start)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("%s: still open after %v", what, max)
		return
	}
	if took < min {
		t.Errorf("%s: closed after %v, before %v", what, took.Round(time.Millisecond), min)
		return
	}
	t.Logf("%s: closed after %v", what, took.Round(time.Millisecond))
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// h2Client speaks raw HTTP/2 frames on c: it sends the preface and its
// SETTINGS and answers the server's SETTINGS and PINGs, as any client does.
func h2Client(c net.Conn) *http2.Framer {
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, c)
	fr.WriteSettings()
	return fr
}

// serveH2 reads frames until the connection ends, acknowledging SETTINGS
// and PINGs; it returns the server's first SETTINGS.
func serveH2(fr *http2.Framer, settings chan<- map[http2.SettingID]uint32) {
	sent := false
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			if !sent && settings != nil {
				m := map[http2.SettingID]uint32{}
				f.ForeachSetting(func(s http2.Setting) error { m[s.ID] = s.Val; return nil })
				settings <- m
				sent = true
			}
			fr.WriteSettingsAck()
		case *http2.PingFrame:
			if !f.IsAck() {
				fr.WritePing(true, f.Data)
			}
		}
	}
}

const shortIdle = 2 * time.Second

func TestLimitVariablesRefused(t *testing.T) {
	for _, bad := range []string{
		"PROTOBENCH_IDLE_TIMEOUT=abc", "PROTOBENCH_IDLE_TIMEOUT=5", "PROTOBENCH_IDLE_TIMEOUT=0s",
		"PROTOBENCH_IDLE_TIMEOUT=1.5s", "PROTOBENCH_READ_TIMEOUT=10m", "PROTOBENCH_READ_TIMEOUT=-1s",
		"PROTOBENCH_MAX_STREAMS=0", "PROTOBENCH_MAX_STREAMS=x", "PROTOBENCH_MAX_STREAMS=4294967296",
	} {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "PB_TEST_RUN_SERVER=1", "PROTOBENCH_REST_ADDR=127.0.0.1:0", bad)
		timer := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
		out, err := cmd.CombinedOutput()
		timer.Stop()
		name, _, _ := strings.Cut(bad, "=")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() <= 0 {
			t.Errorf("%s: want a non-zero exit, got %v: %s", bad, err, out)
		} else if !strings.Contains(string(out), name) {
			t.Errorf("%s: message does not name %s: %s", bad, name, out)
		}
	}
}

func TestIdleTimeout(t *testing.T) {
	s := startServer(t, "PROTOBENCH_IDLE_TIMEOUT=2s", "PROTOBENCH_READ_TIMEOUT=10s")
	min, max := shortIdle-300*time.Millisecond, shortIdle+3*time.Second
	var wg sync.WaitGroup
	run := func(name string, f func(t *testing.T)) {
		wg.Go(func() { t.Run(name, f) })
	}
	for _, proto := range []string{"rest-h2", "grpc"} {
		run(proto+" sends only the preface", func(t *testing.T) {
			c := dial(t, s.addr[proto])
			start := time.Now()
			io.WriteString(c, http2.ClientPreface)
			// net/http sends GOAWAY and closes 1 s later: allow for it.
			waitClosed(t, proto, c, start, min, max+time.Second)
		})
		run(proto+" idle after preface and SETTINGS", func(t *testing.T) {
			c := dial(t, s.addr[proto])
			start := time.Now()
			fr := h2Client(c)
			done := make(chan struct{})
			go func() { serveH2(fr, nil); close(done) }()
			select {
			case <-done:
				if took := time.Since(start); took < min || took > max+time.Second {
					t.Errorf("%s: closed after %v, want %v..%v", proto, took, min, max+time.Second)
				} else {
					t.Logf("%s: closed after %v", proto, took.Round(time.Millisecond))
				}
			case <-time.After(max + time.Second):
				t.Errorf("%s: still open after %v", proto, max+time.Second)
			}
		})
	}
	wg.Wait()
}

func TestIdleTimeoutTLS(t *testing.T) {
	cert, key := writeCert(t)
	s := startServer(t, "PROTOBENCH_IDLE_TIMEOUT=2s", "PROTOBENCH_READ_TIMEOUT=10s",
		"PROTOBENCH_TLS_CERT="+cert, "PROTOBENCH_TLS_KEY="+key)
	min, max := shortIdle-300*time.Millisecond, shortIdle+3*time.Second
	var wg sync.WaitGroup
	for _, proto := range []string{"rest", "rest-h2", "grpc", "soap"} {
		wg.Go(func() {
			t.Run(proto+" never starts the handshake", func(t *testing.T) {
				waitClosed(t, proto, dial(t, s.addr[proto]), time.Now(), min, max)
			})
		})
		wg.Go(func() {
			t.Run(proto+" sends half a ClientHello", func(t *testing.T) {
				c := dial(t, s.addr[proto])
				start := time.Now()
				c.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}) // record header, then nothing
				waitClosed(t, proto, c, start, min, max)
			})
		})
	}
	for _, proto := range []string{"rest-h2", "grpc"} {
		wg.Go(func() {
			t.Run(proto+" finishes the handshake, sends no preface", func(t *testing.T) {
				raw := dial(t, s.addr[proto])
				start := time.Now()
				c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if err := c.Handshake(); err != nil {
					t.Fatal(err)
				}
				waitClosed(t, proto, c, start, min, max)
			})
		})
	}
	wg.Wait()
}

func TestReadTimeout(t *testing.T) {
	s := startServer(t, "PROTOBENCH_IDLE_TIMEOUT=20s", "PROTOBENCH_READ_TIMEOUT=2s")
	min, max := 2*time.Second-300*time.Millisecond, 5*time.Second
	var wg sync.WaitGroup
	for _, tc := range []struct{ proto, path, ctype, want string }{
		{"rest", "/v1/echo", "application/json", `"code":408`},
		{"soap", "/soap", "text/xml; charset=utf-8", "read timeout"},
	} {
		wg.Go(func() {
			t.Run(tc.proto+" body never completes", func(t *testing.T) {
				c := dial(t, s.addr[tc.proto])
				start := time.Now()
				fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: 100\r\n\r\n{\"pay", tc.path, tc.ctype)
				c.SetReadDeadline(start.Add(max))
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Fatalf("no response: %v", err)
				}
				body, _ := io.ReadAll(resp.Body)
				if took := time.Since(start); resp.StatusCode != http.StatusRequestTimeout || took < min || !strings.Contains(string(body), tc.want) {
					t.Errorf("got %d %q after %v, want 408 naming the timeout after %v", resp.StatusCode, body, took, min)
				}
				waitClosed(t, tc.proto+" after 408", c, start, 0, max)
			})
			t.Run(tc.proto+" headers never complete", func(t *testing.T) {
				c := dial(t, s.addr[tc.proto])
				start := time.Now()
				io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n")
				waitClosed(t, tc.proto, c, start, min, max)
			})
			t.Run(tc.proto+" second request trickles in", func(t *testing.T) {
				c := dial(t, s.addr[tc.proto])
				br := bufio.NewReader(c)
				fmt.Fprintf(c, "GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n")
				c.SetReadDeadline(time.Now().Add(max))
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				// Idle for longer than the read timeout, then the first
				// bytes: the read timeout counts from them.
				time.Sleep(2500 * time.Millisecond)
				start := time.Now()
				io.WriteString(c, "GET / HTTP/1.1\r\n")
				waitClosed(t, tc.proto+" second request", c, start, min, max)
			})
		})
	}
	wg.Wait()
}

func TestMaxStreams(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want uint32
	}{{nil, 1000}, {[]string{"PROTOBENCH_MAX_STREAMS=7"}, 7}} {
		s := startServer(t, tc.env...)
		for _, proto := range []string{"rest-h2", "grpc"} {
			c := dial(t, s.addr[proto])
			c.SetDeadline(time.Now().Add(5 * time.Second))
			settings := make(chan map[http2.SettingID]uint32, 1)
			go serveH2(h2Client(c), settings)
			select {
			case m := <-settings:
				if got, ok := m[http2.SettingMaxConcurrentStreams]; !ok || got != tc.want {
					t.Errorf("%s %v: SETTINGS_MAX_CONCURRENT_STREAMS = %d (set: %t), want %d", proto, tc.env, got, ok, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("%s: no SETTINGS in 5 s", proto)
			}
		}
	}
}

// grpcCall sends one unary call on an HTTP/2 client connection and returns
// the HTTP status and grpc-status.
func grpcCall(client *http.Client, addr, path, ctype string, body []byte) (int, string, error) {
	req, _ := http.NewRequest("POST", "http://"+addr+path, bytes.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("TE", "trailers")
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	st := resp.Trailer.Get("Grpc-Status")
	if st == "" {
		st = resp.Header.Get("Grpc-Status") // trailers-only response
	}
	return resp.StatusCode, st, nil
}

func h2cClient() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http2.Transport{
		AllowHTTP: true,
		DialTLS: func(network, addr string, _ *tls.Config) (net.Conn, error) {
			return net.DialTimeout(network, addr, 5*time.Second)
		},
	}}
}

// grpcFrame frames a message as gRPC does: flag byte, 4-byte length, bytes.
func grpcFrame(msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

func TestGRPCFraming(t *testing.T) {
	s := startServer(t)
	client := h2cClient()
	echo := grpcFrame([]byte{0x0a, 0x02, 'h', 'i'})
	for _, ctype := range []string{"text/plain", "application/grpcx"} {
		code, _, err := grpcCall(client, s.addr["grpc"], "/protobench.v1.Bench/Echo", ctype, echo)
		if err != nil || code != http.StatusUnsupportedMediaType {
			t.Errorf("content-type %q: HTTP %d %v, want 415", ctype, code, err)
		}
	}
	for _, ctype := range []string{"application/grpc", "application/grpc+proto"} {
		if code, st, err := grpcCall(client, s.addr["grpc"], "/protobench.v1.Bench/Echo", ctype, echo); err != nil || code != 200 || st != "0" {
			t.Errorf("content-type %q: HTTP %d grpc-status %q %v, want 200 and 0", ctype, code, st, err)
		}
	}
	// Two messages on a unary call: INTERNAL (13) from grpc-go, never OK;
	// also when one of them is undecodable.
	garbage := grpcFrame([]byte{0x0a, 0xff})
	for name, body := range map[string][]byte{
		"good then undecodable":     append(append([]byte{}, echo...), garbage...),
		"undecodable then good one": append(append([]byte{}, garbage...), echo...),
	} {
		code, st, err := grpcCall(client, s.addr["grpc"], "/protobench.v1.Bench/Echo", "application/grpc", body)
		if err != nil || st == "" || st == "0" {
			t.Errorf("%s: HTTP %d grpc-status %q %v, want a non-OK status", name, code, st, err)
		}
	}
}

// writeCert writes a throw-away self-signed certificate for 127.0.0.1.
func writeCert(t *testing.T) (certFile, keyFile string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certFile, keyFile
}
