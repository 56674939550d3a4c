//! Server-Sent Events: `GET /v1/stream/sse?...` over HTTP/1.1 (hyper's
//! client connection on the engine's counted socket) or HTTP/2 (an `h2`
//! stream), the `text/event-stream` body parsed as it arrives into the
//! contract's feed events.

use std::rc::Rc;

use bytes::{Buf as _, Bytes, BytesMut};
use http_body_util::{BodyExt as _, Empty};
use hyper::body::Incoming;
use protobench_contract::pb::bench::FeedEvent;
use protobench_contract::stream::{SSE_END_EVENT, SSE_EVENT};
use protobench_model::stream::StreamEndKind;

use super::grpc::H2Body;
use super::record::Outcome;
use super::session::MessageSource;
use crate::driver::ByteCounters;
use crate::driver::net::Endpoint;

/// The longest line the parser holds (a 1,395-item event is about 500 KB of JSON).
const MAX_LINE: usize = 16 << 20;

fn broken(what: &str, e: impl std::fmt::Display) -> Outcome {
    Outcome::new(StreamEndKind::Broken, format!("{what}: {e}"))
}

fn status(code: u16) -> Outcome {
    Outcome::coded(
        StreamEndKind::HttpStatus,
        i64::from(code),
        format!("http status {code} (expected 200)"),
    )
}

/// The body of an SSE response (or of a Connect stream), as either version carries it.
pub(crate) enum Body {
    H1(Incoming),
    H2(H2Body),
}

impl Body {
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>, Outcome> {
        match self {
            Body::H2(body) => body.chunk().await,
            Body::H1(body) => loop {
                match body.frame().await {
                    None => return Ok(None),
                    Some(Err(e)) => return Err(broken("reading the stream", e)),
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            return Ok(Some(data));
                        }
                    }
                }
            },
        }
    }
}

/// Opens an SSE stream over HTTP/1.1 on its own connection; returns once
/// the response head (200, `text/event-stream`) is in.
pub(crate) async fn open_h1(
    endpoint: &Endpoint,
    counters: &Rc<ByteCounters>,
    path_and_query: &str,
) -> Result<Body, Outcome> {
    let request = http::Request::get(path_and_query)
        .header("host", &endpoint.authority)
        .header("accept", "text/event-stream")
        .body(Empty::<Bytes>::new())
        .map_err(|e| broken("building the request", e))?;
    let response = send_h1(endpoint, counters, request).await?;
    super::grpc::content_type(response.headers(), super::grpc::Kind::EventStream)?;
    Ok(Body::H1(response.into_body()))
}

/// Sends `request` on an HTTP/1.1 connection of its own (hyper's client
/// on the engine's counted socket); returns the response once its head,
/// status 200, is in (another status is the stream's `http_status` end).
pub(crate) async fn send_h1<B>(
    endpoint: &Endpoint,
    counters: &Rc<ByteCounters>,
    request: http::Request<B>,
) -> Result<http::Response<Incoming>, Outcome>
where
    B: hyper::body::Body + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let io = endpoint.connect(counters).await.map_err(Outcome::from)?;
    let (mut send, connection) = hyper::client::conn::http1::handshake::<_, B>(hyper_util::rt::TokioIo::new(io))
        .await
        .map_err(|e| broken("HTTP/1.1 connection", e))?;
    tokio::task::spawn_local(async move {
        let _ = connection.await;
    });
    let response = send
        .send_request(request)
        .await
        .map_err(|e| broken("waiting for the response head", e))?;
    if response.status() != http::StatusCode::OK {
        return Err(status(response.status().as_u16()));
    }
    Ok(response)
}

/// Feed events parsed from an event stream: `event: feed` with the
/// event's JSON as its data; `event: end` and then the response's end is
/// the clean end.
pub(crate) struct SseSource {
    body: Body,
    buf: BytesMut,
    event: String,
    data: String,
    ended: bool,
}

impl SseSource {
    pub(crate) fn new(body: Body) -> SseSource {
        SseSource {
            body,
            buf: BytesMut::new(),
            event: String::new(),
            data: String::new(),
            ended: false,
        }
    }

    /// Takes one line from the buffer (without its CR LF or LF).
    fn line(&mut self) -> Option<Result<String, Outcome>> {
        let end = self.buf.iter().position(|&b| b == b'\n')?;
        let mut line = self.buf.split_to(end + 1);
        line.truncate(end);
        if line.last() == Some(&b'\r') {
            line.truncate(end - 1);
        }
        Some(
            String::from_utf8(line.to_vec())
                .map_err(|_| Outcome::new(StreamEndKind::WrongMessage, "an event-stream line that is not UTF-8")),
        )
    }

    /// Applies one line; a dispatched event comes back as (type, data).
    fn apply(&mut self, line: &str) -> Option<(String, String)> {
        if line.is_empty() {
            if self.data.is_empty() && self.event.is_empty() {
                return None;
            }
            return Some((std::mem::take(&mut self.event), std::mem::take(&mut self.data)));
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                if !self.data.is_empty() {
                    self.data.push('\n');
                }
                self.data.push_str(value);
            }
            _ => {}
        }
        None
    }
}

impl MessageSource<FeedEvent> for SseSource {
    async fn next(&mut self) -> Result<Option<FeedEvent>, Outcome> {
        loop {
            while let Some(line) = self.line() {
                let line = line?;
                let Some((event, data)) = self.apply(&line) else {
                    continue;
                };
                if self.ended {
                    return Err(Outcome::new(
                        StreamEndKind::WrongMessage,
                        format!("an event of type {event:?} after the end event"),
                    ));
                }
                if event == SSE_EVENT {
                    return protobench_contract::stream::from_json::<FeedEvent>(data.as_bytes())
                        .map(Some)
                        .map_err(|e| Outcome::new(StreamEndKind::WrongMessage, format!("undecodable event: {e}")));
                }
                if event == SSE_END_EVENT {
                    self.ended = true;
                } else {
                    return Err(Outcome::new(
                        StreamEndKind::WrongMessage,
                        format!("an event of type {event:?} (expected {SSE_EVENT} or {SSE_END_EVENT})"),
                    ));
                }
            }
            if self.buf.len() > MAX_LINE {
                return Err(Outcome::new(
                    StreamEndKind::WrongMessage,
                    format!("an event-stream line over {MAX_LINE} bytes"),
                ));
            }
            match self.body.chunk().await? {
                Some(data) => self.buf.extend_from_slice(data.chunk()),
                None if self.ended => return Ok(None),
                None => {
                    return Err(Outcome::new(
                        StreamEndKind::Broken,
                        "the response ended without the end event",
                    ));
                }
            }
        }
    }
}
