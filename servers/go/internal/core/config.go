// Package core holds what every protocol shares: the configuration from the
// PROTOBENCH_* environment, the dataset and files loaded at start-up, the
// operations' validation, the injected service time and the failure draw.
package core

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultMaxRequestBytes is the contract's default request size limit.
const DefaultMaxRequestBytes = 8 << 20

// Protocol names as they appear in the listening lines.
const (
	ProtoREST   = "rest"
	ProtoRESTH2 = "rest-h2"
	ProtoGRPC   = "grpc"
	ProtoSOAP   = "soap"
	// Where the stack serves them (contract/README.md).
	ProtoGraphQL     = "graphql"
	ProtoGraphQLGet  = "graphql-get" // the graphql handler, with GET (persisted queries)
	ProtoConnect     = "connect"
	ProtoConnectJSON = "connect-json"
	ProtoGRPCWeb     = "grpc-web"
)

// Protocols lists every protocol this server can serve, in the order of its
// listening lines.
var Protocols = []string{ProtoREST, ProtoRESTH2, ProtoGRPC, ProtoSOAP, ProtoGraphQL, ProtoGraphQLGet, ProtoConnect, ProtoConnectJSON, ProtoGRPCWeb}

// Config is the server's whole configuration, read only from the environment.
type Config struct {
	Addrs           map[string]string // protocol -> host:port; absent = not served
	Workers         int               // 0 = leave GOMAXPROCS at the runtime default
	TLSCert         string
	TLSKey          string
	FailureRate     float64
	FailureSeed     uint64
	ServiceKind     string // "", "sleep" or "spin"
	ServiceTime     time.Duration
	MaxRequestBytes int64
	DatasetPath     string
	WSDLPath        string
	// IdleTimeout closes a connection with no request in progress (before
	// its first request, between keep-alive requests, an HTTP/2 connection
	// with no open stream).
	IdleTimeout time.Duration
	// ReadTimeout abandons an HTTP request whose headers and body have not
	// all arrived in time.
	ReadTimeout time.Duration
	// MaxStreams is HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS.
	MaxStreams uint32
}

// Defaults of the limits in contract/README.md.
const (
	DefaultIdleTimeout = 60 * time.Second
	DefaultReadTimeout = 30 * time.Second
	DefaultMaxStreams  = 1000
)

// TLS reports whether every listener uses TLS.
func (c *Config) TLS() bool { return c.TLSCert != "" && c.TLSKey != "" }

// FromEnv reads the PROTOBENCH_* variables of contract/README.md.
func FromEnv() (*Config, error) {
	c := &Config{
		Addrs:           map[string]string{},
		FailureSeed:     1,
		MaxRequestBytes: DefaultMaxRequestBytes,
		IdleTimeout:     DefaultIdleTimeout,
		ReadTimeout:     DefaultReadTimeout,
		MaxStreams:      DefaultMaxStreams,
	}
	for proto, name := range map[string]string{
		ProtoREST:        "PROTOBENCH_REST_ADDR",
		ProtoRESTH2:      "PROTOBENCH_REST_H2_ADDR",
		ProtoGRPC:        "PROTOBENCH_GRPC_ADDR",
		ProtoSOAP:        "PROTOBENCH_SOAP_ADDR",
		ProtoGraphQL:     "PROTOBENCH_GRAPHQL_ADDR",
		ProtoGraphQLGet:  "PROTOBENCH_GRAPHQL_GET_ADDR",
		ProtoConnect:     "PROTOBENCH_CONNECT_ADDR",
		ProtoConnectJSON: "PROTOBENCH_CONNECT_JSON_ADDR",
		ProtoGRPCWeb:     "PROTOBENCH_GRPC_WEB_ADDR",
	} {
		if v := os.Getenv(name); v != "" {
			c.Addrs[proto] = v
		}
	}
	if v := os.Getenv("PROTOBENCH_WORKERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("PROTOBENCH_WORKERS=%q: want a positive integer", v)
		}
		c.Workers = n
	}
	c.TLSCert = os.Getenv("PROTOBENCH_TLS_CERT")
	c.TLSKey = os.Getenv("PROTOBENCH_TLS_KEY")
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return nil, errors.New("PROTOBENCH_TLS_CERT and PROTOBENCH_TLS_KEY must be set together")
	}
	if v := os.Getenv("PROTOBENCH_FAILURE_RATE"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r < 0 || r > 1 {
			return nil, fmt.Errorf("PROTOBENCH_FAILURE_RATE=%q: want a number in 0..1", v)
		}
		c.FailureRate = r
	}
	if v := os.Getenv("PROTOBENCH_FAILURE_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("PROTOBENCH_FAILURE_SEED=%q: want an unsigned 64-bit integer", v)
		}
		c.FailureSeed = s
	}
	if v := os.Getenv("PROTOBENCH_SERVICE_TIME"); v != "" {
		kind, d, err := parseServiceTime(v)
		if err != nil {
			return nil, fmt.Errorf("PROTOBENCH_SERVICE_TIME=%q: %v", v, err)
		}
		c.ServiceKind, c.ServiceTime = kind, d
	}
	if v := os.Getenv("PROTOBENCH_MAX_REQUEST_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("PROTOBENCH_MAX_REQUEST_BYTES=%q: want a positive integer", v)
		}
		c.MaxRequestBytes = n
	}
	for _, t := range []struct {
		name string
		dst  *time.Duration
	}{
		{"PROTOBENCH_IDLE_TIMEOUT", &c.IdleTimeout},
		{"PROTOBENCH_READ_TIMEOUT", &c.ReadTimeout},
	} {
		if v := os.Getenv(t.name); v != "" {
			d, err := parseDuration(v)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("%s=%q: want a positive integer followed by ns, us, ms or s (e.g. 60s)", t.name, v)
			}
			*t.dst = d
		}
	}
	if v := os.Getenv("PROTOBENCH_MAX_STREAMS"); v != "" {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("PROTOBENCH_MAX_STREAMS=%q: want an integer in 1..4294967295", v)
		}
		c.MaxStreams = uint32(n)
	}
	var err error
	if c.DatasetPath, err = contractFile("PROTOBENCH_DATASET", "data/dataset.json"); err != nil {
		return nil, err
	}
	if _, ok := c.Addrs[ProtoSOAP]; ok {
		if c.WSDLPath, err = contractFile("PROTOBENCH_WSDL", "wsdl/protobench.wsdl"); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// parseServiceTime parses `sleep:<duration>` or `spin:<duration>` with the
// units ns, us, ms and s.
func parseServiceTime(v string) (string, time.Duration, error) {
	kind, dur, ok := strings.Cut(v, ":")
	if !ok || (kind != "sleep" && kind != "spin") {
		return "", 0, errors.New("want sleep:<duration> or spin:<duration>")
	}
	num := strings.TrimRight(dur, "nusm")
	unit := dur[len(num):]
	switch unit {
	case "ns", "us", "ms", "s":
	default:
		return "", 0, errors.New("duration unit must be ns, us, ms or s")
	}
	d, err := time.ParseDuration(dur)
	if err != nil || d < 0 {
		return "", 0, errors.New("invalid duration")
	}
	return kind, d, nil
}

// parseDuration parses the contract's duration syntax: an integer followed
// by ns, us, ms or s.
func parseDuration(v string) (time.Duration, error) {
	num := strings.TrimRight(v, "nusm")
	unit := v[len(num):]
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || strings.Trim(num, "0123456789") != "" {
		return 0, errors.New("want an integer followed by ns, us, ms or s")
	}
	scale := map[string]time.Duration{"ns": time.Nanosecond, "us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[unit]
	if scale == 0 || n > int64(1<<63-1)/int64(scale) {
		return 0, errors.New("want an integer followed by ns, us, ms or s")
	}
	return time.Duration(n) * scale, nil
}

// contractFile returns the path in env, else finds contract/<rel> in the
// repository by walking up from the working directory and from the
// executable's directory.
func contractFile(env, rel string) (string, error) {
	if v := os.Getenv(env); v != "" {
		return v, nil
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, dir := range starts {
		for {
			p := filepath.Join(dir, "contract", rel)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", fmt.Errorf("contract/%s not found above the working directory; set %s", rel, env)
}
