//! A stored latency histogram ([`EncodedHistogram`]) and its one codec.
//!
//! Results keep their latency histograms as HdrHistogram V2 (+ deflate) in
//! base64, and stored runs, JSON results and `.hlog` files come back from
//! disk, where they may be corrupt or crafted. hdrhistogram's deserializer
//! sizes its buffer from the payload length the (inflated) header claims
//! before reading anything: the `histogram` fuzz target found a 260-byte
//! string that asked for 3.1 GB (issue 35, docs/fuzzing.md). So
//! [`EncodedHistogram::decode`], the only decoder, calls [`check`] first,
//! which inflates at most [`MAX_PAYLOAD`] bytes and refuses a header whose
//! claims the bytes do not back.

use std::fmt;
use std::io::Read;

use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use serde::{Deserialize, Serialize};

/// Lowest latency told apart: 1 us (values are nanoseconds).
pub const LOWEST_NS: u64 = 1_000;
/// Highest latency recorded: 1 hour (larger values are clamped).
pub const HIGHEST_NS: u64 = 3_600 * 1_000_000_000;
/// Significant digits of every latency histogram.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// A latency histogram in nanoseconds with the settings every generator
/// uses ([`LOWEST_NS`] to [`HIGHEST_NS`], [`SIGNIFICANT_DIGITS`]): the same
/// settings everywhere is what lets histograms from many generators be
/// added exactly (`crate::merge`).
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS).expect("valid histogram bounds")
}

/// A latency histogram as results carry it: HdrHistogram V2 + deflate, in
/// base64 (in JSON, the bare string: the type is transparent to serde).
/// Empty in a result read back without its histogram.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EncodedHistogram(String);

impl EncodedHistogram {
    /// Encodes `h` (a serializer error, which writing to memory does not
    /// have, would leave what was written so far).
    pub fn encode(h: &Histogram<u64>) -> EncodedHistogram {
        let mut bytes = Vec::new();
        let _ = V2DeflateSerializer::new().serialize(h, &mut bytes);
        EncodedHistogram(base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    /// Decodes the histogram: base64, then [`check`] on its header, then
    /// hdrhistogram's deserializer.
    pub fn decode(&self) -> Result<Histogram<u64>, HdrError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&self.0)
            .map_err(|e| HdrError::NotBase64(e.to_string()))?;
        check(&bytes).map_err(HdrError::Header)?;
        Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| HdrError::Encoding(format!("{e:?}")))
    }

    /// The base64 text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether there is no histogram at all (a result read back without one).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<String> for EncodedHistogram {
    /// Base64 text as stored; nothing is checked until [`EncodedHistogram::decode`].
    fn from(base64: String) -> Self {
        EncodedHistogram(base64)
    }
}

impl From<&str> for EncodedHistogram {
    fn from(base64: &str) -> Self {
        EncodedHistogram(base64.to_owned())
    }
}

/// Why a stored histogram does not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HdrError {
    /// The text is not base64.
    NotBase64(String),
    /// The header is not a V2 one, or claims more than its bytes hold
    /// ([`check`]'s refusal).
    Header(String),
    /// hdrhistogram's deserializer refused the counts.
    Encoding(String),
}

impl fmt::Display for HdrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HdrError::NotBase64(e) => write!(f, "not base64: {e}"),
            HdrError::Header(e) => write!(f, "header refused: {e}"),
            HdrError::Encoding(e) => write!(f, "not an HdrHistogram V2 encoding: {e}"),
        }
    }
}

impl std::error::Error for HdrError {}

/// V2 encoding, uncompressed (HdrHistogram's `V2EncodingCookieBase | 0x10`).
const V2_COOKIE: u32 = 0x1c84_9313;
/// V2 encoding, deflate-compressed.
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// Cookie, payload length, normalizing offset, significant digits, lowest,
/// highest, integer-to-double ratio.
const V2_HEADER: usize = 40;
/// The most payload (encoded counts) a stored histogram may claim. One of
/// ours (1 us to 1 h, 3 digits) has fewer than 30,000 buckets, each at most
/// 9 bytes encoded: about 270 KB; 16 MiB leaves room for other tools' files.
pub const MAX_PAYLOAD: usize = 16 << 20;
/// hdrhistogram accepts at most 5 significant digits; with 5, the counts of
/// a histogram up to `u64::MAX` take about 50 MB, the most a header can ask.
const MAX_DIGITS: u32 = 5;

/// Checks that `bytes` (a decoded base64 histogram) is a V2 histogram whose
/// header claims no more than its bytes hold; an error says what is wrong.
pub fn check(bytes: &[u8]) -> Result<(), String> {
    match be_u32(bytes, 0)? {
        V2_COOKIE => check_v2(bytes),
        V2_COMPRESSED_COOKIE => {
            let len = be_u32(bytes, 4)? as usize;
            let deflated = bytes
                .get(8..8usize.saturating_add(len))
                .ok_or_else(|| format!("compressed length {len} past the end ({} bytes)", bytes.len()))?;
            let mut inflated = Vec::new();
            flate2::read::ZlibDecoder::new(deflated)
                .take((V2_HEADER + MAX_PAYLOAD + 1) as u64)
                .read_to_end(&mut inflated)
                .map_err(|e| format!("deflate: {e}"))?;
            check_v2(&inflated)
        }
        other => Err(format!(
            "cookie {other:#x}: expected an HdrHistogram V2 cookie ({V2_COOKIE:#x} or {V2_COMPRESSED_COOKIE:#x})"
        )),
    }
}

fn check_v2(b: &[u8]) -> Result<(), String> {
    if be_u32(b, 0)? != V2_COOKIE {
        return Err("inflated histogram without its V2 cookie".into());
    }
    let payload = be_u32(b, 4)? as usize;
    if payload > MAX_PAYLOAD {
        return Err(format!(
            "payload of {payload} bytes claimed: over {MAX_PAYLOAD} (MAX_PAYLOAD)"
        ));
    }
    let present = b.len().saturating_sub(V2_HEADER);
    if b.len() < V2_HEADER || present < payload {
        return Err(format!("payload of {payload} bytes claimed, {present} present"));
    }
    let digits = be_u32(b, 12)?;
    if digits > MAX_DIGITS {
        return Err(format!("{digits} significant digits: at most {MAX_DIGITS}"));
    }
    Ok(())
}

fn be_u32(b: &[u8], at: usize) -> Result<u32, String> {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| format!("{} bytes: too short for a histogram header", b.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn deflated(inner: &[u8]) -> Vec<u8> {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(inner).unwrap();
        let body = z.finish().unwrap();
        let mut out = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend_from_slice(&body);
        out
    }

    fn v2(payload_claimed: u32, digits: u32, payload: &[u8]) -> Vec<u8> {
        let mut b = V2_COOKIE.to_be_bytes().to_vec();
        b.extend_from_slice(&payload_claimed.to_be_bytes());
        b.extend_from_slice(&0u32.to_be_bytes());
        b.extend_from_slice(&digits.to_be_bytes());
        b.extend_from_slice(&1u64.to_be_bytes());
        b.extend_from_slice(&3_600_000_000_000u64.to_be_bytes());
        b.extend_from_slice(&1f64.to_bits().to_be_bytes());
        b.extend_from_slice(payload);
        b
    }

    #[test]
    fn claims_the_bytes_do_not_back_are_refused_before_any_allocation() {
        // Issue 35: the fuzz target's input claimed a payload of gigabytes.
        let e = check(&deflated(&v2(3_100_000_000, 3, &[2, 0]))).unwrap_err();
        assert!(e.contains("MAX_PAYLOAD"), "{e}");
        let e = check(&deflated(&v2(1_000, 3, &[2, 0]))).unwrap_err();
        assert_eq!(e, "payload of 1000 bytes claimed, 2 present");
        let e = check(&v2(2, 9, &[2, 0])).unwrap_err();
        assert!(e.contains("9 significant digits"), "{e}");
        assert!(check(&[0x1c, 0x84]).unwrap_err().contains("too short"));
        assert!(check(&[0, 0, 0, 1, 0, 0, 0, 0]).unwrap_err().contains("cookie 0x1"));
        // A compressed length past the end of the bytes.
        let mut cut = deflated(&v2(2, 3, &[2, 0]));
        cut.truncate(12);
        assert!(check(&cut).unwrap_err().contains("past the end"));
        // Honest headers pass, compressed or not.
        check(&v2(2, 3, &[2, 0])).unwrap();
        check(&deflated(&v2(2, 3, &[2, 0]))).unwrap();
    }

    #[test]
    fn a_histogram_claiming_gigabytes_is_refused_without_allocating_them() {
        // Issue 35: found by the `histogram` fuzz target; 260 bytes of base64
        // whose inflated header claims a 3.1 GB payload.
        let crafted = include_str!("../../../fuzz/corpus/histogram/regression-oom-v2-payload-length");
        let peak_kib = || -> u64 {
            let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0)
        };
        let before = peak_kib();
        assert!(EncodedHistogram::from(crafted.trim()).decode().is_err());
        // Without the check the decoder zero-fills 3.1 GB before failing.
        let grown_mib = peak_kib().saturating_sub(before) / 1024;
        assert!(grown_mib < 256, "peak memory grew {grown_mib} MiB");
    }
}
