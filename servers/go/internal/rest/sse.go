package rest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"protobench.dev/servers/go/internal/core"
)

// The feed over plain HTTP on the rest and rest-h2 listeners: Server-Sent
// Events and polling (contract/README.md, "Streaming"). Both read the feed
// from the query and answer bad parameters with the contract's JSON error
// (400) before anything is sent; then the call is admitted (service time
// and failure draw, once per stream).

// sse serves GET /v1/stream/sse?count=N&items=K&rate=R: each event is
// `id: <seq>`, `event: feed`, `data: <FeedEvent JSON>`, flushed as it is
// written; then `event: end` with `data: {"count":N}`. A client that
// reconnects with Last-Event-ID s gets the events after s, the first at once
// and the rest on the feed's schedule from there.
func (s *server) sse(w http.ResponseWriter, r *http.Request) {
	req, err := core.ParseFeedQuery(r.URL.RawQuery)
	if err != nil {
		s.respond(w, nil, err)
		return
	}
	var after uint32
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
		if err != nil || n > uint64(req.Count) {
			writeError(w, http.StatusBadRequest, "Last-Event-ID is not an event of this feed; expected 0..="+strconv.FormatUint(uint64(req.Count), 10))
			return
		}
		after = uint32(n)
	}
	ctx := r.Context()
	if err := s.core.Admit(ctx); err != nil {
		s.respond(w, nil, err)
		return
	}
	// The stream outlives the read timeout, which would otherwise end it.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return
	}
	sched := core.NewSchedule(req, after)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for {
		seq, stamp, ok := sched.Next(ctx)
		if !ok {
			break
		}
		buf.Reset()
		buf.WriteString("id: " + strconv.FormatUint(uint64(seq), 10) + "\nevent: feed\ndata: ")
		if enc.Encode(s.core.FeedEvent(seq, req.Items, stamp)) != nil {
			return
		}
		// Encode ended the data line with its newline; a blank line ends the event.
		buf.WriteByte('\n')
		if _, err := w.Write(buf.Bytes()); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
	if ctx.Err() != nil {
		return
	}
	w.Write([]byte("event: end\ndata: {\"count\":" + strconv.FormatUint(uint64(req.Count), 10) + "}\n\n"))
}

// poll serves GET /v1/stream/poll?count=N&items=K&rate=R&startNs=T&after=S&max=M:
// one FeedPage as JSON.
func (s *server) poll(w http.ResponseWriter, r *http.Request) {
	req, err := core.ParsePollQuery(r.URL.RawQuery)
	if err != nil {
		s.respond(w, nil, err)
		return
	}
	if err := s.core.Admit(r.Context()); err != nil {
		s.respond(w, nil, err)
		return
	}
	page := s.core.Poll(req, core.NowNs())
	writeJSON(w, http.StatusOK, &page)
}
