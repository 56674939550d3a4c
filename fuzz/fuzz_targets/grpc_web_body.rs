//! gRPC-Web response bodies (protobench-contract's `grpc_web`, as the
//! engine unwraps a server's `grpc-web` and `grpc-web-text` responses):
//! the first byte picks binary or text; a body that parses, framed again,
//! parses to the same messages and trailers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protobench_contract::grpc_web;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let raw = if pick & 1 == 1 {
        match grpc_web::from_text(body) {
            Ok(raw) => raw,
            Err(_) => return,
        }
    } else {
        body.to_vec()
    };
    let Ok(parsed) = grpc_web::parse(&raw) else {
        return;
    };
    let mut again = Vec::new();
    for m in &parsed.messages {
        again.extend_from_slice(&grpc_web::frame(m));
    }
    if parsed.has_trailers {
        let text: String = parsed.trailers.iter().map(|(n, v)| format!("{n}:{v}\r\n")).collect();
        again.push(0x80);
        again.extend_from_slice(&(text.len() as u32).to_be_bytes());
        again.extend_from_slice(text.as_bytes());
    }
    let reparsed = grpc_web::parse(&again).expect("a re-framed body parses");
    assert_eq!(reparsed, parsed);
    assert_eq!(grpc_web::from_text(&grpc_web::to_text(&raw)).expect("our base64 decodes"), raw);
});
