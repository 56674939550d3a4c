package core

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"protobench.dev/servers/go/internal/model"
)

// The streaming operations' limits (contract/README.md, "Streaming").
const (
	MaxCount          = 1_000_000 // events of one subscription
	MaxItems          = 1395      // items per event (the dataset's items)
	MaxRate           = 1_000_000 // events per second; 0 = as fast as possible
	MaxPageEvents     = 1000      // a poll's max
	MaxPageItems      = 16_384    // items in one poll page
	MaxStreamMessages = 1_000_000 // messages a client sends on one echo stream or upload
)

// FeedRequest is a subscription's (or a poll's) feed: count events of items
// items each at rate events per second.
type FeedRequest struct {
	Count, Items, Rate uint32
}

// PollRequest is protobench.v1.PollRequest.
type PollRequest struct {
	FeedRequest
	StartNs    int64
	After, Max uint32
}

// ErrTooManyMessages ends a stream whose client sent more than
// MaxStreamMessages messages.
var ErrTooManyMessages = fmt.Errorf("more than %d messages on one stream", MaxStreamMessages)

// Validate checks count, items and rate against the limits.
func (f FeedRequest) Validate() error {
	if f.Count < 1 || f.Count > MaxCount {
		return invalid("count is %d, expected 1..=%d", f.Count, MaxCount)
	}
	if f.Items > MaxItems {
		return invalid("items is %d, expected 0..=%d", f.Items, MaxItems)
	}
	if f.Rate > MaxRate {
		return invalid("rate is %d, expected 0 (as fast as possible) ..=%d", f.Rate, MaxRate)
	}
	return nil
}

// Validate checks a poll: its feed, max, after and startNs.
func (p PollRequest) Validate() error {
	if err := p.FeedRequest.Validate(); err != nil {
		return err
	}
	if p.Max < 1 || p.Max > MaxPageEvents {
		return invalid("max is %d, expected 1..=%d", p.Max, MaxPageEvents)
	}
	if p.After > p.Count {
		return invalid("after is %d, beyond the feed's count %d", p.After, p.Count)
	}
	if p.StartNs < 0 || (p.Rate > 0 && p.StartNs == 0) {
		return invalid("startNs is %d, expected the feed's start in ns since the Unix epoch (> 0 when rate > 0)", p.StartNs)
	}
	return nil
}

// OffsetNs is how long after the feed's start event seq is due:
// floor((seq-1) * 1e9 / rate) ns, and 0 at rate 0.
func OffsetNs(seq, rate uint32) int64 {
	if rate == 0 || seq == 0 {
		return 0
	}
	// At most 999_999 * 1e9 < 2^63: exact in 64-bit integers.
	return int64((uint64(seq) - 1) * 1_000_000_000 / uint64(rate))
}

// NowNs is the wall clock in ns since the Unix epoch.
func NowNs() int64 { return time.Now().UnixNano() }

// ItemIndex is the dataset index of item j of event seq of a feed with
// items items per event: ((seq-1)*items + j) mod n.
func ItemIndex(seq, items, j uint32, n int) int {
	return int(((uint64(seq)-1)*uint64(items) + uint64(j)) % uint64(n))
}

// Schedule paces a subscription: it hands out the events' sequence numbers
// and stamps one at a time, each no earlier than its scheduled time. The
// schedule is anchored when the stream starts (a monotonic reading for
// waiting, the wall clock for the stamps); an event that is late is handed
// out at once with its scheduled stamp, so a client's latency counts the
// server's lag. At rate 0 each event is stamped when it is handed out.
type Schedule struct {
	req    FeedRequest
	base   time.Time // carries Go's monotonic reading
	baseNs int64
	// skew is the offset of the first event handed out: non-zero when an SSE
	// client resumes after Last-Event-ID, whose next event is due at once.
	skew int64
	next uint32
}

// NewSchedule starts the feed of req (already validated) now, with the
// event after `after`.
func NewSchedule(req FeedRequest, after uint32) *Schedule {
	base := time.Now()
	return &Schedule{
		req:    req,
		base:   base,
		baseNs: base.UnixNano(),
		skew:   OffsetNs(after+1, req.Rate),
		next:   after + 1,
	}
}

// Count is the number of events the feed ends with.
func (s *Schedule) Count() uint32 { return s.req.Count }

// Next waits until the next event is due and returns its seq and stamp;
// ok is false after the last event or when ctx ends first.
func (s *Schedule) Next(ctx context.Context) (seq uint32, stampNs int64, ok bool) {
	if s.next > s.req.Count {
		return 0, 0, false
	}
	seq = s.next
	if s.req.Rate == 0 {
		stampNs = NowNs()
	} else {
		offset := OffsetNs(seq, s.req.Rate) - s.skew
		if wait := time.Until(s.base.Add(time.Duration(offset))); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return 0, 0, false
			}
		}
		stampNs = s.baseNs + offset
	}
	s.next++
	return seq, stampNs, true
}

// PageEvent is one event of a poll page: its seq and stamp.
type PageEvent struct {
	Seq     uint32
	StampNs int64
}

// PollPage plans the page a poll gets at nowNs: the events after After that
// are due (every one at rate 0), at most Max of them and at most
// MaxPageItems items in all (but at least one due event); done is true when
// the page holds the last event (or After is the last). At rate 0 the
// events are stamped nowNs. p must be valid.
func PollPage(p PollRequest, nowNs int64) (events []PageEvent, done bool) {
	limit := p.Max
	if p.Items > 0 {
		limit = min(limit, max(MaxPageItems/p.Items, 1))
	}
	last := min(p.Count, p.After+limit)
	for seq := p.After + 1; seq <= last; seq++ {
		stamp := nowNs
		if p.Rate > 0 {
			stamp = p.StartNs + OffsetNs(seq, p.Rate)
			if stamp > nowNs {
				break
			}
		}
		events = append(events, PageEvent{Seq: seq, StampNs: stamp})
	}
	done = p.After == p.Count || (len(events) > 0 && events[len(events)-1].Seq == p.Count)
	return events, done
}

// FNVOffset is 32-bit FNV-1a's offset basis.
const FNVOffset uint32 = 0x811C9DC5

// Tally is an upload's running summary.
type Tally struct {
	Count    uint32
	Bytes    uint64
	Checksum uint32
}

// NewTally is the summary of no messages.
func NewTally() Tally { return Tally{Checksum: FNVOffset} }

// Add counts one message's payload; it refuses the one past MaxStreamMessages.
func (t *Tally) Add(payload string) error {
	if t.Count >= MaxStreamMessages {
		return ErrTooManyMessages
	}
	t.Count++
	t.Bytes += uint64(len(payload))
	h := t.Checksum
	for i := 0; i < len(payload); i++ {
		h ^= uint32(payload[i])
		h *= 0x01000193
	}
	t.Checksum = h
	return nil
}

// ParseFeedQuery reads an SSE subscription's query (count, items, rate) and
// validates it.
func ParseFeedQuery(rawQuery string) (FeedRequest, error) {
	v, err := parseQuery(rawQuery, []string{"count", "items", "rate"})
	if err != nil {
		return FeedRequest{}, err
	}
	f, err := feedOf(v)
	if err != nil {
		return FeedRequest{}, err
	}
	return f, f.Validate()
}

// ParsePollQuery reads a poll's query (count, items, rate, startNs, after,
// max) and validates it.
func ParsePollQuery(rawQuery string) (PollRequest, error) {
	v, err := parseQuery(rawQuery, []string{"count", "items", "rate", "startNs", "after", "max"})
	if err != nil {
		return PollRequest{}, err
	}
	f, err := feedOf(v)
	if err != nil {
		return PollRequest{}, err
	}
	p := PollRequest{FeedRequest: f}
	if v[3] > 1<<63-1 {
		return PollRequest{}, invalid("startNs is %d, too large", v[3])
	}
	p.StartNs = int64(v[3])
	if p.After, err = u32("after", v[4]); err != nil {
		return PollRequest{}, err
	}
	if p.Max, err = u32("max", v[5]); err != nil {
		return PollRequest{}, err
	}
	return p, p.Validate()
}

func feedOf(v []uint64) (f FeedRequest, err error) {
	if f.Count, err = u32("count", v[0]); err != nil {
		return
	}
	if f.Items, err = u32("items", v[1]); err != nil {
		return
	}
	f.Rate, err = u32("rate", v[2])
	return
}

func u32(name string, v uint64) (uint32, error) {
	if v > 1<<32-1 {
		return 0, invalid("%s is %d, too large", name, v)
	}
	return uint32(v), nil
}

// parseQuery reads the query parameters named names, each a decimal
// integer; a missing one is 0. Unknown, repeated or non-integer parameters
// are invalid input.
func parseQuery(rawQuery string, names []string) ([]uint64, error) {
	values := make([]uint64, len(names))
	seen := make([]bool, len(names))
	for pair := range strings.SplitSeq(rawQuery, "&") {
		if pair == "" {
			continue
		}
		name, value, _ := strings.Cut(pair, "=")
		i := -1
		for k, n := range names {
			if n == name {
				i = k
			}
		}
		if i < 0 {
			return nil, invalid("unknown query parameter %q; expected %s", truncate(name, 40), strings.Join(names, ", "))
		}
		if seen[i] {
			return nil, invalid("query parameter %s is given twice", name)
		}
		seen[i] = true
		n, err := strconv.ParseUint(value, 10, 64)
		if err != nil || value == "" || strings.Trim(value, "0123456789") != "" {
			return nil, invalid("query parameter %s is %q, expected a non-negative decimal integer", name, truncate(value, 40))
		}
		values[i] = n
	}
	return values, nil
}

// truncate cuts s to at most n runes.
func truncate(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// FeedEvent builds event seq of a feed with items items per event, stamped
// stampNs, from the dataset (a fresh copy of each item, built when sent).
func (c *Core) FeedEvent(seq, items uint32, stampNs int64) model.FeedEvent {
	ev := model.FeedEvent{Seq: seq, ScheduledNs: stampNs, Items: make([]model.Item, items)}
	for j := range items {
		ev.Items[j] = c.Data.Items[ItemIndex(seq, items, j, len(c.Data.Items))]
	}
	return ev
}

// Poll answers a poll (already validated) at nowNs with its JSON-form page.
func (c *Core) Poll(p PollRequest, nowNs int64) model.FeedPage {
	events, done := PollPage(p, nowNs)
	page := model.FeedPage{Events: make([]model.FeedEvent, len(events)), Done: done}
	for i, e := range events {
		page.Events[i] = c.FeedEvent(e.Seq, p.Items, e.StampNs)
	}
	return page
}
