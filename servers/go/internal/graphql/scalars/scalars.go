// Package scalars marshals the GraphQL schema's scalars for gqlgen: Int64
// (a decimal string), Bytes (standard base64), Empty (always {}) and Float
// written as encoding/json writes float64 and float32 (the REST form, so
// that a float32 such as weightKg keeps its shortest 32-bit digits).
package scalars

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/99designs/gqlgen/graphql"

	"protobench.dev/servers/go/internal/model"
)

// MarshalInt64 writes a 64-bit integer as a decimal string.
func MarshalInt64(i int64) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		w.Write(strconv.AppendQuote(nil, strconv.FormatInt(i, 10)))
	})
}

// UnmarshalInt64 reads a decimal string (or a number, as proto3's JSON form
// accepts one).
func UnmarshalInt64(v any) (int64, error) {
	switch v := v.(type) {
	case string:
		if i, err := strconv.ParseInt(v, 10, 64); err == nil {
			return i, nil
		}
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, nil
		}
	case int64:
		return v, nil
	case int:
		return int64(v), nil
	}
	return 0, fmt.Errorf("expected a 64-bit integer as a decimal string, found %v", v)
}

// MarshalBytes writes bytes as standard base64 with padding.
func MarshalBytes(b []byte) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		out := make([]byte, 0, base64.StdEncoding.EncodedLen(len(b))+2)
		out = append(out, '"')
		out = base64.StdEncoding.AppendEncode(out, b)
		w.Write(append(out, '"'))
	})
}

// UnmarshalBytes reads standard base64.
func UnmarshalBytes(v any) ([]byte, error) {
	if s, ok := v.(string); ok {
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("expected base64 bytes, found %v", v)
}

// MarshalEmpty writes the empty message: {}.
func MarshalEmpty(model.Empty) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) { io.WriteString(w, "{}") })
}

// UnmarshalEmpty accepts only {}.
func UnmarshalEmpty(v any) (model.Empty, error) {
	if m, ok := v.(map[string]any); ok && len(m) == 0 {
		return model.Empty{}, nil
	}
	return model.Empty{}, fmt.Errorf("expected {}, found %v", v)
}

// MarshalFloat writes a float64 as encoding/json does.
func MarshalFloat(f float64) graphql.Marshaler { return floatWriter(f, 64) }

// MarshalFloat32 writes a float32 as encoding/json does (its shortest
// 32-bit form).
func MarshalFloat32(f float32) graphql.Marshaler { return floatWriter(float64(f), 32) }

// UnmarshalFloat reads a number.
func UnmarshalFloat(v any) (float64, error) { return graphql.UnmarshalFloat(v) }

// UnmarshalFloat32 reads a number into a float32.
func UnmarshalFloat32(v any) (float32, error) {
	f, err := graphql.UnmarshalFloat(v)
	return float32(f), err
}

func floatWriter(f float64, bits int) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		if math.IsInf(f, 0) || math.IsNaN(f) {
			io.WriteString(w, "null")
			return
		}
		// encoding/json's format: 'f' unless the exponent is far out.
		format := byte('f')
		if abs := math.Abs(f); abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
			format = 'e'
		}
		b := strconv.AppendFloat(nil, f, format, -1, bits)
		if format == 'e' {
			// Clean up e-09 to e-9, as encoding/json does.
			if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
				b[n-2] = b[n-1]
				b = b[:n-1]
			}
		}
		w.Write(b)
	})
}
