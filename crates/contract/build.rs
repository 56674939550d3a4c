//! Compiles `contract/proto` with protox (pure Rust, so no `protoc` is needed),
//! then generates prost message types and pbjson serde impls from it.

use std::path::PathBuf;

use prost::Message as _;

const FILES: [&str; 3] = [
    "protobench/v1/protobench.proto",
    "protobench/v1/stream.proto",
    "helloworld/helloworld.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../contract/proto");
    for file in FILES {
        println!("cargo:rerun-if-changed={}", root.join(file).display());
    }
    let fds = protox::compile(FILES, [&root])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let bytes = fds.encode_to_vec();
    std::fs::write(out.join("descriptor.bin"), &bytes)?;
    prost_build::Config::new().compile_fds(fds)?;
    pbjson_build::Builder::new()
        .register_descriptors(&bytes)?
        .emit_fields()
        .build(&[".protobench.v1", ".helloworld"])?;
    Ok(())
}
