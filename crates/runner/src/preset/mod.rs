//! Experiment files (`presets/*.toml`, documented in `docs/presets.md`):
//! parsing and validation into a [`Plan`].
//!
//! Every check happens here, before any server starts. Each problem names
//! the file, the line and column, the key, and where it applies the accepted
//! values; all problems are reported at once.

use std::fmt;
use std::path::Path;

use protobench_model::run::PointKind;

mod agents;
mod check;
mod findings;
mod load_spec;
mod machine;
mod matrix;
mod network;
mod raw;
mod search;
mod stream;
mod targets;
mod top;

use check::Checker;
use raw::RawPreset;

pub use crate::location::line_col;
use crate::manifest::Catalog;
use crate::plan::Plan;
use crate::units::CpuSet;

/// One problem in a preset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// 1-based line; 0 for a command-line override (`resolve_with`).
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
            if issue.line == 0 {
                // From the command line (`resolve_with`).
                write!(f, "{}: {} (command line, for {})", issue.key, issue.message, self.file)?;
            } else {
                write!(
                    f,
                    "{}:{}:{}: {}: {}",
                    self.file, issue.line, issue.column, issue.key, issue.message
                )?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for PresetError {}

impl PresetError {
    /// Every problem is in a scalar the command line gave (`--time-scale`,
    /// `--repetitions`, `--threshold`): the preset itself is valid.
    pub fn command_line_only(&self) -> bool {
        let scalar = [
            Flag::TimeScale,
            Flag::Repetitions,
            Flag::Threshold,
            Flag::UntilDecided,
            Flag::Agents,
        ]
        .map(Flag::name);
        !self.issues.is_empty()
            && self
                .issues
                .iter()
                .all(|i| i.line == 0 && scalar.contains(&i.key.as_str()))
    }
}

/// What resolution needs to know about this machine and installation.
#[derive(Debug, Clone)]
pub struct Context {
    /// The servers that can be started.
    pub catalog: Catalog,
    /// The CPUs this process may use.
    pub cpus: CpuSet,
}

impl Context {
    /// The context unit tests resolve presets in: the built-in catalog, CPUs 0-1.
    #[cfg(test)]
    pub(crate) fn for_tests() -> Context {
        Context {
            catalog: Catalog::load(None),
            cpus: CpuSet::parse("0-1").expect("a CPU list"),
        }
    }
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

/// Top-level lists of a preset replaced from the command line
/// (`protobench run PRESET --servers go,python --protocols rest,grpc
/// --workloads ...`), so that a study can be run on other stacks without
/// editing it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `--servers`.
    pub servers: Option<Vec<String>>,
    /// `--protocols`.
    pub protocols: Option<Vec<String>>,
    /// `--workloads`.
    pub workloads: Option<Vec<String>>,
}

/// Everything `protobench run` changes in a preset: the lists of
/// [`Overrides`] and the experiment's scalars. [`resolve_command`] turns
/// the preset and these into one validated [`Plan`] (nothing is changed
/// after it); a problem in them is named by its flag.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommandLine {
    /// `--servers`, `--protocols`, `--workloads`.
    pub lists: Overrides,
    /// `--time-scale`: every warm-up, measured window and search step
    /// multiplied by this (applied first).
    pub time_scale: Option<f64>,
    /// `--duration`: the measured window of each point.
    pub duration: Option<std::time::Duration>,
    /// `--warmup` (with a steady warm-up: its maximum).
    pub warmup: Option<std::time::Duration>,
    /// `--repetitions`.
    pub repetitions: Option<u32>,
    /// `--threshold`, as written (added to the preset's own).
    pub thresholds: Vec<String>,
    /// `--until-decided --budget`: the budget of the rounds that are added
    /// while a claim is undecided.
    pub until_decided: Option<std::time::Duration>,
    /// `--claims-only`: measure only the points the preset's claims read.
    pub claims_only: bool,
    /// `--agents`: replaces the preset's `agents` (checked by its rules).
    pub agents: Option<Vec<String>>,
}

impl CommandLine {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == CommandLine::default()
    }
}

/// A command-line flag that can replace a preset value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flag {
    Servers,
    Protocols,
    Workloads,
    TimeScale,
    Repetitions,
    Threshold,
    UntilDecided,
    ClaimsOnly,
    Agents,
}

impl Flag {
    const ALL: [Flag; 9] = [
        Flag::Servers,
        Flag::Protocols,
        Flag::Workloads,
        Flag::TimeScale,
        Flag::Repetitions,
        Flag::Threshold,
        Flag::UntilDecided,
        Flag::ClaimsOnly,
        Flag::Agents,
    ];

    fn name(self) -> &'static str {
        match self {
            Flag::Servers => "--servers",
            Flag::Protocols => "--protocols",
            Flag::Workloads => "--workloads",
            Flag::TimeScale => "--time-scale",
            Flag::Repetitions => "--repetitions",
            Flag::Threshold => "--threshold",
            Flag::UntilDecided => "--until-decided",
            Flag::ClaimsOnly => "--claims-only",
            Flag::Agents => "--agents",
        }
    }

    /// The place a value from this flag carries instead of a position in
    /// the file: far past any text, so [`Checker::issue`] knows it for the flag.
    fn span(self) -> std::ops::Range<usize> {
        let at = FLAG_SPANS + self as usize;
        at..at
    }

    /// The flag whose place `offset` is, if it is one.
    fn at(offset: usize) -> Option<Flag> {
        offset.checked_sub(FLAG_SPANS).and_then(|i| Flag::ALL.get(i).copied())
    }
}

/// Where [`Flag::span`]s start (no preset text is this long).
const FLAG_SPANS: usize = usize::MAX / 2;

impl Overrides {
    /// The overridden lists with the flag each came from.
    fn entries(&self) -> Vec<(Flag, &Vec<String>)> {
        [
            (Flag::Servers, &self.servers),
            (Flag::Protocols, &self.protocols),
            (Flag::Workloads, &self.workloads),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
        .collect()
    }

    /// Nothing to override.
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }

    /// Puts the lists in place of the preset's own, each value placed at
    /// its flag, so that they are checked by the same rules as the file.
    fn apply(&self, raw: &mut RawPreset) {
        for (flag, values) in self.entries() {
            let list = values
                .iter()
                .map(|v| toml::Spanned::new(flag.span(), v.clone()))
                .collect();
            let value = Some(toml::Spanned::new(flag.span(), list));
            match flag {
                Flag::Servers => raw.servers = value,
                Flag::Protocols => raw.protocols = value,
                _ => raw.workloads = value,
            }
        }
    }
}

/// Reads, validates and resolves a preset file with command-line overrides.
pub fn load_with(path: &Path, ctx: &Context, overrides: &Overrides) -> Result<Plan, PresetError> {
    load_command(
        path,
        ctx,
        &CommandLine {
            lists: overrides.clone(),
            ..Default::default()
        },
    )
}

/// Reads, validates and resolves a preset file with the command line's changes.
pub fn load_command(path: &Path, ctx: &Context, command: &CommandLine) -> Result<Plan, PresetError> {
    let text = std::fs::read_to_string(path).map_err(|e| PresetError {
        file: path.display().to_string(),
        issues: vec![Issue {
            line: 1,
            column: 1,
            key: "file".into(),
            message: format!("cannot read: {e}"),
        }],
    })?;
    resolve_command(&text, &path.display().to_string(), ctx, command)
}

/// [`resolve`] with the overridden lists in place of the preset's own,
/// checked by the same rules as the file; a problem in them is reported as
/// `--servers: ...` instead of a file position.
pub fn resolve_with(text: &str, file: &str, ctx: &Context, overrides: &Overrides) -> Result<Plan, PresetError> {
    resolve_command(
        text,
        file,
        ctx,
        &CommandLine {
            lists: overrides.clone(),
            ..Default::default()
        },
    )
}

/// The one conversion from a preset and the command line to a validated
/// plan: the lists replace the preset's before any check; the time scale,
/// then the duration, warm-up and repetitions are decided and noted; the
/// thresholds join the preset's. Every problem, in the file or on the
/// command line, is reported at once.
pub fn resolve_command(text: &str, file: &str, ctx: &Context, command: &CommandLine) -> Result<Plan, PresetError> {
    let mut raw = parse(text, file)?;
    command.lists.apply(&mut raw);
    if let Some(agents) = &command.agents {
        let list = agents
            .iter()
            .map(|a| toml::Spanned::new(Flag::Agents.span(), a.clone()))
            .collect();
        raw.agents = Some(toml::Spanned::new(Flag::Agents.span(), list));
    }
    let mut c = Checker::new(text);
    let mut plan = build(&raw, file, ctx, &mut c);
    decide_scalars(&mut plan, command, &mut c);
    if command.claims_only {
        keep_claimed(&mut plan, &mut c);
    }
    if c.issues.is_empty() {
        Ok(plan)
    } else {
        // Command-line problems (line 0) first, then the file's in order.
        c.issues.sort_by_key(|i| (i.line, i.column));
        Err(PresetError {
            file: file.into(),
            issues: c.issues,
        })
    }
}

/// The command line's scalars, in the order they apply: the time scale
/// multiplies the preset's durations, then `--duration` and `--warmup`
/// replace theirs (unscaled), `--repetitions` the count; each is noted.
fn decide_scalars(plan: &mut Plan, command: &CommandLine, c: &mut Checker<'_>) {
    if let Some(scale) = command.time_scale
        && let Err(e) = plan.scale_time(scale)
    {
        let message = e.strip_prefix("--time-scale: ").unwrap_or(&e).to_string();
        c.issue(Flag::TimeScale.span(), "--time-scale", message);
    }
    if let Some(d) = command.duration {
        plan.duration_ns = d.as_nanos() as u64;
        plan.notes.push(format!("duration overridden to {d:?} (--duration)"));
    }
    if let Some(w) = command.warmup {
        plan.warmup_ns = w.as_nanos() as u64;
        plan.notes.push(format!("warm-up overridden to {w:?} (--warmup)"));
    }
    match command.repetitions {
        Some(0) => c.issue(Flag::Repetitions.span(), "--repetitions", "must be at least 1"),
        Some(r) => {
            plan.repetitions = r;
            plan.notes
                .push(format!("repetitions overridden to {r} (--repetitions)"));
        }
        None => {}
    }
    match protobench_model::threshold::parse_all(&command.thresholds) {
        Ok(t) => plan.thresholds.extend(t),
        Err(e) => c.issue(Flag::Threshold.span(), "--threshold", e.to_string()),
    }
    if let Some(budget) = command.until_decided {
        if plan.findings.is_empty() {
            c.issue(
                Flag::UntilDecided.span(),
                "--until-decided",
                "the preset states no claims (`[[findings]]`) to decide",
            );
        } else if budget.is_zero() {
            c.issue(
                Flag::UntilDecided.span(),
                "--until-decided",
                "--budget must be above 0 s",
            );
        } else {
            plan.until_decided = Some(crate::plan::UntilDecided {
                budget_ns: budget.as_nanos() as u64,
                first: plan.repetitions,
                round: crate::plan::ROUND_REPETITIONS,
                used_ns: 0,
            });
            plan.notes.push(format!(
                "until decided: rounds of {} repetitions are added while a claim's direction is undecided, within a budget of {} (--until-decided --budget)",
                crate::plan::ROUND_REPETITIONS,
                protobench_model::format::fmt_duration(budget)
            ));
        }
    }
}

/// `--claims-only`: drops the points no claim reads (a study rerun whose
/// claims compare a few points of a large matrix; docs/studies.md), and
/// notes how many; the claims then read the same points as in a full run.
fn keep_claimed(plan: &mut Plan, c: &mut Checker<'_>) {
    if plan.findings.is_empty() {
        c.issue(
            Flag::ClaimsOnly.span(),
            "--claims-only",
            "the preset states no claims (`[[findings]]`) whose points to keep",
        );
        return;
    }
    let all = plan.points.len();
    let findings = plan.findings.clone();
    let dropped = plan.keep_points(|p| findings.iter().any(|f| f.selectors().iter().any(|s| s.matches(p))));
    if plan.points.is_empty() {
        c.issue(
            Flag::ClaimsOnly.span(),
            "--claims-only",
            "no claim reads a point of this plan: nothing would be measured",
        );
        return;
    }
    plan.notes.push(format!(
        "claims only: {} of the preset's {all} points are measured, those its claims read; the {dropped} others are left out (--claims-only)",
        plan.points.len()
    ));
}

/// The preset text as written, or its syntax error at its place.
fn parse(text: &str, file: &str) -> Result<RawPreset, PresetError> {
    toml::from_str(text).map_err(|e| {
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
    })
}

/// Validates and resolves preset text; `file` names it in errors.
pub fn resolve(text: &str, file: &str, ctx: &Context) -> Result<Plan, PresetError> {
    resolve_command(text, file, ctx, &CommandLine::default())
}

/// The key on the line of `offset` (`name = ...` or `[table]`), for syntax errors.
fn key_at(text: &str, offset: usize) -> String {
    let (line, _) = line_col(text, offset);
    let l = text.lines().nth(line - 1).unwrap_or("").trim();
    // `[table]` or `[[array of tables]]`.
    if let Some(t) = l.strip_prefix('[') {
        return t.trim_start_matches('[').trim_end_matches(']').trim().to_string();
    }
    let table = text
        .lines()
        .take(line - 1)
        .filter_map(|l| {
            l.trim()
                .strip_prefix('[')
                .map(|t| t.trim_start_matches('[').trim_end_matches(']').trim().to_string())
        })
        .last();
    let key = l.split('=').next().unwrap_or("").trim().to_string();
    match (table, key.is_empty()) {
        (_, true) => "preset".into(),
        (Some(t), false) => format!("{t}.{key}"),
        (None, false) => key,
    }
}

/// Checks every section in file order and expands the matrix.
fn build(raw: &RawPreset, file: &str, ctx: &Context, c: &mut Checker<'_>) -> Plan {
    let mut top = top::top_level(raw, file, ctx, c);
    let load = load_spec::load_spec(raw.load.as_ref(), top.kind, c);
    let stream = stream::stream_spec(raw.stream.as_ref(), top.kind, c);
    if let Some(spec) = &stream {
        for t in &spec.transports {
            let p = stream::listener(*t);
            if !top.protocols.contains(&p) {
                top.protocols.push(p);
            }
        }
    }
    let discover = search::discover(raw.discover.as_ref(), top.kind, top.duration, c);
    let ramp = search::ramp(raw.ramp.as_ref(), top.kind, c);
    let mut notes = Vec::new();
    let machine = machine::machine(raw.server.as_ref(), raw.generator.as_ref(), ctx, c, &mut notes);
    let search_start = match top.kind {
        PointKind::Discover => Some(discover.as_ref().map_or(2, |d| d.start)),
        PointKind::Ramp => Some(ramp.as_ref().map_or(1, |r| r.start)),
        PointKind::Fixed | PointKind::Rate | PointKind::Stream => None,
    };
    let dimensions = matrix::Dimensions {
        top: &top,
        load: &load,
        stream: stream.as_ref(),
        machine: &machine,
        search_start,
        protocols_span: raw.protocols.as_ref().map(|p| p.span()),
        networks: network::networks(raw, c),
    };
    load_spec::http1_connections(raw.load.as_ref(), &load, &top.protocols, top.kind, c, &mut notes);
    let targets = targets::targets(raw, file, ctx, c, &mut notes);
    let (points, groups) = matrix::expand(&dimensions, &targets, ctx, c, &mut notes);
    let agents = agents::agents(raw, c);
    agents::refuse_with_networks(raw, &agents, &points, c);
    if !agents.is_empty() {
        notes.push(format!(
            "the load of every point comes from {} agents ({}), merged (docs/distributed.md)",
            agents.len(),
            agents.join(", ")
        ));
    }
    let findings = findings::findings(raw.findings.as_ref(), &points, c, &mut notes);
    // The report repeats what the preset says differs from its study.
    for d in raw.differences.iter().flatten() {
        notes.push(format!("differs from the study: {}", d.trim()));
    }
    let mut thresholds = Vec::new();
    for t in raw.thresholds.iter().flat_map(|t| t.get_ref()) {
        match protobench_model::threshold::Threshold::parse(t.get_ref()) {
            Ok(parsed) => thresholds.push(parsed),
            Err(e) => c.issue(t.span(), "thresholds", e.to_string()),
        }
    }
    if c.issues.is_empty() && points.is_empty() {
        c.issue(
            0..0,
            "preset",
            "resolves to no points: check servers, protocols, workloads, targets and load",
        );
    }
    Plan {
        preset: top.name,
        preset_path: Some(file.to_string()),
        description: raw.description.clone().unwrap_or_default(),
        kind: top.kind,
        repetitions: top.repetitions,
        warmup_ns: top.warmup.as_nanos() as u64,
        warmup_steady: top.warmup_steady.map(|min| crate::plan::SteadyWarmup {
            min_s: min.as_secs_f64().ceil() as u32,
            ..Default::default()
        }),
        duration_ns: top.duration.as_nanos() as u64,
        timeout_ns: top.timeout.as_nanos() as u64,
        connect_timeout_ns: top.connect_timeout.as_nanos() as u64,
        validate: top.validate,
        arrival: load.arrival,
        noise_threshold: top.noise_threshold,
        server_cpus: machine.server_cpus,
        generator_cpus: machine.generator_cpus,
        generator_threads: machine.generator_threads,
        discover,
        ramp,
        points,
        groups,
        notes,
        time_scale: 1.0,
        findings,
        thresholds,
        targets,
        until_decided: None,
        agents,
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
    use protobench_model::load::Protocol;

    use super::*;

    fn ctx() -> Context {
        Context::for_tests()
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
        let text = "[[targets]]\nname = \"a\"\nbody = 1\n";
        assert_eq!(key_at(text, text.find("body").unwrap()), "targets.body");
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

    #[test]
    fn thresholds_resolve_and_a_wrong_one_is_located() {
        let text = r#"
servers = ["rust"]
protocols = ["rest"]
workloads = ["inventory.xs"]
thresholds = ["p99 < 5ms", "error_rate<0.1%"]
[load]
concurrency = 1
"#;
        let plan = resolve(text, "presets/x.toml", &ctx()).unwrap();
        let written: Vec<String> = plan.thresholds.iter().map(|t| t.to_string()).collect();
        assert_eq!(written, ["p99<5ms", "error_rate<0.1%"]);
        // Stored plans without the key (older runs) still read back.
        let mut json = serde_json::to_value(&plan).unwrap();
        json.as_object_mut().unwrap().remove("thresholds");
        assert!(serde_json::from_value::<Plan>(json).unwrap().thresholds.is_empty());

        let bad = text.replace("p99 < 5ms", "p99<5");
        let err = resolve(&bad, "presets/x.toml", &ctx()).unwrap_err();
        assert_eq!(err.issues.len(), 1, "{err}");
        assert_eq!((err.issues[0].line, err.issues[0].key.as_str()), (5, "thresholds"));
        assert!(err.issues[0].message.contains("invalid threshold \"p99<5\""), "{err}");
    }
}
