//! Types generated from `contract/proto` (prost messages with pbjson serde
//! impls that follow the contract's canonical JSON form).

#![allow(missing_docs, unreachable_pub, clippy::all, reason = "generated code")]

/// `protobench.v1`.
pub mod protobench {
    /// `protobench.v1`.
    pub mod v1 {
        include!(concat!(env!("OUT_DIR"), "/protobench.v1.rs"));
        include!(concat!(env!("OUT_DIR"), "/protobench.v1.serde.rs"));
    }
}

/// grpc_bench's `helloworld` package.
pub mod helloworld {
    include!(concat!(env!("OUT_DIR"), "/helloworld.rs"));
    include!(concat!(env!("OUT_DIR"), "/helloworld.serde.rs"));
}

/// The encoded `FileDescriptorSet` of every contract `.proto` file (for
/// server reflection and dynamic messages).
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/descriptor.bin"));

/// The contract's descriptor pool, decoded once.
pub fn descriptor_pool() -> &'static prost_reflect::DescriptorPool {
    static POOL: std::sync::OnceLock<prost_reflect::DescriptorPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        prost_reflect::DescriptorPool::decode(FILE_DESCRIPTOR_SET)
            .expect("the build script wrote a valid descriptor set")
    })
}

pub use self::protobench::v1 as bench;
