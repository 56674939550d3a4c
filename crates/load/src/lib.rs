//! The protobench load engine: one driver per protocol behind one small
//! trait, schedules as data, one HDR histogram set per engine thread.
//!
//! The engine never prints. [`run`] takes a [`LoadPlan`], sends [`Event`]s
//! while it runs and returns a [`LoadResult`]; failed calls are measurements
//! (counted by kind), not errors of the run. [`verify`] checks a server
//! against the contract's vectors. See `docs/engine.md` for the design.
//!
//! ```no_run
//! # async fn example() -> Result<(), protobench_load::LoadError> {
//! use protobench_load::{LoadPlan, run, plan_defaults};
//! use tokio_util::sync::CancellationToken;
//!
//! let mut plan: LoadPlan = plan_defaults("grpc", "127.0.0.1:50051");
//! plan.workload = Some("inventory.s".into());
//! plan.concurrency = 50;
//! plan.connections = 2;
//! plan.requests = Some(10_000);
//! let result = run(plan, None, CancellationToken::new()).await?;
//! println!("{} calls/s, p99 {} ns", result.rate, result.latency.p99_ns);
//! # Ok(()) }
//! ```

mod check;
mod driver;
mod engine;
pub mod pacer;
mod prepare;
mod record;
mod timer;
mod verify;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use base64::Engine as _;
use hdrhistogram::serialization::Serializer as _;
pub use protobench_model::load::{
    Arrival, CustomCall, EndReason, Environment, ErrorKind, Header, LatencySummary, LoadPlan, LoadResult, TlsPlan,
    Validation,
};
use protobench_model::load::{Generator, PROTOCOLS, SCHEMA_VERSION};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

pub use crate::driver::http2::Http2Error;
pub use crate::driver::net::TlsError;
pub use crate::verify::{Outcome, VerifyReport, WorkloadVerdict, verify};

/// A plan that names conflicting or invalid inputs (by their flag names).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The protocol is not one of the four.
    #[error("unknown protocol {0:?}; valid protocols: rest, rest-h2, grpc, soap")]
    UnknownProtocol(String),
    /// The workload is not in the contract (the message lists valid names).
    #[error("{0}")]
    UnknownWorkload(String),
    /// Neither a workload nor a custom call.
    #[error(
        "nothing to call: give --workload or a custom call (--body/--method for HTTP, --proto and --call for gRPC)"
    )]
    NothingToCall,
    /// Both a workload and a custom call.
    #[error("--workload and {0} cannot be used together")]
    WorkloadAndCustom(&'static str),
    /// Two flags that exclude each other.
    #[error("{0} and {1} cannot be used together")]
    Conflict(&'static str, &'static str),
    /// A flag that needs another.
    #[error("{0} requires {1}")]
    Requires(&'static str, &'static str),
    /// A flag that does not apply to the protocol.
    #[error("{flag} applies only to --protocol {applies}, not {protocol}")]
    NotForProtocol {
        /// The flag.
        flag: &'static str,
        /// Where it applies.
        applies: &'static str,
        /// The plan's protocol.
        protocol: String,
    },
    /// A value out of range.
    #[error("{flag} must be {rule}, got {value}")]
    OutOfRange {
        /// The flag.
        flag: &'static str,
        /// The rule.
        rule: &'static str,
        /// What was given.
        value: String,
    },
    /// More connections than calls in flight.
    #[error("--connections ({connections}) cannot be greater than --concurrency ({concurrency})")]
    MoreConnectionsThanConcurrency {
        /// `--connections`.
        connections: u32,
        /// `--concurrency`.
        concurrency: u32,
    },
    /// HTTP/1.1 carries one call per connection at a time.
    #[error(
        "--connections ({connections}) must equal --concurrency ({concurrency}) for --protocol {protocol}: HTTP/1.1 carries one call at a time per connection"
    )]
    Http1Connections {
        /// `--connections`.
        connections: u32,
        /// `--concurrency`.
        concurrency: u32,
        /// `rest` or `soap`.
        protocol: String,
    },
    /// More engine threads than connections.
    #[error("--threads ({threads}) cannot be greater than --connections ({connections})")]
    MoreThreadsThanConnections {
        /// `--threads`.
        threads: u32,
        /// `--connections`.
        connections: u32,
    },
}

/// Why a run could not be made (failed calls are not errors of the run).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The plan is invalid.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The target's name could not be resolved.
    #[error("cannot resolve target {target}")]
    Resolve {
        /// The `host:port`.
        target: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Not one connection could be opened.
    #[error("cannot connect to {target}: {message}")]
    Connect {
        /// The address tried.
        target: String,
        /// The first connection error.
        message: String,
    },
    /// The TLS settings cannot be used.
    #[error("invalid TLS settings")]
    Tls(#[from] TlsError),
    /// A header, path or method is not valid HTTP.
    #[error("invalid request")]
    Request(#[from] Http2Error),
    /// The gRPC method is not defined by the `.proto` files.
    #[error("unknown gRPC method {method:?}; the .proto files define: {methods}")]
    UnknownMethod {
        /// What was asked for.
        method: String,
        /// Every `package.Service/Method` defined.
        methods: String,
    },
    /// An input file or value could not be used.
    #[error("cannot use {what}")]
    Input {
        /// What it was.
        what: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An engine thread could not be started.
    #[error("cannot start an engine thread")]
    Thread(#[source] std::io::Error),
}

/// What the engine reports while it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Initial connections are open; measuring (or warming up) starts.
    Started {
        /// Connections open.
        connections: u64,
        /// Engine threads.
        threads: u32,
    },
    /// One second of the measured window closed.
    Progress {
        /// Time since the measured window started.
        elapsed_ns: u64,
        /// Calls completed so far (measured).
        calls: u64,
        /// Failed calls so far (measured).
        errors: u64,
        /// Successful calls in the last second.
        rate: f64,
        /// p99 corrected latency in the last second.
        p99_ns: u64,
    },
}

/// A plan with defaults: closed loop, concurrency 1, one connection, 10 s,
/// 10 s call timeout, 5 s connect timeout, status checks, clear text.
pub fn plan_defaults(protocol: &str, target: &str) -> LoadPlan {
    LoadPlan {
        protocol: protocol.to_owned(),
        target: target.to_owned(),
        workload: None,
        custom: None,
        concurrency: 1,
        connections: 1,
        rate: None,
        arrival: Arrival::Uniform,
        duration_ns: Some(10_000_000_000),
        requests: None,
        warmup_ns: 0,
        timeout_ns: 10_000_000_000,
        connect_timeout_ns: 5_000_000_000,
        validate: Validation::Status,
        tls: None,
        threads: 0,
    }
}

fn is_http1(protocol: &str) -> bool {
    matches!(protocol, "rest" | "soap")
}

/// Checks every input together; errors name the flags involved.
pub fn validate(plan: &LoadPlan) -> Result<(), PlanError> {
    let p = plan.protocol.as_str();
    if !PROTOCOLS.contains(&p) {
        return Err(PlanError::UnknownProtocol(plan.protocol.clone()));
    }
    if let Some(w) = &plan.workload
        && protobench_contract::workload::find(w).is_none()
    {
        return Err(PlanError::UnknownWorkload(protobench_contract::workload::unknown(w)));
    }
    let custom = plan.custom.as_ref();
    if plan.workload.is_some() {
        if let Some(c) = custom {
            let flag = if c.body_file.is_some() {
                "--body"
            } else if !c.proto_files.is_empty() {
                "--proto"
            } else if c.call.is_some() {
                "--call"
            } else if c.method.is_some() {
                "--method"
            } else if c.soap_action.is_some() {
                "--soap-action"
            } else if c.data.is_some() {
                "--data"
            } else {
                "a custom call"
            };
            if !only_headers(c) {
                return Err(PlanError::WorkloadAndCustom(flag));
            }
        }
    } else {
        match custom {
            None => return Err(PlanError::NothingToCall),
            Some(c) => validate_custom(p, c)?,
        }
    }
    if plan.concurrency == 0 {
        return Err(PlanError::OutOfRange {
            flag: "--concurrency",
            rule: "at least 1",
            value: "0".into(),
        });
    }
    if plan.connections == 0 {
        return Err(PlanError::OutOfRange {
            flag: "--connections",
            rule: "at least 1",
            value: "0".into(),
        });
    }
    if plan.connections > plan.concurrency {
        return Err(PlanError::MoreConnectionsThanConcurrency {
            connections: plan.connections,
            concurrency: plan.concurrency,
        });
    }
    if is_http1(p) && plan.connections != plan.concurrency {
        return Err(PlanError::Http1Connections {
            connections: plan.connections,
            concurrency: plan.concurrency,
            protocol: plan.protocol.clone(),
        });
    }
    if plan.threads > plan.connections {
        return Err(PlanError::MoreThreadsThanConnections {
            threads: plan.threads,
            connections: plan.connections,
        });
    }
    if let Some(rate) = plan.rate
        && !(rate.is_finite() && rate > 0.0)
    {
        return Err(PlanError::OutOfRange {
            flag: "--rate",
            rule: "a positive number",
            value: rate.to_string(),
        });
    }
    if plan.duration_ns.is_some() && plan.requests.is_some() {
        return Err(PlanError::Conflict("--duration", "--requests"));
    }
    if plan.duration_ns == Some(0) {
        return Err(PlanError::OutOfRange {
            flag: "--duration",
            rule: "positive",
            value: "0s".into(),
        });
    }
    if plan.requests == Some(0) {
        return Err(PlanError::OutOfRange {
            flag: "--requests",
            rule: "at least 1",
            value: "0".into(),
        });
    }
    if plan.timeout_ns == 0 {
        return Err(PlanError::OutOfRange {
            flag: "--timeout",
            rule: "positive",
            value: "0s".into(),
        });
    }
    if plan.connect_timeout_ns == 0 {
        return Err(PlanError::OutOfRange {
            flag: "--connect-timeout",
            rule: "positive",
            value: "0s".into(),
        });
    }
    if let Some(tls) = &plan.tls {
        if tls.insecure && tls.cacert.is_some() {
            return Err(PlanError::Conflict("--insecure", "--cacert"));
        }
        match (&tls.client_cert, &tls.client_key) {
            (Some(_), None) => return Err(PlanError::Requires("--cert", "--key")),
            (None, Some(_)) => return Err(PlanError::Requires("--key", "--cert")),
            _ => {}
        }
    }
    Ok(())
}

fn only_headers(c: &CustomCall) -> bool {
    CustomCall {
        headers: Vec::new(),
        ..c.clone()
    } == CustomCall::default()
}

fn validate_custom(protocol: &str, c: &CustomCall) -> Result<(), PlanError> {
    let not_for = |flag, applies| PlanError::NotForProtocol {
        flag,
        applies,
        protocol: protocol.to_owned(),
    };
    if protocol == "grpc" {
        if c.method.is_some() {
            return Err(not_for("--method", "rest, rest-h2 or soap"));
        }
        if c.body_file.is_some() {
            return Err(not_for("--body", "rest, rest-h2 or soap"));
        }
        if c.soap_action.is_some() {
            return Err(not_for("--soap-action", "soap"));
        }
        if c.proto_files.is_empty() {
            return Err(PlanError::Requires("--call", "--proto"));
        }
        if c.call.is_none() {
            return Err(PlanError::Requires("--proto", "--call"));
        }
        return Ok(());
    }
    if !c.proto_files.is_empty() {
        return Err(not_for("--proto", "grpc"));
    }
    if c.call.is_some() {
        return Err(not_for("--call", "grpc"));
    }
    if c.data.is_some() {
        return Err(not_for("--data", "grpc"));
    }
    if !c.import_paths.is_empty() {
        return Err(not_for("--import-path", "grpc"));
    }
    if c.soap_action.is_some() && protocol != "soap" {
        return Err(not_for("--soap-action", "soap"));
    }
    if protocol == "soap" && c.body_file.is_none() {
        return Err(PlanError::Requires("--protocol soap with a custom call", "--body"));
    }
    Ok(())
}

/// Runs a plan to its end (or until `cancel`) and returns the result.
///
/// A cancelled run returns the partial result with `end_reason = interrupted`.
/// The run fails only when it cannot start: an invalid plan, an unusable
/// input, or no connection at all to the target.
pub async fn run(
    plan: LoadPlan,
    events: Option<mpsc::UnboundedSender<Event>>,
    cancel: CancellationToken,
) -> Result<LoadResult, LoadError> {
    validate(&plan)?;
    let prepared = prepare::prepare(&plan).await?;
    let addr = prepared.addr;
    match prepared.driver {
        prepare::AnyDriver::Http1(d) => run_with(Arc::new(d), prepared.check, plan, addr, events, cancel).await,
        prepare::AnyDriver::Http2(d) => run_with(Arc::new(*d), prepared.check, plan, addr, events, cancel).await,
    }
}

async fn run_with<D: driver::Driver + Send + Sync>(
    driver: Arc<D>,
    check: check::Check,
    plan: LoadPlan,
    addr: std::net::SocketAddr,
    events: Option<mpsc::UnboundedSender<Event>>,
    cancel: CancellationToken,
) -> Result<LoadResult, LoadError> {
    let threads = if plan.threads > 0 {
        plan.threads as usize
    } else {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(plan.connections as usize)
            .max(1)
    };
    let plans = engine::thread_plans(&plan, threads);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (start_tx, start_rx) = watch::channel(None);
    let mut handles = Vec::with_capacity(threads);
    for tp in plans {
        let (driver, check, tx, start_rx, cancel) = (
            driver.clone(),
            check.clone(),
            tx.clone(),
            start_rx.clone(),
            cancel.clone(),
        );
        let h = std::thread::Builder::new()
            .name(format!("protobench-load-{}", tp.index))
            .spawn(move || engine::thread_main(driver, check, tp, tx, start_rx, cancel))
            .map_err(LoadError::Thread)?;
        handles.push(h);
    }
    drop(tx);
    let mut ready = 0;
    let mut connected = 0u64;
    let mut first_error = None;
    while ready < threads {
        match rx.recv().await {
            Some(engine::Msg::Ready {
                connected: c,
                first_error: e,
            }) => {
                ready += 1;
                connected += c as u64;
                if first_error.is_none() {
                    first_error = e;
                }
            }
            Some(_) => {}
            None => break,
        }
    }
    if connected == 0 {
        let _ = start_tx.send(Some(None));
        for h in handles {
            let _ = h.join();
        }
        return Err(LoadError::Connect {
            target: addr.to_string(),
            message: first_error.map_or_else(|| "no connection opened".into(), |e| e.message),
        });
    }
    let t0 = Instant::now() + Duration::from_millis(1);
    let wall0 = SystemTime::now() + Duration::from_millis(1) + Duration::from_nanos(plan.warmup_ns);
    let _ = start_tx.send(Some(Some(t0)));
    if let Some(ev) = &events {
        let _ = ev.send(Event::Started {
            connections: connected,
            threads: threads as u32,
        });
    }
    let mut timeline = engine::Timeline::default();
    let mut reports = Vec::with_capacity(threads);
    let (mut calls, mut errors) = (0u64, 0u64);
    while let Some(msg) = rx.recv().await {
        match msg {
            engine::Msg::Second(r) => {
                if let Some(p) = timeline.add(r, threads) {
                    calls += p.successes + p.errors;
                    errors += p.errors;
                    if let Some(ev) = &events {
                        let _ = ev.send(Event::Progress {
                            elapsed_ns: (u64::from(p.second) + 1) * 1_000_000_000,
                            calls,
                            errors,
                            rate: p.successes as f64,
                            p99_ns: p.p99_ns,
                        });
                    }
                }
            }
            engine::Msg::Done(r) => reports.push(*r),
            engine::Msg::Ready { .. } => {}
        }
    }
    let ended = Instant::now();
    let interrupted = cancel.is_cancelled();
    for h in handles {
        let _ = h.join();
    }
    Ok(assemble(
        &plan,
        reports,
        timeline,
        threads,
        t0,
        ended,
        interrupted,
        wall0,
    ))
}

#[allow(clippy::too_many_arguments, reason = "one call site; the parts of a finished run")]
fn assemble(
    plan: &LoadPlan,
    reports: Vec<engine::ThreadReport>,
    timeline: engine::Timeline,
    threads: usize,
    t0: Instant,
    ended: Instant,
    interrupted: bool,
    wall0: SystemTime,
) -> LoadResult {
    let mut latency = record::histogram();
    let mut service = record::histogram();
    let mut lag = record::histogram();
    let mut connect = record::histogram();
    let mut errors = record::Errors::default();
    let (mut successes, mut failures, mut started, mut all_calls, mut starved) = (0, 0, 0, 0, 0);
    let (mut sent, mut received, mut cpu_ns, mut opened, mut last) = (0, 0, 0, 0, 0);
    for r in reports {
        let rec = r.recorder;
        let _ = latency.add(&rec.latency);
        let _ = service.add(&rec.service);
        let _ = lag.add(&rec.lag);
        let _ = connect.add(&rec.connect);
        errors.merge(rec.errors);
        successes += rec.successes;
        failures += rec.failures;
        started += rec.started;
        all_calls += rec.all_calls;
        starved += rec.starved;
        opened += rec.connections_opened;
        last = last.max(rec.last_completion_ns);
        sent += r.bytes_sent;
        received += r.bytes_received;
        cpu_ns += r.cpu_ns;
    }
    let run_ns = ended.saturating_duration_since(t0).as_nanos() as u64;
    let end_reason = if interrupted {
        EndReason::Interrupted
    } else if plan.requests.is_some() {
        EndReason::Requests
    } else {
        EndReason::Duration
    };
    let duration_ns = match end_reason {
        EndReason::Interrupted => run_ns.saturating_sub(plan.warmup_ns),
        EndReason::Requests => last.saturating_sub(plan.warmup_ns),
        EndReason::Duration => plan.duration_ns.unwrap_or(10_000_000_000),
    }
    .max(1);
    let secs = duration_ns as f64 / 1e9;
    let calls = successes + failures;
    let per_call = |b: u64| {
        if calls == 0 { 0.0 } else { b as f64 / calls as f64 }
    };
    let cpu_utilization = cpu_ns as f64 / (run_ns.max(1) as f64 * threads as f64);
    let started_rate = started as f64 / secs;
    let (generator_bound, reason) = generator_verdict(&Verdict {
        target_rate: plan.rate,
        started_rate,
        cpu_utilization,
        threads: threads as u32,
        lag_p99_ns: if lag.is_empty() { 0 } else { lag.value_at_quantile(0.99) },
        calls,
        errors: errors.total(),
        starved,
    });
    let mut encoded = Vec::new();
    let _ = hdrhistogram::serialization::V2DeflateSerializer::new().serialize(&latency, &mut encoded);
    LoadResult {
        schema_version: SCHEMA_VERSION,
        plan: plan.clone(),
        environment: Environment::detect(env!("CARGO_PKG_VERSION"), std::env::var("PROTOBENCH_COMMIT").ok()),
        started_at: protobench_model::time::rfc3339_millis(wall0),
        duration_ns,
        end_reason,
        calls,
        successes,
        rate: successes as f64 / secs,
        started_rate,
        latency: record::summary(&latency),
        service_time: record::summary(&service),
        connect: record::summary(&connect),
        connections_opened: opened,
        errors: errors.into_counts(),
        bytes_sent: sent,
        bytes_received: received,
        bytes_sent_per_call: per_call(sent),
        bytes_received_per_call: per_call(received),
        generator: Generator {
            threads: threads as u32,
            cpu_ns,
            cpu_ns_per_call: if all_calls == 0 {
                0.0
            } else {
                cpu_ns as f64 / all_calls as f64
            },
            cpu_utilization,
            schedule_lag: record::summary(&lag),
            generator_bound,
            reason,
        },
        timeline: timeline.finish(),
        histogram: base64::engine::general_purpose::STANDARD.encode(encoded),
    }
}

/// Inputs of the generator-bound rule.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Verdict {
    pub(crate) target_rate: Option<f64>,
    pub(crate) started_rate: f64,
    pub(crate) cpu_utilization: f64,
    pub(crate) threads: u32,
    pub(crate) lag_p99_ns: u64,
    pub(crate) calls: u64,
    pub(crate) errors: u64,
    pub(crate) starved: u64,
}

/// CPU share of its threads above which the engine counts as saturated.
pub const CPU_BOUND_UTILIZATION: f64 = 0.9;
/// Open loop: schedule lag p99 above which the engine counts as late.
pub const LAG_BOUND_NS: u64 = 10_000_000;

/// The generator-bound rule (docs/engine.md):
/// 1. the engine threads were busy ≥ 90% of the run (either loop), or
/// 2. open loop, the server kept up (errors < 1% of calls) and calls were not
///    held back by the concurrency limit (< 1% found every caller busy), yet
///    calls started below 95% of the target rate or the schedule lag p99
///    exceeded 10 ms.
pub(crate) fn generator_verdict(v: &Verdict) -> (bool, Option<String>) {
    if v.cpu_utilization >= CPU_BOUND_UTILIZATION {
        return (
            true,
            Some(format!(
                "engine threads were {:.0}% busy ({} thread{})",
                v.cpu_utilization * 100.0,
                v.threads,
                if v.threads == 1 { "" } else { "s" }
            )),
        );
    }
    if let Some(target) = v.target_rate {
        let server_ok = v.calls == 0 || (v.errors as f64) < 0.01 * v.calls as f64;
        let not_starved = (v.starved as f64) < 0.01 * v.calls.max(1) as f64;
        if server_ok && not_starved {
            if v.started_rate < 0.95 * target {
                return (
                    true,
                    Some(format!(
                        "started {:.1} calls/s, below 95% of the target rate {target}",
                        v.started_rate
                    )),
                );
            }
            if v.lag_p99_ns > LAG_BOUND_NS {
                return (
                    true,
                    Some(format!(
                        "schedule lag p99 {:.1} ms exceeds 10 ms",
                        v.lag_p99_ns as f64 / 1e6
                    )),
                );
            }
        }
    }
    (false, None)
}

/// The corrected latency distribution of a result in HdrHistogram's text
/// percentile format (`.hgrm`), values in milliseconds.
pub fn hgrm(result: &LoadResult) -> Result<String, HistogramError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&result.histogram)
        .map_err(|e| HistogramError(e.to_string()))?;
    let h: hdrhistogram::Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| HistogramError(format!("{e:?}")))?;
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    let ms = |v: u64| v as f64 / 1e6;
    for v in h.iter_quantiles(5) {
        let q = v.quantile_iterated_to();
        let inv = if q < 1.0 {
            format!("{:>14.2}", 1.0 / (1.0 - q))
        } else {
            format!("{:>14}", "inf")
        };
        let _ = writeln!(
            out,
            "{:>12.3} {:>14.12} {:>10} {inv}",
            ms(v.value_iterated_to()),
            q,
            v.count_since_last_iteration()
        );
    }
    let _ = writeln!(
        out,
        "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
        h.mean() / 1e6,
        h.stdev() / 1e6
    );
    let _ = writeln!(
        out,
        "#[Max     = {:>12.3}, Total count    = {:>12}]",
        ms(h.max()),
        h.len()
    );
    let _ = writeln!(
        out,
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
        h.buckets(),
        h.distinct_values()
    );
    Ok(out)
}

/// The result's histogram field could not be decoded.
#[derive(Debug, Clone, thiserror::Error)]
#[error("invalid histogram: {0}")]
pub struct HistogramError(String);

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> LoadPlan {
        let mut p = plan_defaults("rest", "127.0.0.1:1");
        p.workload = Some("tasks.int".into());
        p
    }

    #[test]
    fn validation_names_both_conflicting_flags() {
        type Change = Box<dyn Fn(&mut LoadPlan)>;
        let cases: Vec<(Change, &str)> = vec![
            (
                Box::new(|p| {
                    p.concurrency = 10;
                    p.connections = 2;
                }),
                "--connections (2) must equal --concurrency (10) for --protocol rest: HTTP/1.1 carries one call at a time per connection",
            ),
            (
                Box::new(|p| {
                    p.protocol = "grpc".into();
                    p.concurrency = 2;
                    p.connections = 4;
                }),
                "--connections (4) cannot be greater than --concurrency (2)",
            ),
            (
                Box::new(|p| p.requests = Some(5)),
                "--duration and --requests cannot be used together",
            ),
            (
                Box::new(|p| {
                    p.tls = Some(TlsPlan {
                        insecure: true,
                        cacert: Some("a.pem".into()),
                        ..TlsPlan::default()
                    })
                }),
                "--insecure and --cacert cannot be used together",
            ),
            (
                Box::new(|p| p.workload = Some("nope".into())),
                "unknown workload \"nope\"; valid workloads: ",
            ),
            (
                Box::new(|p| p.rate = Some(0.0)),
                "--rate must be a positive number, got 0",
            ),
        ];
        for (change, want) in cases {
            let mut p = plan();
            change(&mut p);
            let msg = validate(&p).unwrap_err().to_string();
            assert!(msg.starts_with(want), "{msg}");
        }
        validate(&plan()).unwrap();
    }

    #[test]
    fn generator_bound_rule() {
        let base = Verdict {
            target_rate: Some(1000.0),
            started_rate: 1000.0,
            cpu_utilization: 0.2,
            threads: 1,
            lag_p99_ns: 100_000,
            calls: 10_000,
            errors: 0,
            starved: 0,
        };
        let rows: Vec<(Verdict, bool, &str)> = vec![
            (base, false, "on schedule, idle CPU: the server set the pace"),
            (
                Verdict {
                    cpu_utilization: 0.95,
                    ..base
                },
                true,
                "busy engine threads, any loop",
            ),
            (
                Verdict {
                    target_rate: None,
                    cpu_utilization: 0.95,
                    ..base
                },
                true,
                "closed loop, busy threads",
            ),
            (
                Verdict {
                    started_rate: 900.0,
                    ..base
                },
                true,
                "open loop fell behind its rate with a healthy server",
            ),
            (
                Verdict {
                    lag_p99_ns: 20_000_000,
                    ..base
                },
                true,
                "open loop started calls late",
            ),
            (
                Verdict {
                    started_rate: 900.0,
                    errors: 500,
                    ..base
                },
                false,
                "server erroring: not the generator's fault",
            ),
            (
                Verdict {
                    lag_p99_ns: 20_000_000,
                    starved: 5_000,
                    ..base
                },
                false,
                "every caller was busy: the concurrency limit",
            ),
            (
                Verdict {
                    target_rate: None,
                    started_rate: 1.0,
                    ..base
                },
                false,
                "closed loop has no target rate",
            ),
        ];
        for (v, want, why) in rows {
            assert_eq!(generator_verdict(&v).0, want, "{why}");
        }
    }
}
