//! What each operation returns: the reference semantics from which the
//! vectors are generated (and which the Rust servers use).

use crate::pb::{bench, helloworld};
use crate::{Dataset, Message, Operation, data};

/// The largest `times` `CloneText` accepts.
pub const MAX_CLONE_TIMES: i32 = 100_000;
/// The most text `CloneText` returns, in bytes.
pub const MAX_CLONE_BYTES: usize = 64 * 1024 * 1024;

/// A request the contract rejects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContractError {
    /// A value outside what the operation accepts (400, INVALID_ARGUMENT, Client fault).
    #[error("{0}")]
    InvalidArgument(String),
    /// An unknown file (404, NOT_FOUND, Client fault).
    #[error("{0}")]
    NotFound(String),
}

/// Reverses a string by Unicode scalar values.
pub fn reverse_scalars(s: &str) -> String {
    s.chars().rev().collect()
}

/// The checks `CloneText` makes before doing any work.
pub fn validate_clone(req: &bench::CloneRequest) -> Result<(), ContractError> {
    if !(0..=MAX_CLONE_TIMES).contains(&req.times) {
        return Err(ContractError::InvalidArgument(format!(
            "times is {}, expected 0..={MAX_CLONE_TIMES}",
            req.times
        )));
    }
    if req.text.len().saturating_mul(req.times as usize) > MAX_CLONE_BYTES {
        return Err(ContractError::InvalidArgument(format!(
            "{} copies of {} bytes exceed the {MAX_CLONE_BYTES}-byte response limit",
            req.times,
            req.text.len()
        )));
    }
    Ok(())
}

/// `CloneText`.
pub fn clone_text(req: &bench::CloneRequest) -> Result<bench::CloneResponse, ContractError> {
    validate_clone(req)?;
    Ok(bench::CloneResponse {
        texts: vec![req.text.clone(); req.times as usize],
    })
}

/// `GetFile`.
pub fn get_file(dataset: &Dataset, req: &bench::FileRequest) -> Result<bench::FileContent, ContractError> {
    match dataset.file(&req.name) {
        Some(bytes) => Ok(bench::FileContent {
            name: req.name.clone(),
            content: bytes.to_vec(),
        }),
        None => Err(ContractError::NotFound(format!(
            "no file named {:?}; known files: {}",
            req.name,
            data::FILES.map(|(n, _)| n).join(", ")
        ))),
    }
}

impl Operation {
    /// The response to `request` (which must be of this operation's request type).
    pub fn respond(self, request: &Message, dataset: &Dataset) -> Result<Message, ContractError> {
        use Message as M;
        Ok(match (self, request) {
            (Operation::GetInventoryXs, M::Empty(_)) => M::Empty(bench::Empty {}),
            (Operation::GetInventoryS, M::Empty(_)) => M::InventoryStatus(dataset.inventory_status.clone()),
            (Operation::GetInventoryM, M::Empty(_)) => M::DeviceList(bench::DeviceList {
                devices: dataset.devices.clone(),
            }),
            (Operation::GetInventoryL, M::Empty(_)) => M::ItemList(bench::ItemList {
                items: dataset.items.clone(),
            }),
            (Operation::EchoProduct, M::Product(p)) => M::Product(p.clone()),
            (Operation::ModifyProduct, M::Product(p)) => M::Product(bench::Product {
                description: reverse_scalars(&p.description),
                ..p.clone()
            }),
            (Operation::CloneText, M::CloneRequest(r)) => M::CloneResponse(clone_text(r)?),
            (Operation::GetInteger, M::Empty(_)) => M::IntegerValue(bench::IntegerValue {
                value: data::INTEGER_VALUE,
            }),
            (Operation::GetIntegers, M::Empty(_)) => M::IntegerList(bench::IntegerList {
                values: (0..data::INTEGER_COUNT).collect(),
            }),
            (Operation::GetObjects, M::Empty(_)) => M::ObjectList(bench::ObjectList {
                people: dataset.people.clone(),
            }),
            (Operation::GetFile, M::FileRequest(r)) => M::FileContent(get_file(dataset, r)?),
            (Operation::Echo, M::EchoMessage(m)) => M::EchoMessage(m.clone()),
            (Operation::SayHello, M::HelloRequest(r)) => M::HelloReply(helloworld::HelloReply {
                response: r.request.clone(),
            }),
            (op, other) => {
                return Err(ContractError::InvalidArgument(format!(
                    "{op} takes {:?}, got {:?}",
                    op.request_kind(),
                    other.kind()
                )));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reverses_by_scalar_values_not_bytes_or_utf16_units() {
        assert_eq!(reverse_scalars("aö𝒜b"), "b𝒜öa");
    }

    #[test]
    fn clone_rejects_negative_and_oversized_requests() {
        let neg = bench::CloneRequest {
            text: "x".into(),
            times: -1,
        };
        assert!(matches!(clone_text(&neg), Err(ContractError::InvalidArgument(_))));
        let huge = bench::CloneRequest {
            text: "x".repeat(1 << 20),
            times: 100,
        };
        assert!(matches!(clone_text(&huge), Err(ContractError::InvalidArgument(_))));
    }

    #[test]
    fn unknown_file_lists_known_names() {
        let d = Dataset::generate();
        let err = get_file(&d, &bench::FileRequest { name: "nope".into() }).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no file named \"nope\"; known files: file-455k, file-3m4"
        );
    }
}
