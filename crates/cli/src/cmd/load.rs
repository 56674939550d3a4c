//! `protobench load`: one load run against any target, printed as a summary,
//! JSON (docs/schema/load-result.schema.json) or CSV.
//!
//! Exit codes: 0 the run completed (failed calls are measurements, not
//! errors), 2 bad usage or input, 3 the run could not start (target
//! unreachable or unresolvable), 130 interrupted by Ctrl-C (the partial result
//! is still printed).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::ValueEnum;
use protobench_load::{
    Arrival, ConnectionPolicy, CustomCall, Event, Header, LoadError, LoadPlan, LoadResult, Protocol, TlsPlan,
    Validation, plan_defaults,
};
use protobench_model::format::{error_chain, fmt_bytes, fmt_ns};
use tokio_util::sync::CancellationToken;

/// Output forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Output {
    /// A readable summary.
    Text,
    /// The result as JSON (docs/schema/load-result.schema.json).
    Json,
    /// A header line and one row.
    Csv,
}

/// TLS flags shared by `load` and `verify`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct TlsArgs {
    /// Use TLS (implied by --cacert, --insecure, --cert and an https:// target).
    #[arg(long)]
    pub(crate) tls: bool,
    /// Extra trusted CA certificates (PEM); system/webpki roots are trusted too.
    #[arg(long, value_name = "PEM")]
    pub(crate) cacert: Option<PathBuf>,
    /// Accept any server certificate (self-signed servers).
    #[arg(long)]
    pub(crate) insecure: bool,
    /// Client certificate chain (PEM) for mutual TLS.
    #[arg(long, value_name = "PEM")]
    pub(crate) cert: Option<PathBuf>,
    /// Client private key (PEM) for mutual TLS.
    #[arg(long, value_name = "PEM")]
    pub(crate) key: Option<PathBuf>,
    /// Server name for SNI and certificate checks (default: the target's host).
    #[arg(long, value_name = "NAME")]
    pub(crate) server_name: Option<String>,
}

impl TlsArgs {
    pub(crate) fn plan(&self) -> Option<TlsPlan> {
        let any = self.tls || self.cacert.is_some() || self.insecure || self.cert.is_some() || self.key.is_some();
        any.then(|| TlsPlan {
            cacert: self.cacert.clone(),
            insecure: self.insecure,
            client_cert: self.cert.clone(),
            client_key: self.key.clone(),
            server_name: self.server_name.clone(),
        })
    }
}

/// Arrival processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ArrivalArg {
    /// Evenly spaced.
    Uniform,
    /// Poisson process.
    Poisson,
}

/// Response checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ValidateArg {
    /// Status and body size.
    Status,
    /// Also decode and compare every body.
    Full,
}

/// Load a server with calls of one workload (or a custom call) and report.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// rest, rest-h2, grpc or soap.
    #[arg(long)]
    protocol: String,
    /// host:port, or a URL (http://host:port/path) for custom HTTP calls.
    #[arg(long)]
    target: String,
    /// Contract workload to call (e.g. inventory.s).
    #[arg(long)]
    workload: Option<String>,
    /// Calls in flight at most.
    #[arg(long, default_value_t = 10)]
    concurrency: u32,
    /// TCP connections: a number shared by the callers (HTTP/2, gRPC),
    /// `per-caller` (one each) or `per-call` (a new connection for every call,
    /// closed after it). Default: per-caller for rest/soap, else
    /// min(concurrency, CPUs).
    #[arg(long, value_name = "N|per-caller|per-call")]
    connections: Option<ConnectionPolicy>,
    /// Open loop: calls started per second (default: closed loop).
    #[arg(long)]
    rate: Option<f64>,
    /// Open-loop spacing of calls.
    #[arg(long, value_enum, default_value_t = ArrivalArg::Uniform)]
    arrival: ArrivalArg,
    /// Measured time, e.g. 10s, 500ms, 2m (default 10s unless --requests).
    #[arg(long, value_parser = duration_arg)]
    duration: Option<Duration>,
    /// Stop after this many measured calls.
    #[arg(long)]
    requests: Option<u64>,
    /// Warm-up before measuring (not counted).
    #[arg(long, value_parser = duration_arg, default_value = "0s")]
    warmup: Duration,
    /// Time limit of one call.
    #[arg(long, value_parser = duration_arg, default_value = "10s")]
    timeout: Duration,
    /// Time limit of one connection attempt.
    #[arg(long, value_parser = duration_arg, default_value = "5s")]
    connect_timeout: Duration,
    /// Response checks: status (and size) or full (decode and compare).
    #[arg(long, value_enum, default_value_t = ValidateArg::Status)]
    validate: ValidateArg,
    /// Engine threads (default: CPUs available, at most --connections).
    #[arg(long)]
    threads: Option<u32>,
    #[command(flatten)]
    tls: TlsArgs,
    /// Custom HTTP call: method (default GET, or POST with --body).
    #[arg(long)]
    method: Option<String>,
    /// Extra request header (gRPC: metadata), "Name: value"; repeatable.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Custom HTTP/SOAP call: file holding the request body.
    #[arg(long, value_name = "FILE")]
    body: Option<PathBuf>,
    /// Custom SOAP call: SOAPAction header value.
    #[arg(long)]
    soap_action: Option<String>,
    /// Custom gRPC call: .proto file(s) compiled at run time; repeatable.
    #[arg(long, value_name = "FILE")]
    proto: Vec<PathBuf>,
    /// Custom gRPC call: import path for --proto; repeatable.
    #[arg(long, value_name = "DIR")]
    import_path: Vec<PathBuf>,
    /// Custom gRPC call: package.Service/Method.
    #[arg(long)]
    call: Option<String>,
    /// Custom gRPC call: the request as JSON (or @FILE).
    #[arg(long)]
    data: Option<String>,
    /// Output form.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    output: Output,
    /// Write the latency distribution (HdrHistogram .hgrm text, ms) to FILE.
    #[arg(long, value_name = "FILE")]
    histogram: Option<PathBuf>,
    /// No progress line.
    #[arg(long, short)]
    quiet: bool,
}

pub(crate) use protobench_runner::units::parse_duration;

/// A duration flag of `load` and `verify`: `parse_duration`, at most
/// [`protobench_load::MAX_DURATION_NS`] (clap names the flag and the value).
pub(crate) fn duration_arg(s: &str) -> Result<Duration, String> {
    let max = Duration::from_nanos(protobench_load::MAX_DURATION_NS);
    match parse_duration(s) {
        Ok(d) if d <= max => Ok(d),
        Ok(_) => Err(format!("must be {}", protobench_load::MAX_DURATION_TEXT)),
        Err(e) if e.ends_with("too long a duration") => Err(format!("must be {}", protobench_load::MAX_DURATION_TEXT)),
        Err(e) => Err(e),
    }
}

/// A duration flag that must also be positive (`verify --timeout`).
pub(crate) fn positive_duration_arg(s: &str) -> Result<Duration, String> {
    match duration_arg(s)? {
        Duration::ZERO => Err(format!("must be positive and {}", protobench_load::MAX_DURATION_TEXT)),
        d => Ok(d),
    }
}

/// Nanoseconds of a duration `duration_arg` accepted (at most 10^6 s, so it fits).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

impl Args {
    fn plan(&self) -> Result<LoadPlan, String> {
        let protocol: Protocol = self
            .protocol
            .parse()
            .map_err(|e: protobench_contract::protocol::UnknownProtocol| e.to_string())?;
        let mut plan = plan_defaults(protocol, &self.target);
        plan.workload = self.workload.clone();
        plan.concurrency = self.concurrency;
        let http1 = protocol.is_http1();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        (plan.connections, plan.per_call) = match self.connections {
            None if http1 => (self.concurrency, false),
            None => (self.concurrency.min(cpus), false),
            // As written: the engine names a count that does not fit.
            Some(ConnectionPolicy::Shared(n)) => (n, false),
            Some(policy) => policy.for_callers(self.concurrency),
        };
        plan.rate = self.rate;
        plan.arrival = match self.arrival {
            ArrivalArg::Uniform => Arrival::Uniform,
            ArrivalArg::Poisson => Arrival::Poisson,
        };
        plan.requests = self.requests;
        plan.duration_ns = match (self.duration, self.requests) {
            (Some(d), _) => Some(nanos(d)),
            (None, Some(_)) => None,
            (None, None) => Some(protobench_model::load::DEFAULT_DURATION_NS),
        };
        plan.warmup_ns = nanos(self.warmup);
        plan.timeout_ns = nanos(self.timeout);
        plan.connect_timeout_ns = nanos(self.connect_timeout);
        plan.validate = match self.validate {
            ValidateArg::Status => Validation::Status,
            ValidateArg::Full => Validation::Full,
        };
        plan.threads = self.threads.unwrap_or(0);
        plan.tls = self.tls.plan();
        let mut headers = Vec::new();
        for h in &self.headers {
            let (name, value) = h
                .split_once(':')
                .ok_or_else(|| format!("invalid -H {h:?}: expected \"Name: value\""))?;
            headers.push(Header {
                name: name.trim().to_owned(),
                value: value.trim().to_owned(),
            });
        }
        let data = match &self.data {
            Some(d) if d.starts_with('@') => Some(
                std::fs::read_to_string(&d[1..]).map_err(|e| format!("cannot read --data file {}: {e}", &d[1..]))?,
            ),
            other => other.clone(),
        };
        let custom = CustomCall {
            method: self.method.clone(),
            path: None,
            headers,
            body_file: self.body.clone(),
            soap_action: self.soap_action.clone(),
            proto_files: self.proto.clone(),
            import_paths: self.import_path.clone(),
            call: self.call.clone(),
            data,
        };
        // A URL target with no workload is a custom call (GET unless --body).
        let url = self.target.starts_with("http://") || self.target.starts_with("https://");
        plan.custom = (custom != CustomCall::default() || (url && self.workload.is_none())).then_some(custom);
        Ok(plan)
    }
}

/// Runs `protobench load`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let plan = match args.plan() {
        Ok(p) => p,
        Err(e) => return Ok(usage(e)),
    };
    if let Err(e) = protobench_load::validate(&plan) {
        return Ok(usage(e));
    }
    // Every output file must be writable before the run, not after it.
    let histogram = match args.histogram.as_deref().map(OutputFile::open).transpose() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(3));
        }
    };
    let progress = !args.quiet && std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let mut signals = {
        let _runtime = rt.enter();
        super::common::ShutdownSignals::install()?
    };
    let result = rt.block_on(async {
        let cancel = CancellationToken::new();
        let on_signal = cancel.clone();
        tokio::spawn(async move {
            if signals.recv().await.is_ok() {
                on_signal.cancel();
            }
        });
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let printer = tokio::spawn(async move {
            let mut shown = false;
            while let Some(ev) = rx.recv().await {
                if let (
                    true,
                    Event::Progress {
                        elapsed_ns,
                        calls,
                        errors,
                        rate,
                        p99_ns,
                    },
                ) = (progress, ev)
                {
                    eprint!(
                        "\r\x1b[2K{:>6.1}s  {:>10.1} calls/s  p99 {:>9}  calls {calls}  errors {errors}",
                        elapsed_ns as f64 / 1e9,
                        rate,
                        fmt_ns(p99_ns as f64)
                    );
                    let _ = std::io::stderr().flush();
                    shown = true;
                }
            }
            if shown {
                eprint!("\r\x1b[2K");
            }
        });
        let r = protobench_load::run(plan, Some(tx), cancel).await;
        let _ = printer.await;
        r
    });
    let result = match result {
        Ok(r) => r,
        Err(
            e @ (LoadError::Plan(_)
            | LoadError::Input { .. }
            | LoadError::UnknownMethod { .. }
            | LoadError::Tls(_)
            | LoadError::Request(_)),
        ) => {
            if let Some(h) = histogram {
                h.discard();
            }
            return Ok(usage(error_chain(&e)));
        }
        Err(e @ LoadError::Interrupted { .. }) => {
            if let Some(h) = histogram {
                h.discard();
            }
            eprintln!("error: {}", error_chain(&e));
            return Ok(ExitCode::from(130));
        }
        Err(e) => {
            if let Some(h) = histogram {
                h.discard();
            }
            eprintln!("error: {}", error_chain(&e));
            return Ok(ExitCode::from(3));
        }
    };
    // Written before printing; a failure here still prints the result.
    let unwritten = histogram.and_then(|h| h.write(&result).err());
    let mut out = std::io::stdout().lock();
    match args.output {
        Output::Text => out.write_all(summary(&result).as_bytes())?,
        Output::Json => {
            serde_json::to_writer_pretty(&mut out, &result)?;
            out.write_all(b"\n")?;
        }
        Output::Csv => out.write_all(csv(&result).as_bytes())?,
    }
    out.flush()?;
    drop(out);
    if let Some(e) = unwritten {
        eprintln!("error: {e}; the result is printed above");
        return Ok(ExitCode::from(3));
    }
    Ok(if result.end_reason == protobench_load::EndReason::Interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// An output file opened (not truncated) before the run, so that a path that
/// cannot be written fails the run before any connection.
struct OutputFile {
    path: PathBuf,
    file: std::fs::File,
    /// Created by us: removed again when the run fails to start.
    created: bool,
}

impl OutputFile {
    fn open(path: &std::path::Path) -> Result<OutputFile, String> {
        let fail = |e: std::io::Error| format!("cannot write --histogram {}: {e}", path.display());
        let (file, created) = match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
            Ok(f) => (f, true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                (std::fs::OpenOptions::new().write(true).open(path).map_err(fail)?, false)
            }
            Err(e) => return Err(fail(e)),
        };
        Ok(OutputFile {
            path: path.to_owned(),
            file,
            created,
        })
    }

    /// Replaces the file's content with the result's `.hgrm` text.
    fn write(mut self, result: &LoadResult) -> Result<(), String> {
        let fail = |e: &dyn std::fmt::Display| format!("cannot write --histogram {}: {e}", self.path.display());
        let text = protobench_load::hgrm(result).map_err(|e| fail(&e))?;
        if self.file.metadata().is_ok_and(|m| m.is_file()) {
            self.file.set_len(0).map_err(|e| fail(&e))?;
        }
        self.file.write_all(text.as_bytes()).map_err(|e| fail(&e))?;
        self.file.flush().map_err(|e| fail(&e))
    }

    /// The run did not happen: leave no empty file behind.
    fn discard(self) {
        if self.created {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn latency_line(label: &str, l: &protobench_load::LatencySummary) -> String {
    if l.count == 0 {
        return format!("{label:<10} -\n");
    }
    format!(
        "{label:<10} min {}  mean {}  p50 {}  p90 {}  p95 {}  p99 {}  p99.9 {}  max {}\n",
        fmt_ns(l.min_ns as f64),
        fmt_ns(l.mean_ns as f64),
        fmt_ns(l.p50_ns as f64),
        fmt_ns(l.p90_ns as f64),
        fmt_ns(l.p95_ns as f64),
        fmt_ns(l.p99_ns as f64),
        fmt_ns(l.p999_ns as f64),
        fmt_ns(l.max_ns as f64)
    )
}

/// The readable summary.
fn summary(r: &LoadResult) -> String {
    let p = &r.plan;
    let what = p.workload.clone().unwrap_or_else(|| "custom call".into());
    let lp = match p.rate {
        Some(rate) => format!("open loop at {rate} calls/s ({:?})", p.arrival).to_lowercase(),
        None => "closed loop".into(),
    };
    let over = if p.per_call {
        "a new connection per call".to_owned()
    } else {
        format!(
            "{} connection{}",
            p.connections,
            if p.connections == 1 { "" } else { "s" }
        )
    };
    let mut s = format!(
        "{} {} {what}: {lp}, concurrency {} over {over}{}\n",
        p.protocol,
        p.target,
        p.concurrency,
        if p.tls.is_some() { ", TLS" } else { "" }
    );
    s += &format!(
        "{:<10} {:.2} s measured ({}), {} calls, {} successes, {} errors\n",
        "run",
        r.duration_ns as f64 / 1e9,
        r.end_reason.name(),
        r.calls,
        r.successes,
        r.error_count()
    );
    s += &format!(
        "{:<10} {:.1} calls/s (started {:.1}/s)\n",
        "rate", r.rate, r.started_rate
    );
    s += &latency_line("latency", &r.latency);
    s += &latency_line("service", &r.service_time);
    s += &latency_line("connect", &r.connect);
    if p.per_call || r.connects_per_second > 0.0 {
        s += &format!(
            "{:<10} {:.1} connects/s, {:.1}% of latency spent connecting ({} opened)\n",
            "connects",
            r.connects_per_second,
            r.connect_share * 100.0,
            r.connections_opened
        );
    }
    if r.errors.is_empty() {
        s += &format!("{:<10} none\n", "errors");
    }
    for (i, e) in r.errors.iter().enumerate() {
        s += &format!(
            "{:<10} {} {} (first: {})\n",
            if i == 0 { "errors" } else { "" },
            e.kind.name(),
            e.count,
            e.sample
        );
    }
    s += &format!(
        "{:<10} sent {}/call, received {}/call ({} / {} in all)\n",
        "bytes",
        fmt_bytes(r.bytes_sent_per_call),
        fmt_bytes(r.bytes_received_per_call),
        fmt_bytes(r.bytes_sent as f64),
        fmt_bytes(r.bytes_received as f64)
    );
    let g = &r.generator;
    s += &format!(
        "{:<10} cpu {} in the measured window ({}/call, {:.0}% of {} thread{}), schedule lag p99 {}\n",
        "generator",
        fmt_ns(g.cpu_ns as f64),
        fmt_ns(g.cpu_ns_per_call),
        g.cpu_utilization * 100.0,
        g.threads,
        if g.threads == 1 { "" } else { "s" },
        if g.schedule_lag.count == 0 {
            "-".into()
        } else {
            fmt_ns(g.schedule_lag.p99_ns as f64)
        }
    );
    match (&g.reason, g.generator_bound) {
        (reason, true) => s += &format!("{:<10} GENERATOR-BOUND: {}\n", "", reason.clone().unwrap_or_default()),
        // Not judged (a window too short).
        (Some(reason), false) => s += &format!("{:<10} not judged: {reason}\n", ""),
        (None, false) => {}
    }
    s
}

/// One header line and one row.
fn csv(r: &LoadResult) -> String {
    let p = &r.plan;
    let l = &r.latency;
    let st = &r.service_time;
    let header = "protocol,target,workload,concurrency,connections,target_rate,duration_ns,end_reason,calls,successes,errors,rate,\
latency_min_ns,latency_mean_ns,latency_p50_ns,latency_p90_ns,latency_p95_ns,latency_p99_ns,latency_p999_ns,latency_max_ns,\
service_p50_ns,service_p99_ns,bytes_sent_per_call,bytes_received_per_call,generator_cpu_ns,generator_cpu_ns_per_call,generator_bound,per_call,connects_per_second,connect_share\n";
    let quote = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_owned()
        }
    };
    let row = [
        quote(p.protocol.name()),
        quote(&p.target),
        quote(p.workload.as_deref().unwrap_or("")),
        p.concurrency.to_string(),
        p.connections.to_string(),
        p.rate.map(|r| r.to_string()).unwrap_or_default(),
        r.duration_ns.to_string(),
        r.end_reason.name().into(),
        r.calls.to_string(),
        r.successes.to_string(),
        r.error_count().to_string(),
        format!("{:.3}", r.rate),
        l.min_ns.to_string(),
        l.mean_ns.to_string(),
        l.p50_ns.to_string(),
        l.p90_ns.to_string(),
        l.p95_ns.to_string(),
        l.p99_ns.to_string(),
        l.p999_ns.to_string(),
        l.max_ns.to_string(),
        st.p50_ns.to_string(),
        st.p99_ns.to_string(),
        format!("{:.1}", r.bytes_sent_per_call),
        format!("{:.1}", r.bytes_received_per_call),
        r.generator.cpu_ns.to_string(),
        format!("{:.1}", r.generator.cpu_ns_per_call),
        r.generator.generator_bound.to_string(),
        p.per_call.to_string(),
        format!("{:.1}", r.connects_per_second),
        format!("{:.4}", r.connect_share),
    ];
    format!("{header}{}\n", row.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("10").is_err());
    }
}
