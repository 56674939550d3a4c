//! `protobench completions SHELL`: the shell's completion script, generated
//! from the command-line definition (clap_complete).

use std::process::ExitCode;

use crate::exit::Exit;
use clap_complete::Shell;

/// Print a shell completion script.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Install, for example:\n  protobench completions bash > ~/.local/share/bash-completion/completions/protobench\n  protobench completions zsh > \"${fpath[1]}/_protobench\"\n  protobench completions fish > ~/.config/fish/completions/protobench.fish"
)]
pub(crate) struct Args {
    /// The shell.
    #[arg(value_enum)]
    shell: Shell,
}

/// Writes the script for `cmd` to standard output.
pub(crate) fn run(args: Args, mut cmd: clap::Command) -> anyhow::Result<ExitCode> {
    let name = cmd.get_name().to_owned();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut cmd, name, &mut out);
    Ok(ExitCode::from(Exit::Success))
}
