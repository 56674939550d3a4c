//! WebSocket streams (RFC 6455 over HTTP/1.1, clear or TLS) on
//! `tokio-tungstenite`, the library the Rust server's WebSocket (axum)
//! is built on: the handshake, framing and masking are its; the engine's
//! own connection (`driver::net`) carries it, so bytes are counted as for
//! every other protocol.
//!
//! Why not the engine's own HTTP/1.1 driver: it writes a pre-encoded
//! request and parses one response; a WebSocket needs the upgrade, then
//! framing both ways with client masking, control frames (ping, close)
//! interleaved with data, and fragmented messages: a protocol of its own,
//! which tungstenite implements and keeps up to date.

use std::rc::Rc;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt as _, StreamExt as _};
use protobench_contract::pb::bench::StreamMessage;
use protobench_contract::stream::check::StreamEnd;
use protobench_model::stream::{Frames, StreamEndKind};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};

use super::record::Outcome;
use super::session::{MessageSink, MessageSource};
use crate::driver::ByteCounters;
use crate::driver::net::{Counted, Endpoint, Stream};

type Socket = WebSocketStream<Counted<Stream>>;

/// The largest message the engine accepts (as the gRPC limit).
const MAX_MESSAGE: usize = crate::driver::grpc::MAX_GRPC_MESSAGE;

fn broken(what: &str, e: impl std::fmt::Display) -> Outcome {
    Outcome::new(StreamEndKind::Broken, format!("{what}: {e}"))
}

/// Opens a connection and upgrades it on `path`; returns once the server's
/// `101 Switching Protocols` has been read.
pub(crate) async fn open(endpoint: &Endpoint, counters: &Rc<ByteCounters>, path: &str) -> Result<Socket, Outcome> {
    let io = endpoint.connect(counters).await.map_err(Outcome::from)?;
    // TLS, when asked, is already on `io`: the URL only names the host and path.
    let url = format!("ws://{}{path}", endpoint.authority);
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE));
    match tokio_tungstenite::client_async_with_config(url, io, Some(config)).await {
        Ok((socket, _response)) => Ok(socket),
        Err(tungstenite::Error::Http(response)) => {
            let status = response.status().as_u16();
            Err(Outcome::coded(
                StreamEndKind::HttpStatus,
                i64::from(status),
                format!("http status {status} to the WebSocket upgrade (expected 101)"),
            ))
        }
        Err(e) => Err(broken("WebSocket handshake", e)),
    }
}

/// Splits a socket into the engine's halves.
pub(crate) fn split(socket: Socket, frames: Frames) -> (WsSink, WsSource) {
    let (sink, stream) = socket.split();
    (WsSink { sink, frames }, WsSource { stream, frames })
}

/// The sending half: messages in the plan's frame type.
pub(crate) struct WsSink {
    sink: SplitSink<Socket, Message>,
    frames: Frames,
}

impl WsSink {
    /// Sends any contract message in the plan's frame type.
    pub(crate) async fn send_message<M: prost::Message + serde::Serialize>(
        &mut self,
        message: &M,
    ) -> Result<bool, Outcome> {
        let frame = match self.frames {
            Frames::Text => {
                Message::text(String::from_utf8(protobench_contract::stream::to_json(message)).expect("JSON is UTF-8"))
            }
            Frames::Binary => Message::binary(message.encode_to_vec()),
        };
        let (sent, blocked) = super::session::waited(self.sink.send(frame)).await;
        sent.map_err(|e| broken("sending a message", e))?;
        Ok(blocked)
    }
}

/// A WebSocket upload's sending half: its end is an empty frame of the
/// plan's type (no message encodes to zero bytes), not a close.
pub(crate) struct WsUploadSink(pub(crate) WsSink);

impl MessageSink for WsUploadSink {
    async fn send(&mut self, message: &StreamMessage) -> Result<bool, Outcome> {
        self.0.send_message(message).await
    }

    async fn finish(&mut self) -> Result<(), Outcome> {
        let empty = match self.0.frames {
            Frames::Text => Message::text(String::new()),
            Frames::Binary => Message::binary(Vec::new()),
        };
        self.0
            .sink
            .send(empty)
            .await
            .map_err(|e| broken("ending the upload", e))
    }
}

impl MessageSink for WsSink {
    async fn send(&mut self, message: &StreamMessage) -> Result<bool, Outcome> {
        self.send_message(message).await
    }

    async fn finish(&mut self) -> Result<(), Outcome> {
        // The client's close (1000); the server answers it with its own
        // once every reply is out, and that close is the clean end.
        let close = tungstenite::protocol::CloseFrame {
            code: tungstenite::protocol::frame::coding::CloseCode::Normal,
            reason: "".into(),
        };
        self.sink
            .send(Message::Close(Some(close)))
            .await
            .map_err(|e| broken("sending the close", e))
    }
}

/// The receiving half: messages decoded from the plan's frame type, then
/// the server's close.
pub(crate) struct WsSource {
    stream: SplitStream<Socket>,
    frames: Frames,
}

impl<M: prost::Message + Default + serde::de::DeserializeOwned> MessageSource<M> for WsSource {
    async fn next(&mut self) -> Result<Option<M>, Outcome> {
        loop {
            let message = match self.stream.next().await {
                None => {
                    return Err(Outcome::new(
                        StreamEndKind::Broken,
                        "the connection closed without a close frame",
                    ));
                }
                Some(Err(e)) => return Err(broken("reading the stream", e)),
                Some(Ok(message)) => message,
            };
            let decoded = match (message, self.frames) {
                (Message::Text(text), Frames::Text) => protobench_contract::stream::from_json::<M>(text.as_bytes()),
                (Message::Binary(bytes), Frames::Binary) => protobench_contract::stream::from_protobuf::<M>(&bytes),
                (Message::Close(frame), _) => {
                    let (code, reason) = frame.map_or((None, String::new()), |f| {
                        (Some(u16::from(f.code)), f.reason.to_string())
                    });
                    return match StreamEnd::from_close(code, &reason) {
                        StreamEnd::Clean => Ok(None),
                        StreamEnd::Close { code, reason } => Err(Outcome::coded(
                            StreamEndKind::Close,
                            i64::from(code),
                            format!("close code {code}: {reason}"),
                        )),
                        other => Err(Outcome::new(StreamEndKind::Broken, other.to_string())),
                    };
                }
                (Message::Ping(_) | Message::Pong(_) | Message::Frame(_), _) => continue,
                (other, frames) => {
                    return Err(Outcome::new(
                        StreamEndKind::WrongMessage,
                        format!(
                            "a {} frame where {} frames were expected",
                            if other.is_text() { "text" } else { "binary" },
                            frames.name()
                        ),
                    ));
                }
            };
            return decoded
                .map(Some)
                .map_err(|e| Outcome::new(StreamEndKind::WrongMessage, format!("undecodable message: {e}")));
        }
    }
}
