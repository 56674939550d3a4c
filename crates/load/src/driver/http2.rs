//! HTTP/2: `rest-h2` (JSON), `grpc` (gRPC framing) and custom HTTP/2 or
//! gRPC calls, on the engine's own HTTP/2 client ([`super::h2conn`]).
//!
//! Clear text is h2c with prior knowledge; with TLS, ALPN must select `h2`.
//! Calls on one connection are streams of it, so concurrent callers
//! multiplex over `connections` connections. The request's header block and
//! body are built once; each call writes them (the body is reference-counted
//! bytes).

use bytes::{Bytes, BytesMut};
use http::{HeaderName, HeaderValue, Method};
use protobench_model::load::ErrorKind;
use std::rc::Rc;

use super::h2conn::{self, Windows};
use super::hpack::HeaderBlock;
use super::net::Endpoint;
use super::{ByteCounters, CallError, Driver, GrpcStatus, Keep, Response};

/// Stream-level receive window (bytes): large enough that the largest
/// contract response (3.4 MB) never waits for a window update.
const STREAM_WINDOW: u32 = 8 * 1024 * 1024;
/// Connection-level receive window (bytes).
const CONNECTION_WINDOW: u32 = 64 * 1024 * 1024;

/// The HTTP/2 driver.
pub(crate) struct Http2 {
    endpoint: Endpoint,
    block: HeaderBlock,
    body: Bytes,
    grpc: bool,
}

/// A handle on one HTTP/2 connection.
pub(crate) type Conn = h2conn::Handle;

/// Why an HTTP/2 driver could not be built.
#[derive(Debug, thiserror::Error)]
pub enum Http2Error {
    /// A header name or value is not valid HTTP/2.
    #[error("invalid header {0:?}")]
    Header(String),
    /// The path does not form a valid request target.
    #[error("invalid path {0:?}")]
    Path(String),
}

/// Header fields HTTP/2 forbids in a request (RFC 9113 8.2.2).
const CONNECTION_SPECIFIC: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

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
        let uri: http::Uri = format!("{}://{}{}", endpoint.scheme(), endpoint.authority, path)
            .parse()
            .map_err(|_| Http2Error::Path(path.to_owned()))?;
        let path = uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .filter(|p| p.starts_with('/'))
            .ok_or_else(|| Http2Error::Path(path.to_owned()))?;
        let method = Method::from_bytes(method.as_bytes()).map_err(|_| Http2Error::Header(method.to_owned()))?;
        let mut fields: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (b":method".to_vec(), method.as_str().as_bytes().to_vec()),
            (b":scheme".to_vec(), endpoint.scheme().as_bytes().to_vec()),
            (b":authority".to_vec(), endpoint.authority.as_bytes().to_vec()),
            (b":path".to_vec(), path.into_bytes()),
        ];
        let mut set = |name: &[u8], value: &[u8]| match fields.iter_mut().find(|(n, _)| n == name) {
            Some(f) => f.1 = value.to_vec(),
            None => fields.push((name.to_vec(), value.to_vec())),
        };
        set(b"user-agent", b"protobench");
        if grpc {
            set(b"content-type", b"application/grpc");
            set(b"te", b"trailers");
        }
        for (name, value) in headers {
            let n = HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes())
                .map_err(|_| Http2Error::Header(name.clone()))?;
            let v = HeaderValue::from_str(value).map_err(|_| Http2Error::Header(format!("{name}: {value}")))?;
            if CONNECTION_SPECIFIC.contains(&n.as_str()) || (n == http::header::TE && v != "trailers") {
                return Err(Http2Error::Header(format!(
                    "{name}: {value} (a connection-specific field, not allowed in HTTP/2)"
                )));
            }
            // A Host header names the authority, as curl sends it on HTTP/2.
            let n = if n == http::header::HOST {
                ":authority"
            } else {
                n.as_str()
            };
            set(n.as_bytes(), v.as_bytes());
        }
        let fields: Vec<(&[u8], &[u8])> = fields.iter().map(|(n, v)| (&n[..], &v[..])).collect();
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
            block: HeaderBlock::new(&fields),
            body,
            grpc,
        })
    }
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
        let windows = Windows {
            stream: STREAM_WINDOW,
            connection: CONNECTION_WINDOW,
        };
        h2conn::Handle::connect(io, self.endpoint.addr.to_string(), windows, &self.block).await
    }

    async fn call(&self, conn: &mut Conn, keep: Keep) -> Result<Response, CallError> {
        // The stream's body is kept or not from its first byte: a size
        // rule (`Keep::UnlessLen`) keeps them all.
        let reply = conn
            .request(&self.block, &self.body, self.grpc, keep.body_of(None))
            .await?;
        response(self.grpc, reply)
    }

    fn share(&self, conn: &Conn) -> Option<Conn> {
        Some(conn.share())
    }

    fn is_usable(&self, conn: &Conn) -> bool {
        conn.is_usable()
    }
}

/// What the check sees of a stream's reply (`grpc`: the call was gRPC).
pub(crate) fn response(grpc: bool, reply: h2conn::Reply) -> Result<Response, CallError> {
    let status = reply.status;
    // A gRPC call answered by something that is not gRPC (an HTTP/2 REST
    // port: 404, text/plain): its body is not gRPC frames, and the check
    // counts it by its HTTP status or content type.
    // (A trailers-only answer carrying grpc-status is gRPC even if a
    // server left its content type out.)
    let not_grpc = grpc && (status != 200 || !(reply.head_grpc.is_some() || reply.grpc_type));
    if !grpc {
        return Ok(Response {
            status,
            content_type: reply.content_type,
            body: reply.body.map(BytesMut::freeze),
            body_len: reply.body_len,
            grpc: None,
            grpc_messages: 0,
        });
    }
    if not_grpc {
        return Ok(Response {
            status,
            content_type: Some(reply.content_type.unwrap_or_default()),
            body_len: reply.body_len,
            body: reply.body.map(BytesMut::freeze),
            grpc: None,
            grpc_messages: 0,
        });
    }
    // Trailers-only responses carry grpc-status in the headers.
    let mut grpc = reply.head_grpc.or(reply.trailer_grpc);
    if grpc.is_none() && status == 200 {
        grpc = Some(GrpcStatus {
            code: 2,
            message: "response without grpc-status".into(),
        });
    }
    let deframer = reply.deframer;
    if deframer.compressed {
        return Err(CallError::new(
            ErrorKind::WrongResponse,
            "compressed gRPC message (not requested)",
        ));
    }
    if deframer.partial() {
        return Err(CallError::new(ErrorKind::WrongResponse, "truncated gRPC message frame"));
    }
    let body = reply.body.map(|k| {
        let k = k.freeze();
        if k.len() >= 5 {
            k.slice(5..k.len().min(5 + deframer.first_len))
        } else {
            k
        }
    });
    Ok(Response {
        status,
        content_type: reply.content_type,
        body,
        body_len: deframer.message_bytes,
        grpc,
        grpc_messages: deframer.messages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(d: &Http2) -> Vec<(String, String)> {
        loona_hpack::Decoder::new()
            .decode(&d.block.plain_fields())
            .unwrap()
            .into_iter()
            .map(|(n, v)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
            .collect()
    }

    fn endpoint() -> Endpoint {
        let addr: std::net::SocketAddr = "127.0.0.1:8443".parse().unwrap();
        Endpoint::new(addr, addr.to_string(), None, &[]).unwrap()
    }

    #[test]
    fn request_fields_put_pseudo_headers_first_and_host_into_the_authority() {
        let headers = [
            ("Host".to_owned(), "api.example".to_owned()),
            ("X-Trace".to_owned(), "7".to_owned()),
        ];
        let d = Http2::new(endpoint(), "POST", "/pkg.Svc/Call?x=1", &headers, b"ab", true).unwrap();
        let got = fields(&d);
        let want = [
            (":method", "POST"),
            (":scheme", "http"),
            (":authority", "api.example"),
            (":path", "/pkg.Svc/Call?x=1"),
            ("user-agent", "protobench"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("x-trace", "7"),
        ];
        let want: Vec<(String, String)> = want.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        assert_eq!(got, want);
        // The gRPC body carries its 5-byte frame.
        assert_eq!(&d.body[..], &[0, 0, 0, 0, 2, b'a', b'b']);
    }

    #[test]
    fn connection_specific_fields_are_refused_by_name() {
        for (name, value) in [
            ("Connection", "keep-alive"),
            ("Transfer-Encoding", "chunked"),
            ("TE", "gzip"),
        ] {
            let headers = [(name.to_owned(), value.to_owned())];
            let err = Http2::new(endpoint(), "GET", "/", &headers, b"", false)
                .err()
                .expect(name);
            assert!(err.to_string().contains(name), "{err}");
        }
        let ok = [("TE".to_owned(), "trailers".to_owned())];
        assert!(Http2::new(endpoint(), "GET", "/", &ok, b"", false).is_ok());
    }
}
