//! gRPC-Web framing (the protocol of grpc-web and tonic-web): the gRPC
//! frames of a call (a flag byte, a 4-byte big-endian length, the message)
//! in the HTTP body, followed in a response by a trailer frame (flag bit
//! `0x80`) whose payload is the trailers as HTTP/1.1 header lines. The
//! `-text` form base64-encodes the body (possibly in several padded
//! chunks).

use base64::Engine as _;

/// The binary form's content type.
pub const CONTENT_TYPE: &str = "application/grpc-web+proto";
/// The text form's content type.
pub const TEXT_CONTENT_TYPE: &str = "application/grpc-web-text";

/// A message in one uncompressed gRPC frame.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + 5);
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// The text form of a body: standard base64 with padding.
pub fn to_text(body: &[u8]) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.encode(body).into_bytes()
}

/// Decodes a text-form body, which may be several base64 chunks each with
/// its own padding (a server may encode each frame on its own).
pub fn from_text(text: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut rest = text;
    while !rest.is_empty() {
        // A chunk ends after its padding, or at the end of the body.
        let end = match rest.iter().position(|&b| b == b'=') {
            None => rest.len(),
            Some(i) => {
                let mut j = i;
                while j < rest.len() && rest[j] == b'=' {
                    j += 1;
                }
                j
            }
        };
        base64::engine::general_purpose::STANDARD
            .decode_vec(&rest[..end], &mut out)
            .map_err(|e| format!("invalid base64 in a grpc-web-text body: {e}"))?;
        rest = &rest[end..];
    }
    Ok(out)
}

/// A parsed gRPC-Web response body, borrowing from it: the engine parses
/// every response, so nothing is copied or allocated but the two small
/// lists.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Parsed<'a> {
    /// The messages, in order.
    pub messages: Vec<&'a [u8]>,
    /// The trailers as sent (names in any case, values trimmed), in order.
    pub trailers: Vec<(&'a str, &'a str)>,
    /// Whether a trailer frame was found.
    pub has_trailers: bool,
}

impl Parsed<'_> {
    /// The value of trailer `name` (HTTP field names are case-insensitive).
    pub fn trailer(&self, name: &str) -> Option<&str> {
        self.trailers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }
}

/// Splits a binary gRPC-Web body into its messages and its trailer frame.
/// A truncated frame, a compressed frame, data after the trailer frame, or
/// a trailer line without a colon is an error naming it.
pub fn parse(body: &[u8]) -> Result<Parsed<'_>, String> {
    let mut parsed = Parsed::default();
    let mut rest = body;
    while !rest.is_empty() {
        if parsed.has_trailers {
            return Err(format!("{} bytes after the trailer frame", rest.len()));
        }
        if rest.len() < 5 {
            return Err(format!("a truncated frame header of {} bytes", rest.len()));
        }
        let flag = rest[0];
        let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        if rest.len() - 5 < len {
            return Err(format!(
                "a frame announcing {len} bytes with {} left in the body",
                rest.len() - 5
            ));
        }
        let payload = &rest[5..5 + len];
        rest = &rest[5 + len..];
        if flag & 0x80 != 0 {
            parsed.has_trailers = true;
            let text = std::str::from_utf8(payload).map_err(|_| "trailers that are not UTF-8".to_owned())?;
            for line in text
                .split('\n')
                .map(|l| l.trim_end_matches('\r'))
                .filter(|l| !l.is_empty())
            {
                let (name, value) = line
                    .split_once(':')
                    .ok_or_else(|| format!("a trailer line without a colon: {line:?}"))?;
                parsed.trailers.push((name.trim(), value.trim()));
            }
        } else if flag & 0x01 != 0 {
            return Err("a compressed frame (no compression was asked for)".into());
        } else {
            parsed.messages.push(payload);
        }
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_trailers_round_trip_also_as_text_in_chunks() {
        let mut body = frame(b"hello");
        let trailers = b"Grpc-Status:0\r\ngrpc-message:\r\n";
        body.push(0x80);
        body.extend_from_slice(&(trailers.len() as u32).to_be_bytes());
        body.extend_from_slice(trailers);
        let parsed = parse(&body).unwrap();
        assert_eq!(parsed.messages, vec![&b"hello"[..]]);
        assert_eq!(parsed.trailer("grpc-status"), Some("0"));
        assert_eq!(parsed.trailer("grpc-message"), Some(""));
        // Each frame base64-encoded on its own, padding in the middle.
        let mut text = to_text(&body[..10]);
        text.extend_from_slice(&to_text(&body[10..]));
        assert!(text[..16].contains(&b'='), "{}", String::from_utf8_lossy(&text));
        assert_eq!(from_text(&text).unwrap(), body);
    }

    #[test]
    fn broken_bodies_are_errors_naming_the_problem() {
        assert!(parse(&[0, 0, 0]).unwrap_err().contains("truncated frame header"));
        assert!(parse(&[0, 0, 0, 0, 9, 1]).unwrap_err().contains("announcing 9 bytes"));
        assert!(parse(&[1, 0, 0, 0, 0]).unwrap_err().contains("compressed"));
        let mut after = vec![0x80, 0, 0, 0, 0];
        after.extend_from_slice(&frame(b"x"));
        assert!(parse(&after).unwrap_err().contains("after the trailer frame"));
        assert!(from_text(b"!!!").is_err());
    }
}
