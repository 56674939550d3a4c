//! gRPC's framing of an HTTP/2 stream, shared by the connection
//! ([`super::h2conn`], which reads it as frames arrive) and the driver
//! ([`super::http2`], which judges the reply): the `application/grpc`
//! content type, the `grpc-message` encoding and the length-prefixed
//! messages of a body.

/// `application/grpc`, optionally `+proto`/`+json` or `;` parameters.
pub(crate) fn is_grpc_content_type(v: &[u8]) -> bool {
    v.strip_prefix(b"application/grpc")
        .is_some_and(|rest| rest.is_empty() || rest[0] == b'+' || rest[0] == b';')
}

/// A `grpc-message` value, percent-decoded (bytes that do not decode are
/// kept as they are).
pub(crate) fn percent_decode(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"), 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The largest gRPC message a response may announce (16 MiB, as
/// [`super::MAX_KEPT_BODY`]): gRPC libraries refuse messages over 4 MiB by
/// default, and the contract's largest is 3.4 MB. A length prefix over it
/// (up to 4 GiB: the prefix is 32 bits) fails the call as `wrong_response`
/// as soon as its 5 bytes arrive, instead of the call reading (and, when its
/// body is kept, keeping) gigabytes until its timeout.
pub(crate) const MAX_GRPC_MESSAGE: usize = 16 << 20;

/// Splits a gRPC response body into length-prefixed messages as it arrives.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Deframer {
    head: [u8; 5],
    head_len: usize,
    left: usize,
    pub(super) messages: u32,
    pub(super) message_bytes: usize,
    pub(super) first_len: usize,
    pub(super) compressed: bool,
    /// The first length prefix over [`MAX_GRPC_MESSAGE`].
    pub(super) oversized: Option<usize>,
}

impl Deframer {
    pub(crate) fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.left > 0 {
                let t = self.left.min(data.len());
                self.left -= t;
                self.message_bytes += t;
                data = &data[t..];
                continue;
            }
            let t = (5 - self.head_len).min(data.len());
            self.head[self.head_len..self.head_len + t].copy_from_slice(&data[..t]);
            self.head_len += t;
            data = &data[t..];
            if self.head_len == 5 {
                self.compressed |= self.head[0] != 0;
                self.left = u32::from_be_bytes([self.head[1], self.head[2], self.head[3], self.head[4]]) as usize;
                if self.left > MAX_GRPC_MESSAGE && self.oversized.is_none() {
                    self.oversized = Some(self.left);
                }
                if self.messages == 0 {
                    self.first_len = self.left;
                }
                self.messages += 1;
                self.head_len = 0;
            }
        }
    }

    pub(super) fn partial(&self) -> bool {
        self.left > 0 || self.head_len > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deframer_handles_frames_split_anywhere() {
        let mut body = vec![0, 0, 0, 0, 3, b'a', b'b', b'c', 0, 0, 0, 0, 0];
        body.extend_from_slice(&[0, 0, 0, 0, 1, b'z']);
        for split in 0..body.len() {
            let mut d = Deframer::default();
            d.feed(&body[..split]);
            d.feed(&body[split..]);
            assert_eq!(
                (d.messages, d.message_bytes, d.first_len, d.partial()),
                (3, 4, 3, false),
                "split {split}"
            );
        }
    }

    #[test]
    fn deframer_marks_a_length_prefix_over_the_limit() {
        let mut d = Deframer::default();
        d.feed(&[0, 0, 0, 0, 1, b'a']);
        let at_limit = (MAX_GRPC_MESSAGE as u32).to_be_bytes();
        d.feed(&[0, at_limit[0], at_limit[1], at_limit[2], at_limit[3]]);
        assert_eq!(d.oversized, None, "the limit itself is allowed");
        let mut d = Deframer::default();
        d.feed(&[0, 0xff, 0xff]);
        d.feed(&[0xff, 0xff]);
        assert_eq!(d.oversized, Some(u32::MAX as usize));
        assert!(d.partial());
    }

    #[test]
    fn grpc_message_is_percent_decoded() {
        assert_eq!(percent_decode(b"injected%20failure"), "injected failure");
        assert_eq!(percent_decode(b"100%"), "100%");
    }
}
