package rest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"protobench.dev/servers/go/internal/core"
)

// Error bodies say what was wrong with the JSON, never which Go type or
// function found it.
func TestErrorsNameTheProblem(t *testing.T) {
	c := &core.Core{Config: &core.Config{MaxRequestBytes: 1 << 20}, Files: map[string][]byte{}, RawDataset: []byte("{}")}
	h, err := Handler(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/echo", `{"payload":5}`, `member "payload": unexpected JSON number`},
		{"/v1/echo", `{"nope":1}`, `unknown member "nope"`},
		{"/v1/echo", `{"payload":"a"`, `malformed JSON: unexpected end of input`},
		{"/v1/echo", `{"payload" "a"}`, `malformed JSON: invalid character '"' after object key`},
		{"/v1/echo", `[1]`, `the request must be a JSON object, not a JSON array`},
		{"/v1/echo", `{"payload":"a"} x`, `malformed JSON: invalid character 'x' looking for beginning of value`},
		{"/v1/greeter/hello", `{"request":{"l":5}}`, `invalid value: a 64-bit integer must be a JSON string holding a decimal integer`},
		{"/v1/greeter/hello", `{"request":{"b":"x"}}`, `member "request.b": unexpected JSON string`},
		{"/v1/greeter/hello", `{"request":{"n":1e50}}`, `member "request.n": unexpected JSON number 1e50`},
		{"/v1/greeter/hello", `{"request":{"pets":[{"color":"PINK"}]}}`, `invalid helloworld.Hello.Pet.Color value "PINK"`},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body))
		r.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(w, r)
		body, _ := io.ReadAll(w.Result().Body)
		var e struct{ Message string }
		if err := json.Unmarshal(body, &e); err != nil || w.Code != 400 || e.Message != tc.want {
			t.Errorf("%s: got %d %s, want 400 %q", tc.body, w.Code, body, tc.want)
		}
		for _, word := range []string{"json:", "Go ", "struct", "model.", "strconv", ".go"} {
			if strings.Contains(e.Message, word) {
				t.Errorf("%s: message %q names %q", tc.body, e.Message, word)
			}
		}
	}
}
