//! SOAP envelopes and the XML mapping (protobench-contract's xml.rs and
//! soap.rs): the envelope parser, the fault reader, and message decoding,
//! where what decodes encodes and decodes back.
#![no_main]

#[path = "common/contract.rs"]
mod contract;

use libfuzzer_sys::fuzz_target;
use protobench_contract::{soap, xml};

fuzz_target!(|data: &[u8]| {
    if let Some(body) = data.get(1..) {
        let _ = xml::parse(body);
        if let Ok(payload) = soap::parse_envelope(body) {
            let _ = soap::as_fault(&payload);
        }
    }
    contract::decode(protobench_contract::Encoding::Xml, data);
});
