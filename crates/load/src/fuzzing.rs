//! Entry points for the `cargo fuzz` targets in `fuzz/` (issue 35): the
//! engine's own parsers of what a server sends back, which are crate-private.
//! Not part of the API: hidden from the docs and free to change.
//!
//! Each function runs the parser as the engine does and panics only on a bug
//! (a broken invariant): an `Err` is the parser refusing the bytes.

use crate::driver::grpc::Deframer;
use crate::driver::hpack::Decoder;
use crate::error::HistogramError;

/// The HTTP/1.1 response head parser (`driver/http1.rs`), then the chunk-size
/// line after the head: the status and head length of a complete head,
/// `None` while incomplete, an error message for a malformed one.
pub fn http1_head(buf: &[u8]) -> Result<Option<(u16, usize)>, String> {
    crate::driver::http1::fuzz_head(buf).map_err(|e| e.message)
}

/// The HTTP/2 connection's frame reader (`driver/h2conn.rs`) fed `data` as a
/// server's bytes, `read` bytes per read, with streams open; the error that
/// ended the connection, if one did.
pub fn h2_frames(data: &[u8], read: usize) -> Option<String> {
    crate::driver::h2conn::fuzz_read(data, read, |grpc, reply| {
        let _ = crate::driver::http2::response(grpc, reply);
    })
    .map(|e| e.message)
}

/// A header field list: names and values.
pub type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// The engine's HPACK decoder (`driver/hpack.rs`), one per connection.
pub struct Hpack(Decoder);

impl Hpack {
    /// A decoder whose dynamic table may hold `allowed` bytes (our
    /// SETTINGS_HEADER_TABLE_SIZE; the engine uses 4,096).
    pub fn new(allowed: usize) -> Hpack {
        Hpack(Decoder::new(allowed))
    }

    /// Decodes one header block: every field, in order.
    pub fn decode(&mut self, block: &[u8]) -> Result<Fields, &'static str> {
        let mut out = Vec::new();
        self.0
            .decode(block, |_| true, |n, v| out.push((n.to_vec(), v.to_vec())))?;
        Ok(out)
    }

    /// Decodes one header block as the engine does, skipping the values of
    /// literals not indexed whose name `wanted` refuses.
    pub fn decode_wanted(&mut self, block: &[u8], wanted: impl Fn(&[u8]) -> bool) -> Result<Fields, &'static str> {
        let mut out = Vec::new();
        self.0
            .decode(block, wanted, |n, v| out.push((n.to_vec(), v.to_vec())))?;
        Ok(out)
    }
}

/// The gRPC deframer (`driver/grpc.rs`) fed `body` in pieces ending at
/// `cuts`, checked against the same body fed whole; then the body goes
/// through the driver's reading of a gRPC reply. Returns the number of
/// messages, or the driver's error for the reply.
pub fn grpc_deframe(body: &[u8], cuts: &[usize]) -> Result<u32, String> {
    let mut whole = Deframer::default();
    whole.feed(body);
    let mut pieces = Deframer::default();
    let mut at = 0;
    for &cut in cuts {
        let cut = cut.min(body.len()).max(at);
        pieces.feed(&body[at..cut]);
        at = cut;
    }
    pieces.feed(&body[at..]);
    assert_eq!(whole, pieces, "the deframer's state depends on how the body was cut");
    let reply = crate::driver::h2conn::Reply {
        status: 200,
        grpc_type: true,
        body: Some(bytes::BytesMut::from(body)),
        body_len: body.len(),
        deframer: whole,
        ..Default::default()
    };
    let response = crate::driver::http2::response(true, reply).map_err(|e| e.message)?;
    if let Some(message) = &response.body {
        assert!(
            message.len() <= body.len().saturating_sub(5),
            "the first message lies within the body"
        );
    }
    Ok(response.grpc_messages)
}

/// A stored histogram (base64 of HdrHistogram V2 + deflate) decoded and
/// printed as the `.hgrm` export does.
pub fn hgrm(encoded: &str) -> Result<String, HistogramError> {
    let h = protobench_model::hdr::EncodedHistogram::from(encoded).decode()?;
    Ok(crate::export::hgrm_of(&h))
}
