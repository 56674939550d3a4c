//! `protobench compare RUN_A RUN_B`: matching points of two runs, the ratio
//! B/A of their medians with a 95% interval, and which differences are
//! significant (the interval excludes 1).
//!
//! Exit codes: 0 compared (and, with `--fail-on-regression`, no regression),
//! 2 bad usage, or `--fail-on-regression` with nothing that can be judged
//! (one repetition), 3 database error, 5 `--fail-on-regression` found B worse
//! than A beyond the noise and the tolerance.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit::Exit;
use protobench_results::regression::{self, Verdict};
use protobench_results::report;
use protobench_results::store::DEFAULT_DB;

/// Output forms of `compare` and `runs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// A table.
    Text,
    /// The rows as JSON.
    Json,
}

/// Compare two runs point by point.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  protobench compare 1 2\n  protobench compare 1 latest --fail-on-regression 5%")]
pub(crate) struct Args {
    /// The baseline run (A).
    run_a: String,
    /// The run compared with it (B).
    run_b: String,
    /// Results database.
    #[arg(long, default_value = DEFAULT_DB)]
    db: PathBuf,
    /// Output form.
    #[arg(long, short = 'O', value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Same as --format json (older spelling).
    #[arg(long, hide = true, conflicts_with = "format")]
    json: bool,
    /// Exit 5 when B is worse than A by more than PCT beyond the noise: the
    /// whole 95% interval of B/A past the tolerance (rate lower, p99 or CPU
    /// per call higher).
    #[arg(long, value_name = "PCT", value_parser = regression::parse_tolerance)]
    fail_on_regression: Option<f64>,
}

/// Runs `protobench compare`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let store = super::common::open_read(&args.db)?;
    let a = store.load_run(super::show::run_id(&store, &args.run_a)?)?;
    let b = store.load_run(super::show::run_id(&store, &args.run_b)?)?;
    let rows = report::compare(&a, &b);
    let verdicts: Vec<Verdict> = rows
        .iter()
        .map(|r| regression::judge(r, args.fail_on_regression.unwrap_or(0.0)))
        .collect();
    if args.json || args.format == Format::Json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else if rows.is_empty() {
        println!(
            "runs {} and {} have no point in common (same server, protocol, workload and load)",
            a.id, b.id
        );
    } else {
        println!("A = run {} ({}), B = run {} ({})\n", a.id, a.preset, b.id, b.preset);
        print!("{}", report::compare_table(&rows));
        let significant = rows.iter().filter(|r| r.ratio.significant).count();
        let unjudged = verdicts.iter().filter(|v| **v == Verdict::CannotJudge).count();
        let mut line = format!(
            "\n{significant} of {} differences are significant (95% interval of B/A excludes 1)",
            rows.len()
        );
        if unjudged > 0 {
            line += &format!(
                "; {unjudged} cannot be judged: a run with one repetition has no interval (use --repetitions 3 or more)"
            );
        }
        println!("{line}");
    }
    let Some(tolerance) = args.fail_on_regression else {
        return Ok(ExitCode::from(Exit::Success));
    };
    gate(&rows, &verdicts, tolerance)
}

/// `--fail-on-regression`: names every regression on stderr.
fn gate(rows: &[report::Comparison], verdicts: &[Verdict], tolerance: f64) -> anyhow::Result<ExitCode> {
    let pct = protobench_model::format::plain_number(tolerance * 100.0);
    let regressions: Vec<&report::Comparison> = rows
        .iter()
        .zip(verdicts)
        .filter(|(_, v)| **v == Verdict::Regression)
        .map(|(r, _)| r)
        .collect();
    for r in &regressions {
        let (lo, hi) = (r.ratio.ci_low.unwrap_or(f64::NAN), r.ratio.ci_high.unwrap_or(f64::NAN));
        eprintln!(
            "regression: {} {}: B/A {:.3} [{lo:.3}, {hi:.3}] is worse than A by more than {pct}%",
            r.point, r.metric, r.ratio.ratio
        );
    }
    if !regressions.is_empty() {
        eprintln!(
            "{} regression(s) beyond the noise and the {pct}% tolerance",
            regressions.len()
        );
        return Ok(ExitCode::from(Exit::Regression));
    }
    if verdicts.iter().all(|v| *v == Verdict::CannotJudge) {
        eprintln!(
            "error: --fail-on-regression: nothing can be judged ({}): significance needs at least 2 repetitions in both runs",
            if rows.is_empty() {
                "no point in common"
            } else {
                "one repetition, no interval"
            }
        );
        return Ok(ExitCode::from(Exit::Usage));
    }
    let unjudged = verdicts.iter().filter(|v| **v == Verdict::CannotJudge).count();
    if unjudged > 0 {
        eprintln!("warning: --fail-on-regression: {unjudged} difference(s) could not be judged (one repetition)");
    }
    eprintln!("no regression beyond the noise and the {pct}% tolerance");
    Ok(ExitCode::from(Exit::Success))
}
