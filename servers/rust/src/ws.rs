//! WebSocket on the `rest` and `rest-h2` listeners (RFC 6455 over HTTP/1.1,
//! RFC 8441 over HTTP/2): the echo stream, the subscription and the upload.
//!
//! A text frame carries a message's canonical JSON, a binary frame its
//! protobuf; a reply goes in the frame type of the message it answers. A
//! call is admitted before the upgrade (an injected failure is the contract's
//! HTTP 500 JSON error, no WebSocket). Endings, as close codes: 1000 the
//! clean end (after the last event, after an upload's summary, or in answer
//! to the client's close), 1007 a message that does not decode or is
//! invalid, 1008 more than `MAX_STREAM_MESSAGES` messages or no message
//! for the idle timeout while one is awaited, 1009 a message over
//! `PROTOBENCH_MAX_REQUEST_BYTES` (enforced by the WebSocket library before
//! the message is buffered whole).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use bytes::Bytes;
use protobench_contract::pb::bench::{StreamMessage, SubscribeRequest};
use protobench_contract::stream::{
    self, CLOSE_INVALID, CLOSE_NORMAL, CLOSE_POLICY, CLOSE_TOO_BIG, MAX_STREAM_MESSAGES, Tally,
};

use crate::core::Core;
use crate::feed::Feed;

/// How long the server waits for the client's answer to its close frame.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// The longest close reason the protocol allows (a control frame holds 125
/// bytes, two of them the code).
const MAX_REASON: usize = 123;

/// The upgrade request, or why it is not one.
type Upgrade = Result<WebSocketUpgrade, WebSocketUpgradeRejection>;

/// Admits the call and applies the message size limit, or answers the
/// contract's HTTP error (a request that is no WebSocket upgrade gets the
/// library's status, e.g. 426 or 400, with its reason in the JSON body).
async fn admit(core: &Core, upgrade: Upgrade) -> Result<WebSocketUpgrade, Response> {
    let upgrade = upgrade.map_err(|r| crate::json_error::error(r.status(), &r.body_text()))?;
    core.admit().await.map_err(crate::json_error::call_error)?;
    Ok(upgrade
        .max_message_size(core.max_request_bytes)
        .max_frame_size(core.max_request_bytes))
}

/// `GET` (or HTTP/2 `CONNECT`) [`stream::WS_ECHO_PATH`].
pub(crate) async fn echo(State(core): State<Arc<Core>>, upgrade: Upgrade) -> Response {
    match admit(&core, upgrade).await {
        Ok(upgrade) => upgrade.on_upgrade(move |socket| echo_messages(socket, core)),
        Err(response) => response,
    }
}

/// `GET` (or HTTP/2 `CONNECT`) [`stream::WS_SUBSCRIBE_PATH`].
pub(crate) async fn subscribe(State(core): State<Arc<Core>>, upgrade: Upgrade) -> Response {
    match admit(&core, upgrade).await {
        Ok(upgrade) => upgrade.on_upgrade(move |socket| send_feed(socket, core)),
        Err(response) => response,
    }
}

/// `GET` (or HTTP/2 `CONNECT`) [`stream::WS_UPLOAD_PATH`].
pub(crate) async fn upload(State(core): State<Arc<Core>>, upgrade: Upgrade) -> Response {
    match admit(&core, upgrade).await {
        Ok(upgrade) => upgrade.on_upgrade(move |socket| tally_upload(socket, core)),
        Err(response) => response,
    }
}

/// The encoding a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    Text,
    Binary,
}

/// What the client sent next.
enum Next {
    /// A data frame: its type and bytes.
    Data(Frame, Bytes),
    /// The client closed (its close frame is answered by the library) or
    /// the connection ended.
    Gone,
    /// The stream must end with this close code and reason.
    Fail(u16, String),
}

/// Waits for the client's next data frame, at most the idle timeout.
async fn next(socket: &mut WebSocket, idle: Duration) -> Next {
    loop {
        let received = match tokio::time::timeout(idle, socket.recv()).await {
            Err(_) => return Next::Fail(CLOSE_POLICY, format!("no message for {}s", idle.as_secs())),
            Ok(None) => return Next::Gone,
            Ok(Some(received)) => received,
        };
        match received {
            Ok(Message::Text(text)) => return Next::Data(Frame::Text, Bytes::from(text.as_str().to_owned())),
            Ok(Message::Binary(bytes)) => return Next::Data(Frame::Binary, bytes),
            Ok(Message::Ping(_) | Message::Pong(_)) => continue,
            Ok(Message::Close(_)) => {
                // Let the library send the close reply, then end.
                while let Ok(Some(_)) = tokio::time::timeout(CLOSE_WAIT, socket.recv()).await {}
                return Next::Gone;
            }
            Err(err) => return failure(err),
        }
    }
}

/// The close code for a receive error: 1009 for a message or frame over the
/// limit, 1007 for a text frame that is not UTF-8, else the connection is gone.
fn failure(err: axum::Error) -> Next {
    match err.into_inner().downcast::<tungstenite::Error>() {
        Ok(err) => match *err {
            tungstenite::Error::Capacity(capacity) => Next::Fail(CLOSE_TOO_BIG, capacity.to_string()),
            tungstenite::Error::Utf8(_) => Next::Fail(CLOSE_INVALID, "a text frame that is not UTF-8".into()),
            _ => Next::Gone,
        },
        Err(_) => Next::Gone,
    }
}

/// Sends a close frame and waits (briefly) for the client's reply.
async fn close(mut socket: WebSocket, code: u16, reason: &str) {
    let mut end = reason.len().min(MAX_REASON);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let frame = CloseFrame {
        code,
        reason: Utf8Bytes::from(&reason[..end]),
    };
    if socket.send(Message::Close(Some(frame))).await.is_err() {
        return;
    }
    let _ = tokio::time::timeout(CLOSE_WAIT, async { while let Some(Ok(_)) = socket.recv().await {} }).await;
}

fn decode<T>(frame: Frame, bytes: &[u8]) -> Result<T, String>
where
    T: prost::Message + Default + serde::de::DeserializeOwned,
{
    match frame {
        Frame::Text => stream::from_json(bytes),
        Frame::Binary => stream::from_protobuf(bytes),
    }
    .map_err(|e| e.to_string())
}

fn encode<T: prost::Message + serde::Serialize>(frame: Frame, message: &T) -> Message {
    match frame {
        Frame::Text => Message::Text(Utf8Bytes::from(
            String::from_utf8(stream::to_json(message)).expect("JSON is UTF-8"),
        )),
        Frame::Binary => Message::Binary(Bytes::from(message.encode_to_vec())),
    }
}

async fn echo_messages(mut socket: WebSocket, core: Arc<Core>) {
    let mut count = 0u32;
    loop {
        let (frame, bytes) = match next(&mut socket, core.idle_timeout).await {
            Next::Data(frame, bytes) => (frame, bytes),
            Next::Gone => return,
            Next::Fail(code, reason) => return close(socket, code, &reason).await,
        };
        if count == MAX_STREAM_MESSAGES {
            return close(socket, CLOSE_POLICY, &stream::TooManyMessages.to_string()).await;
        }
        count += 1;
        let message: StreamMessage = match decode(frame, &bytes) {
            Ok(message) => message,
            Err(reason) => return close(socket, CLOSE_INVALID, &reason).await,
        };
        if socket.send(encode(frame, &message)).await.is_err() {
            return;
        }
    }
}

async fn send_feed(mut socket: WebSocket, core: Arc<Core>) {
    let (frame, bytes) = match next(&mut socket, core.idle_timeout).await {
        Next::Data(frame, bytes) => (frame, bytes),
        Next::Gone => return,
        Next::Fail(code, reason) => return close(socket, code, &reason).await,
    };
    let request: SubscribeRequest = match decode(frame, &bytes) {
        Ok(request) => request,
        Err(reason) => return close(socket, CLOSE_INVALID, &reason).await,
    };
    if let Err(err) = stream::validate_subscribe(&request) {
        return close(socket, CLOSE_INVALID, &err.to_string()).await;
    }
    let mut feed = Feed::new(&core, request, 0);
    loop {
        tokio::select! {
            event = feed.next() => match event {
                Some(event) => {
                    if socket.send(encode(frame, &event)).await.is_err() {
                        return;
                    }
                }
                None => return close(socket, CLOSE_NORMAL, "").await,
            },
            // The client may only close (or go away) during a subscription.
            received = socket.recv() => match received {
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {
                    while let Ok(Some(_)) = tokio::time::timeout(CLOSE_WAIT, socket.recv()).await {}
                    return;
                }
                Some(Ok(_)) => {
                    return close(socket, CLOSE_INVALID, "no message is expected during a subscription").await;
                }
            },
        }
    }
}

async fn tally_upload(mut socket: WebSocket, core: Arc<Core>) {
    let mut tally = Tally::default();
    loop {
        let (frame, bytes) = match next(&mut socket, core.idle_timeout).await {
            Next::Data(frame, bytes) => (frame, bytes),
            Next::Gone => return,
            Next::Fail(code, reason) => return close(socket, code, &reason).await,
        };
        // An empty frame ends the upload (no message of it is empty: seq >= 1).
        if bytes.is_empty() {
            if socket.send(encode(frame, &tally.summary())).await.is_ok() {
                close(socket, CLOSE_NORMAL, "").await;
            }
            return;
        }
        let message: StreamMessage = match decode(frame, &bytes) {
            Ok(message) => message,
            Err(reason) => return close(socket, CLOSE_INVALID, &reason).await,
        };
        if let Err(err) = tally.add(&message) {
            return close(socket, CLOSE_POLICY, &err.to_string()).await;
        }
    }
}
