//! The top-level values of a preset: its name and kind, the servers,
//! protocols and workloads of its matrix, repetitions, durations, TLS, the
//! noise threshold and validation.

use std::path::Path;
use std::time::Duration;

use protobench_model::load::{
    DEFAULT_CONNECT_TIMEOUT_NS, DEFAULT_DURATION_NS, DEFAULT_TIMEOUT_NS, Protocol, Validation,
};
use protobench_model::run::PointKind;
use protobench_model::stats::DEFAULT_NOISE_THRESHOLD;

use super::Context;
use super::check::Checker;
use super::raw::RawPreset;

/// The top-level values, checked.
pub(super) struct TopLevel {
    pub(super) name: String,
    pub(super) kind: PointKind,
    pub(super) servers: Vec<String>,
    pub(super) protocols: Vec<Protocol>,
    pub(super) workloads: Vec<String>,
    pub(super) repetitions: u32,
    pub(super) warmup: Duration,
    /// `warmup = "steady"`: warm up until steady, at most `warmup`, at
    /// least this long (`warmup_min`).
    pub(super) warmup_steady: Option<Duration>,
    pub(super) duration: Duration,
    pub(super) timeout: Duration,
    pub(super) connect_timeout: Duration,
    pub(super) tls: Vec<bool>,
    pub(super) noise_threshold: f64,
    pub(super) validate: Validation,
}

/// The longest steady-state warm-up when `warmup_max` is not given.
pub(super) const DEFAULT_WARMUP_MAX: Duration = Duration::from_secs(120);

/// The shortest steady-state warm-up when `warmup_min` is not given: the
/// steady-state test's window.
pub(super) const DEFAULT_WARMUP_MIN: Duration = Duration::from_secs(protobench_model::steady::STEADY_WINDOW_S as u64);

/// `warmup`: a duration, or `"steady"` (until the rate stops rising, at
/// least `warmup_min`, at most `warmup_max`); `warmup_min` and `warmup_max`
/// only go with `"steady"`. Returns the warm-up (the maximum when steady)
/// and, when steady, the minimum.
fn warmup(raw: &RawPreset, c: &mut Checker<'_>) -> (Duration, Option<Duration>) {
    let steady = raw
        .warmup
        .as_ref()
        .is_some_and(|w| matches!(w.get_ref(), super::raw::DurationValue::Text(t) if t == "steady"));
    if steady {
        let max = c.duration(raw.warmup_max.as_ref(), "warmup_max", DEFAULT_WARMUP_MAX);
        if max.is_zero()
            && let Some(m) = &raw.warmup_max
        {
            c.issue(m.span(), "warmup_max", "must be longer than 0s");
        }
        let min = c.duration(raw.warmup_min.as_ref(), "warmup_min", DEFAULT_WARMUP_MIN);
        if let Some(m) = &raw.warmup_min
            && min > max
        {
            c.issue(
                m.span(),
                "warmup_min",
                format!(
                    "must not be longer than warmup_max ({}s)",
                    protobench_model::format::plain_number(max.as_secs_f64())
                ),
            );
        }
        return (max, Some(min));
    }
    for (value, key, what) in [
        (&raw.warmup_max, "warmup_max", "the longest"),
        (&raw.warmup_min, "warmup_min", "the shortest"),
    ] {
        if let Some(m) = value {
            c.issue(
                m.span(),
                key,
                format!("only goes with warmup = \"steady\" ({what} a steady-state warm-up may take)"),
            );
        }
    }
    (c.duration(raw.warmup.as_ref(), "warmup", Duration::from_secs(2)), None)
}

/// Checks the top-level values; a preset without `name` is named after its file.
pub(super) fn top_level(raw: &RawPreset, file: &str, ctx: &Context, c: &mut Checker<'_>) -> TopLevel {
    let stem = Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "preset".into());
    let name = raw.name.as_ref().map_or(stem, |n| n.get_ref().clone());
    let kind = c.choice(raw.kind.as_ref(), "kind", PointKind::Fixed);
    let (servers, protocols, workloads) = dimensions(raw, kind, ctx, c);
    let repetitions = c.positive(raw.repetitions.as_ref(), "repetitions", 3, 1);
    let (warmup, warmup_steady) = warmup(raw, c);
    let duration = c.duration(
        raw.duration.as_ref(),
        "duration",
        Duration::from_nanos(DEFAULT_DURATION_NS),
    );
    if let Some(d) = &raw.duration
        && duration.is_zero()
    {
        c.issue(d.span(), "duration", "must be longer than 0s");
    }
    let timeout = c.duration(
        raw.timeout.as_ref(),
        "timeout",
        Duration::from_nanos(DEFAULT_TIMEOUT_NS),
    );
    let connect_timeout = c.duration(
        raw.connect_timeout.as_ref(),
        "connect_timeout",
        Duration::from_nanos(DEFAULT_CONNECT_TIMEOUT_NS),
    );
    TopLevel {
        name,
        kind,
        servers,
        protocols,
        workloads,
        repetitions,
        warmup,
        warmup_steady,
        duration,
        timeout,
        connect_timeout,
        tls: raw.tls.as_ref().map_or(vec![false], |t| t.get_ref().to_vec()),
        noise_threshold: noise_threshold(raw, c),
        validate: c.choice(raw.validate.as_ref(), "validate", Validation::Status),
    }
}

/// `servers`, `protocols` and `workloads`: each listed once, each known.
/// A `stream` preset names streaming workloads, and its listeners follow
/// from `[stream] transports` (`protocols` is refused there).
fn dimensions(
    raw: &RawPreset,
    kind: PointKind,
    ctx: &Context,
    c: &mut Checker<'_>,
) -> (Vec<String>, Vec<Protocol>, Vec<String>) {
    // A preset of targets only starts no server: the three lists may be left out.
    if raw.targets.is_some() && raw.servers.is_none() && raw.protocols.is_none() && raw.workloads.is_none() {
        return (vec![], vec![], vec![]);
    }
    let servers = c.names(raw.servers.as_ref(), "servers", &ctx.catalog.names());
    if kind == PointKind::Stream {
        if let Some(p) = &raw.protocols {
            c.issue(
                p.span(),
                "protocols",
                "a stream preset's listeners follow from [stream] transports (grpc on grpc; websocket, sse, poll on rest): leave protocols out",
            );
        }
        let names: Vec<&str> = protobench_contract::stream::workload::ALL
            .iter()
            .map(|w| w.name)
            .collect();
        let workloads = c.names(raw.workloads.as_ref(), "workloads", &names);
        return (servers, vec![], workloads);
    }
    let protocol_names: Vec<&str> = Protocol::ALL.iter().map(|p| p.name()).collect();
    let protocols = c
        .names(raw.protocols.as_ref(), "protocols", &protocol_names)
        .iter()
        .filter_map(|p| p.parse().ok())
        .collect();
    let workload_names: Vec<&str> = protobench_contract::workload::ALL.iter().map(|w| w.name).collect();
    let workloads = c.names(raw.workloads.as_ref(), "workloads", &workload_names);
    (servers, protocols, workloads)
}

fn noise_threshold(raw: &RawPreset, c: &mut Checker<'_>) -> f64 {
    match &raw.noise_threshold {
        Some(v) if *v.get_ref() <= 0.0 || !v.get_ref().is_finite() => {
            c.issue(
                v.span(),
                "noise_threshold",
                format!("must be above 0, found {}", v.get_ref()),
            );
            DEFAULT_NOISE_THRESHOLD
        }
        Some(v) => *v.get_ref(),
        None => DEFAULT_NOISE_THRESHOLD,
    }
}
