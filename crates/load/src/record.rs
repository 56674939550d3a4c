//! Recording: one set of HDR histograms per engine thread, no lock on the hot
//! path, merged once at the end. Nothing here keeps individual samples.

use hdrhistogram::Histogram;
use protobench_model::load::{ErrorCount, ErrorKind, LatencySummary, StatusCount};

/// A latency histogram in nanoseconds, 1 us to 1 h, 3 significant digits
/// (the settings every generator shares: `protobench_model::hdr`).
pub(crate) fn histogram() -> Histogram<u64> {
    protobench_model::hdr::latency_histogram()
}

/// The summary of a histogram.
pub(crate) fn summary(h: &Histogram<u64>) -> LatencySummary {
    LatencySummary::of(h)
}

/// Errors by kind: count and the first message, in a fixed array indexed
/// by kind (no map, no allocation after a kind's first message).
#[derive(Debug, Default)]
pub(crate) struct Errors([(u64, Option<String>); ErrorKind::ALL.len()]);

impl Errors {
    pub(crate) fn add(&mut self, kind: ErrorKind, message: &str) {
        let slot = &mut self.0[kind as usize];
        slot.0 += 1;
        if slot.1.is_none() {
            slot.1 = Some(message.to_owned());
        }
    }

    pub(crate) fn merge(&mut self, other: Errors) {
        for (mine, (count, sample)) in self.0.iter_mut().zip(other.0) {
            mine.0 += count;
            if mine.1.is_none() {
                mine.1 = sample;
            }
        }
    }

    pub(crate) fn total(&self) -> u64 {
        self.0.iter().map(|(c, _)| c).sum()
    }

    /// Most frequent first.
    pub(crate) fn into_counts(self) -> Vec<ErrorCount> {
        let mut v: Vec<ErrorCount> = ErrorKind::ALL
            .into_iter()
            .zip(self.0)
            .filter(|(_, (count, _))| *count > 0)
            .map(|(kind, (count, sample))| ErrorCount {
                kind,
                count,
                sample: sample.unwrap_or_default(),
            })
            .collect();
        v.sort_by(|a, b| b.count.cmp(&a.count).then(a.kind.cmp(&b.kind)));
        v
    }
}

/// The highest HTTP status counted under its own code (three digits).
const MAX_HTTP_STATUS: usize = 999;
/// The highest gRPC status code; higher ones count as UNKNOWN (2).
const MAX_GRPC_STATUS: usize = 16;

/// The status of a call that got a response: its HTTP status and, for a
/// response read as gRPC, its `grpc-status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CallStatus {
    pub(crate) http: u16,
    pub(crate) grpc: Option<u32>,
}

/// Calls by HTTP status and by gRPC status: fixed arrays of counters, one
/// increment per call, merged at the end.
#[derive(Debug)]
pub(crate) struct StatusCounts {
    http: Box<[u64; MAX_HTTP_STATUS + 1]>,
    grpc: [u64; MAX_GRPC_STATUS + 1],
}

impl Default for StatusCounts {
    fn default() -> StatusCounts {
        StatusCounts {
            http: Box::new([0; MAX_HTTP_STATUS + 1]),
            grpc: [0; MAX_GRPC_STATUS + 1],
        }
    }
}

impl StatusCounts {
    pub(crate) fn add(&mut self, status: CallStatus) {
        self.http[usize::from(status.http).min(MAX_HTTP_STATUS)] += 1;
        if let Some(code) = status.grpc {
            let i = code as usize;
            self.grpc[if i > MAX_GRPC_STATUS { 2 } else { i }] += 1;
        }
    }

    pub(crate) fn merge(&mut self, other: &StatusCounts) {
        for (a, b) in self.http.iter_mut().zip(other.http.iter()) {
            *a += b;
        }
        for (a, b) in self.grpc.iter_mut().zip(other.grpc.iter()) {
            *a += b;
        }
    }

    /// `(http, grpc)`: the codes seen, lowest first.
    pub(crate) fn into_counts(self) -> (Vec<StatusCount>, Vec<StatusCount>) {
        let list = |counts: &[u64]| {
            counts
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(code, &count)| StatusCount {
                    code: code as u32,
                    count,
                })
                .collect()
        };
        (list(&self.http[..]), list(&self.grpc[..]))
    }
}

/// One second of one thread, sent to the coordinator.
#[derive(Debug)]
pub(crate) struct SecondReport {
    pub(crate) second: u32,
    pub(crate) successes: u64,
    pub(crate) errors: u64,
    pub(crate) latency: Option<Histogram<u64>>,
    /// Callers of the thread active when the second closed.
    pub(crate) users: u32,
}

/// What one engine thread recorded.
#[derive(Debug)]
pub(crate) struct Recorder {
    pub(crate) latency: Histogram<u64>,
    pub(crate) service: Histogram<u64>,
    pub(crate) lag: Histogram<u64>,
    pub(crate) connect: Histogram<u64>,
    pub(crate) connections_opened: u64,
    /// Connections begun in the measured window.
    pub(crate) connects_measured: u64,
    /// Successful measured calls: time spent getting a connection, summed.
    pub(crate) connect_in_calls_ns: u64,
    /// Successful measured calls: corrected latency, summed.
    pub(crate) latency_sum_ns: u64,
    pub(crate) errors: Errors,
    /// Latency of failed measured calls; created at the first failure.
    pub(crate) error_latency: Option<Histogram<u64>>,
    /// Measured calls that got a response, by status.
    pub(crate) statuses: StatusCounts,
    pub(crate) successes: u64,
    pub(crate) failures: u64,
    /// Measured calls started.
    pub(crate) started: u64,
    /// Open loop: measured calls that found every caller of the thread busy at
    /// their intended start (the concurrency limit, not the generator, delayed them).
    pub(crate) starved: u64,
    /// Completion time of the last measured call, since the run's start.
    pub(crate) last_completion_ns: u64,
    /// Byte counters when the first measured call started.
    pub(crate) bytes_at_measure_start: Option<(u64, u64)>,
    /// Callers that have joined (all of them at once without a schedule).
    pub(crate) users: u32,
    second: u32,
    second_successes: u64,
    second_errors: u64,
    second_latency: Option<Histogram<u64>>,
    warmup_ns: u64,
}

impl Recorder {
    pub(crate) fn new(warmup_ns: u64) -> Recorder {
        Recorder {
            latency: histogram(),
            service: histogram(),
            lag: histogram(),
            connect: histogram(),
            connections_opened: 0,
            connects_measured: 0,
            connect_in_calls_ns: 0,
            latency_sum_ns: 0,
            errors: Errors::default(),
            error_latency: None,
            statuses: StatusCounts::default(),
            successes: 0,
            failures: 0,
            started: 0,
            starved: 0,
            last_completion_ns: 0,
            bytes_at_measure_start: None,
            users: 0,
            second: 0,
            second_successes: 0,
            second_errors: 0,
            second_latency: None,
            warmup_ns,
        }
    }

    /// The second of the measured window that `at_ns` (since the run's start) falls in.
    fn second_of(&self, at_ns: u64) -> u32 {
        (at_ns.saturating_sub(self.warmup_ns) / 1_000_000_000) as u32
    }

    /// Closes every second before the one containing `at_ns`, returning them.
    pub(crate) fn roll_to(&mut self, at_ns: u64) -> Vec<SecondReport> {
        let target = self.second_of(at_ns);
        let mut out = Vec::new();
        while self.second < target {
            out.push(self.take_second());
            self.second += 1;
        }
        out
    }

    /// Closes the current second too (at the end of the run).
    pub(crate) fn finish_seconds(&mut self) -> SecondReport {
        self.take_second()
    }

    fn take_second(&mut self) -> SecondReport {
        let r = SecondReport {
            second: self.second,
            successes: self.second_successes,
            errors: self.second_errors,
            latency: self.second_latency.take(),
            users: self.users,
        };
        self.second_successes = 0;
        self.second_errors = 0;
        r
    }

    /// Records a successful measured call.
    pub(crate) fn success(&mut self, intended_ns: u64, started_ns: u64, ended_ns: u64) {
        let latency = ended_ns.saturating_sub(intended_ns);
        self.latency.saturating_record(latency);
        self.service.saturating_record(ended_ns.saturating_sub(started_ns));
        self.successes += 1;
        self.second_successes += 1;
        self.second_latency
            .get_or_insert_with(histogram)
            .saturating_record(latency);
        self.last_completion_ns = self.last_completion_ns.max(ended_ns);
    }

    /// Adds a successful measured call's connect time and latency to the
    /// sums behind `connect_share`.
    pub(crate) fn connect_in_call(&mut self, connect_ns: u64, latency_ns: u64) {
        self.connect_in_calls_ns += connect_ns.min(latency_ns);
        self.latency_sum_ns += latency_ns;
    }

    /// Records the status of a measured call that got a response.
    pub(crate) fn status(&mut self, status: CallStatus) {
        self.statuses.add(status);
    }

    /// Records a failed measured call.
    pub(crate) fn failure(&mut self, kind: ErrorKind, message: &str, intended_ns: u64, ended_ns: u64) {
        self.errors.add(kind, message);
        self.error_latency
            .get_or_insert_with(histogram)
            .saturating_record(ended_ns.saturating_sub(intended_ns));
        self.failures += 1;
        self.second_errors += 1;
        self.last_completion_ns = self.last_completion_ns.max(ended_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_keep_the_first_message_and_sort_by_count() {
        let mut e = Errors::default();
        e.add(ErrorKind::Reset, "first reset");
        e.add(ErrorKind::HttpStatus, "http status 500 (expected 200)");
        e.add(ErrorKind::HttpStatus, "http status 503 (expected 200)");
        let mut other = Errors::default();
        other.add(ErrorKind::Reset, "second reset");
        e.merge(other);
        let v = e.into_counts();
        assert_eq!(
            (v[0].kind, v[0].count, v[0].sample.as_str()),
            (ErrorKind::Reset, 2, "first reset")
        );
        assert_eq!(
            (v[1].kind, v[1].count, v[1].sample.as_str()),
            (ErrorKind::HttpStatus, 2, "http status 500 (expected 200)")
        );
    }

    #[test]
    fn statuses_count_per_code_and_merge() {
        let mut a = StatusCounts::default();
        for (http, grpc) in [(200, None), (404, None), (200, None), (500, None)] {
            a.add(CallStatus { http, grpc });
        }
        let mut b = StatusCounts::default();
        for grpc in [0, 14, 14, 99] {
            b.add(CallStatus {
                http: 200,
                grpc: Some(grpc),
            });
        }
        a.merge(&b);
        let (http, grpc) = a.into_counts();
        let pairs = |v: Vec<StatusCount>| v.into_iter().map(|s| (s.code, s.count)).collect::<Vec<_>>();
        assert_eq!(pairs(http), vec![(200, 6), (404, 1), (500, 1)]);
        // 99 is outside 0..=16: counted as UNKNOWN (2).
        assert_eq!(pairs(grpc), vec![(0, 1), (2, 1), (14, 2)]);
    }

    #[test]
    fn failed_calls_get_their_own_latency_histogram() {
        let mut r = Recorder::new(0);
        r.success(0, 0, 1_000_000);
        assert!(r.error_latency.is_none(), "no failure, no histogram");
        r.failure(ErrorKind::Timeout, "no response within 5ms", 1_000_000, 6_000_000);
        let h = r.error_latency.as_ref().expect("created by the failure");
        assert_eq!(h.len(), 1);
        assert!(h.max().abs_diff(5_000_000) <= 5_000, "{}", h.max());
        assert_eq!(r.latency.len(), 1, "the failure is not in the success histogram");
    }

    #[test]
    fn seconds_roll_over_including_empty_ones() {
        let mut r = Recorder::new(1_000_000_000);
        r.success(1_000_000_000, 1_000_000_000, 1_100_000_000);
        let closed = r.roll_to(3_500_000_000);
        let seen: Vec<_> = closed.iter().map(|s| (s.second, s.successes)).collect();
        assert_eq!(seen, vec![(0, 1), (1, 0)]);
        assert_eq!(r.finish_seconds().second, 2);
    }

    #[test]
    fn histogram_spans_microseconds_to_minutes_with_3_digits() {
        let mut h = histogram();
        h.record(1_234_567).unwrap();
        h.record(600 * 1_000_000_000).unwrap();
        let s = summary(&h);
        assert!(s.min_ns.abs_diff(1_234_567) <= 1_235, "{}", s.min_ns);
        assert!(s.max_ns.abs_diff(600_000_000_000) <= 600_000_000, "{}", s.max_ns);
    }
}
