//! The REST benchmark's reference point: the least a hyper HTTP/1.1 server
//! can do per request (an empty `204 No Content` for anything), on the same
//! runtime setup as the built-in server (multi-thread tokio sized by
//! `PROTOBENCH_WORKERS`, `TCP_NODELAY`, hyper's defaults).
//!
//! `PROTOBENCH_REST_ADDR=127.0.0.1:0 cargo run --release -p protobench-server --example bare_hyper`
//! prints `listening protocol=rest addr=IP:PORT tls=false`.

use std::convert::Infallible;
use std::io::Write as _;

use bytes::Bytes;
use http_body_util::Empty;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = protobench_server::ServerConfig::from_env()?;
    let addr = config.rest.unwrap_or(([127, 0, 0, 1], 0).into());
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.workers)
        .enable_all()
        .build()?
        .block_on(serve(addr))
}

async fn serve(addr: std::net::SocketAddr) -> Result<(), Box<dyn std::error::Error>> {
    let listener = TcpListener::bind(addr).await?;
    println!("listening protocol=rest addr={} tls=false", listener.local_addr()?);
    std::io::stdout().flush()?;
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        tokio::spawn(async move {
            let service = service_fn(|_: Request<hyper::body::Incoming>| async {
                let mut response = Response::new(Empty::<Bytes>::new());
                *response.status_mut() = StatusCode::NO_CONTENT;
                Ok::<_, Infallible>(response)
            });
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
