//! `protobench runs`: every stored run, newest first.

use std::path::PathBuf;
use std::process::ExitCode;

use protobench_model::format::TextTable;
use protobench_results::store::DEFAULT_DB;

use super::compare::Format;
use crate::exit::Exit;

/// List the runs in the results database.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  protobench runs\n  protobench runs --db results.db -O json")]
pub(crate) struct Args {
    /// Results database.
    #[arg(long, default_value = DEFAULT_DB)]
    db: PathBuf,
    /// Output form.
    #[arg(long, short = 'O', value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Same as --format json (older spelling).
    #[arg(long, hide = true, conflicts_with = "format")]
    json: bool,
}

/// Runs `protobench runs`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Runs whose runner was killed show as interrupted (their lock is free).
    if args.db.exists() {
        let _ = protobench_runner::session::mark_abandoned(&args.db);
    }
    let store = super::common::open_read(&args.db)?;
    let runs = store.list_runs()?;
    if args.json || args.format == Format::Json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
        return Ok(ExitCode::from(Exit::Success));
    }
    if runs.is_empty() {
        println!("no runs in {}", args.db.display());
        return Ok(ExitCode::from(Exit::Success));
    }
    let mut table = TextTable::new(["run", "preset", "status", "started", "points", "measured", "failed"])
        .right([0, 4, 5, 6])
        .without_rule();
    for r in runs {
        table.row([
            r.id.to_string(),
            r.preset,
            r.status.name().to_string(),
            r.started_at,
            r.points.to_string(),
            format!("{}/{}", r.measured, r.points * r.repetitions),
            r.failed.to_string(),
        ]);
    }
    print!("{}", table.render());
    Ok(ExitCode::from(Exit::Success))
}
