//! The engine's HTTP/2 connection (crates/load/src/driver/h2conn.rs): a
//! server's bytes through the frame reader, HPACK decoder, flow control and
//! gRPC deframer, with three calls open. The first byte sets the read size.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&read, rest)) = data.split_first() else {
        return;
    };
    // 1 to 256 bytes, or everything at once.
    let read = if read == 0 { rest.len() } else { usize::from(read) };
    let _ = protobench_load::fuzzing::h2_frames(rest, read);
});
