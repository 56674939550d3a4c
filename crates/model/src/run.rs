//! A benchmark run as the runner records it: the points of its plan, one
//! [`Measurement`] per point and repetition, and the aggregates across
//! repetitions that every report shows.
//!
//! These types sit next to [`crate::model`] (one load run) and wrap it: a
//! measurement holds the engine's [`LoadResult`] plus what only the runner
//! knows (server cost, failures, the search trace of `discover` and `ramp`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::format::plain_number;
use crate::load::{ConnectionPolicy, Environment, LoadResult, Protocol};
use crate::stats::{DEFAULT_NOISE_THRESHOLD, Summary};

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Being measured now (or the process died without saying otherwise).
    Running,
    /// Every point and repetition was attempted.
    Complete,
    /// Stopped by Ctrl-C / SIGTERM; `protobench run --resume RUN` finishes it.
    Interrupted,
    /// Stopped by an error of protobench itself.
    Failed,
}

impl RunStatus {
    /// The status as stored and printed.
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        }
    }

    /// Parses [`RunStatus::name`].
    pub fn parse(s: &str) -> Option<RunStatus> {
        [
            RunStatus::Running,
            RunStatus::Complete,
            RunStatus::Interrupted,
            RunStatus::Failed,
        ]
        .into_iter()
        .find(|v| v.name() == s)
    }
}

/// The environment of a run: the machine, the servers and the isolation used.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunEnvironment {
    /// CPU model, cores, kernel, protobench version, commit.
    pub machine: Environment,
    /// Every server of the plan, with the versions its manifest pins.
    pub servers: Vec<ServerInfo>,
    /// How server and generator were kept apart, in one line each.
    pub isolation: Vec<String>,
}

/// A server as described by its manifest.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerInfo {
    /// `rust`, `go`, ...
    pub name: String,
    /// Language, e.g. `Go`.
    pub language: String,
    /// The stack, one line.
    pub stack: String,
    /// Library versions the server pins.
    pub versions: BTreeMap<String, String>,
}

/// How load is applied at one point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointKind {
    /// Closed or open loop exactly as configured.
    Fixed,
    /// Double the concurrency from 2 while the rate improves, then measure at the best.
    Discover,
    /// Add concurrency step by step until the rate stops rising or errors begin.
    Ramp,
    /// Open loop at a fixed rate.
    Rate,
    /// Streams: the point's workload is a streaming one, carried as its
    /// [`PointConfig::stream`] says, `concurrency` streams at once
    /// (docs/streaming.md).
    Stream,
}

impl PointKind {
    /// The kind as written in presets.
    pub fn name(self) -> &'static str {
        match self {
            PointKind::Fixed => "fixed",
            PointKind::Discover => "discover",
            PointKind::Ramp => "ramp",
            PointKind::Rate => "rate",
            PointKind::Stream => "stream",
        }
    }
}

/// One configuration of a run's matrix (one row of the final table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointConfig {
    /// Position in the plan, from 0.
    pub index: u32,
    /// Server name (`rust`, `go`, ...).
    pub server: String,
    /// `rest`, `rest-h2`, `grpc` or `soap`.
    pub protocol: Protocol,
    /// Contract workload.
    pub workload: String,
    /// TLS on the wire.
    pub tls: bool,
    /// How the load is applied.
    pub kind: PointKind,
    /// Calls in flight (closed loop), the cap in open loop, or the start of a search.
    pub concurrency: u32,
    /// TCP connections (the first search step's, for `discover` and `ramp`).
    pub connections: u32,
    /// How callers get connections (`per-caller`, `per-call`, a shared
    /// count); `None` in points stored before the policy existed: read it
    /// with [`PointConfig::policy`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_policy: Option<ConnectionPolicy>,
    /// Open loop: calls per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Injected failure fraction.
    pub failure_rate: f64,
    /// Injected service time (`sleep:1ms`, `spin:100us`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_time: Option<String>,
    /// Server CPU limit in cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_limit: Option<f64>,
    /// Server memory limit in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_bytes: Option<u64>,
    /// The network between generator and server as the preset writes it
    /// (`loopback`, `lan-1g`, `rate=100mbit,delay=20ms`); `None` when the
    /// preset lists no networks (loopback, as every run before issue 12).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// A streaming point (`kind = "stream"`): how its messages are carried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<crate::stream::StreamPoint>,
}

impl PointConfig {
    /// The connection policy. Points stored before it existed: searches
    /// had one connection per caller; fixed and rate points a shared count
    /// when it was below the concurrency.
    pub fn policy(&self) -> ConnectionPolicy {
        match (self.connection_policy, self.kind) {
            (Some(p), _) => p,
            (None, PointKind::Discover | PointKind::Ramp) => ConnectionPolicy::PerCaller,
            (None, _) if self.connections < self.concurrency => ConnectionPolicy::Shared(self.connections),
            (None, _) => ConnectionPolicy::PerCaller,
        }
    }

    /// A short description of the load, e.g. `c=16`, `c=16/conn=4`,
    /// `c=16/conn=per-call`, `rate=100/s`, `discover`, `ramp/conn=1`.
    pub fn load_label(&self) -> String {
        let base = match self.kind {
            PointKind::Discover => "discover".into(),
            PointKind::Ramp => "ramp".into(),
            PointKind::Stream => {
                let how = self.stream.map_or_else(|| "stream".into(), |s| s.describe());
                return format!("{how} streams={}", self.concurrency);
            }
            PointKind::Fixed | PointKind::Rate => match self.rate {
                Some(r) => format!("rate={}/s", plain_number(r)),
                None => format!("c={}", self.concurrency),
            },
        };
        let searched = matches!(self.kind, PointKind::Discover | PointKind::Ramp);
        match self.policy() {
            ConnectionPolicy::PerCaller => base,
            ConnectionPolicy::PerCall => format!("{base}/conn=per-call"),
            // A fixed count at or above the callers is one per caller.
            ConnectionPolicy::Shared(n) if searched || self.rate.is_some() || n < self.concurrency => {
                format!("{base}/conn={n}")
            }
            ConnectionPolicy::Shared(_) => base,
        }
    }

    /// What this point shares with the points that differ from it only by
    /// protocol (and the connections its protocol implies: HTTP/1.1 has one
    /// per caller): server, workload, load, TLS, injected failures and
    /// service time, limits and network. Points with the same key are
    /// **peers**: the runner measures them back to back in each repetition
    /// and the report shows each relative to the first of them.
    pub fn peer_key(&self) -> String {
        format!(
            "{}\u{1f}{}\u{1f}{:?}\u{1f}{}\u{1f}{:?}\u{1f}{}\u{1f}{}\u{1f}{:?}\u{1f}{:?}\u{1f}{:?}\u{1f}{:?}",
            self.server,
            self.workload,
            self.kind,
            self.concurrency,
            self.rate,
            self.tls,
            self.failure_rate,
            self.service_time,
            self.cpu_limit,
            self.memory_limit_bytes,
            self.network
        )
    }

    /// `server protocol workload variant`: the point's name in progress lines
    /// and reports.
    pub fn label(&self) -> String {
        format!(
            "{} {} {} {}",
            self.server,
            self.protocol,
            self.workload,
            self.variant_label()
        )
    }

    /// Everything that tells this point apart from others with the same server,
    /// protocol and workload: load, TLS, failures, service time, limits, network.
    pub fn variant_label(&self) -> String {
        let mut parts = vec![self.load_label()];
        if self.tls {
            parts.push("tls".into());
        }
        if self.failure_rate > 0.0 {
            parts.push(format!("fail={}%", plain_number(self.failure_rate * 100.0)));
        }
        if let Some(st) = &self.service_time {
            parts.push(format!("st={st}"));
        }
        if let Some(c) = self.cpu_limit {
            parts.push(format!("cpu={}", plain_number(c)));
        }
        if let Some(m) = self.memory_limit_bytes {
            parts.push(format!("mem={}MiB", m / (1024 * 1024)));
        }
        if let Some(n) = &self.network {
            parts.push(format!("net={n}"));
        }
        parts.join(" ")
    }
}

/// Whether one repetition of a point produced a measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MeasurementStatus {
    /// Measured (calls may still have failed: that is data, not an error).
    Ok,
    /// Not measured: the server did not start, failed verification or crashed.
    Failed,
}

impl MeasurementStatus {
    /// The status as stored.
    pub fn name(self) -> &'static str {
        match self {
            MeasurementStatus::Ok => "ok",
            MeasurementStatus::Failed => "failed",
        }
    }
}

/// Why a repetition was not measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// What went wrong, one line (e.g. `verification failed: inventory.m: found ..., expected ...`).
    pub reason: String,
    /// The last lines the server wrote (stdout and stderr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_tail: Option<String>,
}

/// Server CPU comes from `/proc/PID/stat`, counted in clock ticks (10 ms at
/// the usual 100 Hz), read at both ends of the window: the window's CPU is
/// known to about +-20 ms. Below this much (200 ms) the error of CPU per call
/// exceeds 10%, and the point says so.
pub const SERVER_CPU_RESOLUTION_NS: u64 = 200_000_000;

/// What the server cost over the measured window.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerCost {
    /// CPU time (user + system) of the server's process tree.
    pub cpu_ns: u64,
    /// `cpu_ns` per call.
    pub cpu_ns_per_call: f64,
    /// Calls per CPU-second of the server.
    pub calls_per_cpu_second: f64,
    /// Peak resident memory of the process tree.
    pub rss_peak_bytes: u64,
    /// Mean resident memory over the window (sampled every 100 ms).
    pub rss_mean_bytes: u64,
}

/// One step of a `discover` or `ramp` search.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SearchStep {
    /// Concurrency of the step.
    pub concurrency: u32,
    /// Successful calls per second.
    pub rate: f64,
    /// Failed calls.
    pub errors: u64,
    /// 99th percentile latency.
    pub p99_ns: u64,
}

/// How a steady-state warm-up went.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Warmup {
    /// How long it ran.
    pub duration_ns: u64,
    /// Whether the rate stopped rising before the maximum (a point that never
    /// became steady is measured anyway, and flagged).
    pub steady: bool,
}

/// The trace of a `discover` or `ramp` search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Search {
    /// Every step in order.
    pub steps: Vec<SearchStep>,
    /// `discover`: the concurrency measured; `ramp`: the knee concurrency.
    pub chosen_concurrency: u32,
    /// `ramp`: the rate at the knee (saturation point).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee_rate: Option<f64>,
    /// Why the search stopped, one line.
    pub stop_reason: String,
    /// Continuous `ramp`: the second of the measured window the knee was
    /// found in (its users are `chosen_concurrency`, its rate `knee_rate`;
    /// `steps` then holds one step per second). `None` for `discover` and
    /// for ramps stored before the ramp became one continuous run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee_second: Option<u32>,
    /// Continuous `ramp`: the runner stopped the engine's run at the knee
    /// (before its maximum); the engine's own result then says
    /// `interrupted`, which is what its run was. Ramps stored before this
    /// field carried it as the engine's end reason `knee`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped_at_knee: bool,
}

/// One repetition of one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// [`PointConfig::index`].
    pub point: u32,
    /// Repetition number, from 1.
    pub repetition: u32,
    /// Measured or not.
    pub status: MeasurementStatus,
    /// Why not, when failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// The engine's result (also present for a failed `ramp`/`discover` if partly measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<LoadResult>,
    /// A streaming point's result (`result` is then `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<crate::stream::StreamResult>,
    /// A streaming point: the server's resident memory just before its
    /// streams opened (before the warm-up), the base of its memory per
    /// open stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_rss_before_bytes: Option<u64>,
    /// Server cost over the measured window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cost: Option<ServerCost>,
    /// Server resident memory per second of the window (bytes), when sampled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_rss_timeline: Vec<u64>,
    /// Server CPU time in each whole second of the window (ns), when
    /// sampled: with the timeline's calls, the CPU per call second by
    /// second, the drift flag's second signal ([`Measurement::drift`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_cpu_timeline: Vec<u64>,
    /// A steady-state warm-up (`warmup = "steady"`): how long it took and
    /// whether the rate became steady before its maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<Warmup>,
    /// The search trace of `discover` and `ramp` points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<Search>,
    /// On an emulated link: bytes per call against the link's measured
    /// capacity, and whether the link limited the rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<crate::network::PointLink>,
    /// When this repetition started (RFC 3339).
    pub started_at: String,
    /// When it ended (RFC 3339).
    pub finished_at: String,
}

impl Measurement {
    /// The drift flag of the measured window: the rate trends beyond the
    /// threshold **and**, when the server's CPU was sampled each second, its
    /// CPU per call trends the opposite way (a server that really got
    /// faster or slower does the same work for less or more CPU; a machine
    /// that lent the server less CPU does not). `steady::drift_confirmed`.
    pub fn drift(&self) -> Option<crate::steady::Drift> {
        let r = self.result.as_ref()?;
        crate::steady::drift_confirmed(
            &r.rates_per_second(),
            &self.server_cpu_timeline,
            crate::steady::DEFAULT_DRIFT_THRESHOLD,
        )
    }

    /// Failed calls over all calls, 0 without calls.
    pub fn error_fraction(&self) -> Option<f64> {
        let r = self.result.as_ref()?;
        Some(if r.calls == 0 {
            0.0
        } else {
            r.error_count() as f64 / r.calls as f64
        })
    }
}

/// A stored run with everything needed to report it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Run id in the database.
    pub id: i64,
    /// Preset name.
    pub preset: String,
    /// Preset file, if it came from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset_path: Option<String>,
    /// Where it stands.
    pub status: RunStatus,
    /// Start (RFC 3339).
    pub started_at: String,
    /// End (RFC 3339), if it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// The resolved plan as JSON (the runner's `Plan`).
    pub plan: serde_json::Value,
    /// Repetitions per point.
    pub repetitions: u32,
    /// Coefficient-of-variation threshold for noisy points.
    pub noise_threshold: f64,
    /// Machine, servers, isolation.
    pub environment: RunEnvironment,
    /// Warnings raised while running (missing cgroups, generator-bound points...).
    pub warnings: Vec<String>,
    /// The points of the plan.
    pub points: Vec<PointConfig>,
    /// Every measurement so far.
    pub measurements: Vec<Measurement>,
    /// The emulated links, as measured before their points ran (written
    /// only when there are any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<crate::network::RunLink>,
}

impl RunRecord {
    /// The aggregates across repetitions, one per point, in plan order.
    pub fn aggregates(&self) -> Vec<PointAggregate> {
        self.points
            .iter()
            .map(|p| {
                let ms: Vec<&Measurement> = self.measurements.iter().filter(|m| m.point == p.index).collect();
                PointAggregate::of(p, &ms, self.noise_threshold)
            })
            .collect()
    }

    /// Measurements still to do: (point, repetition) pairs with no record.
    pub fn missing(&self) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for rep in 1..=self.repetitions {
            for p in &self.points {
                if !self
                    .measurements
                    .iter()
                    .any(|m| m.point == p.index && m.repetition == rep)
                {
                    out.push((p.index, rep));
                }
            }
        }
        out
    }
}

/// One point summarized over its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointAggregate {
    /// The point.
    pub config: PointConfig,
    /// Repetitions measured.
    pub repetitions_ok: u32,
    /// Repetitions that failed.
    pub repetitions_failed: u32,
    /// Successful calls per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Summary>,
    /// Median latency (ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ns: Option<Summary>,
    /// 90th percentile latency (ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90_ns: Option<Summary>,
    /// 95th percentile latency (ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95_ns: Option<Summary>,
    /// 99th percentile latency (ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ns: Option<Summary>,
    /// 99.9th percentile latency (ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999_ns: Option<Summary>,
    /// Mean latency (ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_ns: Option<Summary>,
    /// Bytes the generator wrote per call (request, with its framing and
    /// headers; see docs/engine.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_sent_per_call: Option<Summary>,
    /// Bytes the generator read per call (response).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_received_per_call: Option<Summary>,
    /// Server CPU over the measured window in percent of one core (as `top`
    /// and `docker stats` show it: 200% = two cores busy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_percent: Option<Summary>,
    /// Fraction of calls that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_fraction: Option<Summary>,
    /// Calls lost to the generator's own call timeout, over every
    /// repetition (written only when there are any).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub timeouts: u64,
    /// Server CPU per call (ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ns_per_call: Option<Summary>,
    /// Calls per server CPU-second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls_per_cpu_second: Option<Summary>,
    /// Peak server memory (bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_peak_bytes: Option<Summary>,
    /// Mean server memory (bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_mean_bytes: Option<Summary>,
    /// Generator CPU per call (ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_cpu_ns_per_call: Option<Summary>,
    /// Concurrency measured at (`discover`) or the knee (`ramp`), median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen_concurrency: Option<Summary>,
    /// `ramp`: rate at the knee.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee_rate: Option<Summary>,
    /// The rate's coefficient of variation is above the run's threshold.
    pub noisy: bool,
    /// At least one repetition was limited by the generator, not the server.
    pub generator_bound: bool,
    /// The server used less CPU in some repetition's window than
    /// [`SERVER_CPU_RESOLUTION_NS`]: its CPU per call is known to worse than
    /// 10% (e.g. a 1 call/s point).
    #[serde(default)]
    pub server_cpu_coarse: bool,
    /// The rate of some repetition's measured window moved in one direction
    /// by more than the noise allows (`steady::drift`): the largest such
    /// drift. A warm-up that was too short shows here as a rising rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<crate::steady::Drift>,
    /// Steady-state warm-up: how long it took (seconds), across repetitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_s: Option<Summary>,
    /// Steady-state warm-up: some repetition reached the maximum without the
    /// rate becoming steady (it was measured anyway).
    #[serde(default)]
    pub warmup_unsteady: bool,
    /// On an emulated link: TCP payload per call, both directions (bytes
    /// on the wire less headers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_call: Option<Summary>,
    /// On an emulated link: the larger direction's share of the link's
    /// measured capacity (calls/s x bytes per call x 8 / goodput).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_share: Option<Summary>,
    /// On an emulated link: the link's measured capacity in the direction
    /// that carried the larger share (bit/s of TCP payload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_capacity_bps: Option<f64>,
    /// Some repetition was link-bound: the link, not the server, limited
    /// the rate (Berg's asterisk, computed). Written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub link_bound: bool,
    /// toxiproxy's CPU per call, when toxiproxy carried the point (ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toxiproxy_cpu_ns_per_call: Option<Summary>,
    /// Distinct failure reasons.
    pub failures: Vec<String>,
    /// A point run on agents (docs/distributed.md): how many generated its
    /// load (the most of any repetition); written only when some did.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub agents: u32,
    /// A point run on agents where an agent failed (the repetition is
    /// incomplete: its figures cover the other agents): each failure once,
    /// `agent ADDR (repetition R): what happened`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents_failed: Vec<String>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

impl PointAggregate {
    /// Summarizes the measurements of one point.
    // Longer than the ~120-line guide: one summary per field of the
    // aggregate (rate, latencies, costs, search, link, warm-up), each a
    // line or two over the same repetitions.
    pub fn of(config: &PointConfig, ms: &[&Measurement], noise_threshold: f64) -> PointAggregate {
        let ok: Vec<&&Measurement> = ms.iter().filter(|m| m.status == MeasurementStatus::Ok).collect();
        // Every value keeps its repetition, so that two points measured in
        // the same interleaved repetitions can be compared pair by pair.
        let results: Vec<(u32, &LoadResult)> = ok
            .iter()
            .filter_map(|m| Some((m.repetition, m.result.as_ref()?)))
            .collect();
        let costs: Vec<(u32, &ServerCost)> = ok
            .iter()
            .filter_map(|m| Some((m.repetition, m.server_cost.as_ref()?)))
            .collect();
        let searches: Vec<(u32, &Search)> = ok
            .iter()
            .filter_map(|m| Some((m.repetition, m.search.as_ref()?)))
            .collect();
        let links: Vec<(u32, &crate::network::PointLink)> = ok
            .iter()
            .filter_map(|m| Some((m.repetition, m.link.as_ref()?)))
            .collect();
        let sum = |v: Vec<(u32, f64)>| Summary::of_repetitions(&v);
        let rate = sum(results.iter().map(|(k, r)| (*k, r.rate)).collect());
        let threshold = if noise_threshold > 0.0 {
            noise_threshold
        } else {
            DEFAULT_NOISE_THRESHOLD
        };
        let mut failures: Vec<String> = Vec::new();
        for m in ms {
            if let Some(f) = &m.failure
                && !failures.contains(&f.reason)
            {
                failures.push(f.reason.clone());
            }
        }
        PointAggregate {
            config: config.clone(),
            repetitions_ok: ok.len() as u32,
            repetitions_failed: (ms.len() - ok.len()) as u32,
            noisy: rate.as_ref().is_some_and(|s| s.is_noisy(threshold)),
            rate,
            p50_ns: sum(results.iter().map(|(k, r)| (*k, r.latency.p50_ns as f64)).collect()),
            p90_ns: sum(results.iter().map(|(k, r)| (*k, r.latency.p90_ns as f64)).collect()),
            p95_ns: sum(results.iter().map(|(k, r)| (*k, r.latency.p95_ns as f64)).collect()),
            p99_ns: sum(results.iter().map(|(k, r)| (*k, r.latency.p99_ns as f64)).collect()),
            p999_ns: sum(results.iter().map(|(k, r)| (*k, r.latency.p999_ns as f64)).collect()),
            mean_ns: sum(results.iter().map(|(k, r)| (*k, r.latency.mean_ns as f64)).collect()),
            bytes_sent_per_call: sum(results
                .iter()
                .filter(|(_, r)| r.calls > 0)
                .map(|(k, r)| (*k, r.bytes_sent_per_call))
                .collect()),
            bytes_received_per_call: sum(results
                .iter()
                .filter(|(_, r)| r.calls > 0)
                .map(|(k, r)| (*k, r.bytes_received_per_call))
                .collect()),
            cpu_percent: sum(ok
                .iter()
                .filter_map(|m| match (&m.result, &m.server_cost) {
                    (Some(r), Some(c)) if r.duration_ns > 0 => {
                        Some((m.repetition, 100.0 * c.cpu_ns as f64 / r.duration_ns as f64))
                    }
                    _ => None,
                })
                .collect()),
            error_fraction: sum(ok
                .iter()
                .filter_map(|m| Some((m.repetition, m.error_fraction()?)))
                .collect()),
            timeouts: results
                .iter()
                .flat_map(|(_, r)| r.errors.iter())
                .filter(|e| e.kind == crate::load::ErrorKind::Timeout)
                .map(|e| e.count)
                .sum(),
            cpu_ns_per_call: sum(costs.iter().map(|(k, c)| (*k, c.cpu_ns_per_call)).collect()),
            calls_per_cpu_second: sum(costs.iter().map(|(k, c)| (*k, c.calls_per_cpu_second)).collect()),
            rss_peak_bytes: sum(costs.iter().map(|(k, c)| (*k, c.rss_peak_bytes as f64)).collect()),
            rss_mean_bytes: sum(costs.iter().map(|(k, c)| (*k, c.rss_mean_bytes as f64)).collect()),
            generator_cpu_ns_per_call: sum(results.iter().map(|(k, r)| (*k, r.generator.cpu_ns_per_call)).collect()),
            chosen_concurrency: sum(searches
                .iter()
                .map(|(k, s)| (*k, s.chosen_concurrency as f64))
                .collect()),
            knee_rate: sum(searches.iter().filter_map(|(k, s)| Some((*k, s.knee_rate?))).collect()),
            generator_bound: results.iter().any(|(_, r)| r.generator.generator_bound),
            server_cpu_coarse: costs.iter().any(|(_, c)| c.cpu_ns < SERVER_CPU_RESOLUTION_NS),
            warmup_s: sum(ms
                .iter()
                .filter_map(|m| m.warmup.map(|w| (m.repetition, w.duration_ns as f64 / 1e9)))
                .collect()),
            warmup_unsteady: ms.iter().any(|m| m.warmup.is_some_and(|w| !w.steady)),
            bytes_per_call: sum(links
                .iter()
                .map(|(k, l)| (*k, l.bytes_sent_per_call + l.bytes_received_per_call))
                .collect()),
            link_share: sum(links.iter().map(|(k, l)| (*k, l.share())).collect()),
            link_capacity_bps: links
                .iter()
                .map(|(_, l)| l)
                .max_by(|a, b| a.share().total_cmp(&b.share()))
                .map(|l| {
                    if l.up_share > l.down_share {
                        l.up_capacity_bps
                    } else {
                        l.down_capacity_bps
                    }
                }),
            link_bound: links.iter().any(|(_, l)| l.bound),
            toxiproxy_cpu_ns_per_call: sum(ok
                .iter()
                .filter_map(|m| {
                    let (l, r) = (m.link.as_ref()?, m.result.as_ref()?);
                    Some((m.repetition, l.toxiproxy_cpu_ns? as f64 / r.calls.max(1) as f64))
                })
                .collect()),
            drift: ok
                .iter()
                .filter_map(|m| m.drift())
                .max_by(|a, b| a.change.abs().total_cmp(&b.change.abs())),
            failures,
            agents: results.iter().map(|(_, r)| r.agents.len() as u32).max().unwrap_or(0),
            agents_failed: agents_failed(&results),
        }
    }
}

/// The agents that failed in `results` (repetition, result), each
/// `agent ADDR (repetition R): what happened`.
fn agents_failed(results: &[(u32, &LoadResult)]) -> Vec<String> {
    let mut out = Vec::new();
    for (k, r) in results {
        for a in &r.agents {
            if let Some(f) = &a.failure {
                out.push(format!("agent {} (repetition {k}): {}", a.agent, f.message));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(kind: PointKind, concurrency: u32, connections: u32, policy: Option<ConnectionPolicy>) -> PointConfig {
        PointConfig {
            kind,
            concurrency,
            connections,
            connection_policy: policy,
            ..crate::testing::point(0, "grpc", "inventory.s")
        }
    }

    #[test]
    fn the_policy_shows_in_the_label() {
        use ConnectionPolicy::{PerCall, PerCaller, Shared};
        let rows = [
            (point(PointKind::Fixed, 16, 16, Some(PerCaller)), "c=16"),
            (point(PointKind::Fixed, 16, 4, Some(Shared(4))), "c=16/conn=4"),
            (point(PointKind::Fixed, 16, 16, Some(Shared(16))), "c=16"),
            (point(PointKind::Fixed, 16, 16, Some(PerCall)), "c=16/conn=per-call"),
            (point(PointKind::Discover, 2, 2, Some(PerCaller)), "discover"),
            (point(PointKind::Discover, 2, 1, Some(Shared(1))), "discover/conn=1"),
            (point(PointKind::Ramp, 1, 1, Some(PerCall)), "ramp/conn=per-call"),
            (point(PointKind::Ramp, 1, 1, Some(Shared(2))), "ramp/conn=2"),
            // points stored before the policy existed keep their labels
            (point(PointKind::Fixed, 16, 4, None), "c=16/conn=4"),
            (point(PointKind::Ramp, 1, 1, None), "ramp"),
            (point(PointKind::Discover, 2, 0, None), "discover"),
        ];
        for (p, want) in rows {
            assert_eq!(p.load_label(), want, "{:?}", p.connection_policy);
        }
        let mut rate = point(PointKind::Rate, 64, 2, Some(Shared(2)));
        rate.rate = Some(100.0);
        assert_eq!(rate.load_label(), "rate=100/s/conn=2");
    }

    #[test]
    fn the_policy_round_trips_through_json_and_old_points_still_read() {
        use ConnectionPolicy::{PerCall, PerCaller, Shared};
        for policy in [PerCaller, PerCall, Shared(3)] {
            let p = point(PointKind::Fixed, 16, 3, Some(policy));
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(serde_json::from_str::<PointConfig>(&json).unwrap(), p, "{json}");
        }
        assert!(
            serde_json::to_string(&point(PointKind::Fixed, 16, 16, Some(PerCall)))
                .unwrap()
                .contains("\"connection_policy\":\"per-call\"")
        );
        assert!(
            serde_json::to_string(&point(PointKind::Fixed, 16, 2, Some(Shared(2))))
                .unwrap()
                .contains("\"connection_policy\":2")
        );
        let mut old = serde_json::to_value(point(PointKind::Fixed, 16, 4, None)).unwrap();
        assert!(old.get("connection_policy").is_none());
        old["connections"] = 4.into();
        let read: PointConfig = serde_json::from_value(old).unwrap();
        assert_eq!(read.policy(), Shared(4));
        for bad in ["0", "\"per-host\"", "-1"] {
            assert!(serde_json::from_str::<ConnectionPolicy>(bad).is_err(), "{bad}");
        }
        assert_eq!(PerCaller.for_callers(8), (8, false));
        assert_eq!(PerCall.for_callers(8), (8, true));
        assert_eq!(Shared(2).for_callers(8), (2, false));
        assert_eq!(Shared(20).for_callers(8), (8, false));
        assert_eq!("per-call".parse::<ConnectionPolicy>(), Ok(PerCall));
        assert!("2x".parse::<ConnectionPolicy>().is_err());
    }

    #[test]
    fn a_point_on_agents_counts_them_and_names_each_failed_one() {
        use crate::load::{AgentFailure, AgentLane};
        let p = crate::testing::point(0, "rest", "inventory.s");
        let lane = |index: u32, agent: &str| AgentLane {
            index,
            agent: agent.into(),
            clock_offset_ns: 0,
            clock_uncertainty_ns: 0,
            round_trip_ns: 0,
            concurrency: 1,
            rate_share: None,
            start_offset_ns: 0,
            calls: 0,
            successes: 0,
            rate: 0.0,
            latency: Default::default(),
            generator: Default::default(),
            failure: None,
        };
        let mut one = crate::testing::measurement(&p, 1, 100.0);
        one.result.as_mut().unwrap().agents = vec![lane(0, "a:1"), lane(1, "b:1")];
        let mut two = crate::testing::measurement(&p, 2, 100.0);
        let mut lost = lane(1, "b:1");
        lost.failure = Some(AgentFailure {
            after_ns: 1,
            message: "connection lost".into(),
        });
        let r = two.result.as_mut().unwrap();
        (r.agents, r.incomplete) = (vec![lane(0, "a:1"), lost], true);
        let agg = PointAggregate::of(&p, &[&one, &two], 0.1);
        assert_eq!(agg.agents, 2);
        assert_eq!(agg.agents_failed, ["agent b:1 (repetition 2): connection lost"]);
        let plain = crate::testing::measurement(&p, 1, 100.0);
        let agg = PointAggregate::of(&p, &[&plain], 0.1);
        assert_eq!((agg.agents, agg.agents_failed.len()), (0, 0));
        let json = serde_json::to_value(&agg).unwrap();
        assert!(
            json.get("agents").is_none() && json.get("agents_failed").is_none(),
            "{json}"
        );
    }
}
