//! Judging a received stream against the contract: message count, order,
//! content, the schedule's stamps, the clean end and the status.
//!
//! A client (the engine, `protobench verify`, a test) decodes what it got
//! into the contract's messages and says how the stream ended; these
//! functions say whether that is what the contract promises, naming the
//! first difference as "found X, expected Y". Nothing here does I/O.

use crate::Dataset;
use crate::pb::bench::{FeedEvent, FeedPage, StreamMessage, SubscribeRequest, UploadSummary};

use super::workload::{Plan, StreamWorkload};
use super::{CLOSE_NORMAL, Tally, event_items, offset_ns};

/// How a received stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEnd {
    /// The clean end: gRPC status OK, WebSocket close 1000, or SSE's `end`
    /// event followed by the end of the response.
    Clean,
    /// A gRPC status other than OK.
    Status {
        /// The `grpc-status` code.
        code: i32,
        /// The `grpc-message`.
        message: String,
    },
    /// A WebSocket close frame with a code other than 1000.
    Close {
        /// The close code.
        code: u16,
        /// The close reason.
        reason: String,
    },
    /// No end at all: the connection closed or was reset, a response
    /// ended without SSE's `end` event, a close frame had no code.
    Broken(String),
}

impl StreamEnd {
    /// The end a WebSocket close frame means (`None`: a close without a code).
    pub fn from_close(code: Option<u16>, reason: &str) -> StreamEnd {
        match code {
            Some(CLOSE_NORMAL) => StreamEnd::Clean,
            Some(code) => StreamEnd::Close {
                code,
                reason: reason.to_owned(),
            },
            None => StreamEnd::Broken("a close frame without a status code".into()),
        }
    }
}

impl std::fmt::Display for StreamEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamEnd::Clean => f.write_str("a clean end"),
            StreamEnd::Status { code, message } => write!(f, "grpc-status {code} ({message:?})"),
            StreamEnd::Close { code, reason } => write!(f, "close code {code} ({reason:?})"),
            StreamEnd::Broken(why) => write!(f, "no end ({why})"),
        }
    }
}

/// The messages of one stream as received, and how it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Received<T> {
    /// Every message, in the order it arrived.
    pub messages: Vec<T>,
    /// How the stream ended.
    pub end: StreamEnd,
}

/// What a client received for one streaming workload.
#[derive(Debug, Clone, PartialEq)]
pub enum ReceivedStream {
    /// The replies of an echo stream.
    Echo(Received<StreamMessage>),
    /// The events of a subscription (gRPC, WebSocket or SSE).
    Feed(Received<FeedEvent>),
    /// The answer to an upload (one summary).
    Upload(Received<UploadSummary>),
    /// The pages of a poll, in order.
    Pages(Vec<FeedPage>),
}

/// The first way a received stream differs from the contract.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StreamMismatch {
    /// The stream did not end cleanly.
    #[error("the stream ended with {found}, expected a clean end")]
    End {
        /// How it ended.
        found: StreamEnd,
    },
    /// Too many or too few messages.
    #[error("found {found} messages, expected {expected}")]
    Count {
        /// Messages received.
        found: usize,
        /// Messages the contract promises.
        expected: usize,
    },
    /// A message out of order (or missing, or repeated).
    #[error("message {index}: found seq {found}, expected {expected}")]
    Seq {
        /// Its position (0-based).
        index: usize,
        /// Its seq.
        found: u32,
        /// The seq at that position.
        expected: u32,
    },
    /// A message whose content differs.
    #[error("message {index} (seq {seq}): found {found}, expected {expected}")]
    Content {
        /// Its position (0-based).
        index: usize,
        /// Its seq.
        seq: u32,
        /// What it held, in short.
        found: String,
        /// What it should hold, in short.
        expected: String,
    },
    /// A feed event stamped off its schedule.
    #[error("event seq {seq}: scheduledNs is {found} ns after the first event's, expected {expected}")]
    Schedule {
        /// The event.
        seq: u32,
        /// Its stamp minus the first event's.
        found: i64,
        /// The schedule's difference.
        expected: i64,
    },
    /// A feed event stamped at or before the epoch, or earlier than the
    /// event before it at rate 0.
    #[error("event seq {seq}: scheduledNs is {found}, expected {expected}")]
    Stamp {
        /// The event.
        seq: u32,
        /// Its stamp.
        found: i64,
        /// What it had to be.
        expected: String,
    },
    /// An upload summary that differs.
    #[error("upload summary: found count {} bytes {} checksum {:#010x}, expected count {} bytes {} checksum {:#010x}",
        found.count, found.bytes, found.checksum, expected.count, expected.bytes, expected.checksum)]
    Summary {
        /// The summary received.
        found: UploadSummary,
        /// The summary of what was sent.
        expected: UploadSummary,
    },
    /// A poll page whose `done` flag is wrong.
    #[error("page {page}: done is {found}, expected {}", !found)]
    Done {
        /// The page (0-based).
        page: usize,
        /// Its flag.
        found: bool,
    },
    /// A check given a stream of the wrong kind for the workload.
    #[error("received {found} for a {expected} workload")]
    Kind {
        /// What was received.
        found: &'static str,
        /// The workload's operation.
        expected: &'static str,
    },
}

fn clean<T>(received: &Received<T>) -> Result<(), StreamMismatch> {
    match &received.end {
        StreamEnd::Clean => Ok(()),
        other => Err(StreamMismatch::End { found: other.clone() }),
    }
}

fn count<T>(received: &Received<T>, expected: usize) -> Result<(), StreamMismatch> {
    if received.messages.len() == expected {
        Ok(())
    } else {
        Err(StreamMismatch::Count {
            found: received.messages.len(),
            expected,
        })
    }
}

fn short(s: &str) -> String {
    let head: String = s.chars().take(24).collect();
    if head.len() < s.len() {
        format!("{} bytes starting {head:?}", s.len())
    } else {
        format!("{s:?}")
    }
}

/// An echo stream: every message sent came back unchanged, in order, and
/// the stream ended cleanly.
pub fn check_echo(sent: &[StreamMessage], received: &Received<StreamMessage>) -> Result<(), StreamMismatch> {
    clean(received)?;
    count(received, sent.len())?;
    for (index, (got, want)) in received.messages.iter().zip(sent).enumerate() {
        if got.seq != want.seq {
            return Err(StreamMismatch::Seq {
                index,
                found: got.seq,
                expected: want.seq,
            });
        }
        if got.payload != want.payload {
            return Err(StreamMismatch::Content {
                index,
                seq: got.seq,
                found: format!("payload {}", short(&got.payload)),
                expected: format!("payload {}", short(&want.payload)),
            });
        }
    }
    Ok(())
}

/// A subscription: events 1..=count in order, each with its items, stamped
/// on the schedule (at rate > 0 the stamps differ from the first one's by
/// exactly the schedule's offsets; at rate 0 they never decrease), then a
/// clean end.
pub fn check_feed(
    request: &SubscribeRequest,
    dataset: &Dataset,
    received: &Received<FeedEvent>,
) -> Result<(), StreamMismatch> {
    clean(received)?;
    count(received, request.count as usize)?;
    check_events(request, dataset, &received.messages)
}

fn check_events(request: &SubscribeRequest, dataset: &Dataset, events: &[FeedEvent]) -> Result<(), StreamMismatch> {
    let Some(first) = events.first() else {
        return Ok(());
    };
    let mut previous = first.scheduled_ns;
    for (index, event) in events.iter().enumerate() {
        let seq = index as u32 + 1;
        if event.seq != seq {
            return Err(StreamMismatch::Seq {
                index,
                found: event.seq,
                expected: seq,
            });
        }
        if event.scheduled_ns <= 0 {
            return Err(StreamMismatch::Stamp {
                seq,
                found: event.scheduled_ns,
                expected: "ns since the Unix epoch (> 0)".into(),
            });
        }
        if request.rate > 0 {
            let found = event.scheduled_ns - first.scheduled_ns;
            let expected = offset_ns(seq, request.rate) - offset_ns(first.seq, request.rate);
            if found != expected {
                return Err(StreamMismatch::Schedule { seq, found, expected });
            }
        } else if event.scheduled_ns < previous {
            return Err(StreamMismatch::Stamp {
                seq,
                found: event.scheduled_ns,
                expected: format!("at least the previous event's {previous} (rate 0)"),
            });
        }
        previous = event.scheduled_ns;
        let expected = event_items(dataset, seq, request.items);
        if event.items.len() != request.items as usize || !event.items.iter().eq(expected) {
            let differs = event
                .items
                .iter()
                .zip(event_items(dataset, seq, request.items))
                .position(|(a, b)| a != b);
            let (found, expected) = match differs {
                Some(j) => (
                    format!("item {j} with id {:?}", event.items[j].id),
                    format!(
                        "dataset item {} (id {:?})",
                        ((seq as usize - 1) * request.items as usize + j) % crate::data::ITEM_COUNT,
                        event_items(dataset, seq, request.items)
                            .nth(j)
                            .map(|i| i.id.as_str())
                            .unwrap_or("")
                    ),
                ),
                None => (
                    format!("{} items", event.items.len()),
                    format!("{} items", request.items),
                ),
            };
            return Err(StreamMismatch::Content {
                index,
                seq,
                found,
                expected,
            });
        }
    }
    Ok(())
}

/// An upload: one summary, equal to the summary of what was sent, then a
/// clean end.
pub fn check_upload(sent: &[StreamMessage], received: &Received<UploadSummary>) -> Result<(), StreamMismatch> {
    clean(received)?;
    count(received, 1)?;
    let expected = Tally::of(sent);
    if received.messages[0] != expected {
        return Err(StreamMismatch::Summary {
            found: received.messages[0],
            expected,
        });
    }
    Ok(())
}

/// Polling: the pages' events, joined, are the feed (as [`check_feed`]
/// judges a subscription), and only the last page says `done`.
pub fn check_pages(request: &SubscribeRequest, dataset: &Dataset, pages: &[FeedPage]) -> Result<(), StreamMismatch> {
    for (page, p) in pages.iter().enumerate() {
        let last = page + 1 == pages.len();
        if p.done != last {
            return Err(StreamMismatch::Done { page, found: p.done });
        }
    }
    let events: Vec<FeedEvent> = pages.iter().flat_map(|p| p.events.iter().cloned()).collect();
    if events.len() != request.count as usize {
        return Err(StreamMismatch::Count {
            found: events.len(),
            expected: request.count as usize,
        });
    }
    check_events(request, dataset, &events)
}

/// Judges what a client received for `workload`.
pub fn check_workload(
    workload: &StreamWorkload,
    dataset: &Dataset,
    received: &ReceivedStream,
) -> Result<(), StreamMismatch> {
    match (workload.plan, received) {
        (Plan::Echo { .. }, ReceivedStream::Echo(r)) => check_echo(&workload.messages(), r),
        (Plan::Upload { .. }, ReceivedStream::Upload(r)) => check_upload(&workload.messages(), r),
        (Plan::Subscribe { .. }, ReceivedStream::Feed(r)) => {
            check_feed(&workload.subscribe_request().expect("a subscription"), dataset, r)
        }
        (Plan::Poll { .. }, ReceivedStream::Pages(p)) => {
            check_pages(&workload.subscribe_request().expect("a poll's feed"), dataset, p)
        }
        (_, other) => Err(StreamMismatch::Kind {
            found: match other {
                ReceivedStream::Echo(_) => "echo replies",
                ReceivedStream::Feed(_) => "feed events",
                ReceivedStream::Upload(_) => "an upload summary",
                ReceivedStream::Pages(_) => "poll pages",
            },
            expected: workload.operation().name(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::workload::find;
    use crate::stream::{feed_event, poll_page, scheduled_ns};

    const T0: i64 = 1_764_000_000_000_000_000;

    fn feed(request: &SubscribeRequest, d: &Dataset) -> Vec<FeedEvent> {
        (1..=request.count)
            .map(|seq| feed_event(d, seq, request.items, scheduled_ns(T0, seq, request.rate)))
            .collect()
    }

    fn ok<T>(messages: Vec<T>) -> Received<T> {
        Received {
            messages,
            end: StreamEnd::Clean,
        }
    }

    #[test]
    fn a_correct_stream_of_every_workload_passes() {
        let d = Dataset::generate();
        for w in crate::stream::workload::ALL {
            let received = match w.plan {
                Plan::Echo { .. } => ReceivedStream::Echo(ok(w.messages())),
                Plan::Upload { .. } => ReceivedStream::Upload(ok(vec![Tally::of(&w.messages())])),
                Plan::Subscribe { .. } => ReceivedStream::Feed(ok(feed(&w.subscribe_request().unwrap(), &d))),
                Plan::Poll { .. } => {
                    ReceivedStream::Pages(w.polls().iter().map(|p| poll_page(&d, p, T0).unwrap()).collect())
                }
            };
            assert_eq!(check_workload(w, &d, &received), Ok(()), "{}", w.name);
        }
    }

    #[test]
    fn echo_mismatches_name_the_first_difference() {
        let sent = find("stream.echo.64b").unwrap().messages();
        // One reply missing.
        let mut r = ok(sent[..99].to_vec());
        assert_eq!(
            check_echo(&sent, &r).unwrap_err().to_string(),
            "found 99 messages, expected 100"
        );
        // Two replies swapped.
        r.messages = sent.clone();
        r.messages.swap(3, 4);
        assert_eq!(
            check_echo(&sent, &r).unwrap_err().to_string(),
            "message 3: found seq 5, expected 4"
        );
        // A payload changed.
        r.messages = sent.clone();
        r.messages[7].payload.push('!');
        assert!(matches!(
            check_echo(&sent, &r),
            Err(StreamMismatch::Content { index: 7, seq: 8, .. })
        ));
        // Everything right but the end.
        r.messages = sent.clone();
        r.end = StreamEnd::Status {
            code: 14,
            message: "injected failure".into(),
        };
        assert_eq!(
            check_echo(&sent, &r).unwrap_err().to_string(),
            "the stream ended with grpc-status 14 (\"injected failure\"), expected a clean end"
        );
    }

    #[test]
    fn feed_mismatches_catch_order_content_schedule_and_end() {
        let d = Dataset::generate();
        let request = find("stream.sub.1k.r1000").unwrap().subscribe_request().unwrap();
        let good = feed(&request, &d);
        let mut r = ok(good.clone());
        assert_eq!(check_feed(&request, &d, &r), Ok(()));
        // The whole schedule shifted is fine: only differences count.
        for e in &mut r.messages {
            e.scheduled_ns += 12_345;
        }
        assert_eq!(check_feed(&request, &d, &r), Ok(()));
        // One event late on the stamp: off the schedule.
        r.messages = good.clone();
        r.messages[10].scheduled_ns += 1;
        assert_eq!(
            check_feed(&request, &d, &r).unwrap_err().to_string(),
            "event seq 11: scheduledNs is 10000001 ns after the first event's, expected 10000000"
        );
        // Wrong items.
        r.messages = good.clone();
        r.messages[2].items.swap(0, 1);
        assert!(matches!(
            check_feed(&request, &d, &r),
            Err(StreamMismatch::Content { index: 2, seq: 3, .. })
        ));
        r.messages = good.clone();
        r.messages[2].items.pop();
        assert_eq!(
            check_feed(&request, &d, &r).unwrap_err().to_string(),
            "message 2 (seq 3): found 5 items, expected 6 items"
        );
        // An event missing in the middle.
        r.messages = good.clone();
        r.messages.remove(50);
        r.messages.push(good[0].clone());
        assert!(matches!(
            check_feed(&request, &d, &r),
            Err(StreamMismatch::Seq {
                index: 50,
                found: 52,
                expected: 51
            })
        ));
        // All there, but the stream broke instead of ending.
        r.messages = good.clone();
        r.end = StreamEnd::Broken("connection reset".into());
        assert!(matches!(check_feed(&request, &d, &r), Err(StreamMismatch::End { .. })));
        // Rate 0: stamps may be equal but never go back; zero is no stamp.
        let fast = SubscribeRequest { rate: 0, ..request };
        let mut r = ok(feed(&fast, &d));
        r.messages[5].scheduled_ns = T0 - 1;
        assert!(matches!(
            check_feed(&fast, &d, &r),
            Err(StreamMismatch::Stamp { seq: 6, .. })
        ));
        r.messages[5].scheduled_ns = 0;
        assert!(matches!(
            check_feed(&fast, &d, &r),
            Err(StreamMismatch::Stamp { seq: 6, .. })
        ));
    }

    #[test]
    fn upload_and_pages_mismatches() {
        let d = Dataset::generate();
        let w = find("stream.upload.1k").unwrap();
        let sent = w.messages();
        let mut summary = Tally::of(&sent);
        summary.checksum ^= 1;
        assert!(matches!(
            check_upload(&sent, &ok(vec![summary])),
            Err(StreamMismatch::Summary { .. })
        ));
        assert!(matches!(
            check_upload(&sent, &ok(vec![])),
            Err(StreamMismatch::Count { found: 0, expected: 1 })
        ));
        let close = Received {
            messages: vec![],
            end: StreamEnd::from_close(Some(1009), "message too big"),
        };
        assert_eq!(
            check_upload(&sent, &close).unwrap_err().to_string(),
            "the stream ended with close code 1009 (\"message too big\"), expected a clean end"
        );
        let p = find("stream.poll.1k").unwrap();
        let feed_request = p.subscribe_request().unwrap();
        let mut pages: Vec<FeedPage> = p.polls().iter().map(|q| poll_page(&d, q, T0).unwrap()).collect();
        pages.pop();
        assert_eq!(
            check_pages(&feed_request, &d, &pages).unwrap_err().to_string(),
            "page 8: done is false, expected true"
        );
        assert!(matches!(
            check_workload(p, &d, &ReceivedStream::Echo(ok(vec![]))),
            Err(StreamMismatch::Kind { .. })
        ));
    }
}
