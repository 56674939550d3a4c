//! `verify` for the streaming operations: each streaming workload sent as
//! its vector says (`contract/stream-vectors`: the workload's messages, or
//! its subscription request) over one transport, everything received kept,
//! and the whole judged by the contract's checker
//! (`protobench_contract::stream::check`): message count, order, content,
//! the feed's stamps, the clean end and the status.
//!
//! The stream vectors are generated from the same workload definitions the
//! checker reads (`protobench contract check` fails on any drift), so the
//! checker's verdict is the vectors'.

use std::cell::RefCell;
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::Duration;

use protobench_contract::pb::bench::{FeedEvent, StreamMessage};
use protobench_contract::stream::check::{Received, ReceivedStream, StreamEnd, check_workload};
use protobench_contract::stream::workload::StreamWorkload;
use protobench_contract::stream::{self as contract_stream, StreamOperation};
use protobench_contract::{Dataset, Protocol};
use protobench_model::load::TlsPlan;
use protobench_model::stream::{Frames, StreamEndKind, StreamTransport};

use super::open::{self, AnySource};
use super::record::Outcome;
use super::session::{MessageSink, MessageSource};
use crate::driver::ByteCounters;
use crate::driver::net::Endpoint;
use crate::verify::{Outcome as Verdict, VerifyReport, WorkloadVerdict};
use crate::{LoadError, prepare};

/// One streaming check: a workload over a transport (and, for WebSocket,
/// a frame type).
#[derive(Debug, Clone, Copy)]
pub struct StreamCheck {
    /// The workload.
    pub workload: &'static StreamWorkload,
    /// How it is carried.
    pub transport: StreamTransport,
    /// WebSocket frames.
    pub frames: Frames,
}

impl StreamCheck {
    /// Its name in a report: `stream.echo.64b (websocket, binary)`.
    pub fn label(&self) -> String {
        match self.transport {
            StreamTransport::WebSocket => format!("{} (websocket, {})", self.workload.name, self.frames.name()),
            t => format!("{} ({t})", self.workload.name),
        }
    }
}

/// The streaming checks the engine can make on `protocol` over
/// `transports`: every workload each carries, WebSocket in both frame types.
pub fn stream_checks(protocol: Protocol, transports: &[StreamTransport]) -> Vec<StreamCheck> {
    let mut checks = Vec::new();
    for &transport in transports {
        for workload in contract_stream::workload::ALL {
            let plan = super::probe_plan(protocol, transport, workload.name);
            if super::validate_stream(&plan).is_err() {
                continue;
            }
            let frames: &[Frames] = if transport == StreamTransport::WebSocket {
                &[Frames::Text, Frames::Binary]
            } else {
                &[Frames::Text]
            };
            for &frames in frames {
                checks.push(StreamCheck {
                    workload,
                    transport,
                    frames,
                });
            }
        }
    }
    checks
}

/// Verifies `checks` of a server at `target`. Fails only when the target
/// cannot be resolved or the TLS settings are unusable.
pub async fn verify_streams(
    protocol: Protocol,
    target: &str,
    tls: Option<&TlsPlan>,
    checks: &[StreamCheck],
    dataset: std::sync::Arc<Dataset>,
    timeout: Duration,
) -> Result<VerifyReport, LoadError> {
    let parsed = prepare::parse_target(target);
    let addr = prepare::resolve(&parsed.authority, timeout).await?;
    let tls = tls.cloned().or_else(|| parsed.https.then(TlsPlan::default));
    let endpoint = Endpoint::new(addr, parsed.authority.clone(), tls.as_ref(), protocol.alpn_ids())?;
    let checks = checks.to_vec();
    crate::driver::on_own_thread("protobench-verify-streams", move || async move {
        let mut verdicts = Vec::new();
        for check in &checks {
            let outcome = verify_one(protocol, &endpoint, check, &dataset, timeout).await;
            verdicts.push(WorkloadVerdict {
                workload: check.label(),
                outcome,
            });
        }
        VerifyReport { verdicts }
    })
    .await
}

async fn verify_one(
    protocol: Protocol,
    endpoint: &Endpoint,
    check: &StreamCheck,
    dataset: &Dataset,
    timeout: Duration,
) -> Verdict {
    let counters = Rc::new(ByteCounters::default());
    let workload = check.workload;
    let op = workload.operation();
    let subscribe = workload.subscribe_request().unwrap_or_default();
    let path = open::path(check.transport, op, &subscribe);
    let target = open::Target {
        protocol,
        transport: check.transport,
        op,
        frames: check.frames,
        endpoint,
        path: &path,
        subscribe: &subscribe,
        poll: super::first_poll(workload, &subscribe, None),
    };
    let received = async {
        let mut opened = open::open_stream(&target, None, &counters).await?;
        if let AnySource::Poll(p) = &mut opened.source {
            let pages = Rc::new(RefCell::new(Vec::new()));
            p.pages = Some(pages.clone());
            let feed = collect::<FeedEvent>(opened.source).await;
            if feed.end != StreamEnd::Clean {
                return Err(Outcome::new(
                    StreamEndKind::Broken,
                    format!("the polls ended with {} after {} events", feed.end, feed.messages.len()),
                ));
            }
            return Ok(ReceivedStream::Pages(pages.take()));
        }
        Ok::<_, Outcome>(match op {
            StreamOperation::EchoStream => {
                let sink = opened.sink.expect("an echo stream has a sending half");
                ReceivedStream::Echo(collect_while_sending(sink, opened.source, &workload.messages()).await)
            }
            StreamOperation::Upload => {
                let sink = opened.sink.expect("an upload has a sending half");
                ReceivedStream::Upload(collect_while_sending(sink, opened.source, &workload.messages()).await)
            }
            _ => {
                let feed = collect::<FeedEvent>(opened.source).await;
                if let Some(mut sink) = opened.sink {
                    let _ = sink.finish().await;
                }
                ReceivedStream::Feed(feed)
            }
        })
    };
    let received = match tokio::time::timeout(timeout, received).await {
        Err(_) => return Verdict::Error(format!("no end within {timeout:?}")),
        Ok(Err(outcome)) => return before_any_message(outcome),
        Ok(Ok(received)) => received,
    };
    match check_workload(workload, dataset, &received) {
        Ok(()) => Verdict::Ok,
        Err(mismatch) => Verdict::Error(mismatch.to_string()),
    }
}

/// A stream that failed before it carried anything: the contract's
/// injected failure is told apart (as for unary calls).
fn before_any_message(outcome: Outcome) -> Verdict {
    let injected = match outcome.kind {
        StreamEndKind::GrpcStatus => outcome.code == Some(14),
        StreamEndKind::HttpStatus => outcome.code == Some(500),
        _ => false,
    } && outcome.message.contains(protobench_contract::INJECTED_FAILURE);
    if injected {
        Verdict::Injected {
            found: outcome.message,
            expected: "the stream".into(),
        }
    } else {
        Verdict::Error(outcome.message)
    }
}

fn end_of(outcome: Outcome) -> StreamEnd {
    match (outcome.kind, outcome.code) {
        (StreamEndKind::Clean, _) => StreamEnd::Clean,
        (StreamEndKind::GrpcStatus, Some(code)) => StreamEnd::Status {
            code: code as i32,
            message: outcome.message,
        },
        (StreamEndKind::Close, Some(code)) => StreamEnd::Close {
            code: code as u16,
            reason: outcome.message,
        },
        _ => StreamEnd::Broken(outcome.message),
    }
}

/// Everything a source hands on, to its end.
async fn collect<T>(mut source: impl MessageSource<T>) -> Received<T> {
    let mut messages = Vec::new();
    loop {
        match source.next().await {
            Ok(Some(m)) => messages.push(m),
            Ok(None) => {
                return Received {
                    messages,
                    end: StreamEnd::Clean,
                };
            }
            Err(outcome) => {
                return Received {
                    messages,
                    end: end_of(outcome),
                };
            }
        }
    }
}

/// Sends every message (then the client's end) while collecting what
/// comes back (echo replies, or an upload's summary).
async fn collect_while_sending<T>(
    mut sink: impl MessageSink,
    source: impl MessageSource<T>,
    sent: &[StreamMessage],
) -> Received<T> {
    let failed = RefCell::new(None);
    let send = async {
        for m in sent {
            if let Err(outcome) = sink.send(m).await {
                *failed.borrow_mut() = Some(outcome);
                return;
            }
        }
        if let Err(outcome) = sink.finish().await {
            *failed.borrow_mut() = Some(outcome);
        }
    };
    let receive = collect::<T>(source);
    let (mut send, mut receive) = (pin!(send), pin!(receive));
    let mut sending = true;
    let mut received = std::future::poll_fn(|cx| {
        if sending && send.as_mut().poll(cx).is_ready() {
            sending = false;
        }
        match receive.as_mut().poll(cx) {
            Poll::Ready(r) => Poll::Ready(r),
            Poll::Pending if !sending && failed.borrow().is_some() => Poll::Ready(Received {
                messages: Vec::new(),
                end: StreamEnd::Clean,
            }),
            Poll::Pending => Poll::Pending,
        }
    })
    .await;
    if let Some(outcome) = failed.take() {
        received.end = end_of(outcome);
    }
    received
}
