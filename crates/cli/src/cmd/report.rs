//! `protobench report RUN --format html|md|json|csv [--out DIR]`: render a
//! stored run again, offline.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit::Exit;
use anyhow::Context as _;
use protobench_results::report;
use protobench_results::store::DEFAULT_DB;

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// Self-contained HTML page with SVG charts (+ charts/*.svg and *.png).
    Html,
    /// Markdown.
    Md,
    /// JSON: the run, every measurement and the aggregates.
    Json,
    /// CSV: one row per point with medians and intervals.
    Csv,
}

/// Render a stored run as HTML, Markdown, JSON or CSV.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  protobench report latest\n  protobench report 3 -O md > run-3.md\n  protobench report 3 --format csv | head"
)]
pub(crate) struct Args {
    /// Run id, or `latest`.
    run: String,
    /// Output format.
    #[arg(long, short = 'O', value_enum, default_value = "html")]
    format: Format,
    /// Output directory (HTML default: protobench-report/run-<ID>; other formats print to stdout without it).
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
    /// Results database.
    #[arg(long, default_value = DEFAULT_DB)]
    db: PathBuf,
}

/// Runs `protobench report`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let store = super::common::open_read(&args.db)?;
    let record = store.load_run(super::show::run_id(&store, &args.run)?)?;
    let (text, file) = match args.format {
        Format::Html => {
            let dir = args
                .out
                .clone()
                .unwrap_or_else(|| PathBuf::from(format!("protobench-report/run-{}", record.id)));
            let path = super::common::write_html(&record, &dir)?;
            println!("{}", path.display());
            return Ok(ExitCode::from(Exit::Success));
        }
        Format::Md => (report::markdown(&record), "report.md"),
        Format::Json => (report::json(&record), "report.json"),
        Format::Csv => (report::csv(&record), "points.csv"),
    };
    match args.out {
        None => print!("{text}"),
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            let path = dir.join(file);
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
            println!("{}", path.display());
        }
    }
    Ok(ExitCode::from(Exit::Success))
}
