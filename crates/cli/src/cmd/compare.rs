//! `protobench compare RUN_A RUN_B`: matching points of two runs, the ratio
//! B/A of their medians with a 95% interval, and which differences are
//! significant (the interval excludes 1).

use std::path::PathBuf;
use std::process::ExitCode;

use protobench_results::report;
use protobench_results::store::DEFAULT_DB;

/// Compare two runs point by point.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The baseline run (A).
    run_a: String,
    /// The run compared with it (B).
    run_b: String,
    /// Results database.
    #[arg(long, default_value = DEFAULT_DB)]
    db: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `protobench compare`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let store = super::common::open_read(&args.db)?;
    let a = store.load_run(super::show::run_id(&store, &args.run_a)?)?;
    let b = store.load_run(super::show::run_id(&store, &args.run_b)?)?;
    let rows = report::compare(&a, &b);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        println!(
            "runs {} and {} have no point in common (same server, protocol, workload and load)",
            a.id, b.id
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("A = run {} ({}), B = run {} ({})\n", a.id, a.preset, b.id, b.preset);
    print!("{}", report::compare_table(&rows));
    let significant = rows.iter().filter(|r| r.ratio.significant).count();
    println!(
        "\n{significant} of {} differences are significant (95% interval of B/A excludes 1)",
        rows.len()
    );
    Ok(ExitCode::SUCCESS)
}
