package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"google.golang.org/protobuf/proto"

	"protobench.dev/servers/go/internal/core"
	pb "protobench.dev/servers/go/internal/gen/protobenchv1"
	"protobench.dev/servers/go/internal/model"
	"protobench.dev/servers/go/internal/pbdata"
)

// WebSocket on the rest listener (RFC 6455 over HTTP/1.1) with
// github.com/coder/websocket: the echo stream, the subscription and the
// upload (contract/README.md, "Streaming"). RFC 8441 (WebSocket over
// HTTP/2) is not served: coder/websocket accepts HTTP/1.1 upgrades only, so
// on rest-h2 these paths answer the contract's JSON error (426).
//
// A text frame carries a message's canonical JSON (encoding/json with the
// model structs), a binary frame its protobuf (the generated messages); a
// reply goes in the frame type of the message it answers. A call is admitted
// before the upgrade (an injected failure is the contract's HTTP 500 JSON
// error). Close codes: 1000 the clean end, 1007 a message that does not
// decode or is invalid, 1008 more than core.MaxStreamMessages messages or
// no message for the idle timeout while one is awaited, 1009 a message over
// PROTOBENCH_MAX_REQUEST_BYTES (coder/websocket's read limit: it stops
// reading at the limit, so no more is buffered).

// wsHandler upgrades a request and runs fn on the connection.
func (s *server) wsHandler(fn func(*wsConn)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if msg := notUpgrade(r); msg != "" {
			w.Header().Set("Upgrade", "websocket")
			w.Header().Set("Connection", "Upgrade")
			writeError(w, http.StatusUpgradeRequired, msg)
			return
		}
		if err := s.core.Admit(r.Context()); err != nil {
			s.respond(w, nil, err)
			return
		}
		// The stream outlives the read timeout, which would otherwise end it.
		http.NewResponseController(w).SetReadDeadline(time.Time{})
		// Counted before the upgrade, while net/http's Shutdown still waits
		// for this request, so a shutdown's WaitStreams sees it.
		s.ws.Add(1)
		defer s.ws.Done()
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{
			// A benchmark server: clients of any origin (or none) are served.
			InsecureSkipVerify: true,
			CompressionMode:    websocket.CompressionDisabled,
		})
		if err != nil {
			return // Accept has answered the request
		}
		c.SetReadLimit(s.limit)
		fn(&wsConn{c: c, idle: s.core.Config.IdleTimeout})
	}
}

// notUpgrade says why r is not a WebSocket opening handshake, or "".
func notUpgrade(r *http.Request) string {
	if r.ProtoMajor != 1 {
		return "WebSocket is served over HTTP/1.1 only (on the rest listener); RFC 8441 over HTTP/2 is not supported"
	}
	if !headerHasToken(r.Header, "Connection", "upgrade") || !headerHasToken(r.Header, "Upgrade", "websocket") {
		return "expected a WebSocket upgrade (Connection: Upgrade, Upgrade: websocket)"
	}
	if r.Header.Get("Sec-WebSocket-Version") != "13" {
		return "expected Sec-WebSocket-Version: 13"
	}
	if r.Header.Get("Sec-WebSocket-Key") == "" {
		return "expected a Sec-WebSocket-Key header"
	}
	return ""
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// wsConn is one accepted WebSocket connection.
type wsConn struct {
	c        *websocket.Conn
	idle     time.Duration
	timedOut atomic.Bool
}

// errGone ends a stream whose client closed or went away.
var errGone = errors.New("connection gone")

// closeErr ends a stream with a close code and reason.
type closeErr struct {
	code   websocket.StatusCode
	reason string
}

func (e *closeErr) Error() string { return e.reason }

// next waits for the client's next data message, at most the idle timeout:
// its type and bytes, errGone when the client closed or the connection
// ended, or a *closeErr for a message that must end the stream.
func (c *wsConn) next() (websocket.MessageType, []byte, error) {
	timer := time.AfterFunc(c.idle, func() {
		c.timedOut.Store(true)
		c.c.Close(websocket.StatusPolicyViolation, fmt.Sprintf("no message for %s", c.idle))
	})
	typ, b, err := c.c.Read(context.Background())
	if !timer.Stop() || c.timedOut.Load() {
		return 0, nil, errGone // the timer closed the connection
	}
	if err != nil {
		// A message over the limit has been closed with 1009 by the library;
		// a close frame answered; anything else is a connection gone.
		return 0, nil, errGone
	}
	if typ == websocket.MessageText && !utf8.Valid(b) {
		return 0, nil, &closeErr{websocket.StatusInvalidFramePayloadData, "a text frame that is not UTF-8"}
	}
	return typ, b, nil
}

// end closes the connection: with err's code when it is a *closeErr.
func (c *wsConn) end(err error) {
	var ce *closeErr
	if errors.As(err, &ce) {
		reason := ce.reason
		for len(reason) > 123 {
			_, n := utf8.DecodeLastRuneInString(reason)
			reason = reason[:len(reason)-n]
		}
		c.c.Close(ce.code, reason)
		return
	}
	c.c.CloseNow()
}

// decode reads a message from a frame: JSON from text, protobuf from binary.
func decode[M any, P proto.Message](typ websocket.MessageType, b []byte, jm *M, pm P) error {
	var err error
	if typ == websocket.MessageText {
		err = decodeJSON(b, jm)
	} else {
		err = proto.Unmarshal(b, pm)
		if err != nil {
			err = errors.New("the message is not a valid protobuf message")
		}
	}
	if err != nil {
		return &closeErr{websocket.StatusInvalidFramePayloadData, err.Error()}
	}
	return nil
}

// decodeJSON decodes one JSON object with no unknown members.
func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New(jsonErrorMessage(err))
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// write sends one reply in the frame type typ.
func (c *wsConn) write(typ websocket.MessageType, jm any, pm proto.Message) error {
	var b []byte
	var err error
	if typ == websocket.MessageText {
		b, err = marshalJSON(jm)
	} else {
		b, err = proto.Marshal(pm)
	}
	if err != nil {
		return &closeErr{websocket.StatusInternalError, "the reply could not be encoded"}
	}
	if c.c.Write(context.Background(), typ, b) != nil {
		return errGone
	}
	return nil
}

func marshalJSON(v any) ([]byte, error) {
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(buf.String(), "\n")), nil
}

// wsEcho: every message comes back, in order, in its frame type.
func (s *server) wsEcho(c *wsConn) {
	c.end(func() error {
		for n := 0; ; n++ {
			typ, b, err := c.next()
			if err != nil {
				return err
			}
			if n >= core.MaxStreamMessages {
				return &closeErr{websocket.StatusPolicyViolation, core.ErrTooManyMessages.Error()}
			}
			var jm model.StreamMessage
			var pm pb.StreamMessage
			if err := decode(typ, b, &jm, &pm); err != nil {
				return err
			}
			if err := c.write(typ, &jm, &pm); err != nil {
				return err
			}
		}
	}())
}

// wsUpload: messages, then an empty frame; one UploadSummary in that
// frame's type, then close 1000.
func (s *server) wsUpload(c *wsConn) {
	c.end(func() error {
		tally := core.NewTally()
		for {
			typ, b, err := c.next()
			if err != nil {
				return err
			}
			if len(b) == 0 {
				sum := model.UploadSummary{Count: tally.Count, Bytes: tally.Bytes, Checksum: tally.Checksum}
				if err := c.write(typ, &sum, &pb.UploadSummary{Count: sum.Count, Bytes: sum.Bytes, Checksum: sum.Checksum}); err != nil {
					return err
				}
				return &closeErr{websocket.StatusNormalClosure, ""}
			}
			var jm model.StreamMessage
			var pm pb.StreamMessage
			if err := decode(typ, b, &jm, &pm); err != nil {
				return err
			}
			payload := jm.Payload
			if typ == websocket.MessageBinary {
				payload = pm.Payload
			}
			if tally.Add(payload) != nil {
				return &closeErr{websocket.StatusPolicyViolation, core.ErrTooManyMessages.Error()}
			}
		}
	}())
}

// wsSubscribe: the first message is the SubscribeRequest; the events follow
// in its frame type, each built when it is due; then close 1000. The client
// may only close (or go away) meanwhile: a data message is closed with 1007.
func (s *server) wsSubscribe(c *wsConn) {
	c.end(func() error {
		typ, b, err := c.next()
		if err != nil {
			return err
		}
		var jm model.SubscribeRequest
		var pm pb.SubscribeRequest
		if err := decode(typ, b, &jm, &pm); err != nil {
			return err
		}
		req := core.FeedRequest{Count: jm.Count, Items: jm.Items, Rate: jm.Rate}
		if typ == websocket.MessageBinary {
			req = core.FeedRequest{Count: pm.Count, Items: pm.Items, Rate: pm.Rate}
		}
		if err := req.Validate(); err != nil {
			return &closeErr{websocket.StatusInvalidFramePayloadData, err.Error()}
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		go func() {
			// Reads until the client closes, goes away or sends data, or the
			// connection is closed by c.end. (Not with ctx: coder/websocket
			// drops the connection without a close frame when a read's
			// context ends.)
			if _, _, err := c.c.Read(context.Background()); err == nil {
				cancel(&closeErr{websocket.StatusInvalidFramePayloadData, "no message is expected during a subscription"})
			} else {
				cancel(errGone)
			}
		}()
		sched := core.NewSchedule(req, 0)
		for {
			seq, stamp, ok := sched.Next(ctx)
			if !ok {
				return context.Cause(ctx)
			}
			var err error
			if typ == websocket.MessageBinary {
				err = c.write(typ, nil, pbdata.Event(s.pbItems, seq, req.Items, stamp))
			} else {
				ev := s.core.FeedEvent(seq, req.Items, stamp)
				err = c.write(typ, &ev, nil)
			}
			if err != nil {
				return err
			}
			if seq == req.Count {
				return &closeErr{websocket.StatusNormalClosure, ""}
			}
		}
	}())
}
