//! `protobench show RUN`: a stored run's metadata, table and failures.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit::Exit;
use protobench_results::report;
use protobench_results::store::{DEFAULT_DB, Store};

/// Show one run: metadata, the results table, failures.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  protobench show latest\n  protobench show 3 --db results.db")]
pub(crate) struct Args {
    /// Run id, or `latest`.
    run: String,
    /// Results database.
    #[arg(long, default_value = DEFAULT_DB)]
    db: PathBuf,
}

/// Resolves `latest` or an id.
pub(crate) fn run_id(store: &Store, run: &str) -> anyhow::Result<i64> {
    if run == "latest" || run == "last" {
        return store
            .latest_run()?
            .ok_or_else(|| anyhow::anyhow!("no runs in {}", store.path().display()));
    }
    run.parse()
        .map_err(|_| anyhow::anyhow!("`{run}` is not a run id (a number, or `latest`)"))
}

/// Runs `protobench show`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let store = super::common::open_read(&args.db)?;
    let record = store.load_run(run_id(&store, &args.run)?)?;
    for (k, v) in report::metadata(&record) {
        println!("{k:>14}: {v}");
    }
    println!();
    print!("{}", report::text_table(&record));
    print!("{}", protobench_results::relative::text(&record));
    print!("{}", report::findings_text(&record));
    let failures: Vec<_> = record.measurements.iter().filter(|m| m.failure.is_some()).collect();
    if !failures.is_empty() {
        println!("\nfailures:");
        for m in failures {
            let p = &record.points[m.point as usize];
            let f = m.failure.as_ref().expect("filtered");
            println!(
                "  {} {} {} {} #{}: {}",
                p.server,
                p.protocol,
                p.workload,
                p.variant_label(),
                m.repetition,
                f.reason
            );
            if let Some(tail) = &f.log_tail
                && !tail.is_empty()
            {
                for line in tail.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev() {
                    println!("      | {line}");
                }
            }
        }
    }
    let gates = store.thresholds(record.id)?;
    if !gates.is_empty() {
        print!("\n{}", protobench_model::threshold::table(&gates));
    }
    Ok(ExitCode::from(Exit::Success))
}
