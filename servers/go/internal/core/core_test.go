package core

import (
	"testing"
	"time"
)

func TestSplitmix64(t *testing.T) {
	// The first outputs of the reference SplitMix64 generator seeded with 0
	// are splitmix64(0), splitmix64(0x9E3779B97F4A7C15), ...
	want := []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f}
	x := uint64(0)
	for i, w := range want {
		if got := Splitmix64(x); got != w {
			t.Errorf("output %d: got %#x, want %#x", i, got, w)
		}
		x += 0x9E3779B97F4A7C15
	}
}

func TestFailureRate(t *testing.T) {
	n := 0
	for k := uint64(0); k < 100000; k++ {
		if Fails(42, k, 0.2) {
			n++
		}
	}
	if n < 19500 || n > 20500 {
		t.Errorf("%d failures in 100000 at 0.2", n)
	}
	if Fails(1, 0, 0) || !Fails(1, 0, 1) {
		t.Error("rate 0 must never fail and rate 1 always")
	}
}

func TestReverse(t *testing.T) {
	for in, want := range map[string]string{"": "", "abc": "cba", "añ😀b": "b😀ña", "Ærøskøbing": "gnibøksørÆ"} {
		if got := Reverse(in); got != want {
			t.Errorf("Reverse(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseServiceTime(t *testing.T) {
	for in, want := range map[string]time.Duration{"sleep:50ms": 50 * time.Millisecond, "spin:10us": 10 * time.Microsecond, "sleep:1s": time.Second, "spin:1.5ms": 1500 * time.Microsecond, "sleep:200ns": 200} {
		if _, got, err := parseServiceTime(in); err != nil || got != want {
			t.Errorf("%s: got %v %v", in, got, err)
		}
	}
	for _, in := range []string{"sleep", "nap:1ms", "sleep:1m", "sleep:1h", "sleep:-1ms", "sleep:ms", "sleep:5"} {
		if _, _, err := parseServiceTime(in); err == nil {
			t.Errorf("%s accepted", in)
		}
	}
}

func TestFiles(t *testing.T) {
	f := MakeFile(455000)
	if len(f) != 455000 || f[0] != 7 || f[1] != 138 || f[2] != (2*131+7)%251 {
		t.Errorf("file bytes wrong: %v", f[:3])
	}
}

func TestValidateClone(t *testing.T) {
	if ValidateClone("x", 0) != nil || ValidateClone("x", 100000) != nil {
		t.Error("valid clone refused")
	}
	if ValidateClone("x", -1) == nil || ValidateClone("x", 100001) == nil || ValidateClone(string(make([]byte, 1000)), 100000) == nil {
		t.Error("invalid clone accepted")
	}
}
