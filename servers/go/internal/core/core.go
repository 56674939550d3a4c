package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"protobench.dev/servers/go/internal/model"
)

// Kind classifies an operation error; each protocol maps it onto its own
// error form (HTTP status, gRPC code, SOAP fault).
type Kind int

const (
	Invalid  Kind = iota + 1 // bad input: 400 / INVALID_ARGUMENT / soap:Client
	NotFound                 // unknown file: 404 / NOT_FOUND / soap:Client
	Injected                 // injected failure: 500 / UNAVAILABLE / soap:Server
)

// Error is an operation error with a message that is safe to send to clients.
type Error struct {
	Kind Kind
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// ErrInjected is the injected failure.
var ErrInjected = &Error{Kind: Injected, Msg: "injected failure"}

// KindOf returns the Kind of err, or 0 if it is not an *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

func invalid(format string, args ...any) error {
	return &Error{Kind: Invalid, Msg: fmt.Sprintf(format, args...)}
}

// Dataset is contract/data/dataset.json as Go values.
type Dataset struct {
	InventoryStatus model.InventoryStatus `json:"inventoryStatus"`
	Devices         []model.Device        `json:"devices"`
	Items           []model.Item          `json:"items"`
	People          []model.Person        `json:"people"`
}

// The files of GetFile.
const (
	File455k = "file-455k"
	File3m4  = "file-3m4"
)

// Limits of CloneText.
const (
	MaxCloneTimes = 100000
	MaxCloneBytes = 64 << 20
)

// Core is the state every protocol front end shares.
type Core struct {
	Config *Config
	// RawDataset is dataset.json as read, for front ends that load it into
	// their own types (the gRPC one into protobuf messages).
	RawDataset []byte
	Data       Dataset
	Integers   []int32
	Files      map[string][]byte

	counter atomic.Uint64
}

// New loads the dataset and builds the files and the integer list.
func New(cfg *Config) (*Core, error) {
	raw, err := os.ReadFile(cfg.DatasetPath)
	if err != nil {
		return nil, fmt.Errorf("read dataset: %w", err)
	}
	c := &Core{Config: cfg, RawDataset: raw}
	if err := json.Unmarshal(raw, &c.Data); err != nil {
		return nil, fmt.Errorf("parse dataset %s: %w", cfg.DatasetPath, err)
	}
	if c.Data.InventoryStatus.RecentErrors == nil {
		c.Data.InventoryStatus.RecentErrors = []string{}
	}
	if c.Data.Devices == nil {
		c.Data.Devices = []model.Device{}
	}
	if c.Data.Items == nil {
		c.Data.Items = []model.Item{}
	}
	if c.Data.People == nil {
		c.Data.People = []model.Person{}
	}
	c.Integers = make([]int32, 10000)
	for i := range c.Integers {
		c.Integers[i] = int32(i)
	}
	c.Files = map[string][]byte{
		File455k: MakeFile(455000),
		File3m4:  MakeFile(3400000),
	}
	return c, nil
}

// MakeFile returns the contract's file of n bytes: byte i is (i*131+7) mod 251.
func MakeFile(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte((i*131 + 7) % 251)
	}
	return b
}

// Admit is called once a request has been decoded and validated: it applies
// the injected service time and then draws the injected failure, returning
// ErrInjected when this request must fail.
func (c *Core) Admit(ctx context.Context) error {
	switch c.Config.ServiceKind {
	case "sleep":
		t := time.NewTimer(c.Config.ServiceTime)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	case "spin":
		start := time.Now()
		for time.Since(start) < c.Config.ServiceTime {
		}
	}
	if c.Config.FailureRate > 0 {
		k := c.counter.Add(1) - 1
		if Fails(c.Config.FailureSeed, k, c.Config.FailureRate) {
			return ErrInjected
		}
	}
	return nil
}

// Splitmix64 is the contract's mixing function.
func Splitmix64(x uint64) uint64 {
	z := x + 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// Fails reports whether request k fails: splitmix64(seed+k) / 2^64 < rate.
func Fails(seed, k uint64, rate float64) bool {
	return float64(Splitmix64(seed+k))/18446744073709551616.0 < rate
}

// ValidateClone checks CloneText's input limits.
func ValidateClone(text string, times int32) error {
	if times < 0 || times > MaxCloneTimes {
		return invalid("times must be in 0..=%d", MaxCloneTimes)
	}
	if int64(len(text))*int64(times) > MaxCloneBytes {
		return invalid("response would exceed %d bytes of text", MaxCloneBytes)
	}
	return nil
}

// Clone returns times copies of text (Go strings are immutable, so the
// copies share text's bytes; each is encoded separately).
func Clone(text string, times int32) []string {
	out := make([]string, times)
	for i := range out {
		out[i] = text
	}
	return out
}

// File returns the named file or a NotFound error.
func (c *Core) File(name string) ([]byte, error) {
	b, ok := c.Files[name]
	if !ok {
		return nil, &Error{Kind: NotFound, Msg: fmt.Sprintf("unknown file %q", name)}
	}
	return b, nil
}

// Reverse reverses s by Unicode scalar values.
func Reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}
