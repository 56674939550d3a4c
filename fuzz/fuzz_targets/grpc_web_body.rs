//! gRPC-Web response bodies (protobench-contract's `grpc_web`, as the
//! engine unwraps a server's `grpc-web` and `grpc-web-text` responses):
//! the first byte picks binary or text, whether the first message is kept,
//! and the size of the pieces the engine's `Deframer` reads it in; a body
//! that parses, framed again,
//! parses to the same messages and trailers, and the `Deframer` reading it
//! as it arrives finds the same.
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
    let text = pick & 1 == 1;
    let keep = pick & 2 == 2;
    let mut deframer = grpc_web::Deframer::new(text, keep.then_some(1 << 20));
    for piece in body.chunks(usize::from(pick >> 2) + 1) {
        deframer.feed(piece).expect("what parse reads, the deframer reads");
    }
    let done = deframer.finish().expect("what parse reads, the deframer finishes");
    assert_eq!(done.messages as usize, parsed.messages.len());
    assert_eq!(done.message_bytes, parsed.messages.iter().map(|m| m.len()).sum::<usize>());
    if keep {
        assert_eq!(done.first, parsed.messages.first().copied());
    }
    assert_eq!(done.trailers, grpc_web::Parsed { messages: vec![], ..parsed.clone() });
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
