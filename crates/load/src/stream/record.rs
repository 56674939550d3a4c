//! Recording a streaming run: one recorder per engine thread (no lock on
//! the hot path), merged once at the end, as for unary calls.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use protobench_model::stream::{StreamCounts, StreamEndCount, StreamEndKind};

use crate::record::histogram;

/// How one stream ended: its kind, a status or close code, what was said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) kind: StreamEndKind,
    pub(crate) code: Option<i64>,
    pub(crate) message: String,
}

impl Outcome {
    /// The clean end.
    pub(crate) fn clean() -> Outcome {
        Outcome::new(StreamEndKind::Clean, "")
    }

    pub(crate) fn new(kind: StreamEndKind, message: impl Into<String>) -> Outcome {
        Outcome {
            kind,
            code: None,
            message: message.into(),
        }
    }

    pub(crate) fn coded(kind: StreamEndKind, code: i64, message: impl Into<String>) -> Outcome {
        Outcome {
            kind,
            code: Some(code),
            message: message.into(),
        }
    }
}

impl From<crate::driver::CallError> for Outcome {
    fn from(e: crate::driver::CallError) -> Outcome {
        use protobench_model::load::ErrorKind as K;
        let kind = match e.kind {
            K::Connect => StreamEndKind::Connect,
            K::Timeout => StreamEndKind::Timeout,
            _ => StreamEndKind::Broken,
        };
        Outcome::new(kind, e.message)
    }
}

/// What one engine thread measured.
pub(crate) struct StreamRecorder {
    pub(crate) latency: Histogram<u64>,
    pub(crate) setup: Histogram<u64>,
    pub(crate) first: Histogram<u64>,
    pub(crate) lag: Histogram<u64>,
    pub(crate) sent: u64,
    pub(crate) received: u64,
    pub(crate) deferred: u64,
    pub(crate) counts: StreamCounts,
    open: u64,
    ends: BTreeMap<(StreamEndKind, Option<i64>), (u64, String)>,
}

impl Default for StreamRecorder {
    fn default() -> Self {
        StreamRecorder {
            latency: histogram(),
            setup: histogram(),
            first: histogram(),
            lag: histogram(),
            sent: 0,
            received: 0,
            deferred: 0,
            counts: StreamCounts::default(),
            open: 0,
            ends: BTreeMap::new(),
        }
    }
}

/// Records a value, clamped into the histogram's range (a negative
/// latency, from clocks a microsecond apart, counts as the lowest value).
pub(crate) fn record_ns(h: &mut Histogram<u64>, ns: i64) {
    let v = ns.max(0) as u64;
    h.saturating_record(v.max(h.low()));
}

impl StreamRecorder {
    /// A stream begins.
    pub(crate) fn opened(&mut self) {
        self.counts.opened += 1;
        self.open += 1;
        self.counts.max_open = self.counts.max_open.max(self.open);
    }

    /// A stream ended so.
    pub(crate) fn ended(&mut self, outcome: &Outcome) {
        self.open = self.open.saturating_sub(1);
        match outcome.kind {
            StreamEndKind::Clean => self.counts.clean += 1,
            StreamEndKind::Cut => self.counts.cut += 1,
            _ => self.counts.failed += 1,
        }
        let slot = self
            .ends
            .entry((outcome.kind, outcome.code))
            .or_insert_with(|| (0, outcome.message.clone()));
        slot.0 += 1;
    }

    /// Adds another thread's recording.
    pub(crate) fn merge(&mut self, other: StreamRecorder) {
        self.latency.add(&other.latency).expect("same bounds");
        self.setup.add(&other.setup).expect("same bounds");
        self.first.add(&other.first).expect("same bounds");
        self.lag.add(&other.lag).expect("same bounds");
        self.sent += other.sent;
        self.received += other.received;
        self.deferred += other.deferred;
        let c = &mut self.counts;
        c.opened += other.counts.opened;
        c.clean += other.counts.clean;
        c.failed += other.counts.failed;
        c.cut += other.counts.cut;
        // Threads run at the same time: their peaks add up (an upper bound).
        c.max_open += other.counts.max_open;
        for (key, (count, sample)) in other.ends {
            let slot = self.ends.entry(key).or_insert((0, sample));
            slot.0 += count;
        }
    }

    /// Each stream's end, most frequent first.
    pub(crate) fn end_counts(&self) -> Vec<StreamEndCount> {
        let mut ends: Vec<StreamEndCount> = self
            .ends
            .iter()
            .map(|(&(kind, code), (count, sample))| StreamEndCount {
                kind,
                code,
                count: *count,
                sample: sample.clone(),
            })
            .collect();
        ends.sort_by(|a, b| b.count.cmp(&a.count).then(a.kind.cmp(&b.kind)));
        ends
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_count_by_kind_and_code_keep_their_first_message_and_merge() {
        let mut a = StreamRecorder::default();
        for outcome in [
            Outcome::clean(),
            Outcome::coded(StreamEndKind::GrpcStatus, 14, "first"),
            Outcome::coded(StreamEndKind::GrpcStatus, 14, "second"),
            Outcome::coded(StreamEndKind::GrpcStatus, 8, "other code"),
        ] {
            a.opened();
            a.ended(&outcome);
        }
        let mut b = StreamRecorder::default();
        b.opened();
        b.opened();
        b.ended(&Outcome::clean());
        a.merge(b);
        let ends = a.end_counts();
        assert_eq!(
            ends.iter().map(|e| (e.kind, e.code, e.count)).collect::<Vec<_>>(),
            [
                (StreamEndKind::Clean, None, 2),
                (StreamEndKind::GrpcStatus, Some(14), 2),
                (StreamEndKind::GrpcStatus, Some(8), 1)
            ]
        );
        assert_eq!(ends[1].sample, "first");
        assert_eq!((a.counts.opened, a.counts.clean, a.counts.failed), (6, 2, 3));
        // One thread had 1 open at most (sequential), the other 2.
        assert_eq!(a.counts.max_open, 3);
    }

    #[test]
    fn negative_and_tiny_latencies_are_recorded_at_the_lowest_value() {
        let mut h = histogram();
        record_ns(&mut h, -5);
        record_ns(&mut h, 10);
        assert_eq!(h.len(), 2);
        // Both at the lowest value (1 us), within its HDR bucket.
        assert!(h.max() < 2_000, "{}", h.max());
    }
}
