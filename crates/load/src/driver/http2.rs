//! HTTP/2 on the `h2` crate: `rest-h2` (JSON), `grpc` (gRPC framing) and
//! custom HTTP/2 or gRPC calls.
//!
//! Clear text is h2c with prior knowledge; with TLS, ALPN must select `h2`.
//! Calls on one connection are streams of one `SendRequest`, so concurrent
//! callers multiplex over `connections` connections. The request head and
//! body are built once; each call clones them (reference-counted bytes).

use std::cell::Cell;
use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri};
use protobench_model::load::ErrorKind;

use super::net::Endpoint;
use super::{ByteCounters, CallError, Driver, GrpcStatus, Response};

/// Stream-level receive window (bytes): large enough that the largest
/// contract response (3.4 MB) never waits for a window update.
const STREAM_WINDOW: u32 = 8 * 1024 * 1024;
/// Connection-level receive window (bytes).
const CONNECTION_WINDOW: u32 = 64 * 1024 * 1024;

/// The HTTP/2 driver.
pub(crate) struct Http2 {
    endpoint: Endpoint,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
    grpc: bool,
}

/// A handle on one HTTP/2 connection.
pub(crate) struct Conn {
    send: h2::client::SendRequest<Bytes>,
    alive: Rc<Cell<bool>>,
}

/// Why an HTTP/2 driver could not be built.
#[derive(Debug, thiserror::Error)]
pub enum Http2Error {
    /// A header name or value is not valid HTTP.
    #[error("invalid header {0:?}")]
    Header(String),
    /// The path does not form a valid URI.
    #[error("invalid path {0:?}")]
    Path(String),
}

impl Http2 {
    /// A driver for `method path` with `headers` and `body`; `grpc` frames the
    /// body and reads `grpc-status`.
    pub(crate) fn new(
        endpoint: Endpoint,
        method: &str,
        path: &str,
        headers: &[(String, String)],
        body: &[u8],
        grpc: bool,
    ) -> Result<Http2, Http2Error> {
        let uri: Uri = format!("{}://{}{}", endpoint.scheme(), endpoint.authority, path)
            .parse()
            .map_err(|_| Http2Error::Path(path.to_owned()))?;
        let method = Method::from_bytes(method.as_bytes()).map_err(|_| Http2Error::Header(method.to_owned()))?;
        let mut map = HeaderMap::new();
        map.insert(http::header::USER_AGENT, HeaderValue::from_static("protobench"));
        if grpc {
            map.insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
            map.insert(http::header::TE, HeaderValue::from_static("trailers"));
        }
        for (name, value) in headers {
            let n = HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes())
                .map_err(|_| Http2Error::Header(name.clone()))?;
            let v = HeaderValue::from_str(value).map_err(|_| Http2Error::Header(format!("{name}: {value}")))?;
            map.insert(n, v);
        }
        let body = if grpc {
            let mut framed = BytesMut::with_capacity(5 + body.len());
            framed.extend_from_slice(&[0]);
            framed.extend_from_slice(&(body.len() as u32).to_be_bytes());
            framed.extend_from_slice(body);
            framed.freeze()
        } else {
            Bytes::copy_from_slice(body)
        };
        Ok(Http2 {
            endpoint,
            method,
            uri,
            headers: map,
            body,
            grpc,
        })
    }

    fn request(&self) -> Request<()> {
        let mut req = Request::new(());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }
}

fn h2_error(context: &str, e: &h2::Error) -> CallError {
    let kind = if e.is_io() || e.is_go_away() || e.is_reset() || e.is_remote() {
        ErrorKind::Reset
    } else {
        ErrorKind::Other
    };
    CallError::new(kind, format!("{context}: {e}"))
}

impl Driver for Http2 {
    type Conn = Conn;

    async fn connect(&self, counters: &Rc<ByteCounters>) -> Result<Conn, CallError> {
        let io = self.endpoint.connect(counters).await?;
        if self.endpoint.tls.is_some() && io.inner.alpn() != Some(b"h2") {
            return Err(CallError::new(
                ErrorKind::Connect,
                format!(
                    "server at {} did not select HTTP/2 (ALPN h2) in the TLS handshake",
                    self.endpoint.addr
                ),
            ));
        }
        let (send, connection) = h2::client::Builder::new()
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .handshake::<_, Bytes>(io)
            .await
            .map_err(|e| {
                CallError::new(
                    ErrorKind::Connect,
                    format!("HTTP/2 handshake with {}: {e}", self.endpoint.addr),
                )
            })?;
        let alive = Rc::new(Cell::new(true));
        let flag = alive.clone();
        tokio::task::spawn_local(async move {
            let _ = connection.await;
            flag.set(false);
        });
        Ok(Conn { send, alive })
    }

    async fn call(&self, conn: &mut Conn, keep_body: bool) -> Result<Response, CallError> {
        let result = self.exchange(conn, keep_body).await;
        if let Err(e) = &result
            && e.kind == ErrorKind::Reset
        {
            conn.alive.set(false);
        }
        result
    }

    fn share(&self, conn: &Conn) -> Option<Conn> {
        Some(Conn {
            send: conn.send.clone(),
            alive: conn.alive.clone(),
        })
    }

    fn is_usable(&self, conn: &Conn) -> bool {
        conn.alive.get()
    }
}

impl Http2 {
    async fn exchange(&self, conn: &mut Conn, keep_body: bool) -> Result<Response, CallError> {
        std::future::poll_fn(|cx| conn.send.poll_ready(cx))
            .await
            .map_err(|e| h2_error("opening a stream", &e))?;
        let end = self.body.is_empty();
        let (response, mut stream) = conn
            .send
            .send_request(self.request(), end)
            .map_err(|e| h2_error("sending the request", &e))?;
        if !end {
            stream
                .send_data(self.body.clone(), true)
                .map_err(|e| h2_error("sending the request body", &e))?;
        }
        let response = response.await.map_err(|e| h2_error("reading the response", &e))?;
        let (parts, mut recv) = response.into_parts();
        let status = parts.status.as_u16();
        // A gRPC call answered by something that is not gRPC (an HTTP/2 REST
        // port: 404, text/plain): its body is not gRPC frames, and the check
        // counts it by its HTTP status or content type.
        // (A trailers-only answer carrying grpc-status is gRPC even if a
        // server left its content type out.)
        let not_grpc = self.grpc
            && (status != 200
                || !(parts.headers.contains_key("grpc-status")
                    || parts
                        .headers
                        .get(http::header::CONTENT_TYPE)
                        .is_some_and(|v| is_grpc_content_type(v.as_bytes()))));
        let keep = keep_body || not_grpc || !(200..300).contains(&status);
        let content_type = if keep {
            parts
                .headers
                .get(http::header::CONTENT_TYPE)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        } else {
            None
        };
        let mut kept = if keep { Some(BytesMut::new()) } else { None };
        let mut deframer = Deframer::default();
        let mut len = 0;
        while let Some(chunk) = recv.data().await {
            let chunk = chunk.map_err(|e| h2_error("reading the response body", &e))?;
            let _ = recv.flow_control().release_capacity(chunk.len());
            len += chunk.len();
            if self.grpc && !not_grpc {
                deframer.feed(&chunk);
            }
            if let Some(k) = kept.as_mut() {
                k.extend_from_slice(&chunk);
            }
        }
        let mut grpc = None;
        if self.grpc && not_grpc {
            return Ok(Response {
                status,
                content_type: Some(content_type.unwrap_or_default()),
                body_len: len,
                body: kept.map(BytesMut::freeze),
                grpc: None,
                grpc_messages: 0,
            });
        }
        if self.grpc {
            // Trailers-only responses carry grpc-status in the headers.
            grpc = grpc_status(&parts.headers);
            if grpc.is_none() {
                let trailers = recv
                    .trailers()
                    .await
                    .map_err(|e| h2_error("reading the trailers", &e))?;
                grpc = trailers.as_ref().and_then(grpc_status);
            }
            if grpc.is_none() && status == 200 {
                grpc = Some(GrpcStatus {
                    code: 2,
                    message: "response without grpc-status".into(),
                });
            }
            if deframer.compressed {
                return Err(CallError::new(
                    ErrorKind::WrongResponse,
                    "compressed gRPC message (not requested)",
                ));
            }
            if deframer.partial() {
                return Err(CallError::new(ErrorKind::WrongResponse, "truncated gRPC message frame"));
            }
        }
        let (body, body_len) = if self.grpc {
            let body = kept.map(|k| {
                let k = k.freeze();
                if k.len() >= 5 {
                    k.slice(5..k.len().min(5 + deframer.first_len))
                } else {
                    k
                }
            });
            (body, deframer.message_bytes)
        } else {
            (kept.map(BytesMut::freeze), len)
        };
        Ok(Response {
            status,
            content_type,
            body,
            body_len,
            grpc,
            grpc_messages: deframer.messages,
        })
    }
}

/// `application/grpc`, optionally `+proto`/`+json` or `;` parameters.
pub(crate) fn is_grpc_content_type(v: &[u8]) -> bool {
    v.strip_prefix(b"application/grpc")
        .is_some_and(|rest| rest.is_empty() || rest[0] == b'+' || rest[0] == b';')
}

fn grpc_status(headers: &HeaderMap) -> Option<GrpcStatus> {
    let code = headers.get("grpc-status")?.to_str().ok()?.trim().parse().ok()?;
    let message = headers
        .get("grpc-message")
        .map(|v| percent_decode(v.as_bytes()))
        .unwrap_or_default();
    Some(GrpcStatus { code, message })
}

fn percent_decode(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"), 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Splits a gRPC response body into length-prefixed messages as it arrives.
#[derive(Default)]
struct Deframer {
    head: [u8; 5],
    head_len: usize,
    left: usize,
    messages: u32,
    message_bytes: usize,
    first_len: usize,
    compressed: bool,
}

impl Deframer {
    fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.left > 0 {
                let t = self.left.min(data.len());
                self.left -= t;
                self.message_bytes += t;
                data = &data[t..];
                continue;
            }
            let t = (5 - self.head_len).min(data.len());
            self.head[self.head_len..self.head_len + t].copy_from_slice(&data[..t]);
            self.head_len += t;
            data = &data[t..];
            if self.head_len == 5 {
                self.compressed |= self.head[0] != 0;
                self.left = u32::from_be_bytes([self.head[1], self.head[2], self.head[3], self.head[4]]) as usize;
                if self.messages == 0 {
                    self.first_len = self.left;
                }
                self.messages += 1;
                self.head_len = 0;
            }
        }
    }

    fn partial(&self) -> bool {
        self.left > 0 || self.head_len > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deframer_handles_frames_split_anywhere() {
        let mut body = vec![0, 0, 0, 0, 3, b'a', b'b', b'c', 0, 0, 0, 0, 0];
        body.extend_from_slice(&[0, 0, 0, 0, 1, b'z']);
        for split in 0..body.len() {
            let mut d = Deframer::default();
            d.feed(&body[..split]);
            d.feed(&body[split..]);
            assert_eq!(
                (d.messages, d.message_bytes, d.first_len, d.partial()),
                (3, 4, 3, false),
                "split {split}"
            );
        }
    }

    #[test]
    fn grpc_message_is_percent_decoded() {
        assert_eq!(percent_decode(b"injected%20failure"), "injected failure");
        assert_eq!(percent_decode(b"100%"), "100%");
    }
}
