//! The gRPC benchmark's reference point: a minimal tonic `helloworld.Greeter`
//! that echoes the request (grpc_bench's `rust_tonic_mt_bench` shape):
//! tonic-generated code with tonic's own `ProstCodec`, the contract's
//! message types, a default `Server` with `TCP_NODELAY`, on a multi-thread
//! tokio runtime sized by `PROTOBENCH_WORKERS`. No reflection, no counters,
//! no failure draw.
//!
//! `PROTOBENCH_GRPC_ADDR=127.0.0.1:0 cargo run --release -p protobench-server --example minimal_greeter`
//! prints `listening protocol=grpc addr=IP:PORT tls=false`.

use std::io::Write as _;

use protobench_contract::pb::helloworld::{HelloReply, HelloRequest};
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

#[allow(missing_docs, unreachable_pub, clippy::all, reason = "generated code")]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/minimal/helloworld.rs"));
}

use generated::greeter_server::{Greeter, GreeterServer};

struct Echo;

#[tonic::async_trait]
impl Greeter for Echo {
    async fn say_hello(&self, request: Request<HelloRequest>) -> Result<Response<HelloReply>, Status> {
        Ok(Response::new(HelloReply {
            response: request.into_inner().request,
        }))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = protobench_server::ServerConfig::from_env()?;
    let addr = config.grpc.unwrap_or(([127, 0, 0, 1], 0).into());
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.workers)
        .enable_all()
        .build()?
        .block_on(async {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            println!("listening protocol=grpc addr={} tls=false", listener.local_addr()?);
            std::io::stdout().flush()?;
            let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
            Server::builder()
                .add_service(GreeterServer::new(Echo))
                .serve_with_incoming(incoming)
                .await?;
            Ok(())
        })
}
