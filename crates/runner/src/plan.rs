//! The resolved plan: every point of a preset's matrix spelled out, grouped
//! by the server process that serves it, with every knob decided. It is
//! built in one place ([`crate::preset::resolve`]) before any process starts
//! or socket opens, stored with the run (so `--resume` needs no preset), and
//! turned into the engine's [`LoadPlan`] per point.

use serde::{Deserialize, Serialize};

use protobench_model::load::{Arrival, ConnectionPolicy, CustomCall, LoadPlan, Protocol, TlsPlan, Validation};
use protobench_model::run::{PointConfig, PointKind};
use protobench_model::stream::StreamPlan;

use crate::units::CpuSet;

/// `discover` settings (Berg & Mebrahtu Redi 2023).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiscoverSpec {
    /// First concurrency tried.
    pub start: u32,
    /// Multiplier between steps.
    pub factor: u32,
    /// Keep going while the rate improves by more than this fraction.
    pub min_gain: f64,
    /// Never go above this concurrency.
    pub max: u32,
    /// Length of each search step.
    pub step_ns: u64,
}

/// How a steady-state warm-up decides the server has stopped getting faster
/// (`protobench_model::steady::steady`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SteadyWarmup {
    /// Seconds of per-second rates judged at a time.
    pub window_s: u32,
    /// A rise over the window below this fraction of its mean rate counts as steady.
    pub threshold: f64,
    /// Seconds warmed up before the first judgement (`warmup_min`; a
    /// server's manifest may ask for more, see `Manifest::warmup_min_s`).
    #[serde(default)]
    pub min_s: u32,
}

impl Default for SteadyWarmup {
    fn default() -> Self {
        SteadyWarmup {
            window_s: protobench_model::steady::STEADY_WINDOW_S as u32,
            threshold: 0.02,
            min_s: protobench_model::steady::STEADY_WINDOW_S as u32,
        }
    }
}

/// `ramp` settings (Hedelin 2024).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RampSpec {
    /// First concurrency.
    pub start: u32,
    /// Concurrency added per step.
    pub step: u32,
    /// Length of each step.
    pub step_ns: u64,
    /// Never go above this concurrency.
    pub max: u32,
    /// A step "rises" when its rate beats the best so far by more than this fraction.
    pub min_gain: f64,
    /// Stop after this many steps in a row that do not rise.
    pub patience: u32,
    /// Stop when the error fraction of a step exceeds this.
    pub max_error_rate: f64,
    /// Continuous ramp: users added per second (Locust's spawn rate);
    /// `step` per `step_duration` unless `spawn_rate` is set.
    #[serde(default)]
    pub spawn_rate: f64,
    /// The old stepped ramp (a separate engine run per step, fresh
    /// connections each) instead of one continuous run.
    #[serde(default)]
    pub stepped: bool,
}

impl RampSpec {
    /// The continuous ramp's concurrency schedule: `start` users, then
    /// `spawn_rate` more per second up to `max` (one linear stage).
    pub fn stages(&self) -> (u32, Vec<protobench_model::load::Stage>) {
        let rate = if self.spawn_rate > 0.0 {
            self.spawn_rate
        } else {
            f64::from(self.step) / (self.step_ns.max(1) as f64 / 1e9)
        };
        let users = f64::from(self.max.saturating_sub(self.start));
        // Rounded down, so whole seconds land exactly on whole users (the
        // rate is then high by under 1 ns per stage); at least 1 ms, so a
        // ramp that starts at its maximum still runs.
        let duration_ns = ((users / rate * 1e9).floor() as u64).max(1_000_000);
        (
            self.start,
            vec![protobench_model::load::Stage {
                duration_ns,
                target: self.max,
            }],
        )
    }
}

/// How every point of a plan is measured: its kind with the settings that
/// kind needs, so a search without its settings cannot be represented.
/// The stored plan keeps `kind`, `discover` and `ramp` apart (its JSON is
/// the runs' record); [`Plan::method`] joins them once, when a run starts.
#[derive(Debug, Clone, PartialEq)]
pub enum Method {
    /// One run at the point's concurrency.
    Fixed,
    /// One open-loop run at the point's rate.
    Rate,
    /// Search the concurrency (Berg & Mebrahtu Redi), then measure the best.
    Discover(DiscoverSpec),
    /// One run whose users grow until the knee (Hedelin's Locust ramp).
    ContinuousRamp(RampSpec),
    /// One engine run per step, fresh connections each (the old ramp).
    SteppedRamp(RampSpec),
    /// Streams: each point's workload carried as its `stream` says
    /// (docs/streaming.md, "The `streaming` preset").
    Stream,
}

/// A running service that protobench calls but neither starts, stops nor
/// verifies (`[[targets]]` in a preset): its address, its one call, its TLS
/// settings and, for a local process, the PID whose CPU and memory are
/// sampled. It takes a server's place in the matrix: one group, named after
/// it, whose points call [`TARGET_WORKLOAD`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    /// The name (a server name in points and reports).
    pub name: String,
    /// How it is called.
    pub protocol: Protocol,
    /// Where: `host:port` or an `http://` / `https://` URL (the engine's target).
    pub address: String,
    /// The call (method, path, headers, body; gRPC method and descriptors).
    pub custom: CustomCall,
    /// TLS settings; `None` = clear text (or defaults for an `https://` URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsPlan>,
    /// A local process whose CPU and memory are sampled; `None` = not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// The workload name of a target's points: its own call, not the contract's.
pub const TARGET_WORKLOAD: &str = "custom";

impl Target {
    /// Whether its calls use TLS.
    pub fn uses_tls(&self) -> bool {
        self.tls.is_some() || self.address.starts_with("https://")
    }

    /// What it is and what protobench does not do with it, for the report.
    pub fn note(&self) -> String {
        let call = match self.protocol {
            Protocol::Grpc => {
                let from = if self.custom.protoset.is_some() {
                    "descriptor set"
                } else if self.custom.proto_files.is_empty() {
                    "server reflection"
                } else {
                    ".proto"
                };
                format!("{} ({from})", self.custom.call.as_deref().unwrap_or(""))
            }
            _ => format!(
                "{} {}",
                self.custom.method.as_deref().unwrap_or("GET/POST"),
                self.custom.path.as_deref().unwrap_or("/")
            ),
        };
        let cost = match self.pid {
            Some(pid) => format!("server CPU and memory sampled from PID {pid}"),
            None => "server CPU and memory not measured (no pid)".into(),
        };
        format!(
            "target `{}` ({} {call} at {}) is not verified: protobench neither started nor checked it against the contract; {cost}",
            self.name, self.protocol, self.address
        )
    }
}

/// One server process per repetition: every point sharing these settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerGroup {
    /// Position in the plan.
    pub index: u32,
    /// Server name.
    pub server: String,
    /// TLS listeners.
    pub tls: bool,
    /// `PROTOBENCH_FAILURE_RATE`.
    pub failure_rate: f64,
    /// `PROTOBENCH_FAILURE_SEED`.
    pub failure_seed: u64,
    /// `PROTOBENCH_SERVICE_TIME`.
    pub service_time: Option<String>,
    /// CPU limit in cores (cgroup CPU quota).
    pub cpu_limit: Option<f64>,
    /// Memory limit in bytes (cgroup).
    pub memory_limit_bytes: Option<u64>,
    /// `PROTOBENCH_WORKERS`; `None` = the server CPU set's size.
    pub workers: Option<u32>,
    /// Protocols its points use (only these listeners are started).
    pub protocols: Vec<Protocol>,
    /// The points it serves, in plan order.
    pub points: Vec<u32>,
    /// The network its server sits behind, parsed once by the preset
    /// check (stored as its text, as its points carry it in
    /// `PointConfig::network`); `None` is loopback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::network::Network>,
}

/// The fully resolved plan of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Preset name.
    pub preset: String,
    /// Preset file, if any.
    pub preset_path: Option<String>,
    /// What the preset measures.
    pub description: String,
    /// How load is applied.
    pub kind: PointKind,
    /// Repetitions of every point.
    pub repetitions: u32,
    /// Warm-up before each measured window (with `warmup_steady`: its maximum).
    pub warmup_ns: u64,
    /// `warmup = "steady"`: warm up until the rate stops rising, at most
    /// `warmup_ns`, instead of for a fixed time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_steady: Option<SteadyWarmup>,
    /// Measured window of each point.
    pub duration_ns: u64,
    /// Time limit of one call.
    pub timeout_ns: u64,
    /// Time limit of one connection attempt.
    pub connect_timeout_ns: u64,
    /// Response checking.
    pub validate: Validation,
    /// Open-loop arrivals.
    pub arrival: Arrival,
    /// Noisy-point threshold (coefficient of variation of the rate).
    pub noise_threshold: f64,
    /// CPUs for servers; `None` = no pinning.
    pub server_cpus: Option<CpuSet>,
    /// CPUs for the generator; `None` = no pinning.
    pub generator_cpus: Option<CpuSet>,
    /// Engine threads (0 = one per generator CPU).
    pub generator_threads: u32,
    /// `discover` settings.
    pub discover: Option<DiscoverSpec>,
    /// `ramp` settings.
    pub ramp: Option<RampSpec>,
    /// The points, in plan order.
    pub points: Vec<PointConfig>,
    /// The server processes.
    pub groups: Vec<ServerGroup>,
    /// Notes from resolution (skipped combinations, defaults taken).
    pub notes: Vec<String>,
    /// `--time-scale`: every duration of the preset multiplied by this
    /// (1 = as the preset says).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub time_scale: f64,
    /// What the preset's study found, judged against every run of it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<protobench_model::findings::Finding>,
    /// Services called but not started (`[[targets]]`), each the server of
    /// the group named after it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<Target>,
    /// Gates checked at every point after the run (`thresholds = [...]`
    /// and `--threshold`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<protobench_model::threshold::Threshold>,
    /// `--until-decided`: rounds of repetitions are added while a claim's
    /// direction is undecided and the budget allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_decided: Option<UntilDecided>,
    /// The agents (`host:port`) that generate the load of every point
    /// (docs/distributed.md); empty: this process generates it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<String>,
}

/// `--until-decided --budget`: how long the run may measure, and how many
/// interleaved repetitions each extra round adds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UntilDecided {
    /// The whole run's measuring time at most (the first rounds included).
    pub budget_ns: u64,
    /// Repetitions of the first round (the preset's, or `--repetitions`).
    pub first: u32,
    /// Repetitions added per round.
    pub round: u32,
    /// Budget used by the rounds stored so far (what `--resume` counts on).
    #[serde(default)]
    pub used_ns: u64,
}

/// Repetitions an `--until-decided` round adds.
pub const ROUND_REPETITIONS: u32 = 3;

fn one() -> f64 {
    1.0
}

fn is_one(v: &f64) -> bool {
    *v == 1.0
}

/// The largest `--time-scale`.
pub const MAX_TIME_SCALE: f64 = 1000.0;

impl Plan {
    /// Multiplies every duration of the experiment by `scale` (warm-ups,
    /// measured windows, search steps; not the per-call and per-connection
    /// time limits, which bound one call, not the experiment), records the
    /// scale and says so in the notes. A steady warm-up keeps its test's
    /// window (10 s): it cannot judge a trend on less.
    pub fn scale_time(&mut self, scale: f64) -> Result<(), String> {
        if !(scale.is_finite() && scale > 0.0 && scale <= MAX_TIME_SCALE) {
            return Err(format!(
                "--time-scale: `{scale}` is not a scale (expected a number above 0 and at most {MAX_TIME_SCALE}, e.g. 0.1 for a tenth of every duration)"
            ));
        }
        let mul = |ns: &mut u64| *ns = (*ns as f64 * scale).round() as u64;
        mul(&mut self.warmup_ns);
        mul(&mut self.duration_ns);
        if let Some(d) = &mut self.discover {
            mul(&mut d.step_ns);
        }
        if let Some(r) = &mut self.ramp {
            mul(&mut r.step_ns);
        }
        if let Some(w) = &mut self.warmup_steady {
            let min = (f64::from(w.min_s) * scale).ceil() as u32;
            w.min_s = min.max(w.window_s);
        }
        if self.duration_ns == 0 {
            return Err(format!(
                "--time-scale: {scale} leaves a measured window of 0 s (expected a scale that keeps at least 1 ns)"
            ));
        }
        self.time_scale *= scale;
        self.notes.push(format!(
            "time scale {}: every warm-up, measured window and search step is {} of the preset's (--time-scale); a study's figures need the full durations",
            protobench_model::format::plain_number(self.time_scale),
            if self.time_scale < 1.0 { "a fraction" } else { "a multiple" }
        ));
        Ok(())
    }

    /// The kind of every point with its settings; an error names what is
    /// missing (a stored plan edited by hand: the preset check makes both).
    pub fn method(&self) -> Result<Method, String> {
        let missing = |what: &str| {
            format!(
                "the plan's kind is `{}` but its `{what}` settings are missing",
                self.kind.name()
            )
        };
        Ok(match self.kind {
            PointKind::Fixed => Method::Fixed,
            PointKind::Rate => Method::Rate,
            PointKind::Stream => Method::Stream,
            PointKind::Discover => Method::Discover(self.discover.clone().ok_or_else(|| missing("discover"))?),
            PointKind::Ramp => {
                let spec = self.ramp.clone().ok_or_else(|| missing("ramp"))?;
                if spec.stepped {
                    Method::SteppedRamp(spec)
                } else {
                    Method::ContinuousRamp(spec)
                }
            }
        })
    }

    /// The target named `server`, when it is one (not started by protobench).
    pub fn target(&self, server: &str) -> Option<&Target> {
        self.targets.iter().find(|t| t.name == server)
    }

    /// The group serving point `index`.
    pub fn group_of(&self, index: u32) -> Option<&ServerGroup> {
        self.groups.iter().find(|g| g.points.contains(&index))
    }

    /// Keeps the points `keep` accepts and drops the rest, renumbering
    /// points and groups in plan order (a group left with no point goes
    /// too); returns how many points were dropped.
    pub fn keep_points(&mut self, keep: impl Fn(&PointConfig) -> bool) -> usize {
        let before = self.points.len();
        let mut new_index: Vec<Option<u32>> = Vec::with_capacity(before);
        let mut kept = Vec::new();
        for mut p in std::mem::take(&mut self.points) {
            if keep(&p) {
                new_index.push(Some(kept.len() as u32));
                p.index = kept.len() as u32;
                kept.push(p);
            } else {
                new_index.push(None);
            }
        }
        self.points = kept;
        for g in &mut self.groups {
            g.points = g.points.iter().filter_map(|&i| new_index[i as usize]).collect();
        }
        self.groups.retain(|g| !g.points.is_empty());
        for (i, g) in self.groups.iter_mut().enumerate() {
            g.index = i as u32;
        }
        before - self.points.len()
    }

    /// Total measurements: points × repetitions.
    pub fn total(&self) -> u32 {
        self.points.len() as u32 * self.repetitions
    }

    /// The order measurements run in: repetition by repetition (so repetitions
    /// of a point are never back to back), and within a repetition group by
    /// group, rotating the first group each repetition so no configuration
    /// always runs first. Within a group, [`Plan::interleaved`].
    pub fn schedule(&self) -> Vec<(u32, u32, Vec<u32>)> {
        let mut out = Vec::new();
        let n = self.groups.len();
        for rep in 1..=self.repetitions {
            for k in 0..n {
                let g = &self.groups[(k + (rep as usize - 1)) % n];
                out.push((rep, g.index, self.interleaved(g, rep)));
            }
        }
        out
    }

    /// A group's points in the order repetition `rep` measures them: peers
    /// (points that differ only by protocol, [`PointConfig::peer_key`]) back
    /// to back, so the ratios the report forms between them see the machine
    /// in the same state (drift of a shared machine moves rates 30-50% from
    /// one minute to the next); the order of the peer sets, and of the peers
    /// within each, drawn anew each repetition (randomized interleaved
    /// trials, Abedi & Brecht 2017), so no protocol always runs first or
    /// right after a given other. Seeded by the repetition and the group:
    /// the same plan always runs in the same order.
    pub fn interleaved(&self, group: &ServerGroup, rep: u32) -> Vec<u32> {
        let mut sets: Vec<(String, Vec<u32>)> = Vec::new();
        for &p in &group.points {
            let key = self.points.get(p as usize).map(|c| c.peer_key()).unwrap_or_default();
            match sets.iter_mut().find(|(k, _)| *k == key) {
                Some((_, members)) => members.push(p),
                None => sets.push((key, vec![p])),
            }
        }
        let mut rng = fastrand::Rng::with_seed(u64::from(rep) << 32 | u64::from(group.index));
        rng.shuffle(&mut sets);
        for (_, members) in &mut sets {
            rng.shuffle(members);
        }
        sets.into_iter().flat_map(|(_, members)| members).collect()
    }

    /// A rough duration estimate in seconds (for the progress ETA before any point ran).
    pub fn estimate_s(&self) -> f64 {
        let per_point = match self.method() {
            Ok(Method::Discover(d)) => d.step_ns as f64 * 5.0 + self.duration_ns as f64,
            // Stepped: about 20 steps; continuous: at most the whole schedule.
            Ok(Method::SteppedRamp(r)) => r.step_ns as f64 * 20.0,
            Ok(Method::ContinuousRamp(r)) => r.stages().1.iter().map(|s| s.duration_ns as f64).sum(),
            Ok(Method::Fixed | Method::Rate | Method::Stream) => self.duration_ns as f64,
            Err(_) => 0.0,
        } + self.warmup_ns as f64;
        let starts = self.groups.len() as f64 * self.repetitions as f64 * 1.0;
        self.total() as f64 * (per_point / 1e9 + 0.3) + starts
    }

    /// The engine's plan for one point against `target`, at `concurrency`
    /// (search steps override it) for `duration_ns` after `warmup_ns`.
    pub fn load_plan(
        &self,
        point: &PointConfig,
        target: &str,
        concurrency: u32,
        duration_ns: u64,
        warmup_ns: u64,
    ) -> LoadPlan {
        // A fixed count stays that count whatever the callers (at most one
        // per caller); HTTP/1.1 never shares a connection.
        let (connections, per_call) = match point.policy() {
            ConnectionPolicy::Shared(_) if point.protocol.is_http1() => ConnectionPolicy::PerCaller,
            p => p,
        }
        .for_callers(concurrency);
        // On agents, this host's generator CPUs say nothing of theirs: each
        // agent takes one thread per CPU it has (0), unless the preset
        // sets the threads.
        let threads = if self.generator_threads > 0 {
            self.generator_threads
        } else if !self.agents.is_empty() {
            0
        } else {
            self.generator_cpus.as_ref().map_or(0, |c| c.len() as u32)
        };
        // A target is called with its own call, address and TLS settings.
        let own = self.target(&point.server);
        LoadPlan {
            protocol: point.protocol,
            target: own.map_or_else(|| target.to_string(), |t| t.address.clone()),
            workload: own.is_none().then(|| point.workload.clone()),
            custom: own.map(|t| t.custom.clone()),
            concurrency,
            connections,
            per_call,
            rate: point.rate,
            arrival: self.arrival,
            arrival_stream: 0,
            duration_ns: Some(duration_ns),
            requests: None,
            warmup_ns,
            timeout_ns: self.timeout_ns,
            connect_timeout_ns: self.connect_timeout_ns,
            validate: self.validate,
            tls: match own {
                Some(t) => t.tls.clone(),
                None => point.tls.then(|| TlsPlan {
                    insecure: true,
                    ..Default::default()
                }),
            },
            threads: threads.min(connections),
            start_users: 0,
            stages: Vec::new(),
        }
    }

    /// The streaming engine's plan of a `stream` point: `concurrency`
    /// streams, each replaced when it ends (churn) until `duration_ns`;
    /// gRPC multiplexes them on one HTTP/2 connection as a gRPC client
    /// does, HTTP/1.1 (WebSocket, SSE, polling) needs one connection per
    /// stream. `None` for a point that is not a streaming one.
    pub fn stream_plan(&self, point: &PointConfig, target: &str, duration_ns: u64) -> Option<StreamPlan> {
        let s = point.stream?;
        let streams = point.concurrency.max(1);
        let threads = if self.generator_threads > 0 {
            self.generator_threads
        } else {
            self.generator_cpus.as_ref().map_or(1, |c| c.len() as u32)
        };
        Some(StreamPlan {
            protocol: point.protocol,
            transport: s.transport,
            target: target.to_string(),
            workload: point.workload.clone(),
            frames: s.frames,
            streams,
            connections: if point.protocol.is_http2() { 1 } else { streams },
            messages: s.messages,
            rate: s.rate,
            poll_interval_ns: None,
            duration_ns: Some(duration_ns),
            timeout_ns: self.timeout_ns.max(protobench_load::DEFAULT_STREAM_TIMEOUT_NS),
            connect_timeout_ns: self.connect_timeout_ns,
            tls: point.tls.then(|| TlsPlan {
                insecure: true,
                ..Default::default()
            }),
            threads: threads.clamp(1, streams),
        })
    }
}
