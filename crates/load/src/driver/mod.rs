//! The wire side: one driver per protocol behind one small trait.
//!
//! A driver opens connections and makes calls on them; that is all it does.
//! It knows nothing about time, schedules or histograms (the engine wraps
//! each call in its own clock and limit), and it does not judge responses
//! beyond parsing them: [`crate::check`] decides what counts as an error.
//!
//! | driver | protocols | wire |
//! |---|---|---|
//! | [`http1::Http1`] | `rest`, `soap`, custom HTTP/1.1 | pre-encoded request bytes, responses parsed with `httparse` |
//! | [`http2::Http2`] | `rest-h2`, `grpc`, custom HTTP/2 and gRPC | the engine's own HTTP/2 client ([`h2conn`]): header block encoded once, one task per connection, streams shared by callers |

pub(crate) mod grpc;
pub(crate) mod h2conn;
pub(crate) mod hpack;
pub(crate) mod http1;
pub(crate) mod http2;
pub(crate) mod net;

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use protobench_model::load::ErrorKind;

/// The largest response body a driver keeps in memory (16 MiB): bodies are
/// kept to be checked (`--validate full`, a contract workload's first
/// response) or to read an error status's message. The largest contract
/// response is 3.4 MB (4.5 MB as base64 in JSON or SOAP), so this is over
/// three times the most a correct server sends. Without a limit a server
/// that streams an endless body (chunked, until close, or HTTP/2 DATA)
/// would grow the kept copy at the speed of the link until the call's
/// timeout: a gigabyte a second on loopback. A body asked for that grows
/// past it fails the call as `wrong_response`; one kept only for an error
/// status is dropped (the status is judged without it). Bodies not kept
/// are counted and dropped as they arrive, of any size.
pub(crate) const MAX_KEPT_BODY: usize = 16 << 20;

/// The error of a kept body over [`MAX_KEPT_BODY`]; `announced`: told by a
/// Content-Length before any of it was read.
pub(crate) fn body_too_large(size: usize, announced: bool) -> CallError {
    let what = if announced {
        format!("response body of {size} bytes announced")
    } else {
        format!("response body over {size} bytes so far")
    };
    CallError::new(
        ErrorKind::WrongResponse,
        format!("{what}: over the 16 MiB the engine keeps to check a response (MAX_KEPT_BODY)"),
    )
}

/// What a failed connection says about the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectCause {
    /// The TLS handshake was answered with bytes that are not TLS: the
    /// target speaks clear text there.
    PlainTextToTls,
    /// An HTTP/2 connection was answered with something other than HTTP/2
    /// (a TLS server reached in clear text, or an HTTP/1.1-only server).
    NotHttp2,
}

/// Why a call (or a connection attempt) failed, by kind, with a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct CallError {
    /// The kind it is counted under.
    pub(crate) kind: ErrorKind,
    /// What happened, in one line.
    pub(crate) message: String,
    /// What a failed connection says about the target, when known.
    pub(crate) cause: Option<ConnectCause>,
}

impl CallError {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> CallError {
        CallError {
            kind,
            message: message.into(),
            cause: None,
        }
    }

    /// The same error, with what it says about the target.
    pub(crate) fn because(mut self, cause: ConnectCause) -> CallError {
        self.cause = Some(cause);
        self
    }

    pub(crate) fn io(context: &str, err: &std::io::Error) -> CallError {
        use std::io::ErrorKind as K;
        let kind = match err.kind() {
            K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof | K::NotConnected => {
                ErrorKind::Reset
            }
            K::TimedOut => ErrorKind::Timeout,
            _ => ErrorKind::Other,
        };
        CallError::new(kind, format!("{context}: {err}"))
    }
}

/// A gRPC status read from trailers (or a trailers-only response).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GrpcStatus {
    /// The numeric code (0 = OK).
    pub(crate) code: u32,
    /// `grpc-message`, percent-decoded.
    pub(crate) message: String,
}

/// What a driver read back from one call.
#[derive(Debug, Clone, Default)]
pub(crate) struct Response {
    /// HTTP status.
    pub(crate) status: u16,
    /// `content-type`, when the body was kept.
    pub(crate) content_type: Option<String>,
    /// The message body (gRPC: the message without its 5-byte frame), when kept.
    pub(crate) body: Option<Bytes>,
    /// Length of the message body (gRPC: of the message), always set.
    pub(crate) body_len: usize,
    /// gRPC only: the status from the trailers.
    pub(crate) grpc: Option<GrpcStatus>,
    /// gRPC only: how many messages the response held.
    pub(crate) grpc_messages: u32,
}

/// Which response bodies a call keeps (a kept body is copied out of the
/// read buffer; an unkept one is only counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// None (an error status's body is still kept, for its message).
    No,
    /// Every body, with its content type.
    All,
    /// Every body but one announced (`Content-Length`) at exactly this many
    /// bytes: the size of the first fully checked response, which a body of
    /// that size is counted as (docs/engine.md). GraphQL's errors come with
    /// HTTP 200, so its bodies of any other size are kept and searched.
    /// Drivers that cannot tell the size before the body keep it.
    UnlessLen(usize),
}

impl Keep {
    /// Whether a body announced at `len` bytes (`None`: not announced) is kept.
    pub(crate) fn body_of(self, len: Option<usize>) -> bool {
        match self {
            Keep::No => false,
            Keep::All => true,
            Keep::UnlessLen(n) => len != Some(n),
        }
    }
}

/// Bytes written and read by one engine thread's connections, counted at the
/// HTTP level (below HTTP, above TLS): see docs/engine.md.
#[derive(Debug, Default)]
pub(crate) struct ByteCounters {
    /// Written.
    pub(crate) sent: Cell<u64>,
    /// Read.
    pub(crate) received: Cell<u64>,
}

impl ByteCounters {
    pub(crate) fn add_sent(&self, n: usize) {
        self.sent.set(self.sent.get() + n as u64);
    }

    pub(crate) fn add_received(&self, n: usize) {
        self.received.set(self.received.get() + n as u64);
    }
}

/// One protocol's client. Futures are not `Send`: every engine thread runs
/// its own single-threaded event loop with its own connections.
#[allow(
    async_fn_in_trait,
    reason = "crate-internal trait used only on single-threaded runtimes"
)]
pub(crate) trait Driver: 'static {
    /// An open connection (or a handle to a multiplexed one).
    type Conn: 'static;

    /// Opens one connection (TCP, TLS, HTTP/2 preface).
    async fn connect(&self, counters: &Rc<ByteCounters>) -> Result<Self::Conn, CallError>;

    /// Makes one call; `keep` says which bodies (and content types) it keeps.
    async fn call(&self, conn: &mut Self::Conn, keep: Keep) -> Result<Response, CallError>;

    /// Another handle on the same connection for a concurrent caller, when
    /// the protocol multiplexes (HTTP/2); `None` for HTTP/1.1.
    fn share(&self, conn: &Self::Conn) -> Option<Self::Conn>;

    /// Whether `conn` can take another call (false after `Connection: close`,
    /// a GOAWAY or a broken stream).
    fn is_usable(&self, conn: &Self::Conn) -> bool;
}

/// Runs the future `make` builds on a thread of its own, on a
/// current-thread runtime inside a `LocalSet` (drivers share their state
/// through `Rc`s, so their futures are not `Send`), and hands its output
/// back to the caller's runtime: verify's calls and `graphql-get`'s
/// registration. `name` names the thread.
pub(crate) async fn on_own_thread<T, F, Fut>(name: &str, make: F) -> Result<T, crate::LoadError>
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T>,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let answer = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map(|rt| tokio::task::LocalSet::new().block_on(&rt, make()));
            let _ = tx.send(answer);
        })
        .map_err(crate::LoadError::Thread)?;
    match rx.await {
        Ok(answer) => answer.map_err(crate::LoadError::Thread),
        Err(_) => Err(crate::LoadError::Thread(std::io::Error::other(format!(
            "the thread {name} panicked"
        )))),
    }
}

/// One call on a new connection, its body kept, within `timeout` (verify's
/// calls, and `graphql-get`'s registration); `Err` says what went wrong.
pub(crate) async fn one<D: Driver>(driver: &D, timeout: Duration) -> Result<Response, String> {
    let counters = Rc::new(ByteCounters::default());
    let fut = async {
        let mut conn = driver.connect(&counters).await.map_err(|e| e.message)?;
        driver.call(&mut conn, Keep::All).await.map_err(|e| e.message)
    };
    match tokio::time::timeout(timeout, fut).await {
        Ok(r) => r,
        Err(_) => Err(format!(
            "no response within {}",
            protobench_model::format::fmt_duration(timeout)
        )),
    }
}
