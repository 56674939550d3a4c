//! HPACK (RFC 7541) for the engine's HTTP/2 client: the request's header
//! block, encoded once per driver ([`HeaderBlock`]), and the decoding of
//! response and trailer header blocks.
//!
//! The decoder is written here because the crate first used for it
//! (`loona-hpack` 0.4) builds its Huffman decoding table anew for every
//! Huffman-coded string:
//! under callgrind, rest-h2 against the built-in server (whose
//! `content-length` is a Huffman-coded literal on every response) cost
//! 215,118 instructions per call, 198,000 of them in that table's
//! construction. This decoder builds its table once per process. The crate
//! stays a test dependency: the tests decode the same blocks with both.
//!
//! The Huffman code is canonical (codes of one length are consecutive and
//! ordered by symbol), so the code lengths of RFC 7541 Appendix B are all
//! the table needs; decoding walks the bits one length at a time.

use std::collections::VecDeque;
use std::sync::OnceLock;

/// The static table, RFC 7541 Appendix A (index 1 first).
const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// Where a field stands in the static table, for an encoder: the index of
/// the same name and value, and the first index of the name.
pub(crate) fn static_index(name: &[u8], value: &[u8]) -> (Option<u8>, Option<u8>) {
    let full = STATIC.iter().position(|&(n, v)| n == name && v == value);
    let named = STATIC.iter().position(|&(n, _)| n == name);
    (full.map(|i| i as u8 + 1), named.map(|i| i as u8 + 1))
}

/// The Huffman code's length in bits for each symbol 0..=255 and EOS
/// (256), RFC 7541 Appendix B.
const CODE_BITS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28,
    28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12,
    10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6,
    5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22,
    22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22, 21, 20,
    22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28,
    27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28,
    27, 27, 27, 27, 27, 26, 30,
];

const EOS: u16 = 256;
const MAX_BITS: usize = 30;

/// The canonical code by length: for each length, its first code, how many
/// codes it has, and where its symbols start in `symbols`.
struct Canonical {
    first: [u32; MAX_BITS + 1],
    count: [u32; MAX_BITS + 1],
    start: [u16; MAX_BITS + 1],
    /// Symbols ordered by (length, symbol).
    symbols: Vec<u16>,
}

fn canonical() -> &'static Canonical {
    static TABLE: OnceLock<Canonical> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut count = [0u32; MAX_BITS + 1];
        for &b in &CODE_BITS {
            count[b as usize] += 1;
        }
        let mut symbols: Vec<u16> = (0..=EOS).collect();
        symbols.sort_by_key(|&s| (CODE_BITS[s as usize], s));
        let (mut first, mut start) = ([0u32; MAX_BITS + 1], [0u16; MAX_BITS + 1]);
        let (mut code, mut at) = (0u32, 0u16);
        for len in 1..=MAX_BITS {
            code <<= 1;
            first[len] = code;
            start[len] = at;
            code += count[len];
            at += count[len] as u16;
        }
        Canonical {
            first,
            count,
            start,
            symbols,
        }
    })
}

/// Decodes a Huffman-coded string into `out` (cleared first).
pub(crate) fn huffman_decode(data: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    let t = canonical();
    out.clear();
    let (mut code, mut len) = (0u32, 0usize);
    for &byte in data {
        for shift in (0..8).rev() {
            code = code << 1 | u32::from(byte >> shift & 1);
            len += 1;
            let offset = code.wrapping_sub(t.first[len]);
            if offset < t.count[len] {
                let symbol = t.symbols[t.start[len] as usize + offset as usize];
                if symbol == EOS {
                    return Err("EOS inside a Huffman-coded string");
                }
                out.push(symbol as u8);
                (code, len) = (0, 0);
            } else if len == MAX_BITS {
                return Err("invalid Huffman code");
            }
        }
    }
    // What is left is padding: fewer than 8 bits, all ones (EOS's prefix).
    if len > 7 || code != (1 << len) - 1 {
        return Err("invalid Huffman padding");
    }
    Ok(())
}

/// An HPACK integer with an `n`-bit prefix at the start of `p`: its value
/// and the bytes it took.
fn integer(p: &[u8], n: u32) -> Result<(usize, usize), &'static str> {
    let max = (1usize << n) - 1;
    let first = *p.first().ok_or("truncated integer")? as usize & max;
    if first < max {
        return Ok((first, 1));
    }
    let mut value = max;
    for (i, &b) in p[1..].iter().enumerate() {
        if i >= 4 {
            return Err("integer too large");
        }
        value += ((b & 0x7f) as usize) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((value, i + 2));
        }
    }
    Err("truncated integer")
}

/// A response decoder: the dynamic table a connection's header blocks build.
pub(crate) struct Decoder {
    /// Newest first: (name and value in one buffer, name length).
    table: VecDeque<(Vec<u8>, usize)>,
    size: usize,
    max: usize,
    /// The most the peer may set `max` to (our SETTINGS_HEADER_TABLE_SIZE).
    allowed: usize,
    name_buf: Vec<u8>,
    value_buf: Vec<u8>,
}

impl Decoder {
    /// A decoder whose table may hold `allowed` bytes (RFC 7541 4.1).
    pub(crate) fn new(allowed: usize) -> Decoder {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max: allowed,
            allowed,
            name_buf: Vec::new(),
            value_buf: Vec::new(),
        }
    }

    fn evict(&mut self) {
        while self.size > self.max {
            let (entry, _) = self.table.pop_back().expect("size counts entries");
            self.size -= entry.len() + 32;
        }
    }

    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len() + 32;
        if size > self.max {
            // Larger than the table: the table empties (RFC 7541 4.4).
            self.table.clear();
            self.size = 0;
            return;
        }
        self.size += size;
        self.evict();
        let mut entry = Vec::with_capacity(name.len() + value.len());
        entry.extend_from_slice(name);
        entry.extend_from_slice(value);
        self.table.push_front((entry, name.len()));
    }

    /// Decodes one complete header block, calling `field` for each field in
    /// order, except the literals that do not enter the table and whose
    /// name `wanted` refuses: their value is skipped undecoded (a server's
    /// `content-length`, Huffman-coded on every response, was 7% of the
    /// engine's instructions per HTTP/2 call).
    pub(crate) fn decode(
        &mut self,
        block: &[u8],
        wanted: impl Fn(&[u8]) -> bool,
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), &'static str> {
        let mut p = 0;
        let mut updates_allowed = true;
        while p < block.len() {
            let b = block[p];
            if b & 0x80 != 0 {
                let (index, n) = integer(&block[p..], 7)?;
                p += n;
                let (name, value) = entry(&self.table, index)?;
                field(name, value);
            } else if b & 0xe0 == 0x20 {
                if !updates_allowed {
                    return Err("table size update after a field");
                }
                let (size, n) = integer(&block[p..], 5)?;
                p += n;
                if size > self.allowed {
                    return Err("table size update beyond SETTINGS_HEADER_TABLE_SIZE");
                }
                self.max = size;
                self.evict();
                continue;
            } else {
                let indexing = b & 0xc0 == 0x40;
                let (index, n) = integer(&block[p..], if indexing { 6 } else { 4 })?;
                p += n;
                let name: &[u8] = if index == 0 {
                    let (range, huffman, n) = string_at(block, p)?;
                    p += n;
                    if huffman {
                        huffman_decode(&block[range], &mut self.name_buf)?;
                    } else {
                        self.name_buf.clear();
                        self.name_buf.extend_from_slice(&block[range]);
                    }
                    &self.name_buf
                } else {
                    let (name, _) = entry(&self.table, index)?;
                    self.name_buf.clear();
                    self.name_buf.extend_from_slice(name);
                    &self.name_buf
                };
                let (range, huffman, n) = string_at(block, p)?;
                p += n;
                if !indexing && !wanted(name) {
                    updates_allowed = false;
                    continue;
                }
                let value: &[u8] = if huffman {
                    huffman_decode(&block[range], &mut self.value_buf)?;
                    &self.value_buf
                } else {
                    &block[range]
                };
                field(name, value);
                if indexing {
                    let (name, value) = (std::mem::take(&mut self.name_buf), value.to_vec());
                    self.insert(&name, &value);
                    self.name_buf = name;
                }
            }
            updates_allowed = false;
        }
        Ok(())
    }
}

/// The field at `index` of the static table, then `table`.
fn entry(table: &VecDeque<(Vec<u8>, usize)>, index: usize) -> Result<(&[u8], &[u8]), &'static str> {
    match index {
        0 => Err("index 0"),
        1..=61 => Ok(STATIC[index - 1]),
        _ => {
            let (entry, n) = table.get(index - 62).ok_or("index beyond the table")?;
            Ok(entry.split_at(*n))
        }
    }
}

/// A string literal at `block[p..]`: its bytes' range, whether Huffman-coded,
/// and the bytes it took with its length prefix.
fn string_at(block: &[u8], p: usize) -> Result<(std::ops::Range<usize>, bool, usize), &'static str> {
    let rest = &block[p..];
    let huffman = rest.first().ok_or("truncated string")? & 0x80 != 0;
    let (len, n) = integer(rest, 7)?;
    if rest.len() - n < len {
        return Err("string longer than the block");
    }
    Ok((p + n..p + n + len, huffman, n + len))
}

/// A request's header block, encoded once for every call of a driver.
#[derive(Debug, Clone)]
pub(crate) struct HeaderBlock {
    /// The first request on a connection: fields inserted into the table.
    pub(crate) first: Vec<u8>,
    /// Later requests: the same fields named by index.
    pub(crate) steady: Vec<u8>,
    /// Without the table: every field a literal, never indexed.
    pub(crate) plain: Vec<u8>,
    /// `plain` after a table size update to 0 (the first block once the
    /// table is dropped).
    pub(crate) plain_reset: Vec<u8>,
    /// Bytes the inserted fields take in the peer's table (RFC 7541 4.1).
    pub(crate) table_bytes: usize,
}

/// An HPACK integer (RFC 7541 5.1) with an `n`-bit prefix, whose first
/// byte's other bits are `flags`.
fn put_int(out: &mut Vec<u8>, flags: u8, n: u32, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

/// An HPACK string literal, not Huffman-coded.
fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_int(out, 0x00, 7, s.len());
    out.extend_from_slice(s);
}

/// A literal field: `flags`/`n` select the representation (with
/// incremental indexing 0x40/6, without indexing 0x00/4).
fn put_literal(out: &mut Vec<u8>, flags: u8, n: u32, name: &[u8], value: &[u8]) {
    match static_index(name, value).1 {
        Some(i) => put_int(out, flags, n, i as usize),
        None => {
            put_int(out, flags, n, 0);
            put_str(out, name);
        }
    }
    put_str(out, value);
}

impl HeaderBlock {
    /// The block for `fields` (pseudo-headers first, lower-case names).
    pub(crate) fn new(fields: &[(&[u8], &[u8])]) -> HeaderBlock {
        let mut first = Vec::new();
        let mut steady = Vec::new();
        let mut plain = Vec::new();
        let mut table_bytes = 0;
        let inserted: Vec<usize> = (0..fields.len())
            .filter(|&i| static_index(fields[i].0, fields[i].1).0.is_none())
            .collect();
        for (i, (name, value)) in fields.iter().enumerate() {
            if let Some(full) = static_index(name, value).0 {
                for block in [&mut first, &mut steady, &mut plain] {
                    put_int(block, 0x80, 7, full as usize);
                }
                continue;
            }
            put_literal(&mut first, 0x40, 6, name, value);
            put_literal(&mut plain, 0x00, 4, name, value);
            table_bytes += name.len() + value.len() + 32;
            // The newest entry is 62; an entry inserted k places before the
            // last one is 62 + k.
            let order = inserted.iter().position(|&j| j == i).expect("inserted");
            put_int(&mut steady, 0x80, 7, 62 + (inserted.len() - 1 - order));
        }
        let mut plain_reset = vec![0x20];
        plain_reset.extend_from_slice(&plain);
        HeaderBlock {
            first,
            steady,
            plain,
            plain_reset,
            table_bytes,
        }
    }
}

#[cfg(test)]
impl HeaderBlock {
    /// The block without the table, for tests that decode it.
    pub(crate) fn plain_fields(&self) -> Vec<u8> {
        self.plain.clone()
    }

    /// A POST to `path` with the fields the HTTP/2 driver sends, and a
    /// custom one (`x-case: caller-7`).
    pub(crate) fn sample(path: &str) -> HeaderBlock {
        HeaderBlock::new(&[
            (b":method", b"POST"),
            (b":scheme", b"http"),
            (b":authority", b"127.0.0.1:1"),
            (b":path", path.as_bytes()),
            (b"user-agent", b"protobench"),
            (b"x-case", b"caller-7"),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_follow_rfc_7541_c1() {
        let enc = |n, v| {
            let mut out = Vec::new();
            put_int(&mut out, 0, n, v);
            out
        };
        assert_eq!(enc(5, 10), [0x0a]);
        assert_eq!(enc(5, 1337), [0x1f, 0x9a, 0x0a]);
        assert_eq!(enc(8, 42), [0x2a]);
        assert_eq!(enc(7, 127), [0x7f, 0x00]);
    }

    #[test]
    fn the_block_decodes_to_the_same_fields_first_and_then_by_index() {
        let block = HeaderBlock::sample("/v1/tasks?id=3");
        let expected: Vec<(Vec<u8>, Vec<u8>)> = [
            (":method", "POST"),
            (":scheme", "http"),
            (":authority", "127.0.0.1:1"),
            (":path", "/v1/tasks?id=3"),
            ("user-agent", "protobench"),
            ("x-case", "caller-7"),
        ]
        .iter()
        .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect();
        let mut server = loona_hpack::Decoder::new();
        assert_eq!(server.decode(&block.first).unwrap(), expected);
        for _ in 0..3 {
            assert_eq!(server.decode(&block.steady).unwrap(), expected);
        }
        // Two fully indexed fields and four by dynamic index: a byte each.
        assert_eq!(block.steady.len(), 6);
        assert_eq!(
            block.table_bytes,
            expected[2..].iter().map(|(n, v)| n.len() + v.len() + 32).sum::<usize>()
        );
        // Without the table: literals, and the reset empties the table.
        assert_eq!(loona_hpack::Decoder::new().decode(&block.plain).unwrap(), expected);
        assert_eq!(server.decode(&block.plain_reset).unwrap(), expected);
        assert!(server.decode(&block.steady).is_err(), "the table was emptied");
    }

    type Fields = Vec<(Vec<u8>, Vec<u8>)>;

    fn decode_all(d: &mut Decoder, block: &[u8]) -> Result<Fields, &'static str> {
        let mut out = Vec::new();
        d.decode(block, |_| true, |n, v| out.push((n.to_vec(), v.to_vec())))?;
        Ok(out)
    }

    #[test]
    fn the_static_table_matches_an_independent_decoder() {
        let mut ours = Decoder::new(4096);
        let mut theirs = loona_hpack::Decoder::new();
        for index in 1..=61u8 {
            let block = [0x80 | index];
            assert_eq!(
                decode_all(&mut ours, &block).unwrap(),
                theirs.decode(&block).unwrap(),
                "{index}"
            );
        }
    }

    #[test]
    fn huffman_decodes_rfc_7541_examples_and_every_byte() {
        // RFC 7541 C.4.1: "www.example.com".
        let mut out = Vec::new();
        huffman_decode(
            &[0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff],
            &mut out,
        )
        .unwrap();
        assert_eq!(out, b"www.example.com");
        // C.4.2: "no-cache".
        huffman_decode(&[0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf], &mut out).unwrap();
        assert_eq!(out, b"no-cache");
        // Every byte value, encoded with the canonical code built here and
        // decoded by loona-hpack: the two agree on all 256 codes.
        let t = canonical();
        let mut code_of = [(0u32, 0u8); 257];
        for len in 1..=MAX_BITS {
            for k in 0..t.count[len] {
                let symbol = t.symbols[t.start[len] as usize + k as usize];
                code_of[symbol as usize] = (t.first[len] + k, len as u8);
            }
        }
        let all: Vec<u8> = (0..=255).collect();
        let (mut bits, mut nbits, mut encoded) = (0u64, 0u32, Vec::new());
        for &b in &all {
            let (code, len) = code_of[b as usize];
            bits = bits << len | code as u64;
            nbits += len as u32;
            while nbits >= 8 {
                encoded.push((bits >> (nbits - 8)) as u8);
                nbits -= 8;
            }
        }
        if nbits > 0 {
            encoded.push(((bits << (8 - nbits)) as u8) | ((1u8 << (8 - nbits)) - 1));
        }
        let mut literal = vec![0x00, 0x01, b'x'];
        literal.push(0x80 | 0x7f);
        let mut len = vec![];
        let rest = encoded.len() - 127;
        let mut r = rest;
        while r >= 128 {
            len.push((r % 128) as u8 | 0x80);
            r /= 128;
        }
        len.push(r as u8);
        literal.extend(len);
        literal.extend_from_slice(&encoded);
        let theirs = loona_hpack::Decoder::new().decode(&literal).unwrap();
        assert_eq!(theirs[0].1, all, "the canonical code is RFC 7541's");
        huffman_decode(&encoded, &mut out).unwrap();
        assert_eq!(out, all);
    }

    #[test]
    fn bad_huffman_is_refused() {
        let mut out = Vec::new();
        // Padding of 8 ones (a full byte) is too long.
        assert!(huffman_decode(&[0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf, 0xff], &mut out).is_err());
        // Padding with a zero bit: '0' is 00000 (5 bits), then 000.
        assert!(huffman_decode(&[0x00], &mut out).is_err());
        // EOS spelled out: 30 ones.
        assert!(huffman_decode(&[0xff, 0xff, 0xff, 0xff], &mut out).is_err());
    }

    #[test]
    fn rfc_7541_c3_request_sequence_builds_and_uses_the_table() {
        // C.3.1-C.3.3, without Huffman coding, decoded by one decoder.
        let c31: &[u8] = b"\x82\x86\x84\x41\x0fwww.example.com";
        let c32: &[u8] = b"\x82\x86\x84\xbe\x58\x08no-cache";
        let c33: &[u8] = b"\x82\x87\x85\xbf\x40\x0acustom-key\x0ccustom-value";
        let mut ours = Decoder::new(4096);
        let mut theirs = loona_hpack::Decoder::new();
        for block in [c31, c32, c33] {
            assert_eq!(decode_all(&mut ours, block).unwrap(), theirs.decode(block).unwrap());
        }
        // Table after C.3.3: custom-key, cache-control, :authority (RFC: 164 bytes).
        assert_eq!(ours.table.len(), 3);
        assert_eq!(ours.size, 164);
        // A size update to 0 empties it; an index into it then fails.
        assert_eq!(decode_all(&mut ours, b"\x20\x82").unwrap().len(), 1);
        assert!(decode_all(&mut ours, b"\xbe").is_err());
        // Beyond what our settings allow, and after a field: refused.
        assert!(decode_all(&mut ours, b"\x3f\xe2\x1f").is_err());
        assert!(decode_all(&mut ours, b"\x82\x20").is_err());
    }

    #[test]
    fn unwanted_literals_outside_the_table_are_skipped_and_the_rest_decoded() {
        let mut d = Decoder::new(4096);
        // :status 200; content-length (without indexing) whose one Huffman
        // byte is not valid (a zero padding bit), so decoding it would fail;
        // x-a "1" (with indexing); x-b "2" (never indexed).
        let mut block = vec![0x88, 0x0f, 0x0d, 0x81, 0x00];
        block.extend_from_slice(&[0x40, 0x03, b'x', b'-', b'a', 0x01, b'1']);
        block.extend_from_slice(&[0x10, 0x03, b'x', b'-', b'b', 0x01, b'2']);
        let mut seen = Vec::new();
        d.decode(&block, |n| n == b":status", |n, v| seen.push((n.to_vec(), v.to_vec())))
            .unwrap();
        assert_eq!(
            seen,
            [(b":status".to_vec(), b"200".to_vec()), (b"x-a".to_vec(), b"1".to_vec())]
        );
        // x-a entered the table all the same.
        assert_eq!(decode_all(&mut d, b"\xbe").unwrap(), [(b"x-a".to_vec(), b"1".to_vec())]);
        // Wanted, the value is decoded, and refused.
        assert!(decode_all(&mut Decoder::new(4096), &block).is_err());
    }

    #[test]
    fn a_small_table_evicts_the_oldest_entries() {
        let mut d = Decoder::new(100);
        // Three 32+2+... entries: "a"="1" is 34 bytes each; the third evicts the first.
        for v in [b'1', b'2', b'3'] {
            let block = [0x40, 0x01, b'a', 0x01, v];
            decode_all(&mut d, &block).unwrap();
        }
        assert_eq!(d.size, 68);
        assert_eq!(
            decode_all(&mut d, b"\xbe\xbf").unwrap(),
            [(b"a".to_vec(), b"3".to_vec()), (b"a".to_vec(), b"2".to_vec())]
        );
        assert!(decode_all(&mut d, b"\xc0").is_err());
    }

    #[test]
    fn malformed_blocks_are_errors_not_panics() {
        let mut d = Decoder::new(4096);
        for block in [
            &b"\x80"[..],
            b"\xff",
            b"\xff\xff\xff\xff\xff\xff",
            b"\x40",
            b"\x40\x05ab",
            b"\x00\x01a\x7f",
            b"\x00\x81\xff",
            b"\x0f\xff\xff\xff\xff\x0f",
        ] {
            assert!(decode_all(&mut d, block).is_err(), "{block:?}");
        }
    }
}
