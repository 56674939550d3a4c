package grpcsrv

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"protobench.dev/servers/go/internal/core"
	pb "protobench.dev/servers/go/internal/gen/protobenchv1"
	"protobench.dev/servers/go/internal/pbdata"
)

// streams is protobench.v1.Streams on grpc-go: the bidirectional echo, the
// server-streaming subscription, the client-streaming upload and the unary
// poll (contract/README.md, "Streaming").
//
// Each call is admitted once, like a unary call: the request (a
// subscription's, a poll's) is validated first, then the injected service
// time and the failure draw run before the first message, so an injected
// failure is UNAVAILABLE with nothing sent. A reply is sent (Send blocks
// on HTTP/2 flow control) before the next message is read or the next
// event built, so a call holds at most one message per direction. An
// inbound message over the size limit ends the call with grpc-go's own
// RESOURCE_EXHAUSTED, one that does not decode with INVALID_ARGUMENT, one
// past MaxStreamMessages with RESOURCE_EXHAUSTED.
type streams struct {
	pb.UnimplementedStreamsServer
	core  *core.Core
	items []*pb.Item
}

// recv reads the next client message: io.EOF at the clean end of the
// client's side, else a status for the call.
func recv[T proto.Message](s grpc.ServerStream, m T) error {
	if err := s.RecvMsg(m); err != nil {
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		return err
	}
	if undecodable(m) {
		return status.Error(codes.InvalidArgument, "the message could not be decoded")
	}
	return nil
}

func tooMany() error {
	return status.Error(codes.ResourceExhausted, core.ErrTooManyMessages.Error())
}

func (s *streams) EchoStream(stream grpc.BidiStreamingServer[pb.StreamMessage, pb.StreamMessage]) error {
	if err := s.core.Admit(stream.Context()); err != nil {
		return toStatus(err)
	}
	// grpc-go holds the response headers until the first reply, as is its
	// default: a client must not wait for them before it sends.
	for n := 0; ; n++ {
		m := new(pb.StreamMessage)
		if err := recv(stream, m); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if n >= core.MaxStreamMessages {
			return tooMany()
		}
		if err := stream.Send(m); err != nil {
			return err
		}
	}
}

func (s *streams) Subscribe(r *pb.SubscribeRequest, stream grpc.ServerStreamingServer[pb.FeedEvent]) error {
	return s.subscribe(stream.Context(), r, stream.Send)
}

// subscribe validates and admits a subscription, then sends its events
// with send, each when it is due (grpc-go's and connect-go's Send wait for
// flow control before the next event is built).
func (s *streams) subscribe(ctx context.Context, r *pb.SubscribeRequest, send func(*pb.FeedEvent) error) error {
	req := core.FeedRequest{Count: r.Count, Items: r.Items, Rate: r.Rate}
	if err := req.Validate(); err != nil {
		return toStatus(err)
	}
	if err := s.core.Admit(ctx); err != nil {
		return toStatus(err)
	}
	sched := core.NewSchedule(req, 0)
	for {
		seq, stamp, ok := sched.Next(ctx)
		if !ok {
			return ctx.Err()
		}
		if err := send(pbdata.Event(s.items, seq, req.Items, stamp)); err != nil {
			return err
		}
		if seq == req.Count {
			return nil
		}
	}
}

func (s *streams) Upload(stream grpc.ClientStreamingServer[pb.StreamMessage, pb.UploadSummary]) error {
	if err := s.core.Admit(stream.Context()); err != nil {
		return toStatus(err)
	}
	if err := stream.SendHeader(nil); err != nil {
		return err
	}
	sum, err := tally(func() (*pb.StreamMessage, error) {
		m := new(pb.StreamMessage)
		return m, recv(stream, m)
	})
	if err != nil {
		return err
	}
	return stream.SendAndClose(sum)
}

// tally counts an upload's messages, read with next until it returns
// io.EOF; an error of next ends the call as it is.
func tally(next func() (*pb.StreamMessage, error)) (*pb.UploadSummary, error) {
	t := core.NewTally()
	for {
		m, err := next()
		if err == io.EOF {
			return &pb.UploadSummary{Count: t.Count, Bytes: t.Bytes, Checksum: t.Checksum}, nil
		} else if err != nil {
			return nil, err
		}
		if err := t.Add(m.Payload); err != nil {
			return nil, tooMany()
		}
	}
}

func (s *streams) Poll(ctx context.Context, r *pb.PollRequest) (*pb.FeedPage, error) {
	req := core.PollRequest{
		FeedRequest: core.FeedRequest{Count: r.Count, Items: r.Items, Rate: r.Rate},
		StartNs:     r.StartNs, After: r.After, Max: r.Max,
	}
	if err := req.Validate(); err != nil {
		return nil, toStatus(err)
	}
	if err := s.core.Admit(ctx); err != nil {
		return nil, toStatus(err)
	}
	events, done := core.PollPage(req, core.NowNs())
	page := &pb.FeedPage{Events: make([]*pb.FeedEvent, len(events)), Done: done}
	for i, e := range events {
		page.Events[i] = pbdata.Event(s.items, e.Seq, req.Items, e.StampNs)
	}
	return page, nil
}
