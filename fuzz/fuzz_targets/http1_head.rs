//! The engine's HTTP/1.1 response head parser and chunk-size line
//! (crates/load/src/driver/http1.rs): a server's bytes, as read.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let whole = protobench_load::fuzzing::http1_head(data);
    // A complete head parses the same with any bytes after it, and every
    // prefix of it is either incomplete or already refused.
    if let Ok(Some((status, len))) = whole {
        for cut in [0, len / 2, len.saturating_sub(1)] {
            if let Ok(Some(_)) = protobench_load::fuzzing::http1_head(&data[..cut]) {
                panic!("a prefix of {cut} bytes of a {len}-byte head (status {status}) is complete");
            }
        }
    }
});
