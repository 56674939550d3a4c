//! Adding latency histograms from many generators, exactly.
//!
//! Each generator (an agent, `docs/distributed.md`) records into HDR
//! histograms with the same settings ([`crate::hdr::latency_histogram`]) and
//! corrects its own coordinated omission; the coordinator adds their
//! histograms bucket by bucket. With identical settings the buckets line up
//! one to one, so the sum is the histogram one process would have recorded
//! from every sample: no percentile is averaged and no bucket rounded.
//! Histograms with other settings are refused, not resampled.

use std::collections::BTreeMap;
use std::fmt;

use hdrhistogram::Histogram;

use crate::hdr::{EncodedHistogram, HdrError, HIGHEST_NS, LOWEST_NS, SIGNIFICANT_DIGITS, latency_histogram};

/// The histograms of one generator's result that the coordinator adds
/// besides the latency one ([`crate::load::LoadResult::histogram`]); each
/// V2 + deflate, base64, with the shared settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LaneHistograms {
    /// Latency from the actual start (uncorrected).
    pub service: EncodedHistogram,
    /// Connection opening time.
    pub connect: EncodedHistogram,
    /// Schedule lag (open loop).
    pub lag: EncodedHistogram,
    /// Latency of failed calls, when any failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_latency: Option<EncodedHistogram>,
}

/// Why a histogram could not be added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeError {
    /// The histogram of `source` does not decode.
    Decode {
        /// Whose histogram (an agent's address).
        source: String,
        /// Why.
        error: HdrError,
    },
    /// The histogram of `source` was recorded with other settings.
    Settings {
        /// Whose histogram.
        source: String,
        /// Its settings, `lowest..highest, N digits`.
        found: String,
    },
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeError::Decode { source, error } => write!(f, "histogram from {source}: {error}"),
            MergeError::Settings { source, found } => write!(
                f,
                "histogram from {source} recorded with {found}: expected {LOWEST_NS}..{HIGHEST_NS} ns, \
                 {SIGNIFICANT_DIGITS} digits (every generator must use the same settings)"
            ),
        }
    }
}

impl std::error::Error for MergeError {}

/// Adds `h` into `acc` bucket for bucket after checking both have the
/// shared settings; `source` names `h` in an error.
pub fn add_exact(acc: &mut Histogram<u64>, h: &Histogram<u64>, source: &str) -> Result<(), MergeError> {
    let shared = |x: &Histogram<u64>| x.low() == LOWEST_NS && x.high() == HIGHEST_NS && x.sigfig() == SIGNIFICANT_DIGITS;
    if !shared(h) || !shared(acc) {
        let x = if shared(h) { &*acc } else { h };
        return Err(MergeError::Settings {
            source: source.to_owned(),
            found: format!("{}..{} ns, {} digits", x.low(), x.high(), x.sigfig()),
        });
    }
    // Same bounds and digits: the same bucket layout, so `add` cannot run
    // out of range and adds counts index by index.
    acc.add(h).map_err(|e| MergeError::Settings {
        source: source.to_owned(),
        found: format!("{e:?}"),
    })
}

/// Decodes `h` and adds it into `acc` ([`add_exact`]).
pub fn add_encoded(acc: &mut Histogram<u64>, h: &EncodedHistogram, source: &str) -> Result<(), MergeError> {
    if h.is_empty() {
        return Ok(());
    }
    let decoded = h.decode().map_err(|error| MergeError::Decode {
        source: source.to_owned(),
        error,
    })?;
    add_exact(acc, &decoded, source)
}

/// The coordinator's sum of interval histograms: one histogram per second
/// of the common measured window, and their total.
#[derive(Debug, Clone)]
pub struct IntervalSum {
    seconds: BTreeMap<u32, Histogram<u64>>,
}

impl Default for IntervalSum {
    fn default() -> Self {
        IntervalSum::new()
    }
}

impl IntervalSum {
    /// Nothing added yet.
    pub fn new() -> IntervalSum {
        IntervalSum {
            seconds: BTreeMap::new(),
        }
    }

    /// Adds `source`'s histogram of `second` (seconds since the common start).
    pub fn add(&mut self, second: u32, h: &EncodedHistogram, source: &str) -> Result<(), MergeError> {
        let acc = self.seconds.entry(second).or_insert_with(latency_histogram);
        add_encoded(acc, h, source)
    }

    /// The summed histogram of each second, in order.
    pub fn seconds(&self) -> impl Iterator<Item = (u32, &Histogram<u64>)> {
        self.seconds.iter().map(|(s, h)| (*s, h))
    }

    /// The sum of every second.
    pub fn total(&self) -> Histogram<u64> {
        let mut t = latency_histogram();
        for h in self.seconds.values() {
            // Every histogram here was made by `latency_histogram`.
            let _ = t.add(h);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic spread of latencies from 20 us to 2 s (log-uniform).
    fn samples(n: usize, seed: u64) -> Vec<u64> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                (20_000.0 * (1e5f64).powf(u)) as u64
            })
            .collect()
    }

    #[test]
    fn the_sum_of_many_generators_equals_one_histogram_of_every_sample_bucket_for_bucket() {
        let all = samples(200_000, 7);
        let mut one = latency_histogram();
        for &v in &all {
            one.record(v).unwrap();
        }
        // 300 agents, 5 seconds each, every sample in exactly one of them,
        // each interval sent as the wire carries it (V2 + deflate, base64).
        let (agents, seconds) = (300usize, 5u32);
        let mut parts = vec![latency_histogram(); agents * seconds as usize];
        let n = parts.len();
        for (i, &v) in all.iter().enumerate() {
            parts[(i * 7919) % n].record(v).unwrap();
        }
        let mut sum = IntervalSum::new();
        for (k, h) in parts.iter().enumerate() {
            let second = (k % seconds as usize) as u32;
            sum.add(second, &EncodedHistogram::encode(h), &format!("agent {}", k / seconds as usize))
                .unwrap();
        }
        let merged = sum.total();
        assert_eq!(merged.len(), all.len() as u64);
        let buckets = |h: &Histogram<u64>| -> Vec<(u64, u64)> {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect()
        };
        assert_eq!(buckets(&merged), buckets(&one));
        assert_eq!(merged, one);
        assert_eq!(crate::hdr::summary(&merged), crate::hdr::summary(&one));
        // And the per-second sums are the seconds' own samples.
        let per_second: u64 = sum.seconds().map(|(_, h)| h.len()).sum();
        assert_eq!(per_second, all.len() as u64);
    }

    #[test]
    fn histograms_with_other_settings_are_refused_by_source() {
        let mut acc = latency_histogram();
        let mut other = Histogram::<u64>::new_with_bounds(1, 1_000_000, 2).unwrap();
        other.record(5).unwrap();
        let e = add_encoded(&mut acc, &EncodedHistogram::encode(&other), "10.0.0.2:7000").unwrap_err();
        let text = e.to_string();
        assert!(text.contains("10.0.0.2:7000") && text.contains("2 digits"), "{text}");
        let e = add_encoded(&mut acc, &EncodedHistogram::from("not base64!"), "agent 3").unwrap_err();
        assert!(matches!(e, MergeError::Decode { .. }), "{e:?}");
        assert!(acc.is_empty());
    }
}
