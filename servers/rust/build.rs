//! Generates the tonic server code for `protobench.v1.Bench` and
//! `helloworld.Greeter` from `contract/proto`.
//!
//! The `.proto` files are compiled with protox (pure Rust, no `protoc`), and
//! every message path is mapped with `extern_path` onto the contract crate's
//! prost types, so the servers and the contract share one set of messages.
//! The five dataset-backed responses are mapped onto this crate's borrowed
//! views instead (see `src/views.rs`), so they are encoded straight from the
//! shared dataset without a per-request copy.

use std::path::PathBuf;

const FILES: [&str; 2] = ["protobench/v1/protobench.proto", "helloworld/helloworld.proto"];

/// Responses served from the shared dataset by reference: proto path and view type.
const VIEWS: [(&str, &str); 5] = [
    (".protobench.v1.InventoryStatus", "crate::views::InventoryStatusView"),
    (".protobench.v1.DeviceList", "crate::views::DeviceListView"),
    (".protobench.v1.ItemList", "crate::views::ItemListView"),
    (".protobench.v1.ObjectList", "crate::views::ObjectListView"),
    (".protobench.v1.FileContent", "crate::views::FileContentView"),
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../contract/proto");
    for file in FILES {
        println!("cargo:rerun-if-changed={}", root.join(file).display());
    }
    let fds = protox::compile(FILES, [&root])?;
    let mut builder = tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .codec_path("crate::grpc::codec::BenchCodec")
        .extern_path(".protobench.v1", "::protobench_contract::pb::protobench::v1")
        .extern_path(".helloworld", "::protobench_contract::pb::helloworld");
    for (proto, rust) in VIEWS {
        builder = builder.extern_path(proto, rust);
    }
    builder.compile_fds(fds)?;

    // `protobench.v1.Streams` (contract/proto/protobench/v1/stream.proto):
    // a codec of its own, since its calls carry many messages, and a
    // directory of its own, since its package file has the same name.
    let stream_proto = "protobench/v1/stream.proto";
    println!("cargo:rerun-if-changed={}", root.join(stream_proto).display());
    let streams = PathBuf::from(std::env::var("OUT_DIR")?).join("streams");
    std::fs::create_dir_all(&streams)?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .out_dir(&streams)
        .codec_path("crate::grpc::codec::StreamCodec")
        .extern_path(".protobench.v1", "::protobench_contract::pb::protobench::v1")
        .compile_fds(protox::compile([stream_proto], [&root])?)?;

    // The reference server of the benchmark (examples/minimal_greeter.rs): the
    // Greeter alone, with tonic's own defaults (ProstCodec, no adjustments).
    let minimal = PathBuf::from(std::env::var("OUT_DIR")?).join("minimal");
    std::fs::create_dir_all(&minimal)?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .out_dir(&minimal)
        .extern_path(".helloworld", "::protobench_contract::pb::helloworld")
        .compile_fds(protox::compile(["helloworld/helloworld.proto"], [&root])?)?;
    Ok(())
}
