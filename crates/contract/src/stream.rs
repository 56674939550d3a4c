//! The streaming operations (`protobench.v1.Streams`, issue 31): what each
//! one means, its limits, the feed every subscription and poll carries, the
//! upload's checksum, the REST query form, and the checker that judges a
//! received stream against all that.
//!
//! The rules are written once in `contract/README.md` ("Streaming"); this
//! module is their reference implementation, as `semantics.rs` is for the
//! unary operations. Everything is pure: a server or a client does the I/O
//! and the clock, and hands this module numbers and messages.
//!
//! The feed is a function of its request, not server state: event `seq`
//! (1-based) of a feed with `items` items per event carries the dataset's
//! items `((seq - 1) * items + j) mod 1395` for `j` in `0..items`, and is
//! meant to be sent at `start + floor((seq - 1) * 1e9 / rate)` ns. So a
//! subscription, an SSE stream and a series of polls of the same feed carry
//! the same events, and polling needs no memory on the server.

use crate::data::ITEM_COUNT;
use crate::pb::bench::{FeedEvent, FeedPage, Item, PollRequest, StreamMessage, SubscribeRequest, UploadSummary};
use crate::{ContractError, Dataset};

/// The most events one subscription or polled feed may ask for.
pub const MAX_COUNT: u32 = 1_000_000;
/// The most items one event may carry (every item of the dataset once).
pub const MAX_ITEMS: u32 = ITEM_COUNT as u32;
/// The highest rate a feed may ask for, in events per second.
pub const MAX_RATE: u32 = 1_000_000;
/// The most events one poll may ask for (`max`).
pub const MAX_PAGE_EVENTS: u32 = 1000;
/// The most items one page holds in all: a page stops before the event that
/// would pass it (but always holds at least one due event).
pub const MAX_PAGE_ITEMS: u32 = 16_384;
/// The most messages a client may send on one echo stream or upload; the
/// next one ends the stream with RESOURCE_EXHAUSTED (gRPC) or close code
/// 1008 (WebSocket).
pub const MAX_STREAM_MESSAGES: u32 = 1_000_000;

/// The WebSocket path of the echo stream.
pub const WS_ECHO_PATH: &str = "/v1/stream/ws/echo";
/// The WebSocket path of the subscription.
pub const WS_SUBSCRIBE_PATH: &str = "/v1/stream/ws/subscribe";
/// The WebSocket path of the upload.
pub const WS_UPLOAD_PATH: &str = "/v1/stream/ws/upload";
/// The Server-Sent Events path of the subscription.
pub const SSE_PATH: &str = "/v1/stream/sse";
/// The REST path of polling.
pub const POLL_PATH: &str = "/v1/stream/poll";

/// The SSE event type of a feed event (its `id` is the event's `seq`).
pub const SSE_EVENT: &str = "feed";
/// The SSE event type sent once after the last feed event.
pub const SSE_END_EVENT: &str = "end";

/// WebSocket close code: normal closure, the stream's clean end.
pub const CLOSE_NORMAL: u16 = 1000;
/// WebSocket close code: a message that does not decode or is invalid.
pub const CLOSE_INVALID: u16 = 1007;
/// WebSocket close code: more than [`MAX_STREAM_MESSAGES`] messages, or no
/// message for the idle timeout.
pub const CLOSE_POLICY: u16 = 1008;
/// WebSocket close code: a message over the size limit.
pub const CLOSE_TOO_BIG: u16 = 1009;

/// One streaming operation of `protobench.v1.Streams`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamOperation {
    /// Bidirectional: each message comes back, in order.
    EchoStream,
    /// Server streaming: `count` feed events, then the end.
    Subscribe,
    /// Client streaming: messages in, one [`UploadSummary`] out.
    Upload,
    /// Unary: one page of the feed.
    Poll,
}

impl StreamOperation {
    /// Every streaming operation, in contract order.
    pub const ALL: [StreamOperation; 4] = [
        StreamOperation::EchoStream,
        StreamOperation::Subscribe,
        StreamOperation::Upload,
        StreamOperation::Poll,
    ];

    /// The operation's name, e.g. `EchoStream`.
    pub fn name(self) -> &'static str {
        match self {
            StreamOperation::EchoStream => "EchoStream",
            StreamOperation::Subscribe => "Subscribe",
            StreamOperation::Upload => "Upload",
            StreamOperation::Poll => "Poll",
        }
    }

    /// The gRPC path, e.g. `/protobench.v1.Streams/Subscribe`.
    pub fn grpc_path(self) -> &'static str {
        match self {
            StreamOperation::EchoStream => "/protobench.v1.Streams/EchoStream",
            StreamOperation::Subscribe => "/protobench.v1.Streams/Subscribe",
            StreamOperation::Upload => "/protobench.v1.Streams/Upload",
            StreamOperation::Poll => "/protobench.v1.Streams/Poll",
        }
    }

    /// Finds an operation by name.
    pub fn from_name(name: &str) -> Option<StreamOperation> {
        Self::ALL.into_iter().find(|op| op.name() == name)
    }
}

impl std::fmt::Display for StreamOperation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A way a streaming operation is carried; a server's manifest lists the
/// ones it serves (`streaming = ["grpc", "websocket", "sse", "poll"]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StreamTransport {
    /// gRPC streams on the `grpc` listener: all four operations.
    Grpc,
    /// WebSocket on the `rest` and `rest-h2` listeners (RFC 6455; RFC 8441
    /// over HTTP/2): echo stream, subscription, upload.
    WebSocket,
    /// Server-Sent Events on the `rest` and `rest-h2` listeners: the subscription.
    Sse,
    /// Plain REST `GET` on the `rest` and `rest-h2` listeners: polling.
    Poll,
    /// Connect's streams on the `connect` listener (HTTP/1.1, enveloped
    /// messages, errors in the end-of-stream message): the subscription,
    /// the upload and the poll; not the echo stream (bidirectional needs
    /// HTTP/2).
    Connect,
}

impl StreamTransport {
    /// Every transport, in contract order.
    pub const ALL: [StreamTransport; 5] = [
        StreamTransport::Grpc,
        StreamTransport::WebSocket,
        StreamTransport::Sse,
        StreamTransport::Poll,
        StreamTransport::Connect,
    ];

    /// Its name in manifests: `grpc`, `websocket`, `sse`, `poll`, `connect`.
    pub fn name(self) -> &'static str {
        match self {
            StreamTransport::Grpc => "grpc",
            StreamTransport::WebSocket => "websocket",
            StreamTransport::Sse => "sse",
            StreamTransport::Poll => "poll",
            StreamTransport::Connect => "connect",
        }
    }

    /// The streaming operations it carries.
    pub fn operations(self) -> &'static [StreamOperation] {
        use StreamOperation as O;
        match self {
            StreamTransport::Grpc => &[O::EchoStream, O::Subscribe, O::Upload, O::Poll],
            StreamTransport::WebSocket => &[O::EchoStream, O::Subscribe, O::Upload],
            StreamTransport::Sse => &[O::Subscribe],
            StreamTransport::Poll => &[O::Poll],
            StreamTransport::Connect => &[O::Subscribe, O::Upload, O::Poll],
        }
    }
}

impl std::str::FromStr for StreamTransport {
    type Err = String;

    /// Parses a name; an unknown one lists the accepted names.
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL.into_iter().find(|t| t.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|t| t.name()).collect();
            format!("unknown streaming transport `{s}` (accepted: {})", names.join(", "))
        })
    }
}

impl serde::Serialize for StreamTransport {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for StreamTransport {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl std::fmt::Display for StreamTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

fn invalid(message: String) -> ContractError {
    ContractError::InvalidArgument(message)
}

/// Checks a feed's `count`, `items` and `rate` against the limits.
fn validate_feed(count: u32, items: u32, rate: u32) -> Result<(), ContractError> {
    if !(1..=MAX_COUNT).contains(&count) {
        return Err(invalid(format!("count is {count}, expected 1..={MAX_COUNT}")));
    }
    if items > MAX_ITEMS {
        return Err(invalid(format!("items is {items}, expected 0..={MAX_ITEMS}")));
    }
    if rate > MAX_RATE {
        return Err(invalid(format!(
            "rate is {rate}, expected 0 (as fast as possible) ..={MAX_RATE}"
        )));
    }
    Ok(())
}

/// The checks a subscription makes before it sends anything.
pub fn validate_subscribe(request: &SubscribeRequest) -> Result<(), ContractError> {
    validate_feed(request.count, request.items, request.rate)
}

/// The checks a poll makes before it answers.
pub fn validate_poll(request: &PollRequest) -> Result<(), ContractError> {
    validate_feed(request.count, request.items, request.rate)?;
    if !(1..=MAX_PAGE_EVENTS).contains(&request.max) {
        return Err(invalid(format!(
            "max is {}, expected 1..={MAX_PAGE_EVENTS}",
            request.max
        )));
    }
    if request.after > request.count {
        return Err(invalid(format!(
            "after is {}, beyond the feed's count {}",
            request.after, request.count
        )));
    }
    if request.start_ns < 0 || (request.rate > 0 && request.start_ns == 0) {
        return Err(invalid(format!(
            "startNs is {}, expected the feed's start in ns since the Unix epoch (> 0 when rate > 0)",
            request.start_ns
        )));
    }
    Ok(())
}

/// How long after the feed's start event `seq` is due:
/// `floor((seq - 1) * 1e9 / rate)` ns, and 0 at rate 0.
pub fn offset_ns(seq: u32, rate: u32) -> i64 {
    if rate == 0 || seq == 0 {
        return 0;
    }
    // At most 999_999 * 1e9 < 2^63: exact in 64-bit integers.
    ((u64::from(seq) - 1) * 1_000_000_000 / u64::from(rate)) as i64
}

/// When event `seq` of a feed that started at `start_ns` is due.
pub fn scheduled_ns(start_ns: i64, seq: u32, rate: u32) -> i64 {
    start_ns.saturating_add(offset_ns(seq, rate))
}

/// The dataset items event `seq` carries.
pub fn event_items(dataset: &Dataset, seq: u32, items: u32) -> impl Iterator<Item = &Item> {
    let first = (u64::from(seq.max(1)) - 1) * u64::from(items);
    (0..u64::from(items)).map(move |j| &dataset.items[((first + j) % ITEM_COUNT as u64) as usize])
}

/// Event `seq` of a feed with `items` items per event, stamped `scheduled_ns`.
pub fn feed_event(dataset: &Dataset, seq: u32, items: u32, scheduled_ns: i64) -> FeedEvent {
    FeedEvent {
        seq,
        scheduled_ns,
        items: event_items(dataset, seq, items).cloned().collect(),
    }
}

/// The page a poll gets at `now_ns`: the events after `after` that are due
/// (every one at rate 0), at most `max` of them and at most
/// [`MAX_PAGE_ITEMS`] items in all (at least one due event). At rate 0 the
/// events are stamped `now_ns`.
pub fn poll_page(dataset: &Dataset, request: &PollRequest, now_ns: i64) -> Result<FeedPage, ContractError> {
    validate_poll(request)?;
    let by_items = MAX_PAGE_ITEMS.checked_div(request.items).map_or(u32::MAX, |n| n.max(1));
    let last = request
        .count
        .min(request.after.saturating_add(request.max.min(by_items)));
    let mut events = Vec::new();
    for seq in request.after + 1..=last {
        let stamp = if request.rate == 0 {
            now_ns
        } else {
            let due = scheduled_ns(request.start_ns, seq, request.rate);
            if due > now_ns {
                break;
            }
            due
        };
        events.push(feed_event(dataset, seq, request.items, stamp));
    }
    let done = events.last().is_some_and(|e| e.seq == request.count) || request.after == request.count;
    Ok(FeedPage { events, done })
}

/// 32-bit FNV-1a, continued from `hash` over `bytes` (start from
/// [`FNV_OFFSET`]).
pub fn fnv1a32(mut hash: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// FNV-1a's 32-bit offset basis: the checksum of no bytes.
pub const FNV_OFFSET: u32 = 0x811C_9DC5;

/// An upload's running summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    count: u32,
    bytes: u64,
    checksum: u32,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            count: 0,
            bytes: 0,
            checksum: FNV_OFFSET,
        }
    }
}

impl Tally {
    /// Counts one message; refuses the one past [`MAX_STREAM_MESSAGES`].
    pub fn add(&mut self, message: &StreamMessage) -> Result<(), TooManyMessages> {
        if self.count >= MAX_STREAM_MESSAGES {
            return Err(TooManyMessages);
        }
        self.count += 1;
        self.bytes += message.payload.len() as u64;
        self.checksum = fnv1a32(self.checksum, message.payload.as_bytes());
        Ok(())
    }

    /// The summary of what was counted.
    pub fn summary(&self) -> UploadSummary {
        UploadSummary {
            count: self.count,
            bytes: self.bytes,
            checksum: self.checksum,
        }
    }

    /// The summary of an upload of `messages`.
    pub fn of(messages: &[StreamMessage]) -> UploadSummary {
        let mut tally = Tally::default();
        for m in messages {
            tally.add(m).expect("a workload stays under the message limit");
        }
        tally.summary()
    }
}

/// A stream went past [`MAX_STREAM_MESSAGES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("more than {MAX_STREAM_MESSAGES} messages on one stream")]
pub struct TooManyMessages;

/// Decodes a streaming message from its canonical JSON form (unknown members
/// are an error, as for every request).
pub fn from_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, crate::DecodeError> {
    Ok(serde_json::from_slice(bytes)?)
}

/// The canonical JSON form of a streaming message.
pub fn to_json<T: serde::Serialize>(message: &T) -> Vec<u8> {
    serde_json::to_vec(message).expect("contract messages always serialize")
}

/// Decodes a streaming message from protobuf.
pub fn from_protobuf<T: prost::Message + Default>(bytes: &[u8]) -> Result<T, crate::DecodeError> {
    Ok(T::decode(bytes)?)
}

/// The REST query form (`?count=100&items=6`) of a feed request: each
/// field by its JSON name, a decimal integer; a missing one is its default
/// (0), as a missing JSON member is. Unknown, repeated or non-integer
/// parameters are invalid input (400).
fn parse_query(query: &str, names: &[&'static str]) -> Result<Vec<Option<u64>>, ContractError> {
    let mut values = vec![None; names.len()];
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let Some(index) = names.iter().position(|n| *n == name) else {
            return Err(invalid(format!(
                "unknown query parameter {:?}; expected {}",
                truncate(name, 40),
                names.join(", ")
            )));
        };
        if values[index].is_some() {
            return Err(invalid(format!("query parameter {name} is given twice")));
        }
        let parsed = (!value.is_empty() && value.len() <= 20 && value.bytes().all(|b| b.is_ascii_digit()))
            .then(|| value.parse::<u64>().ok())
            .flatten()
            .ok_or_else(|| {
                invalid(format!(
                    "query parameter {name} is {:?}, expected a non-negative decimal integer",
                    truncate(value, 40)
                ))
            })?;
        values[index] = Some(parsed);
    }
    Ok(values)
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

fn field_u32(name: &str, value: Option<u64>) -> Result<u32, ContractError> {
    u32::try_from(value.unwrap_or(0)).map_err(|_| invalid(format!("{name} is {}, too large", value.unwrap_or(0))))
}

/// Parses the query of an SSE subscription (`count`, `items`, `rate`) and
/// validates it.
pub fn subscribe_from_query(query: &str) -> Result<SubscribeRequest, ContractError> {
    let v = parse_query(query, &["count", "items", "rate"])?;
    let request = SubscribeRequest {
        count: field_u32("count", v[0])?,
        items: field_u32("items", v[1])?,
        rate: field_u32("rate", v[2])?,
    };
    validate_subscribe(&request)?;
    Ok(request)
}

/// Parses the query of a poll (`count`, `items`, `rate`, `startNs`,
/// `after`, `max`) and validates it.
pub fn poll_from_query(query: &str) -> Result<PollRequest, ContractError> {
    let v = parse_query(query, &["count", "items", "rate", "startNs", "after", "max"])?;
    let start_ns = v[3].unwrap_or(0);
    let request = PollRequest {
        count: field_u32("count", v[0])?,
        items: field_u32("items", v[1])?,
        rate: field_u32("rate", v[2])?,
        start_ns: i64::try_from(start_ns).map_err(|_| invalid(format!("startNs is {start_ns}, too large")))?,
        after: field_u32("after", v[4])?,
        max: field_u32("max", v[5])?,
    };
    validate_poll(&request)?;
    Ok(request)
}

/// The query string of a subscription (the form [`subscribe_from_query`] reads).
pub fn subscribe_query(request: &SubscribeRequest) -> String {
    format!("count={}&items={}&rate={}", request.count, request.items, request.rate)
}

/// The query string of a poll (the form [`poll_from_query`] reads).
pub fn poll_query(request: &PollRequest) -> String {
    format!(
        "count={}&items={}&rate={}&startNs={}&after={}&max={}",
        request.count, request.items, request.rate, request.start_ns, request.after, request.max
    )
}

/// The length-delimited protobuf form of a sequence of messages (each
/// preceded by its length as a varint), as the `.pb` stream vectors hold it.
pub fn encode_delimited<T: prost::Message>(messages: &[T]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in messages {
        m.encode_length_delimited(&mut out).expect("a Vec grows");
    }
    out
}

/// Reads a length-delimited sequence written by [`encode_delimited`].
pub fn decode_delimited<T: prost::Message + Default>(mut bytes: &[u8]) -> Result<Vec<T>, crate::DecodeError> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        out.push(T::decode_length_delimited(&mut bytes)?);
    }
    Ok(out)
}

/// One canonical JSON message per line, as the `.jsonl` stream vectors hold it.
pub fn encode_json_lines<T: serde::Serialize>(messages: &[T]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in messages {
        out.extend_from_slice(&to_json(m));
        out.push(b'\n');
    }
    out
}

/// A protobuf message's encoded length (for size descriptions).
pub fn protobuf_len<T: prost::Message>(message: &T) -> usize {
    message.encoded_len()
}

pub mod check;
pub mod workload;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a32_matches_the_published_test_values() {
        // From the FNV reference test suite.
        assert_eq!(fnv1a32(FNV_OFFSET, b""), 0x811c_9dc5);
        assert_eq!(fnv1a32(FNV_OFFSET, b"a"), 0xe40c_292c);
        assert_eq!(fnv1a32(FNV_OFFSET, b"foobar"), 0xbf9c_f968);
        // Continuing over pieces is hashing their concatenation.
        assert_eq!(fnv1a32(fnv1a32(FNV_OFFSET, b"foo"), b"bar"), 0xbf9c_f968);
    }

    #[test]
    fn the_schedule_is_integer_arithmetic_from_the_start() {
        assert_eq!(offset_ns(1, 3), 0);
        assert_eq!(offset_ns(2, 3), 333_333_333);
        assert_eq!(offset_ns(4, 3), 1_000_000_000);
        assert_eq!(offset_ns(7, 0), 0, "rate 0 has no schedule");
        assert_eq!(offset_ns(MAX_COUNT, 1), 999_999_000_000_000);
        assert_eq!(scheduled_ns(5, 2, 1_000_000), 1005);
    }

    #[test]
    fn events_walk_the_items_and_wrap_around() {
        let d = Dataset::generate();
        let e = feed_event(&d, 2, 3, 7);
        assert_eq!(e.items, d.items[3..6].to_vec());
        let last = feed_event(&d, 466, 3, 7); // items 1395, 1396, 1397 -> 0, 1, 2
        assert_eq!(last.items, d.items[0..3].to_vec());
        assert!(feed_event(&d, 1, 0, 7).items.is_empty());
    }

    #[test]
    fn feed_limits_are_refused_with_the_accepted_range() {
        let ok = SubscribeRequest {
            count: MAX_COUNT,
            items: MAX_ITEMS,
            rate: MAX_RATE,
        };
        assert!(validate_subscribe(&ok).is_ok());
        let cases = [
            (SubscribeRequest { count: 0, ..ok }, "count is 0, expected 1..=1000000"),
            (
                SubscribeRequest {
                    count: MAX_COUNT + 1,
                    ..ok
                },
                "count is 1000001, expected 1..=1000000",
            ),
            (
                SubscribeRequest {
                    items: MAX_ITEMS + 1,
                    ..ok
                },
                "items is 1396, expected 0..=1395",
            ),
            (
                SubscribeRequest {
                    rate: MAX_RATE + 1,
                    ..ok
                },
                "rate is 1000001, expected 0 (as fast as possible) ..=1000000",
            ),
        ];
        for (request, message) in cases {
            assert_eq!(validate_subscribe(&request).unwrap_err().to_string(), message);
        }
    }

    #[test]
    fn a_page_holds_the_due_events_within_max_and_the_item_budget() {
        let d = Dataset::generate();
        let base = PollRequest {
            count: 10,
            items: 1,
            rate: 0,
            start_ns: 0,
            after: 0,
            max: 4,
        };
        // Rate 0: everything is due; max bounds the page.
        let p = poll_page(&d, &base, 99).unwrap();
        assert_eq!(p.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3, 4]);
        assert!(p.events.iter().all(|e| e.scheduled_ns == 99));
        assert!(!p.done);
        // The last page says done; a poll after the end is empty and done.
        let p = poll_page(&d, &PollRequest { after: 8, ..base }, 99).unwrap();
        assert_eq!((p.events.len(), p.done), (2, true));
        let p = poll_page(&d, &PollRequest { after: 10, ..base }, 99).unwrap();
        assert_eq!((p.events.len(), p.done), (0, true));
        // Rate 10/s from t=1000: at t=1000+250ms events 1..=3 are due.
        let paced = PollRequest {
            rate: 10,
            start_ns: 1000,
            max: 100,
            ..base
        };
        let p = poll_page(&d, &paced, 1000 + 250_000_000).unwrap();
        assert_eq!(
            p.events.iter().map(|e| e.scheduled_ns).collect::<Vec<_>>(),
            [1000, 100_001_000, 200_001_000]
        );
        // The item budget: 1395 items per event -> 11 events per page.
        let big = PollRequest {
            count: 100,
            items: MAX_ITEMS,
            max: 1000,
            ..base
        };
        assert_eq!(poll_page(&d, &big, 1).unwrap().events.len(), 11);
        // Rate > 0 needs a start.
        assert!(poll_page(&d, &PollRequest { rate: 10, ..base }, 1).is_err());
        assert!(poll_page(&d, &PollRequest { after: 11, ..base }, 1).is_err());
        assert!(poll_page(&d, &PollRequest { max: 0, ..base }, 1).is_err());
        assert!(poll_page(&d, &PollRequest { max: 1001, ..base }, 1).is_err());
    }

    #[test]
    fn queries_parse_by_json_name_and_refuse_anything_else() {
        let r = subscribe_from_query("count=5&items=2").unwrap();
        assert_eq!((r.count, r.items, r.rate), (5, 2, 0));
        assert_eq!(subscribe_from_query(&subscribe_query(&r)).unwrap(), r);
        let p = poll_from_query("count=5&max=2&after=1").unwrap();
        assert_eq!(poll_from_query(&poll_query(&p)).unwrap(), p);
        for (query, message) in [
            (
                "count=5&bogus=1",
                "unknown query parameter \"bogus\"; expected count, items, rate",
            ),
            ("count=5&count=6", "query parameter count is given twice"),
            (
                "count=-5",
                "query parameter count is \"-5\", expected a non-negative decimal integer",
            ),
            ("count=99999999999", "count is 99999999999, too large"),
            ("count=1000001", "count is 1000001, expected 1..=1000000"),
            ("", "count is 0, expected 1..=1000000"),
        ] {
            assert_eq!(subscribe_from_query(query).unwrap_err().to_string(), message, "{query}");
        }
    }

    #[test]
    fn a_tally_counts_bytes_and_refuses_the_message_past_the_limit() {
        let m = |s: &str| StreamMessage {
            seq: 1,
            payload: s.into(),
        };
        let s = Tally::of(&[m("foo"), m("bar")]);
        assert_eq!((s.count, s.bytes, s.checksum), (2, 6, 0xbf9c_f968));
        let mut full = Tally {
            count: MAX_STREAM_MESSAGES,
            ..Tally::default()
        };
        assert_eq!(full.add(&m("x")), Err(TooManyMessages));
    }

    #[test]
    fn the_asyncapi_document_and_the_readme_follow_the_proto_and_the_limits() {
        let contract = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contract");
        let yaml = std::fs::read_to_string(contract.join("asyncapi.yaml")).unwrap();
        let readme = std::fs::read_to_string(contract.join("README.md")).unwrap();
        // Every message of stream.proto is a schema with every field, by JSON name.
        let pool = crate::pb::descriptor_pool();
        let file = pool
            .get_file_by_name("protobench/v1/stream.proto")
            .expect("stream.proto is compiled in");
        for message in file.messages() {
            let start = yaml
                .find(&format!("\n    {}:\n      type: object", message.name()))
                .unwrap_or_else(|| panic!("asyncapi.yaml has no schema {}", message.name()));
            // The schema runs to the next line indented as its name is.
            let body = &yaml[start + 1..];
            let length = body
                .split_inclusive('\n')
                .skip(1)
                .take_while(|line| !line.starts_with("    ") || line[4..].starts_with(' '))
                .map(str::len)
                .sum::<usize>();
            let end = start + 1 + body.find('\n').unwrap_or(0) + 1 + length;
            let schema = &yaml[start..end];
            for field in message.fields() {
                assert!(
                    schema.contains(&format!("        {}:", field.json_name())),
                    "asyncapi.yaml schema {} lacks {}",
                    message.name(),
                    field.json_name()
                );
            }
        }
        let service = file.services().next().expect("the Streams service");
        let methods: Vec<_> = service.methods().map(|m| m.name().to_owned()).collect();
        assert_eq!(methods, StreamOperation::ALL.map(|op| op.name()));
        for op in StreamOperation::ALL {
            assert!(op.grpc_path().starts_with(&format!("/{}/", service.full_name())));
        }
        for path in [WS_ECHO_PATH, WS_SUBSCRIBE_PATH, WS_UPLOAD_PATH, SSE_PATH, POLL_PATH] {
            assert!(yaml.contains(&format!("address: {path}")), "asyncapi.yaml lacks {path}");
            assert!(readme.contains(path), "README.md lacks {path}");
        }
        for (limit, text) in [
            (MAX_COUNT, "count 1..=1000000"),
            (MAX_ITEMS, "items 0..=1395"),
            (MAX_RATE, "rate\n    0..=1000000"),
            (MAX_PAGE_EVENTS, "max 1..=1000"),
            (MAX_PAGE_ITEMS, "16384 items"),
            (MAX_STREAM_MESSAGES, "1000000 messages"),
        ] {
            assert!(yaml.contains(text), "asyncapi.yaml does not say {text} ({limit})");
        }
        for text in ["1..=1,000,000", "0..=1,395", "1..=1,000 events", "16,384"] {
            assert!(readme.contains(text), "README.md does not say {text}");
        }
    }

    #[test]
    fn delimited_sequences_round_trip() {
        let ms = vec![
            StreamMessage {
                seq: 1,
                payload: "a".into(),
            },
            StreamMessage {
                seq: 2,
                payload: String::new(),
            },
        ];
        assert_eq!(decode_delimited::<StreamMessage>(&encode_delimited(&ms)).unwrap(), ms);
        assert!(decode_delimited::<StreamMessage>(&[5, 1]).is_err());
    }
}
