//! Exports of a result in other tools' formats.

use base64::Engine as _;
use protobench_model::load::LoadResult;

use crate::error::HistogramError;

/// The corrected latency distribution of a result in HdrHistogram's text
/// percentile format (`.hgrm`), values in milliseconds.
pub fn hgrm(result: &LoadResult) -> Result<String, HistogramError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&result.histogram)
        .map_err(|e| HistogramError(e.to_string()))?;
    let h: hdrhistogram::Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| HistogramError(format!("{e:?}")))?;
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    let ms = |v: u64| v as f64 / 1e6;
    for v in h.iter_quantiles(5) {
        let q = v.quantile_iterated_to();
        let inv = if q < 1.0 {
            format!("{:>14.2}", 1.0 / (1.0 - q))
        } else {
            format!("{:>14}", "inf")
        };
        let _ = writeln!(
            out,
            "{:>12.3} {:>14.12} {:>10} {inv}",
            ms(v.value_iterated_to()),
            q,
            v.count_since_last_iteration()
        );
    }
    let _ = writeln!(
        out,
        "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
        h.mean() / 1e6,
        h.stdev() / 1e6
    );
    let _ = writeln!(
        out,
        "#[Max     = {:>12.3}, Total count    = {:>12}]",
        ms(h.max()),
        h.len()
    );
    let _ = writeln!(
        out,
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
        h.buckets(),
        h.distinct_values()
    );
    Ok(out)
}
