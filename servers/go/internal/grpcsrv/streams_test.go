package grpcsrv

import (
	"context"
	"hash/fnv"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"protobench.dev/servers/go/internal/core"
	pb "protobench.dev/servers/go/internal/gen/protobenchv1"
)

// protobench.v1.Streams on a real grpc-go server on 127.0.0.1 with a
// 4096-byte message limit, called by grpc-go's client.

const testLimit = 4096

func streamsClient(t *testing.T, failureRate float64) (pb.StreamsClient, *grpc.ClientConn) {
	cl, conn, _ := streamsServer(t, failureRate)
	return cl, conn
}

func streamsServer(t *testing.T, failureRate float64) (pb.StreamsClient, *grpc.ClientConn, *core.Core) {
	t.Helper()
	c, err := core.New(&core.Config{
		DatasetPath:     "../../../../contract/data/dataset.json",
		MaxRequestBytes: testLimit,
		FailureRate:     failureRate,
		FailureSeed:     1,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(append(Options(), grpc.MaxRecvMsgSize(testLimit))...)
	if err := Register(srv, c); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewStreamsClient(conn), conn, c
}

func ctx30(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func wantCode(t *testing.T, what string, err error, code codes.Code, msg string) {
	t.Helper()
	if st := status.Convert(err); st.Code() != code || !strings.Contains(st.Message(), msg) {
		t.Errorf("%s: got %v %q, want %v with %q", what, st.Code(), st.Message(), code, msg)
	}
}

func TestGRPCSubscribe(t *testing.T) {
	cl, _, c := streamsServer(t, 0)
	s, err := cl.Subscribe(ctx30(t), &pb.SubscribeRequest{Count: 3, Items: 1000, Rate: 500})
	if err != nil {
		t.Fatal(err)
	}
	var first int64
	for seq := uint32(1); seq <= 3; seq++ {
		ev, err := s.Recv()
		if err != nil || ev.Seq != seq || len(ev.Items) != 1000 {
			t.Fatalf("event %d: %v %v", seq, ev.GetSeq(), err)
		}
		// Item j of event seq is the dataset's ((seq-1)*items + j) mod 1395.
		for _, j := range []int{0, 394, 395, 999} {
			if want := c.Data.Items[(int(seq-1)*1000+j)%1395].ID; ev.Items[j].Id != want {
				t.Errorf("event %d item %d: %s, want %s", seq, j, ev.Items[j].Id, want)
			}
		}
		if seq == 1 {
			first = ev.ScheduledNs
		} else if ev.ScheduledNs-first != int64(seq-1)*2_000_000 {
			t.Errorf("event %d stamped %d ns after the first, want %d", seq, ev.ScheduledNs-first, (seq-1)*2_000_000)
		}
	}
	if _, err := s.Recv(); err != io.EOF {
		t.Errorf("after the last event: %v, want the end with OK", err)
	}
	for _, tc := range []struct {
		req  *pb.SubscribeRequest
		want string
	}{
		{&pb.SubscribeRequest{Count: 0}, "count is 0, expected 1..=1000000"},
		{&pb.SubscribeRequest{Count: 1_000_001}, "count is 1000001"},
		{&pb.SubscribeRequest{Count: 1, Items: 1396}, "items is 1396"},
		{&pb.SubscribeRequest{Count: 1, Rate: 1_000_001}, "rate is 1000001"},
	} {
		s, err := cl.Subscribe(ctx30(t), tc.req)
		if err == nil {
			_, err = s.Recv()
		}
		wantCode(t, tc.want, err, codes.InvalidArgument, tc.want)
	}
}

func TestGRPCEchoAndUpload(t *testing.T) {
	cl, _ := streamsClient(t, 0)
	e, err := cl.EchoStream(ctx30(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := uint32(1); i <= 3; i++ {
		if err := e.Send(&pb.StreamMessage{Seq: i, Payload: "p"}); err != nil {
			t.Fatal(err)
		}
		if m, err := e.Recv(); err != nil || m.Seq != i || m.Payload != "p" {
			t.Fatalf("echo %d: %v %v", i, m, err)
		}
	}
	e.CloseSend()
	if _, err := e.Recv(); err != io.EOF {
		t.Errorf("echo end: %v", err)
	}

	// A message over the limit: RESOURCE_EXHAUSTED.
	e, _ = cl.EchoStream(ctx30(t))
	e.Send(&pb.StreamMessage{Seq: 1, Payload: strings.Repeat("a", testLimit)})
	_, err = e.Recv()
	wantCode(t, "echo over the limit", err, codes.ResourceExhausted, "")

	u, err := cl.Upload(ctx30(t))
	if err != nil {
		t.Fatal(err)
	}
	ref := fnv.New32a()
	for i, p := range []string{"abc", "", "défg"} {
		u.Send(&pb.StreamMessage{Seq: uint32(i + 1), Payload: p})
		ref.Write([]byte(p))
	}
	sum, err := u.CloseAndRecv()
	if err != nil || sum.Count != 3 || sum.Bytes != 8 || sum.Checksum != ref.Sum32() {
		t.Errorf("upload: %v %v, want checksum %d", sum, err, ref.Sum32())
	}
}

// An undecodable message (a string field holding invalid UTF-8, sent as a
// FileContent whose field 2 is bytes): INVALID_ARGUMENT.
func TestGRPCUndecodable(t *testing.T) {
	_, conn := streamsClient(t, 0)
	desc := &grpc.StreamDesc{StreamName: "Upload", ClientStreams: true}
	s, err := conn.NewStream(ctx30(t), desc, "/protobench.v1.Streams/Upload")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SendMsg(&pb.FileContent{Content: []byte{0xff, 0xfe}}); err != nil {
		t.Fatal(err)
	}
	s.CloseSend()
	err = s.RecvMsg(&pb.UploadSummary{})
	wantCode(t, "undecodable upload message", err, codes.InvalidArgument, "could not be decoded")
}

func TestGRPCPollAndFailure(t *testing.T) {
	cl, _ := streamsClient(t, 0)
	page, err := cl.Poll(ctx30(t), &pb.PollRequest{Count: 5, Items: 2, After: 3, Max: 10})
	if err != nil || len(page.Events) != 2 || page.Events[0].Seq != 4 || len(page.Events[1].Items) != 2 || !page.Done {
		t.Errorf("poll: %v %v", page, err)
	}
	_, err = cl.Poll(ctx30(t), &pb.PollRequest{Count: 5, Max: 0})
	wantCode(t, "poll max 0", err, codes.InvalidArgument, "max is 0, expected 1..=1000")

	// An injected failure: UNAVAILABLE before the first event.
	cl, _ = streamsClient(t, 1)
	s, err := cl.Subscribe(ctx30(t), &pb.SubscribeRequest{Count: 3})
	if err == nil {
		_, err = s.Recv()
	}
	wantCode(t, "injected failure", err, codes.Unavailable, "injected failure")
}
