//! Experiment files (`presets/*.toml`, documented in `docs/presets.md`):
//! parsing and validation into a [`Plan`].
//!
//! Every check happens here, before any server starts. Each problem names
//! the file, the line and column, the key, and where it applies the accepted
//! values; all problems are reported at once.

use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use toml::Spanned;

use protobench_model::load::{Arrival, Protocol, Validation};
use protobench_model::run::{PointConfig, PointKind};
use protobench_model::stats::DEFAULT_NOISE_THRESHOLD;

mod check;
mod raw;

use check::Checker;
use raw::{OneOrMany, RawPreset, SizeValue};

use crate::manifest::Catalog;
use crate::plan::{DiscoverSpec, Plan, RampSpec, ServerGroup};
use crate::units::{CpuSet, check_service_time, parse_size};

/// The preset kinds, as written in `kind`.
pub const KINDS: [&str; 4] = ["fixed", "discover", "ramp", "rate"];

/// One problem in a preset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// The key, e.g. `load.concurrency`.
    pub key: String,
    /// What is wrong (and what is accepted).
    pub message: String,
}

/// A preset that cannot be run, with every problem found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresetError {
    /// The file (or `<preset>` for text without a file).
    pub file: String,
    /// The problems, in file order.
    pub issues: Vec<Issue>,
}

impl fmt::Display for PresetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, issue) in self.issues.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(
                f,
                "{}:{}:{}: {}: {}",
                self.file, issue.line, issue.column, issue.key, issue.message
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for PresetError {}

/// 1-based (line, column) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(offset, |nl| offset - nl - 1) + 1;
    (line, col)
}

/// What resolution needs to know about this machine and installation.
#[derive(Debug, Clone)]
pub struct Context {
    /// The servers that can be started.
    pub catalog: Catalog,
    /// The CPUs this process may use.
    pub cpus: CpuSet,
}

/// Reads, validates and resolves a preset file.
pub fn load(path: &Path, ctx: &Context) -> Result<Plan, PresetError> {
    let text = std::fs::read_to_string(path).map_err(|e| PresetError {
        file: path.display().to_string(),
        issues: vec![Issue {
            line: 1,
            column: 1,
            key: "file".into(),
            message: format!("cannot read: {e}"),
        }],
    })?;
    resolve(&text, &path.display().to_string(), ctx)
}

/// Validates and resolves preset text; `file` names it in errors.
pub fn resolve(text: &str, file: &str, ctx: &Context) -> Result<Plan, PresetError> {
    let raw: RawPreset = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        let (line, column) = line_col(text, span.start);
        let key = key_at(text, span.start);
        PresetError {
            file: file.into(),
            issues: vec![Issue {
                line,
                column,
                key,
                message: e.message().trim().replace('\n', " "),
            }],
        }
    })?;
    let mut c = Checker {
        text,
        issues: Vec::new(),
    };
    let plan = build(&raw, file, ctx, &mut c);
    if c.issues.is_empty() {
        Ok(plan)
    } else {
        c.issues.sort_by_key(|i| (i.line, i.column));
        Err(PresetError {
            file: file.into(),
            issues: c.issues,
        })
    }
}

/// The key on the line of `offset` (`name = ...` or `[table]`), for syntax errors.
fn key_at(text: &str, offset: usize) -> String {
    let (line, _) = line_col(text, offset);
    let l = text.lines().nth(line - 1).unwrap_or("").trim();
    if let Some(t) = l.strip_prefix('[') {
        return t.trim_end_matches(']').trim().to_string();
    }
    let table = text
        .lines()
        .take(line - 1)
        .filter_map(|l| {
            l.trim()
                .strip_prefix('[')
                .map(|t| t.trim_end_matches(']').trim().to_string())
        })
        .last();
    let key = l.split('=').next().unwrap_or("").trim().to_string();
    match (table, key.is_empty()) {
        (_, true) => "preset".into(),
        (Some(t), false) => format!("{t}.{key}"),
        (None, false) => key,
    }
}

fn build(raw: &RawPreset, file: &str, ctx: &Context, c: &mut Checker<'_>) -> Plan {
    let stem = Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "preset".into());
    let name = raw.name.as_ref().map_or(stem, |n| n.get_ref().clone());
    let kind = match c.choice(&raw.kind, "kind", &KINDS, "fixed").as_str() {
        "discover" => PointKind::Discover,
        "ramp" => PointKind::Ramp,
        "rate" => PointKind::Rate,
        _ => PointKind::Fixed,
    };
    let server_names: Vec<&str> = ctx.catalog.names();
    let servers = c.names(&raw.servers, "servers", &server_names);
    let protocol_names: Vec<&str> = Protocol::ALL.iter().map(|p| p.name()).collect();
    let protocols: Vec<Protocol> = c
        .names(&raw.protocols, "protocols", &protocol_names)
        .iter()
        .filter_map(|p| p.parse().ok())
        .collect();
    let workload_names: Vec<&str> = protobench_contract::workload::ALL.iter().map(|w| w.name).collect();
    let workloads = c.names(&raw.workloads, "workloads", &workload_names);

    let repetitions = c.positive(&raw.repetitions, "repetitions", 3, 1);
    let warmup = c.duration(&raw.warmup, "warmup", Duration::from_secs(2));
    let duration = c.duration(&raw.duration, "duration", Duration::from_secs(10));
    if let Some(d) = &raw.duration
        && duration.is_zero()
    {
        c.issue(d.span(), "duration", "must be longer than 0s");
    }
    let timeout = c.duration(&raw.timeout, "timeout", Duration::from_secs(10));
    let connect_timeout = c.duration(&raw.connect_timeout, "connect_timeout", Duration::from_secs(5));
    let tls_values = raw.tls.as_ref().map_or(vec![false], |t| t.get_ref().to_vec());
    let noise_threshold = match &raw.noise_threshold {
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
    };
    let validate = match c
        .choice(&raw.validate, "validate", &["status", "full"], "status")
        .as_str()
    {
        "full" => Validation::Full,
        _ => Validation::Status,
    };

    // [load]
    let load = raw.load.as_ref().map(|l| l.get_ref());
    let default_mode = if kind == PointKind::Rate { "open" } else { "closed" };
    let mode = c.choice(
        &load.and_then(|l| l.mode.clone()),
        "load.mode",
        &["closed", "open"],
        default_mode,
    );
    let open = mode == "open";
    if kind == PointKind::Rate
        && !open
        && let Some(m) = load.and_then(|l| l.mode.as_ref())
    {
        c.issue(
            m.span(),
            "load.mode",
            "kind = \"rate\" is open loop: use mode = \"open\" or leave it out",
        );
    }
    if matches!(kind, PointKind::Discover | PointKind::Ramp)
        && let Some(m) = load.and_then(|l| l.mode.as_ref())
        && open
    {
        c.issue(
            m.span(),
            "load.mode",
            format!("kind = \"{}\" is closed loop: use mode = \"closed\"", kind.name()),
        );
    }
    let arrival = match c
        .choice(
            &load.and_then(|l| l.arrival.clone()),
            "load.arrival",
            &["uniform", "poisson"],
            "uniform",
        )
        .as_str()
    {
        "poisson" => Arrival::Poisson,
        _ => Arrival::Uniform,
    };
    let mut counts = |v: Option<&Spanned<OneOrMany<i64>>>, key: &str| -> Option<Vec<u32>> {
        let v = v?;
        let list = v.get_ref().to_vec();
        if list.is_empty() {
            c.issue(v.span(), key, "is empty");
        }
        let mut out = Vec::new();
        for n in list {
            if !(1..=1_000_000).contains(&n) {
                c.issue(v.span(), key, format!("must be between 1 and 1000000, found {n}"));
            } else {
                out.push(n as u32);
            }
        }
        Some(out)
    };
    let concurrency = counts(load.and_then(|l| l.concurrency.as_ref()), "load.concurrency");
    let connections = counts(load.and_then(|l| l.connections.as_ref()), "load.connections");
    let rates: Option<Vec<f64>> = load.and_then(|l| l.rate.as_ref()).map(|v| {
        let list = v.get_ref().to_vec();
        if list.is_empty() {
            c.issue(v.span(), "load.rate", "is empty");
        }
        list.into_iter()
            .filter(|r| {
                let ok = r.is_finite() && *r > 0.0;
                if !ok {
                    c.issue(v.span(), "load.rate", format!("must be above 0 calls/s, found {r}"));
                }
                ok
            })
            .collect()
    });
    let load_span = raw.load.as_ref().map_or(0..0, |l| l.span());
    // Which load values each kind needs.
    let (concurrency, rates) = match (kind, open) {
        (PointKind::Fixed, false) => {
            if let Some(r) = load.and_then(|l| l.rate.as_ref()) {
                c.issue(
                    r.span(),
                    "load.rate",
                    "is for open loop: set load.mode = \"open\" or remove it",
                );
            }
            (
                concurrency.unwrap_or_else(|| {
                    c.issue(
                        load_span.clone(),
                        "load.concurrency",
                        "missing: closed loop needs the calls in flight (e.g. concurrency = [1, 10, 50])",
                    );
                    vec![]
                }),
                vec![None],
            )
        }
        (PointKind::Fixed | PointKind::Rate, true) => {
            let rates = rates.unwrap_or_else(|| {
                c.issue(
                    load_span.clone(),
                    "load.rate",
                    "missing: open loop needs calls per second (e.g. rate = [1, 100, 1000])",
                );
                vec![]
            });
            let cap = concurrency.unwrap_or_else(|| vec![64]);
            if cap.len() > 1
                && let Some(v) = load.and_then(|l| l.concurrency.as_ref())
            {
                c.issue(
                    v.span(),
                    "load.concurrency",
                    "open loop takes one concurrency cap, not a list",
                );
            }
            (cap.into_iter().take(1).collect(), rates.into_iter().map(Some).collect())
        }
        (PointKind::Discover | PointKind::Ramp, _) => {
            for (v, key) in [
                (
                    load.and_then(|l| l.concurrency.as_ref()).map(|v| v.span()),
                    "load.concurrency",
                ),
                (load.and_then(|l| l.rate.as_ref()).map(|v| v.span()), "load.rate"),
            ] {
                if let Some(span) = v {
                    c.issue(
                        span,
                        key,
                        format!(
                            "is chosen by the search with kind = \"{}\": remove it (set [{}] instead)",
                            kind.name(),
                            kind.name()
                        ),
                    );
                }
            }
            (vec![0], vec![None])
        }
        (PointKind::Rate, false) => (vec![], vec![]),
    };
    let connections_list = connections.clone().unwrap_or_default();
    if let (Some(conns), Some(v)) = (&connections, load.and_then(|l| l.connections.as_ref())) {
        for &conn in conns {
            for &conc in concurrency.iter().filter(|c| **c > 0) {
                if conn > conc {
                    c.issue(
                        v.span(),
                        "load.connections",
                        format!("number of connections ({conn}) cannot be greater than load.concurrency ({conc})"),
                    );
                }
            }
        }
    }

    // [discover] / [ramp]
    let discover = raw.discover.as_ref().map(|d| {
        if kind != PointKind::Discover {
            c.issue(
                d.span(),
                "discover",
                format!(
                    "is only used with kind = \"discover\" (this preset has kind = \"{}\")",
                    kind.name()
                ),
            );
        }
        let d = d.get_ref();
        DiscoverSpec {
            start: c.positive(&d.start, "discover.start", 2, 1),
            factor: c.positive(&d.factor, "discover.factor", 2, 2),
            min_gain: c.fraction(&d.min_gain, "discover.min_gain", 0.02),
            max: c.positive(&d.max, "discover.max", 1024, 1),
            step_ns: c
                .duration(&d.step_duration, "discover.step_duration", duration)
                .as_nanos() as u64,
        }
    });
    let discover = match (kind, discover) {
        (PointKind::Discover, None) => Some(DiscoverSpec {
            start: 2,
            factor: 2,
            min_gain: 0.02,
            max: 1024,
            step_ns: duration.as_nanos() as u64,
        }),
        (_, d) => d,
    };
    let ramp = raw.ramp.as_ref().map(|r| {
        if kind != PointKind::Ramp {
            c.issue(
                r.span(),
                "ramp",
                format!(
                    "is only used with kind = \"ramp\" (this preset has kind = \"{}\")",
                    kind.name()
                ),
            );
        }
        let r = r.get_ref();
        RampSpec {
            start: c.positive(&r.start, "ramp.start", 1, 1),
            step: c.positive(&r.step, "ramp.step", 15, 1),
            step_ns: c
                .duration(&r.step_duration, "ramp.step_duration", Duration::from_secs(1))
                .as_nanos() as u64,
            max: c.positive(&r.max, "ramp.max", 2000, 1),
            min_gain: c.fraction(&r.min_gain, "ramp.min_gain", 0.01),
            patience: c.positive(&r.patience, "ramp.patience", 3, 1),
            max_error_rate: c.fraction(&r.max_error_rate, "ramp.max_error_rate", 0.01),
        }
    });
    let ramp = match (kind, ramp) {
        (PointKind::Ramp, None) => Some(RampSpec {
            start: 1,
            step: 15,
            step_ns: 1_000_000_000,
            max: 2000,
            min_gain: 0.01,
            patience: 3,
            max_error_rate: 0.01,
        }),
        (_, r) => r,
    };

    // [server] / [generator]
    let server = raw.server.as_ref().map(|s| s.get_ref());
    let generator = raw.generator.as_ref().map(|g| g.get_ref());
    let mut cpu_set = |v: Option<&Spanned<String>>, key: &str| -> Option<(CpuSet, Range<usize>)> {
        let v = v?;
        match CpuSet::parse(v.get_ref()) {
            Ok(set) if !set.is_subset(&ctx.cpus) => {
                c.issue(
                    v.span(),
                    key,
                    format!("CPUs `{}` are not all available (available: {})", v.get_ref(), ctx.cpus),
                );
                None
            }
            Ok(set) => Some((set, v.span())),
            Err(e) => {
                c.issue(v.span(), key, e);
                None
            }
        }
    };
    let server_cpus = cpu_set(server.and_then(|s| s.cpus.as_ref()), "server.cpus");
    let generator_cpus = cpu_set(generator.and_then(|g| g.cpus.as_ref()), "generator.cpus");
    let mut notes = Vec::new();
    let (server_cpus, generator_cpus) = match (server_cpus, generator_cpus) {
        (Some((s, _)), Some((g, span))) => {
            if s.overlaps(&g) {
                c.issue(
                    span,
                    "generator.cpus",
                    format!("CPUs `{g}` overlap server.cpus `{s}`: server and generator must run on disjoint CPU sets"),
                );
            }
            (Some(s), Some(g))
        }
        (Some((s, _)), None) => {
            let rest = CpuSet(ctx.cpus.0.difference(&s.0).copied().collect());
            if rest.is_empty() {
                notes.push(format!(
                    "server.cpus `{s}` leaves no CPU for the generator: the generator is not pinned"
                ));
                (Some(s), None)
            } else {
                (Some(s), Some(rest))
            }
        }
        (None, Some((g, _))) => {
            let rest = CpuSet(ctx.cpus.0.difference(&g.0).copied().collect());
            if rest.is_empty() {
                notes.push(format!(
                    "generator.cpus `{g}` leaves no CPU for the server: the server is not pinned"
                ));
                (None, Some(g))
            } else {
                (Some(rest), Some(g))
            }
        }
        (None, None) => default_cpu_split(&ctx.cpus, &mut notes),
    };
    let workers = server
        .and_then(|s| s.workers.as_ref())
        .map(|_| c.positive(&server.and_then(|s| s.workers.clone()), "server.workers", 1, 1));
    let generator_threads = c.positive(&generator.and_then(|g| g.threads.clone()), "generator.threads", 0, 0);
    let cpu_limits: Vec<Option<f64>> = match server.and_then(|s| s.cpu_limit.as_ref()) {
        None => vec![None],
        Some(v) => v
            .get_ref()
            .to_vec()
            .into_iter()
            .filter_map(|x| {
                if !(x.is_finite() && x > 0.0) {
                    c.issue(
                        v.span(),
                        "server.cpu_limit",
                        format!("must be a number of cores above 0, found {x}"),
                    );
                    None
                } else {
                    if x > ctx.cpus.len() as f64 {
                        notes.push(format!(
                            "server.cpu_limit {x} is more than the {} CPUs available",
                            ctx.cpus.len()
                        ));
                    }
                    Some(Some(x))
                }
            })
            .collect(),
    };
    let memory_limits: Vec<Option<u64>> = match server.and_then(|s| s.memory_limit.as_ref()) {
        None => vec![None],
        Some(v) => v
            .get_ref()
            .to_vec()
            .into_iter()
            .filter_map(|x| {
                let bytes = match x {
                    SizeValue::Bytes(b) => Ok(b),
                    SizeValue::Text(t) => parse_size(&t),
                };
                match bytes {
                    Ok(b) if b >= 16 * 1024 * 1024 => Some(Some(b)),
                    Ok(b) => {
                        c.issue(
                            v.span(),
                            "server.memory_limit",
                            format!("{b} bytes is below the 16MiB minimum"),
                        );
                        None
                    }
                    Err(e) => {
                        c.issue(v.span(), "server.memory_limit", e);
                        None
                    }
                }
            })
            .collect(),
    };
    let failure_rates: Vec<f64> = match server.and_then(|s| s.failure_rate.as_ref()) {
        None => vec![0.0],
        Some(v) => v
            .get_ref()
            .to_vec()
            .into_iter()
            .filter(|x| {
                let ok = (0.0..=1.0).contains(x);
                if !ok {
                    c.issue(
                        v.span(),
                        "server.failure_rate",
                        format!("must be a fraction between 0 and 1, found {x}"),
                    );
                }
                ok
            })
            .collect(),
    };
    let failure_seed = match server.and_then(|s| s.failure_seed.as_ref()) {
        None => 1,
        Some(v) if *v.get_ref() < 0 => {
            c.issue(
                v.span(),
                "server.failure_seed",
                format!("must be an unsigned integer, found {}", v.get_ref()),
            );
            1
        }
        Some(v) => *v.get_ref() as u64,
    };
    let service_times: Vec<Option<String>> = match server.and_then(|s| s.service_time.as_ref()) {
        None => vec![None],
        Some(v) => v
            .get_ref()
            .to_vec()
            .into_iter()
            .filter_map(|s| match check_service_time(&s) {
                Ok(()) => Some(Some(s)),
                Err(e) => {
                    c.issue(v.span(), "server.service_time", e);
                    None
                }
            })
            .collect(),
    };

    // Protocols each server serves.
    let mut points = Vec::new();
    let mut groups: Vec<ServerGroup> = Vec::new();
    for s in &servers {
        let Some(manifest) = ctx.catalog.servers.get(s) else {
            continue;
        };
        let served: Vec<Protocol> = protocols
            .iter()
            .copied()
            .filter(|p| manifest.protocols.contains(p))
            .collect();
        let serves = protobench_contract::protocol::names(&manifest.protocols, ", ");
        for p in protocols.iter().filter(|p| !manifest.protocols.contains(p)) {
            notes.push(format!("server `{s}` does not serve `{p}` (serves: {serves}): skipped"));
        }
        if served.is_empty() {
            if let Some(list) = &raw.protocols
                && !protocols.is_empty()
            {
                c.issue(
                    list.span(),
                    "protocols",
                    format!("server `{s}` serves none of these (serves: {serves})"),
                );
            }
            continue;
        }
        for &tls in &tls_values {
            for &failure_rate in &failure_rates {
                for service_time in &service_times {
                    for &cpu_limit in &cpu_limits {
                        for &memory_limit in &memory_limits {
                            let mut group = ServerGroup {
                                index: groups.len() as u32,
                                server: s.clone(),
                                tls,
                                failure_rate,
                                failure_seed,
                                service_time: service_time.clone(),
                                cpu_limit,
                                memory_limit_bytes: memory_limit,
                                workers,
                                protocols: served.clone(),
                                points: vec![],
                            };
                            for p in &served {
                                for w in &workloads {
                                    for &conc in &concurrency {
                                        // HTTP/1.1 carries one call per connection at a
                                        // time: its connections always equal concurrency.
                                        let http1 = p.is_http1();
                                        let conns: Vec<u32> = if http1 || connections_list.is_empty() {
                                            vec![conc]
                                        } else {
                                            connections_list.clone()
                                        };
                                        for conn in conns {
                                            for rate in &rates {
                                                let index = points.len() as u32;
                                                points.push(PointConfig {
                                                    index,
                                                    server: s.clone(),
                                                    protocol: *p,
                                                    workload: w.clone(),
                                                    tls,
                                                    kind,
                                                    concurrency: match kind {
                                                        PointKind::Discover => discover.as_ref().map_or(2, |d| d.start),
                                                        PointKind::Ramp => ramp.as_ref().map_or(1, |r| r.start),
                                                        _ => conc,
                                                    },
                                                    connections: conn.min(conc.max(1)),
                                                    rate: *rate,
                                                    failure_rate,
                                                    service_time: service_time.clone(),
                                                    cpu_limit,
                                                    memory_limit_bytes: memory_limit,
                                                });
                                                group.points.push(index);
                                            }
                                        }
                                    }
                                }
                            }
                            groups.push(group);
                        }
                    }
                }
            }
        }
    }
    if c.issues.is_empty() && points.is_empty() {
        c.issue(
            0..0,
            "preset",
            "resolves to no points: check servers, protocols, workloads and load",
        );
    }
    Plan {
        preset: name,
        preset_path: Some(file.to_string()),
        description: raw.description.clone().unwrap_or_default(),
        kind,
        repetitions,
        warmup_ns: warmup.as_nanos() as u64,
        duration_ns: duration.as_nanos() as u64,
        timeout_ns: timeout.as_nanos() as u64,
        connect_timeout_ns: connect_timeout.as_nanos() as u64,
        validate,
        arrival,
        noise_threshold,
        server_cpus,
        generator_cpus,
        generator_threads,
        discover,
        ramp,
        points,
        groups,
        notes,
    }
}

/// The default split when a preset sets no CPUs: with two or more CPUs the
/// server gets the first half (at least CPU 0) and the generator the rest
/// (on a 2-core machine: server CPU 0, generator CPU 1).
pub fn default_cpu_split(cpus: &CpuSet, notes: &mut Vec<String>) -> (Option<CpuSet>, Option<CpuSet>) {
    let all: Vec<usize> = cpus.0.iter().copied().collect();
    if all.len() < 2 {
        notes.push(format!(
            "only {} CPU available: server and generator share it (not pinned)",
            all.len()
        ));
        return (None, None);
    }
    let half = all.len() / 2;
    (
        Some(CpuSet(all[..half].iter().copied().collect())),
        Some(CpuSet(all[half..].iter().copied().collect())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        Context {
            catalog: Catalog::load(None),
            cpus: CpuSet::parse("0-1").unwrap(),
        }
    }

    #[test]
    fn line_col_table() {
        let text = "a = 1\nbb = 2\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 4), (1, 5));
        assert_eq!(line_col(text, 6), (2, 1));
        assert_eq!(line_col(text, 11), (2, 6));
    }

    #[test]
    fn key_at_names_table_keys() {
        let text = "kind = \"fixed\"\n[load]\nmode = 3\n";
        assert_eq!(key_at(text, 0), "kind");
        assert_eq!(key_at(text, text.find("mode").unwrap()), "load.mode");
        assert_eq!(key_at(text, text.find("[load]").unwrap()), "load");
    }

    #[test]
    fn default_split_on_two_cpus() {
        let mut notes = vec![];
        let (s, g) = default_cpu_split(&CpuSet::parse("0-1").unwrap(), &mut notes);
        assert_eq!(
            (s.unwrap().to_string(), g.unwrap().to_string()),
            ("0".into(), "1".into())
        );
        let (s, g) = default_cpu_split(&CpuSet::parse("0").unwrap(), &mut notes);
        assert!(s.is_none() && g.is_none() && notes.len() == 1);
    }

    #[test]
    fn minimal_preset_resolves() {
        let text = r#"
servers = ["rust"]
protocols = ["rest", "grpc"]
workloads = ["inventory.xs"]
[load]
concurrency = [1, 8]
"#;
        let plan = resolve(text, "presets/x.toml", &ctx()).unwrap();
        assert_eq!(plan.preset, "x");
        assert_eq!(plan.points.len(), 4);
        assert_eq!(plan.groups.len(), 1);
        assert_eq!(plan.groups[0].protocols, [Protocol::Rest, Protocol::Grpc]);
        assert_eq!(plan.points[1].concurrency, 8);
        assert_eq!(plan.points[1].connections, 8);
    }
}
