//! The protobench contract in code: the generated message types, the
//! operations, the named workloads, the deterministic dataset, the canonical
//! encodings (protobuf, JSON, SOAP/XML) and the test vectors.
//!
//! Everything here is plain data and pure functions: no runtime, no sockets.
//! Servers, the load engine and the verifier all build on it, so every part of
//! protobench agrees on what goes on the wire.
//!
//! ```
//! use protobench_contract::{Dataset, Encoding, workload};
//!
//! let dataset = Dataset::generate();
//! let w = workload::find("tasks.int").unwrap();
//! let request = w.request();
//! let response = w.operation.respond(&request, &dataset).unwrap();
//! assert_eq!(response.encode(Encoding::Json), br#"{"value":2147483647}"#);
//! ```

pub mod data;
pub mod graphql;
pub mod grpc_web;
pub mod message;
pub mod operation;
pub mod pb;
pub mod protocol;
pub mod semantics;
pub mod soap;
pub mod stream;
pub mod vectors;
pub mod workload;
pub mod xml;

/// The message of an injected failure (`PROTOBENCH_FAILURE_RATE`) in every
/// protocol: the JSON error's `message`, the gRPC status message, the SOAP
/// faultstring. Servers send it; the verifier recognises it.
pub const INJECTED_FAILURE: &str = "injected failure";

pub use data::Dataset;
pub use message::{DecodeError, Encoding, Message, MessageKind};
pub use operation::{HttpMethod, Operation};
pub use protocol::Protocol;
pub use semantics::ContractError;
pub use stream::StreamOperation;
pub use workload::Workload;

/// The SOAP body namespace of every contract element.
pub const SOAP_NAMESPACE: &str = "urn:protobench:v1";

/// The default request size limit of every server, in bytes.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 8 * 1024 * 1024;
