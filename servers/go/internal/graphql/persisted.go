package graphql

// The graphql-get listener's GET form (GraphQL over HTTP) and Apollo's
// automatic persisted queries (APQ), contract addition `graphql-get`:
//
//	GET /graphql?operationName=N&variables={...}&extensions={"persistedQuery":{"version":1,"sha256Hash":"<hex>"}}
//
// gqlgen's extension.AutomaticPersistedQuery keeps the documents (an lru
// cache of MaxPersisted) and finds one by its hash; its answers are adapted
// to the contract's: the extension is validated here first (400 naming the
// parameter, where gqlgen answers 200 "invalid APQ extension data" or
// "unsupported APQ version" and does not check the hash's form), a hash that
// does not match the document sent is 400 "provided sha does not match
// query" (gqlgen: 200 "provided APQ hash does not match query"), and an
// unknown hash is answered with the exact body of persistedQueryNotFound,
// without gqlgen's "data":null. A GET that names a mutation is 405 with
// Allow: POST (gqlgen's transport.GET answers 406). A GET with a query and
// no extensions runs it (GraphQL over HTTP).

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	gql "github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// persistedQueryNotFoundCode is the code gqlgen's extension gives an
// unknown hash.
const persistedQueryNotFoundCode = "PERSISTED_QUERY_NOT_FOUND"

// errorsBody is a GraphQL response with errors only.
type errorsBody struct {
	Errors []errorEntry `json:"errors"`
}

type errorEntry struct {
	Message    string            `json:"message"`
	Extensions map[string]string `json:"extensions,omitempty"`
}

// persistedQueryNotFound is the answer to a hash the store does not hold.
var persistedQueryNotFound = errorsBody{Errors: []errorEntry{{
	Message:    "PersistedQueryNotFound",
	Extensions: map[string]string{"code": persistedQueryNotFoundCode},
}}}

// writeGraphQLError writes {"errors":[{"message": msg}]} with status.
func writeGraphQLError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorsBody{Errors: []errorEntry{{Message: msg}}})
}

// getParams are the query-string parameters a GET may give once each.
var getParams = []string{"query", "operationName", "variables", "extensions"}

// serveGet serves GET /graphql on the graphql-get listener.
func (s *Server) serveGet(w http.ResponseWriter, r *http.Request) {
	start := gql.Now()
	if r.Method != http.MethodGet { // HEAD
		w.Header().Set("Allow", "GET, POST")
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" is not allowed on /graphql; allowed: GET, POST")
		return
	}
	// A GET carries its document in the URL: the request-size limit applies
	// to it as to a body (net/http refuses headers over 1 MB with 431 first).
	if limit := s.core.Config.MaxRequestBytes; int64(len(r.URL.RawQuery)) > limit {
		writeError(w, http.StatusRequestEntityTooLarge, "query string over "+strconv.FormatInt(limit, 10)+" bytes")
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeGraphQLError(w, http.StatusBadRequest, "the query string is not percent-encoded name=value pairs: "+err.Error())
		return
	}
	for _, name := range getParams {
		if n := len(q[name]); n > 1 {
			writeGraphQLError(w, http.StatusBadRequest, fmt.Sprintf("parameter %s is given %d times; expected at most once", name, n))
			return
		}
	}
	p := params{query: q.Get("query"), operationName: q.Get("operationName"), start: start}
	p.hasQuery = p.query != ""
	if p.variables, err = decodeObject("variables", []byte(q.Get("variables"))); err == nil {
		p.extensions, err = decodeObject("extensions", []byte(q.Get("extensions")))
	}
	if err != nil {
		writeGraphQLError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.execute(w, r, &p, true)
}

// decodeObject decodes the JSON object parameter name (numbers as
// json.Number); absent, empty or null is nil.
func decodeObject(name string, raw []byte) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s is not JSON: %v", name, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s is not one JSON value: data follows it", name)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a JSON object", name)
	}
	return m, nil
}

// persistedHash returns extensions.persistedQuery.sha256Hash, "" without a
// persistedQuery, or an error naming what is wrong with it.
func persistedHash(ext map[string]any) (string, error) {
	v, ok := ext["persistedQuery"]
	if !ok || v == nil {
		return "", nil
	}
	pq, ok := v.(map[string]any)
	if !ok {
		return "", errors.New("extensions.persistedQuery is not a JSON object")
	}
	if n, ok := pq["version"].(json.Number); !ok || n.String() != "1" {
		return "", fmt.Errorf("extensions.persistedQuery.version is %s; expected 1", jsonText(pq["version"]))
	}
	h, ok := pq["sha256Hash"].(string)
	if !ok || len(h) != sha256.Size*2 || !isHex(h) {
		return "", fmt.Errorf("extensions.persistedQuery.sha256Hash is %s; expected the 64 hex digits of the document's SHA-256", jsonText(pq["sha256Hash"]))
	}
	return h, nil
}

// jsonText is v as JSON for an error message, "absent" for nil, at most
// 80 bytes.
func jsonText(v any) string {
	if v == nil {
		return "absent"
	}
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// sha256Hex is the lowercase hex SHA-256 of doc, as gqlgen's extension
// computes it.
func sha256Hex(doc string) string {
	sum := sha256.Sum256([]byte(doc))
	return hex.EncodeToString(sum[:])
}

// isPersistedQueryNotFound reports whether errs is gqlgen's extension's
// answer to an unknown hash.
func isPersistedQueryNotFound(errs gqlerror.List) bool {
	return len(errs) == 1 && errs[0].Extensions["code"] == persistedQueryNotFoundCode
}
