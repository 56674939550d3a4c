//! The `protobench` binary: argument parsing and glue. Every piece of real work
//! lives in a library crate; each subcommand is one module under `cmd/`.

use std::process::ExitCode;

use crate::exit::Exit;
use clap::{CommandFactory as _, Parser, Subcommand};

mod cmd;
mod exit;
mod live_page;
mod pipe;
mod web;

/// Measure what API protocols really cost.
#[derive(Parser)]
#[command(
    name = "protobench",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("PROTOBENCH_GIT_COMMIT"), ")"),
    about,
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate or check the contract's generated files (data, registry, vectors).
    Contract(cmd::contract::Args),
    /// Run the built-in reference servers (rest, rest-h2, grpc, soap, graphql, graphql-get, connect, connect-json, grpc-web, grpc-web-text) until SIGTERM or Ctrl-C.
    Serve(cmd::serve::Args),
    /// Load a server with one workload (or a custom call) and report latency, errors, bytes and CPU.
    Load(Box<cmd::load::Args>),
    /// Run load plans for a coordinator (`load --agents`) holding the shared token.
    Agent(cmd::agent::Args),
    /// Write Kubernetes manifests for a distributed load (agents as an Indexed Job).
    Kube(cmd::kube::Args),
    /// Check a server against the contract's vectors, one line per workload.
    Verify(cmd::verify::Args),
    /// Run a preset (default: quick), store every measurement and write the report.
    Run(cmd::run::Args),
    /// List the runs in the results database.
    Runs(cmd::runs::Args),
    /// Show one stored run: metadata, results table, failures.
    Show(cmd::show::Args),
    /// Compare two runs: ratios with 95% intervals and which differences are significant.
    Compare(cmd::compare::Args),
    /// Render a stored run as HTML (with SVG/PNG charts), Markdown, JSON or CSV.
    Report(cmd::report::Args),
    /// List the reference servers and whether they can run here.
    Servers(cmd::servers::Args),
    /// Build reference servers from their manifests.
    Build(cmd::build::Args),
    /// Bring the measurements of an unsaved-results file into its run.
    Import(cmd::import::Args),
    /// Print the completion script for a shell (bash, zsh, fish, elvish, powershell).
    Completions(cmd::completions::Args),
    /// Print the manual page, or write one page per command into a directory.
    Man(cmd::man::Args),
}

/// Exit codes (documented in README.md): 0 success (also when standard output
/// was closed early, as by `| head`), 1 a check failed (verify, contract
/// check), 2 bad usage or input, 3 runtime failure, 4 a threshold failed
/// (`load`, `run`), 5 `compare --fail-on-regression` found a regression,
/// 130 interrupted.
fn main() -> ExitCode {
    // The hidden wrapper every server is started through (runner::guard):
    // handled before parsing, so its arguments are passed on untouched.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == protobench_runner::guard::SUBCOMMAND) {
        let err = protobench_runner::guard::exec_with_parent_death(&args[2..]);
        eprintln!("error: {err}");
        return ExitCode::from(Exit::Runtime);
    }
    pipe::quiet_on_broken_stdout();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Contract(args) => cmd::contract::run(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Load(args) => cmd::load::run(*args),
        Command::Agent(args) => cmd::agent::run(args),
        Command::Kube(args) => cmd::kube::run(args),
        Command::Verify(args) => cmd::verify::run(args),
        Command::Run(args) => cmd::run::run(args),
        Command::Runs(args) => cmd::runs::run(args),
        Command::Show(args) => cmd::show::run(args),
        Command::Compare(args) => cmd::compare::run(args),
        Command::Report(args) => cmd::report::run(args),
        Command::Servers(args) => cmd::servers::run(args),
        Command::Build(args) => cmd::build::run(args),
        Command::Import(args) => cmd::import::run(args),
        Command::Completions(args) => cmd::completions::run(args, Cli::command()),
        Command::Man(args) => cmd::man::run(args, Cli::command()),
    };
    match result {
        Ok(code) => code,
        Err(err) if pipe::is_broken_pipe(&err) => ExitCode::from(Exit::Success),
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(Exit::Runtime)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue #13: every subcommand's help ends with examples.
    #[test]
    fn every_subcommand_has_examples_in_its_help() {
        let mut cli = Cli::command();
        cli.build();
        let missing: Vec<String> = cli
            .get_subcommands()
            .filter(|c| c.get_name() != "help")
            .filter(|c| {
                !c.get_after_help()
                    .is_some_and(|h| h.to_string().contains("protobench "))
            })
            .map(|c| c.get_name().to_string())
            .collect();
        assert!(missing.is_empty(), "subcommands without examples: {missing:?}");
    }
}
