//! Shared test helpers: servers on 127.0.0.1 port 0, HTTP/1.1 and HTTP/2
//! clients over clear text or TLS (hyper + rustls), a raw gRPC client (tonic)
//! and the contract's files.

#![allow(dead_code, unreachable_pub, reason = "each test binary uses a different subset")]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::{Buf as _, BufMut as _, Bytes};
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use protobench_contract::pb::bench::FeedEvent;
use protobench_contract::stream::{self, check::Received, check::StreamEnd};
use protobench_contract::{Dataset, Protocol};
use protobench_server::{RunningServer, ServerConfig, TlsFiles};
use tokio::net::TcpStream;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::{Certificate, Channel, ClientTlsConfig};

/// The longest any test call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The repository's `contract/` directory.
pub fn contract_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../contract")
}

/// The dataset, loaded from `contract/data/dataset.json` as the server does.
pub fn dataset() -> Arc<Dataset> {
    static DATASET: OnceLock<Arc<Dataset>> = OnceLock::new();
    DATASET
        .get_or_init(|| {
            let path = contract_dir().join("data/dataset.json");
            Arc::new(protobench_server::load_dataset(&path).expect("contract/data/dataset.json loads"))
        })
        .clone()
}

/// A self-signed certificate for the whole test binary.
pub fn certificate() -> &'static TlsFiles {
    static CERT: OnceLock<TlsFiles> = OnceLock::new();
    CERT.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("tls-{}", std::process::id()));
        protobench_server::generate_self_signed(&dir).expect("a self-signed certificate")
    })
}

/// A config serving `protocols` on 127.0.0.1 port 0.
pub fn config(protocols: &[Protocol], tls: bool) -> ServerConfig {
    let mut config = ServerConfig::default();
    for &p in protocols {
        config.set_addr(p, Some(SocketAddr::from(([127, 0, 0, 1], 0))));
    }
    if tls {
        config.tls = Some(certificate().clone());
    }
    config
}

/// Starts a server.
pub async fn start(config: ServerConfig) -> RunningServer {
    protobench_server::start(config, dataset())
        .await
        .expect("the server starts")
}

/// A rustls client config trusting the test certificate, offering `alpn`.
pub fn client_tls(alpn: &[u8]) -> Arc<rustls::ClientConfig> {
    let pem = std::fs::read(&certificate().cert).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    Arc::new(config)
}

/// An HTTP response, read whole.
#[derive(Debug)]
pub struct HttpResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl HttpResponse {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map(|v| v.to_str().unwrap()).unwrap_or("")
    }
}

enum Sender {
    H1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

/// One HTTP connection to a listener (HTTP/2 for `rest-h2`, else HTTP/1.1).
pub struct HttpConn {
    addr: SocketAddr,
    tls: bool,
    sender: Sender,
}

impl HttpConn {
    pub async fn open(server: &RunningServer, protocol: Protocol) -> HttpConn {
        let listener = *server.listener(protocol).expect("the protocol is served");
        Self::open_addr(listener.addr, protocol.is_http2(), listener.tls)
            .await
            .expect("connects")
    }

    pub async fn open_addr(addr: SocketAddr, http2: bool, tls: bool) -> std::io::Result<HttpConn> {
        let tcp = TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        let sender = if tls {
            let alpn: &[u8] = if http2 { b"h2" } else { b"http/1.1" };
            let connector = tokio_rustls::TlsConnector::from(client_tls(alpn));
            let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
            let stream = connector.connect(name, tcp).await?;
            assert_eq!(stream.get_ref().1.alpn_protocol(), Some(alpn), "negotiated ALPN");
            handshake(TokioIo::new(stream), http2).await
        } else {
            handshake(TokioIo::new(tcp), http2).await
        };
        Ok(HttpConn { addr, tls, sender })
    }

    /// Sends a request with the given headers and body.
    pub async fn send(&mut self, method: Method, path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> HttpResponse {
        let scheme = if self.tls { "https" } else { "http" };
        let mut builder = match self.sender {
            Sender::H1(_) if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) => {
                Request::builder().uri(path).header("host", self.addr.to_string())
            }
            Sender::H1(_) => Request::builder().uri(path),
            Sender::H2(_) => Request::builder().uri(format!("{scheme}://{}{path}", self.addr)),
        };
        builder = builder.method(method);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = builder.body(Full::new(Bytes::from(body))).unwrap();
        let exchange = async {
            let response = match &mut self.sender {
                Sender::H1(s) => {
                    s.ready().await.expect("connection ready");
                    s.send_request(request).await
                }
                Sender::H2(s) => {
                    s.ready().await.expect("connection ready");
                    s.send_request(request).await
                }
            }
            .expect("a response");
            let (parts, body) = response.into_parts();
            let body = body.collect().await.expect("the whole body").to_bytes();
            HttpResponse {
                status: parts.status,
                headers: parts.headers,
                body,
            }
        };
        tokio::time::timeout(CALL_TIMEOUT, exchange)
            .await
            .expect("a response within the call timeout")
    }

    pub async fn get(&mut self, path: &str) -> HttpResponse {
        self.send(Method::GET, path, &[], Vec::new()).await
    }

    pub async fn post_json(&mut self, path: &str, body: &[u8]) -> HttpResponse {
        self.send(
            Method::POST,
            path,
            &[("content-type", "application/json")],
            body.to_vec(),
        )
        .await
    }

    pub async fn post_soap(&mut self, body: &[u8]) -> HttpResponse {
        self.send(
            Method::POST,
            "/soap",
            &[("content-type", "text/xml; charset=utf-8")],
            body.to_vec(),
        )
        .await
    }
}

async fn handshake<IO>(io: TokioIo<IO>, http2: bool) -> Sender
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    if http2 {
        let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
            .await
            .expect("h2 handshake");
        tokio::spawn(conn);
        Sender::H2(sender)
    } else {
        let (sender, conn) = hyper::client::conn::http1::handshake(io).await.expect("h1 handshake");
        tokio::spawn(conn);
        Sender::H1(sender)
    }
}

/// A gRPC client sending and receiving raw message bytes.
pub struct GrpcClient {
    grpc: tonic::client::Grpc<Channel>,
}

impl GrpcClient {
    pub async fn connect(server: &RunningServer) -> GrpcClient {
        GrpcClient {
            grpc: tonic::client::Grpc::new(grpc_channel(server).await).max_decoding_message_size(usize::MAX),
        }
    }

    /// Calls `path` with the bare message `body`; returns the bare response message.
    pub async fn call(&mut self, path: &str, body: Vec<u8>) -> Result<Bytes, tonic::Status> {
        self.grpc.ready().await.expect("channel ready");
        let path = http::uri::PathAndQuery::try_from(path).unwrap();
        let call = self.grpc.unary(tonic::Request::new(Bytes::from(body)), path, RawCodec);
        tokio::time::timeout(CALL_TIMEOUT, call)
            .await
            .expect("a response within the call timeout")
            .map(|r| r.into_inner())
    }
}

/// A tonic channel to the server's `grpc` listener (TLS when it has TLS).
pub async fn grpc_channel(server: &RunningServer) -> Channel {
    let listener = *server.listener(Protocol::Grpc).expect("grpc is served");
    let channel = if listener.tls {
        let pem = std::fs::read(&certificate().cert).unwrap();
        let tls = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(pem))
            .domain_name("localhost");
        Channel::from_shared(format!("https://{}", listener.addr))
            .unwrap()
            .tls_config(tls)
            .unwrap()
    } else {
        Channel::from_shared(format!("http://{}", listener.addr)).unwrap()
    };
    channel
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
        .expect("grpc connects")
}

/// Passes message bytes through unchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawCodec;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Bytes;
    type Error = tonic::Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Bytes;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, tonic::Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

/// `value` with every `null` member removed (a verifier treats null as absent).
pub fn drop_nulls(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, drop_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(drop_nulls).collect()),
        other => other,
    }
}

/// Asserts the contract's JSON error body: exactly `code` (= the status) and a
/// non-empty `message`.
pub fn assert_json_error(response: &HttpResponse, status: u16) {
    assert_eq!(response.status.as_u16(), status, "status; body {}", response.text());
    assert_eq!(response.header("content-type"), "application/json");
    let body = response.json();
    let object = body.as_object().expect("an object");
    assert_eq!(object.len(), 2, "only code and message: {body}");
    assert_eq!(object["code"], status, "{body}");
    assert!(object["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
}

/// The fault of a SOAP response: (faultcode, faultstring).
pub fn soap_fault(response: &HttpResponse) -> (String, String) {
    let payload = protobench_contract::soap::parse_envelope(&response.body)
        .unwrap_or_else(|e| panic!("not a SOAP envelope ({e}): {}", response.text()));
    let fault =
        protobench_contract::soap::as_fault(&payload).unwrap_or_else(|| panic!("not a fault: {}", response.text()));
    (fault.code, fault.message)
}

/// Waits (bounded: 5 s) until `condition` holds.
pub async fn eventually(what: &str, condition: impl Fn() -> bool) {
    for _ in 0..1000 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("timed out waiting until {what}");
}

/// Reads a vector file.
pub fn vector(workload: &str, file: &str) -> Vec<u8> {
    let path: &Path = &contract_dir().join("vectors").join(workload).join(file);
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Parses an SSE body: the feed events with their ids, and the end (whose
/// data must be the feed's `count`).
pub fn parse_sse(body: &str, count: u32) -> (Received<FeedEvent>, Vec<String>) {
    let mut messages = Vec::new();
    let mut ids = Vec::new();
    let mut end = StreamEnd::Broken("the response ended without an end event".into());
    for block in body.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let field = |name: &str| {
            block
                .lines()
                .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(':')))
                .map(|v| v.strip_prefix(' ').unwrap_or(v).to_owned())
        };
        match field("event").as_deref() {
            Some(stream::SSE_EVENT) => {
                let data = field("data").expect("data");
                messages.push(stream::from_json::<FeedEvent>(data.as_bytes()).expect("an event's JSON"));
                ids.push(field("id").expect("an id"));
            }
            Some(stream::SSE_END_EVENT) => {
                assert_eq!(field("data").unwrap(), format!("{{\"count\":{count}}}"));
                end = StreamEnd::Clean;
            }
            other => panic!("unexpected event {other:?} in {block:?}"),
        }
    }
    (Received { messages, end }, ids)
}
