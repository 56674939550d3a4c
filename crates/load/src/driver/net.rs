//! TCP and TLS connections, and what the drivers share about a target.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};

use protobench_model::load::{ErrorKind, TlsPlan};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::{ByteCounters, CallError};

/// Where to connect and how.
#[derive(Clone)]
pub(crate) struct Endpoint {
    /// The resolved address.
    pub(crate) addr: SocketAddr,
    /// `host:port` as given, for `Host` / `:authority`.
    pub(crate) authority: String,
    /// TLS connector and server name; `None` = clear text.
    pub(crate) tls: Option<(TlsConnector, ServerName<'static>)>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("addr", &self.addr)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// Why TLS settings could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A PEM file holds nothing usable.
    #[error("{path} holds no {what}")]
    Empty {
        /// The file.
        path: String,
        /// `certificate` or `private key`.
        what: &'static str,
    },
    /// rustls refused the settings.
    #[error("invalid TLS settings")]
    Rustls(#[from] rustls::Error),
    /// The server name is not a valid DNS name or IP address.
    #[error("invalid TLS server name {0:?}")]
    ServerName(String),
}

impl Endpoint {
    /// An endpoint for `authority` (`host:port`) at `addr`, with TLS when `tls` is set.
    pub(crate) fn new(
        addr: SocketAddr,
        authority: String,
        tls: Option<&TlsPlan>,
        alpn: &[&[u8]],
    ) -> Result<Endpoint, TlsError> {
        let tls = match tls {
            None => None,
            Some(plan) => {
                let host = plan
                    .server_name
                    .clone()
                    .unwrap_or_else(|| host_of(&authority).to_owned());
                let name = ServerName::try_from(host.clone()).map_err(|_| TlsError::ServerName(host))?;
                let config = client_config(plan, alpn)?;
                Some((TlsConnector::from(Arc::new(config)), name))
            }
        };
        Ok(Endpoint { addr, authority, tls })
    }

    /// Opens a connection; errors are `connect` errors naming the address.
    pub(crate) async fn connect(&self, counters: &Rc<ByteCounters>) -> Result<Counted<Stream>, CallError> {
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            CallError::new(ErrorKind::Connect, format!("{what} {}: {e}", self.addr))
        };
        let tcp = TcpStream::connect(self.addr)
            .await
            .map_err(|e| fail("connecting to", &e))?;
        tcp.set_nodelay(true)
            .map_err(|e| fail("configuring the connection to", &e))?;
        let stream = match &self.tls {
            None => Stream::plain(tcp),
            Some((connector, name)) => {
                let tls = connector.connect(name.clone(), tcp).await.map_err(|e| {
                    let plain = e
                        .get_ref()
                        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
                        .is_some_and(|r| {
                            matches!(
                                r,
                                rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType)
                            )
                        });
                    let err = fail("TLS handshake with", &e);
                    if plain {
                        err.because(super::ConnectCause::PlainTextToTls)
                    } else {
                        err
                    }
                })?;
                Stream::Tls(Box::new(tls))
            }
        };
        Ok(Counted {
            inner: stream,
            counters: counters.clone(),
        })
    }

    /// Whether the negotiated protocol is clear text.
    pub(crate) fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }
}

fn host_of(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    authority.rsplit_once(':').map_or(authority, |(h, _)| h)
}

fn read_pem(path: &std::path::Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// The certificates of a PEM file; none is an error naming the file.
pub fn pem_certs(path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read_pem(path)?;
    let certs: Vec<_> = rustls_pemfile::certs(&mut pem.as_slice())
        .collect::<Result<_, _>>()
        .map_err(|source| TlsError::Read {
            path: path.display().to_string(),
            source,
        })?;
    if certs.is_empty() {
        return Err(TlsError::Empty {
            path: path.display().to_string(),
            what: "certificate",
        });
    }
    Ok(certs)
}

/// The first private key (PKCS#8, PKCS#1 or SEC1) of a PEM file; none is an
/// error naming the file.
pub fn pem_private_key(path: &std::path::Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = read_pem(path)?;
    rustls_pemfile::private_key(&mut pem.as_slice())
        .map_err(|source| TlsError::Read {
            path: path.display().to_string(),
            source,
        })?
        .ok_or_else(|| TlsError::Empty {
            path: path.display().to_string(),
            what: "private key",
        })
}

fn client_config(plan: &TlsPlan, alpn: &[&[u8]]) -> Result<rustls::ClientConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder =
        rustls::ClientConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions()?;
    let builder = if plan.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(provider)))
    } else {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(path) = &plan.cacert {
            for cert in pem_certs(path)? {
                roots.add(cert)?;
            }
        }
        builder.with_root_certificates(roots)
    };
    let mut config = match (&plan.client_cert, &plan.client_key) {
        (Some(cert), Some(key)) => {
            let chain = pem_certs(cert)?;
            builder.with_client_auth_cert(chain, pem_private_key(key)?)?
        }
        _ => builder.with_no_client_auth(),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

/// `--insecure`: accepts any certificate, still checks handshake signatures.
#[derive(Debug)]
struct AcceptAny(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A clear-text or TLS connection.
pub(crate) enum Stream {
    /// Clear text; `armed` while a write waits for its first reply bytes,
    /// `spin_until` while a read spins for them (see [`set_read_spin`]).
    Plain {
        tcp: TcpStream,
        armed: bool,
        spin_until: Option<std::time::Instant>,
    },
    Tls(Box<TlsStream<TcpStream>>),
}

impl Stream {
    /// A clear-text stream.
    pub(crate) fn plain(tcp: TcpStream) -> Stream {
        Stream::Plain {
            tcp,
            armed: false,
            spin_until: None,
        }
    }

    /// The ALPN protocol the server chose.
    pub(crate) fn alpn(&self) -> Option<&[u8]> {
        match self {
            Stream::Plain { .. } => None,
            Stream::Tls(s) => s.get_ref().1.alpn_protocol(),
        }
    }
}

thread_local! {
    /// How long a clear-text read that would wait right after a write
    /// spins instead (0: never, the default; closed loop).
    static READ_SPIN_NS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Sets this thread's read spin: after a write, the first read that finds
/// no reply polls the socket for up to `spin` before it waits for the
/// reactor. An idle core woken by epoll adds tens of microseconds (more in
/// a VM) between the reply's arrival and its timestamp; at low open-loop
/// rates the engine keeps the core awake instead. Clear text only (a TLS
/// record cannot be read around rustls).
pub(crate) fn set_read_spin(spin: std::time::Duration) {
    READ_SPIN_NS.set(u64::try_from(spin.as_nanos()).unwrap_or(u64::MAX));
}

/// How long a read spins before it lets the thread's other tasks run (and
/// the reactor be polled): a reply, a timer or another caller's start that
/// falls inside a spin waits at most this long, not the whole spin.
const READ_SPIN_SLICE: std::time::Duration = std::time::Duration::from_micros(20);

/// Reads what `tcp` has without waiting, until `deadline`: `Some` with the
/// read's outcome once data (or an error, or the end) came, `None` when the
/// time ran out. The socket is non-blocking (tokio's), so each read returns
/// at once; tokio's readiness is left as it is: a wake-up it delivers later
/// finds nothing and waits again.
fn spin_read(tcp: &TcpStream, buf: &mut ReadBuf<'_>, deadline: std::time::Instant) -> Option<io::Result<()>> {
    let room = buf.remaining().min(64 * 1024);
    loop {
        match rustix::io::read(tcp, buf.initialize_unfilled_to(room)) {
            Ok(n) => {
                buf.advance(n);
                return Some(Ok(()));
            }
            Err(rustix::io::Errno::AGAIN) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Some(Err(e.into())),
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::hint::spin_loop();
    }
}

/// A stream that counts the bytes going through it into the thread's counters.
pub(crate) struct Counted<S> {
    pub(crate) inner: S,
    counters: Rc<ByteCounters>,
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain { tcp, armed, spin_until } => {
                // A read disarms, whatever it finds.
                let was_armed = std::mem::take(armed);
                let r = Pin::new(&mut *tcp).poll_read(cx, buf);
                if r.is_ready() || buf.remaining() == 0 {
                    *spin_until = None;
                    return r;
                }
                if was_armed {
                    let spin = READ_SPIN_NS.get();
                    *spin_until = (spin > 0).then(|| std::time::Instant::now() + std::time::Duration::from_nanos(spin));
                }
                let Some(until) = *spin_until else { return r };
                // Spin one slice, then yield: the runtime polls its reactor
                // and runs the thread's other tasks before this read goes on.
                let slice_end = until.min(std::time::Instant::now() + READ_SPIN_SLICE);
                if let Some(r) = spin_read(tcp, buf, slice_end) {
                    *spin_until = None;
                    return Poll::Ready(r);
                }
                if std::time::Instant::now() >= until {
                    // The spin is over: wait for the reactor (the read above
                    // registered this task's waker).
                    *spin_until = None;
                } else {
                    // `yield_now` wakes the task once the runtime has polled
                    // its reactor (a waker woken at once would be polled
                    // again before anything else could run).
                    let _ = std::pin::pin!(tokio::task::yield_now()).poll(cx);
                }
                r
            }
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain { tcp, armed, .. } => {
                let r = Pin::new(tcp).poll_write(cx, buf);
                *armed |= matches!(r, Poll::Ready(Ok(n)) if n > 0);
                r
            }
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain { tcp, armed, .. } => {
                let r = Pin::new(tcp).poll_write_vectored(cx, bufs);
                *armed |= matches!(r, Poll::Ready(Ok(n)) if n > 0);
                r
            }
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain { tcp, .. } => tcp.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain { tcp, .. } => Pin::new(tcp).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain { tcp, .. } => Pin::new(tcp).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        this.counters.add_received(buf.filled().len() - before);
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            this.counters.add_sent(n);
        }
        r
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = r {
            this.counters.add_sent(n);
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::task::Waker;
    use std::time::{Duration, Instant};

    use super::*;

    /// A loopback pair: the engine's side as a `Stream`, and a blocking
    /// peer that answers each 4-byte request with `pong` after `delay`.
    async fn pair(delay: Duration) -> Stream {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut peer, _) = listener.accept().unwrap();
            let mut req = [0u8; 4];
            while peer.read_exact(&mut req).is_ok() {
                std::thread::sleep(delay);
                if peer.write_all(b"pong").is_err() {
                    break;
                }
            }
        });
        Stream::plain(TcpStream::connect(addr).await.unwrap())
    }

    /// One poll of a read, with a waker that is never used.
    fn poll_once(stream: &mut Stream, buf: &mut [u8]) -> (Poll<io::Result<()>>, usize) {
        let mut cx = Context::from_waker(Waker::noop());
        let mut rb = ReadBuf::new(buf);
        let r = Pin::new(stream).poll_read(&mut cx, &mut rb);
        (r, rb.filled().len())
    }

    fn write_ping(stream: &mut Stream) {
        let mut cx = Context::from_waker(Waker::noop());
        let r = Pin::new(stream).poll_write(&mut cx, b"ping");
        assert!(matches!(r, Poll::Ready(Ok(4))), "{r:?}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_read_after_a_write_spins_in_slices_until_the_reply_arrives() {
        let mut stream = pair(Duration::from_millis(5)).await;
        set_read_spin(Duration::from_secs(5));
        write_ping(&mut stream);
        let mut buf = [0u8; 16];
        // The reactor is never polled in this loop, so only the spin's own
        // reads can see the reply; each poll spins one slice and yields.
        let start = Instant::now();
        let mut polls = 0;
        let (r, n) = loop {
            polls += 1;
            let (r, n) = poll_once(&mut stream, &mut buf);
            if r.is_ready() || start.elapsed() > Duration::from_secs(2) {
                break (r, n);
            }
        };
        set_read_spin(Duration::ZERO);
        assert!(matches!(r, Poll::Ready(Ok(()))), "{r:?}");
        assert_eq!(&buf[..n], b"pong");
        // 5 ms in slices of 20 us: many polls, not one that spun it all.
        assert!(polls > 10, "{polls} polls");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn without_a_spin_or_a_write_a_read_waits_for_the_reactor() {
        let mut stream = pair(Duration::from_millis(200)).await;
        let mut buf = [0u8; 16];
        // No spin set (the closed loop's default): pending at once.
        set_read_spin(Duration::ZERO);
        write_ping(&mut stream);
        assert!(poll_once(&mut stream, &mut buf).0.is_pending());
        // A spin set, but nothing written since the last read: not armed,
        // so no spin either (the 5 s spin would outlast the 200 ms reply).
        set_read_spin(Duration::from_secs(5));
        let start = Instant::now();
        assert!(poll_once(&mut stream, &mut buf).0.is_pending());
        set_read_spin(Duration::ZERO);
        assert!(start.elapsed() < Duration::from_millis(150), "{:?}", start.elapsed());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_spin_that_runs_out_leaves_the_read_pending() {
        let mut stream = pair(Duration::from_millis(300)).await;
        set_read_spin(Duration::from_millis(20));
        write_ping(&mut stream);
        let mut buf = [0u8; 16];
        // A poll's cost is the thread's CPU time, not the wall clock: on a
        // busy machine (other tests beside this one) the thread may be
        // preempted inside a poll, which a spin could not cause.
        let cpu = || Duration::from_nanos(crate::timer::thread_cpu_ns());
        let start = Instant::now();
        let mut longest = Duration::ZERO;
        while start.elapsed() < Duration::from_millis(20) {
            let t = cpu();
            let (r, _) = poll_once(&mut stream, &mut buf);
            longest = longest.max(cpu() - t);
            assert!(r.is_pending(), "{r:?}");
        }
        // Over: the next poll waits for the reactor at once.
        let t = cpu();
        let (r, _) = poll_once(&mut stream, &mut buf);
        let after = cpu() - t;
        set_read_spin(Duration::ZERO);
        assert!(r.is_pending(), "{r:?}");
        assert!(
            after < Duration::from_millis(5),
            "a poll after the spin took {after:?} of CPU"
        );
        // No single poll held the thread for the whole spin.
        assert!(longest < Duration::from_millis(5), "a poll took {longest:?} of CPU");
    }

    #[test]
    fn a_wait_that_ends_inside_a_read_spin_is_not_held_up_by_it() {
        // Caller A spins up to 2 ms for a reply that comes after 3 ms;
        // caller B's timer, at 0.5 ms, falls inside that spin. Spinning
        // without yielding held B until A's spin ended (1.5 ms late).
        crate::timer::wait_beside_a_spinning_caller_is_late_by_less_than(Duration::from_micros(400), || async {
            let mut stream = pair(Duration::from_millis(3)).await;
            set_read_spin(Duration::from_millis(2));
            let b_at = Instant::now() + Duration::from_micros(500);
            let a = tokio::task::spawn_local(async move {
                write_ping(&mut stream);
                let mut buf = [0u8; 16];
                let mut rb = ReadBuf::new(&mut buf);
                std::future::poll_fn(|cx| Pin::new(&mut stream).poll_read(cx, &mut rb))
                    .await
                    .unwrap();
                assert_eq!(rb.filled(), b"pong");
            });
            let b = tokio::task::spawn_local(async move {
                crate::timer::PreciseTimer::new().sleep_until(b_at).await;
                Instant::now() - b_at
            });
            a.await.unwrap();
            set_read_spin(Duration::ZERO);
            b.await.unwrap()
        });
    }
}
