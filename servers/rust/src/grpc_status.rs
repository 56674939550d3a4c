//! The contract's gRPC status for each call error, shared by the unary
//! services ([`crate::grpc`]) and the streams ([`crate::grpc_stream`]).

use tonic::Status;

use crate::core::{CallError, INJECTED_FAILURE};

/// The contract's status for each call error.
pub(crate) fn status(err: CallError) -> Status {
    match err {
        CallError::Invalid(m) => Status::invalid_argument(m),
        CallError::NotFound(m) => Status::not_found(m),
        CallError::Injected => Status::unavailable(INJECTED_FAILURE),
    }
}
