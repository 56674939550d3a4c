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
            parsed.trailers = parse_trailers(payload)?.trailers;
        } else if flag & 0x01 != 0 {
            return Err("a compressed frame (no compression was asked for)".into());
        } else {
            parsed.messages.push(payload);
        }
    }
    Ok(parsed)
}

/// The largest trailer frame a [`Deframer`] keeps (the trailers are a few
/// header lines; a bigger one is a broken or hostile server).
pub const MAX_TRAILER_FRAME: usize = 64 * 1024;

/// A gRPC-Web response body read as it arrives, binary or text: each
/// frame's header is read across reads, messages are counted and measured
/// (the first one kept when asked for), and only the trailer frame is
/// kept. The rules are [`parse`]'s (and [`from_text`]'s for text); the
/// engine reads every response this way, so a large message is never
/// copied (the gRPC driver's `Deframer` does the same over HTTP/2).
#[derive(Debug, Clone, Default)]
pub struct Deframer {
    text: bool,
    /// The largest first message kept (`None`: none kept).
    keep_first: Option<usize>,
    /// Text: base64 characters of an unfinished 4-character group.
    quantum: [u8; 4],
    quantum_len: usize,
    header: [u8; 5],
    header_len: usize,
    /// Payload bytes still to come in the current frame.
    left: usize,
    /// The current frame's announced length (for the truncation message).
    announced: usize,
    in_trailer: bool,
    /// The messages seen (complete or begun).
    pub messages: u32,
    /// Their bytes.
    pub message_bytes: usize,
    first: Option<Vec<u8>>,
    trailer: Vec<u8>,
    has_trailers: bool,
    after_trailers: usize,
}

/// What a [`Deframer`] found once the body ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Deframed<'a> {
    /// How many messages.
    pub messages: u32,
    /// Their bytes.
    pub message_bytes: usize,
    /// The first message, when kept.
    pub first: Option<&'a [u8]>,
    /// The trailers (as [`Parsed::trailers`]), when a trailer frame came.
    pub trailers: Parsed<'a>,
}

impl Deframer {
    /// A reader of a binary (`text`: base64) body; `keep_first`: keep the
    /// first message if it is at most this long.
    pub fn new(text: bool, keep_first: Option<usize>) -> Deframer {
        Deframer {
            text,
            keep_first,
            ..Deframer::default()
        }
    }

    /// Reads the next bytes of the body.
    pub fn feed(&mut self, data: &[u8]) -> Result<(), String> {
        if !self.text {
            return self.frames(data);
        }
        let mut data = data;
        // Finish a group begun in an earlier read.
        while self.quantum_len > 0 && !data.is_empty() {
            self.quantum[self.quantum_len] = data[0];
            self.quantum_len += 1;
            data = &data[1..];
            if self.quantum_len == 4 {
                self.quantum_len = 0;
                let group = self.quantum;
                self.decode(&group)?;
            }
        }
        if self.quantum_len > 0 {
            return Ok(()); // (the data ended inside the group)
        }
        // Whole groups, in pieces; a padded group ends a chunk (and must
        // be decoded on its own terms: the engine refuses padding mid-run).
        let whole = data.len() / 4 * 4;
        let mut rest = &data[..whole];
        while !rest.is_empty() {
            let end = match memchr::memchr(b'=', rest) {
                Some(i) => (i / 4 + 1) * 4,
                None => rest.len(),
            };
            let (run, tail) = rest.split_at(end.min(rest.len()));
            self.run(run)?;
            rest = tail;
        }
        let tail = &data[whole..];
        self.quantum[..tail.len()].copy_from_slice(tail);
        self.quantum_len = tail.len();
        Ok(())
    }

    /// Whole base64 groups of one chunk (only its last group may be
    /// padded). The payload of a message that is not kept is skipped a
    /// group (3 bytes) at a time without decoding: the engine counts such
    /// a message's bytes, as it does in binary, and decodes only frame
    /// headers, the trailer frame and the kept message (a text body costs
    /// about what a binary one does, not a base64 decoding of every byte).
    /// So a character that is not base64 inside a skipped message goes
    /// unnoticed, as a wrong byte in a binary message that is not kept does.
    fn run(&mut self, mut run: &[u8]) -> Result<(), String> {
        let padded = run.last() == Some(&b'=');
        while !run.is_empty() {
            let groups = run.len() / 4;
            let skipping = !self.in_trailer && self.left >= 3 && !(self.messages == 1 && self.first.is_some());
            if skipping {
                // (a padded last group decodes to fewer than 3 bytes)
                let skip = (self.left / 3).min(groups - usize::from(padded));
                if skip > 0 {
                    self.left -= 3 * skip;
                    run = &run[4 * skip..];
                    continue;
                }
            }
            // Up to where the state can change: a frame header (5 bytes),
            // or the rest of the payload being read.
            let want = if self.left == 0 { 2 } else { self.left.div_ceil(3) };
            let n = want.clamp(1, 1024).min(groups);
            self.decode(&run[..4 * n])?;
            run = &run[4 * n..];
        }
        Ok(())
    }

    /// Decodes at most 1,024 groups (on the stack: a small buffer for the
    /// few groups of a frame header, which most decodes are).
    fn decode(&mut self, groups: &[u8]) -> Result<(), String> {
        let bad = |e: base64::DecodeSliceError| format!("invalid base64 in a grpc-web-text body: {e}");
        let engine = &base64::engine::general_purpose::STANDARD;
        if groups.len() <= 32 {
            let mut out = [0u8; 24];
            let n = engine.decode_slice(groups, &mut out).map_err(bad)?;
            return self.frames(&out[..n]);
        }
        let mut out = [0u8; 3 * 1024];
        let n = engine.decode_slice(groups, &mut out).map_err(bad)?;
        self.frames(&out[..n])
    }

    fn frames(&mut self, mut data: &[u8]) -> Result<(), String> {
        while !data.is_empty() {
            if self.has_trailers && self.left == 0 {
                self.after_trailers += data.len();
                return Ok(());
            }
            if self.left == 0 && self.header_len < 5 {
                let take = (5 - self.header_len).min(data.len());
                self.header[self.header_len..self.header_len + take].copy_from_slice(&data[..take]);
                self.header_len += take;
                data = &data[take..];
                if self.header_len == 5 {
                    self.begin()?;
                }
                continue;
            }
            let take = self.left.min(data.len());
            let payload = &data[..take];
            if self.in_trailer {
                self.trailer.extend_from_slice(payload);
            } else if let Some(first) = self.first.as_mut().filter(|_| self.messages == 1) {
                first.extend_from_slice(payload);
            }
            self.left -= take;
            data = &data[take..];
            if self.left == 0 {
                self.header_len = 0;
            }
        }
        Ok(())
    }

    /// A frame header is complete: what kind of frame, how long.
    fn begin(&mut self) -> Result<(), String> {
        let [flag, a, b, c, d] = self.header;
        let len = u32::from_be_bytes([a, b, c, d]) as usize;
        self.announced = len;
        self.left = len;
        if flag & 0x80 != 0 {
            if len > MAX_TRAILER_FRAME {
                return Err(format!(
                    "a trailer frame of {len} bytes, over the {MAX_TRAILER_FRAME} read"
                ));
            }
            self.has_trailers = true;
            self.in_trailer = true;
        } else if flag & 0x01 != 0 {
            return Err("a compressed frame (no compression was asked for)".into());
        } else {
            self.messages += 1;
            self.message_bytes += len;
            if self.messages == 1
                && let Some(max) = self.keep_first
            {
                if len > max {
                    return Err(format!("a message of {len} bytes, over the {max} kept to check it"));
                }
                self.first = Some(Vec::with_capacity(len));
            }
        }
        if len == 0 {
            self.header_len = 0;
        }
        Ok(())
    }

    /// The body has ended: what it held, or what was wrong with its end.
    pub fn finish(&self) -> Result<Deframed<'_>, String> {
        if self.quantum_len > 0 {
            return Err(format!(
                "invalid base64 in a grpc-web-text body: {} characters after the last whole group",
                self.quantum_len
            ));
        }
        if self.after_trailers > 0 {
            return Err(format!("{} bytes after the trailer frame", self.after_trailers));
        }
        if self.left > 0 {
            return Err(format!(
                "a frame announcing {} bytes with {} left in the body",
                self.announced,
                self.announced - self.left
            ));
        }
        if self.header_len > 0 && self.header_len < 5 {
            return Err(format!("a truncated frame header of {} bytes", self.header_len));
        }
        let trailers = if self.has_trailers {
            parse_trailers(&self.trailer)?
        } else {
            Parsed::default()
        };
        Ok(Deframed {
            messages: self.messages,
            message_bytes: self.message_bytes,
            first: self.first.as_deref(),
            trailers,
        })
    }
}

/// A trailer frame's payload: header lines (names in any case, values
/// without the blanks around them); a line without a colon is an error
/// naming it. Read as bytes (the str route's char searches cost about
/// 900 instructions a call under callgrind).
fn parse_trailers(payload: &[u8]) -> Result<Parsed<'_>, String> {
    let mut parsed = Parsed {
        has_trailers: true,
        ..Parsed::default()
    };
    fn utf8(b: &[u8]) -> Result<&str, String> {
        std::str::from_utf8(b).map_err(|_| "trailers that are not UTF-8".to_owned())
    }
    for line in payload.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let colon = memchr::memchr(b':', line)
            .ok_or_else(|| format!("a trailer line without a colon: {:?}", String::from_utf8_lossy(line)))?;
        let name = utf8(line[..colon].trim_ascii())?;
        let value = utf8(line[colon + 1..].trim_ascii())?;
        parsed.trailers.push((name, value));
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

    /// Messages, their bytes, the first one, the trailers.
    type Found = (u32, usize, Option<Vec<u8>>, Vec<(String, String)>);

    /// A body read in pieces of every size from 1 byte: the same messages
    /// and trailers as [`parse`] (of the decoded text) finds, and the same
    /// errors.
    fn deframe_in_pieces(body: &[u8], text: bool) -> Vec<Result<Found, String>> {
        (1..=body.len().max(1))
            .map(|piece| {
                let mut d = Deframer::new(text, Some(1 << 20));
                for chunk in body.chunks(piece) {
                    d.feed(chunk)?;
                }
                let done = d.finish()?;
                let trailers = done
                    .trailers
                    .trailers
                    .iter()
                    .map(|(n, v)| (n.to_string(), v.to_string()))
                    .collect();
                Ok((
                    done.messages,
                    done.message_bytes,
                    done.first.map(<[u8]>::to_vec),
                    trailers,
                ))
            })
            .collect()
    }

    #[test]
    fn the_deframer_reads_what_parse_reads_in_pieces_of_any_size() {
        let trailers = b"grpc-status:0\r\ngrpc-message: ok \r\n";
        let mut body = frame(b"first message");
        body.extend_from_slice(&frame(b""));
        body.extend_from_slice(&frame(b"third"));
        body.push(0x80);
        body.extend_from_slice(&(trailers.len() as u32).to_be_bytes());
        body.extend_from_slice(trailers);
        let p = parse(&body).unwrap();
        let want = (
            3,
            18,
            Some(b"first message".to_vec()),
            vec![("grpc-status".into(), "0".into()), ("grpc-message".into(), "ok".into())],
        );
        assert_eq!(p.messages.len(), 3);
        for got in deframe_in_pieces(&body, false) {
            assert_eq!(got.as_ref(), Ok(&want));
        }
        // text: each frame encoded on its own (padding mid-body), and whole
        let mut text = Vec::new();
        for part in [&body[..18], &body[18..23], &body[23..]] {
            text.extend_from_slice(&to_text(part));
        }
        assert!(text[..text.len() - 4].contains(&b'='));
        for t in [text, to_text(&body)] {
            for got in deframe_in_pieces(&t, true) {
                assert_eq!(got.as_ref(), Ok(&want));
            }
        }
        // not kept when not asked for
        let mut d = Deframer::new(false, None);
        d.feed(&body).unwrap();
        assert_eq!(d.finish().unwrap().first, None);
    }

    #[test]
    fn the_deframer_refuses_what_parse_refuses_wherever_the_pieces_end() {
        let mut after = vec![0x80, 0, 0, 0, 0];
        after.extend_from_slice(&frame(b"x"));
        for (body, says) in [
            (&[0u8, 0, 0][..], "a truncated frame header of 3 bytes"),
            (
                &[0, 0, 0, 0, 9, 1][..],
                "a frame announcing 9 bytes with 1 left in the body",
            ),
            (
                &[1, 0, 0, 0, 0][..],
                "a compressed frame (no compression was asked for)",
            ),
            (&after[..], "6 bytes after the trailer frame"),
            (&[0x80, 0, 0, 0, 1, b'x'][..], "a trailer line without a colon: \"x\""),
        ] {
            assert_eq!(parse(body).unwrap_err(), says);
            for got in deframe_in_pieces(body, false) {
                assert_eq!(got.unwrap_err(), says);
            }
        }
        let mut d = Deframer::new(false, Some(4));
        assert_eq!(
            d.feed(&frame(b"hello")).unwrap_err(),
            "a message of 5 bytes, over the 4 kept to check it"
        );
        let mut d = Deframer::new(false, None);
        assert!(
            d.feed(&[0x80, 0, 1, 0, 1])
                .unwrap_err()
                .contains("a trailer frame of 65537 bytes")
        );
        let mut d = Deframer::new(true, None);
        d.feed(b"AAAAA").unwrap();
        assert!(
            d.finish()
                .unwrap_err()
                .contains("1 characters after the last whole group")
        );
        assert!(
            Deframer::new(true, None)
                .feed(b"!!!!")
                .unwrap_err()
                .contains("invalid base64")
        );
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
