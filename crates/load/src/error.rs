//! The errors of the engine's API: an invalid plan ([`PlanError`], by flag
//! name) and a run that could not start ([`LoadError`]). Failed calls are not
//! errors: they are counted in the result.

use protobench_model::load::Protocol;

pub use crate::driver::ConnectCause;
use crate::driver::http2::Http2Error;
use crate::driver::net::TlsError;

/// A plan that names conflicting or invalid inputs (by their flag names).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The workload is not in the contract (the message lists valid names).
    #[error("{0}")]
    UnknownWorkload(String),
    /// Neither a workload nor a custom call.
    #[error(
        "nothing to call: give --workload or a custom call (a URL, --method, --data/--data-file for HTTP; --proto and --call for gRPC)"
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
        protocol: Protocol,
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
        protocol: Protocol,
    },
    /// A header (`-H`, `--soap-action`), method or target that is not valid
    /// HTTP: CR or LF in it would end the line on the HTTP/1.1 wire.
    #[error("{flag} {value:?}: {why}")]
    NotHttp {
        /// The flag, e.g. `-H`.
        flag: &'static str,
        /// The header name (or the method, the target).
        value: String,
        /// What is wrong.
        why: &'static str,
    },
    /// A concurrency schedule (`--stage`, `--start-users`) that cannot run;
    /// the message names the flag and what was expected.
    #[error("{0}")]
    Schedule(String),
    /// A streaming plan that cannot run; the message names the flag and
    /// what was expected.
    #[error("{0}")]
    Stream(String),
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
    /// The common start of a distributed run had passed when this
    /// generator was ready ([`crate::run_at`]).
    #[error("missed the common start by {} ms: refused for this point", late_ns / 1_000_000)]
    Late {
        /// How long after the start the generator was ready.
        late_ns: u64,
    },
    /// Not one connection could be opened.
    #[error("cannot connect to {target}: {message}")]
    Connect {
        /// The address tried.
        target: String,
        /// The first connection error.
        message: String,
        /// What the first error says about the target, when the engine
        /// could tell (a front-end's hint decides on this, not on the text).
        cause: Option<ConnectCause>,
    },
    /// A `graphql-get` document could not be registered with the server
    /// before the run (its answer to the registering POST).
    #[error("cannot register the persisted query with {target}: {message}")]
    Register {
        /// The address.
        target: String,
        /// What the server answered, or why no answer came.
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
    /// The server's reflection could not describe a custom gRPC method.
    #[error("cannot describe gRPC method {call} by server reflection")]
    Reflection {
        /// The method asked for.
        call: String,
        /// Why.
        #[source]
        source: crate::reflect::ReflectionError,
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
    /// Cancelled (Ctrl-C) while the initial connections were opening: no
    /// call was made, so there is no result.
    #[error("interrupted while connecting to {target}: no call was made")]
    Interrupted {
        /// The address being connected to.
        target: String,
    },
    /// An engine thread could not be started.
    #[error("cannot start an engine thread")]
    Thread(#[source] std::io::Error),
}

impl LoadError {
    /// The target answered a TLS handshake in clear text.
    pub fn tls_answered_in_plain_text(&self) -> bool {
        matches!(
            self,
            LoadError::Connect {
                cause: Some(ConnectCause::PlainTextToTls),
                ..
            }
        )
    }
}

/// The result's histogram field could not be decoded.
#[derive(Debug, Clone, thiserror::Error)]
#[error("invalid histogram: {0}")]
pub struct HistogramError(pub(crate) String);

impl From<protobench_model::hdr::HdrError> for HistogramError {
    fn from(e: protobench_model::hdr::HdrError) -> Self {
        HistogramError(e.to_string())
    }
}
