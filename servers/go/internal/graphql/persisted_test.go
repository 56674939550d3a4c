package graphql

// The graphql-get listener (persisted queries over GET, Apollo's APQ form)
// on real net/http servers on 127.0.0.1, the graphql and graphql-get
// handlers of one Server as cmd/server wires them, called with net/http's
// client.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"protobench.dev/servers/go/internal/core"
)

const contractDir = "../../../../contract"

const notFoundBody = `{"errors":[{"message":"PersistedQueryNotFound","extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}]}`

// servers starts the graphql (POST) and graphql-get listeners of one Server
// and returns their /graphql URLs.
func servers(t *testing.T, maxRequestBytes int64) (postURL, getURL string) {
	t.Helper()
	c, err := core.New(&core.Config{
		DatasetPath:     contractDir + "/data/dataset.json",
		MaxRequestBytes: maxRequestBytes,
		FailureSeed:     1,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := New(c)
	post := httptest.NewServer(s.Handler(false))
	t.Cleanup(post.Close)
	get := httptest.NewServer(s.Handler(true))
	t.Cleanup(get.Close)
	return post.URL + Path, get.URL + Path
}

type reply struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, method, u, body string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, strings.TrimSuffix(string(b), "\n")}
}

func hashOf(doc string) string {
	sum := sha256.Sum256([]byte(doc))
	return hex.EncodeToString(sum[:])
}

func apqExt(hash string) string {
	return `{"persistedQuery":{"version":1,"sha256Hash":"` + hash + `"}}`
}

// getURL builds base?operationName&variables&extensions (url.Values: `+`
// for a space, sorted names), query too when not "".
func getURL(base, query, opName, variables, extensions string) string {
	v := url.Values{}
	for k, s := range map[string]string{"query": query, "operationName": opName, "variables": variables, "extensions": extensions} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return base + "?" + v.Encode()
}

// registerBody is a POST body with the document and its APQ extension.
func registerBody(query, opName string, variables json.RawMessage, hash string) string {
	b, _ := json.Marshal(map[string]any{
		"query": query, "operationName": opName, "variables": variables,
		"extensions": json.RawMessage(apqExt(hash)),
	})
	return string(b)
}

// sameJSON compares two JSON texts as values, numbers as float64 (the
// vectors write 5508.0 where encoding/json writes 5508).
func sameJSON(t *testing.T, got, want string) bool {
	t.Helper()
	decode := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return fmt.Sprintf("not JSON (%v): %.200s", err, s)
		}
		return v
	}
	return reflect.DeepEqual(decode(got), decode(want))
}

type workload struct {
	name, request, response string
}

// queryWorkloads are the contract's GraphQL vectors whose document is a
// query: the REST GET operations and every contract/graphql workload.
func queryWorkloads(t *testing.T) []workload {
	t.Helper()
	var ws []workload
	rest, _ := filepath.Glob(contractDir + "/vectors/*/request.graphql.json")
	for _, p := range rest {
		ws = append(ws, workload{filepath.Base(filepath.Dir(p)), p, filepath.Join(filepath.Dir(p), "response.graphql.json")})
	}
	gq, _ := filepath.Glob(contractDir + "/graphql/vectors/*/request.json")
	for _, p := range gq {
		ws = append(ws, workload{filepath.Base(filepath.Dir(p)), p, filepath.Join(filepath.Dir(p), "response.json")})
	}
	queries := ws[:0]
	for _, w := range ws {
		var req struct{ Query string }
		b, err := os.ReadFile(w.request)
		if err != nil || json.Unmarshal(b, &req) != nil {
			t.Fatalf("%s: %v", w.request, err)
		}
		if strings.HasPrefix(req.Query, "query") {
			queries = append(queries, w)
		}
	}
	// 9 REST GET operations and 5 GraphQL workloads today.
	if len(queries) < 14 {
		t.Fatalf("found %d query workloads, want at least 14", len(queries))
	}
	return queries
}

// TestPersistedVectors runs the APQ exchange of every query workload on the
// graphql-get listener.
func TestPersistedVectors(t *testing.T) {
	for _, w := range queryWorkloads(t) {
		t.Run(w.name, func(t *testing.T) {
			// Its own store: tasks.file-* share their document.
			postURL, getURLBase := servers(t, core.DefaultMaxRequestBytes)
			raw, _ := os.ReadFile(w.request)
			wantBytes, err := os.ReadFile(w.response)
			if err != nil {
				t.Fatal(err)
			}
			want := string(wantBytes)
			var req struct {
				Query         string          `json:"query"`
				OperationName string          `json:"operationName"`
				Variables     json.RawMessage `json:"variables"`
			}
			if err := json.Unmarshal(raw, &req); err != nil {
				t.Fatal(err)
			}
			hash := hashOf(req.Query)
			hashOnly := getURL(getURLBase, "", req.OperationName, string(req.Variables), apqExt(hash))

			if r := do(t, "GET", hashOnly, ""); r.status != 200 || r.body != notFoundBody {
				t.Fatalf("GET before registering: %d %.300s, want 200 %s", r.status, r.body, notFoundBody)
			}
			if r := do(t, "POST", getURLBase, registerBody(req.Query, req.OperationName, req.Variables, hash)); r.status != 200 || !sameJSON(t, r.body, want) {
				t.Fatalf("POST registration: %d %.300s, want the response vector", r.status, r.body)
			}
			got := do(t, "GET", hashOnly, "")
			if got.status != 200 || got.header.Get("Content-Type") != "application/json" || !sameJSON(t, got.body, want) {
				t.Fatalf("GET after registering: %d %q %.300s, want the response vector", got.status, got.header.Get("Content-Type"), got.body)
			}
			// Byte for byte what POST /graphql answers for the document.
			if plain := do(t, "POST", postURL, string(raw)); plain.status != 200 || plain.body != got.body {
				t.Errorf("GET answer differs from POST /graphql's: %d %.200s", plain.status, plain.body)
			}
			// %20 for spaces, the parameters in another order, no variables
			// where the operation has none.
			u := getURLBase + "?extensions=" + url.PathEscape(apqExt(hash)) + "&operationName=" + req.OperationName
			if string(req.Variables) != "{}" {
				u += "&variables=" + url.PathEscape(string(req.Variables))
			}
			if r := do(t, "GET", u, ""); r.status != 200 || r.body != got.body {
				t.Errorf("GET %s: %d %.200s", u, r.status, r.body)
			}
			// A query sent with the hash of another document.
			wrong := getURL(getURLBase, req.Query, req.OperationName, string(req.Variables), apqExt(hashOf(req.Query+" ")))
			if r := do(t, "GET", wrong, ""); r.status != 400 || r.body != `{"errors":[{"message":"provided sha does not match query"}]}` {
				t.Errorf("GET with a wrong hash: %d %.300s", r.status, r.body)
			}
		})
	}
}

// TestPersistedErrors checks the refusals and the registration paths.
func TestPersistedErrors(t *testing.T) {
	postURL, base := servers(t, 4096)
	const echo = `mutation E($p: String!) { echo(input: {payload: $p}) { payload } }`
	const intQuery = `query I { integer { value } }`
	gqlErr := func(msg string) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.Encode(msg)
		return `{"errors":[{"message":` + strings.TrimSpace(b.String()) + `}]}`
	}

	// A mutation registered by POST runs by POST, not by GET.
	if r := do(t, "POST", base, registerBody(echo, "E", json.RawMessage(`{"p":"x"}`), hashOf(echo))); r.status != 200 || r.body != `{"data":{"echo":{"payload":"x"}}}` {
		t.Errorf("POST mutation registration: %d %s", r.status, r.body)
	}
	for _, u := range []string{
		getURL(base, "", "E", `{"p":"x"}`, apqExt(hashOf(echo))),
		getURL(base, echo, "E", `{"p":"x"}`, ""),
	} {
		r := do(t, "GET", u, "")
		if r.status != 405 || r.header.Get("Allow") != "POST" || r.body != gqlErr("a mutation is not run by GET; send it by POST") {
			t.Errorf("GET mutation %.80s: %d Allow %q %s", u, r.status, r.header.Get("Allow"), r.body)
		}
	}

	h := hashOf(intQuery)
	for _, tc := range []struct{ name, u, body string }{
		{"extensions not JSON", base + "?extensions=%7Bnope", `extensions is not JSON: invalid character 'n' looking for beginning of object key string`},
		{"extensions not an object", getURL(base, "", "", "", `[1]`), "extensions is not a JSON object"},
		{"extensions followed by data", getURL(base, "", "", "", apqExt(h)+"{}"), "extensions is not one JSON value: data follows it"},
		{"version 2", getURL(base, "", "", "", `{"persistedQuery":{"version":2,"sha256Hash":"`+h+`"}}`), "extensions.persistedQuery.version is 2; expected 1"},
		{"version absent", getURL(base, "", "", "", `{"persistedQuery":{"sha256Hash":"`+h+`"}}`), "extensions.persistedQuery.version is absent; expected 1"},
		{"version a string", getURL(base, "", "", "", `{"persistedQuery":{"version":"1","sha256Hash":"`+h+`"}}`), `extensions.persistedQuery.version is "1"; expected 1`},
		{"persistedQuery not an object", getURL(base, "", "", "", `{"persistedQuery":1}`), "extensions.persistedQuery is not a JSON object"},
		{"short hash", getURL(base, "", "", "", apqExt("abc")), `extensions.persistedQuery.sha256Hash is "abc"; expected the 64 hex digits of the document's SHA-256`},
		{"hash not hex", getURL(base, "", "", "", apqExt(strings.Repeat("g", 64))), `extensions.persistedQuery.sha256Hash is "` + strings.Repeat("g", 64) + `"; expected the 64 hex digits of the document's SHA-256`},
		{"variables not an object", getURL(base, intQuery, "", `[1]`, ""), "variables is not a JSON object"},
		{"neither hash nor query", base + "?operationName=I", "no document: give a query parameter, or extensions with persistedQuery {version: 1, sha256Hash} of a registered document"},
		{"extensions without persistedQuery", getURL(base, "", "", "", `{}`), "no document: give a query parameter, or extensions with persistedQuery {version: 1, sha256Hash} of a registered document"},
		{"twice", base + "?query=" + url.QueryEscape(intQuery) + "&query=x", "parameter query is given 2 times; expected at most once"},
		{"bad escape", base + "?query=%zz", `the query string is not percent-encoded name=value pairs: invalid URL escape "%zz"`},
	} {
		r := do(t, "GET", tc.u, "")
		if r.status != 400 || r.body != gqlErr(tc.body) {
			t.Errorf("%s: %d %s, want 400 %s", tc.name, r.status, r.body, gqlErr(tc.body))
		}
	}

	// Registration by GET with the query, then by hash with `+` and %20.
	if r := do(t, "GET", getURL(base, intQuery, "I", "", apqExt(h)), ""); r.status != 200 || r.body != `{"data":{"integer":{"value":2147483647}}}` {
		t.Errorf("GET registration: %d %s", r.status, r.body)
	}
	for _, sep := range []string{"+", "%20"} {
		u := base + "?extensions=" + strings.ReplaceAll(url.QueryEscape(apqExt(h)), "+", sep)
		if r := do(t, "GET", u, ""); r.status != 200 || r.body != `{"data":{"integer":{"value":2147483647}}}` {
			t.Errorf("GET hash-only (%s): %d %s", sep, r.status, r.body)
		}
	}
	// A plain GET (no extensions) runs the query, spaces as `+` or %20.
	for _, u := range []string{base + "?query=" + url.QueryEscape(`{ integer { value } }`), base + "?query=" + url.PathEscape(`{ integer { value } }`)} {
		if r := do(t, "GET", u, ""); r.status != 200 || r.body != `{"data":{"integer":{"value":2147483647}}}` {
			t.Errorf("plain GET %s: %d %s", u, r.status, r.body)
		}
	}

	// Registration by POST on the graphql listener is known on graphql-get;
	// an unknown hash by POST on either is PersistedQueryNotFound, a wrong
	// one 400.
	const objQuery = `query P { objects { people { id } } }`
	if r := do(t, "POST", postURL, registerBody(objQuery, "P", nil, hashOf(objQuery))); r.status != 200 || !strings.HasPrefix(r.body, `{"data":{"objects":{"people":[{"id":`) {
		t.Errorf("POST registration on graphql: %d %.200s", r.status, r.body)
	}
	if r := do(t, "GET", getURL(base, "", "P", "", apqExt(hashOf(objQuery))), ""); r.status != 200 || !strings.HasPrefix(r.body, `{"data":{"objects":{"people":[{"id":`) {
		t.Errorf("GET of a document registered on graphql: %d %.200s", r.status, r.body)
	}
	unknown := hashOf("query X { integer { value } }")
	for _, u := range []string{postURL, base} {
		if r := do(t, "POST", u, `{"extensions":`+apqExt(unknown)+`}`); r.status != 200 || r.body != notFoundBody {
			t.Errorf("POST %s unknown hash: %d %s", u, r.status, r.body)
		}
		if r := do(t, "POST", u, registerBody(intQuery, "I", nil, unknown)); r.status != 400 || r.body != gqlErr("provided sha does not match query") {
			t.Errorf("POST %s wrong hash: %d %s", u, r.status, r.body)
		}
		if r := do(t, "POST", u, `{"extensions":{"persistedQuery":{"version":2,"sha256Hash":"`+h+`"}}}`); r.status != 400 || r.body != gqlErr("extensions.persistedQuery.version is 2; expected 1") {
			t.Errorf("POST %s version 2: %d %s", u, r.status, r.body)
		}
	}

	// The request-size limit holds for the query string (4096 here).
	big := getURL(base, "{ integer { value } }"+strings.Repeat(" ", 4096), "", "", "")
	if r := do(t, "GET", big, ""); r.status != 413 || r.body != `{"code":413,"message":"query string over 4096 bytes"}` {
		t.Errorf("oversized GET: %d %s", r.status, r.body)
	}
	if r := do(t, "POST", base, registerBody(intQuery+strings.Repeat(" ", 4096), "I", nil, hashOf(intQuery+strings.Repeat(" ", 4096)))); r.status != 413 {
		t.Errorf("oversized POST registration: %d %s", r.status, r.body)
	}

	// Other methods.
	for _, m := range []string{"PUT", "HEAD", "DELETE"} {
		r := do(t, m, base, "")
		if r.status != 405 || r.header.Get("Allow") != "GET, POST" {
			t.Errorf("%s: %d Allow %q", m, r.status, r.header.Get("Allow"))
		}
	}
	if r := do(t, "GET", postURL+"?query="+url.QueryEscape(intQuery), ""); r.status != 405 || r.header.Get("Allow") != "POST" {
		t.Errorf("GET on the graphql listener: %d Allow %q", r.status, r.header.Get("Allow"))
	}
}

// TestPersistedBound registers MaxPersisted+2 documents: the store keeps
// MaxPersisted, evicting the least recently used.
func TestPersistedBound(t *testing.T) {
	_, base := servers(t, 4096)
	doc := func(i int) string { return fmt.Sprintf("query Q%d { a%d: integer { value } }", i, i) }
	answer := func(i int) string { return fmt.Sprintf(`{"data":{"a%d":{"value":2147483647}}}`, i) }
	register := func(i int) {
		t.Helper()
		if r := do(t, "POST", base, registerBody(doc(i), "", nil, hashOf(doc(i)))); r.status != 200 || r.body != answer(i) {
			t.Fatalf("register %d: %d %s", i, r.status, r.body)
		}
	}
	lookup := func(i int) string {
		t.Helper()
		r := do(t, "GET", getURL(base, "", "", "", apqExt(hashOf(doc(i)))), "")
		if r.status != 200 {
			t.Fatalf("GET %d: %d %s", i, r.status, r.body)
		}
		return r.body
	}
	if MaxPersisted != 1000 {
		t.Fatalf("MaxPersisted = %d, the contract says 1000", MaxPersisted)
	}
	for i := range MaxPersisted {
		register(i)
	}
	// Using document 0 makes document 1 the least recently used.
	if got := lookup(0); got != answer(0) {
		t.Fatalf("document 0 before the store is full: %s", got)
	}
	register(MaxPersisted)
	if got := lookup(1); got != notFoundBody {
		t.Errorf("document 1 after %d registrations: %s, want it evicted", MaxPersisted+1, got)
	}
	kept := 0
	for _, i := range append([]int{0}, seq(2, MaxPersisted+1)...) {
		if lookup(i) == answer(i) {
			kept++
		}
	}
	if kept != MaxPersisted {
		t.Errorf("%d documents kept, want %d", kept, MaxPersisted)
	}
	// Every one was just used, in that order: the next registration evicts
	// document 0.
	register(MaxPersisted + 1)
	if got := lookup(0); got != notFoundBody {
		t.Errorf("document 0 after another registration: %s, want it evicted", got)
	}
	if got := lookup(MaxPersisted + 1); got != answer(MaxPersisted+1) {
		t.Errorf("the last document: %s", got)
	}
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}
