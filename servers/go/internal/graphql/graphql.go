// Package graphql is the GraphQL front end (contract/graphql/schema.graphql)
// with gqlgen: POST /graphql, a JSON body {"query", "operationName",
// "variables"}. gqlgen generates the executor (internal/graphql/exec, at
// build time from gqlgen.yml) bound to the model structs REST and SOAP use;
// the resolvers below call the same operations (internal/core), so every
// root field is one call of the contract: validated, then the injected
// service time and the failure draw.
//
// Untrusted input: the body is read under PROTOBENCH_MAX_REQUEST_BYTES (413)
// and the read timeout (408), a body that is not JSON or not a GraphQL
// request is 400 with the contract's JSON error, other content types 415,
// other methods 405, other paths 404; a document deeper than MaxDepth or
// over MaxComplexity (aliases repeating a large root field) is refused with
// a GraphQL error before it runs.
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

	gql "github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/99designs/gqlgen/graphql/handler/extension"
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

// Path is where GraphQL is served.
const Path = "/graphql"

// Handler returns the handler of the graphql listener.
func Handler(c *core.Core) http.Handler {
	ex := executor.New(exec.NewExecutableSchema(exec.Config{Resolvers: &resolver{c}}))
	// Introspection is on: stock clients (gql) read the schema from it.
	ex.Use(extension.Introspection{})
	ex.Use(extension.FixedComplexityLimit(MaxComplexity))
	ex.Use(depthLimit{})
	ex.SetErrorPresenter(presentError)
	h := &handler{core: c, ex: ex}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+Path, h.serve)
	mux.HandleFunc(Path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" is not allowed on /graphql; allowed: POST")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no operation at "+r.Method+" "+r.URL.Path+"; GraphQL is served at POST /graphql")
	})
	return mux
}

type handler struct {
	core *core.Core
	ex   *executor.Executor
}

// request is a GraphQL-over-HTTP request body.
type request struct {
	Query         *string        `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
	Extensions    map[string]any `json:"extensions"`
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request) {
	start := gql.Now()
	limit := h.core.Config.MaxRequestBytes
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
	var req request
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil || req.Query == nil || dec.More() {
		writeError(w, http.StatusBadRequest, `the body is not a GraphQL request ({"query", "operationName", "variables"})`)
		return
	}
	params := &gql.RawParams{
		Query:         *req.Query,
		OperationName: req.OperationName,
		Variables:     req.Variables,
		Extensions:    req.Extensions,
		ReadTime:      gql.TraceTiming{Start: start, End: gql.Now()},
	}
	ctx := gql.StartOperationTrace(r.Context())
	var resp *gql.Response
	if rc, errs := h.ex.CreateOperationContext(ctx, params); errs != nil {
		resp = h.ex.DispatchError(gql.WithOperationContext(ctx, rc), errs)
	} else {
		responses, ctx := h.ex.DispatchOperation(ctx, rc)
		resp = responses(ctx)
	}
	writeJSON(w, http.StatusOK, resp)
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
