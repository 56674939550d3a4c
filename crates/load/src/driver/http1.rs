//! HTTP/1.1 with keep-alive and no pipelining: `rest`, `soap`, `graphql`,
//! `connect`, `connect-json`, `grpc-web`, `grpc-web-text` and custom
//! HTTP/1.1 calls.
//!
//! The request (line, headers, body) is encoded once; each call writes those
//! bytes and parses the response in place with `httparse` (Content-Length or
//! chunked bodies). Bodies are read and dropped unless asked for, so a large
//! response costs no copy.

use std::rc::Rc;

use bytes::{Buf, Bytes, BytesMut};
use protobench_model::load::ErrorKind;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::net::{Counted, Endpoint, Stream};
use protobench_contract::grpc_web::Deframer;

use super::{ByteCounters, CallError, Driver, Keep, MAX_KEPT_BODY, Response, body_too_large};

/// The HTTP/1.1 driver.
pub(crate) struct Http1 {
    endpoint: Endpoint,
    request: Bytes,
    /// gRPC-Web: unwrap each response's frames (`Some(true)`: base64 text).
    grpc_web: Option<bool>,
}

/// One HTTP/1.1 connection.
pub(crate) struct Conn {
    io: Counted<Stream>,
    buf: BytesMut,
    usable: bool,
}

impl Http1 {
    /// A driver sending `method path` with `headers` and `body` to `endpoint`.
    pub(crate) fn new(
        endpoint: Endpoint,
        method: &str,
        path: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Http1 {
        let mut req = Vec::with_capacity(256 + body.len());
        req.extend_from_slice(format!("{method} {path} HTTP/1.1\r\nHost: {}\r\n", endpoint.authority).as_bytes());
        let has = |name: &str| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        if !has("user-agent") {
            req.extend_from_slice(b"User-Agent: protobench\r\n");
        }
        for (name, value) in headers {
            req.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        }
        if !body.is_empty() || method != "GET" {
            req.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
        }
        req.extend_from_slice(b"\r\n");
        req.extend_from_slice(body);
        Http1 {
            endpoint,
            request: Bytes::from(req),
            grpc_web: None,
        }
    }

    /// The same driver reading gRPC-Web responses (`text`: base64): the
    /// body is always read, to find the status in the trailer frame; the
    /// response then holds the message (not its frame) like a gRPC one.
    pub(crate) fn grpc_web(mut self, text: bool) -> Http1 {
        self.grpc_web = Some(text);
        self
    }
}

/// Where a response body's bytes go as they are read.
enum Sink {
    /// Counted only.
    Drop,
    /// Kept; `asked`: the caller asked for it (past [`MAX_KEPT_BODY`] the
    /// call fails), else it is kept for an error status's message and
    /// dropped past that size.
    Keep { body: BytesMut, asked: bool },
    /// A gRPC-Web body, deframed as it arrives: only its trailer frame
    /// (and its first message, when asked for) is kept, so a large
    /// response costs no copy (as gRPC's over HTTP/2).
    Web(Deframer),
}

impl Sink {
    fn take(&mut self, data: &[u8]) -> Result<(), CallError> {
        match self {
            Sink::Drop => Ok(()),
            Sink::Keep { body, asked } => {
                let len = body.len() + data.len();
                if len <= MAX_KEPT_BODY {
                    body.extend_from_slice(data);
                } else if *asked {
                    return Err(body_too_large(len, false));
                } else {
                    *self = Sink::Drop;
                }
                Ok(())
            }
            Sink::Web(d) => d.feed(data).map_err(invalid_web),
        }
    }
}

fn invalid_web(e: String) -> CallError {
    CallError::new(ErrorKind::WrongResponse, format!("invalid gRPC-Web body: {e}"))
}

/// Fills in what the gRPC driver returns from a deframed gRPC-Web body:
/// the status from the trailer frame (or from the headers of a
/// trailers-only response), the messages and their bytes, the first
/// message when kept.
fn web_status(resp: &mut Response, body: &Deframer) -> Result<(), CallError> {
    let done = body.finish().map_err(invalid_web)?;
    if done.trailers.has_trailers {
        let code = done.trailers.trailer("grpc-status").and_then(|c| c.parse().ok());
        let Some(code) = code else {
            return Err(CallError::new(
                ErrorKind::WrongResponse,
                "a gRPC-Web trailer frame without a valid grpc-status",
            ));
        };
        let message = done.trailers.trailer("grpc-message").unwrap_or("");
        resp.grpc = Some(super::GrpcStatus {
            code,
            message: super::grpc::percent_decode(message.as_bytes()),
        });
    } else if resp.grpc.is_none() {
        return Err(CallError::new(
            ErrorKind::WrongResponse,
            "a gRPC-Web response with neither a trailer frame nor a grpc-status header",
        ));
    }
    resp.grpc_messages = done.messages;
    resp.body_len = done.message_bytes;
    resp.body = done.first.map(Bytes::copy_from_slice);
    Ok(())
}

impl Driver for Http1 {
    type Conn = Conn;

    async fn connect(&self, counters: &Rc<ByteCounters>) -> Result<Conn, CallError> {
        let io = self.endpoint.connect(counters).await?;
        Ok(Conn {
            io,
            buf: BytesMut::with_capacity(64 * 1024),
            usable: true,
        })
    }

    async fn call(&self, conn: &mut Conn, keep: Keep) -> Result<Response, CallError> {
        let result = exchange(conn, &self.request, keep, self.grpc_web).await;
        if result.is_err() {
            conn.usable = false;
        }
        result
    }

    fn share(&self, _conn: &Conn) -> Option<Conn> {
        None
    }

    fn is_usable(&self, conn: &Conn) -> bool {
        conn.usable
    }
}

const MAX_HEADERS: usize = 64;
/// The largest response head, and the largest chunked-body trailer section:
/// a server whose head never ends (one endless header line, or header lines
/// without the empty line) would otherwise grow the read buffer until the
/// call's timeout, and parse it again from the start on every read.
const MAX_HEAD_BYTES: usize = 64 * 1024;

struct Head {
    status: u16,
    head_len: usize,
    body: BodyLength,
    /// Where the `Content-Type` value lies in the parsed buffer: a string is
    /// made of it only for the responses whose body is kept.
    content_type: Option<std::ops::Range<usize>>,
    /// `grpc-status` and `grpc-message` headers (a trailers-only gRPC-Web
    /// response).
    grpc: Option<super::GrpcStatus>,
    close: bool,
}

enum BodyLength {
    Fixed(usize),
    Chunked,
    UntilClose,
}

fn parse_head(buf: &[u8]) -> Result<Option<Head>, CallError> {
    // Left uninitialised: httparse writes only the headers it finds (zeroing
    // 64 of them was a tenth of the engine's instructions per call).
    let mut headers = [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(&mut resp, buf, &mut headers);
    let head_len = match parsed {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => {
            return Err(CallError::new(
                ErrorKind::Other,
                format!("invalid HTTP/1.1 response: {e}"),
            ));
        }
    };
    let status = resp.code.unwrap_or(0);
    let mut body = BodyLength::UntilClose;
    let mut content_type = None;
    let mut grpc: Option<super::GrpcStatus> = None;
    let mut close = resp.version == Some(0);
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let n = content_length(h.value)
                .ok_or_else(|| CallError::new(ErrorKind::Other, "invalid HTTP/1.1 response: bad content-length"))?;
            if !matches!(body, BodyLength::Chunked) {
                body = BodyLength::Fixed(n);
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            if h.value.windows(7).any(|w| w.eq_ignore_ascii_case(b"chunked")) {
                body = BodyLength::Chunked;
            }
        } else if h.name.eq_ignore_ascii_case("content-type") {
            let start = h.value.as_ptr() as usize - buf.as_ptr() as usize;
            content_type = Some(start..start + h.value.len());
        } else if h.name.eq_ignore_ascii_case("grpc-status") {
            let code = std::str::from_utf8(h.value).ok().and_then(|v| v.trim().parse().ok());
            let status = grpc.get_or_insert(super::GrpcStatus {
                code: 2,
                message: String::new(),
            });
            status.code = code.unwrap_or(2);
        } else if h.name.eq_ignore_ascii_case("grpc-message") {
            let message = super::grpc::percent_decode(h.value);
            grpc.get_or_insert(super::GrpcStatus {
                code: 2,
                message: String::new(),
            })
            .message = message;
        } else if h.name.eq_ignore_ascii_case("connection") {
            if h.value.eq_ignore_ascii_case(b"close") {
                close = true;
            } else if h.value.eq_ignore_ascii_case(b"keep-alive") {
                close = false;
            }
        }
    }
    if status == 204 || status == 304 || (100..200).contains(&status) {
        body = BodyLength::Fixed(0);
    }
    Ok(Some(Head {
        status,
        head_len,
        body,
        content_type,
        grpc,
        close,
    }))
}

/// A `Content-Length` value: digits, with spaces or tabs around them
/// (RFC 9110 8.6); `None` for anything else or a length past `usize`.
/// (Read in place: through `str` and `trim` it cost about a tenth of the
/// driver's own instructions per call.)
fn content_length(value: &[u8]) -> Option<usize> {
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = value.iter().position(|b| !ows(b))?;
    let end = value.iter().rposition(|b| !ows(b))? + 1;
    value[start..end].iter().try_fold(0usize, |n, &b| {
        let digit = b.wrapping_sub(b'0');
        (digit < 10).then_some(())?;
        n.checked_mul(10)?.checked_add(usize::from(digit))
    })
}

/// The size in a chunk-size line (without its CRLF): hexadecimal digits,
/// then optional spaces and `;` extensions. `None` for anything else or a
/// size past `isize::MAX` (no body is that long, and the reader adds the
/// CRLF's 2 bytes to it: a size of `usize::MAX` overflowed there; issue 35).
fn chunk_size(line: &[u8]) -> Option<usize> {
    // Read as bytes: the hex digits before any `;extension`, blanks
    // around them allowed (the str route cost about 800 instructions
    // a chunk under callgrind, 3 chunks a gRPC-Web call).
    let end = memchr::memchr(b';', line).unwrap_or(line.len());
    let digits = line[..end].trim_ascii();
    if digits.is_empty() {
        return None;
    }
    let mut size: usize = 0;
    for &b in digits {
        let digit = (b as char).to_digit(16)?;
        size = size.checked_mul(16)?.checked_add(digit as usize)?;
    }
    (size <= isize::MAX as usize).then_some(size)
}

/// For the fuzz target `http1_head` (issue 35): parses `buf` as a response
/// head and, if it is complete, its bytes after the head as a chunk-size
/// line; checks that what the parser returns lies within `buf`. Returns the
/// status and the head's length, `None` while incomplete.
pub(crate) fn fuzz_head(buf: &[u8]) -> Result<Option<(u16, usize)>, CallError> {
    let Some(head) = parse_head(buf)? else { return Ok(None) };
    assert!(head.head_len <= buf.len(), "the head ends within the buffer");
    if let Some(range) = &head.content_type {
        assert!(range.end <= head.head_len, "the content type lies within the head");
    }
    let rest = &buf[head.head_len..];
    if let Some(end) = rest.windows(2).position(|w| w == b"\r\n")
        && let Some(size) = chunk_size(&rest[..end])
    {
        assert!(size.checked_add(2).is_some(), "the chunk and its CRLF have a length");
    }
    Ok(Some((head.status, head.head_len)))
}

/// Reads more bytes into `conn.buf`; 0 bytes read is a reset (closed mid-response).
async fn fill(conn: &mut Conn) -> Result<usize, CallError> {
    if conn.buf.capacity() - conn.buf.len() < 8 * 1024 {
        conn.buf.reserve(64 * 1024);
    }
    let n = conn
        .io
        .read_buf(&mut conn.buf)
        .await
        .map_err(|e| CallError::io("reading the response", &e))?;
    Ok(n)
}

/// One call: writes the request, reads the response. `web`: a gRPC-Web
/// call (`Some(true)`: text), whose body is deframed as it arrives when it
/// is gRPC-Web (another answer is kept whole, for the check to name it).
// Longer than the ~120-line guide: one read of a response, head then body
// in its three framings, sharing the connection's buffer and the sink.
async fn exchange(conn: &mut Conn, request: &[u8], keep: Keep, web: Option<bool>) -> Result<Response, CallError> {
    conn.io
        .write_all(request)
        .await
        .map_err(|e| CallError::io("writing the request", &e))?;
    conn.buf.clear();
    let head = loop {
        // Nothing to parse before the first read.
        if !conn.buf.is_empty()
            && let Some(head) = parse_head(&conn.buf)?
        {
            break head;
        }
        if conn.buf.len() > MAX_HEAD_BYTES {
            return Err(CallError::new(
                ErrorKind::Other,
                "invalid HTTP/1.1 response: header section too large",
            ));
        }
        if fill(conn).await? == 0 {
            let what = if conn.buf.is_empty() {
                "before responding"
            } else {
                "in the middle of the response head"
            };
            return Err(CallError::new(
                ErrorKind::Reset,
                format!("connection closed by the server {what}"),
            ));
        }
    };
    let announced = match head.body {
        BodyLength::Fixed(len) => Some(len),
        BodyLength::Chunked | BodyLength::UntilClose => None,
    };
    let keep_body = keep.body_of(announced);
    let is_web = web.is_some()
        && head.status == 200
        && head
            .content_type
            .as_ref()
            .is_some_and(|r| conn.buf[r.clone()].starts_with(b"application/grpc-web"));
    let mut sink = match web {
        Some(text) if is_web => Sink::Web(Deframer::new(text, keep_body.then_some(MAX_KEPT_BODY))),
        // Not gRPC-Web: kept whole, for the check to name what it is.
        Some(_) => Sink::Keep {
            body: BytesMut::new(),
            asked: true,
        },
        None if keep_body || !(200..300).contains(&head.status) => Sink::Keep {
            body: BytesMut::new(),
            asked: keep_body,
        },
        None => Sink::Drop,
    };
    let content_type = match head.content_type {
        Some(range) if matches!(sink, Sink::Keep { .. }) || (is_web && keep_body) => {
            Some(String::from_utf8_lossy(&conn.buf[range]).into_owned())
        }
        // a gRPC-Web caller names a missing content type as ""
        None if web.is_some() && !is_web => Some(String::new()),
        _ => None,
    };
    conn.buf.advance(head.head_len);
    let body_len = match head.body {
        BodyLength::Fixed(len) => {
            if len > MAX_KEPT_BODY
                && let Sink::Keep { asked, .. } = sink
            {
                // Refused before a byte of it is read.
                if asked {
                    return Err(body_too_large(len, true));
                }
                sink = Sink::Drop;
            }
            let mut got = 0;
            loop {
                let take = conn.buf.len().min(len - got);
                sink.take(&conn.buf[..take])?;
                conn.buf.advance(take);
                got += take;
                if got == len {
                    break;
                }
                conn.buf.clear();
                if fill(conn).await? == 0 {
                    return Err(CallError::new(
                        ErrorKind::Reset,
                        "connection closed by the server in the middle of the body",
                    ));
                }
            }
            len
        }
        BodyLength::Chunked => read_chunked(conn, &mut sink).await?,
        BodyLength::UntilClose => {
            let mut got = 0;
            loop {
                got += conn.buf.len();
                sink.take(&conn.buf)?;
                conn.buf.clear();
                if fill(conn).await? == 0 {
                    break;
                }
            }
            conn.usable = false;
            got
        }
    };
    if head.close {
        conn.usable = false;
    }
    let mut resp = Response {
        status: head.status,
        content_type,
        body: None,
        body_len,
        grpc: head.grpc,
        grpc_messages: 0,
    };
    match sink {
        Sink::Drop => {}
        Sink::Keep { body, .. } => resp.body = Some(body.freeze()),
        Sink::Web(d) => web_status(&mut resp, &d)?,
    }
    Ok(resp)
}

/// Reads a chunked body; returns its decoded length.
async fn read_chunked(conn: &mut Conn, sink: &mut Sink) -> Result<usize, CallError> {
    let bad = |what: &str| CallError::new(ErrorKind::Other, format!("invalid HTTP/1.1 response: {what}"));
    let mut total = 0;
    loop {
        // The chunk-size line.
        let line_end = loop {
            if let Some(i) = conn.buf.windows(2).position(|w| w == b"\r\n") {
                break i;
            }
            if conn.buf.len() > 1024 {
                return Err(bad("chunk size line too long"));
            }
            if fill(conn).await? == 0 {
                return Err(CallError::new(
                    ErrorKind::Reset,
                    "connection closed by the server in the middle of the body",
                ));
            }
        };
        let size = chunk_size(&conn.buf[..line_end]).ok_or_else(|| bad("chunk size"))?;
        conn.buf.advance(line_end + 2);
        if size == 0 {
            // Trailers, then an empty line; within MAX_HEAD_BYTES, as a head.
            let mut trailers = 0;
            loop {
                if let Some(i) = conn.buf.windows(2).position(|w| w == b"\r\n") {
                    conn.buf.advance(i + 2);
                    if i == 0 {
                        return Ok(total);
                    }
                    trailers += i + 2;
                    if trailers > MAX_HEAD_BYTES {
                        return Err(bad("chunked trailer section too large"));
                    }
                    continue;
                }
                if trailers + conn.buf.len() > MAX_HEAD_BYTES {
                    return Err(bad("chunked trailer section too large"));
                }
                if fill(conn).await? == 0 {
                    return Err(CallError::new(
                        ErrorKind::Reset,
                        "connection closed by the server in the chunk trailer",
                    ));
                }
            }
        }
        // A size near usize::MAX (`ffffffffffffffff`) would overflow the
        // count of bytes left (a panic in a debug build, a wrong length in a
        // release one).
        let mut left = size.checked_add(2).ok_or_else(|| bad("chunk size"))?;
        while left > 0 {
            if conn.buf.is_empty() && fill(conn).await? == 0 {
                return Err(CallError::new(
                    ErrorKind::Reset,
                    "connection closed by the server in the middle of the body",
                ));
            }
            let take = conn.buf.len().min(left);
            let data = take.min(left.saturating_sub(2));
            sink.take(&conn.buf[..data])?;
            conn.buf.advance(take);
            left -= take;
        }
        total = total.checked_add(size).ok_or_else(|| bad("chunked body length"))?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(raw: &[u8]) -> Head {
        parse_head(raw).expect("a valid head").expect("a complete head")
    }

    #[test]
    fn a_head_gives_its_status_length_and_where_its_content_type_lies() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-type:  application/json \r\n\r\n{}";
        let h = head(raw);
        assert_eq!(h.status, 200);
        assert_eq!(h.head_len, raw.len() - 2);
        assert!(matches!(h.body, BodyLength::Fixed(2)));
        assert!(!h.close);
        assert_eq!(&raw[h.content_type.expect("a content type")], b"application/json");
    }

    #[test]
    fn body_length_follows_chunking_status_and_the_connection() {
        let h = head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n");
        assert!(matches!(h.body, BodyLength::Chunked));
        assert!(h.content_type.is_none());
        let h = head(b"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n");
        assert!(matches!(h.body, BodyLength::Fixed(0)));
        let h = head(b"HTTP/1.0 200 OK\r\n\r\n");
        assert!(matches!(h.body, BodyLength::UntilClose));
        assert!(h.close);
        let h = head(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
        assert!(h.close);
    }

    #[test]
    fn content_length_is_digits_with_optional_spaces_around() {
        for (value, want) in [
            (&b"0"[..], Some(0)),
            (b"20", Some(20)),
            (b" \t1048576 ", Some(1_048_576)),
            (b"", None),
            (b"  ", None),
            (b"-1", None),
            (b"+1", None),
            (b"1 2", None),
            (b"1,1", None),
            (b"0x10", None),
            (b"\xd9\xa3", None),
        ] {
            assert_eq!(content_length(value), want, "{:?}", String::from_utf8_lossy(value));
        }
        let max = usize::MAX.to_string();
        assert_eq!(content_length(max.as_bytes()), Some(usize::MAX));
        let past = format!("{max}0");
        assert_eq!(content_length(past.as_bytes()), None);
    }

    #[test]
    fn a_kept_body_past_its_limit_fails_if_asked_for_and_is_dropped_if_not() {
        let kept = |sink: &Sink| match sink {
            Sink::Keep { body, .. } => Some(body.len()),
            _ => None,
        };
        let mut sink = Sink::Keep {
            body: BytesMut::from(&vec![0u8; MAX_KEPT_BODY - 1][..]),
            asked: true,
        };
        sink.take(b"a").expect("up to the limit");
        assert_eq!(kept(&sink), Some(MAX_KEPT_BODY));
        let err = sink.take(b"b").expect_err("past the limit");
        assert_eq!(err.kind, ErrorKind::WrongResponse);
        assert!(err.message.contains("MAX_KEPT_BODY"), "{err}");
        // Kept only for an error status: dropped, and the call goes on.
        let mut sink = Sink::Keep {
            body: BytesMut::from(&vec![0u8; MAX_KEPT_BODY][..]),
            asked: false,
        };
        sink.take(b"b").expect("not asked for");
        assert!(matches!(sink, Sink::Drop));
        sink.take(b"c").expect("nothing kept");
        assert!(matches!(sink, Sink::Drop));
    }

    #[test]
    fn chunk_sizes_are_hex_with_extensions_and_a_size_past_isize_is_refused() {
        for (line, want) in [
            (&b"0"[..], Some(0)),
            (b"1a", Some(26)),
            (b"FF ; name=value", Some(255)),
            (b"", None),
            (b"g", None),
            (b"-1", None),
            (b"+1", None),
            (b" ", None),
            (b";x", None),
            (b"\xff", None),
            (b" 00000000000000000010\t", Some(16)),
        ] {
            assert_eq!(chunk_size(line), want, "{:?}", String::from_utf8_lossy(line));
        }
        // Issue 35: the reader adds the CRLF's 2 bytes to the size, which
        // overflowed for a size of usize::MAX (a panic in a debug build, a
        // wrong length in release).
        let max = format!("{:x}", usize::MAX);
        assert_eq!(chunk_size(max.as_bytes()), None);
        let past = format!("{:x}", isize::MAX as usize + 1);
        assert_eq!(chunk_size(past.as_bytes()), None);
        let most = format!("{:x}", isize::MAX);
        assert_eq!(chunk_size(most.as_bytes()), Some(isize::MAX as usize));
    }

    #[test]
    fn a_partial_head_waits_and_a_malformed_one_is_an_error() {
        assert!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Le")
                .expect("valid so far")
                .is_none()
        );
        assert!(parse_head(b"").expect("valid so far").is_none());
        let err = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n")
            .err()
            .expect("an error");
        assert!(err.to_string().contains("bad content-length"), "{err}");
        assert!(parse_head(b"SMTP 220\r\n\r\n").is_err());
        // More headers than the parser holds is an error, not a panic.
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            many.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert!(parse_head(&many).is_err());
    }
}
