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
use protobench_contract::{Protocol, workload};
use protobench_load::LoadError;

use super::load::{TlsArgs, positive_duration_arg};
use crate::exit::Exit;

/// Check every workload of a server against contract/vectors.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  protobench verify --protocol rest --target http://127.0.0.1:8080\n  protobench verify --protocol grpc --target 127.0.0.1:50051 --workload inventory.s"
)]
pub(crate) struct Args {
    /// rest, rest-h2, grpc, soap, graphql, graphql-get, connect, connect-json, grpc-web or grpc-web-text.
    #[arg(long)]
    protocol: String,
    /// host:port of the server.
    #[arg(long)]
    target: String,
    /// Workloads to check (default: every unary workload, and on graphql
    /// and graphql-get every GraphQL-only one, graphql.*); repeatable. A
    /// streaming workload (stream.*) is checked over --stream's
    /// transports, or the protocol's default one.
    #[arg(long)]
    workload: Vec<String>,
    /// Also check the streaming operations carried by these transports
    /// (grpc, websocket, sse, poll, connect; comma-separated): every streaming workload
    /// each carries, or those named by --workload (message count, order,
    /// content, the clean end and the status).
    #[arg(long, value_name = "TRANSPORT", value_delimiter = ',')]
    stream: Vec<String>,
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
    let tls = match args.tls.checked(false) {
        Ok(tls) => tls,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(Exit::Usage));
        }
    };
    let transports = match args
        .stream
        .iter()
        .map(|t| t.parse::<protobench_model::stream::StreamTransport>())
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: --stream: {e}");
            return Ok(ExitCode::from(Exit::Usage));
        }
    };
    let stream_checks = match stream_checks(protocol, &args.workload, &transports) {
        Ok(checks) => checks,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(Exit::Usage));
        }
    };
    let (workloads, graphql_only) =
        match chosen(protocol, &args.workload).and_then(|w| chosen_graphql(protocol, &args.workload).map(|g| (w, g))) {
            Ok(w) => w,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(Exit::Usage));
            }
        };
    let dir = super::common::contract_dir();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let checks = Checks {
        workloads: &workloads,
        graphql_only: &graphql_only,
        streams: &stream_checks,
    };
    let report = rt.block_on(verify_all(
        protocol,
        &args.target,
        tls.as_ref(),
        &checks,
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

/// The streaming checks asked for: the stream.* workloads named (over the
/// transports given, or the protocol's default one), or, when none is
/// named, every one the transports given carry.
fn stream_checks(
    protocol: protobench_model::load::Protocol,
    names: &[String],
    transports: &[protobench_model::stream::StreamTransport],
) -> Result<Vec<protobench_load::StreamCheck>, String> {
    let named: Vec<&String> = names.iter().filter(|n| n.starts_with("stream.")).collect();
    if named.is_empty() {
        return Ok(protobench_load::stream_checks(protocol, transports));
    }
    let mut checks = Vec::new();
    for name in named {
        let Some(w) = protobench_contract::stream::workload::find(name) else {
            let known: Vec<&str> = protobench_contract::stream::workload::ALL
                .iter()
                .map(|w| w.name)
                .collect();
            return Err(format!(
                "unknown streaming workload `{name}` (known: {})",
                known.join(", ")
            ));
        };
        let over = if transports.is_empty() {
            vec![protobench_load::default_transport(protocol, w.operation())]
        } else {
            transports.to_vec()
        };
        let found: Vec<_> = protobench_load::stream_checks(protocol, &over)
            .into_iter()
            .filter(|c| c.workload.name == w.name)
            .collect();
        if found.is_empty() {
            let mut plan = protobench_load::stream_plan_defaults(protocol, over[0], "", name);
            plan.workload = name.clone();
            let why = protobench_load::validate_stream(&plan)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            return Err(format!("{name} cannot be checked on --protocol {protocol}: {why}"));
        }
        checks.extend(found);
    }
    Ok(checks)
}

/// What one `verify` checks.
struct Checks<'a> {
    workloads: &'a [&'static workload::Workload],
    graphql_only: &'a [&'static protobench_contract::graphql::GraphqlWorkload],
    streams: &'a [protobench_load::StreamCheck],
}

/// The contract workloads, then the GraphQL-only ones, then the streams:
/// one report, in that order.
async fn verify_all(
    protocol: Protocol,
    target: &str,
    tls: Option<&protobench_model::load::TlsPlan>,
    checks: &Checks<'_>,
    dir: &std::path::Path,
    timeout: Duration,
) -> Result<protobench_load::VerifyReport, LoadError> {
    let mut report = protobench_load::verify(protocol, target, tls, checks.workloads, dir, timeout).await?;
    if !checks.graphql_only.is_empty() {
        let g = protobench_load::verify_graphql(protocol, target, tls, checks.graphql_only, dir, timeout).await?;
        report.verdicts.extend(g.verdicts);
    }
    if !checks.streams.is_empty() {
        let dataset = std::sync::Arc::new(protobench_contract::Dataset::generate());
        let s = protobench_load::verify_streams(protocol, target, tls, checks.streams, dataset, timeout).await?;
        report.verdicts.extend(s.verdicts);
    }
    Ok(report)
}

/// The contract workloads to verify: those named (streams aside), or all
/// of them; `graphql-get` carries queries only, so its default leaves the
/// mutations out and a named one is refused.
fn chosen(protocol: Protocol, names: &[String]) -> Result<Vec<&'static workload::Workload>, String> {
    let mut workloads = Vec::new();
    for name in names
        .iter()
        .filter(|n| !n.starts_with("stream.") && !n.starts_with("graphql."))
    {
        workloads.push(workload::find(name).ok_or_else(|| workload::unknown(name))?);
    }
    if names.is_empty() {
        workloads = workload::ALL
            .iter()
            .filter(|w| protocol != Protocol::GraphqlGet || !is_mutation(w))
            .collect();
    } else if protocol == Protocol::GraphqlGet
        && let Some(w) = workloads.iter().find(|w| is_mutation(w))
    {
        return Err(format!(
            "workload {} is a GraphQL mutation; graphql-get sends queries only (GET): use --protocol graphql",
            w.name
        ));
    }
    Ok(workloads)
}

/// The GraphQL-only workloads (`graphql.*`) to check: on `graphql` and
/// `graphql-get` every one when none is named, else those named; naming
/// one on another protocol is an error.
fn chosen_graphql(
    protocol: Protocol,
    names: &[String],
) -> Result<Vec<&'static protobench_contract::graphql::GraphqlWorkload>, String> {
    let graphql = matches!(protocol, Protocol::Graphql | Protocol::GraphqlGet);
    let named: Vec<&String> = names.iter().filter(|n| n.starts_with("graphql.")).collect();
    if let Some(name) = named.first().filter(|_| !graphql) {
        return Err(format!(
            "workload {name} is GraphQL-only (it selects part of a message): use --protocol graphql or graphql-get"
        ));
    }
    if !graphql {
        return Ok(Vec::new());
    }
    if names.is_empty() {
        return Ok(protobench_contract::graphql::WORKLOADS.iter().collect());
    }
    named
        .into_iter()
        .map(|name| {
            protobench_contract::graphql::find(name).ok_or_else(|| {
                let known: Vec<&str> = protobench_contract::graphql::WORKLOADS.iter().map(|w| w.name).collect();
                format!("unknown GraphQL workload `{name}` (known: {})", known.join(", "))
            })
        })
        .collect()
}

/// Whether the workload's GraphQL operation is a mutation (a REST `POST`).
fn is_mutation(w: &workload::Workload) -> bool {
    protobench_contract::graphql::root(w.operation).mutation
}
