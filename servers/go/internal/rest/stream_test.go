package rest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"google.golang.org/protobuf/proto"

	"protobench.dev/servers/go/internal/core"
	pb "protobench.dev/servers/go/internal/gen/protobenchv1"
)

// The streaming paths on a real net/http server on 127.0.0.1, with a
// 4096-byte message limit and a 500 ms idle timeout, driven by
// coder/websocket's client, net/http's client and a line reader for SSE.

const testLimit = 4096

func streamServer(t *testing.T, failureRate float64) string {
	t.Helper()
	c, err := core.New(&core.Config{
		DatasetPath:     "../../../../contract/data/dataset.json",
		MaxRequestBytes: testLimit,
		IdleTimeout:     500 * time.Millisecond,
		FailureRate:     failureRate,
		FailureSeed:     1,
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := Handler(c)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func dial(t *testing.T, url, path string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+path, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	c.SetReadLimit(1 << 24)
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// closedWith reads until the server closes and returns the close code and reason.
func closedWith(t *testing.T, c *websocket.Conn) (websocket.StatusCode, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code, ce.Reason
			}
			t.Fatalf("no close frame: %v", err)
		}
	}
}

func write(t *testing.T, c *websocket.Conn, typ websocket.MessageType, b []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Write(ctx, typ, b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func read(t *testing.T, c *websocket.Conn) (websocket.MessageType, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	typ, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return typ, b
}

func TestWebSocketEcho(t *testing.T) {
	url := streamServer(t, 0)
	c := dial(t, url, "/v1/stream/ws/echo")
	write(t, c, websocket.MessageText, []byte(`{"seq":1,"payload":"héllo"}`))
	if typ, b := read(t, c); typ != websocket.MessageText || string(b) != `{"seq":1,"payload":"héllo"}` {
		t.Errorf("text echo: %v %s", typ, b)
	}
	bin, _ := proto.Marshal(&pb.StreamMessage{Seq: 2, Payload: "x"})
	write(t, c, websocket.MessageBinary, bin)
	var got pb.StreamMessage
	if typ, b := read(t, c); typ != websocket.MessageBinary || proto.Unmarshal(b, &got) != nil || got.Seq != 2 || got.Payload != "x" {
		t.Errorf("binary echo: %v %x", typ, b)
	}
	c.Close(websocket.StatusNormalClosure, "")

	for _, tc := range []struct {
		name   string
		typ    websocket.MessageType
		msg    []byte
		code   websocket.StatusCode
		reason string
	}{
		{"over the limit", websocket.MessageText, []byte(`{"seq":1,"payload":"` + strings.Repeat("a", testLimit) + `"}`), websocket.StatusMessageTooBig, ""},
		{"malformed JSON", websocket.MessageText, []byte(`{"seq":1,`), websocket.StatusInvalidFramePayloadData, "malformed JSON"},
		{"unknown member", websocket.MessageText, []byte(`{"seq":1,"x":2}`), websocket.StatusInvalidFramePayloadData, `unknown member "x"`},
		{"not UTF-8", websocket.MessageText, []byte{'"', 0xff, '"'}, websocket.StatusInvalidFramePayloadData, "not UTF-8"},
		{"bad protobuf", websocket.MessageBinary, []byte{0xff, 0xff, 0xff}, websocket.StatusInvalidFramePayloadData, "not a valid protobuf message"},
	} {
		c := dial(t, url, "/v1/stream/ws/echo")
		write(t, c, tc.typ, tc.msg)
		if code, reason := closedWith(t, c); code != tc.code || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: closed %d %q, want %d with %q", tc.name, code, reason, tc.code, tc.reason)
		}
	}
}

func TestWebSocketIdle(t *testing.T) {
	c := dial(t, streamServer(t, 0), "/v1/stream/ws/upload")
	if code, reason := closedWith(t, c); code != websocket.StatusPolicyViolation || !strings.Contains(reason, "no message for 500ms") {
		t.Errorf("idle upload: closed %d %q, want 1008", code, reason)
	}
}

func TestWebSocketSubscribe(t *testing.T) {
	url := streamServer(t, 0)
	c := dial(t, url, "/v1/stream/ws/subscribe")
	write(t, c, websocket.MessageText, []byte(`{"count":3,"items":2,"rate":1000}`))
	var first int64
	for seq := uint32(1); seq <= 3; seq++ {
		var ev struct {
			Seq         uint32                `json:"seq"`
			ScheduledNs int64                 `json:"scheduledNs,string"`
			Items       []struct{ ID string } `json:"items"`
		}
		if _, b := read(t, c); json.Unmarshal(b, &ev) != nil || ev.Seq != seq || len(ev.Items) != 2 {
			t.Fatalf("event %d: %s", seq, b)
		}
		if seq == 1 {
			first = ev.ScheduledNs
		} else if ev.ScheduledNs-first != int64(seq-1)*1_000_000 {
			t.Errorf("event %d stamped %d ns after the first, want %d", seq, ev.ScheduledNs-first, (seq-1)*1_000_000)
		}
	}
	if code, _ := closedWith(t, c); code != websocket.StatusNormalClosure {
		t.Errorf("end: closed %d, want 1000", code)
	}

	for _, tc := range []struct{ req, reason string }{
		{`{"count":0}`, "count is 0, expected 1..=1000000"},
		{`{"count":1,"items":1396}`, "items is 1396, expected 0..=1395"},
		{`{"count":1,"rate":1000001}`, "rate is 1000001"},
		{`[1]`, "the request must be a JSON object"},
	} {
		c := dial(t, url, "/v1/stream/ws/subscribe")
		write(t, c, websocket.MessageText, []byte(tc.req))
		if code, reason := closedWith(t, c); code != websocket.StatusInvalidFramePayloadData || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: closed %d %q, want 1007 with %q", tc.req, code, reason, tc.reason)
		}
	}

	// A data message during a subscription ends it with 1007.
	c = dial(t, url, "/v1/stream/ws/subscribe")
	write(t, c, websocket.MessageText, []byte(`{"count":1000,"rate":10}`))
	read(t, c)
	write(t, c, websocket.MessageText, []byte(`{}`))
	if code, _ := closedWith(t, c); code != websocket.StatusInvalidFramePayloadData {
		t.Errorf("data during a subscription: closed %d, want 1007", code)
	}
}

func TestWebSocketUpload(t *testing.T) {
	c := dial(t, streamServer(t, 0), "/v1/stream/ws/upload")
	ref := fnv.New32a()
	for i, p := range []string{"abc", "", "défg"} {
		b, _ := proto.Marshal(&pb.StreamMessage{Seq: uint32(i + 1), Payload: p})
		write(t, c, websocket.MessageBinary, b)
		ref.Write([]byte(p))
	}
	write(t, c, websocket.MessageBinary, nil)
	var sum pb.UploadSummary
	if typ, b := read(t, c); typ != websocket.MessageBinary || proto.Unmarshal(b, &sum) != nil {
		t.Fatalf("summary: %v %x", typ, b)
	}
	if sum.Count != 3 || sum.Bytes != 8 || sum.Checksum != ref.Sum32() {
		t.Errorf("summary %v, want count 3, bytes 8, checksum %d", &sum, ref.Sum32())
	}
	if code, _ := closedWith(t, c); code != websocket.StatusNormalClosure {
		t.Errorf("end: closed %d, want 1000", code)
	}
}

func TestWebSocketRefused(t *testing.T) {
	// Not an upgrade: the contract's JSON error.
	url := streamServer(t, 0)
	resp, err := http.Get(url + "/v1/stream/ws/echo")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired || !strings.Contains(string(body), `"code":426`) {
		t.Errorf("no upgrade: %d %s", resp.StatusCode, body)
	}
	// An injected failure is HTTP 500 before the upgrade.
	url = streamServer(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, resp, err = websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/v1/stream/ws/echo", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("injected failure: %v %v", resp, err)
	}
}

func TestSSE(t *testing.T) {
	url := streamServer(t, 0)
	get := func(query, lastID string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", url+"/v1/stream/sse?"+query, nil)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		return resp, b.String()
	}
	resp, body := get("count=2&items=1", "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
	if len(events) != 3 || !strings.HasPrefix(events[0], "id: 1\nevent: feed\ndata: {\"seq\":1,") ||
		!strings.HasPrefix(events[1], "id: 2\nevent: feed\ndata: {\"seq\":2,") || events[2] != "event: end\ndata: {\"count\":2}" {
		t.Errorf("events: %q", events)
	}
	// Resuming after event 2 of 3 at 1 event/s: event 3 only.
	if _, body = get("count=3&rate=1", "2"); !strings.HasPrefix(body, "id: 3\n") || strings.Count(body, "event: feed") != 1 {
		t.Errorf("resume: %q", body)
	}
	for query, want := range map[string]string{
		"count=0":         "count is 0, expected 1..=1000000",
		"count=1&bogus=2": `unknown query parameter \"bogus\"`,
		"count=1&rate=x":  `query parameter rate is \"x\"`,
	} {
		if resp, body := get(query, ""); resp.StatusCode != 400 || !strings.Contains(body, want) {
			t.Errorf("%s: %d %s", query, resp.StatusCode, body)
		}
	}
	if resp, body := get("count=2", "3"); resp.StatusCode != 400 || !strings.Contains(body, "Last-Event-ID") {
		t.Errorf("Last-Event-ID past the end: %d %s", resp.StatusCode, body)
	}
}

func TestPoll(t *testing.T) {
	url := streamServer(t, 0)
	get := func(query string) (int, string) {
		resp, err := http.Get(url + "/v1/stream/poll?" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var page struct {
		Events []struct{ Seq uint32 } `json:"events"`
		Done   bool                   `json:"done"`
	}
	code, body := get("count=5&after=3&max=10")
	if code != 200 || json.Unmarshal([]byte(body), &page) != nil || len(page.Events) != 2 || page.Events[0].Seq != 4 || !page.Done {
		t.Errorf("last page: %d %s", code, body)
	}
	for query, want := range map[string]string{
		"count=5&max=0":          "max is 0, expected 1..=1000",
		"count=5&max=1&rate=10":  "startNs is 0",
		"count=5&max=1&after=6":  "after is 6, beyond the feed's count 5",
		"count=5&max=1&startNs=": `query parameter startNs is \"\"`,
	} {
		if code, body := get(query); code != 400 || !strings.Contains(body, want) {
			t.Errorf("%s: %d %s", query, code, body)
		}
	}
}
