//! The histogram decoders: base64 of HdrHistogram V2 + deflate, as stored
//! runs and results carry them and the `.hgrm`/`.hlog` exports and the load
//! summary read them (protobench-results' load_summary, the engine's
//! export). A histogram that decodes is bucketed and printed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protobench_results::load_summary;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Some(h) = load_summary::decode(text) {
        let buckets = load_summary::buckets(&h, load_summary::BUCKETS);
        assert!(buckets.len() <= load_summary::BUCKETS);
        let _ = load_summary::histogram_text(&buckets);
    }
    let _ = protobench_load::fuzzing::hgrm(text);
});
