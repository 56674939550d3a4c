//! The accept loop of the hyper-served listeners (`rest`, `rest-h2`, `soap`):
//! optional TLS, one task per connection, graceful drain on shutdown.
//!
//! `rest` and `soap` speak HTTP/1.1 only, `rest-h2` HTTP/2 only (h2c with
//! prior knowledge in clear text, ALPN `h2` with TLS), so each listener uses
//! hyper's connection builder for exactly its protocol.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use crate::DRAIN_TIMEOUT;

/// How long a client may take to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Which HTTP version a listener speaks.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Version {
    Http1,
    Http2,
}

/// Serves `router` on `listener` until `shutdown` changes (or its sender is
/// dropped), then stops accepting, lets connections finish their calls for
/// up to [`DRAIN_TIMEOUT`] and closes the rest.
pub(crate) async fn serve(
    listener: TcpListener,
    version: Version,
    tls: Option<TlsAcceptor>,
    router: Router,
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
                    Err(_) => {
                        // Out of file descriptors or a connection reset before
                        // accept: back off briefly instead of spinning.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let router = router.clone();
                let shutdown = shutdown.clone();
                let tls = tls.clone();
                connections.spawn(async move {
                    match tls {
                        None => serve_connection(stream, version, router, shutdown).await,
                        Some(acceptor) => {
                            if let Ok(Ok(stream)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                                serve_connection(stream, version, router, shutdown).await;
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

async fn serve_connection<IO>(io: IO, version: Version, router: Router, mut shutdown: watch::Receiver<()>)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(io);
    let service = TowerToHyperService::new(router);
    // A shutdown that happened before this connection was accepted still counts.
    let already_closing = shutdown.has_changed().unwrap_or(true);
    match version {
        Version::Http1 => {
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .serve_connection(io, service);
            drive(conn, already_closing, &mut shutdown, |c| c.graceful_shutdown()).await;
        }
        Version::Http2 => {
            let conn = http2::Builder::new(TokioExecutor::new())
                .timer(TokioTimer::new())
                .serve_connection(io, service);
            drive(conn, already_closing, &mut shutdown, |c| c.graceful_shutdown()).await;
        }
    }
}

/// Runs a connection to its end, asking it to finish gracefully once
/// `shutdown` fires (h1: close after the call in flight; h2: GOAWAY, then
/// close after the open streams).
async fn drive<C, T, E>(
    conn: C,
    closing: bool,
    shutdown: &mut watch::Receiver<()>,
    graceful: impl Fn(std::pin::Pin<&mut C>),
) where
    C: Future<Output = Result<T, E>>,
{
    let mut conn = std::pin::pin!(conn);
    if closing {
        graceful(conn.as_mut());
    } else {
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = shutdown.changed() => graceful(conn.as_mut()),
        }
    }
    // Errors here are the client's (reset, malformed HTTP): nothing to log per request.
    let _ = conn.await;
}

/// The rustls acceptor of a listener.
pub(crate) fn acceptor(config: Arc<rustls::ServerConfig>) -> TlsAcceptor {
    TlsAcceptor::from(config)
}
