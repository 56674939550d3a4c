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
//! use protobench_load::{LoadPlan, Protocol, run, plan_defaults};
//! use tokio_util::sync::CancellationToken;
//!
//! let mut plan: LoadPlan = plan_defaults(Protocol::Grpc, "127.0.0.1:50051");
//! plan.workload = Some("inventory.s".into());
//! plan.concurrency = 50;
//! plan.connections = 2;
//! plan.requests = Some(10_000);
//! let result = run(plan, None, CancellationToken::new()).await?;
//! println!("{} calls/s, p99 {} ns", result.rate, result.latency.p99_ns);
//! # Ok(()) }
//! ```

mod check;
mod coordinator;
mod diff;
mod driver;
mod engine;
mod error;
mod export;
#[doc(hidden)]
pub mod fuzzing;
pub mod pacer;
mod prepare;
mod record;
mod reflect;
mod share;
pub mod stages;
mod stream;
mod timer;
mod validate;
mod verify;

use std::time::Instant;

pub use protobench_model::load::{
    Arrival, ConnectionPolicy, CustomCall, EndReason, Environment, ErrorKind, Header, LatencySummary, LoadPlan,
    LoadResult, Protocol, Stage, TimelinePoint, TlsPlan, Validation,
};
use protobench_model::load::{DEFAULT_CONNECT_TIMEOUT_NS, DEFAULT_DURATION_NS, DEFAULT_TIMEOUT_NS};

pub use crate::coordinator::{
    CPU_BOUND_UTILIZATION, LAG_BOUND_NS, MIN_JUDGED_CALLS, MIN_JUDGED_WINDOW_NS, run, run_at,
};
pub use crate::driver::http2::Http2Error;
pub use crate::driver::net::{TlsError, pem_certs, pem_private_key};
pub use crate::error::{ConnectCause, HistogramError, LoadError, PlanError};
pub use crate::export::{hgrm, hlog};
pub use crate::reflect::ReflectionError;
pub use crate::share::{Share, SplitError, split};
pub use crate::stream::{
    DEFAULT_STREAM_TIMEOUT_NS, MAX_STREAM_RATE, MAX_STREAMS, StreamCheck, default_transport, run_stream, stream_checks,
    stream_plan_defaults, validate_stream, verify_streams,
};
pub use crate::validate::{MAX_CONCURRENCY, MAX_DURATION_NS, MAX_DURATION_TEXT, MAX_RATE, MIN_RATE, validate};
pub use crate::verify::{Outcome, VerifyReport, WorkloadVerdict, verify, verify_graphql};

/// What the engine reports while it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Initial connections are open; measuring (or warming up) starts.
    Started {
        /// When the warm-up (or, without one, the measured window) starts.
        at: Instant,
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
        /// The second that closed, as it goes into the result's timeline
        /// (users, successes, errors, p50/p95/p99).
        second: TimelinePoint,
    },
    /// Only from [`run_at`], right after the second's [`Event::Progress`]:
    /// that second's corrected latency histogram, as agents stream it.
    Interval {
        /// Seconds since the measured window started.
        second: u32,
        /// The second's histogram (empty when it had no successes).
        histogram: protobench_model::hdr::EncodedHistogram,
    },
}

/// A plan with defaults: closed loop, concurrency 1, one connection, 10 s,
/// 10 s call timeout, 5 s connect timeout, status checks, clear text.
pub fn plan_defaults(protocol: Protocol, target: &str) -> LoadPlan {
    LoadPlan {
        protocol,
        target: target.to_owned(),
        workload: None,
        custom: None,
        concurrency: 1,
        connections: 1,
        per_call: false,
        rate: None,
        arrival: Arrival::Uniform,
        arrival_stream: 0,
        duration_ns: Some(DEFAULT_DURATION_NS),
        requests: None,
        warmup_ns: 0,
        timeout_ns: DEFAULT_TIMEOUT_NS,
        connect_timeout_ns: DEFAULT_CONNECT_TIMEOUT_NS,
        validate: Validation::Status,
        tls: None,
        threads: 0,
        start_users: 0,
        stages: Vec::new(),
    }
}
