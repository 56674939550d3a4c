package core

import (
	"context"
	"errors"
	"hash/fnv"
	"strings"
	"testing"
	"time"
)

func TestOffsetNs(t *testing.T) {
	for _, tc := range []struct {
		seq, rate uint32
		want      int64
	}{
		{1, 1000, 0},
		{2, 1000, 1_000_000},
		{4, 3, 1_000_000_000},
		{2, 3, 333_333_333}, // floor
		{5, 0, 0},
		{1_000_000, 1, 999_999 * 1_000_000_000},
	} {
		if got := OffsetNs(tc.seq, tc.rate); got != tc.want {
			t.Errorf("OffsetNs(%d, %d) = %d, want %d", tc.seq, tc.rate, got, tc.want)
		}
	}
}

func TestFeedValidation(t *testing.T) {
	for _, tc := range []struct {
		f    FeedRequest
		want string
	}{
		{FeedRequest{Count: 0}, "count is 0, expected 1..=1000000"},
		{FeedRequest{Count: 1_000_001}, "count is 1000001, expected 1..=1000000"},
		{FeedRequest{Count: 1, Items: 1396}, "items is 1396, expected 0..=1395"},
		{FeedRequest{Count: 1, Rate: 1_000_001}, "rate is 1000001, expected 0 (as fast as possible) ..=1000000"},
		{FeedRequest{Count: 1_000_000, Items: 1395, Rate: 1_000_000}, ""},
	} {
		err := tc.f.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.f, err, tc.want)
		}
		if err != nil && KindOf(err) != Invalid {
			t.Errorf("%+v: kind %d, want Invalid", tc.f, KindOf(err))
		}
	}
	for _, tc := range []struct {
		p    PollRequest
		want string
	}{
		{PollRequest{FeedRequest: FeedRequest{Count: 5}, Max: 0}, "max is 0, expected 1..=1000"},
		{PollRequest{FeedRequest: FeedRequest{Count: 5}, Max: 1001}, "max is 1001, expected 1..=1000"},
		{PollRequest{FeedRequest: FeedRequest{Count: 5}, Max: 1, After: 6}, "after is 6, beyond the feed's count 5"},
		{PollRequest{FeedRequest: FeedRequest{Count: 5, Rate: 10}, Max: 1}, "startNs is 0, expected"},
		{PollRequest{FeedRequest: FeedRequest{Count: 5, Rate: 10}, Max: 1, StartNs: 1}, ""},
	} {
		err := tc.p.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("%+v: got %v, want %q", tc.p, err, tc.want)
		}
	}
}

func TestParseQuery(t *testing.T) {
	f, err := ParseFeedQuery("count=3&items=2")
	if err != nil || f != (FeedRequest{Count: 3, Items: 2}) {
		t.Errorf("got %+v, %v", f, err)
	}
	for q, want := range map[string]string{
		"count=3&count=4":               "query parameter count is given twice",
		"count=3&x=1":                   `unknown query parameter "x"; expected count, items, rate`,
		"count=-1":                      `query parameter count is "-1", expected a non-negative decimal integer`,
		"count=":                        `query parameter count is "", expected a non-negative decimal integer`,
		"count=1e3":                     `query parameter count is "1e3", expected a non-negative decimal integer`,
		"count=4294967296":              "count is 4294967296, too large",
		"":                              "count is 0, expected 1..=1000000",
		"count=1&rate=+5":               `query parameter rate is "+5", expected a non-negative decimal integer`,
		"count=99999999999999999999999": `query parameter count is "99999999999999999999999", expected a non-negative decimal integer`,
	} {
		if _, err := ParseFeedQuery(q); err == nil || err.Error() != want {
			t.Errorf("%q: got %v, want %q", q, err, want)
		}
	}
	p, err := ParsePollQuery("count=10&items=1&rate=5&startNs=100&after=2&max=3")
	if err != nil || p != (PollRequest{FeedRequest: FeedRequest{Count: 10, Items: 1, Rate: 5}, StartNs: 100, After: 2, Max: 3}) {
		t.Errorf("got %+v, %v", p, err)
	}
}

func TestPollPage(t *testing.T) {
	// Rate 0: every event after `after`, at most max, stamped now.
	events, done := PollPage(PollRequest{FeedRequest: FeedRequest{Count: 5}, After: 3, Max: 10}, 77)
	if len(events) != 2 || events[0] != (PageEvent{4, 77}) || events[1] != (PageEvent{5, 77}) || !done {
		t.Errorf("rate 0: %v done=%v", events, done)
	}
	// A page stops before the event that would pass 16,384 items.
	events, done = PollPage(PollRequest{FeedRequest: FeedRequest{Count: 100, Items: 1395}, Max: 1000}, 1)
	if len(events) != 11 || done {
		t.Errorf("items cap: %d events, done=%v; want 11, false", len(events), done)
	}
	// Rate > 0: only the due events, stamped by the schedule.
	start := int64(1_000_000_000)
	events, done = PollPage(PollRequest{FeedRequest: FeedRequest{Count: 10, Rate: 10}, StartNs: start, Max: 10}, start+250_000_000)
	if len(events) != 3 || events[2] != (PageEvent{3, start + 200_000_000}) || done {
		t.Errorf("rate 10: %v done=%v", events, done)
	}
	// A poll after the last event is done, with no events.
	if events, done = PollPage(PollRequest{FeedRequest: FeedRequest{Count: 4}, After: 4, Max: 1}, 1); len(events) != 0 || !done {
		t.Errorf("after the end: %v done=%v", events, done)
	}
}

func TestTally(t *testing.T) {
	tally := NewTally()
	ref := fnv.New32a()
	for _, p := range []string{"abc", "", "héllo", strings.Repeat("x", 1000)} {
		if err := tally.Add(p); err != nil {
			t.Fatal(err)
		}
		ref.Write([]byte(p))
	}
	if tally.Count != 4 || tally.Bytes != 3+6+1000 || tally.Checksum != ref.Sum32() {
		t.Errorf("got %+v, want checksum %d", tally, ref.Sum32())
	}
	tally.Count = MaxStreamMessages - 1
	if err := tally.Add("a"); err != nil {
		t.Errorf("message %d refused: %v", MaxStreamMessages, err)
	}
	if err := tally.Add("a"); !errors.Is(err, ErrTooManyMessages) {
		t.Errorf("message %d: got %v, want ErrTooManyMessages", MaxStreamMessages+1, err)
	}
}

func TestScheduleNeverEarly(t *testing.T) {
	// 5 events at 100/s: each handed out no earlier than its stamp, and the
	// stamps exactly 10 ms apart.
	s := NewSchedule(FeedRequest{Count: 5, Rate: 100}, 0)
	var first int64
	for want := uint32(1); want <= 5; want++ {
		seq, stamp, ok := s.Next(context.Background())
		if !ok || seq != want {
			t.Fatalf("event %d: got seq %d ok=%v", want, seq, ok)
		}
		if now := time.Now().UnixNano(); now < stamp {
			t.Errorf("event %d handed out %d ns before its stamp", seq, stamp-now)
		}
		if seq == 1 {
			first = stamp
		} else if stamp-first != int64(seq-1)*10_000_000 {
			t.Errorf("event %d stamped %d ns after the first, want %d", seq, stamp-first, int64(seq-1)*10_000_000)
		}
	}
	if _, _, ok := s.Next(context.Background()); ok {
		t.Error("an event after the last")
	}
	// Resuming after event 3 of a 1/s feed: event 4 is due at once (so even
	// an ended context gets it), event 5 a second later (so it does not).
	s = NewSchedule(FeedRequest{Count: 5, Rate: 1}, 3)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if seq, _, ok := s.Next(ended); !ok || seq != 4 {
		t.Errorf("resume: got %d ok=%v, want 4 at once", seq, ok)
	}
	if _, _, ok := s.Next(ended); ok {
		t.Error("event 5 handed out before its time")
	}
}
