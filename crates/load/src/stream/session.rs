//! One stream's exchange, whatever carries it: the echo stream's schedule
//! and the subscription's receipt, over two small traits a transport
//! implements (a sink of messages, a source of messages). Transport code
//! knows nothing about time or histograms; this module knows nothing
//! about the wire.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use protobench_contract::pb::bench::{FeedEvent, StreamMessage, SubscribeRequest, UploadSummary};
use protobench_model::stream::StreamEndKind;

use super::record::{Outcome, StreamRecorder, record_ns};
use crate::timer::PreciseTimer;

/// Where a stream's messages go.
#[allow(
    async_fn_in_trait,
    reason = "crate-internal trait used only on single-threaded runtimes"
)]
pub(crate) trait MessageSink {
    /// Sends one message; `Ok(true)` when the transport could not take it
    /// at once (no flow-control window, a full socket): back-pressure.
    async fn send(&mut self, message: &StreamMessage) -> Result<bool, Outcome>;
    /// Ends the client's side cleanly (END_STREAM, or nothing more to send).
    async fn finish(&mut self) -> Result<(), Outcome>;
}

/// Where a stream's messages come from.
#[allow(
    async_fn_in_trait,
    reason = "crate-internal trait used only on single-threaded runtimes"
)]
pub(crate) trait MessageSource<T> {
    /// The next message; `Ok(None)` at the stream's clean end.
    async fn next(&mut self) -> Result<Option<T>, Outcome>;
}

/// Polls `f` to its end and says whether it ever had to wait.
pub(crate) async fn waited<F: Future>(f: F) -> (F::Output, bool) {
    let mut f = pin!(f);
    let mut waited = false;
    let out = std::future::poll_fn(|cx| match f.as_mut().poll(cx) {
        Poll::Ready(v) => Poll::Ready(v),
        Poll::Pending => {
            waited = true;
            Poll::Pending
        }
    })
    .await;
    (out, waited)
}

/// Now, in ns since the Unix epoch (the clock the server stamps with).
pub(crate) fn wall_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

fn ns_between(from: Instant, to: Instant) -> i64 {
    i64::try_from(to.saturating_duration_since(from).as_nanos()).unwrap_or(i64::MAX)
}

/// What an echo stream sends.
pub(crate) struct EchoJob {
    /// The workload's messages; message `i` (from 1) carries payload
    /// `(i - 1) mod len` of them with its own seq.
    pub(crate) messages: Rc<[StreamMessage]>,
    /// Messages to send.
    pub(crate) count: u32,
    /// Open loop: time between two messages' intended sends; `None`:
    /// each message goes when the reply to the one before came.
    pub(crate) interval: Option<Duration>,
}

impl EchoJob {
    /// Message `seq` (from 1).
    pub(crate) fn message(&self, seq: u32) -> StreamMessage {
        let base = &self.messages[(seq as usize - 1) % self.messages.len()];
        StreamMessage {
            seq,
            payload: base.payload.clone(),
        }
    }

    fn check(&self, expected: u32, got: &StreamMessage) -> Result<(), Outcome> {
        let want = &self.messages[(expected as usize - 1) % self.messages.len()];
        if got.seq != expected {
            return Err(Outcome::new(
                StreamEndKind::WrongMessage,
                format!("reply {expected}: found seq {}, expected {expected}", got.seq),
            ));
        }
        if got.payload != want.payload {
            return Err(Outcome::new(
                StreamEndKind::WrongMessage,
                format!(
                    "reply {expected}: the payload differs from the message sent ({} bytes, expected {})",
                    got.payload.len(),
                    want.payload.len()
                ),
            ));
        }
        Ok(())
    }
}

/// Receives the replies of an echo stream: each checked (seq and payload)
/// and timed from its message's intended send (popped from `due`), then
/// the clean end.
async fn receive_replies<R: MessageSource<StreamMessage>>(
    mut source: R,
    job: &EchoJob,
    start: Instant,
    due: &RefCell<VecDeque<Instant>>,
    rec: &RefCell<StreamRecorder>,
) -> Outcome {
    for expected in 1..=job.count {
        let reply = match source.next().await {
            Ok(Some(reply)) => reply,
            Ok(None) => {
                return Outcome::new(
                    StreamEndKind::Broken,
                    format!("the stream ended after {} of {} replies", expected - 1, job.count),
                );
            }
            Err(outcome) => return outcome,
        };
        let now = Instant::now();
        let Some(intended) = due.borrow_mut().pop_front() else {
            return Outcome::new(
                StreamEndKind::WrongMessage,
                format!("reply {expected} came before its message was sent"),
            );
        };
        if let Err(outcome) = job.check(expected, &reply) {
            return outcome;
        }
        let mut r = rec.borrow_mut();
        record_ns(&mut r.latency, ns_between(intended, now));
        if expected == 1 {
            record_ns(&mut r.first, ns_between(start, now));
        }
        r.received += 1;
    }
    match source.next().await {
        Ok(None) => Outcome::clean(),
        Ok(Some(extra)) => Outcome::new(
            StreamEndKind::WrongMessage,
            format!("a reply (seq {}) after the last of {}", extra.seq, job.count),
        ),
        Err(outcome) => outcome,
    }
}

/// An echo stream from its intended start `start`: open loop (message `i`
/// is due at `start + (i - 1) * interval`, whatever the replies do) or
/// ping-pong; every reply's latency from its message's intended send.
pub(crate) async fn echo<S: MessageSink, R: MessageSource<StreamMessage>>(
    mut sink: S,
    source: R,
    job: &EchoJob,
    start: Instant,
    timer: &PreciseTimer,
    rec: &RefCell<StreamRecorder>,
) -> Outcome {
    let due = RefCell::new(VecDeque::new());
    let Some(interval) = job.interval else {
        return ping_pong(sink, source, job, start, rec).await;
    };
    let send = async {
        // When the last send the transport held back was finally taken.
        let mut held_until = start;
        for seq in 1..=job.count {
            let at = start + interval * (seq - 1);
            timer.sleep_until(at).await;
            record_ns(&mut rec.borrow_mut().lag, ns_between(at, Instant::now()));
            due.borrow_mut().push_back(at);
            let (sent, blocked) = waited(sink.send(&job.message(seq))).await;
            sent?;
            let mut r = rec.borrow_mut();
            r.sent += 1;
            // Deferred: the transport could not take it at once, or a send
            // before it was still held back at this one's time. (A thread
            // that merely woke late is not back-pressure: its lateness is
            // in the latency, from the intended time, all the same.)
            if blocked || held_until > at {
                r.deferred += 1;
            }
            drop(r);
            if blocked {
                held_until = Instant::now();
            }
        }
        sink.finish().await
    };
    let receive = receive_replies(source, job, start, &due, rec);
    let (mut send, mut receive) = (pin!(send), pin!(receive));
    let mut sending = true;
    std::future::poll_fn(|cx| {
        if sending && let Poll::Ready(r) = send.as_mut().poll(cx) {
            match r {
                Ok(()) => sending = false,
                Err(outcome) => return Poll::Ready(outcome),
            }
        }
        receive.as_mut().poll(cx)
    })
    .await
}

/// Ping-pong: each message goes when the reply before it came (intended =
/// actual send), so its latency is the round trip.
async fn ping_pong<S: MessageSink, R: MessageSource<StreamMessage>>(
    mut sink: S,
    source: R,
    job: &EchoJob,
    start: Instant,
    rec: &RefCell<StreamRecorder>,
) -> Outcome {
    let due = RefCell::new(VecDeque::new());
    let replies = ReplyCount(std::cell::Cell::new(0));
    let send = async {
        for seq in 1..=job.count {
            // Wait for the reply to the message before.
            // No waker is kept: the one task polls the receiver and then
            // this sender on every wake-up, and only the receiver moves the
            // count (see below).
            std::future::poll_fn(|_| {
                if replies.0.get() + 1 >= seq {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await;
            due.borrow_mut().push_back(Instant::now());
            let (sent, blocked) = waited(sink.send(&job.message(seq))).await;
            sent?;
            let mut r = rec.borrow_mut();
            r.sent += 1;
            r.deferred += u64::from(blocked);
        }
        sink.finish().await
    };
    let counted = CountingSource {
        inner: source,
        replies: &replies,
    };
    let receive = receive_replies(counted, job, start, &due, rec);
    let (mut send, mut receive) = (pin!(send), pin!(receive));
    let mut sending = true;
    std::future::poll_fn(|cx| {
        // The receiver first: a reply it takes lets the sender go on.
        if let Poll::Ready(outcome) = receive.as_mut().poll(cx) {
            return Poll::Ready(outcome);
        }
        if sending && let Poll::Ready(r) = send.as_mut().poll(cx) {
            match r {
                Ok(()) => sending = false,
                Err(outcome) => return Poll::Ready(outcome),
            }
        }
        Poll::Pending
    })
    .await
}

/// Replies received so far on a ping-pong stream, and the sender waiting
/// for the next one.
struct ReplyCount(std::cell::Cell<u32>);

/// A source that counts what it hands on.
struct CountingSource<'a, R> {
    inner: R,
    replies: &'a ReplyCount,
}

impl<R: MessageSource<StreamMessage>> MessageSource<StreamMessage> for CountingSource<'_, R> {
    async fn next(&mut self) -> Result<Option<StreamMessage>, Outcome> {
        let m = self.inner.next().await?;
        if m.is_some() {
            self.replies.0.set(self.replies.0.get() + 1);
        }
        Ok(m)
    }
}

/// An upload: the messages on the echo job's schedule (open loop, or as
/// fast as the transport takes them), the client's end, then the one
/// summary, which must be the summary of what was sent. Its latency (one
/// sample per stream) runs from the last message's intended send to the
/// summary's arrival.
pub(crate) async fn upload<S: MessageSink, R: MessageSource<UploadSummary>>(
    mut sink: S,
    mut source: R,
    job: &EchoJob,
    start: Instant,
    timer: &PreciseTimer,
    rec: &RefCell<StreamRecorder>,
) -> Outcome {
    let mut tally = protobench_contract::stream::Tally::default();
    let mut last_due = start;
    let mut held_until = start;
    for seq in 1..=job.count {
        let message = job.message(seq);
        if let Some(interval) = job.interval {
            last_due = start + interval * (seq - 1);
            timer.sleep_until(last_due).await;
            record_ns(&mut rec.borrow_mut().lag, ns_between(last_due, Instant::now()));
        } else {
            last_due = Instant::now();
        }
        let _ = tally.add(&message);
        let (sent, blocked) = waited(sink.send(&message)).await;
        if let Err(outcome) = sent {
            return outcome;
        }
        let mut r = rec.borrow_mut();
        r.sent += 1;
        if blocked || held_until > last_due {
            r.deferred += 1;
        }
        drop(r);
        if blocked {
            held_until = Instant::now();
        }
    }
    if let Err(outcome) = sink.finish().await {
        return outcome;
    }
    let summary = match source.next().await {
        Ok(Some(summary)) => summary,
        Ok(None) => return Outcome::new(StreamEndKind::Broken, "the upload ended without a summary"),
        Err(outcome) => return outcome,
    };
    let now = Instant::now();
    if summary != tally.summary() {
        let want = tally.summary();
        return Outcome::new(
            StreamEndKind::WrongMessage,
            format!(
                "upload summary: found count {} bytes {} checksum {:#010x}, expected count {} bytes {} checksum {:#010x}",
                summary.count, summary.bytes, summary.checksum, want.count, want.bytes, want.checksum
            ),
        );
    }
    {
        let mut r = rec.borrow_mut();
        record_ns(&mut r.latency, ns_between(last_due, now));
        record_ns(&mut r.first, ns_between(start, now));
        r.received += 1;
    }
    match source.next().await {
        Ok(None) => Outcome::clean(),
        Ok(Some(_)) => Outcome::new(StreamEndKind::WrongMessage, "a second upload summary"),
        Err(outcome) => outcome,
    }
}

/// Receives a subscription's events: each in order with its items, its
/// latency the arrival (this host's wall clock) minus the server's stamp
/// of its scheduled send; then the clean end after `count` events.
pub(crate) async fn feed<R: MessageSource<FeedEvent>>(
    mut source: R,
    request: &SubscribeRequest,
    start: Instant,
    rec: &RefCell<StreamRecorder>,
) -> Outcome {
    let mut next = 1u32;
    loop {
        match source.next().await {
            Ok(Some(event)) => {
                let arrived = wall_ns();
                if event.seq != next {
                    return Outcome::new(
                        StreamEndKind::WrongMessage,
                        format!("event {next}: found seq {}, expected {next}", event.seq),
                    );
                }
                if next > request.count {
                    return Outcome::new(
                        StreamEndKind::WrongMessage,
                        format!("an event (seq {}) after the last of {}", event.seq, request.count),
                    );
                }
                if event.items.len() != request.items as usize {
                    return Outcome::new(
                        StreamEndKind::WrongMessage,
                        format!(
                            "event {next}: found {} items, expected {}",
                            event.items.len(),
                            request.items
                        ),
                    );
                }
                let mut r = rec.borrow_mut();
                record_ns(&mut r.latency, arrived.saturating_sub(event.scheduled_ns));
                if next == 1 {
                    record_ns(&mut r.first, ns_between(start, Instant::now()));
                }
                r.received += 1;
                next += 1;
            }
            Ok(None) if next > request.count => return Outcome::clean(),
            Ok(None) => {
                return Outcome::new(
                    StreamEndKind::Broken,
                    format!("the stream ended after {} of {} events", next - 1, request.count),
                );
            }
            Err(outcome) => return outcome,
        }
    }
}
