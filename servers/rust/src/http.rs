//! The accept loop of every listener (`rest`, `rest-h2`, `soap` and `grpc`):
//! optional TLS, one task per connection, the connection limits of the
//! environment contract, graceful drain on shutdown.
//!
//! `rest` and `soap` speak HTTP/1.1 only, `rest-h2` and `grpc` HTTP/2 only
//! (h2c with prior knowledge in clear text, ALPN `h2` with TLS), so each
//! listener uses hyper's connection builder for exactly its protocol.
//!
//! Limits (`PROTOBENCH_IDLE_TIMEOUT`, `PROTOBENCH_READ_TIMEOUT`,
//! `PROTOBENCH_MAX_STREAMS`):
//! - the TLS handshake must finish within the idle timeout;
//! - HTTP/1.1: hyper's header read timeout, set to the idle timeout, runs from
//!   the moment a connection waits for a request (its start, or the end of
//!   the previous response) until that request's headers are complete; the
//!   body then has the read timeout (`crate::body::read`, 408);
//! - HTTP/2: a connection whose streams have all ended (or that never opened
//!   one, or never sent its preface) for the idle timeout gets a GOAWAY and
//!   is closed once it has had no open stream for another second; hyper has
//!   no idle timer for HTTP/2, so [`Activity`] counts open streams.
//! - an `accept` that fails for lack of descriptors or memory backs off for
//!   [`ACCEPT_BACKOFF`] instead of spinning; connections already open keep
//!   being served, and once idle ones are closed accepting resumes.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;

use crate::DRAIN_TIMEOUT;

/// How long the accept loop waits after `accept` failed for lack of
/// resources (EMFILE, ENFILE, ENOBUFS, ENOMEM) before trying again.
pub(crate) const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// How long an HTTP/2 connection told to go away for idleness may go on
/// without an open stream before it is closed.
const GOAWAY_GRACE: Duration = Duration::from_secs(1);

/// Which HTTP version a listener speaks.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Version {
    Http1,
    /// `websocket`: the listener takes WebSocket over HTTP/2 (RFC 8441's
    /// extended CONNECT, advertised in its SETTINGS): `rest-h2`, not `grpc`.
    Http2 {
        websocket: bool,
    },
}

/// The connection limits of the environment contract.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// `PROTOBENCH_IDLE_TIMEOUT`.
    pub(crate) idle: Duration,
    /// `PROTOBENCH_MAX_STREAMS`.
    pub(crate) max_streams: u32,
}

/// Serves `router` on `listener` until `shutdown` changes (or its sender is
/// dropped), then stops accepting, lets connections finish their calls for
/// up to [`DRAIN_TIMEOUT`] and closes the rest.
pub(crate) async fn serve(
    listener: TcpListener,
    version: Version,
    tls: Option<TlsAcceptor>,
    router: Router,
    limits: Limits,
    mut shutdown: watch::Receiver<()>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(err) if is_connection_error(&err) => continue,
                    Err(_) => {
                        // Out of descriptors or memory: back off instead of
                        // spinning; open connections keep being served and
                        // idle ones closing frees descriptors.
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let router = router.clone();
                let shutdown = shutdown.clone();
                let tls = tls.clone();
                connections.spawn(async move {
                    let activity = Arc::new(Activity::new());
                    match tls {
                        None => serve_connection(stream, version, router, limits, activity, shutdown).await,
                        Some(acceptor) => {
                            // A handshake that never finishes is an idle connection.
                            if let Ok(Ok(stream)) = tokio::time::timeout(limits.idle, acceptor.accept(stream)).await {
                                serve_connection(stream, version, router, limits, activity, shutdown).await;
                            }
                        }
                    }
                });
            }
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        connections.shutdown().await;
    }
}

/// Errors of one connection that went away before it was accepted: the
/// next `accept` may succeed at once.
fn is_connection_error(err: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset, Interrupted};
    matches!(
        err.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset | Interrupted
    )
}

async fn serve_connection<IO>(
    io: IO,
    version: Version,
    router: Router,
    limits: Limits,
    activity: Arc<Activity>,
    mut shutdown: watch::Receiver<()>,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(io);
    // A shutdown that happened before this connection was accepted still counts.
    let already_closing = shutdown.has_changed().unwrap_or(true);
    match version {
        Version::Http1 => {
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.idle)
                .serve_connection(io, TowerToHyperService::new(router))
                // WebSocket (the streaming operations): the connection is
                // handed to the upgraded handler after its 101 response.
                .with_upgrades();
            drive(conn, already_closing, &mut shutdown, None, |c| c.graceful_shutdown()).await;
        }
        Version::Http2 { websocket } => {
            let service = Tracked {
                inner: TowerToHyperService::new(router),
                activity: activity.clone(),
            };
            let mut builder = http2::Builder::new(TokioExecutor::new());
            builder
                .timer(TokioTimer::new())
                .max_concurrent_streams(limits.max_streams);
            if websocket {
                // RFC 8441: WebSocket over an HTTP/2 stream (extended CONNECT).
                builder.enable_connect_protocol();
            }
            let conn = builder.serve_connection(io, service);
            let idle = Some((&*activity, limits.idle));
            drive(conn, already_closing, &mut shutdown, idle, |c| c.graceful_shutdown()).await;
        }
    }
}

/// Runs a connection to its end, asking it to finish gracefully once
/// `shutdown` fires (h1: close after the call in flight; h2: GOAWAY, then
/// close after the open streams) or, for HTTP/2, once it has been idle for
/// the idle timeout (GOAWAY, then closed after [`GOAWAY_GRACE`] without an
/// open stream, also when it never finished its preface).
async fn drive<C, T, E>(
    conn: C,
    closing: bool,
    shutdown: &mut watch::Receiver<()>,
    idle: Option<(&Activity, Duration)>,
    graceful: impl Fn(Pin<&mut C>),
) where
    C: Future<Output = Result<T, E>>,
{
    let mut conn = std::pin::pin!(conn);
    if closing {
        graceful(conn.as_mut());
    } else {
        let idle_expired = async {
            match idle {
                Some((activity, timeout)) => activity.idle_for(timeout).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = shutdown.changed() => graceful(conn.as_mut()),
            () = idle_expired => {
                graceful(conn.as_mut());
                if let Some((activity, _)) = idle {
                    // Let the GOAWAY go out and streams that crossed it finish.
                    let grace = async {
                        tokio::time::sleep(GOAWAY_GRACE).await;
                        activity.idle_for(GOAWAY_GRACE).await;
                    };
                    tokio::select! {
                        _ = conn.as_mut() => {}
                        () = grace => {}
                    }
                }
                return;
            }
        }
    }
    // Errors here are the client's (reset, malformed HTTP): nothing to log per request.
    let _ = conn.await;
}

/// Open streams of one HTTP/2 connection, and when the last one ended: the
/// connection's idle timer. A stream is open from its request's arrival
/// until its response body is dropped (sent or reset).
#[derive(Debug)]
pub(crate) struct Activity {
    /// When the connection was accepted.
    start: Instant,
    /// Streams open now.
    open: AtomicUsize,
    /// When a stream last ended, in nanoseconds since `start`.
    last_end_ns: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Activity {
            start: Instant::now(),
            open: AtomicUsize::new(0),
            last_end_ns: AtomicU64::new(0),
        }
    }

    fn begin(self: &Arc<Self>) -> StreamGuard {
        self.open.fetch_add(1, Ordering::Relaxed);
        StreamGuard(self.clone())
    }

    /// Resolves once no stream has been open for `timeout` (counted from the
    /// connection's start when none ever was). One timer per `timeout`,
    /// nothing per stream.
    async fn idle_for(&self, timeout: Duration) {
        let mut check = self.idle_since() + timeout;
        loop {
            tokio::time::sleep_until(check).await;
            if self.open.load(Ordering::Acquire) > 0 {
                // It can expire `timeout` after the open streams end at the earliest.
                check = Instant::now() + timeout;
                continue;
            }
            let due = self.idle_since() + timeout;
            if due <= Instant::now() {
                return;
            }
            check = due;
        }
    }

    fn idle_since(&self) -> Instant {
        self.start + Duration::from_nanos(self.last_end_ns.load(Ordering::Relaxed))
    }
}

/// One open stream; dropped with its response body.
struct StreamGuard(Arc<Activity>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let activity = &self.0;
        let now = u64::try_from(activity.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        activity.last_end_ns.fetch_max(now, Ordering::Relaxed);
        // Release: whoever sees the count drop also sees the time above.
        activity.open.fetch_sub(1, Ordering::Release);
    }
}

/// The HTTP/2 service: the router, with each request counted as an open
/// stream of its connection until its response body is dropped.
#[derive(Clone)]
struct Tracked<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S, F> hyper::service::Service<http::Request<Incoming>> for Tracked<S>
where
    S: hyper::service::Service<
            http::Request<Incoming>,
            Response = http::Response<Body>,
            Error = Infallible,
            Future = F,
        >,
    F: Future<Output = Result<http::Response<Body>, Infallible>> + Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send>>;

    fn call(&self, request: http::Request<Incoming>) -> Self::Future {
        let guard = self.activity.begin();
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|body| {
                Body::new(body.map_frame(move |frame| {
                    let _open = &guard;
                    frame
                }))
            }))
        })
    }
}

/// The rustls acceptor of a listener.
pub(crate) fn acceptor(config: Arc<rustls::ServerConfig>) -> TlsAcceptor {
    TlsAcceptor::from(config)
}
