//! `protobench contract generate|check`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit::Exit;
use anyhow::Context as _;
use protobench_contract::{Dataset, vectors};

/// Arguments of `protobench contract`.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  protobench contract check\n  protobench contract generate --dir contract")]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Action,
    /// The contract directory (default: $PROTOBENCH_CONTRACT_DIR, the repository's `contract/`, ./contract).
    #[arg(long, global = true)]
    dir: Option<PathBuf>,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Write data/dataset.json, workloads.json and vectors/.
    Generate,
    /// Regenerate in memory and fail (exit 1) if any file differs.
    Check,
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let dir = args.dir.unwrap_or_else(super::common::contract_dir);
    if matches!(args.action, Action::Check) && !dir.is_dir() {
        eprintln!(
            "error: no contract directory to check ({} does not exist): run inside a protobench checkout, or give --dir DIR or PROTOBENCH_CONTRACT_DIR",
            dir.display()
        );
        return Ok(ExitCode::from(Exit::Usage));
    }
    let files = vectors::generate(&Dataset::generate());
    match args.action {
        Action::Generate => {
            for (path, bytes) in &files {
                let path = dir.join(path);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
                }
                std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
            }
            println!("wrote {} files under {}", files.len(), dir.display());
            Ok(ExitCode::from(Exit::Success))
        }
        Action::Check => {
            let mut stale = 0;
            for (path, bytes) in &files {
                let full = dir.join(path);
                match std::fs::read(&full) {
                    Ok(on_disk) if on_disk == *bytes => {}
                    Ok(_) => {
                        stale += 1;
                        println!("differs: {}", path.display());
                    }
                    Err(e) => {
                        stale += 1;
                        println!("missing: {} ({e})", path.display());
                    }
                }
            }
            if stale == 0 {
                println!("contract files up to date ({} files)", files.len());
                Ok(ExitCode::from(Exit::Success))
            } else {
                println!("{stale} contract files are stale; run `protobench contract generate`");
                Ok(ExitCode::from(Exit::Failed))
            }
        }
    }
}
