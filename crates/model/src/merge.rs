//! Adding latency histograms from many generators, exactly.
//!
//! Each generator (an agent, `docs/distributed.md`) records into HDR
//! histograms with the same settings ([`crate::hdr::latency_histogram`]) and
//! corrects its own coordinated omission; the coordinator adds their
//! histograms bucket by bucket. With identical settings the buckets line up
//! one to one, so the sum is the histogram one process would have recorded
//! from every sample: no percentile is averaged and no bucket rounded.
//! Histograms with other settings are refused, not resampled.

use std::collections::BTreeMap;
use std::fmt;

use hdrhistogram::Histogram;

use crate::hdr::{EncodedHistogram, HIGHEST_NS, HdrError, LOWEST_NS, SIGNIFICANT_DIGITS, latency_histogram};
use crate::load::{
    AgentLane, EndReason, Environment, ErrorCount, Generator, IntervalHistogram, LatencySummary, LoadPlan, LoadResult,
    SCHEMA_VERSION, StatusCount, TimelinePoint,
};

/// The histograms of one generator's result that the coordinator adds
/// besides the latency one ([`crate::load::LoadResult::histogram`]); each
/// V2 + deflate, base64, with the shared settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LaneHistograms {
    /// Latency from the actual start (uncorrected).
    pub service: EncodedHistogram,
    /// Connection opening time.
    pub connect: EncodedHistogram,
    /// Schedule lag (open loop).
    pub lag: EncodedHistogram,
    /// Latency of failed calls, when any failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_latency: Option<EncodedHistogram>,
}

/// Why a histogram could not be added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeError {
    /// The histogram of `source` does not decode.
    Decode {
        /// Whose histogram (an agent's address).
        source: String,
        /// Why.
        error: HdrError,
    },
    /// The histogram of `source` was recorded with other settings.
    Settings {
        /// Whose histogram.
        source: String,
        /// Its settings, `lowest..highest, N digits`.
        found: String,
    },
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeError::Decode { source, error } => write!(f, "histogram from {source}: {error}"),
            MergeError::Settings { source, found } => write!(
                f,
                "histogram from {source} recorded with {found}: expected {LOWEST_NS}..{HIGHEST_NS} ns, \
                 {SIGNIFICANT_DIGITS} digits (every generator must use the same settings)"
            ),
        }
    }
}

impl std::error::Error for MergeError {}

/// Adds `h` into `acc` bucket for bucket after checking both have the
/// shared settings; `source` names `h` in an error.
pub fn add_exact(acc: &mut Histogram<u64>, h: &Histogram<u64>, source: &str) -> Result<(), MergeError> {
    let shared =
        |x: &Histogram<u64>| x.low() == LOWEST_NS && x.high() == HIGHEST_NS && x.sigfig() == SIGNIFICANT_DIGITS;
    if !shared(h) || !shared(acc) {
        let x = if shared(h) { &*acc } else { h };
        return Err(MergeError::Settings {
            source: source.to_owned(),
            found: format!("{}..{} ns, {} digits", x.low(), x.high(), x.sigfig()),
        });
    }
    // Same bounds and digits: the same bucket layout, so `add` cannot run
    // out of range and adds counts index by index.
    acc.add(h).map_err(|e| MergeError::Settings {
        source: source.to_owned(),
        found: format!("{e:?}"),
    })
}

/// Decodes `h` and adds it into `acc` ([`add_exact`]).
pub fn add_encoded(acc: &mut Histogram<u64>, h: &EncodedHistogram, source: &str) -> Result<(), MergeError> {
    if h.is_empty() {
        return Ok(());
    }
    let decoded = h.decode().map_err(|error| MergeError::Decode {
        source: source.to_owned(),
        error,
    })?;
    add_exact(acc, &decoded, source)
}

/// The coordinator's sum of interval histograms: one histogram per second
/// of the common measured window, and their total.
#[derive(Debug, Clone)]
pub struct IntervalSum {
    seconds: BTreeMap<u32, Histogram<u64>>,
}

impl Default for IntervalSum {
    fn default() -> Self {
        IntervalSum::new()
    }
}

impl IntervalSum {
    /// Nothing added yet.
    pub fn new() -> IntervalSum {
        IntervalSum {
            seconds: BTreeMap::new(),
        }
    }

    /// Adds `source`'s histogram of `second` (seconds since the common start).
    pub fn add(&mut self, second: u32, h: &EncodedHistogram, source: &str) -> Result<(), MergeError> {
        let acc = self.seconds.entry(second).or_insert_with(latency_histogram);
        add_encoded(acc, h, source)
    }

    /// The summed histogram of each second, in order.
    pub fn seconds(&self) -> impl Iterator<Item = (u32, &Histogram<u64>)> {
        self.seconds.iter().map(|(s, h)| (*s, h))
    }

    /// The sum of every second.
    pub fn total(&self) -> Histogram<u64> {
        let mut t = latency_histogram();
        for h in self.seconds.values() {
            // Every histogram here was made by `latency_histogram`.
            let _ = t.add(h);
        }
        t
    }
}

/// What the coordinator gathered from one agent.
#[derive(Debug, Clone)]
pub struct Lane {
    /// Its lane in the result, without the figures (filled in by [`merge_lanes`]).
    pub meta: AgentLane,
    /// Its seconds as streamed: the point and the histogram of each.
    pub seconds: Vec<(TimelinePoint, EncodedHistogram)>,
    /// Its final result and histograms; `None` when it failed before sending them.
    pub done: Option<(LoadResult, LaneHistograms)>,
}

/// The merged result of a distributed run: the finished agents' histograms
/// and counters added (never averaged), each agent's lane kept. An agent
/// that failed is named in its lane (`failure`) and the result is
/// `incomplete`; its figures (from the seconds it streamed) stay in its
/// lane only, so the merged figures are those of the agents that finished.
///
/// `plan` is the whole plan (what was asked of all agents), `started_at`
/// the common start of the measured window, `environment` the coordinator's.
// Longer than the ~120-line guide: after the lanes are added (`Sums`,
// `Totals`), the rest is one line per field of the merged result.
pub fn merge_lanes(
    plan: &LoadPlan,
    lanes: Vec<Lane>,
    started_at: String,
    environment: Environment,
) -> Result<LoadResult, MergeError> {
    let mut sums = Sums::default();
    let mut agents = Vec::with_capacity(lanes.len());
    let mut acc = Totals::default();
    let mut bound_reasons = Vec::new();
    let mut agent_intervals = Vec::new();
    for lane in lanes {
        agent_intervals.extend(lane.seconds.iter().map(|(p, h)| {
            (
                lane.meta.index,
                IntervalHistogram {
                    second: p.second,
                    histogram: h.clone(),
                },
            )
        }));
        let mut meta = lane.meta;
        let Some((r, other)) = lane.done else {
            agents.push(failed_lane(meta, &lane.seconds)?);
            continue;
        };
        sums.add(&r, &other, &lane.seconds, &meta.agent)?;
        acc.add(&r);
        if r.generator.generator_bound {
            bound_reasons.push(format!(
                "agent {} ({}): {}",
                meta.index,
                meta.agent,
                r.generator.reason.as_deref().unwrap_or("generator-bound")
            ));
        }
        meta.calls = r.calls;
        meta.successes = r.successes;
        meta.rate = r.rate;
        meta.latency = r.latency;
        meta.generator = r.generator.clone();
        agents.push(meta);
    }
    let Sums {
        latency,
        service,
        connect,
        lag,
        error_latency,
        seconds,
        mut points,
        mut errors,
        http,
        grpc,
    } = sums;
    for (second, h) in seconds.seconds() {
        if let Some(p) = points.get_mut(&second)
            && !h.is_empty()
        {
            p.p50_ns = h.value_at_quantile(0.5);
            p.p95_ns = h.value_at_quantile(0.95);
            p.p99_ns = h.value_at_quantile(0.99);
        }
    }
    errors.sort_by_key(|e| std::cmp::Reverse(e.count));
    let to_counts = |m: BTreeMap<u32, u64>| m.into_iter().map(|(code, count)| StatusCount { code, count }).collect();
    let incomplete = agents.iter().any(|a| a.failure.is_some());
    let secs = acc.duration_ns.max(1) as f64 / 1e9;
    let calls = acc.successes + acc.failures;
    let per_call = |b: u64| if calls == 0 { 0.0 } else { b as f64 / calls as f64 };
    Ok(LoadResult {
        schema_version: SCHEMA_VERSION,
        plan: plan.clone(),
        environment,
        started_at,
        duration_ns: acc.duration_ns.max(1),
        end_reason: acc.end_reason.unwrap_or(EndReason::Interrupted),
        calls,
        successes: acc.successes,
        rate: acc.successes as f64 / secs,
        started_rate: acc.started_rate,
        latency: LatencySummary::of(&latency),
        service_time: LatencySummary::of(&service),
        connect: LatencySummary::of(&connect),
        connections_opened: acc.connections_opened,
        connects_per_second: acc.connects_per_second,
        // Weighted by each agent's successes (its latency sum is not sent).
        connect_share: if acc.successes == 0 {
            0.0
        } else {
            acc.connect_share_weighted / acc.successes as f64
        },
        errors,
        success_percent: if calls == 0 {
            0.0
        } else {
            acc.successes as f64 * 100.0 / calls as f64
        },
        http_statuses: to_counts(http),
        grpc_statuses: to_counts(grpc),
        error_latency: error_latency.as_ref().map(LatencySummary::of),
        bytes_sent: acc.bytes_sent,
        bytes_received: acc.bytes_received,
        bytes_sent_per_call: per_call(acc.bytes_sent),
        bytes_received_per_call: per_call(acc.bytes_received),
        generator: Generator {
            threads: acc.threads,
            cpu_ns: acc.cpu_ns,
            cpu_ns_per_call: if calls == 0 {
                0.0
            } else {
                acc.cpu_ns as f64 / calls as f64
            },
            cpu_utilization: acc.cpu_utilization_max,
            schedule_lag: LatencySummary::of(&lag),
            generator_bound: !bound_reasons.is_empty(),
            reason: (!bound_reasons.is_empty()).then(|| bound_reasons.join("; ")),
        },
        timeline: points.into_values().collect(),
        histogram: EncodedHistogram::encode(&latency),
        intervals: seconds
            .seconds()
            .map(|(second, h)| IntervalHistogram {
                second,
                histogram: EncodedHistogram::encode(h),
            })
            .collect(),
        agents,
        incomplete,
        agent_intervals,
    })
}

/// A failed agent's lane: what it streamed before it failed.
fn failed_lane(mut meta: AgentLane, seconds: &[(TimelinePoint, EncodedHistogram)]) -> Result<AgentLane, MergeError> {
    let mut h = latency_histogram();
    for (p, e) in seconds {
        add_encoded(&mut h, e, &meta.agent)?;
        meta.successes += p.successes;
        meta.calls += p.successes + p.errors;
    }
    meta.latency = LatencySummary::of(&h);
    meta.rate = meta.successes as f64 / (seconds.len().max(1) as f64);
    Ok(meta)
}

/// The histograms, seconds, errors and statuses added over finished agents.
struct Sums {
    latency: Histogram<u64>,
    service: Histogram<u64>,
    connect: Histogram<u64>,
    lag: Histogram<u64>,
    error_latency: Option<Histogram<u64>>,
    seconds: IntervalSum,
    points: BTreeMap<u32, TimelinePoint>,
    errors: Vec<ErrorCount>,
    http: BTreeMap<u32, u64>,
    grpc: BTreeMap<u32, u64>,
}

impl Default for Sums {
    fn default() -> Self {
        Sums {
            latency: latency_histogram(),
            service: latency_histogram(),
            connect: latency_histogram(),
            lag: latency_histogram(),
            error_latency: None,
            seconds: IntervalSum::new(),
            points: BTreeMap::new(),
            errors: Vec::new(),
            http: BTreeMap::new(),
            grpc: BTreeMap::new(),
        }
    }
}

impl Sums {
    /// Adds a finished agent (`source`): its result, other histograms and streamed seconds.
    fn add(
        &mut self,
        r: &LoadResult,
        other: &LaneHistograms,
        seconds: &[(TimelinePoint, EncodedHistogram)],
        source: &str,
    ) -> Result<(), MergeError> {
        add_encoded(&mut self.latency, &r.histogram, source)?;
        add_encoded(&mut self.service, &other.service, source)?;
        add_encoded(&mut self.connect, &other.connect, source)?;
        add_encoded(&mut self.lag, &other.lag, source)?;
        if let Some(e) = &other.error_latency {
            add_encoded(self.error_latency.get_or_insert_with(latency_histogram), e, source)?;
        }
        for (p, h) in seconds {
            self.seconds.add(p.second, h, source)?;
            let m = self.points.entry(p.second).or_insert(TimelinePoint {
                second: p.second,
                successes: 0,
                errors: 0,
                p50_ns: 0,
                p95_ns: 0,
                p99_ns: 0,
                users: 0,
            });
            m.successes += p.successes;
            m.errors += p.errors;
            m.users += p.users;
        }
        for e in &r.errors {
            match self.errors.iter_mut().find(|x| x.kind == e.kind) {
                Some(x) => x.count += e.count,
                None => self.errors.push(e.clone()),
            }
        }
        for s in &r.http_statuses {
            *self.http.entry(s.code).or_default() += s.count;
        }
        for s in &r.grpc_statuses {
            *self.grpc.entry(s.code).or_default() += s.count;
        }
        Ok(())
    }
}

/// The counters added over finished agents.
#[derive(Default)]
struct Totals {
    successes: u64,
    failures: u64,
    started_rate: f64,
    connections_opened: u64,
    connects_per_second: f64,
    connect_share_weighted: f64,
    bytes_sent: u64,
    bytes_received: u64,
    threads: u32,
    cpu_ns: u64,
    cpu_utilization_max: f64,
    duration_ns: u64,
    end_reason: Option<EndReason>,
}

impl Totals {
    fn add(&mut self, r: &LoadResult) {
        self.successes += r.successes;
        self.failures += r.calls - r.successes;
        self.started_rate += r.started_rate;
        self.connections_opened += r.connections_opened;
        self.connects_per_second += r.connects_per_second;
        self.connect_share_weighted += r.connect_share * r.successes as f64;
        self.bytes_sent += r.bytes_sent;
        self.bytes_received += r.bytes_received;
        self.threads += r.generator.threads;
        self.cpu_ns += r.generator.cpu_ns;
        // The busiest agent: the one a saturation would show in.
        self.cpu_utilization_max = self.cpu_utilization_max.max(r.generator.cpu_utilization);
        self.duration_ns = self.duration_ns.max(r.duration_ns);
        self.end_reason = match (self.end_reason, r.end_reason) {
            (Some(EndReason::Interrupted), _) | (_, EndReason::Interrupted) => Some(EndReason::Interrupted),
            (_, e) => Some(e),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic spread of latencies from 20 us to 2 s (log-uniform).
    fn samples(n: usize, seed: u64) -> Vec<u64> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                (20_000.0 * (1e5f64).powf(u)) as u64
            })
            .collect()
    }

    #[test]
    fn the_sum_of_many_generators_equals_one_histogram_of_every_sample_bucket_for_bucket() {
        let all = samples(200_000, 7);
        let mut one = latency_histogram();
        for &v in &all {
            one.record(v).unwrap();
        }
        // 300 agents, 5 seconds each, every sample in exactly one of them,
        // each interval sent as the wire carries it (V2 + deflate, base64).
        let (agents, seconds) = (300usize, 5u32);
        let mut parts = vec![latency_histogram(); agents * seconds as usize];
        let n = parts.len();
        for (i, &v) in all.iter().enumerate() {
            parts[(i * 7919) % n].record(v).unwrap();
        }
        let mut sum = IntervalSum::new();
        for (k, h) in parts.iter().enumerate() {
            let second = (k % seconds as usize) as u32;
            sum.add(
                second,
                &EncodedHistogram::encode(h),
                &format!("agent {}", k / seconds as usize),
            )
            .unwrap();
        }
        let merged = sum.total();
        assert_eq!(merged.len(), all.len() as u64);
        let buckets = |h: &Histogram<u64>| -> Vec<(u64, u64)> {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect()
        };
        assert_eq!(buckets(&merged), buckets(&one));
        assert_eq!(merged, one);
        assert_eq!(LatencySummary::of(&merged), LatencySummary::of(&one));
        // And the per-second sums are the seconds' own samples.
        let per_second: u64 = sum.seconds().map(|(_, h)| h.len()).sum();
        assert_eq!(per_second, all.len() as u64);
    }

    #[test]
    fn histograms_with_other_settings_are_refused_by_source() {
        let mut acc = latency_histogram();
        let mut other = Histogram::<u64>::new_with_bounds(1, 1_000_000, 2).unwrap();
        other.record(5).unwrap();
        let e = add_encoded(&mut acc, &EncodedHistogram::encode(&other), "10.0.0.2:7000").unwrap_err();
        let text = e.to_string();
        assert!(text.contains("10.0.0.2:7000") && text.contains("2 digits"), "{text}");
        let e = add_encoded(&mut acc, &EncodedHistogram::from("not base64!"), "agent 3").unwrap_err();
        assert!(matches!(e, MergeError::Decode { .. }), "{e:?}");
        assert!(acc.is_empty());
    }
}
