//! Streams: the engine measuring messages inside long-lived streams
//! (issue 31), with the unary engine's discipline: engine threads with
//! their own event loop and recorder, latency from each message's intended
//! send time, nothing kept per message.
//!
//! | transport | listener | operations | wire |
//! |---|---|---|---|
//! | `grpc` | `grpc` | echo (bidi), subscribe (server streaming) | [`grpc`] on the `h2` crate |
//! | `websocket` | `rest` (HTTP/1.1) | echo, subscribe; text (JSON) or binary (protobuf) frames | [`ws`] on `tokio-tungstenite` |
//! | `sse` | `rest`, `rest-h2` | subscribe | [`sse`]: hyper's HTTP/1.1 client, or an `h2` stream |
//! | `connect` | `connect` (HTTP/1.1) | subscribe (server streaming) | [`connect`]: hyper's HTTP/1.1 client, enveloped protobuf |
//!
//! [`session`] holds the schedule (echo) and the receipt (subscription),
//! written once over two small traits each transport implements.
//!
//! Connections: with `connections < streams` (HTTP/2 only) each thread
//! opens its share before the common start and its streams take turns on
//! them (connect time is then not in any stream's set-up); otherwise every
//! stream opens its own connection, inside its set-up.

mod connect;
mod grpc;
mod open;
mod poll;
mod record;
mod session;
mod sse;
mod verify;
mod ws;

pub use self::verify::{StreamCheck, stream_checks, verify_streams};

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use protobench_contract::pb::bench::SubscribeRequest;
use protobench_contract::stream::workload::{self as stream_workload, Plan as WorkloadPlan, StreamWorkload};
use protobench_contract::stream::{MAX_STREAM_MESSAGES, StreamOperation};
use protobench_model::hdr::EncodedHistogram;
use protobench_model::load::{EndReason, Environment, Protocol};
use protobench_model::stream::{STREAM_SCHEMA_VERSION, StreamEndKind, StreamPlan, StreamResult, StreamTransport};
use tokio_util::sync::CancellationToken;

use self::record::{Outcome, StreamRecorder, record_ns};
use self::session::{EchoJob, MessageSink as _};
use crate::driver::ByteCounters;
use crate::driver::net::Endpoint;
use crate::error::{LoadError, PlanError};
use crate::record::summary;
use crate::timer::{PreciseTimer, thread_cpu_ns};

/// The most streams one run opens at once.
pub const MAX_STREAMS: u32 = crate::validate::MAX_CONCURRENCY;
/// The highest per-stream message rate.
pub const MAX_STREAM_RATE: f64 = 1_000_000.0;

/// A stream's time limit when none is given: 60 s (from its start to its end).
pub const DEFAULT_STREAM_TIMEOUT_NS: u64 = 60_000_000_000;

/// A streaming plan with defaults: one stream on one connection, the
/// workload's messages, ping-pong (echo) or the workload's rate
/// (subscription), every stream once, text frames, one engine thread.
pub fn stream_plan_defaults(
    protocol: Protocol,
    transport: StreamTransport,
    target: &str,
    workload: &str,
) -> StreamPlan {
    StreamPlan {
        protocol,
        transport,
        target: target.to_owned(),
        workload: workload.to_owned(),
        frames: protobench_model::stream::Frames::Text,
        streams: 1,
        connections: 1,
        messages: None,
        rate: None,
        poll_interval_ns: None,
        duration_ns: None,
        timeout_ns: DEFAULT_STREAM_TIMEOUT_NS,
        connect_timeout_ns: protobench_model::load::DEFAULT_CONNECT_TIMEOUT_NS,
        tls: None,
        threads: 1,
    }
}

pub(crate) fn probe_plan(protocol: Protocol, transport: StreamTransport, workload: &str) -> StreamPlan {
    stream_plan_defaults(protocol, transport, "", workload)
}

/// The transport a streaming workload takes on `protocol` when none is
/// named: gRPC's streams on `grpc`, Connect's on `connect`; on `rest` and `rest-h2` WebSocket for
/// the echo stream (and upload), SSE for the subscription, polling for poll.
pub fn default_transport(protocol: Protocol, op: StreamOperation) -> StreamTransport {
    match (protocol, op) {
        (Protocol::Grpc, _) => StreamTransport::Grpc,
        (Protocol::Connect, _) => StreamTransport::Connect,
        (_, StreamOperation::Subscribe) => StreamTransport::Sse,
        (_, StreamOperation::Poll) => StreamTransport::Poll,
        _ => StreamTransport::WebSocket,
    }
}

/// Checks a streaming plan; returns its workload.
pub fn validate_stream(plan: &StreamPlan) -> Result<&'static StreamWorkload, PlanError> {
    let workload = stream_workload::find(&plan.workload).ok_or_else(|| {
        let names: Vec<&str> = stream_workload::ALL.iter().map(|w| w.name).collect();
        PlanError::UnknownWorkload(format!(
            "unknown streaming workload `{}` (known: {})",
            plan.workload,
            names.join(", ")
        ))
    })?;
    let op = workload.operation();
    let fail = |m: String| Err(PlanError::Stream(m));
    let listeners: &[Protocol] = match plan.transport {
        StreamTransport::Grpc => &[Protocol::Grpc],
        StreamTransport::WebSocket => &[Protocol::Rest],
        StreamTransport::Sse | StreamTransport::Poll => &[Protocol::Rest, Protocol::RestH2],
        StreamTransport::Connect => &[Protocol::Connect],
    };
    if !listeners.contains(&plan.protocol) {
        let names: Vec<&str> = listeners.iter().map(|p| p.name()).collect();
        let more = if plan.transport == StreamTransport::WebSocket && plan.protocol == Protocol::RestH2 {
            " (WebSocket over HTTP/2, RFC 8441, is served but not yet driven by the engine)"
        } else {
            ""
        };
        return fail(format!(
            "--stream {} runs on --protocol {}, not {}{more}",
            plan.transport,
            names.join(" or "),
            plan.protocol
        ));
    }
    if !plan.transport.operations().contains(&op) {
        return fail(format!(
            "workload {} is {op}, which --stream {} does not carry (it carries {})",
            workload.name,
            plan.transport,
            names(plan.transport.operations())
        ));
    }
    let driven: &[StreamOperation] = match plan.transport {
        StreamTransport::Grpc | StreamTransport::WebSocket => &[
            StreamOperation::EchoStream,
            StreamOperation::Subscribe,
            StreamOperation::Upload,
        ],
        StreamTransport::Sse | StreamTransport::Connect => &[StreamOperation::Subscribe],
        StreamTransport::Poll => &[StreamOperation::Poll],
    };
    if !driven.contains(&op) {
        return fail(format!(
            "the engine does not drive {op} over --stream {} yet (it drives {})",
            plan.transport,
            if driven.is_empty() {
                "nothing there".to_owned()
            } else {
                names(driven)
            }
        ));
    }
    if !(1..=MAX_STREAMS).contains(&plan.streams) {
        return fail(format!("--streams must be 1..={MAX_STREAMS}, got {}", plan.streams));
    }
    if plan.connections == 0 || plan.connections > plan.streams {
        return fail(format!(
            "--connections must be 1..=--streams ({}), got {}",
            plan.streams, plan.connections
        ));
    }
    if plan.connections < plan.streams && !plan.protocol.is_http2() {
        return fail(format!(
            "--connections ({}) must equal --streams ({}) for --protocol {}: HTTP/1.1 carries one stream per connection",
            plan.connections, plan.streams, plan.protocol
        ));
    }
    if let Some(n) = plan.messages
        && !(1..=MAX_STREAM_MESSAGES).contains(&n)
    {
        return fail(format!("--messages must be 1..={MAX_STREAM_MESSAGES}, got {n}"));
    }
    if let Some(rate) = plan.rate {
        if !(rate.is_finite() && rate > 0.0 && rate <= MAX_STREAM_RATE) {
            return fail(format!(
                "--rate must be a number of messages per second per stream in (0, 1000000], got {rate}"
            ));
        }
        if matches!(op, StreamOperation::Subscribe | StreamOperation::Poll) && rate.fract() != 0.0 {
            return fail(format!(
                "--rate for a subscription is the server's whole events per second, got {rate}"
            ));
        }
    }
    if plan.duration_ns == Some(0) || plan.timeout_ns == 0 || plan.connect_timeout_ns == 0 {
        return fail("--duration, --timeout and --connect-timeout must be positive".into());
    }
    if plan.threads > plan.streams.min(crate::validate::MAX_THREADS) {
        return fail(format!(
            "--threads ({}) cannot be greater than --streams ({})",
            plan.threads, plan.streams
        ));
    }
    Ok(workload)
}

fn names(ops: &[StreamOperation]) -> String {
    ops.iter().map(|o| o.name()).collect::<Vec<_>>().join(", ")
}

/// What every engine thread shares.
struct Shared {
    plan: StreamPlan,
    endpoint: Endpoint,
    op: StreamOperation,
    /// Echo: what each stream sends.
    messages: Rc<[protobench_contract::pb::bench::StreamMessage]>,
    echo_count: u32,
    /// Subscription: what each stream asks for.
    subscribe: SubscribeRequest,
    /// The path a stream opens.
    path: String,
    /// Polling: the first poll and the interval.
    poll: Option<(protobench_contract::pb::bench::PollRequest, Duration)>,
}

/// What one engine thread hands back.
struct ThreadReport {
    rec: StreamRecorder,
    bytes_sent: u64,
    bytes_received: u64,
    cpu_ns: u64,
    ended: Instant,
}

/// Runs a streaming plan: opens the streams (their share per engine
/// thread), starts them at one instant, and measures every message.
pub async fn run_stream(plan: StreamPlan, cancel: CancellationToken) -> Result<StreamResult, LoadError> {
    let workload = validate_stream(&plan)?;
    let target = crate::prepare::parse_target(&plan.target);
    let connect_limit = Duration::from_nanos(plan.connect_timeout_ns);
    let addr = crate::prepare::resolve(&target.authority, connect_limit).await?;
    let alpn: &[&[u8]] = if plan.protocol.is_http2() {
        &[b"h2"]
    } else {
        &[b"http/1.1"]
    };
    let endpoint = Endpoint::new(addr, target.authority.clone(), plan.tls.as_ref(), alpn)?;
    let threads = plan.threads.max(1).min(plan.streams);
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::unbounded_channel::<Option<Outcome>>();
    let (start_tx, start_rx) = tokio::sync::watch::channel::<Option<Instant>>(None);
    let joins = spawn_threads(&plan, &endpoint, workload, threads, &ready_tx, &start_rx, &cancel)?;
    drop(ready_tx);
    let mut first_failure = None;
    let mut failed_threads = 0;
    for _ in 0..threads {
        match ready_rx.recv().await {
            Some(None) => {}
            Some(Some(outcome)) => {
                failed_threads += 1;
                first_failure.get_or_insert(outcome);
            }
            None => break,
        }
    }
    if failed_threads == threads
        && let Some(outcome) = first_failure
    {
        let _ = start_tx.send(None);
        cancel.cancel();
        return Err(LoadError::Connect {
            target: addr.to_string(),
            message: outcome.message,
            cause: None,
        });
    }
    let start = Instant::now();
    let wall0 = std::time::SystemTime::now();
    let _ = start_tx.send(Some(start));
    let mut total = StreamRecorder::default();
    let (mut sent, mut received, mut cpu_ns, mut last, mut wall_ns) = (0u64, 0u64, 0u64, start, 0u64);
    for join in joins {
        let report = join.await.map_err(|_| {
            LoadError::Thread(std::io::Error::other(
                "an engine thread ended without its report (a panic)",
            ))
        })?;
        total.merge(report.rec);
        sent += report.bytes_sent;
        received += report.bytes_received;
        cpu_ns += report.cpu_ns;
        wall_ns += report.ended.saturating_duration_since(start).as_nanos() as u64;
        last = last.max(report.ended);
    }
    let duration_ns = (last - start).as_nanos().max(1) as u64;
    let seconds = duration_ns as f64 / 1e9;
    let per = |n: u64, d: u64| if d == 0 { 0.0 } else { n as f64 / d as f64 };
    let end_reason = if cancel.is_cancelled() {
        EndReason::Interrupted
    } else if plan.duration_ns.is_some() {
        EndReason::Duration
    } else {
        EndReason::Requests
    };
    let cpu_utilization = (cpu_ns as f64 / wall_ns.max(1) as f64).min(1.0);
    let send_lag = summary(&total.lag);
    let generator_bound = cpu_utilization >= crate::CPU_BOUND_UTILIZATION || send_lag.p99_ns > crate::LAG_BOUND_NS;
    Ok(StreamResult {
        schema_version: STREAM_SCHEMA_VERSION,
        environment: Environment::detect(env!("CARGO_PKG_VERSION"), None),
        started_at: protobench_model::time::rfc3339_millis(wall0),
        duration_ns,
        end_reason,
        streams: total.counts,
        ends: total.end_counts(),
        messages_sent: total.sent,
        messages_received: total.received,
        sent_per_second: total.sent as f64 / seconds,
        received_per_second: total.received as f64 / seconds,
        bytes_sent: sent,
        bytes_received: received,
        bytes_sent_per_message: per(sent, total.sent),
        bytes_received_per_message: per(received, total.received),
        latency: summary(&total.latency),
        setup: summary(&total.setup),
        first_message: summary(&total.first),
        deferred_sends: total.deferred,
        threads,
        cpu_ns,
        cpu_ns_per_message: per(cpu_ns, total.sent + total.received),
        cpu_utilization,
        send_lag,
        generator_bound,
        histogram: EncodedHistogram::encode(&total.latency),
        plan,
    })
}

/// Starts the engine threads; each reports ready (or why it could not
/// connect), waits for the common start, and hands back its report.
fn spawn_threads(
    plan: &StreamPlan,
    endpoint: &Endpoint,
    workload: &'static StreamWorkload,
    threads: u32,
    ready_tx: &tokio::sync::mpsc::UnboundedSender<Option<Outcome>>,
    start_rx: &tokio::sync::watch::Receiver<Option<Instant>>,
    cancel: &CancellationToken,
) -> Result<Vec<tokio::sync::oneshot::Receiver<ThreadReport>>, LoadError> {
    let mut joins = Vec::new();
    for t in 0..threads {
        let (plan, endpoint, workload) = (plan.clone(), endpoint.clone(), workload);
        let (ready_tx, start_rx, cancel) = (ready_tx.clone(), start_rx.clone(), cancel.clone());
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name(format!("protobench-stream-{t}"))
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a current-thread runtime");
                let local = tokio::task::LocalSet::new();
                let report = local.block_on(&runtime, async move {
                    let shared = Rc::new(shared_of(plan, endpoint, workload));
                    thread_main(shared, t, threads, ready_tx, start_rx, cancel).await
                });
                let _ = tx.send(report);
            })
            .map_err(LoadError::Thread)?;
        joins.push(rx);
    }
    Ok(joins)
}

fn shared_of(plan: StreamPlan, endpoint: Endpoint, workload: &'static StreamWorkload) -> Shared {
    let op = workload.operation();
    let mut subscribe = workload.subscribe_request().unwrap_or_default();
    if let Some(n) = plan.messages {
        subscribe.count = n;
    }
    if matches!(op, StreamOperation::Subscribe | StreamOperation::Poll)
        && let Some(rate) = plan.rate
    {
        subscribe.rate = rate as u32;
    }
    let echo_count = match workload.plan {
        WorkloadPlan::Echo { messages, .. } | WorkloadPlan::Upload { messages, .. } => {
            plan.messages.unwrap_or(messages)
        }
        _ => 0,
    };
    let path = open::path(plan.transport, op, &subscribe);
    let poll = first_poll(workload, &subscribe, plan.poll_interval_ns);
    Shared {
        poll,
        messages: workload.messages().into(),
        echo_count,
        subscribe,
        path,
        op,
        endpoint,
        plan,
    }
}

/// A polling workload's first poll over `feed`, and the poll interval.
pub(crate) fn first_poll(
    workload: &StreamWorkload,
    feed: &SubscribeRequest,
    interval_ns: Option<u64>,
) -> Option<(protobench_contract::pb::bench::PollRequest, Duration)> {
    let WorkloadPlan::Poll { max, .. } = workload.plan else {
        return None;
    };
    let request = protobench_contract::pb::bench::PollRequest {
        count: feed.count,
        items: feed.items,
        rate: feed.rate,
        start_ns: 0,
        after: 0,
        max,
    };
    let interval = interval_ns.unwrap_or(protobench_model::stream::DEFAULT_POLL_INTERVAL_NS);
    Some((request, Duration::from_nanos(interval)))
}

/// One engine thread: its shared connections, then its streams from the
/// common start, each replaced when it ends while the run lasts.
async fn thread_main(
    shared: Rc<Shared>,
    index: u32,
    threads: u32,
    ready: tokio::sync::mpsc::UnboundedSender<Option<Outcome>>,
    mut start: tokio::sync::watch::Receiver<Option<Instant>>,
    cancel: CancellationToken,
) -> ThreadReport {
    let plan = &shared.plan;
    let counters = Rc::new(ByteCounters::default());
    let rec = Rc::new(RefCell::new(StreamRecorder::default()));
    let my_streams = (0..plan.streams).filter(|k| k % threads == index).count() as u32;
    let my_connections = (0..plan.connections).filter(|k| k % threads == index).count().max(1) as u32;
    let sharing = plan.protocol.is_http2() && plan.connections < plan.streams;
    let mut connections = Vec::new();
    let mut failure = None;
    if sharing {
        for _ in 0..my_connections {
            match grpc::connect(&shared.endpoint, &counters).await {
                Ok(c) => connections.push(c),
                Err(outcome) => {
                    failure.get_or_insert(outcome);
                }
            }
        }
    }
    let _ = ready.send(if sharing && connections.is_empty() {
        failure.take()
    } else {
        None
    });
    let start = match start.wait_for(Option::is_some).await {
        Ok(at) => (*at).expect("waited for a start"),
        Err(_) => {
            return ThreadReport {
                rec: rec.take(),
                bytes_sent: 0,
                bytes_received: 0,
                cpu_ns: 0,
                ended: Instant::now(),
            };
        }
    };
    let (sent0, received0, cpu0) = (counters.sent.get(), counters.received.get(), thread_cpu_ns());
    let deadline = plan.duration_ns.map(|d| start + Duration::from_nanos(d));
    let mut slots = tokio::task::JoinSet::new();
    for k in 0..my_streams {
        let conn = (!connections.is_empty()).then(|| connections[k as usize % connections.len()].clone());
        let (shared, counters, rec) = (shared.clone(), counters.clone(), rec.clone());
        slots.spawn_local(slot(shared, conn, counters, rec, start, deadline));
    }
    tokio::select! {
        _ = async { while slots.join_next().await.is_some() {} } => {}
        _ = cancel.cancelled() => {
            slots.abort_all();
            while slots.join_next().await.is_some() {}
        }
    }
    let ended = Instant::now();
    let rec = rec.take();
    ThreadReport {
        rec,
        bytes_sent: counters.sent.get() - sent0,
        bytes_received: counters.received.get() - received0,
        cpu_ns: thread_cpu_ns() - cpu0,
        ended,
    }
}

/// One stream slot: a stream from `start`, replaced by a new one when it
/// ends while the run lasts (churn), cut at the run's end.
async fn slot(
    shared: Rc<Shared>,
    conn: Option<h2::client::SendRequest<Bytes>>,
    counters: Rc<ByteCounters>,
    rec: Rc<RefCell<StreamRecorder>>,
    start: Instant,
    deadline: Option<Instant>,
) {
    let timer = PreciseTimer::new();
    let limit = Duration::from_nanos(shared.plan.timeout_ns);
    let mut intended = start;
    loop {
        rec.borrow_mut().opened();
        let one = tokio::time::timeout(
            limit,
            one_stream(&shared, conn.as_ref(), &counters, &rec, &timer, intended),
        );
        let outcome = match deadline {
            None => one.await,
            Some(at) => tokio::select! {
                r = one => r,
                _ = tokio::time::sleep_until(at.into()) => Ok(Outcome::new(StreamEndKind::Cut, "")),
            },
        }
        .unwrap_or_else(|_| {
            Outcome::new(
                StreamEndKind::Timeout,
                format!("the stream did not end within {limit:?}"),
            )
        });
        rec.borrow_mut().ended(&outcome);
        let Some(at) = deadline else { break };
        if Instant::now() >= at {
            break;
        }
        if outcome.kind == StreamEndKind::Connect {
            // Do not spin on a refused connection: try again a little later.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        intended = Instant::now();
    }
}

/// One stream, from its intended start to its end.
async fn one_stream(
    shared: &Shared,
    conn: Option<&h2::client::SendRequest<Bytes>>,
    counters: &Rc<ByteCounters>,
    rec: &RefCell<StreamRecorder>,
    timer: &PreciseTimer,
    intended: Instant,
) -> Outcome {
    match open_and_run(shared, conn, counters, rec, timer, intended).await {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn set_up(rec: &RefCell<StreamRecorder>, intended: Instant) {
    let ns = i64::try_from(intended.elapsed().as_nanos()).unwrap_or(i64::MAX);
    record_ns(&mut rec.borrow_mut().setup, ns);
}

async fn open_and_run(
    shared: &Shared,
    conn: Option<&h2::client::SendRequest<Bytes>>,
    counters: &Rc<ByteCounters>,
    rec: &RefCell<StreamRecorder>,
    timer: &PreciseTimer,
    intended: Instant,
) -> Result<Outcome, Outcome> {
    let plan = &shared.plan;
    let target = open::Target {
        protocol: plan.protocol,
        transport: plan.transport,
        op: shared.op,
        frames: plan.frames,
        endpoint: &shared.endpoint,
        path: &shared.path,
        subscribe: &shared.subscribe,
        poll: shared.poll,
    };
    let opened = open::open_stream(&target, conn, counters).await?;
    set_up(rec, intended);
    rec.borrow_mut().sent += opened.requests;
    let polls = match &opened.source {
        open::AnySource::Poll(p) => Some(p.polls.clone()),
        _ => None,
    };
    if matches!(shared.op, StreamOperation::EchoStream | StreamOperation::Upload) {
        let job = EchoJob {
            messages: shared.messages.clone(),
            count: shared.echo_count,
            interval: plan.rate.map(|r| Duration::from_secs_f64(1.0 / r)),
        };
        let sink = opened.sink.expect("an echo stream or upload has a sending half");
        if shared.op == StreamOperation::Upload {
            return Ok(session::upload(sink, opened.source, &job, intended, timer, rec).await);
        }
        return Ok(session::echo(sink, opened.source, &job, intended, timer, rec).await);
    }
    let outcome = session::feed(opened.source, &shared.subscribe, intended, rec).await;
    if let Some(polls) = polls {
        rec.borrow_mut().sent += polls.get();
    }
    if let Some(mut sink) = opened.sink {
        // A WebSocket subscription: answer the server's close.
        let _ = sink.finish().await;
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(protocol: Protocol, transport: StreamTransport, workload: &str) -> StreamPlan {
        stream_plan_defaults(protocol, transport, "127.0.0.1:1", workload)
    }

    #[test]
    fn validation_names_the_flag_and_what_was_expected() {
        use StreamTransport as T;
        let cases: &[(StreamPlan, &str)] = &[
            // An unknown workload lists the known ones.
            (
                plan(Protocol::Grpc, T::Grpc, "stream.nope"),
                "unknown streaming workload `stream.nope` (known: stream.echo.64b,",
            ),
            // gRPC streams only on the grpc listener.
            (
                plan(Protocol::Rest, T::Grpc, "stream.echo.64b"),
                "--stream grpc runs on --protocol grpc, not rest",
            ),
            // WebSocket over HTTP/2 is served but not driven yet: said so.
            (
                plan(Protocol::RestH2, T::WebSocket, "stream.echo.64b"),
                "--stream websocket runs on --protocol rest, not rest-h2 (WebSocket over HTTP/2, RFC 8441, is served but not yet driven by the engine)",
            ),
            // SSE carries only the subscription.
            (
                plan(Protocol::Rest, T::Sse, "stream.echo.64b"),
                "workload stream.echo.64b is EchoStream, which --stream sse does not carry (it carries Subscribe)",
            ),
            // gRPC's unary Poll is in the contract, not yet in the engine.
            (
                plan(Protocol::Grpc, T::Grpc, "stream.poll.1k"),
                "the engine does not drive Poll over --stream grpc yet (it drives EchoStream, Subscribe, Upload)",
            ),
            (
                StreamPlan {
                    streams: 4,
                    connections: 2,
                    ..plan(Protocol::Rest, T::WebSocket, "stream.echo.64b")
                },
                "--connections (2) must equal --streams (4) for --protocol rest",
            ),
            (
                StreamPlan {
                    rate: Some(0.5),
                    ..plan(Protocol::Grpc, T::Grpc, "stream.sub.1k")
                },
                "--rate for a subscription is the server's whole events per second, got 0.5",
            ),
            (
                StreamPlan {
                    messages: Some(0),
                    ..plan(Protocol::Grpc, T::Grpc, "stream.echo.64b")
                },
                "--messages must be 1..=1000000, got 0",
            ),
            (
                StreamPlan {
                    threads: 2,
                    ..plan(Protocol::Grpc, T::Grpc, "stream.echo.64b")
                },
                "--threads (2) cannot be greater than --streams (1)",
            ),
        ];
        for (p, says) in cases {
            let e = validate_stream(p).unwrap_err().to_string();
            assert!(e.starts_with(says), "{e}");
        }
        // Many streams on few HTTP/2 connections are fine.
        let shared = StreamPlan {
            streams: 8,
            connections: 2,
            ..plan(Protocol::RestH2, T::Sse, "stream.sub.1k")
        };
        assert!(validate_stream(&shared).is_ok());
    }

    #[test]
    fn the_default_transport_follows_the_protocol_and_the_operation() {
        use StreamOperation as O;
        assert_eq!(default_transport(Protocol::Grpc, O::Subscribe), StreamTransport::Grpc);
        assert_eq!(
            default_transport(Protocol::Rest, O::EchoStream),
            StreamTransport::WebSocket
        );
        assert_eq!(default_transport(Protocol::RestH2, O::Subscribe), StreamTransport::Sse);
    }
}
