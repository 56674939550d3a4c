// Package grpcsrv is the gRPC front end: grpc-go with the protoc-gen-go /
// protoc-gen-go-grpc stubs generated from contract/proto at build time, plus
// server reflection.
package grpcsrv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"protobench.dev/servers/go/internal/core"
	"protobench.dev/servers/go/internal/gen/helloworld"
	pb "protobench.dev/servers/go/internal/gen/protobenchv1"
	"protobench.dev/servers/go/internal/pbdata"
)

// MaxSendMsgSize is large enough for every response the contract allows:
// 3.4 MB files and CloneText's 64 MiB of text plus its framing.
const MaxSendMsgSize = 128 << 20

type bench struct {
	pb.UnimplementedBenchServer
	core      *core.Core
	inventory *pb.InventoryStatus
	devices   *pb.DeviceList
	items     *pb.ItemList
	people    *pb.ObjectList
	integers  *pb.IntegerList
}

type greeter struct {
	helloworld.UnimplementedGreeterServer
	core *core.Core
}

// Register loads the dataset into protobuf messages and registers the Bench,
// Greeter and Streams services and server reflection on s.
func Register(s *grpc.Server, c *core.Core) error {
	b, err := newBench(c)
	if err != nil {
		return err
	}
	s.RegisterService(&pb.Bench_ServiceDesc, b)
	s.RegisterService(&helloworld.Greeter_ServiceDesc, &greeter{core: c})
	s.RegisterService(&pb.Streams_ServiceDesc, &streams{core: c, items: b.items.Items})
	reflection.Register(s)
	return nil
}

// newBench loads the dataset into protobuf messages.
func newBench(c *core.Core) (*bench, error) {
	b := &bench{
		core:      c,
		inventory: &pb.InventoryStatus{},
		devices:   &pb.DeviceList{},
		people:    &pb.ObjectList{},
		integers:  &pb.IntegerList{Values: c.Integers},
	}
	// dataset.json's members `devices`, `items` and `people` are exactly the
	// JSON forms of DeviceList, ItemList and ObjectList; the other members
	// are skipped.
	skip := protojson.UnmarshalOptions{DiscardUnknown: true}
	if err := skip.Unmarshal(c.RawDataset, b.devices); err != nil {
		return nil, fmt.Errorf("dataset devices: %w", err)
	}
	var err error
	if b.items, err = pbdata.Items(c.RawDataset); err != nil {
		return nil, err
	}
	if err := skip.Unmarshal(c.RawDataset, b.people); err != nil {
		return nil, fmt.Errorf("dataset people: %w", err)
	}
	var top struct {
		InventoryStatus json.RawMessage `json:"inventoryStatus"`
	}
	if err := json.Unmarshal(c.RawDataset, &top); err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	if err := protojson.Unmarshal(top.InventoryStatus, b.inventory); err != nil {
		return nil, fmt.Errorf("dataset inventoryStatus: %w", err)
	}
	return b, nil
}

// Options returns the server options the front end needs: the codec and
// interceptor that answer an undecodable request with INVALID_ARGUMENT.
//
// grpc-go reports a request that fails to unmarshal as INTERNAL, and writes
// that status itself before the handler or any interceptor runs. The
// contract wants INVALID_ARGUMENT, so the codec below (grpc-go's own proto
// codec underneath) does not fail the receive: it resets the message and
// marks it as undecodable, and the unary interceptor, which runs right after
// the receive with that same message, answers INVALID_ARGUMENT without
// calling the handler. The mark travels in the message itself, so nothing
// is left behind when the interceptor never runs (grpc-go ends a unary call
// whose request stream carries a second message with INTERNAL before it).
func Options() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ForceServerCodecV2(codec{encoding.GetCodecV2(protoenc.Name)}),
		grpc.UnaryInterceptor(rejectUndecodable),
	}
}

// undecodableMark is what an undecodable request message holds after the
// codec reset it: as unknown fields, field 19999 (in the range protobuf
// reserves for its implementation, which no .proto may declare) with the
// varint 1. A client that sends exactly this field gets INVALID_ARGUMENT
// too, which is what it deserves.
var undecodableMark = protowire.AppendVarint(protowire.AppendTag(nil, 19999, protowire.VarintType), 1)

type codec struct{ encoding.CodecV2 }

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	if err := c.CodecV2.Unmarshal(data, v); err != nil {
		m, ok := v.(proto.Message)
		if !ok {
			return err
		}
		proto.Reset(m)
		m.ProtoReflect().SetUnknown(undecodableMark)
	}
	return nil
}

func rejectUndecodable(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if m, ok := req.(proto.Message); ok && undecodable(m) {
		return nil, status.Error(codes.InvalidArgument, "the request message could not be decoded")
	}
	return handler(ctx, req)
}

// undecodable reports whether the codec marked m as undecodable.
func undecodable(m proto.Message) bool {
	u := m.ProtoReflect().GetUnknown()
	return len(u) != 0 && bytes.Equal(u, undecodableMark)
}

// toStatus maps an operation error onto its gRPC status.
func toStatus(err error) error {
	switch core.KindOf(err) {
	case core.Invalid:
		return status.Error(codes.InvalidArgument, err.Error())
	case core.NotFound:
		return status.Error(codes.NotFound, err.Error())
	case core.Injected:
		return status.Error(codes.Unavailable, err.Error())
	default:
		return status.Error(codes.Internal, "internal error")
	}
}

func (b *bench) admit(ctx context.Context) error {
	if err := b.core.Admit(ctx); err != nil {
		return toStatus(err)
	}
	return nil
}

func (b *bench) GetInventoryXs(ctx context.Context, _ *pb.Empty) (*pb.Empty, error) {
	if err := b.admit(ctx); err != nil {
		return nil, err
	}
	return &pb.Empty{}, nil
}

func (b *bench) GetInventoryS(ctx context.Context, _ *pb.Empty) (*pb.InventoryStatus, error) {
	if err := b.admit(ctx); err != nil {
		return nil, err
	}
	return b.inventory, nil
}

func (b *bench) GetInventoryM(ctx context.Context, _ *pb.Empty) (*pb.DeviceList, error) {
	if err := b.admit(ctx); err != nil {
		return nil, err
	}
	return b.devices, nil
}

func (b *bench) GetInventoryL(ctx context.Context, _ *pb.Empty) (*pb.ItemList, error) {
	if err := b.admit(ctx); err != nil {
		return nil, err
	}
	return b.items, nil
}

func (b *bench) EchoProduct(ctx context.Context, p *pb.Product) (*pb.Product, error) {
	if err := b.admit(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

func (b *bench) ModifyProduct(ctx context.Context, p *pb.Product) (*pb.Product, error) {
	if err := b.admit(ctx); err != nil {
		return nil, err
	}
	p.Description = core.Reverse(p.Description)
	return p, nil
}

func (b *bench) CloneText(ctx context.Context, r *pb.CloneRequest) (*pb.CloneResponse, error) {
	if err := core.ValidateClone(r.Text, r.Times); err != nil {
		return nil, toStatus(err)
	}
	if err := b.admit(ctx); err != nil {
		return nil, err
	}
	return &pb.CloneResponse{Texts: core.Clone(r.Text, r.Times)}, nil
}

func (b *bench) GetInteger(ctx context.Context, _ *pb.Empty) (*pb.IntegerValue, error) {
	if err := b.admit(ctx); err != nil {
		return nil, err
	}
	return &pb.IntegerValue{Value: 2147483647}, nil
}

func (b *bench) GetIntegers(ctx context.Context, _ *pb.Empty) (*pb.IntegerList, error) {
	if err := b.admit(ctx); err != nil {
		return nil, err
	}
	return b.integers, nil
}

func (b *bench) GetObjects(ctx context.Context, _ *pb.Empty) (*pb.ObjectList, error) {
	if err := b.admit(ctx); err != nil {
		return nil, err
	}
	return b.people, nil
}

func (b *bench) GetFile(ctx context.Context, r *pb.FileRequest) (*pb.FileContent, error) {
	content, err := b.core.File(r.Name)
	if err != nil {
		return nil, toStatus(err)
	}
	if err := b.admit(ctx); err != nil {
		return nil, err
	}
	return &pb.FileContent{Name: r.Name, Content: content}, nil
}

func (b *bench) Echo(ctx context.Context, m *pb.EchoMessage) (*pb.EchoMessage, error) {
	if err := b.admit(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

func (g *greeter) SayHello(ctx context.Context, r *helloworld.HelloRequest) (*helloworld.HelloReply, error) {
	if err := g.core.Admit(ctx); err != nil {
		return nil, toStatus(err)
	}
	return &helloworld.HelloReply{Response: r.Request}, nil
}
