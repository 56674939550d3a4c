//! The model of a stream measurement (issue 31): what a streaming load run
//! is asked to do ([`StreamPlan`]) and what it measured ([`StreamResult`]).
//!
//! A unary run counts calls; a streaming run counts **messages** inside
//! long-lived streams, so it has a model of its own beside
//! [`crate::load::LoadResult`] (which is unchanged). The discipline is the
//! same: every message's latency runs from its **intended** send time, never
//! from when it was actually sent, so a stream that falls behind shows it.
//!
//! - Echo stream (gRPC bidi, WebSocket): message `i` of a stream is due at
//!   the stream's start + `i / rate` (open loop), or, without a rate, as
//!   soon as the reply to the message before it came (ping-pong, closed
//!   loop, where intended = actual). Its latency is its reply's arrival
//!   minus that due time.
//! - Subscription (gRPC server streaming, SSE, WebSocket): the server
//!   stamps each event with the time it meant to send it (`scheduledNs`,
//!   the contract's feed); its latency is its arrival (the client's
//!   `CLOCK_REALTIME`) minus that stamp.
//!
//! Units are in field names; times are nanoseconds; rates are per second.

use serde::{Deserialize, Serialize};

pub use protobench_contract::stream::StreamTransport;

use crate::hdr::EncodedHistogram;
use crate::load::{EndReason, Environment, LatencySummary, Protocol, TlsPlan};

/// The poll interval when none is given: 10 ms.
pub const DEFAULT_POLL_INTERVAL_NS: u64 = 10_000_000;

/// The version of the [`StreamResult`] JSON form.
pub const STREAM_SCHEMA_VERSION: u32 = 1;

/// How a WebSocket carries the contract's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Frames {
    /// Text frames holding canonical JSON.
    #[default]
    Text,
    /// Binary frames holding protobuf.
    Binary,
}

impl Frames {
    /// `text` or `binary`.
    pub fn name(self) -> &'static str {
        match self {
            Frames::Text => "text",
            Frames::Binary => "binary",
        }
    }

    /// Parses `text` (or `json`) and `binary` (or `protobuf`).
    pub fn parse(s: &str) -> Result<Frames, String> {
        match s {
            "text" | "json" => Ok(Frames::Text),
            "binary" | "protobuf" => Ok(Frames::Binary),
            _ => Err(format!(
                "unknown WebSocket frames `{s}` (accepted: text (JSON), binary (protobuf))"
            )),
        }
    }
}

/// What makes a point of a `stream` preset (docs/streaming.md, "The
/// `streaming` preset") a streaming point: how its workload's messages
/// are carried. The point's `concurrency` is its streams open at once and
/// its `protocol` the listener the transport runs on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StreamPoint {
    /// `grpc`, `websocket`, `sse` or `poll`.
    pub transport: StreamTransport,
    /// WebSocket frames (text: JSON, binary: protobuf); text otherwise.
    #[serde(default)]
    pub frames: Frames,
    /// Messages per stream (`None`: the workload's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<u32>,
    /// Messages per second on each stream (`None`: ping-pong for an echo,
    /// the workload's rate for a subscription).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
}

impl StreamPoint {
    /// `websocket/binary`, `sse`, `grpc`, with `@100/s` when a rate is set
    /// and `x1000` when the messages per stream are.
    pub fn describe(&self) -> String {
        let mut s = match self.transport {
            StreamTransport::WebSocket => format!("websocket/{}", self.frames.name()),
            t => t.to_string(),
        };
        if let Some(r) = self.rate {
            s.push_str(&format!("@{}/s", crate::format::plain_number(r)));
        }
        if let Some(m) = self.messages {
            s.push_str(&format!("x{m}"));
        }
        s
    }
}

/// The validated plan of one streaming load run, echoed into its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamPlan {
    /// The listener: `rest` (HTTP/1.1), `rest-h2` (HTTP/2) or `grpc`.
    pub protocol: Protocol,
    /// How the stream is carried: `grpc`, `websocket`, `sse`, `poll`.
    pub transport: StreamTransport,
    /// `host:port`.
    pub target: String,
    /// The streaming workload (`stream.echo.64b`, `stream.sub.1k`, ...).
    pub workload: String,
    /// WebSocket frames (text: JSON, binary: protobuf); ignored otherwise.
    #[serde(default)]
    pub frames: Frames,
    /// Streams open at once.
    pub streams: u32,
    /// TCP connections. HTTP/2 (gRPC, SSE over `rest-h2`) multiplexes
    /// `streams / connections` streams on each; HTTP/1.1 needs one per
    /// stream (`connections = streams`).
    pub connections: u32,
    /// Messages per stream: sent on an echo stream, asked for on a
    /// subscription. `None`: the workload's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<u32>,
    /// Messages per second on each stream. Echo: the client's schedule
    /// (open loop); `None` sends each message when the previous reply came
    /// (ping-pong). Subscription: the rate asked of the server, which stamps
    /// each event's scheduled time; `None`: the workload's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Polling: how long to wait after a page that was not full before the
    /// next poll (a full page is followed by the next poll at once).
    /// `None`: 10 ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ns: Option<u64>,
    /// Stop after this long; a stream that ends before is replaced by a
    /// new one (churn). `None`: every stream runs once, to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<u64>,
    /// Time limit of one stream from its start to its end.
    pub timeout_ns: u64,
    /// Time limit of one connection attempt.
    pub connect_timeout_ns: u64,
    /// TLS settings; `None` = clear text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsPlan>,
    /// Engine threads (0 = one).
    #[serde(default)]
    pub threads: u32,
}

/// How a stream ended, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamEndKind {
    /// The clean end: gRPC status OK, WebSocket close 1000, SSE's `end`
    /// event, the poll page that says `done`.
    Clean,
    /// A gRPC status other than OK (`code` is it).
    GrpcStatus,
    /// A WebSocket close code other than 1000 (`code` is it).
    Close,
    /// An HTTP status other than 200 before the stream began (`code` is it).
    HttpStatus,
    /// No end: the connection closed or was reset, a response ended early.
    Broken,
    /// The stream's time limit passed.
    Timeout,
    /// The connection could not be opened.
    Connect,
    /// A message that does not decode, out of order, or not what was sent.
    WrongMessage,
    /// The run ended (its duration, or Ctrl-C) with the stream still open.
    Cut,
}

impl StreamEndKind {
    /// The snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            StreamEndKind::Clean => "clean",
            StreamEndKind::GrpcStatus => "grpc_status",
            StreamEndKind::Close => "close",
            StreamEndKind::HttpStatus => "http_status",
            StreamEndKind::Broken => "broken",
            StreamEndKind::Timeout => "timeout",
            StreamEndKind::Connect => "connect",
            StreamEndKind::WrongMessage => "wrong_message",
            StreamEndKind::Cut => "cut",
        }
    }

    /// Whether the stream failed (clean and cut ones did not).
    pub fn is_failure(self) -> bool {
        !matches!(self, StreamEndKind::Clean | StreamEndKind::Cut)
    }
}

/// Streams that ended one way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamEndCount {
    /// The kind.
    pub kind: StreamEndKind,
    /// The status or close code, for the kinds that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
    /// Streams that ended so.
    pub count: u64,
    /// The first message seen for it (empty for clean ends).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sample: String,
}

/// Streams opened, and at most how many were open at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StreamCounts {
    /// Streams begun (churn included).
    pub opened: u64,
    /// Streams that ended cleanly.
    pub clean: u64,
    /// Streams that failed (every end kind but `clean` and `cut`).
    pub failed: u64,
    /// Streams still open when the run ended.
    pub cut: u64,
    /// The most streams open at the same time.
    pub max_open: u64,
}

/// The result of one streaming load run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamResult {
    /// [`STREAM_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The plan, as run.
    pub plan: StreamPlan,
    /// Where it ran.
    pub environment: Environment,
    /// When the streams started (RFC 3339, UTC).
    pub started_at: String,
    /// From the common start to the last stream's end (or the duration).
    pub duration_ns: u64,
    /// Why the run stopped: `duration`, `requests` (every stream ran to its
    /// end) or `interrupted`.
    pub end_reason: EndReason,
    /// Streams opened, ended, open at once.
    pub streams: StreamCounts,
    /// Each stream's final status, most frequent first.
    pub ends: Vec<StreamEndCount>,
    /// Messages the client sent (echo and upload messages, subscription
    /// requests, polls).
    pub messages_sent: u64,
    /// Messages the client received and accepted (echo replies, feed
    /// events, summaries).
    pub messages_received: u64,
    /// `messages_sent` per second of the run.
    pub sent_per_second: f64,
    /// `messages_received` per second of the run.
    pub received_per_second: f64,
    /// Bytes written to the connections (above TLS, every frame's header
    /// and the set-up included).
    pub bytes_sent: u64,
    /// Bytes read from the connections.
    pub bytes_received: u64,
    /// `bytes_sent / messages_sent`.
    pub bytes_sent_per_message: f64,
    /// `bytes_received / messages_received`.
    pub bytes_received_per_message: f64,
    /// Per received message: its arrival minus its intended send time
    /// (echo: the client's schedule; subscription: the server's stamp).
    pub latency: LatencySummary,
    /// Stream set-up: from its intended start to the stream being ready to
    /// carry messages (connect when the stream opens its own connection,
    /// TLS, HTTP/2 preface, the request or the WebSocket upgrade and its
    /// answer's head).
    pub setup: LatencySummary,
    /// Time to first message: from a stream's intended start to its first
    /// received message.
    pub first_message: LatencySummary,
    /// Sends that could not go out at their intended time because the
    /// stream could not take them (HTTP/2 flow control without window, a
    /// socket buffer full, the previous send still waiting). Their latency
    /// still counts from the intended time.
    pub deferred_sends: u64,
    /// Engine threads.
    pub threads: u32,
    /// CPU time (user + system) of the engine threads over the run.
    pub cpu_ns: u64,
    /// `cpu_ns / (messages_sent + messages_received)`.
    pub cpu_ns_per_message: f64,
    /// `cpu_ns` over the threads' summed wall time from the start to their
    /// last stream's end, at most 1.0 (= every engine thread busy).
    #[serde(default)]
    pub cpu_utilization: f64,
    /// Open-loop echo: how late each message was sent against its
    /// intended time (the generator's own lag; all of it is in `latency`).
    #[serde(default)]
    pub send_lag: LatencySummary,
    /// Whether the engine, not the server, may have limited the run: its
    /// threads were at least 90% busy, or the send lag p99 passed 10 ms
    /// (the unary engine's rules, docs/engine.md).
    #[serde(default)]
    pub generator_bound: bool,
    /// The per-message latency histogram in ns: HdrHistogram V2 + deflate, base64.
    pub histogram: EncodedHistogram,
}

impl StreamResult {
    /// Streams that failed, in all.
    pub fn failed_streams(&self) -> u64 {
        self.ends.iter().filter(|e| e.kind.is_failure()).map(|e| e.count).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_parse_by_name_and_encoding_and_refuse_the_rest() {
        assert_eq!(Frames::parse("json"), Ok(Frames::Text));
        assert_eq!(Frames::parse("binary"), Ok(Frames::Binary));
        assert_eq!(
            Frames::parse("xml").unwrap_err(),
            "unknown WebSocket frames `xml` (accepted: text (JSON), binary (protobuf))"
        );
    }

    #[test]
    fn a_plan_round_trips_through_json_with_its_transport_by_name() {
        let plan = StreamPlan {
            protocol: Protocol::Rest,
            transport: StreamTransport::WebSocket,
            target: "127.0.0.1:1".into(),
            workload: "stream.echo.64b".into(),
            frames: Frames::Binary,
            streams: 4,
            connections: 4,
            messages: Some(10),
            rate: Some(100.0),
            poll_interval_ns: None,
            duration_ns: None,
            timeout_ns: 1,
            connect_timeout_ns: 1,
            tls: None,
            threads: 1,
        };
        let json = serde_json::to_value(&plan).unwrap();
        assert_eq!(json["transport"], "websocket");
        assert_eq!(json["frames"], "binary");
        assert_eq!(serde_json::from_value::<StreamPlan>(json).unwrap(), plan);
        let bad = serde_json::json!({"transport": "carrier-pigeon"});
        assert!(
            serde_json::from_value::<StreamTransport>(bad["transport"].clone())
                .unwrap_err()
                .to_string()
                .contains("accepted: grpc, websocket, sse, poll")
        );
    }

    #[test]
    fn failures_are_every_end_but_clean_and_cut() {
        let failing: Vec<_> = [
            StreamEndKind::Clean,
            StreamEndKind::Cut,
            StreamEndKind::Broken,
            StreamEndKind::GrpcStatus,
        ]
        .into_iter()
        .filter(|k| k.is_failure())
        .collect();
        assert_eq!(failing, [StreamEndKind::Broken, StreamEndKind::GrpcStatus]);
    }
}
