//! The engine's gRPC message deframer (crates/load/src/driver/http2.rs): a
//! response body cut into DATA frames anywhere. Input: one byte, n, then n
//! cut offsets (one byte each) and the body.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else { return };
    let n = usize::from(n % 8).min(rest.len());
    let (cuts, body) = rest.split_at(n);
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| usize::from(c)).collect();
    cuts.sort_unstable();
    let _ = protobench_load::fuzzing::grpc_deframe(body, &cuts);
});
