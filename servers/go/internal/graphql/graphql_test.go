package graphql

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"protobench.dev/servers/go/internal/core"
	"protobench.dev/servers/go/internal/graphql/scalars"
)

// The GraphQL handler on a real net/http server on 127.0.0.1 with a
// 4096-byte body limit, called with net/http's client.

func gqlServer(t *testing.T, failureRate float64) string {
	t.Helper()
	c, err := core.New(&core.Config{
		DatasetPath:     "../../../../contract/data/dataset.json",
		MaxRequestBytes: 4096,
		FailureRate:     failureRate,
		FailureSeed:     1,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(c).Handler(false))
	t.Cleanup(srv.Close)
	return srv.URL + Path
}

func post(t *testing.T, url, contentType, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func doc(q string) string {
	b, _ := json.Marshal(map[string]string{"query": q})
	return string(b)
}

func TestAnswers(t *testing.T) {
	url := gqlServer(t, 0)
	for _, tc := range []struct{ q, want string }{
		{`{ integer { value } inventoryXs }`, `{"data":{"integer":{"value":2147483647},"inventoryXs":{}}}`},
		// Members in selection order; a float32 keeps its 32-bit digits.
		{`{ inventoryL { items { weightKg id } } }`, `{"data":{"inventoryL":{"items":[{"weightKg":402.875,"id":"48468c3e-d125-42e8-8a6a-f886efb96e46"},`},
		{`mutation { sayHello(input: {request: {l: "-9007199254740993", c2: false}}) { response { l c1 c2 pets { name } } } }`,
			`{"data":{"sayHello":{"response":{"l":"-9007199254740993","c1":null,"c2":false,"pets":[]}}}}`},
		{`mutation { modifyProduct(input: {description: "añb"}) { description tags } }`, `{"data":{"modifyProduct":{"description":"bña","tags":[]}}}`},
	} {
		code, body := post(t, url, "application/json", doc(tc.q))
		if code != 200 || !strings.HasPrefix(body, tc.want) {
			t.Errorf("%s: %d %.300s, want %s", tc.q, code, body, tc.want)
		}
	}
}

func TestErrors(t *testing.T) {
	url := gqlServer(t, 0)
	for _, tc := range []struct{ q, message, code string }{
		{`{ file(name: "nope") { name } }`, `unknown file \"nope\"`, "NOT_FOUND"},
		{`mutation { cloneText(input: {text: "a", times: 100001}) { texts } }`, "times must be in 0..=100000", "INVALID_ARGUMENT"},
		{`mutation { sayHello(input: {request: {c1: "a", c2: true}}) { response { name } } }`, "at most one of c1 and c2", "INVALID_ARGUMENT"},
		{`mutation { echo(input: {payload: "a", x: 1}) { payload } }`, `Field \"x\" is not defined`, "GRAPHQL_VALIDATION_FAILED"},
		{`{ ` + aliases(130) + ` }`, "exceeds the limit of 256", "COMPLEXITY_LIMIT_EXCEEDED"},
	} {
		code, body := post(t, url, "application/json", doc(tc.q))
		if code != 200 || !strings.Contains(body, tc.message) || !strings.Contains(body, `"code":"`+tc.code+`"`) || !strings.HasSuffix(body, `"data":null}`) {
			t.Errorf("%.60s: %d %.300s, want %q (%s) and data null", tc.q, code, body, tc.message, tc.code)
		}
	}
	for _, tc := range []struct {
		contentType, body string
		status            int
		message           string
	}{
		{"application/json", `{"query": 5}`, 400, "the body is not a GraphQL request"},
		{"application/json", `[`, 400, "the body is not a GraphQL request"},
		{"application/json", `{"variables": {}}`, 400, "the body is not a GraphQL request"},
		{"text/plain", doc(`{ integer { value } }`), 415, "expected application/json"},
		{"application/json", doc(strings.Repeat(" ", 4096) + `{ integer { value } }`), 413, "request body over 4096 bytes"},
	} {
		code, body := post(t, url, tc.contentType, tc.body)
		if code != tc.status || !strings.Contains(body, tc.message) || !strings.Contains(body, `"code":`) {
			t.Errorf("%.40s: %d %s, want %d %q", tc.body, code, body, tc.status, tc.message)
		}
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET: %d Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}

	// An injected failure: a GraphQL error with its code.
	code, body := post(t, gqlServer(t, 1), "application/json", doc(`{ integer { value } }`))
	if code != 200 || !strings.Contains(body, `"message":"injected failure"`) || !strings.Contains(body, `"code":"INJECTED_FAILURE"`) {
		t.Errorf("injected failure: %d %s", code, body)
	}
}

func aliases(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("a" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + ": integer { value } ")
	}
	return b.String()
}

func TestDepth(t *testing.T) {
	// The schema nests at most 4 deep, so a deeper document fails validation
	// first; the walk itself is checked on a parsed document.
	if d := depthOf(t, `{ sayHello { response { pets { name } } } }`); d != 4 {
		t.Errorf("depth %d, want 4", d)
	}
	if d := depthOf(t, `{ ...F } fragment F on Query { a { ... on T { b { c } } } }`); d != 3 {
		t.Errorf("depth through fragments %d, want 3", d)
	}
}

func TestFloatForm(t *testing.T) {
	// Floats as encoding/json writes them (the REST form).
	for _, v := range []any{float32(0.1), float32(402.875), float32(3e-7), 0.1, 1e21, 1e-7, 5.0, 644.7292022705078} {
		var m interface{ MarshalGQL(io.Writer) }
		if f, ok := v.(float32); ok {
			m = scalars.MarshalFloat32(f)
		} else {
			m = scalars.MarshalFloat(v.(float64))
		}
		var b strings.Builder
		m.MarshalGQL(&b)
		if want, _ := json.Marshal(v); b.String() != string(want) {
			t.Errorf("%T %v: got %s, want %s", v, v, b.String(), want)
		}
	}
	var b strings.Builder
	scalars.MarshalInt64(-1 << 63).MarshalGQL(&b)
	if b.String() != `"-9223372036854775808"` {
		t.Errorf("Int64: %s", b.String())
	}
}

// depthOf parses q (no schema) and measures it as the depth limit does.
func depthOf(t *testing.T, q string) int {
	t.Helper()
	d, err := parser.ParseQuery(&ast.Source{Input: q})
	if err != nil {
		t.Fatal(err)
	}
	var link func(ast.SelectionSet)
	link = func(set ast.SelectionSet) {
		for _, s := range set {
			switch s := s.(type) {
			case *ast.Field:
				link(s.SelectionSet)
			case *ast.InlineFragment:
				link(s.SelectionSet)
			case *ast.FragmentSpread:
				s.Definition = d.Fragments.ForName(s.Name)
			}
		}
	}
	for _, f := range d.Fragments {
		link(f.SelectionSet)
	}
	link(d.Operations[0].SelectionSet)
	return depth(d.Operations[0].SelectionSet, 0)
}
