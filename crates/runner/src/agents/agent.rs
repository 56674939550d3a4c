//! The agent: an HTTP/2 server that runs load plans for the coordinator
//! holding its token, one at a time, and streams what it measures.
//!
//! It listens only on the address it is given, in clear text or over TLS
//! ([`super::tls`]; with a client CA, a peer without a certificate it
//! signed is dropped in the handshake, before any HTTP). A request without the token
//! gets 401 and nothing else (not even the version); one with another
//! version gets 409. Dropping the answer's stream (the coordinator's Ctrl-C,
//! or its death) cancels the run.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Frame as BodyFrame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use protobench_load::Event;
use protobench_model::format::error_chain;
use protobench_model::load::TimelinePoint;
use tokio::net::TcpListener;
use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;

use super::{ClockReading, Frame, MAX_ORDER_BYTES, Order, VERSION, VERSION_HEADER, token_matches};

/// An agent's settings.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The shared token a coordinator must present.
    pub token: String,
    /// The commit stamped on results.
    pub commit: Option<String>,
    /// Serve TLS with these settings ([`super::tls::server_config`]);
    /// `None`: clear-text HTTP/2.
    pub tls: Option<super::tls::ServerTls>,
}

/// Serves coordinators on `listener` until `cancel`.
pub async fn serve(listener: TcpListener, config: AgentConfig, cancel: CancellationToken) -> std::io::Result<()> {
    let state = Arc::new(State {
        config,
        busy: Arc::new(Mutex::new(())),
        cancel: cancel.clone(),
    });
    loop {
        let (stream, _) = tokio::select! {
            () = cancel.cancelled() => return Ok(()),
            a = listener.accept() => match a {
                Ok(a) => a,
                // Out of descriptors and the like: back off, keep serving.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            match state.config.tls.clone() {
                None => serve_connection(stream, state, cancel).await,
                Some(tls) => {
                    // A peer without a certificate the client CA signed (or
                    // that never finishes the handshake) gets no further.
                    let accept = tokio_rustls::TlsAcceptor::from(tls).accept(stream);
                    if let Ok(Ok(stream)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, accept).await {
                        serve_connection(stream, state, cancel).await;
                    }
                }
            }
        });
    }
}

/// How long a peer may take over the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

async fn serve_connection<S>(stream: S, state: Arc<State>, cancel: CancellationToken)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req| {
        let state = state.clone();
        async move { Ok::<_, Infallible>(handle(&state, req).await) }
    });
    let conn =
        hyper::server::conn::http2::Builder::new(TokioExecutor::new()).serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        _ = conn => {}
        () = cancel.cancelled() => {}
    }
}

struct State {
    config: AgentConfig,
    /// Held by the run in progress: one run at a time.
    busy: Arc<Mutex<()>>,
    cancel: CancellationToken,
}

type AgentBody = http_body_util::Either<Full<Bytes>, FrameBody>;

fn plain(status: StatusCode, text: &str) -> Response<AgentBody> {
    let mut r = Response::new(http_body_util::Either::Left(Full::new(Bytes::from(format!(
        "{text}\n"
    )))));
    *r.status_mut() = status;
    r
}

async fn handle(state: &State, req: Request<Incoming>) -> Response<AgentBody> {
    let authorized = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
        .is_some_and(|t| token_matches(t, state.config.token.as_bytes()));
    if !authorized {
        return plain(StatusCode::UNAUTHORIZED, "agent token missing or wrong");
    }
    let version = req.headers().get(VERSION_HEADER).and_then(|v| v.to_str().ok());
    if version != Some(VERSION) {
        return plain(
            StatusCode::CONFLICT,
            &format!(
                "version mismatch: agent {VERSION}, coordinator {}",
                version.unwrap_or("(none)")
            ),
        );
    }
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/v1/clock") => {
            let reading = ClockReading { agent_ns: now_ns() };
            plain(StatusCode::OK, &serde_json::to_string(&reading).unwrap_or_default())
        }
        (&Method::POST, "/v1/run") => {
            let body = match Limited::new(req.into_body(), MAX_ORDER_BYTES).collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) => return plain(StatusCode::PAYLOAD_TOO_LARGE, &format!("order not read: {e}")),
            };
            let order: Order = match serde_json::from_slice(&body) {
                Ok(o) => o,
                Err(e) => return plain(StatusCode::BAD_REQUEST, &format!("order is not valid JSON: {e}")),
            };
            // Held for the length of the run: dropped by its task.
            let Ok(guard) = state.busy.clone().try_lock_owned() else {
                return plain(StatusCode::CONFLICT, "the agent is already running a plan");
            };
            let (tx, rx) = mpsc::channel(64);
            let commit = state.config.commit.clone();
            let cancel = state.cancel.child_token();
            tokio::spawn(async move {
                run_order(order, tx, commit, cancel).await;
                drop(guard);
            });
            let mut r = Response::new(http_body_util::Either::Right(FrameBody(rx)));
            r.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                "application/x-ndjson".parse().expect("valid"),
            );
            r
        }
        _ => plain(StatusCode::NOT_FOUND, "not found: GET /v1/clock, POST /v1/run"),
    }
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn line(frame: &Frame) -> Bytes {
    let mut v = serde_json::to_vec(frame).unwrap_or_default();
    v.push(b'\n');
    Bytes::from(v)
}

/// Runs an order, sending its frames to `tx`; a closed `tx` (the
/// coordinator went away) cancels the run.
async fn run_order(order: Order, tx: mpsc::Sender<Bytes>, commit: Option<String>, cancel: CancellationToken) {
    let start = UNIX_EPOCH + Duration::from_nanos(order.start_unix_ns);
    let measure_start_ns = order.start_unix_ns + order.plan.warmup_ns;
    let (ev_tx, mut ev_rx) = mpsc::unbounded_channel();
    let run_cancel = cancel.clone();
    let watch_tx = tx.clone();
    let watcher = tokio::spawn(async move {
        watch_tx.closed().await;
        run_cancel.cancel();
    });
    let mut run = Box::pin(protobench_load::run_at(order.plan, Some(ev_tx), cancel, Some(start)));
    let mut pending_point = None;
    let outcome = loop {
        tokio::select! {
            r = &mut run => break r,
            Some(ev) = ev_rx.recv() => {
                if let Some(f) = frame_of(ev, &mut pending_point, measure_start_ns) {
                    let _ = tx.send(line(&f)).await;
                }
            }
        }
    };
    // Seconds sent just before the run returned.
    while let Ok(ev) = ev_rx.try_recv() {
        if let Some(f) = frame_of(ev, &mut pending_point, measure_start_ns) {
            let _ = tx.send(line(&f)).await;
        }
    }
    let frame = match outcome {
        Ok((mut result, histograms)) => {
            result.environment.commit = commit;
            Frame::Done {
                result: Box::new(result),
                histograms,
            }
        }
        Err(e) => Frame::Failed {
            late: matches!(e, protobench_load::LoadError::Late { .. }),
            message: error_chain(&e),
        },
    };
    let _ = tx.send(line(&frame)).await;
    watcher.abort();
}

/// The frame an engine event makes: a second's point (from `Progress`)
/// goes out with its histogram (the `Interval` right after it).
fn frame_of(ev: Event, pending: &mut Option<TimelinePoint>, measure_start_ns: u64) -> Option<Frame> {
    match ev {
        Event::Started { .. } => Some(Frame::Ready),
        Event::Progress { second, .. } => {
            *pending = Some(second);
            None
        }
        Event::Interval { second, histogram } => {
            pending
                .take()
                .filter(|p| p.second == second)
                .map(|point| Frame::Second {
                    at_unix_ns: measure_start_ns + u64::from(second) * 1_000_000_000,
                    point,
                    histogram,
                })
        }
    }
}

/// The answer's body: the frames as they come.
pub(crate) struct FrameBody(mpsc::Receiver<Bytes>);

impl http_body::Body for FrameBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|o| o.map(|b| Ok(BodyFrame::data(b))))
    }
}
