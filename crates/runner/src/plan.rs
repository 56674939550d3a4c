//! The resolved plan: every point of a preset's matrix spelled out, grouped
//! by the server process that serves it, with every knob decided. It is
//! built in one place ([`crate::preset::resolve`]) before any process starts
//! or socket opens, stored with the run (so `--resume` needs no preset), and
//! turned into the engine's [`LoadPlan`] per point.

use serde::{Deserialize, Serialize};

use protobench_model::load::{Arrival, ConnectionPolicy, LoadPlan, Protocol, TlsPlan, Validation};
use protobench_model::run::{PointConfig, PointKind};

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
}

impl Default for SteadyWarmup {
    fn default() -> Self {
        SteadyWarmup {
            window_s: 5,
            threshold: 0.02,
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
}

impl Plan {
    /// The group serving point `index`.
    pub fn group_of(&self, index: u32) -> Option<&ServerGroup> {
        self.groups.iter().find(|g| g.points.contains(&index))
    }

    /// Total measurements: points × repetitions.
    pub fn total(&self) -> u32 {
        self.points.len() as u32 * self.repetitions
    }

    /// The order measurements run in: repetition by repetition (so repetitions
    /// of a point are never back to back), and within a repetition group by
    /// group, rotating the first group each repetition so no configuration
    /// always runs first.
    pub fn schedule(&self) -> Vec<(u32, u32, Vec<u32>)> {
        let mut out = Vec::new();
        let n = self.groups.len();
        for rep in 1..=self.repetitions {
            for k in 0..n {
                let g = &self.groups[(k + (rep as usize - 1)) % n];
                out.push((rep, g.index, g.points.clone()));
            }
        }
        out
    }

    /// A rough duration estimate in seconds (for the progress ETA before any point ran).
    pub fn estimate_s(&self) -> f64 {
        let per_point = match self.kind {
            PointKind::Discover => {
                let d = self.discover.as_ref().map_or(0.0, |d| d.step_ns as f64 * 5.0);
                d + self.duration_ns as f64
            }
            PointKind::Ramp => self.ramp.as_ref().map_or(0.0, |r| r.step_ns as f64 * 20.0),
            _ => self.duration_ns as f64,
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
        let threads = if self.generator_threads > 0 {
            self.generator_threads
        } else {
            self.generator_cpus.as_ref().map_or(0, |c| c.len() as u32)
        };
        LoadPlan {
            protocol: point.protocol,
            target: target.to_string(),
            workload: Some(point.workload.clone()),
            custom: None,
            concurrency,
            connections,
            per_call,
            rate: point.rate,
            arrival: self.arrival,
            duration_ns: Some(duration_ns),
            requests: None,
            warmup_ns,
            timeout_ns: self.timeout_ns,
            connect_timeout_ns: self.connect_timeout_ns,
            validate: self.validate,
            tls: point.tls.then(|| TlsPlan {
                insecure: true,
                ..Default::default()
            }),
            threads: threads.min(connections),
        }
    }
}
