// Package graphql is the GraphQL front end (contract/graphql/schema.graphql)
// with gqlgen: POST /graphql, a JSON body {"query", "operationName",
// "variables", "extensions"}, on the graphql and graphql-get listeners, and
// GET /graphql with the same as query-string parameters on graphql-get
// (persisted.go: Apollo's automatic persisted queries, gqlgen's
// extension.AutomaticPersistedQuery). gqlgen generates the executor
// (internal/graphql/exec, at build time from gqlgen.yml) bound to the model
// structs REST and SOAP use; the resolvers below call the same operations
// (internal/core), so every root field is one call of the contract:
// validated, then the injected service time and the failure draw.
//
// Untrusted input: the body is read under PROTOBENCH_MAX_REQUEST_BYTES (413)
// and the read timeout (408), a body that is not JSON or not a GraphQL
// request is 400 with the contract's JSON error, other content types 415,
// other methods 405, other paths 404; a document deeper than MaxDepth or
// over MaxComplexity (aliases repeating a large root field) is refused with
// a GraphQL error before it runs. The persisted-query store holds at most
// MaxPersisted documents.
package graphql

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"time"

	gql "github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"protobench.dev/servers/go/internal/core"
	"protobench.dev/servers/go/internal/graphql/exec"
	"protobench.dev/servers/go/internal/jsonhttp"
	"protobench.dev/servers/go/internal/model"
)

// MaxDepth is the deepest selection a document may have (the contract's
// deepest is 4: sayHello { response { pets { name } } }).
const MaxDepth = 16

// MaxComplexity is the most fields a document may select, each counted
// once (gqlgen's default complexity: 1 per field plus its children).
const MaxComplexity = 256

// MaxPersisted is the most documents the persisted-query store keeps; when
// it is full, registering another evicts the least recently used (gqlgen's
// lru cache, hashicorp/golang-lru: a lookup counts as a use).
const MaxPersisted = 1000

// Path is where GraphQL is served.
const Path = "/graphql"

// Server is the GraphQL executor with its persisted-query store, shared by
// the graphql and graphql-get listeners: a document registered on one is
// known on the other.
type Server struct {
	core *core.Core
	ex   *executor.Executor
}

// New builds the executor and an empty persisted-query store.
func New(c *core.Core) *Server {
	ex := executor.New(exec.NewExecutableSchema(exec.Config{Resolvers: &resolver{c}}))
	// Introspection is on: stock clients (gql) read the schema from it.
	ex.Use(extension.Introspection{})
	ex.Use(extension.FixedComplexityLimit(MaxComplexity))
	ex.Use(depthLimit{})
	ex.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](MaxPersisted)})
	ex.SetErrorPresenter(presentError)
	return &Server{core: c, ex: ex}
}

// Handler returns the handler of the graphql listener (POST only) or, with
// get, of the graphql-get listener (GET and POST).
func (s *Server) Handler(get bool) http.Handler {
	allow := "POST"
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+Path, s.servePost)
	if get {
		allow = "GET, POST"
		// The pattern also matches HEAD, which serveGet refuses.
		mux.HandleFunc("GET "+Path, s.serveGet)
	}
	mux.HandleFunc(Path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" is not allowed on /graphql; allowed: "+allow)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no operation at "+r.Method+" "+r.URL.Path+"; GraphQL is served at "+allow+" /graphql")
	})
	return mux
}

// request is a GraphQL-over-HTTP request body; variables and extensions are
// decoded by decodeObject, which names them in its errors.
type request struct {
	Query         *string         `json:"query"`
	OperationName string          `json:"operationName"`
	Variables     json.RawMessage `json:"variables"`
	Extensions    json.RawMessage `json:"extensions"`
}

func (s *Server) servePost(w http.ResponseWriter, r *http.Request) {
	start := gql.Now()
	limit := s.core.Config.MaxRequestBytes
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "content type "+strconv.Quote(r.Header.Get("Content-Type"))+" is not supported; expected application/json")
		return
	}
	if r.ContentLength > limit {
		writeError(w, http.StatusRequestEntityTooLarge, "request body over "+strconv.FormatInt(limit, 10)+" bytes")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "request body over "+strconv.FormatInt(limit, 10)+" bytes")
		return
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestTimeout, "request not received within the read timeout")
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, "the request body could not be read")
		return
	}
	const notRequest = `the body is not a GraphQL request ({"query", "operationName", "variables"})`
	var req request
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil || dec.More() {
		writeError(w, http.StatusBadRequest, notRequest)
		return
	}
	p := params{operationName: req.OperationName, start: start}
	if req.Query != nil {
		p.query, p.hasQuery = *req.Query, true
	}
	if p.variables, err = decodeObject("variables", req.Variables); err == nil {
		p.extensions, err = decodeObject("extensions", req.Extensions)
	}
	if err != nil {
		writeGraphQLError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !p.hasQuery && p.extensions["persistedQuery"] == nil {
		writeError(w, http.StatusBadRequest, notRequest)
		return
	}
	s.execute(w, r, &p, false)
}

// params is one request, from a POST body or a GET query string.
type params struct {
	query         string
	hasQuery      bool // a document was sent (registration, or no APQ)
	operationName string
	variables     map[string]any
	extensions    map[string]any
	start         time.Time
}

// execute checks the persisted-query extension, then runs the document (the
// one sent, or the stored one gqlgen's APQ extension finds by its hash) and
// writes the GraphQL response. A GET may only run a query.
func (s *Server) execute(w http.ResponseWriter, r *http.Request, p *params, get bool) {
	hash, err := persistedHash(p.extensions)
	switch {
	case err != nil:
		writeGraphQLError(w, http.StatusBadRequest, err.Error())
		return
	case !p.hasQuery && hash == "":
		writeGraphQLError(w, http.StatusBadRequest, "no document: give a query parameter, or extensions with persistedQuery {version: 1, sha256Hash} of a registered document")
		return
	case p.hasQuery && hash != "" && sha256Hex(p.query) != hash:
		// gqlgen's extension would answer 200 "provided APQ hash does not
		// match query"; the contract wants this 400.
		writeGraphQLError(w, http.StatusBadRequest, "provided sha does not match query")
		return
	}
	params := &gql.RawParams{
		Query:         p.query,
		OperationName: p.operationName,
		Variables:     p.variables,
		Extensions:    p.extensions,
		ReadTime:      gql.TraceTiming{Start: p.start, End: gql.Now()},
	}
	ctx := gql.StartOperationTrace(r.Context())
	rc, errs := s.ex.CreateOperationContext(ctx, params)
	switch {
	case isPersistedQueryNotFound(errs):
		writeJSON(w, http.StatusOK, persistedQueryNotFound)
		return
	case errs != nil:
		writeJSON(w, http.StatusOK, s.ex.DispatchError(gql.WithOperationContext(ctx, rc), errs))
		return
	case get && rc.Operation.Operation != ast.Query:
		w.Header().Set("Allow", "POST")
		writeGraphQLError(w, http.StatusMethodNotAllowed, "a "+string(rc.Operation.Operation)+" is not run by GET; send it by POST")
		return
	}
	responses, ctx := s.ex.DispatchOperation(ctx, rc)
	writeJSON(w, http.StatusOK, responses(ctx))
}

// presentError gives an operation error its extensions.code
// (INVALID_ARGUMENT, NOT_FOUND, INJECTED_FAILURE).
func presentError(ctx context.Context, err error) *gqlerror.Error {
	e := gql.DefaultErrorPresenter(ctx, err)
	var ce *core.Error
	if errors.As(err, &ce) {
		code := map[core.Kind]string{core.Invalid: "INVALID_ARGUMENT", core.NotFound: "NOT_FOUND", core.Injected: "INJECTED_FAILURE"}[ce.Kind]
		if code != "" {
			e.Message = ce.Msg
			if e.Extensions == nil {
				e.Extensions = map[string]any{}
			}
			e.Extensions["code"] = code
		}
	}
	return e
}

// depthLimit refuses a document whose selections nest deeper than MaxDepth.
type depthLimit struct{}

var _ interface {
	gql.HandlerExtension
	gql.OperationContextMutator
} = depthLimit{}

func (depthLimit) ExtensionName() string               { return "DepthLimit" }
func (depthLimit) Validate(gql.ExecutableSchema) error { return nil }
func (depthLimit) MutateOperationContext(_ context.Context, rc *gql.OperationContext) *gqlerror.Error {
	if rc.Operation == nil {
		return nil
	}
	if d := depth(rc.Operation.SelectionSet, 0); d > MaxDepth {
		return gqlerror.Errorf("the document is nested more than %d levels deep", MaxDepth)
	}
	return nil
}

// depth is the deepest field nesting of set, whose fields are at level+1;
// it stops counting past MaxDepth (the validator has refused fragment cycles).
func depth(set ast.SelectionSet, level int) int {
	deepest := level
	if level > MaxDepth {
		return level
	}
	for _, s := range set {
		d := level
		switch s := s.(type) {
		case *ast.Field:
			d = depth(s.SelectionSet, level+1)
		case *ast.InlineFragment:
			d = depth(s.SelectionSet, level)
		case *ast.FragmentSpread:
			if s.Definition != nil {
				d = depth(s.Definition.SelectionSet, level)
			}
		}
		deepest = max(deepest, d)
	}
	return deepest
}

var (
	writeError = jsonhttp.WriteError
	writeJSON  = jsonhttp.Write
)

// resolver implements the generated ResolverRoot on the core operations.
type resolver struct{ c *core.Core }

func (r *resolver) Query() exec.QueryResolver       { return query{r.c} }
func (r *resolver) Mutation() exec.MutationResolver { return mutation{r.c} }

type query struct{ c *core.Core }

func (q query) InventoryXs(ctx context.Context) (*model.Empty, error) {
	return q.c.GetInventoryXs(ctx, &model.Empty{})
}
func (q query) InventoryS(ctx context.Context) (*model.InventoryStatus, error) {
	return q.c.GetInventoryS(ctx, &model.Empty{})
}
func (q query) InventoryM(ctx context.Context) (*model.DeviceList, error) {
	return q.c.GetInventoryM(ctx, &model.Empty{})
}
func (q query) InventoryL(ctx context.Context) (*model.ItemList, error) {
	return q.c.GetInventoryL(ctx, &model.Empty{})
}
func (q query) Integer(ctx context.Context) (*model.IntegerValue, error) {
	return q.c.GetInteger(ctx, &model.Empty{})
}
func (q query) Integers(ctx context.Context) (*model.IntegerList, error) {
	return q.c.GetIntegers(ctx, &model.Empty{})
}
func (q query) Objects(ctx context.Context) (*model.ObjectList, error) {
	return q.c.GetObjects(ctx, &model.Empty{})
}
func (q query) File(ctx context.Context, name string) (*model.FileContent, error) {
	return q.c.GetFile(ctx, &model.FileRequest{Name: name})
}

type mutation struct{ c *core.Core }

func (m mutation) EchoProduct(ctx context.Context, input model.Product) (*model.Product, error) {
	return m.c.EchoProduct(ctx, &input)
}
func (m mutation) ModifyProduct(ctx context.Context, input model.Product) (*model.Product, error) {
	return m.c.ModifyProduct(ctx, &input)
}
func (m mutation) CloneText(ctx context.Context, input model.CloneRequest) (*model.CloneResponse, error) {
	return m.c.CloneText(ctx, &input)
}
func (m mutation) Echo(ctx context.Context, input model.EchoMessage) (*model.EchoMessage, error) {
	return m.c.Echo(ctx, &input)
}
func (m mutation) SayHello(ctx context.Context, input model.HelloRequest) (*model.HelloReply, error) {
	return m.c.SayHello(ctx, &input)
}
