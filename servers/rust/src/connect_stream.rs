//! Connect server streaming on the `connect` listener: the subscription,
//! `POST /protobench.v1.Streams/Subscribe`.
//!
//! The request body is one enveloped message (`application/connect+proto`
//! or `application/connect+json`): a flags byte, the message's length
//! (4 bytes, big-endian), the message. The answer is 200 in the same
//! media type with the feed's events enveloped the same way, then the
//! end-of-stream envelope (flag `0x02`) holding JSON: `{}` when the feed
//! ran to its end, `{"error":{"code","message"}}` otherwise. Connect
//! carries a streaming call's errors in that last envelope, so a bad
//! request or an injected failure is also 200 with no event before it;
//! only a request whose media type is not Connect's is refused with an
//! HTTP status (415). As for gRPC's subscription, the request is checked
//! first, then the call is admitted (service time, failure draw) before
//! the first event, and events are built one at a time as the client
//! reads them. Not served: compressed envelopes (`unimplemented`) and
//! `Connect-Timeout-Ms`.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::{BufMut as _, Bytes, BytesMut};
use futures_util::stream::unfold;
use prost::Message as _;
use protobench_contract::pb::bench::SubscribeRequest;
use protobench_contract::stream;

use crate::body;
use crate::connect_code::{Code, code_of, connect_error_with_status, read_body};
use crate::core::Core;
use crate::feed::Feed;

/// A stream of protobuf messages.
pub(crate) const STREAM_PROTO: &str = "application/connect+proto";
/// A stream of JSON messages.
pub(crate) const STREAM_JSON: &str = "application/connect+json";
/// The flag of the end-of-stream envelope.
const END_STREAM: u8 = 0x02;
/// The flag of a compressed message.
const COMPRESSED: u8 = 0x01;

/// `POST /protobench.v1.Streams/Subscribe` with an enveloped
/// `SubscribeRequest`.
pub(crate) async fn subscribe(core: Arc<Core>, request: Request) -> Response {
    let headers = request.headers();
    let (json, media) = if body::has_content_type(headers, STREAM_PROTO) {
        (false, STREAM_PROTO)
    } else if body::has_content_type(headers, STREAM_JSON) {
        (true, STREAM_JSON)
    } else {
        let found = body::content_type(headers);
        return connect_error_with_status(
            Code::Unknown,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &format!("content type {found} is not supported for a stream; expected {STREAM_PROTO} or {STREAM_JSON}"),
        );
    };
    let answer = |code: Code, message: &str| ended(media, code, message);
    if let Some(v) = headers.get("connect-content-encoding")
        && !v.as_bytes().eq_ignore_ascii_case(b"identity")
    {
        let found = String::from_utf8_lossy(v.as_bytes()).into_owned();
        return answer(
            Code::Unimplemented,
            &format!("connect-content-encoding {found:?} is not supported; send the stream uncompressed"),
        );
    }
    let bytes = match read_body(request, &core, answer).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let request = match unenvelope(&bytes).and_then(|m| decode(m, json)) {
        Ok(request) => request,
        Err(message) => return answer(Code::InvalidArgument, &message),
    };
    if let Err(err) = stream::validate_subscribe(&request) {
        return answer(Code::InvalidArgument, &err.to_string());
    }
    if let Err(err) = core.admit().await {
        let (code, message) = code_of(err);
        return answer(code, &message);
    }
    let feed = Feed::new(&core, request, 0);
    let envelopes = unfold(Some(feed), move |feed| async move {
        let mut feed = feed?;
        Some(match feed.next().await {
            Some(event) => {
                let message = if json {
                    stream::to_json(&event)
                } else {
                    event.encode_to_vec()
                };
                (Ok::<_, Infallible>(envelope(0, &message)), Some(feed))
            }
            None => (Ok(envelope(END_STREAM, b"{}")), None),
        })
    });
    response(media, Body::from_stream(envelopes))
}

/// The one message of a request body: exactly one uncompressed envelope.
fn unenvelope(body: &[u8]) -> Result<&[u8], String> {
    let Some((&[flags, a, b, c, d], message)) = body.split_first_chunk::<5>() else {
        return Err(format!(
            "a request of {} bytes; expected one enveloped message (a 5-byte prefix, then the message)",
            body.len()
        ));
    };
    if flags & COMPRESSED != 0 {
        return Err("a compressed message; send it uncompressed".into());
    }
    if flags != 0 {
        return Err(format!(
            "envelope flags {flags:#04x}; expected 0x00 for a request message"
        ));
    }
    let len = u32::from_be_bytes([a, b, c, d]) as usize;
    if len != message.len() {
        return Err(format!(
            "the envelope announces {len} bytes and {} follow; expected exactly one message",
            message.len()
        ));
    }
    Ok(message)
}

fn decode(message: &[u8], json: bool) -> Result<SubscribeRequest, String> {
    if json {
        stream::from_json::<SubscribeRequest>(message).map_err(|e| e.to_string())
    } else {
        SubscribeRequest::decode(message).map_err(|e| format!("undecodable SubscribeRequest: {e}"))
    }
}

/// One envelope: `flags`, the length, `message`.
fn envelope(flags: u8, message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(5 + message.len());
    out.put_u8(flags);
    out.put_u32(u32::try_from(message.len()).expect("a message under 4 GiB"));
    out.put_slice(message);
    out.freeze()
}

/// A stream that ends at once with `code`: 200 and the end envelope alone.
fn ended(media: &'static str, code: Code, message: &str) -> Response {
    let end = serde_json::json!({ "error": { "code": code.name(), "message": message } });
    response(media, Body::from(envelope(END_STREAM, end.to_string().as_bytes())))
}

fn response(media: &'static str, body: Body) -> Response {
    ([(header::CONTENT_TYPE, HeaderValue::from_static(media))], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_exactly_one_uncompressed_envelope() {
        assert_eq!(unenvelope(&[0, 0, 0, 0, 2, 8, 1]), Ok(&[8u8, 1][..]));
        assert!(unenvelope(&[0, 0, 0]).unwrap_err().contains("3 bytes"));
        assert!(unenvelope(&[1, 0, 0, 0, 0]).unwrap_err().contains("compressed"));
        assert!(unenvelope(&[2, 0, 0, 0, 0]).unwrap_err().contains("0x02"));
        assert!(
            unenvelope(&[0, 0, 0, 0, 1])
                .unwrap_err()
                .contains("announces 1 bytes and 0 follow")
        );
        assert!(
            unenvelope(&[0, 0, 0, 0, 0, 9])
                .unwrap_err()
                .contains("announces 0 bytes and 1 follow")
        );
        assert_eq!(&envelope(END_STREAM, b"{}")[..], &[2, 0, 0, 0, 2, b'{', b'}']);
    }
}
