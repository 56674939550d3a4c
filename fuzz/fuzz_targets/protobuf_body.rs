//! Protobuf bodies (protobench-contract's messages, as servers and the
//! verifier decode them): decode, and what decodes encodes and decodes back.
#![no_main]

#[path = "common/contract.rs"]
mod contract;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| contract::decode(protobench_contract::Encoding::Protobuf, data));
