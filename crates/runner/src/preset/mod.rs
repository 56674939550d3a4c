//! Experiment files (`presets/*.toml`, documented in `docs/presets.md`):
//! parsing and validation into a [`Plan`].
//!
//! Every check happens here, before any server starts. Each problem names
//! the file, the line and column, the key, and where it applies the accepted
//! values; all problems are reported at once.

use std::fmt;
use std::path::Path;

use protobench_model::run::PointKind;

mod check;
mod findings;
mod load_spec;
mod machine;
mod matrix;
mod network;
mod raw;
mod search;
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

impl Overrides {
    fn entries(&self) -> Vec<(&'static str, &Vec<String>)> {
        [
            ("servers", &self.servers),
            ("protocols", &self.protocols),
            ("workloads", &self.workloads),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
        .collect()
    }

    /// Nothing to override.
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }
}

/// Reads, validates and resolves a preset file with command-line overrides.
pub fn load_with(path: &Path, ctx: &Context, overrides: &Overrides) -> Result<Plan, PresetError> {
    let text = std::fs::read_to_string(path).map_err(|e| PresetError {
        file: path.display().to_string(),
        issues: vec![Issue {
            line: 1,
            column: 1,
            key: "file".into(),
            message: format!("cannot read: {e}"),
        }],
    })?;
    resolve_with(&text, &path.display().to_string(), ctx, overrides)
}

/// [`resolve`] with the overridden lists in place of the preset's own. The
/// preset's lines for those keys are blanked (so every other line keeps its
/// number) and the command line's values are appended after the file's
/// text, then checked by the same rules as the file; a problem in them is
/// reported as `--servers: ...` instead of a file position.
pub fn resolve_with(text: &str, file: &str, ctx: &Context, overrides: &Overrides) -> Result<Plan, PresetError> {
    if overrides.is_empty() {
        return resolve(text, file, ctx);
    }
    // A preset that does not parse is reported as it is.
    let raw: RawPreset = match toml::from_str(text) {
        Ok(raw) => raw,
        Err(_) => return resolve(text, file, ctx),
    };
    let mut merged = text.to_string();
    for (key, _) in overrides.entries() {
        let span = match key {
            "servers" => raw.servers.as_ref().map(|v| v.span()),
            "protocols" => raw.protocols.as_ref().map(|v| v.span()),
            _ => raw.workloads.as_ref().map(|v| v.span()),
        };
        if let Some(span) = span {
            let start = merged[..span.start].rfind('\n').map_or(0, |i| i + 1);
            let blank: String = merged[start..span.end]
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' })
                .collect();
            merged.replace_range(start..span.end, &blank);
        }
    }
    // Top-level keys must come before the first table: the overrides go at
    // the front, on lines numbered after the file's own.
    let file_lines = text.lines().count();
    let mut front = String::new();
    for (key, values) in overrides.entries() {
        let list = toml::Value::Array(values.iter().map(|v| toml::Value::String(v.clone())).collect());
        front.push_str(&format!("{key} = {list}\n"));
    }
    let front_lines = front.lines().count();
    let combined = format!("{front}{merged}");
    resolve(&combined, file, ctx).map_err(|mut e| {
        let keys: Vec<&str> = overrides.entries().iter().map(|(k, _)| *k).collect();
        for issue in &mut e.issues {
            let key = issue.key.split('[').next().unwrap_or(&issue.key).to_string();
            if issue.line <= front_lines && keys.contains(&key.as_str()) {
                issue.key = format!("--{key}");
                issue.line = 0;
                issue.column = 0;
            } else if issue.line <= front_lines {
                // A whole-preset problem placed at the start.
                (issue.line, issue.column) = (1, 1);
            } else {
                issue.line -= front_lines;
            }
        }
        debug_assert!(e.issues.iter().all(|i| i.line <= file_lines));
        e
    })
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
    let mut c = Checker::new(text);
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
    let top = top::top_level(raw, file, ctx, c);
    let load = load_spec::load_spec(raw.load.as_ref(), top.kind, c);
    let discover = search::discover(raw.discover.as_ref(), top.kind, top.duration, c);
    let ramp = search::ramp(raw.ramp.as_ref(), top.kind, c);
    let mut notes = Vec::new();
    let machine = machine::machine(raw.server.as_ref(), raw.generator.as_ref(), ctx, c, &mut notes);
    let search_start = match top.kind {
        PointKind::Discover => Some(discover.as_ref().map_or(2, |d| d.start)),
        PointKind::Ramp => Some(ramp.as_ref().map_or(1, |r| r.start)),
        PointKind::Fixed | PointKind::Rate => None,
    };
    let dimensions = matrix::Dimensions {
        top: &top,
        load: &load,
        machine: &machine,
        search_start,
        protocols_span: raw.protocols.as_ref().map(|p| p.span()),
        networks: network::networks(raw, c),
    };
    load_spec::http1_connections(raw.load.as_ref(), &load, &top.protocols, top.kind, c, &mut notes);
    let targets = targets::targets(raw, file, ctx, c, &mut notes);
    let (points, groups) = matrix::expand(&dimensions, &targets, ctx, c, &mut notes);
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
