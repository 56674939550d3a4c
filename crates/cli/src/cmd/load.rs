//! `protobench load`: one load run against any target, printed as a summary,
//! JSON (docs/schema/load-result.schema.json) or CSV.
//!
//! Exit codes: 0 the run completed (failed calls are measurements, not
//! errors), 2 bad usage or input, 3 the run could not start (target
//! unreachable or unresolvable), 4 a `--threshold` failed, 130 interrupted by
//! Ctrl-C (the partial result is still printed).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::exit::Exit;
use anyhow::Context as _;
use clap::ValueEnum;
use protobench_load::{
    Arrival, ConnectionPolicy, CustomCall, Event, LoadError, LoadPlan, LoadResult, TlsPlan, Validation, plan_defaults,
};
use protobench_model::format::{error_chain, fmt_ns};
use protobench_runner::call::{Problem, Spelling as _};
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
    /// OpenMetrics / Prometheus text exposition.
    Openmetrics,
    /// CSV of the per-second timeline (second, successes, errors, rate, p50, p99).
    TimelineCsv,
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
    /// The TLS settings, checked by the rules every call's are (one
    /// [`CallSpec`](protobench_runner::call::CallSpec): `--insecure` with
    /// `--cacert`, half a client pair, files that do not exist), for the
    /// commands that take TLS flags without a call (`verify`, a stream);
    /// `on`: the target asked for TLS (an `https://` URL).
    pub(crate) fn checked(&self, on: bool) -> Result<Option<TlsPlan>, String> {
        let spec = protobench_runner::call::CallSpec {
            tls: (self.tls || on).then_some(true),
            cacert: self.cacert.clone(),
            insecure: self.insecure,
            cert: self.cert.clone(),
            key: self.key.clone(),
            server_name: self.server_name.clone(),
            ..Default::default()
        };
        spec.build(None, false)
            .map(|call| call.tls)
            .map_err(|issues| flag_errors(&issues))
    }
}

/// Call problems as `load`'s flags name them, one `error:` line each.
fn flag_errors(issues: &[protobench_runner::call::CallIssue]) -> String {
    issues
        .iter()
        .map(|i| {
            // "--insecure and --cacert cannot be used together", "--cert requires --key"
            let sep = match i.problem {
                Problem::ConflictsWith(_) | Problem::Requires(_) => " ",
                _ => ": ",
            };
            format!("{}{sep}{}", Flags.name(i.field), i.message(&Flags))
        })
        .collect::<Vec<_>>()
        .join("\nerror: ")
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
#[command(after_help = "Examples:
  protobench load http://127.0.0.1:8080/items -c 32 -z 10s
  protobench load grpc://127.0.0.1:50051 --proto api.proto --call pkg.Svc/Get -d '{\"id\": 1}' -n 10000
  protobench load grpc://127.0.0.1:50051 --call pkg.Svc/Get -d '{\"id\": 1}' -n 10000   (server reflection)
  protobench load --protocol rest 127.0.0.1:8080 --workload inventory.m -q 2000 --threshold 'p99<5ms'
  protobench load https://api.example/v1/orders -m POST -D order.json -H 'Authorization: Bearer T' -O json -o result.json")]
pub(crate) struct Args {
    /// The target: a URL (http://, https:// mean rest; grpc://, grpcs:// mean grpc) or host:port.
    #[arg(value_name = "TARGET", required_unless_present = "target", conflicts_with = "target")]
    url: Option<String>,
    /// rest, rest-h2, grpc, soap, graphql, graphql-get, connect, connect-json, grpc-web or grpc-web-text (default: from TARGET's scheme, or grpc with --call).
    #[arg(long)]
    protocol: Option<String>,
    /// The target, as the positional TARGET.
    #[arg(long, value_name = "TARGET")]
    target: Option<String>,
    /// Contract workload to call (e.g. inventory.s).
    #[arg(long)]
    workload: Option<String>,
    /// Calls in flight at most.
    #[arg(long, short = 'c', default_value_t = 10)]
    concurrency: u32,
    /// Streaming workloads (stream.*): how the stream is carried: grpc,
    /// websocket, sse, poll or connect (default: grpc on --protocol grpc,
    /// connect on connect; on rest and rest-h2 websocket for echo streams,
    /// sse for subscriptions, poll for polling).
    #[arg(long, value_name = "TRANSPORT")]
    stream: Option<String>,
    /// Streaming workloads: streams open at once (each replaced when it
    /// ends while --duration lasts).
    #[arg(long, value_name = "N", default_value_t = 1)]
    streams: u32,
    /// Streaming workloads: messages per stream (echo: sent; subscription:
    /// asked for) [default: the workload's].
    #[arg(long, value_name = "N")]
    messages: Option<u32>,
    /// Polling workloads (stream.poll.*): the wait after a page that was not
    /// full before the next poll [default: 10ms].
    #[arg(long, value_name = "DURATION", value_parser = positive_duration_arg)]
    poll_interval: Option<Duration>,
    /// Streaming workloads over WebSocket: text (JSON) or binary (protobuf) frames.
    #[arg(long, value_name = "text|binary", default_value = "text", value_parser = frames_arg)]
    frames: protobench_model::stream::Frames,
    /// TCP connections: a number shared by the callers (HTTP/2, gRPC),
    /// `per-caller` (one each) or `per-call` (a new connection for every call,
    /// closed after it). Default: per-caller for rest/soap, else
    /// min(concurrency, CPUs).
    #[arg(long, value_name = "N|per-caller|per-call")]
    connections: Option<ConnectionPolicy>,
    /// Open loop: calls started per second (default: closed loop).
    #[arg(long, short = 'q')]
    rate: Option<f64>,
    /// Open-loop spacing of calls.
    #[arg(long, value_enum, default_value_t = ArrivalArg::Uniform)]
    arrival: ArrivalArg,
    /// Measured time, e.g. 10s, 500ms, 2m (default 10s unless --requests).
    #[arg(long, short = 'z', value_parser = duration_arg)]
    duration: Option<Duration>,
    /// Stop after this many measured calls.
    #[arg(long, short = 'n')]
    requests: Option<u64>,
    /// A concurrency schedule (closed loop; k6's --stage): reach TARGET
    /// callers over DURATION, linearly, then the next stage; repeatable or
    /// comma-separated, e.g. 30s:100,60s:100. Callers join and stay to the
    /// end; --concurrency becomes the peak, the run lasts the stages' total.
    #[arg(long = "stage", alias = "stages", value_name = "DURATION:TARGET", value_delimiter = ',',
          value_parser = stage_arg, conflicts_with = "concurrency")]
    stages: Vec<protobench_load::Stage>,
    /// With --stage: callers active from the start (k6's startVUs) [default: 1].
    #[arg(long, value_name = "N")]
    start_users: Option<u32>,
    /// Warm-up before measuring (not counted).
    #[arg(long, value_parser = duration_arg, default_value = "0s")]
    warmup: Duration,
    /// Time limit of one call.
    #[arg(long, short = 't', value_parser = duration_arg, default_value = "10s")]
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
    coordinator: super::agent::CoordinatorArgs,
    #[command(flatten)]
    tls: TlsArgs,
    /// Custom HTTP call: method (default GET, or POST with a body).
    #[arg(long, short = 'm')]
    method: Option<String>,
    /// Extra request header (gRPC: metadata), "Name: value"; repeatable.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Custom call: the request from FILE (rest/soap: the body; grpc: JSON).
    #[arg(
        long = "data-file",
        short = 'D',
        alias = "body",
        value_name = "FILE",
        conflicts_with = "data"
    )]
    body: Option<PathBuf>,
    /// Custom SOAP call: SOAPAction header value.
    #[arg(long)]
    soap_action: Option<String>,
    /// Custom gRPC call: .proto file(s) compiled at run time; repeatable.
    #[arg(long, value_name = "FILE")]
    proto: Vec<PathBuf>,
    /// Custom gRPC call: a descriptor set (protoc -o FILE) holding the method.
    /// With neither --proto nor --protoset the server's reflection describes it.
    #[arg(long, value_name = "FILE", conflicts_with = "proto")]
    protoset: Option<PathBuf>,
    /// Custom gRPC call: import path for --proto; repeatable.
    #[arg(long, value_name = "DIR")]
    import_path: Vec<PathBuf>,
    /// Custom gRPC call: package.Service/Method.
    #[arg(long)]
    call: Option<String>,
    /// Custom call: the request inline (rest/soap: the body; grpc: JSON, or @FILE).
    #[arg(long, short = 'd')]
    data: Option<String>,
    /// Output form (--output is an older spelling).
    #[arg(long = "format", short = 'O', alias = "output", value_name = "FORMAT", value_enum, default_value_t = Output::Text)]
    output: Output,
    /// Write the output to FILE instead of standard output.
    #[arg(long = "out", short = 'o', value_name = "FILE")]
    out: Option<PathBuf>,
    /// Write the latency distribution (HdrHistogram .hgrm text, ms) to FILE.
    #[arg(long, value_name = "FILE")]
    histogram: Option<PathBuf>,
    /// Write one latency histogram per second (HdrHistogram interval log, .hlog) to FILE.
    #[arg(long, value_name = "FILE")]
    hlog: Option<PathBuf>,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
    /// Follow the run on a live page served by this binary at ADDR (default
    /// 127.0.0.1:0; the address is printed on stderr); after the run it shows
    /// the result until Ctrl-C. Read-only.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:0")]
    web: Option<std::net::SocketAddr>,
    /// With --web on an address other than loopback: allow it, and require
    /// the one-time token printed at start on every request.
    #[arg(long, requires = "web")]
    web_public: bool,
    /// Network between engine and target: only `loopback` here, because a
    /// link needs the server inside an emulated host that protobench starts;
    /// for lan-1g, wan-100m-40ms, mobile-4g or rate=...,delay=... run a
    /// preset with `network = [...]` (docs/network.md).
    #[arg(long, value_name = "PROFILE")]
    network: Option<String>,
    #[arg(long = "threshold", value_name = "GATE", help = super::threshold::HELP)]
    thresholds: Vec<String>,
    /// Also store the result as a run (one point, one repetition) in this
    /// results database, for `compare`, `show` and `report`.
    #[arg(long, value_name = "FILE")]
    db: Option<PathBuf>,
}

/// `--network`: `loopback` is what `load` always measures; an emulated
/// profile is checked (a typo gets the profile's own error) and refused,
/// since `load` cannot move a server it did not start behind a link.
fn frames_arg(s: &str) -> Result<protobench_model::stream::Frames, String> {
    protobench_model::stream::Frames::parse(s)
}

fn network_arg(text: &str) -> Result<(), String> {
    match text.parse::<protobench_runner::network::Network>() {
        Err(e) => Err(format!("--network: {e}")),
        Ok(protobench_runner::network::Network::Loopback) => Ok(()),
        Ok(n) => Err(format!(
            "--network {n}: `load` calls a server at --target that protobench did not start, and a link can only be put in front of a server protobench starts inside its emulated host; run a preset instead, e.g. `protobench run presets/network.toml` or a preset with network = [\"{n}\"] (docs/network.md)"
        )),
    }
}

pub(crate) use super::common::duration_arg;

/// A `--stage DURATION:TARGET` value (k6's order).
fn stage_arg(s: &str) -> Result<protobench_load::Stage, String> {
    protobench_load::stages::parse_stage(s, |d| duration_arg(d).map(nanos))
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
    ExitCode::from(Exit::Usage)
}

/// `load`'s spelling of the call's fields: its flags.
struct Flags;

impl protobench_runner::call::Spelling for Flags {
    fn name(&self, field: protobench_runner::call::Field) -> String {
        use protobench_runner::call::Field::*;
        match field {
            Method => "--method",
            Path => "the URL's path",
            Header(_) => "-H",
            Data => "--data",
            DataFile => "--data-file",
            SoapAction => "--soap-action",
            Call => "--call",
            Proto => "--proto",
            ImportPath => "--import-path",
            Protoset => "--protoset",
            Tls => "--tls",
            Cacert => "--cacert",
            Insecure => "--insecure",
            Cert => "--cert",
            Key => "--key",
            ServerName => "--server-name",
        }
        .to_string()
    }

    fn example(&self, field: protobench_runner::call::Field, value: &str) -> String {
        format!("{} {value}", self.name(field))
    }
}

impl Args {
    fn plan(&self) -> Result<LoadPlan, String> {
        let written = self.url.as_deref().or(self.target.as_deref()).unwrap_or_default();
        let resolved = super::target::resolve(self.protocol.as_deref(), written, self.call.is_some())?;
        let protocol = resolved.protocol;
        let mut plan = plan_defaults(protocol, &resolved.target);
        plan.workload = self.workload.clone();
        plan.concurrency = self.concurrency;
        if !self.stages.is_empty() {
            plan.start_users = self.start_users.unwrap_or(1);
            plan.stages = self.stages.clone();
            plan.concurrency = protobench_load::stages::peak(plan.start_users, &plan.stages).max(1);
        } else if let Some(n) = self.start_users {
            plan.start_users = n;
        }
        let http1 = protocol.is_http1();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        (plan.connections, plan.per_call) = match self.connections {
            None if http1 => (plan.concurrency, false),
            None => (plan.concurrency.min(cpus), false),
            // As written: the engine names a count that does not fit.
            Some(ConnectionPolicy::Shared(n)) => (n, false),
            Some(policy) => policy.for_callers(plan.concurrency),
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
            // With a schedule the stages' total is the run's length.
            (None, None) if !self.stages.is_empty() => None,
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
        let read = |path: &std::path::Path, flag: &str| {
            std::fs::read_to_string(path).map_err(|e| format!("cannot read {flag} file {}: {e}", path.display()))
        };
        let data = match &self.data {
            Some(d) if d.starts_with('@') => Some(read(std::path::Path::new(&d[1..]), "--data")?),
            other => other.clone(),
        };
        // The same call specification a preset's [[targets]] builds through.
        let spec = protobench_runner::call::CallSpec {
            method: self.method.clone(),
            path: None,
            headers: self.headers.clone(),
            data,
            data_file: self.body.clone(),
            soap_action: self.soap_action.clone(),
            call: self.call.clone(),
            proto: self.proto.clone(),
            import_path: self.import_path.clone(),
            protoset: self.protoset.clone(),
            tls: (self.tls.tls || resolved.tls).then_some(true),
            cacert: self.tls.cacert.clone(),
            insecure: self.tls.insecure,
            cert: self.tls.cert.clone(),
            key: self.tls.key.clone(),
            server_name: self.tls.server_name.clone(),
        };
        let call = spec
            .build(Some(protocol), self.workload.is_none())
            .map_err(|issues| flag_errors(&issues))?;
        plan.tls = call.tls;
        let custom = call.custom;
        // A URL target with no workload is a custom call (GET unless a body is given).
        let url = resolved.target.starts_with("http://") || resolved.target.starts_with("https://");
        plan.custom = (custom != CustomCall::default() || (url && self.workload.is_none())).then_some(custom);
        Ok(plan)
    }
}

impl Args {
    /// The plan of a streaming workload (`--workload stream.*`): the
    /// target and TLS as for calls, the streaming flags, and a refusal of
    /// every flag that means calls.
    fn stream_plan(&self) -> Result<protobench_model::stream::StreamPlan, String> {
        let workload = self.workload.clone().unwrap_or_default();
        let refused: [(bool, &str); 14] = [
            (self.requests.is_some(), "--requests"),
            (!self.stages.is_empty(), "--stage"),
            (self.start_users.is_some(), "--start-users"),
            (!self.warmup.is_zero(), "--warmup"),
            (self.validate != ValidateArg::Status, "--validate"),
            (self.arrival != ArrivalArg::Uniform, "--arrival"),
            (self.method.is_some() || !self.headers.is_empty(), "--method/--header"),
            (self.body.is_some() || self.data.is_some(), "--data/--data-file"),
            (
                self.call.is_some() || !self.proto.is_empty() || self.protoset.is_some(),
                "--call/--proto/--protoset",
            ),
            (self.soap_action.is_some(), "--soap-action"),
            (self.histogram.is_some() || self.hlog.is_some(), "--histogram/--hlog"),
            (self.db.is_some() || self.web.is_some(), "--db/--web"),
            (!self.thresholds.is_empty(), "--threshold"),
            (
                !matches!(self.output, Output::Text | Output::Json),
                "--format (text or json only)",
            ),
        ];
        if let Some((_, flag)) = refused.iter().find(|(given, _)| *given) {
            return Err(format!("{flag} does not apply to a streaming workload ({workload})"));
        }
        let written = self.url.as_deref().or(self.target.as_deref()).unwrap_or_default();
        let resolved = super::target::resolve(self.protocol.as_deref(), written, false)?;
        let protocol = resolved.protocol;
        let op = protobench_contract::stream::workload::find(&workload)
            .map(|w| w.operation())
            .unwrap_or(protobench_contract::StreamOperation::EchoStream);
        let transport = match &self.stream {
            Some(name) => name.parse().map_err(|e: String| format!("--stream: {e}"))?,
            None => protobench_load::default_transport(protocol, op),
        };
        let target = resolved
            .target
            .trim_start_matches("http://")
            .trim_start_matches("https://")
            .trim_end_matches('/')
            .to_owned();
        let mut plan = protobench_load::stream_plan_defaults(protocol, transport, &target, &workload);
        plan.frames = self.frames;
        plan.streams = self.streams;
        plan.connections = match self.connections {
            None | Some(ConnectionPolicy::PerCaller) | Some(ConnectionPolicy::PerCall) => self.streams,
            Some(ConnectionPolicy::Shared(n)) => n,
        };
        plan.messages = self.messages;
        plan.rate = self.rate;
        plan.poll_interval_ns = self.poll_interval.map(nanos);
        plan.duration_ns = self.duration.map(nanos);
        if self.timeout != Duration::from_secs(10) {
            plan.timeout_ns = nanos(self.timeout);
        }
        plan.connect_timeout_ns = nanos(self.connect_timeout);
        plan.threads = self.threads.unwrap_or(1);
        plan.tls = self.tls.checked(resolved.tls)?;
        protobench_load::validate_stream(&plan).map_err(|e| e.to_string())?;
        Ok(plan)
    }
}

/// Runs `protobench load`: the plan and every output checked first, the
/// engine run, then the outputs.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.workload.as_deref().is_some_and(|w| w.starts_with("stream.")) {
        let plan = match args.stream_plan() {
            Ok(plan) => plan,
            Err(e) => return Ok(usage(e)),
        };
        let output = super::load_stream::Output {
            json: args.output == Output::Json,
            out: args.out.clone(),
        };
        let tls_on = plan.tls.is_some();
        return Ok(super::load_stream::run(plan, output)?.unwrap_or_else(|e| refused(&e, tls_on)));
    }
    if args.stream.is_some() || args.messages.is_some() || args.streams != 1 {
        return Ok(usage(
            "--stream, --streams and --messages apply to a streaming workload (--workload stream.*, listed in contract/stream-workloads.json)",
        ));
    }
    let Prepared {
        plan,
        thresholds,
        outputs,
        mut store,
    } = match prepare(&args) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let tls_on = plan.tls.is_some();
    // Live progress whenever stderr is a terminal, whatever stdout is.
    let progress = !args.quiet && std::io::stderr().is_terminal();
    // The live page: its address on stderr (stdout carries the result).
    let label = format!(
        "{} {} {} c={}",
        plan.protocol,
        plan.workload.as_deref().unwrap_or("custom call"),
        plan.target,
        plan.concurrency
    );
    let web = match args.web {
        None => None,
        Some(addr) => match crate::live_page::WebView::start_quiet(addr, args.web_public, "load", 0, None) {
            Ok(w) => {
                eprintln!("live view: {}", w.url());
                w.live.on(&protobench_runner::orchestrate::RunEvent::PointStarted {
                    point: 0,
                    repetition: 1,
                    label: label.clone(),
                    done: 0,
                    todo: 1,
                });
                Some(w)
            }
            Err(e) => {
                outputs.discard();
                return Ok(usage(format!("{e:#}")));
            }
        },
    };
    let coordinator = match args.coordinator.coordinator(&[]) {
        Ok(c) => c,
        Err(e) => {
            outputs.discard();
            return Ok(usage(e));
        }
    };
    let result = match measure(plan, progress, web.as_ref().map(|w| w.live.clone()), coordinator)? {
        Ok(mut r) => {
            r.environment.commit = super::common::git_commit();
            r
        }
        Err(e) => {
            outputs.discard();
            return Ok(refused(&e, tls_on));
        }
    };
    let code = deliver(&args, &result, outputs, store.as_mut(), &thresholds)?;
    if let Some(web) = web {
        web.live.on(&protobench_runner::orchestrate::RunEvent::PointFinished {
            point: 0,
            label,
            repetition: 1,
            rate: Some(result.rate),
            failure: None,
        });
        let summary = protobench_results::load_summary::text(&result);
        let page = format!(
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>protobench load</title></head><body><pre>{}</pre></body></html>",
            protobench_results::svg::esc(&summary)
        );
        web.serve_report_until_stopped_quiet(
            &format!("load ended ({}): {:.0} calls/s", result.end_reason.name(), result.rate),
            Some(page),
        );
    }
    Ok(code)
}

/// What `load` checks before any connection: the plan, the thresholds,
/// every output file (opened, so an unwritable path fails now) and the
/// database of `--db`.
struct Prepared {
    plan: LoadPlan,
    thresholds: Vec<protobench_model::threshold::Threshold>,
    outputs: Outputs,
    store: Option<protobench_results::store::Store>,
}

/// The output files, opened before the run.
struct Outputs {
    histogram: Option<OutputFile>,
    out: Option<OutputFile>,
    hlog: Option<OutputFile>,
}

impl Outputs {
    /// Removes the files this run created (the run did not happen).
    fn discard(self) {
        [self.histogram, self.out, self.hlog]
            .into_iter()
            .flatten()
            .for_each(OutputFile::discard);
    }
}

fn prepare(args: &Args) -> Result<Prepared, ExitCode> {
    if let Some(Err(e)) = args.network.as_deref().map(network_arg) {
        return Err(usage(e));
    }
    let plan = args.plan().map_err(usage)?;
    protobench_load::validate(&plan).map_err(usage)?;
    let thresholds = super::threshold::parse_flags(&args.thresholds).map_err(usage)?;
    // Every output file must be writable before the run, not after it.
    let mut files = Vec::new();
    for (path, flag) in [
        (&args.histogram, "--histogram"),
        (&args.out, "--out"),
        (&args.hlog, "--hlog"),
    ] {
        match path.as_deref().map(|p| OutputFile::open(p, flag)).transpose() {
            Ok(f) => files.push(f),
            Err(e) => {
                files.into_iter().flatten().for_each(OutputFile::discard);
                eprintln!("error: {e}");
                return Err(ExitCode::from(Exit::Runtime));
            }
        }
    }
    let outputs = Outputs {
        histogram: files[0].take(),
        out: files[1].take(),
        hlog: files[2].take(),
    };
    match args.db.as_deref().map(super::load_db::open).transpose() {
        Ok(store) => Ok(Prepared {
            plan,
            thresholds,
            outputs,
            store,
        }),
        Err(e) => {
            outputs.discard();
            eprintln!("error: {e:#}");
            Err(ExitCode::from(Exit::Runtime))
        }
    }
}

/// The engine run, with the progress line on stderr and Ctrl-C/SIGTERM
/// ending it early (the partial result is kept).
fn measure(
    plan: LoadPlan,
    progress: bool,
    web: Option<std::sync::Arc<crate::live_page::Live>>,
    coordinator: Option<protobench_runner::agents::coordinator::Coordinator>,
) -> anyhow::Result<Result<LoadResult, LoadError>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let mut signals = {
        let _runtime = rt.enter();
        super::common::ShutdownSignals::install()?
    };
    rt.block_on(async {
        let cancel = CancellationToken::new();
        let on_signal = cancel.clone();
        tokio::spawn(async move {
            if signals.recv().await.is_ok() {
                on_signal.cancel();
            }
        });
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Event>();
        let printer = tokio::spawn(async move {
            let mut shown = false;
            while let Some(ev) = rx.recv().await {
                if let Some(page) = &web {
                    page.on(&protobench_runner::orchestrate::RunEvent::Engine(ev.clone()));
                }
                if let (
                    true,
                    Event::Progress {
                        elapsed_ns,
                        calls,
                        errors,
                        rate,
                        p99_ns,
                        ..
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
        let r = match coordinator {
            None => Ok(protobench_load::run(plan, Some(tx), cancel).await),
            Some(c) => c
                .run(plan, Some(tx), cancel)
                .await
                .map(Ok)
                .context("running on the agents"),
        };
        let _ = printer.await;
        r
    })
}

/// A run the engine refused or could not start: the error (and a TLS hint
/// when it fits), and the exit code its kind calls for.
fn refused(e: &LoadError, tls_on: bool) -> ExitCode {
    match e {
        LoadError::Plan(_)
        | LoadError::Input { .. }
        | LoadError::UnknownMethod { .. }
        | LoadError::Tls(_)
        | LoadError::Request(_) => usage(error_chain(e)),
        LoadError::Interrupted { .. } => {
            eprintln!("error: {}", error_chain(e));
            ExitCode::from(Exit::Interrupted)
        }
        _ => {
            let message = error_chain(e);
            eprintln!("error: {message}");
            if let Some(hint) = super::target::tls_hint_for_error(tls_on, e) {
                eprintln!("{hint}");
            }
            ExitCode::from(Exit::Runtime)
        }
    }
}

/// Writes the exports, prints (or writes) the result with the thresholds'
/// table, stores it with `--db`; returns the exit code. Nothing measured
/// is lost: what cannot be written is said, and the result goes to stdout.
fn deliver(
    args: &Args,
    result: &LoadResult,
    outputs: Outputs,
    store: Option<&mut protobench_results::store::Store>,
    thresholds: &[protobench_model::threshold::Threshold],
) -> anyhow::Result<ExitCode> {
    // Written before printing; a failure here still prints the result.
    let mut unwritten: Vec<String> = Vec::new();
    type Export = fn(&LoadResult) -> Result<String, protobench_load::HistogramError>;
    for (file, export) in [
        (outputs.histogram, protobench_load::hgrm as Export),
        (outputs.hlog, protobench_load::hlog),
    ] {
        if let Some(f) = file
            && let Err(e) = export(result)
                .map_err(|e| format!("cannot write {} {}: {e}", f.flag, f.path.display()))
                .and_then(|text| f.write(&text))
        {
            unwritten.push(e);
        }
    }
    let mut text = match args.output {
        Output::Text => protobench_results::load_summary::text(result),
        Output::Json => serde_json::to_string_pretty(result)? + "\n",
        Output::Csv => protobench_results::load_summary::csv(result),
        Output::Openmetrics => protobench_results::export::openmetrics(result),
        Output::TimelineCsv => protobench_results::export::timeline_csv(result),
    };
    let outcomes = protobench_model::threshold::evaluate_result(thresholds, result);
    if let (Some(store), Some(db)) = (store, args.db.as_deref()) {
        match super::load_db::save(store, result, &outcomes) {
            Ok(id) => eprintln!("stored as run {id} in {}", db.display()),
            Err(e) => unwritten.push(format!("cannot store the result in {}: {e:#}", db.display())),
        }
    }
    if let Some(hint) = super::target::tls_hint_for_result(result) {
        eprintln!("{hint}");
    }
    // Thresholds: after the summary, on stderr when the output is data.
    if !outcomes.is_empty() {
        let table = protobench_model::threshold::table(&outcomes);
        if args.output == Output::Text {
            text = format!("{text}\n{table}");
        } else {
            eprint!("{table}");
        }
    }
    let mut printed = true;
    if let Some(f) = outputs.out {
        let path = f.path.clone();
        match f.write(&text) {
            Ok(()) => printed = false,
            // The result must not be lost: it goes to stdout instead.
            Err(e) => unwritten.push(e),
        }
        if !printed && !unwritten.is_empty() {
            // Say where the result is.
            for e in &mut unwritten {
                *e = format!("{e}; the result is in {}", path.display());
            }
        }
    }
    if printed {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        out.flush()?;
    }
    if !unwritten.is_empty() {
        for e in unwritten {
            if printed {
                eprintln!("error: {e}; the result is printed above");
            } else {
                eprintln!("error: {e}");
            }
        }
        return Ok(ExitCode::from(Exit::Runtime));
    }
    Ok(if result.end_reason == protobench_load::EndReason::Interrupted {
        ExitCode::from(Exit::Interrupted)
    } else {
        super::threshold::exit_code(&outcomes)
    })
}

/// An output file opened (not truncated) before the run, so that a path that
/// cannot be written fails the run before any connection.
struct OutputFile {
    path: PathBuf,
    flag: &'static str,
    file: std::fs::File,
    /// Created by us: removed again when the run fails to start.
    created: bool,
}

impl OutputFile {
    fn open(path: &std::path::Path, flag: &'static str) -> Result<OutputFile, String> {
        let fail = |e: std::io::Error| format!("cannot write {flag} {}: {e}", path.display());
        let (file, created) = match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
            Ok(f) => (f, true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                (std::fs::OpenOptions::new().write(true).open(path).map_err(fail)?, false)
            }
            Err(e) => return Err(fail(e)),
        };
        Ok(OutputFile {
            path: path.to_owned(),
            flag,
            file,
            created,
        })
    }

    /// Replaces the file's content with `text`.
    fn write(mut self, text: &str) -> Result<(), String> {
        let fail = |e: &dyn std::fmt::Display| format!("cannot write {} {}: {e}", self.flag, self.path.display());
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

#[cfg(test)]
mod tests {
    use super::*;
    use protobench_runner::units::parse_duration;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("10").is_err());
    }

    #[test]
    fn network_is_loopback_or_a_clear_refusal() {
        assert_eq!(network_arg("loopback"), Ok(()));
        let refused = network_arg("lan-1g").unwrap_err();
        assert!(refused.contains("protobench did not start"), "{refused}");
        assert!(refused.contains("network = [\"lan-1g\"]"), "{refused}");
        let typo = network_arg("rate=100mb").unwrap_err();
        assert!(typo.starts_with("--network: rate: `100mb` is not a rate"), "{typo}");
    }
}
