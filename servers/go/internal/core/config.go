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
)

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
}

// TLS reports whether every listener uses TLS.
func (c *Config) TLS() bool { return c.TLSCert != "" && c.TLSKey != "" }

// FromEnv reads the PROTOBENCH_* variables of contract/README.md.
func FromEnv() (*Config, error) {
	c := &Config{
		Addrs:           map[string]string{},
		FailureSeed:     1,
		MaxRequestBytes: DefaultMaxRequestBytes,
	}
	for proto, name := range map[string]string{
		ProtoREST:   "PROTOBENCH_REST_ADDR",
		ProtoRESTH2: "PROTOBENCH_REST_H2_ADDR",
		ProtoGRPC:   "PROTOBENCH_GRPC_ADDR",
		ProtoSOAP:   "PROTOBENCH_SOAP_ADDR",
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
