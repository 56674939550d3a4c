//! GraphQL bodies (protobench-contract's GraphQL form, as the engine and
//! the verifier read a server's response, and the vectors' requests):
//! decode, and what decodes encodes and decodes back.
#![no_main]

#[path = "common/contract.rs"]
mod contract;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| contract::decode(protobench_contract::Encoding::Graphql, data));
