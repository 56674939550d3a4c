//! `protobench import FILE [--db DB]`: bring the measurements of an
//! unsaved-results file (written when the database refused them, e.g. on a
//! full disk) into the run it names.
//!
//! Exit codes: 0 imported, 2 the file cannot be read or is not an
//! unsaved-results file, 3 the database refused (missing file or run,
//! another plan, measurements already stored, run being measured, write
//! errors).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit::Exit;
use protobench_results::store::DEFAULT_DB;
use protobench_runner::import::{ImportError, import_unsaved};

/// Bring an unsaved-results file's measurements into its run.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  protobench import protobench-results-run-3-unsaved-20261124T101500.json --db results.db"
)]
pub(crate) struct Args {
    /// The unsaved-results file (`protobench-<db>-run-<ID>-unsaved-<time>.json`).
    file: PathBuf,
    /// Results database (must exist and hold the run).
    #[arg(long, default_value = DEFAULT_DB)]
    db: PathBuf,
}

/// Runs `protobench import`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    match import_unsaved(&args.db, &args.file) {
        Ok(i) => {
            let left = if i.missing == 0 {
                format!("run {} is {}", i.run, i.status.name())
            } else {
                format!(
                    "run {} still lacks {} measurement(s): finish it with `protobench run --resume {} --db {}`",
                    i.run,
                    i.missing,
                    i.run,
                    args.db.display()
                )
            };
            println!(
                "imported {} measurement(s) into run {} of {}; {left}",
                i.count,
                i.run,
                args.db.display()
            );
            Ok(ExitCode::from(Exit::Success))
        }
        Err(e) => {
            let code = match e {
                ImportError::Read { .. } | ImportError::Parse { .. } => 2,
                _ => 3,
            };
            eprintln!("error: {:#}", anyhow::Error::new(e));
            Ok(ExitCode::from(code))
        }
    }
}
