//! `protobench verify`: check a server against the contract's vectors, one
//! line per workload (`ok` or `FAIL: found X, expected Y`).
//!
//! Exit codes: 0 every workload passed, 1 at least one failed, 2 bad usage
//! (unknown protocol or workload, unusable TLS files), 3 the target could not
//! be resolved.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use protobench_contract::workload;
use protobench_load::LoadError;

use super::load::{TlsArgs, positive_duration_arg};
use crate::exit::Exit;

/// Check every workload of a server against contract/vectors.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  protobench verify --protocol rest --target http://127.0.0.1:8080\n  protobench verify --protocol grpc --target 127.0.0.1:50051 --workload inventory.s"
)]
pub(crate) struct Args {
    /// rest, rest-h2, grpc or soap.
    #[arg(long)]
    protocol: String,
    /// host:port of the server.
    #[arg(long)]
    target: String,
    /// Workloads to check (default: all); repeatable.
    #[arg(long)]
    workload: Vec<String>,
    /// Time limit of each workload's call.
    #[arg(long, value_parser = positive_duration_arg, default_value = "10s")]
    timeout: Duration,
    #[command(flatten)]
    tls: TlsArgs,
}

/// Runs `protobench verify`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let protocol: protobench_model::load::Protocol = match args.protocol.parse() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(Exit::Usage));
        }
    };
    if args.tls.insecure && args.tls.cacert.is_some() {
        eprintln!("error: --insecure and --cacert cannot be used together");
        return Ok(ExitCode::from(Exit::Usage));
    }
    let mut workloads = Vec::new();
    for name in &args.workload {
        match workload::find(name) {
            Some(w) => workloads.push(w),
            None => {
                eprintln!("error: {}", workload::unknown(name));
                return Ok(ExitCode::from(Exit::Usage));
            }
        }
    }
    if workloads.is_empty() {
        workloads = workload::ALL.iter().collect();
    }
    let dir = super::common::contract_dir();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let tls = args.tls.plan();
    let report = rt.block_on(protobench_load::verify(
        protocol,
        &args.target,
        tls.as_ref(),
        &workloads,
        &dir,
        args.timeout,
    ));
    let report = match report {
        Ok(r) => r,
        Err(e @ LoadError::Tls(_)) => {
            eprintln!("error: {}", protobench_model::format::error_chain(&e));
            return Ok(ExitCode::from(Exit::Usage));
        }
        Err(e) => {
            eprintln!("error: {}", protobench_model::format::error_chain(&e));
            return Ok(ExitCode::from(Exit::Runtime));
        }
    };
    let width = report.verdicts.iter().map(|v| v.workload.len()).max().unwrap_or(0);
    let mut out = std::io::stdout().lock();
    for v in &report.verdicts {
        writeln!(out, "{:<width$}  {}", v.workload, v.outcome)?;
    }
    let passed = report
        .verdicts
        .iter()
        .filter(|v| v.outcome == protobench_load::Outcome::Ok)
        .count();
    writeln!(
        out,
        "{} {} {}: {passed} of {} workloads passed",
        if report.passed() { "ok" } else { "FAILED" },
        args.protocol,
        args.target,
        report.verdicts.len()
    )?;
    out.flush()?;
    Ok(if report.passed() {
        ExitCode::from(Exit::Success)
    } else {
        ExitCode::from(Exit::Failed)
    })
}
