package grpcsrv

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"protobench.dev/servers/go/internal/core"
	pb "protobench.dev/servers/go/internal/gen/protobenchv1"
)

// The connect-go listeners on a real net/http server on 127.0.0.1 with a
// 4096-byte limit, called with net/http's client (the protocol's bytes as
// they are; buf curl and protobench verify check every workload).

func connectServer(t *testing.T, flavor Flavor, failureRate float64) string {
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
	h, err := ConnectHandler(c, flavor)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func call(t *testing.T, url, contentType string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestConnect(t *testing.T) {
	url := connectServer(t, Connect, 0)
	bench := url + "/protobench.v1.Bench/"
	for _, tc := range []struct {
		path, contentType, body string
		status                  int
		want                    string
	}{
		{"GetInteger", "application/json", `{}`, 200, `{"value":2147483647}`},
		{"GetFile", "application/json", `{"name":"nope"}`, 404, `{"code":"not_found","message":"unknown file \"nope\""}`},
		{"CloneText", "application/json", `{"text":"a","times":100001}`, 400, `"code":"invalid_argument"`},
		{"Echo", "application/json", `{"x":1}`, 400, `unknown field \"x\"`},
		{"Echo", "application/proto", "\xff\xff", 400, `the request message could not be decoded`},
		{"Echo", "application/json", `{"payload":"` + strings.Repeat("a", testLimit) + `"}`, 429, `"code":"resource_exhausted"`},
		{"Nope", "application/json", `{}`, 501, `"code":"unimplemented"`},
		{"Echo", "application/grpc-web+proto", "", 415, "expected application/proto or application/json"},
	} {
		status, body := call(t, bench+tc.path, tc.contentType, []byte(tc.body))
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: %d %s, want %d %s", tc.path, tc.contentType, status, body, tc.status, tc.want)
		}
		for _, word := range []string{"protobenchv1", "*", ".go", "unmarshal into"} {
			if status != 200 && strings.Contains(body, word) {
				t.Errorf("%s: error %s names %q", tc.path, body, word)
			}
		}
	}
	status, body := call(t, connectServer(t, Connect, 1)+"/protobench.v1.Bench/GetInteger", "application/json", []byte(`{}`))
	if status != 503 || body != `{"code":"unavailable","message":"injected failure"}` {
		t.Errorf("injected failure: %d %s", status, body)
	}
}

func TestGRPCWeb(t *testing.T) {
	url := connectServer(t, GRPCWeb, 0) + "/protobench.v1.Bench/"
	msg, _ := proto.Marshal(&pb.EchoMessage{Payload: "hi"})
	frame := append([]byte{0, 0, 0, 0, byte(len(msg))}, msg...)
	status, body := call(t, url+"Echo", "application/grpc-web+proto", frame)
	// The message frame, then the trailer frame (flag 0x80) with grpc-status 0.
	if status != 200 || !strings.HasPrefix(body, string(frame)) || !strings.Contains(body[len(frame):], "grpc-status: 0") || body[len(frame)] != 0x80 {
		t.Errorf("Echo: %d %q", status, body)
	}
	if status, _ := call(t, url+"Echo", "application/grpc-web-text", frame); status != 415 {
		t.Errorf("grpc-web-text: %d, want 415 (not served)", status)
	}
	if status, _ := call(t, url+"Echo", "application/json", []byte(`{}`)); status != 415 {
		t.Errorf("Connect on the gRPC-Web listener: %d, want 415", status)
	}
}

// Subscribe and Upload over Connect, with connect-go's own client.
func TestConnectStreams(t *testing.T) {
	url := connectServer(t, Connect, 0)
	sub := connect.NewClient[pb.SubscribeRequest, pb.FeedEvent](http.DefaultClient, url+"/protobench.v1.Streams/Subscribe")
	s, err := sub.CallServerStream(ctx30(t), connect.NewRequest(&pb.SubscribeRequest{Count: 3, Items: 2, Rate: 1000}))
	if err != nil {
		t.Fatal(err)
	}
	n := uint32(0)
	for s.Receive() {
		n++
		if ev := s.Msg(); ev.Seq != n || len(ev.Items) != 2 {
			t.Errorf("event %d: seq %d, %d items", n, ev.Seq, len(ev.Items))
		}
	}
	if s.Err() != nil || n != 3 {
		t.Errorf("subscription: %d events, %v", n, s.Err())
	}
	s, err = sub.CallServerStream(ctx30(t), connect.NewRequest(&pb.SubscribeRequest{Count: 0}))
	if err == nil {
		for s.Receive() {
		}
		err = s.Err()
	}
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "count is 0") {
		t.Errorf("count 0: %v", err)
	}

	up := connect.NewClient[pb.StreamMessage, pb.UploadSummary](http.DefaultClient, url+"/protobench.v1.Streams/Upload")
	u := up.CallClientStream(ctx30(t))
	for i, p := range []string{"ab", "cd"} {
		if err := u.Send(&pb.StreamMessage{Seq: uint32(i + 1), Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := u.CloseAndReceive()
	// FNV-1a of "abcd" is 0xce3479bd.
	if err != nil || sum.Msg.Count != 2 || sum.Msg.Bytes != 4 || sum.Msg.Checksum != 0xce3479bd {
		t.Errorf("upload: %v %v", sum, err)
	}
}
