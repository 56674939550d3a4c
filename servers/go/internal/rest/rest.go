// Package rest is the REST front end: net/http's ServeMux (method patterns)
// and encoding/json with the model structs. The same handler serves HTTP/1.1
// (rest) and HTTP/2 (rest-h2).
package rest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"

	"protobench.dev/servers/go/internal/core"
	pb "protobench.dev/servers/go/internal/gen/protobenchv1"
	"protobench.dev/servers/go/internal/jsonhttp"
	"protobench.dev/servers/go/internal/model"
	"protobench.dev/servers/go/internal/pbdata"
)

type server struct {
	core    *core.Core
	limit   int64
	pbItems []*pb.Item // the dataset's items as protobuf, for WebSocket binary frames
	// ws counts the WebSocket streams open (net/http's Shutdown does not
	// wait for hijacked connections).
	ws sync.WaitGroup
}

// Streams is the REST handler; WaitStreams lets a shutdown wait for the
// WebSocket streams in flight.
type Streams struct {
	http.Handler
	s *server
}

// WaitStreams waits until every WebSocket stream has ended or ctx ends.
// Call it once the http.Server's Shutdown has returned (no upgrade is then
// still to come).
func (h *Streams) WaitStreams(ctx context.Context) {
	done := make(chan struct{})
	go func() { h.s.ws.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Handler returns the REST handler for every operation of the contract.
func Handler(c *core.Core) (*Streams, error) {
	items, err := pbdata.Items(c.RawDataset)
	if err != nil {
		return nil, err
	}
	s := &server{core: c, limit: c.Config.MaxRequestBytes, pbItems: items.Items}
	mux := http.NewServeMux()
	route := func(method, path string, h http.HandlerFunc) {
		mux.HandleFunc(method+" "+path, h)
		// The same path without a method: every other method gets 405.
		allow := method
		if method == http.MethodGet {
			allow = "GET, HEAD"
		}
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed; allowed: "+allow)
		})
	}
	route("GET", "/v1/inventory/xs", get(s, c.GetInventoryXs))
	route("GET", "/v1/inventory/s", get(s, c.GetInventoryS))
	route("GET", "/v1/inventory/m", get(s, c.GetInventoryM))
	route("GET", "/v1/inventory/l", get(s, c.GetInventoryL))
	route("POST", "/v1/products/echo", post(s, c.EchoProduct))
	route("POST", "/v1/products/modify", post(s, c.ModifyProduct))
	route("POST", "/v1/tasks/clone", post(s, c.CloneText))
	route("GET", "/v1/tasks/integer", get(s, c.GetInteger))
	route("GET", "/v1/tasks/integers", get(s, c.GetIntegers))
	route("GET", "/v1/tasks/objects", get(s, c.GetObjects))
	route("GET", "/v1/tasks/files/{name}", s.getFile)
	route("POST", "/v1/echo", post(s, c.Echo))
	route("POST", "/v1/greeter/hello", post(s, c.SayHello))
	route("GET", "/v1/stream/ws/echo", s.wsHandler(s.wsEcho))
	route("GET", "/v1/stream/ws/subscribe", s.wsHandler(s.wsSubscribe))
	route("GET", "/v1/stream/ws/upload", s.wsHandler(s.wsUpload))
	route("GET", "/v1/stream/sse", s.sse)
	route("GET", "/v1/stream/poll", s.poll)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such path: "+r.URL.Path)
	})
	return &Streams{Handler: mux, s: s}, nil
}

type op[Req, Resp any] func(context.Context, *Req) (*Resp, error)

// get serves an operation whose request is Empty: there is no body.
func get[Resp any](s *server, fn op[model.Empty, Resp]) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		resp, err := fn(r.Context(), &model.Empty{})
		s.respond(w, resp, err)
	}
}

// post serves an operation whose request is a JSON body.
func post[Req, Resp any](s *server, fn op[Req, Resp]) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req := new(Req)
		if status, msg := s.decode(w, r, req); status != 0 {
			writeError(w, status, msg)
			return
		}
		resp, err := fn(r.Context(), req)
		s.respond(w, resp, err)
	}
}

func (s *server) getFile(w http.ResponseWriter, r *http.Request) {
	resp, err := s.core.GetFile(r.Context(), &model.FileRequest{Name: r.PathValue("name")})
	s.respond(w, resp, err)
}

// decode reads a JSON request body into v, returning a non-zero HTTP status
// and a message when the request must be refused.
func (s *server) decode(w http.ResponseWriter, r *http.Request, v any) (int, string) {
	if r.ContentLength > s.limit {
		return http.StatusRequestEntityTooLarge, "request body over " + strconv.FormatInt(s.limit, 10) + " bytes"
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return http.StatusUnsupportedMediaType, "Content-Type must be application/json"
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.limit))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		// Only whitespace may follow the value.
		if _, err = dec.Token(); err == io.EOF {
			return 0, ""
		} else if err == nil {
			err = errors.New("unexpected data after the JSON value")
		}
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return http.StatusRequestEntityTooLarge, "request body over " + strconv.FormatInt(s.limit, 10) + " bytes"
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// PROTOBENCH_READ_TIMEOUT expired while the body was being read.
		w.Header().Set("Connection", "close")
		return http.StatusRequestTimeout, "request not received within the read timeout"
	}
	if err == io.EOF {
		return http.StatusBadRequest, "empty request body"
	}
	return http.StatusBadRequest, jsonErrorMessage(err)
}

// jsonErrorMessage says what was wrong with a request body that
// encoding/json refused, in terms of the JSON, never of Go types.
func jsonErrorMessage(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return "malformed JSON: " + syntax.Error()
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON: unexpected end of input"
	case errors.As(err, &typ):
		if typ.Field == "" {
			return "the request must be a JSON object, not a JSON " + typ.Value
		}
		return "member " + strconv.Quote(typ.Field) + ": unexpected JSON " + typ.Value
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return "unknown member " + name
	}
	if strings.Contains(msg, ",string") {
		// A `,string` field (int64) given something other than a string
		// holding a decimal integer.
		return "invalid value: a 64-bit integer must be a JSON string holding a decimal integer"
	}
	if strings.HasPrefix(msg, "invalid ") {
		// The model types' own errors (enums, base64) name the value.
		return msg
	}
	return "malformed request body"
}

func (s *server) respond(w http.ResponseWriter, resp any, err error) {
	if err != nil {
		switch core.KindOf(err) {
		case core.Invalid:
			writeError(w, http.StatusBadRequest, err.Error())
		case core.NotFound:
			writeError(w, http.StatusNotFound, err.Error())
		case core.Injected:
			writeError(w, http.StatusInternalServerError, err.Error())
		default:
			writeError(w, http.StatusInternalServerError, "internal error")
		}
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

var (
	writeError = jsonhttp.WriteError
	writeJSON  = jsonhttp.Write
)
