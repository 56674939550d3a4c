//! The histogram decoder: base64 of HdrHistogram V2 + deflate, as stored
//! runs and results carry them (protobench-model's
//! `hdr::EncodedHistogram::decode`, which the `.hgrm`/`.hlog` exports, the
//! load summary and the charts all go through). A histogram that decodes is
//! bucketed and printed as the load summary and the engine's export do.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protobench_model::hdr::EncodedHistogram;
use protobench_results::load_summary;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(h) = EncodedHistogram::from(text).decode() {
        let buckets = load_summary::buckets(&h, load_summary::BUCKETS);
        assert!(buckets.len() <= load_summary::BUCKETS);
        let _ = load_summary::histogram_text(&buckets);
    }
    let _ = protobench_load::fuzzing::hgrm(text);
});
