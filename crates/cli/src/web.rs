//! `--web`: a read-only page served by the binary itself (issue 33).
//!
//! Who may read it ([`Access`]):
//! - on a loopback address (the default, `127.0.0.1:0`), anyone on this
//!   machine, and only under a loopback `Host` (`localhost`, `127.0.0.1`,
//!   `[::1]`): a web page elsewhere that rebinds its own name to 127.0.0.1
//!   cannot read it through the browser;
//! - on any other address only with `--web-public`, and then every request
//!   must carry the one-time token printed at start (`?token=...` or
//!   `Authorization: Bearer ...`), compared in constant time.
//!
//! The page only reads: `GET` and `HEAD`; anything else is 405. Responses
//! carry `Cache-Control: no-store`, `Referrer-Policy: no-referrer` (the
//! token may be in the URL) and a content security policy that allows no
//! script, frame or connection the page did not bring itself (the live
//! page frames the report so far from the same server; no other site may
//! frame either).
//!
//! It serves a stored run's report (`protobench report RUN --web`) and the
//! live view of a running study (`crate::live_page`).

use std::convert::Infallible;
use std::io::Read as _;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Who may read the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Access {
    /// Loopback only: no token, a loopback `Host` required.
    Loopback,
    /// A non-loopback address: this token on every request.
    Token(String),
}

impl Access {
    /// The access rule for listening on `addr`: loopback needs nothing, any
    /// other address needs `public` (`--web-public`) and gets a fresh token.
    pub(crate) fn for_address(addr: SocketAddr, public: bool) -> Result<Access, String> {
        if addr.ip().is_loopback() {
            return Ok(Access::Loopback);
        }
        if !public {
            return Err(format!(
                "--web {addr}: not a loopback address; the page would be readable by anyone who can reach it. \
                 Add --web-public to listen there with a one-time token, or use 127.0.0.1"
            ));
        }
        Ok(Access::Token(
            token().map_err(|e| format!("--web {addr}: no token: {e}"))?,
        ))
    }

    /// Why `req` may not read the page, if it may not.
    fn refuse(&self, req: &Request<Incoming>) -> Option<(StatusCode, &'static str)> {
        match self {
            Access::Loopback => {
                let host = req
                    .headers()
                    .get(header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .unwrap_or("");
                (!loopback_host(host)).then_some((
                    StatusCode::FORBIDDEN,
                    "this page answers only to a loopback Host (localhost, 127.0.0.1, [::1])\n",
                ))
            }
            Access::Token(want) => {
                let bearer = req
                    .headers()
                    .get(header::AUTHORIZATION)
                    .and_then(|h| h.to_str().ok())
                    .and_then(|h| h.strip_prefix("Bearer "));
                let query = req
                    .uri()
                    .query()
                    .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("token=")));
                let given = bearer.or(query).unwrap_or("");
                (!same(given.as_bytes(), want.as_bytes())).then_some((
                    StatusCode::UNAUTHORIZED,
                    "this page needs the token printed when it started (?token=...)\n",
                ))
            }
        }
    }
}

/// 128 bits from the operating system's random source, as hex.
fn token() -> std::io::Result<String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Equal in time independent of where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `localhost`, `127.x.x.x` or `[::1]`, with or without a port.
fn loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// What a path answers.
pub(crate) enum Reply {
    /// A whole body.
    Body {
        /// Its `Content-Type`.
        content_type: &'static str,
        /// The body.
        body: String,
    },
    /// Server-sent events: `first`, then each message of `rx` as it comes.
    Events {
        /// The first event (the state so far, so a late page catches up).
        first: String,
        /// Later events, each already framed (`data: ...\n\n`).
        rx: tokio::sync::mpsc::Receiver<Bytes>,
    },
}

/// What the server shows: one [`Reply`] per known path.
pub(crate) trait Site: Send + Sync + 'static {
    /// The reply for `path` (`None`: 404).
    fn get(&self, path: &str) -> Option<Reply>;
}

/// A site of one page at `/`.
pub(crate) struct OnePage(pub(crate) String);

impl Site for OnePage {
    fn get(&self, path: &str) -> Option<Reply> {
        matches!(path, "/" | "/index.html").then(|| Reply::Body {
            content_type: "text/html; charset=utf-8",
            body: self.0.clone(),
        })
    }
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// A server-sent event stream's body: `first`, then what `rx` brings,
/// until the sender goes away.
struct EventBody {
    first: Option<Bytes>,
    rx: tokio::sync::mpsc::Receiver<Bytes>,
}

impl http_body::Body for EventBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        if let Some(b) = self.first.take() {
            return std::task::Poll::Ready(Some(Ok(http_body::Frame::data(b))));
        }
        self.rx.poll_recv(cx).map(|m| m.map(|b| Ok(http_body::Frame::data(b))))
    }
}

/// The address to open, with the token when there is one.
pub(crate) fn url(addr: SocketAddr, access: &Access) -> String {
    match access {
        Access::Loopback => format!("http://{addr}/"),
        Access::Token(t) => format!("http://{addr}/?token={t}"),
    }
}

/// Serves `site` on `listener` until `stop` is cancelled.
pub(crate) async fn serve(listener: TcpListener, access: Access, site: Arc<dyn Site>, stop: CancellationToken) {
    let access = Arc::new(access);
    loop {
        let (stream, _) = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(s) => s,
                // Out of descriptors, or a reset before accept: pause, go on.
                Err(_) => {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let (access, site) = (access.clone(), site.clone());
        let service = hyper::service::service_fn(move |req| {
            let (access, site) = (access.clone(), site.clone());
            async move { Ok::<_, Infallible>(answer(&access, &site, &req)) }
        });
        let stop = stop.clone();
        tokio::spawn(async move {
            let conn = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            let serving = conn.serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = serving => {}
                () = stop.cancelled() => {}
            }
        });
    }
}

fn answer(access: &Access, site: &Arc<dyn Site>, req: &Request<Incoming>) -> Response<Body> {
    if let Some((status, why)) = access.refuse(req) {
        return plain(status, why);
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "this page only reads: GET\n");
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let head = req.method() == Method::HEAD;
    match site.get(req.uri().path()) {
        None => plain(StatusCode::NOT_FOUND, "not found\n"),
        Some(Reply::Body { content_type, body }) => {
            respond(StatusCode::OK, content_type, if head { String::new() } else { body })
        }
        Some(Reply::Events { first, rx }) => {
            let mut r = Response::new(
                EventBody {
                    first: (!head).then(|| Bytes::from(first)),
                    rx,
                }
                .boxed(),
            );
            secure(&mut r, "text/event-stream");
            r
        }
    }
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    respond(status, "text/plain; charset=utf-8", text.to_string())
}

fn respond(status: StatusCode, content_type: &'static str, body: String) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body)).boxed());
    *r.status_mut() = status;
    secure(&mut r, content_type);
    r
}

/// The headers every answer carries: its type, no caching, no referrer,
/// no sniffing, and a policy that allows only what the page brings itself
/// (scripts from this server, connections back to it, frames of its own
/// pages, inline styles and SVG).
fn secure(r: &mut Response<Body>, content_type: &'static str) {
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src data:; frame-src 'self'; frame-ancestors 'self'; form-action 'none'",
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_hosts_are_loopback() {
        for h in [
            "localhost",
            "LOCALHOST:80",
            "127.0.0.1",
            "127.0.0.1:5665",
            "127.8.9.1:1",
            "[::1]",
            "[::1]:80",
        ] {
            assert!(loopback_host(h), "{h}");
        }
        for h in [
            "",
            "example.com",
            "evil.localhost.example:80",
            "10.0.0.1:80",
            "[fe80::1]:80",
            "0.0.0.0",
        ] {
            assert!(!loopback_host(h), "{h}");
        }
    }

    #[test]
    fn a_non_loopback_address_needs_the_flag_and_gets_a_token() {
        let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
        assert_eq!(Access::for_address(lo, false), Ok(Access::Loopback));
        let any: SocketAddr = "0.0.0.0:0".parse().unwrap();
        let e = Access::for_address(any, false).unwrap_err();
        assert!(e.contains("--web 0.0.0.0:0") && e.contains("--web-public"), "{e}");
        let (Access::Token(a), Access::Token(b)) = (
            Access::for_address(any, true).unwrap(),
            Access::for_address(any, true).unwrap(),
        ) else {
            panic!("a token")
        };
        assert_eq!(a.len(), 32);
        assert_ne!(a, b, "one-time tokens");
        assert!(same(b"abc", b"abc") && !same(b"abc", b"abd") && !same(b"abc", b"ab"));
    }
}
