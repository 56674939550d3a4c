//! The Rust reference servers of protobench: `rest` and `rest-h2` (JSON on
//! axum/hyper), `grpc` (tonic, with reflection), `soap` (SOAP 1.1 on
//! axum/hyper with the contract's XML codec), `graphql` (async-graphql on
//! axum), `connect` and `connect-json` (Connect unary, a small axum
//! handler) and `grpc-web` and `grpc-web-text` (tonic-web over the tonic
//! services), configured only by the environment contract of
//! `contract/README.md`.
//!
//! The same code is the standalone reference server (`protobench serve`) and
//! the server embedded in tests.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use protobench_contract::{Dataset, Protocol};
//! use protobench_server::{ServerConfig, start};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let mut config = ServerConfig::from_env()?;
//! config.set_addr(Protocol::Rest, Some("127.0.0.1:0".parse()?));
//! let server = start(config, Arc::new(Dataset::generate())).await?;
//! for l in server.listeners() {
//!     println!("listening protocol={} addr={} tls={}", l.protocol, l.addr, l.tls);
//! }
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use protobench_contract::{Dataset, Protocol};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

mod body;
pub mod config;
mod connect;
mod connect_code;
mod connect_stream;
mod core;
mod feed;
mod graphql;
mod grpc;
mod grpc_status;
mod grpc_stream;
mod http;
mod json_error;
mod rest;
mod soap;
mod sse;
pub mod tls;
pub mod views;
mod ws;

pub use config::{ConfigError, FeedFault, ServerConfig, ServiceTime, TlsFiles};
pub use tls::{TlsError, generate_self_signed};

/// How long a shutdown waits for calls in flight before closing connections.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the servers could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// A listen address could not be bound.
    #[error("cannot listen for {protocol} on {addr}")]
    Bind {
        /// The protocol.
        protocol: Protocol,
        /// The address it was given.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The certificate or key could not be used.
    #[error("cannot set up TLS")]
    Tls(#[from] TlsError),
    /// The reflection service could not read the contract's descriptors.
    #[error("cannot build the grpc reflection service")]
    Reflection(#[source] tonic_reflection::server::Error),
    /// The dataset file could not be read or parsed.
    #[error("cannot load the dataset from {path}")]
    Dataset {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// One listener of a running server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listener {
    /// What it serves.
    pub protocol: Protocol,
    /// The bound address (the real port when port 0 was asked for).
    pub addr: SocketAddr,
    /// Whether it speaks TLS.
    pub tls: bool,
}

impl std::fmt::Display for Listener {
    /// The contract's listening line: `listening protocol=P addr=IP:PORT tls=BOOL`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "listening protocol={} addr={} tls={}",
            self.protocol, self.addr, self.tls
        )
    }
}

/// Servers started by [`start`]. Dropping it starts the same graceful
/// shutdown as [`RunningServer::shutdown`] without waiting for it.
#[derive(Debug)]
pub struct RunningServer {
    listeners: Vec<Listener>,
    core: Arc<core::Core>,
    shutdown: watch::Sender<()>,
    tasks: Vec<JoinHandle<()>>,
}

impl RunningServer {
    /// Every listener, in the order of [`Protocol::ALL`].
    pub fn listeners(&self) -> &[Listener] {
        &self.listeners
    }

    /// The listener of `protocol`, if it is served.
    pub fn listener(&self, protocol: Protocol) -> Option<&Listener> {
        self.listeners.iter().find(|l| l.protocol == protocol)
    }

    /// Stops accepting connections, lets calls in flight finish (up to
    /// [`DRAIN_TIMEOUT`]) and returns once every listener is closed.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(());
        for task in self.tasks {
            let _ = task.await;
        }
    }

    /// Calls that reached an operation (decoded and valid), over every
    /// protocol: the failure draw's counter `k`.
    pub fn requests_served(&self) -> u64 {
        self.core.requests_served()
    }

    /// Calls being handled now (decoding, service time, building the
    /// response).
    pub fn in_flight(&self) -> u64 {
        self.core.in_flight()
    }
}

/// Binds every configured listener and starts serving on the current tokio
/// runtime. Nothing is served unless every listener could be bound.
pub async fn start(config: ServerConfig, dataset: Arc<Dataset>) -> Result<RunningServer, ServerError> {
    let core = Arc::new(core::Core::new(&config, dataset));
    let identity = config.tls.as_ref().map(tls::Identity::load).transpose()?;
    // Bind and configure everything first: nothing serves unless all is well.
    let mut bound = Vec::new();
    for protocol in Protocol::ALL {
        let Some(addr) = config.addr(protocol) else {
            continue;
        };
        let bind_error = |source| ServerError::Bind { protocol, addr, source };
        let socket = TcpListener::bind(addr).await.map_err(bind_error)?;
        let local = socket.local_addr().map_err(bind_error)?;
        let tls = match &identity {
            None => None,
            Some(identity) => Some(http::acceptor(identity.server_config(protocol.alpn())?)),
        };
        bound.push((
            Listener {
                protocol,
                addr: local,
                tls: identity.is_some(),
            },
            socket,
            tls,
        ));
    }
    let mut grpc = match config.grpc {
        Some(_) => Some(grpc::router(core.clone())?),
        None => None,
    };
    let limits = http::Limits {
        idle: config.idle_timeout,
        max_streams: config.max_streams,
    };

    let (shutdown, signal) = watch::channel(());
    let mut listeners = Vec::new();
    let mut tasks = Vec::new();
    for (listener, socket, tls) in bound {
        let signal = signal.clone();
        let (version, router) = match listener.protocol {
            Protocol::Rest => (http::Version::Http1, rest::router(core.clone())),
            Protocol::RestH2 => (http::Version::Http2 { websocket: true }, rest::router(core.clone())),
            Protocol::Soap => (http::Version::Http1, soap::router(core.clone(), listener.tls)),
            Protocol::Grpc => (
                http::Version::Http2 { websocket: false },
                grpc.take().expect("the grpc router is built when grpc has an address"),
            ),
            Protocol::Graphql | Protocol::GraphqlGet => (http::Version::Http1, graphql::router(core.clone())),
            Protocol::Connect | Protocol::ConnectJson => (http::Version::Http1, connect::router(core.clone())),
            // tonic-web turns gRPC-Web (binary or text) into gRPC for the
            // same tonic services and back, over HTTP/1.1.
            Protocol::GrpcWeb | Protocol::GrpcWebText => (
                http::Version::Http1,
                grpc::router(core.clone())?.layer(tonic_web::GrpcWebLayer::new()),
            ),
        };
        let task = tokio::spawn(http::serve(socket, version, tls, router, limits, signal));
        listeners.push(listener);
        tasks.push(task);
    }
    Ok(RunningServer {
        listeners,
        core,
        shutdown,
        tasks,
    })
}

/// Loads `dataset.json` into the contract's types (and builds the files).
pub fn load_dataset(path: &std::path::Path) -> Result<Dataset, ServerError> {
    let dataset_error = |source: Box<dyn std::error::Error + Send + Sync>| ServerError::Dataset {
        path: path.to_owned(),
        source,
    };
    let bytes = std::fs::read(path).map_err(|e| dataset_error(e.into()))?;
    Dataset::from_json(&bytes).map_err(|e| dataset_error(e.into()))
}
