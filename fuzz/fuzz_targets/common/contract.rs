//! What the contract targets share: a body decoded as the request and the
//! response of an operation (the first byte picks it), and each message
//! that decodes encoded again, which must decode to the same bytes.

use protobench_contract::{Encoding, Message, Operation};

/// Decodes `data` (after its first byte) in `encoding`.
pub fn decode(encoding: Encoding, data: &[u8]) {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let op = Operation::ALL[usize::from(pick) % Operation::ALL.len()];
    if let Ok(m) = Message::decode_request(op, encoding, body) {
        let once = m.encode_request(op, encoding);
        let again = Message::decode_request(op, encoding, &once)
            .unwrap_or_else(|e| panic!("{op:?} request {m:?} encoded as {encoding:?} does not decode: {e}"));
        assert_eq!(
            once,
            again.encode_request(op, encoding),
            "{op:?} request {m:?} in {encoding:?}"
        );
    }
    if let Ok(m) = Message::decode_response(op, encoding, body) {
        let once = m.encode_response(op, encoding);
        let again = Message::decode_response(op, encoding, &once)
            .unwrap_or_else(|e| panic!("{op:?} response {m:?} encoded as {encoding:?} does not decode: {e}"));
        assert_eq!(
            once,
            again.encode_response(op, encoding),
            "{op:?} response {m:?} in {encoding:?}"
        );
    }
}
