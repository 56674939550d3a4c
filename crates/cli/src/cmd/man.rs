//! `protobench man [--dir DIR]`: manual pages generated from the
//! command-line definition (clap_mangen): the main page on standard output,
//! or one page per command in DIR.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit::Exit;
use anyhow::Context as _;

/// Print the manual page, or write one page per command.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  protobench man | man -l -\n  protobench man --dir ~/.local/share/man/man1")]
pub(crate) struct Args {
    /// Write protobench.1 and protobench-COMMAND.1 for every command into
    /// this directory (created if needed) instead of printing the main page.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Renders the pages of `cmd`.
pub(crate) fn run(args: Args, cmd: clap::Command) -> anyhow::Result<ExitCode> {
    match args.dir {
        None => {
            let mut out = std::io::stdout().lock();
            clap_mangen::Man::new(cmd).render(&mut out)?;
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir).with_context(|| format!("writing the pages to {}", dir.display()))?;
            println!("wrote the manual pages to {}", dir.display());
        }
    }
    Ok(ExitCode::from(Exit::Success))
}
