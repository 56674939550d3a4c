//! The result model of one load run: plain serde data, no runtime.
//!
//! [`LoadResult`] is what `protobench load --output json` prints and what the
//! runner stores; its JSON schema is published at
//! `docs/schema/load-result.schema.json` and tests validate output against it.
//! [`LoadPlan`] is the validated plan of one run; it lives here (not in the
//! engine) because every result echoes it and the runner builds it from
//! presets, and both must work without the engine's async stack.
//!
//! Units are in field names (`latency_ns`, `bytes_sent`); times are
//! nanoseconds as unsigned integers; rates are calls per second.

use std::path::PathBuf;

pub use protobench_contract::Protocol;
use serde::{Deserialize, Serialize};

use crate::hdr::EncodedHistogram;

/// The version of the [`LoadResult`] JSON form. Bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// Measured window of a run when none is given: 10 s.
pub const DEFAULT_DURATION_NS: u64 = 10_000_000_000;
/// Time limit of one call when none is given: 10 s.
pub const DEFAULT_TIMEOUT_NS: u64 = 10_000_000_000;
/// Time limit of one connection attempt when none is given: 5 s.
pub const DEFAULT_CONNECT_TIMEOUT_NS: u64 = 5_000_000_000;

/// The validated plan of one load run, echoed into its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadPlan {
    /// `rest`, `rest-h2`, `grpc` or `soap`.
    pub protocol: Protocol,
    /// `host:port`, or for custom HTTP calls a URL (`http://host:port/path`).
    pub target: String,
    /// The contract workload called; `None` for a custom call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// A call outside the contract (custom HTTP, gRPC or SOAP target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<CustomCall>,
    /// Calls in flight at most (closed loop: always).
    pub concurrency: u32,
    /// TCP connections; HTTP/2 and gRPC multiplex `concurrency` streams over
    /// them, HTTP/1.1 needs one connection per call in flight. With
    /// `per_call`: the most open at once (= `concurrency`).
    pub connections: u32,
    /// Every call opens its own connection (TCP, TLS, HTTP/2 preface), makes
    /// its one call and closes it; the connect time is part of the call's
    /// latency (`--connections per-call`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub per_call: bool,
    /// Open loop: calls started per second; `None` = closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// How open-loop calls are spaced.
    #[serde(default)]
    pub arrival: Arrival,
    /// Which independent Poisson draw the plan's arrivals come from: 0 for a
    /// single process (its seeds never change); a distributed run gives
    /// agent `i`'s share `i + 1`, so N agents at `rate / N` add up to one
    /// Poisson process at `rate` instead of N copies of one draw.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub arrival_stream: u32,
    /// Stop after this long (measured window, after the warm-up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<u64>,
    /// Stop after this many measured calls (after the warm-up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// Warm-up before measuring; calls intended to start in it are not counted.
    #[serde(default)]
    pub warmup_ns: u64,
    /// Time limit of one call (counted as a `timeout` error past it).
    pub timeout_ns: u64,
    /// Time limit of one connection attempt (TCP + TLS + HTTP/2 handshake).
    pub connect_timeout_ns: u64,
    /// How responses are checked.
    #[serde(default)]
    pub validate: Validation,
    /// TLS settings; `None` = clear text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsPlan>,
    /// Engine threads (each with its own event loop, connections and
    /// histograms); 0 = one per available CPU, at most `connections`.
    #[serde(default)]
    pub threads: u32,
    /// A concurrency schedule (closed loop only): callers active when the
    /// schedule starts; the rest join as [`LoadPlan::stages`] say.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub start_users: u32,
    /// A concurrency schedule (closed loop only), k6's ramping-VUs `stages`:
    /// each stage raises the number of callers linearly from the previous
    /// target to its own over its duration (or holds it). Callers join at
    /// their scheduled time and keep their connection and keep calling to
    /// the end. Empty = all `concurrency` callers from the start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<Stage>,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// One stage of a concurrency schedule: reach `target` callers over `duration_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stage {
    /// How long the stage lasts.
    pub duration_ns: u64,
    /// Callers active at the end of the stage.
    pub target: u32,
}

impl LoadPlan {
    /// The measured window when the run stops by time: the stages' total
    /// with a schedule, else `duration_ns` (default [`DEFAULT_DURATION_NS`]).
    pub fn window_ns(&self) -> u64 {
        if self.stages.is_empty() {
            self.duration_ns.unwrap_or(DEFAULT_DURATION_NS)
        } else {
            self.stages.iter().map(|s| s.duration_ns).sum()
        }
    }
}

/// How callers get connections: `"per-caller"`, `"per-call"` or a number
/// (written so in presets and `--connections`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ConnectionPolicy {
    /// Each caller owns a connection (HTTP/1.1 keep-alive, one channel per user).
    #[default]
    PerCaller,
    /// Every call opens a new connection and closes it after its response.
    PerCall,
    /// All callers multiplex over this many HTTP/2 connections.
    Shared(u32),
}

impl ConnectionPolicy {
    /// The connections an engine plan needs for `concurrency` callers:
    /// `(connections, per_call)`. A shared count never exceeds the callers.
    pub fn for_callers(self, concurrency: u32) -> (u32, bool) {
        let c = concurrency.max(1);
        match self {
            ConnectionPolicy::PerCaller => (c, false),
            ConnectionPolicy::PerCall => (c, true),
            ConnectionPolicy::Shared(n) => (n.clamp(1, c), false),
        }
    }

    /// Parses `per-caller`, `per-call` or a count of at least 1.
    pub fn parse(s: &str) -> Result<ConnectionPolicy, String> {
        match s.trim() {
            "per-caller" => Ok(ConnectionPolicy::PerCaller),
            "per-call" => Ok(ConnectionPolicy::PerCall),
            t => match t.parse::<u32>() {
                Ok(n) if n >= 1 => Ok(ConnectionPolicy::Shared(n)),
                _ => Err(format!(
                    "expected \"per-caller\", \"per-call\" or a number of connections of at least 1, found {s:?}"
                )),
            },
        }
    }
}

impl std::fmt::Display for ConnectionPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectionPolicy::PerCaller => f.write_str("per-caller"),
            ConnectionPolicy::PerCall => f.write_str("per-call"),
            ConnectionPolicy::Shared(n) => write!(f, "{n}"),
        }
    }
}

impl std::str::FromStr for ConnectionPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<ConnectionPolicy, String> {
        ConnectionPolicy::parse(s)
    }
}

impl Serialize for ConnectionPolicy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ConnectionPolicy::Shared(n) => s.serialize_u32(*n),
            other => s.serialize_str(&other.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for ConnectionPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ConnectionPolicy, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Count(i64),
            Name(String),
        }
        match Form::deserialize(d)? {
            Form::Count(n) if (1..=i64::from(u32::MAX)).contains(&n) => Ok(ConnectionPolicy::Shared(n as u32)),
            Form::Count(n) => Err(serde::de::Error::custom(format!(
                "a number of connections must be at least 1, found {n}"
            ))),
            Form::Name(s) => ConnectionPolicy::parse(&s).map_err(serde::de::Error::custom),
        }
    }
}

/// How open-loop calls are spaced in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Evenly, `1/rate` apart.
    #[default]
    Uniform,
    /// A Poisson process: exponentially distributed gaps with mean `1/rate`.
    Poisson,
}

/// How much of each response is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Validation {
    /// Status (HTTP, gRPC, SOAP Fault) and body size against the expected response.
    #[default]
    Status,
    /// Also decode the body and compare it with the expected message.
    Full,
}

/// TLS settings of a run.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TlsPlan {
    /// Extra trusted root certificates (PEM); the system/webpki roots are always trusted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacert: Option<PathBuf>,
    /// Accept any server certificate (self-signed servers).
    #[serde(default)]
    pub insecure: bool,
    /// Client certificate chain (PEM) for mutual TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cert: Option<PathBuf>,
    /// Client private key (PEM) for mutual TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key: Option<PathBuf>,
    /// Server name for SNI and certificate checks; `None` = the target's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
}

/// A call outside the contract.
///
/// `rest`/`rest-h2`: `method`, `headers`, `body_file` (the path is the
/// target URL's). `grpc`: `proto_files` (+ `import_paths`), `call`
/// (`package.Service/Method` or `package.Service.Method`), `data` (JSON),
/// `headers` as metadata. `soap`: `body_file` (the envelope), `soap_action`,
/// `headers`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CustomCall {
    /// HTTP method (`GET` when no body, else `POST`, if unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Request path (from the target URL); `/` if unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Extra request headers (gRPC: metadata), as `name: value` pairs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<Header>,
    /// File whose bytes are the request body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_file: Option<PathBuf>,
    /// SOAP: the `SOAPAction` header value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soap_action: Option<String>,
    /// gRPC: `.proto` files compiled at run time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proto_files: Vec<PathBuf>,
    /// gRPC: a `FileDescriptorSet` (`protoc -o`, `buf build -o`) holding
    /// the method; with neither this nor `proto_files` the server's
    /// reflection service describes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protoset: Option<PathBuf>,
    /// gRPC: import paths for `proto_files` (their directories if empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub import_paths: Vec<PathBuf>,
    /// gRPC: the method, `package.Service/Method`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// gRPC: the request message as JSON (proto3 JSON mapping); rest and
    /// soap: the request body inline (instead of `body_file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
}

/// One request header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Header name.
    pub name: String,
    /// Header value.
    pub value: String,
}

/// The result of one load run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadResult {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The plan, as run.
    pub plan: LoadPlan,
    /// Where it ran.
    pub environment: Environment,
    /// When the measured window started (RFC 3339, UTC).
    pub started_at: String,
    /// Length of the measured window (warm-up excluded).
    pub duration_ns: u64,
    /// Why the run stopped.
    pub end_reason: EndReason,
    /// Calls completed in the measured window (successes + errors).
    pub calls: u64,
    /// Calls that succeeded.
    pub successes: u64,
    /// Successful calls per second of the measured window.
    pub rate: f64,
    /// Open loop: calls started per second (compare with `plan.rate`);
    /// closed loop: the same as calls per second.
    pub started_rate: f64,
    /// Latency of successful calls from their intended start (coordinated
    /// omission corrected in open loop; equal to `service_time` in closed loop).
    pub latency: LatencySummary,
    /// Latency of successful calls from their actual start (uncorrected).
    pub service_time: LatencySummary,
    /// Time to open one connection (TCP, TLS, HTTP/2 preface), per connection.
    pub connect: LatencySummary,
    /// Connections opened (including reconnects after failures), warm-up
    /// included; with `plan.per_call`, one per call (the probe connection
    /// each engine thread opens before the start is not counted).
    pub connections_opened: u64,
    /// Connections opened by the measured calls, per second of the measured
    /// window (per call: one per call; otherwise reconnects only).
    #[serde(default)]
    pub connects_per_second: f64,
    /// The share of the successful measured calls' latency spent opening
    /// connections (TCP, TLS, HTTP/2 preface) inside those calls: 0 when
    /// every call found its connection open, near 1 when connecting is most
    /// of a call.
    #[serde(default)]
    pub connect_share: f64,
    /// Errors by kind, most frequent first.
    pub errors: Vec<ErrorCount>,
    /// `successes / calls` as a percentage (0 when there were no calls).
    #[serde(default)]
    pub success_percent: f64,
    /// Measured calls that got a response, by its HTTP status, lowest code
    /// first (gRPC: the HTTP status of the response, 200 for any gRPC
    /// status). Calls without a response are the `connect`, `timeout`,
    /// `reset` and `other` errors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http_statuses: Vec<StatusCount>,
    /// gRPC only: measured calls answered as gRPC, by `grpc-status` (0 = OK
    /// to 16 = UNAUTHENTICATED; a code above 16 counts as 2, UNKNOWN),
    /// lowest code first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grpc_statuses: Vec<StatusCount>,
    /// Latency of failed calls from their intended start (as `latency`);
    /// absent when no call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_latency: Option<LatencySummary>,
    /// Bytes written to the connections in the measured window (see docs/engine.md).
    pub bytes_sent: u64,
    /// Bytes read from the connections in the measured window.
    pub bytes_received: u64,
    /// `bytes_sent / calls`.
    pub bytes_sent_per_call: f64,
    /// `bytes_received / calls`.
    pub bytes_received_per_call: f64,
    /// The load generator's own cost and lag.
    pub generator: Generator,
    /// One point per second of the measured window.
    pub timeline: Vec<TimelinePoint>,
    /// The corrected latency histogram in ns: HdrHistogram V2 + deflate, base64.
    pub histogram: EncodedHistogram,
    /// The corrected latency histogram of each second of the measured window,
    /// for interval-log (`.hlog`) exports. In memory only: neither in the
    /// JSON form nor in the store (a result read back has none).
    #[serde(skip)]
    pub intervals: Vec<IntervalHistogram>,
    /// A distributed run (docs/distributed.md): each agent's lane, in agent
    /// order; empty for a run of one generator.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentLane>,
    /// A distributed run lost an agent (its lane says which and when): the
    /// figures cover what the other agents measured, not the asked load.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
    /// A distributed run: each agent's per-second histograms as it streamed
    /// them, `(agent index, second)`, for `.hlog` exports with agent tags.
    /// In memory only, as `intervals`.
    #[serde(skip)]
    pub agent_intervals: Vec<(u32, IntervalHistogram)>,
}

/// One agent's part of a distributed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentLane {
    /// The agent's number (0-based; a Kubernetes Indexed Job's index).
    pub index: u32,
    /// Its address, `host:port`.
    pub agent: String,
    /// Its clock minus the coordinator's, from the best of the clock
    /// samples (positive: the agent's clock is ahead).
    pub clock_offset_ns: i64,
    /// Half the round trip of that sample: the offset is known to within
    /// plus or minus this.
    pub clock_uncertainty_ns: u64,
    /// Round trip of that sample.
    pub round_trip_ns: u64,
    /// Its share: callers (closed loop) or calls started per second (open loop).
    pub concurrency: u32,
    /// Its share of the open-loop rate; `None` in a closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_share: Option<f64>,
    /// Where its schedule starts after the common start (open loop: i / rate).
    pub start_offset_ns: u64,
    /// Calls it completed in its measured window.
    pub calls: u64,
    /// Of those, successes.
    pub successes: u64,
    /// Its successful calls per second.
    pub rate: f64,
    /// Its corrected latency.
    pub latency: LatencySummary,
    /// Its own generator cost and verdict (one saturated agent shows here).
    pub generator: Generator,
    /// Set when the agent failed: when and why. Its data until then is
    /// kept only as far as it had streamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<AgentFailure>,
}

/// How an agent failed during a distributed run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentFailure {
    /// Time since the common start (may precede it: refused or unreachable).
    pub after_ns: i64,
    /// What happened, one line.
    pub message: String,
}

/// The latency histogram of one second of the measured window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntervalHistogram {
    /// Seconds since the measured window started.
    pub second: u32,
    /// Latencies in ns: HdrHistogram V2 + deflate, base64.
    pub histogram: EncodedHistogram,
}

impl LoadResult {
    /// Successful calls in each whole second of the measured window (a last,
    /// partial second is left out).
    pub fn rates_per_second(&self) -> Vec<f64> {
        let whole = (self.duration_ns / 1_000_000_000) as u32;
        self.timeline
            .iter()
            .filter(|p| p.second < whole)
            .map(|p| p.successes as f64)
            .collect()
    }

    /// The drift of the measured window (rules in `steady`): `None` when its
    /// rate was steady or the window too short to judge.
    pub fn drift(&self) -> Option<crate::steady::Drift> {
        crate::steady::drift(&self.rates_per_second(), crate::steady::DEFAULT_DRIFT_THRESHOLD)
    }

    /// Calls that failed.
    pub fn error_count(&self) -> u64 {
        self.errors.iter().map(|e| e.count).sum()
    }

    /// `successes / calls` as a percentage, from the counts (so results
    /// stored before `success_percent` existed get it too); `None` without calls.
    pub fn success_percent(&self) -> Option<f64> {
        (self.calls > 0).then(|| self.successes as f64 * 100.0 / self.calls as f64)
    }

    /// Measured calls that ended without a response (connect, timeout,
    /// reset and other transport errors), by kind, as in `errors`.
    pub fn transport_errors(&self) -> impl Iterator<Item = &ErrorCount> {
        self.errors.iter().filter(|e| e.kind.is_transport())
    }
}

/// How many calls ended with one status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCount {
    /// The status code (HTTP: 100..999; gRPC: 0..16).
    pub code: u32,
    /// Calls.
    pub count: u64,
}

/// The gRPC name of a status code, e.g. `UNAVAILABLE` for 14; `UNKNOWN`
/// for a code above 16.
pub fn grpc_code_name(code: u32) -> &'static str {
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    NAMES.get(code as usize).copied().unwrap_or("UNKNOWN")
}

/// Why a run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// `duration` elapsed.
    Duration,
    /// `requests` calls were made.
    Requests,
    /// Cancelled (Ctrl-C); the result covers what ran.
    Interrupted,
    /// Read only, from results stored before 2026-11-28: the runner then
    /// wrote its ramp's knee here. The knee is now the ramp's search data
    /// (`Search::stopped_at_knee`, `knee_second`); an engine run the runner
    /// stops at the knee ends `interrupted`, as any cancelled run.
    Knee,
}

impl EndReason {
    /// `duration`, `requests`, `interrupted` or `knee`.
    pub fn name(self) -> &'static str {
        match self {
            EndReason::Duration => "duration",
            EndReason::Requests => "requests",
            EndReason::Interrupted => "interrupted",
            EndReason::Knee => "knee",
        }
    }
}

/// A latency distribution summary. All zero when `count` is 0.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Samples.
    pub count: u64,
    /// Smallest.
    pub min_ns: u64,
    /// Mean.
    pub mean_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 95th percentile.
    pub p95_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest.
    pub max_ns: u64,
}

impl LatencySummary {
    /// The summary of a latency histogram (all zero when it is empty).
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: h.len(),
            min_ns: h.min(),
            mean_ns: h.mean().round() as u64,
            p50_ns: h.value_at_quantile(0.50),
            p90_ns: h.value_at_quantile(0.90),
            p95_ns: h.value_at_quantile(0.95),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
        }
    }
}

/// The kind of a failed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A connection could not be opened (refused, unreachable, TLS or HTTP/2 handshake failed).
    Connect,
    /// The call or connection attempt took longer than its time limit.
    Timeout,
    /// The connection was closed or reset while the call was in flight.
    Reset,
    /// HTTP status other than the expected one.
    HttpStatus,
    /// A gRPC status other than OK (also inside HTTP 200).
    GrpcStatus,
    /// A SOAP Fault.
    SoapFault,
    /// A GraphQL response (HTTP 200) carrying `errors`.
    GraphqlError,
    /// A response with the right status but the wrong content type, size or body.
    WrongResponse,
    /// Anything else (e.g. a protocol error).
    Other,
}

impl ErrorKind {
    /// Every kind.
    pub const ALL: [ErrorKind; 9] = [
        ErrorKind::Connect,
        ErrorKind::Timeout,
        ErrorKind::Reset,
        ErrorKind::HttpStatus,
        ErrorKind::GrpcStatus,
        ErrorKind::SoapFault,
        ErrorKind::GraphqlError,
        ErrorKind::WrongResponse,
        ErrorKind::Other,
    ];

    /// Whether a call failing this way got no response to judge (the
    /// connection failed, timed out, was reset, or the protocol broke).
    pub fn is_transport(self) -> bool {
        matches!(
            self,
            ErrorKind::Connect | ErrorKind::Timeout | ErrorKind::Reset | ErrorKind::Other
        )
    }

    /// The kind's name as in JSON, e.g. `http_status`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::HttpStatus => "http_status",
            ErrorKind::GrpcStatus => "grpc_status",
            ErrorKind::SoapFault => "soap_fault",
            ErrorKind::GraphqlError => "graphql_error",
            ErrorKind::WrongResponse => "wrong_response",
            ErrorKind::Other => "other",
        }
    }
}

/// How often one kind of error happened, with one sample message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCount {
    /// The kind.
    pub kind: ErrorKind,
    /// How many calls failed this way (connect errors: failed connection attempts).
    pub count: u64,
    /// The first message seen of this kind.
    pub sample: String,
}

/// What the load generator itself cost, and whether it was the bottleneck.
/// The default: nothing measured yet (an agent's lane before its result).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Generator {
    /// Engine threads.
    pub threads: u32,
    /// CPU time (user + system) of the engine threads over the measured
    /// window (from the end of the warm-up to each thread's last call; not
    /// connecting, not the warm-up).
    pub cpu_ns: u64,
    /// `cpu_ns` over the measured calls.
    pub cpu_ns_per_call: f64,
    /// `cpu_ns` divided by the threads' summed wall time of that window, at
    /// most 1.0 (= every engine thread busy).
    pub cpu_utilization: f64,
    /// How late calls started against their schedule (open loop; zero count in closed loop).
    pub schedule_lag: LatencySummary,
    /// Whether the generator, not the server, limited the run (rule in docs/engine.md).
    pub generator_bound: bool,
    /// Why `generator_bound` is set, in one line; with `generator_bound`
    /// false, why the run was not judged (`window too short to judge ...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One second of the measured window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// Seconds since the measured window started (0, 1, ...); a call counts in
    /// the second it completed.
    pub second: u32,
    /// Successful calls completed.
    pub successes: u64,
    /// Failed calls.
    pub errors: u64,
    /// Median corrected latency of that second's successes.
    pub p50_ns: u64,
    /// 95th percentile corrected latency of that second's successes (0 in
    /// results written before it was recorded).
    #[serde(default)]
    pub p95_ns: u64,
    /// 99th percentile corrected latency of that second's successes.
    pub p99_ns: u64,
    /// Callers active at the end of that second (the warm-up's callers
    /// included; with a schedule, those that had joined by then; 0 in
    /// results written before it was recorded).
    #[serde(default)]
    pub users: u32,
}

/// The machine and build a result came from.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Environment {
    /// CPU model name.
    pub cpu_model: String,
    /// CPUs available to the process.
    pub cores: u32,
    /// Kernel name and release, e.g. `Linux 6.1.0`.
    pub kernel: String,
    /// protobench version.
    pub protobench_version: String,
    /// Git commit of the build, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

impl Environment {
    /// Reads this machine's environment (Linux `/proc`; empty strings elsewhere).
    pub fn detect(protobench_version: &str, commit: Option<String>) -> Environment {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_default();
        let cores = std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1);
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_owned())
                .unwrap_or_default()
        };
        let kernel = format!(
            "{} {}",
            read("/proc/sys/kernel/ostype"),
            read("/proc/sys/kernel/osrelease")
        )
        .trim()
        .to_owned();
        Environment {
            cpu_model,
            cores,
            kernel,
            protobench_version: protobench_version.to_owned(),
            commit,
        }
    }
}
