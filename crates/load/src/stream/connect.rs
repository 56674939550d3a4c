//! Connect server streaming: the subscription as `POST
//! /protobench.v1.Streams/Subscribe` on the `connect` listener, over
//! HTTP/1.1 (hyper's client connection on the engine's counted socket).
//!
//! The request is one enveloped `SubscribeRequest`
//! (`application/connect+proto`: a flags byte, the length in 4 bytes
//! big-endian, the message); the response's envelopes are parsed as they
//! arrive into feed events. The end-of-stream envelope (flag `0x02`,
//! JSON) is the stream's end: without an `error` it is the clean end,
//! with one the stream failed with that code (reported as gRPC numbers
//! it, since Connect's codes are gRPC's by name). An HTTP status other
//! than 200 is refused before any message, as for SSE.

use std::rc::Rc;

use bytes::{Buf as _, Bytes, BytesMut};
use http_body_util::Full;
use prost::Message as _;
use protobench_contract::pb::bench::{FeedEvent, SubscribeRequest};
use protobench_model::stream::StreamEndKind;

use super::record::Outcome;
use super::session::MessageSource;
use super::sse::Body;
use crate::driver::ByteCounters;
use crate::driver::net::Endpoint;

/// The media type of a stream of protobuf messages.
pub(crate) const STREAM_PROTO: &str = "application/connect+proto";
/// The flag of the end-of-stream envelope.
const END_STREAM: u8 = 0x02;
/// The largest envelope taken (a 1,395-item event is about 200 KB of protobuf).
const MAX_MESSAGE: usize = 16 << 20;

fn broken(what: &str, e: impl std::fmt::Display) -> Outcome {
    Outcome::new(StreamEndKind::Broken, format!("{what}: {e}"))
}

fn wrong(message: String) -> Outcome {
    Outcome::new(StreamEndKind::WrongMessage, message)
}

/// Opens a subscription on its own connection: the request sent whole,
/// returns once the response head (200, `application/connect+proto`) is in.
pub(crate) async fn open_h1(
    endpoint: &Endpoint,
    counters: &Rc<ByteCounters>,
    path: &str,
    subscribe: &SubscribeRequest,
) -> Result<Body, Outcome> {
    let request = http::Request::post(path)
        .header("host", &endpoint.authority)
        .header("content-type", STREAM_PROTO)
        .body(Full::new(super::grpc::frame(subscribe)))
        .map_err(|e| broken("building the request", e))?;
    let response = super::sse::send_h1(endpoint, counters, request).await?;
    let ct = response
        .headers()
        .get("content-type")
        .map(|v| v.as_bytes())
        .unwrap_or(b"");
    if ct != STREAM_PROTO.as_bytes() {
        return Err(wrong(format!(
            "content type {:?} (expected {STREAM_PROTO})",
            String::from_utf8_lossy(ct)
        )));
    }
    Ok(Body::H1(response.into_body()))
}

/// Feed events from a Connect stream's envelopes.
pub(crate) struct ConnectSource {
    body: Body,
    buf: BytesMut,
    ended: bool,
}

impl ConnectSource {
    pub(crate) fn new(body: Body) -> ConnectSource {
        ConnectSource {
            body,
            buf: BytesMut::new(),
            ended: false,
        }
    }
}

/// One whole envelope at the front of `buf`, taken off it: (flags, message).
fn take_envelope(buf: &mut BytesMut) -> Result<Option<(u8, Bytes)>, Outcome> {
    let Some(&[flags, a, b, c, d]) = buf.first_chunk::<5>() else {
        return Ok(None);
    };
    let len = u32::from_be_bytes([a, b, c, d]) as usize;
    if len > MAX_MESSAGE {
        return Err(wrong(format!("an envelope of {len} bytes (at most {MAX_MESSAGE})")));
    }
    if buf.len() < 5 + len {
        return Ok(None);
    }
    buf.advance(5);
    Ok(Some((flags, buf.split_to(len).freeze())))
}

/// The outcome an end-of-stream message stands for: `None` for the clean
/// end (no `error`, or a null one).
pub(crate) fn end_of_stream(message: &[u8]) -> Result<Option<Outcome>, Outcome> {
    let end: serde_json::Value = serde_json::from_slice(message)
        .map_err(|e| wrong(format!("an end-of-stream message that is not JSON: {e}")))?;
    let Some(error) = end.get("error").filter(|e| !e.is_null()) else {
        return Ok(None);
    };
    let code = error.get("code").and_then(|c| c.as_str()).unwrap_or("unknown");
    let text = error.get("message").and_then(|m| m.as_str()).unwrap_or("");
    Ok(Some(Outcome::coded(
        StreamEndKind::GrpcStatus,
        grpc_number(code),
        format!("connect error {code}: {text}"),
    )))
}

/// A Connect code's gRPC number (2, unknown, for a name Connect does not define).
fn grpc_number(code: &str) -> i64 {
    const CODES: [&str; 17] = [
        "ok",
        "canceled",
        "unknown",
        "invalid_argument",
        "deadline_exceeded",
        "not_found",
        "already_exists",
        "permission_denied",
        "resource_exhausted",
        "failed_precondition",
        "aborted",
        "out_of_range",
        "unimplemented",
        "internal",
        "unavailable",
        "data_loss",
        "unauthenticated",
    ];
    CODES.iter().position(|&c| c == code).map_or(2, |n| n as i64)
}

impl MessageSource<FeedEvent> for ConnectSource {
    async fn next(&mut self) -> Result<Option<FeedEvent>, Outcome> {
        loop {
            while let Some((flags, message)) = take_envelope(&mut self.buf)? {
                if self.ended {
                    return Err(wrong("an envelope after the end-of-stream message".into()));
                }
                if flags & END_STREAM != 0 {
                    if let Some(failed) = end_of_stream(&message)? {
                        return Err(failed);
                    }
                    self.ended = true;
                    continue;
                }
                if flags != 0 {
                    return Err(wrong(format!(
                        "envelope flags {flags:#04x} (expected 0x00: no compression was offered)"
                    )));
                }
                return FeedEvent::decode(message)
                    .map(Some)
                    .map_err(|e| wrong(format!("undecodable event: {e}")));
            }
            match self.body.chunk().await? {
                Some(data) => self.buf.extend_from_slice(data.chunk()),
                None if self.ended && self.buf.is_empty() => return Ok(None),
                None if self.ended => return Err(wrong("bytes after the end-of-stream message".into())),
                None => {
                    return Err(Outcome::new(
                        StreamEndKind::Broken,
                        "the response ended without the end-of-stream message",
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_are_taken_whole_and_only_whole() {
        let mut buf = BytesMut::from(&[0u8, 0, 0, 0, 2, 8][..]);
        assert!(take_envelope(&mut buf).unwrap().is_none(), "a message cut short waits");
        buf.extend_from_slice(&[1, 2, 0, 0, 0, 2]);
        let (flags, message) = take_envelope(&mut buf).unwrap().unwrap();
        assert_eq!((flags, &message[..]), (0, &[8u8, 1][..]));
        assert_eq!(&buf[..], &[2, 0, 0, 0, 2], "the next envelope's start stays");
        let mut huge = BytesMut::from(&[0u8, 0xff, 0, 0, 0][..]);
        assert!(take_envelope(&mut huge).unwrap_err().message.contains("at most"));
    }

    #[test]
    fn the_end_of_stream_message_is_clean_or_an_error_with_grpc_s_number() {
        assert!(end_of_stream(b"{}").unwrap().is_none());
        assert!(end_of_stream(br#"{"metadata":{"a":["b"]}}"#).unwrap().is_none());
        assert!(end_of_stream(br#"{"error":null}"#).unwrap().is_none());
        let failed = end_of_stream(br#"{"error":{"code":"unavailable","message":"injected failure"}}"#)
            .unwrap()
            .unwrap();
        assert_eq!((failed.kind, failed.code), (StreamEndKind::GrpcStatus, Some(14)));
        assert_eq!(failed.message, "connect error unavailable: injected failure");
        let odd = end_of_stream(br#"{"error":{"code":"no_such_code"}}"#).unwrap().unwrap();
        assert_eq!(odd.code, Some(2));
        assert_eq!(grpc_number("unauthenticated"), 16);
        assert!(end_of_stream(b"not json").unwrap_err().message.contains("not JSON"));
    }
}
