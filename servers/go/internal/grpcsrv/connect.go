package grpcsrv

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"protobench.dev/servers/go/internal/core"
	pb "protobench.dev/servers/go/internal/gen/protobenchv1"
)

// Connect and gRPC-Web with connectrpc.com/connect (connect-go): the unary
// operations of protobench.v1.Bench and helloworld.Greeter at their gRPC
// paths, on the same methods as the grpc-go front end, and of
// protobench.v1.Streams the ones HTTP/1.1 carries (Subscribe, Upload, Poll). connect-go serves
// Connect (protobuf and JSON bodies), gRPC and gRPC-Web on each path; each
// listener lets through only its own protocol's content types (Flavor).
// gRPC-Web's text form (application/grpc-web-text, base64) is not served:
// connect-go implements the binary form only.

// Flavor is which protocol a listener serves.
type Flavor int

const (
	// Connect is Connect: application/proto or application/json (unary),
	// application/connect+proto or +json (streams).
	Connect Flavor = iota + 1
	// GRPCWeb is binary gRPC-Web: application/grpc-web[+proto].
	GRPCWeb
)

// ConnectHandler returns the handler of a connect, connect-json or
// grpc-web listener.
func ConnectHandler(c *core.Core, flavor Flavor) (http.Handler, error) {
	b, err := newBench(c)
	if err != nil {
		return nil, err
	}
	g := &greeter{core: c}
	opts := []connect.HandlerOption{
		connect.WithReadMaxBytes(int(min(c.Config.MaxRequestBytes, 1<<31-1))),
		connect.WithSendMaxBytes(MaxSendMsgSize),
		connect.WithCodec(protoCodec{}),
		connect.WithCodec(jsonCodec{name: "json"}),
		connect.WithCodec(jsonCodec{name: "json; charset=utf-8"}),
	}
	mux := http.NewServeMux()
	const bench = "/protobench.v1.Bench/"
	unary(mux, bench+"GetInventoryXs", b.GetInventoryXs, opts)
	unary(mux, bench+"GetInventoryS", b.GetInventoryS, opts)
	unary(mux, bench+"GetInventoryM", b.GetInventoryM, opts)
	unary(mux, bench+"GetInventoryL", b.GetInventoryL, opts)
	unary(mux, bench+"EchoProduct", b.EchoProduct, opts)
	unary(mux, bench+"ModifyProduct", b.ModifyProduct, opts)
	unary(mux, bench+"CloneText", b.CloneText, opts)
	unary(mux, bench+"GetInteger", b.GetInteger, opts)
	unary(mux, bench+"GetIntegers", b.GetIntegers, opts)
	unary(mux, bench+"GetObjects", b.GetObjects, opts)
	unary(mux, bench+"GetFile", b.GetFile, opts)
	unary(mux, bench+"Echo", b.Echo, opts)
	unary(mux, "/helloworld.Greeter/SayHello", g.SayHello, opts)
	// The streams that work over HTTP/1.1: server streaming and client
	// streaming (half duplex); EchoStream (bidirectional) needs HTTP/2.
	st := &streams{core: c, items: b.items.Items}
	unary(mux, "/protobench.v1.Streams/Poll", st.Poll, opts)
	const subscribe = "/protobench.v1.Streams/Subscribe"
	mux.Handle(subscribe, connect.NewServerStreamHandler(subscribe,
		func(ctx context.Context, r *connect.Request[pb.SubscribeRequest], out *connect.ServerStream[pb.FeedEvent]) error {
			return toConnect(st.subscribe(ctx, r.Msg, out.Send))
		}, opts...))
	const upload = "/protobench.v1.Streams/Upload"
	mux.Handle(upload, connect.NewClientStreamHandler(upload,
		func(ctx context.Context, in *connect.ClientStream[pb.StreamMessage]) (*connect.Response[pb.UploadSummary], error) {
			if err := c.Admit(ctx); err != nil {
				return nil, toConnect(toStatus(err))
			}
			sum, err := tally(func() (*pb.StreamMessage, error) {
				if in.Receive() {
					return in.Msg(), nil
				}
				if err := in.Err(); err != nil {
					return nil, err
				}
				return nil, io.EOF
			})
			if err != nil {
				return nil, toConnect(err)
			}
			return connect.NewResponse(sum), nil
		}, opts...))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		msg := "no such method: " + r.URL.Path
		if flavor == GRPCWeb {
			// A trailers-only gRPC-Web answer.
			w.Header().Set("Content-Type", "application/grpc-web+proto")
			w.Header().Set("Grpc-Status", "12")
			w.Header().Set("Grpc-Message", url.PathEscape(msg))
			w.WriteHeader(http.StatusOK)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotImplemented)
		b, _ := json.Marshal(map[string]string{"code": "unimplemented", "message": msg})
		w.Write(b)
	})
	return onlyFlavor(flavor, mux), nil
}

// unary serves fn, a grpc-go method, as a connect-go unary handler; its gRPC
// status errors become Connect errors with the same code and message.
func unary[Req, Resp any](mux *http.ServeMux, path string, fn func(context.Context, *Req) (*Resp, error), opts []connect.HandlerOption) {
	mux.Handle(path, connect.NewUnaryHandler(path, func(ctx context.Context, r *connect.Request[Req]) (*connect.Response[Resp], error) {
		resp, err := fn(ctx, r.Msg)
		if err != nil {
			return nil, toConnect(err)
		}
		return connect.NewResponse(resp), nil
	}, opts...))
}

// toConnect makes a gRPC status error a Connect error with the same code
// and message (connect-go's own errors pass as they are).
func toConnect(err error) error {
	var ce *connect.Error
	if err == nil || errors.As(err, &ce) {
		return err
	}
	st := status.Convert(err)
	return connect.NewError(connect.Code(st.Code()), errors.New(st.Message()))
}

// onlyFlavor answers 415 to a POST whose content type is not the
// listener's protocol's.
func onlyFlavor(flavor Flavor, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		ok := false
		switch flavor {
		case Connect:
			// Unary calls, then streaming calls (enveloped messages).
			ok = mt == "application/proto" || mt == "application/json" ||
				mt == "application/connect+proto" || mt == "application/connect+json"
		case GRPCWeb:
			ok = mt == "application/grpc-web" || mt == "application/grpc-web+proto"
		}
		if r.Method == http.MethodPost && !ok {
			want := "application/proto or application/json (Connect; application/connect+proto or +json for streams)"
			if flavor == GRPCWeb {
				want = "application/grpc-web or application/grpc-web+proto (gRPC-Web; the text form is not served)"
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusUnsupportedMediaType)
			w.Write([]byte("Content-Type " + strings.TrimSpace(mt) + " is not served here; expected " + want + "\n"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// protoCodec is connect-go's protobuf codec with error messages that name
// the problem, not the Go type.
type protoCodec struct{}

func (protoCodec) Name() string { return "proto" }

func (protoCodec) Marshal(m any) ([]byte, error) {
	pm, err := asProto(m)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(pm)
}

func (protoCodec) Unmarshal(b []byte, m any) error {
	pm, err := asProto(m)
	if err != nil {
		return err
	}
	if err := proto.Unmarshal(b, pm); err != nil {
		return errors.New("the request message could not be decoded")
	}
	return nil
}

func asProto(m any) (proto.Message, error) {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil, errors.New("not a protobuf message")
	}
	return pm, nil
}

// jsonCodec is the canonical JSON form (protojson): unknown members are
// errors, as for every JSON request of the contract.
type jsonCodec struct{ name string }

func (c jsonCodec) Name() string { return c.name }

func (jsonCodec) Marshal(m any) ([]byte, error) {
	pm, err := asProto(m)
	if err != nil {
		return nil, err
	}
	return protojson.Marshal(pm)
}

func (jsonCodec) Unmarshal(b []byte, m any) error {
	pm, err := asProto(m)
	if err != nil {
		return err
	}
	if err := protojson.Unmarshal(b, pm); err != nil {
		// protobuf-go writes "proto:" and then a space or a no-break space.
		msg := err.Error()
		if rest, ok := strings.CutPrefix(msg, "proto:"); ok {
			msg = strings.TrimLeft(rest, " \u00a0")
		}
		return errors.New("the request is not the message's JSON form: " + msg)
	}
	return nil
}
