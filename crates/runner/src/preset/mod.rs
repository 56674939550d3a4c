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
mod load_spec;
mod machine;
mod matrix;
mod raw;
mod search;
mod top;

use check::Checker;
use raw::RawPreset;

use crate::manifest::Catalog;
use crate::plan::Plan;
use crate::units::CpuSet;

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
    };
    load_spec::http1_connections(raw.load.as_ref(), &load, &top.protocols, top.kind, c, &mut notes);
    let (points, groups) = matrix::expand(&dimensions, ctx, c, &mut notes);
    if c.issues.is_empty() && points.is_empty() {
        c.issue(
            0..0,
            "preset",
            "resolves to no points: check servers, protocols, workloads and load",
        );
    }
    Plan {
        preset: top.name,
        preset_path: Some(file.to_string()),
        description: raw.description.clone().unwrap_or_default(),
        kind: top.kind,
        repetitions: top.repetitions,
        warmup_ns: top.warmup.as_nanos() as u64,
        warmup_steady: top.warmup_steady.then(crate::plan::SteadyWarmup::default),
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
