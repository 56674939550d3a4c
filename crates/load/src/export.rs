//! Exports of a result in HdrHistogram's own formats: the percentile
//! distribution (`.hgrm`) and the interval log (`.hlog`).

use hdrhistogram::Histogram;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use protobench_model::load::LoadResult;

use crate::error::HistogramError;

/// Values in the exports are milliseconds, as HdrHistogram's tools print
/// them by default (`outputValueUnitScalingRatio` 10^6 for nanoseconds).
const NS_PER_MS: f64 = 1e6;

/// Percentile ticks per half distance, as HdrHistogram's reference output uses.
const TICKS_PER_HALF_DISTANCE: u32 = 5;

/// The corrected latency distribution of a result in HdrHistogram's text
/// percentile format (`.hgrm`, as `outputPercentileDistribution` writes it),
/// values in milliseconds.
pub fn hgrm(result: &LoadResult) -> Result<String, HistogramError> {
    Ok(hgrm_of(&result.histogram.decode()?))
}

/// The `.hgrm` text of one histogram of nanoseconds.
///
/// Columns, per the reference format: `Value` (the value iterated to),
/// `Percentile` (the fraction of samples at or below it), `TotalCount` (how
/// many samples are at or below it: cumulative) and `1/(1-Percentile)`,
/// which the last line (percentile 1) leaves out. Then the mean and standard
/// deviation, the maximum and total count, the bucket and sub-bucket counts.
pub(crate) fn hgrm_of(h: &Histogram<u64>) -> String {
    use std::fmt::Write as _;
    let digits = usize::from(h.sigfig());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    let mut total = 0u64;
    for v in h.iter_quantiles(TICKS_PER_HALF_DISTANCE) {
        total += v.count_since_last_iteration();
        let q = v.quantile_iterated_to();
        let value = v.value_iterated_to() as f64 / NS_PER_MS;
        if q < 1.0 {
            let _ = writeln!(
                out,
                "{value:>12.digits$} {q:>2.12} {total:>10} {:>14.2}",
                1.0 / (1.0 - q)
            );
        } else {
            let _ = writeln!(out, "{value:>12.digits$} {q:>2.12} {total:>10}");
        }
    }
    let _ = writeln!(
        out,
        "#[Mean    = {:>12.digits$}, StdDeviation   = {:>12.digits$}]",
        h.mean() / NS_PER_MS,
        h.stdev() / NS_PER_MS
    );
    let _ = writeln!(
        out,
        "#[Max     = {:>12.digits$}, Total count    = {:>12}]",
        h.max() as f64 / NS_PER_MS,
        h.len()
    );
    // The sub-bucket count: the smallest power of two that holds 2 * 10^sigfig.
    let sub_buckets = (2 * 10u64.pow(u32::from(h.sigfig()))).next_power_of_two();
    let _ = writeln!(
        out,
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
        h.buckets(),
        sub_buckets
    );
    out
}

/// The per-second corrected latency histograms of a result as an
/// HdrHistogram interval log (`.hlog`): one line per second of the measured
/// window, `StartTimestamp,Interval_Length,Interval_Max,Histogram` (V2 +
/// deflate, base64), timestamps in seconds since `#[StartTime]` (the start
/// of the measured window), the max in milliseconds. HdrHistogram's own
/// tools (`HistogramLogProcessor`) read it.
///
/// Only a result fresh from the engine has its seconds' histograms (they
/// are not kept in JSON or the store); one without them is an error.
pub fn hlog(result: &LoadResult) -> Result<String, HistogramError> {
    if result.intervals.is_empty() && result.successes > 0 {
        return Err(HistogramError(
            "the result has no per-second histograms (only a run just measured has them)".into(),
        ));
    }
    let mut out = Vec::new();
    let mut serializer = hdrhistogram::serialization::V2DeflateSerializer::new();
    let mut builder = IntervalLogWriterBuilder::new();
    builder
        .add_comment(&format!(
            "protobench {} {} {}: corrected latency of successful calls in ns, one histogram per second",
            result.plan.protocol,
            result.plan.target,
            result.plan.workload.as_deref().unwrap_or("custom call")
        ))
        .with_max_value_divisor(NS_PER_MS);
    if let Some(start) = protobench_model::time::parse_rfc3339(&result.started_at) {
        builder.with_start_time(start);
    }
    let io = |e: std::io::Error| HistogramError(e.to_string());
    let mut writer = builder.begin_log_with(&mut out, &mut serializer).map_err(io)?;
    let whole = result.duration_ns / 1_000_000_000;
    // The merged seconds tagged `latency`; a distributed run's agents'
    // own seconds after them, tagged `agent-<index>`.
    let tags: Vec<String> = result
        .agent_intervals
        .iter()
        .map(|(a, _)| format!("agent-{a}"))
        .collect();
    let lines = result.intervals.iter().map(|i| (i, "latency")).chain(
        result
            .agent_intervals
            .iter()
            .zip(&tags)
            .map(|((_, i), t)| (i, t.as_str())),
    );
    for (i, tag) in lines {
        let h = i.histogram.decode()?;
        // The last second may be partial.
        let length_ns = (result.duration_ns - u64::from(i.second).min(whole) * 1_000_000_000).min(1_000_000_000);
        writer
            .write_histogram(
                &h,
                std::time::Duration::from_secs(u64::from(i.second)),
                std::time::Duration::from_nanos(length_ns.max(1)),
                Tag::new(tag),
            )
            .map_err(|e| HistogramError(e.to_string()))?;
    }
    String::from_utf8(out).map_err(|e| HistogramError(e.to_string()))
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use hdrhistogram::serialization::Serializer as _;

    use super::*;

    /// The `.hgrm` rows as (value ms, percentile, total count).
    fn rows(text: &str) -> Vec<(f64, f64, u64)> {
        text.lines()
            .skip(2)
            .take_while(|l| !l.starts_with('#'))
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f[0].parse().unwrap(), f[1].parse().unwrap(), f[2].parse().unwrap())
            })
            .collect()
    }

    #[test]
    fn hgrm_follows_the_reference_format() {
        // 1..=1000 µs, once each, plus 10 calls of 50 ms.
        let mut h = Histogram::<u64>::new_with_bounds(1_000, 3_600_000_000_000, 3).unwrap();
        for us in 1..=1000u64 {
            h.record(us * 1000).unwrap();
        }
        h.record_n(50_000_000, 10).unwrap();
        let text = hgrm_of(&h);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "       Value     Percentile TotalCount 1/(1-Percentile)");
        assert_eq!(lines[1], "");
        let rows = rows(&text);
        assert!(rows.len() > 10, "{text}");
        let levels: Vec<(u64, f64)> = h
            .iter_quantiles(TICKS_PER_HALF_DISTANCE)
            .map(|v| (v.value_iterated_to(), v.quantile_iterated_to()))
            .collect();
        assert_eq!(rows.len(), levels.len());
        for ((value_ms, q, total), (value_ns, level)) in rows.iter().zip(&levels) {
            // TotalCount is the count of samples at or below the row's value
            // (cumulative), not the count of the row's bucket.
            assert_eq!(*total, h.count_between(0, *value_ns), "row {value_ms} {q}\n{text}");
            // Percentile is the level iterated to, which that count reaches.
            assert!((q - level).abs() < 1e-12 && *total as f64 / h.len() as f64 >= q - 1e-12);
            assert!((value_ms - *value_ns as f64 / 1e6).abs() < 0.0005, "value in ms");
        }
        assert!(
            rows.windows(2).all(|w| w[0].2 <= w[1].2),
            "cumulative: never decreasing"
        );
        let last = rows.last().unwrap();
        assert_eq!(
            (last.1, last.2),
            (1.0, h.len()),
            "ends at percentile 1 with every sample"
        );
        // The last row has no 1/(1-Percentile) column; the others have it.
        let data: Vec<&str> = lines[2..].iter().take_while(|l| !l.starts_with('#')).copied().collect();
        assert_eq!(data.last().unwrap().split_whitespace().count(), 3);
        assert!(data[..data.len() - 1].iter().all(|l| l.split_whitespace().count() == 4));
        assert!(text.contains(&format!("Total count    = {:>12}]", 1010)));
        assert!(text.ends_with(&format!(
            "#[Buckets = {:>12}, SubBuckets     = {:>12}]\n",
            h.buckets(),
            2048
        )));
    }

    #[test]
    fn hlog_of_a_distributed_run_tags_each_agents_seconds() {
        let mut r = protobench_model::testing::result("rest", "inventory.s", 100.0, 0, 2);
        r.duration_ns = 2_000_000_000;
        let encoded = |ms: u64, n: u64| {
            let mut h = protobench_model::hdr::latency_histogram();
            h.record_n(ms * 1_000_000, n).unwrap();
            protobench_model::hdr::EncodedHistogram::encode(&h)
        };
        for second in 0..2u32 {
            r.intervals.push(protobench_model::load::IntervalHistogram {
                second,
                histogram: encoded(2, 30),
            });
            for agent in 0..3u32 {
                let i = protobench_model::load::IntervalHistogram {
                    second,
                    histogram: encoded(2, 10),
                };
                r.agent_intervals.push((agent, i));
            }
        }
        let text = hlog(&r).unwrap();
        let mut tags = Vec::new();
        for entry in hdrhistogram::serialization::interval_log::IntervalLogIterator::new(text.as_bytes()) {
            if let Ok(hdrhistogram::serialization::interval_log::LogEntry::Interval(i)) = entry {
                tags.push(i.tag().map(|t| t.as_str().to_owned()).unwrap_or_default());
            }
        }
        assert_eq!(tags.len(), 8, "{text}");
        assert_eq!(tags.iter().filter(|t| *t == "latency").count(), 2);
        for agent in 0..3 {
            assert_eq!(
                tags.iter().filter(|t| **t == format!("agent-{agent}")).count(),
                2,
                "{text}"
            );
        }
    }

    #[test]
    fn hlog_has_one_histogram_per_second_that_reads_back() {
        let mut r = protobench_model::testing::result("grpc", "inventory.xs", 100.0, 0, 3);
        r.duration_ns = 2_500_000_000;
        let mut expected = Vec::new();
        for second in 0..3u32 {
            let mut h = Histogram::<u64>::new_with_bounds(1_000, 3_600_000_000_000, 3).unwrap();
            h.record_n(u64::from(second + 1) * 1_000_000, 10).unwrap();
            let mut bytes = Vec::new();
            hdrhistogram::serialization::V2DeflateSerializer::new()
                .serialize(&h, &mut bytes)
                .unwrap();
            r.intervals.push(protobench_model::load::IntervalHistogram {
                second,
                histogram: base64::engine::general_purpose::STANDARD.encode(bytes).into(),
            });
            expected.push(h);
        }
        let text = hlog(&r).unwrap();
        assert!(text.contains("#[StartTime: "), "{text}");
        let mut read = Vec::new();
        for entry in hdrhistogram::serialization::interval_log::IntervalLogIterator::new(text.as_bytes()) {
            if let Ok(hdrhistogram::serialization::interval_log::LogEntry::Interval(i)) = entry {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(i.encoded_histogram())
                    .unwrap();
                let h: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
                    .deserialize(&mut bytes.as_slice())
                    .unwrap();
                read.push((
                    i.start_timestamp().as_secs_f64(),
                    i.duration().as_secs_f64(),
                    i.max(),
                    h,
                ));
            }
        }
        assert_eq!(read.len(), 3, "{text}");
        for (s, (start, length, max_ms, h)) in read.iter().enumerate() {
            assert_eq!(*start, s as f64);
            assert_eq!(*length, if s == 2 { 0.5 } else { 1.0 }, "the last second is partial");
            assert!((max_ms - (s + 1) as f64).abs() < 0.01, "max in ms: {max_ms}");
            assert_eq!(h, &expected[s]);
        }
        // A result read back from JSON has no intervals: say so.
        let mut bare = r.clone();
        bare.intervals.clear();
        assert!(
            hlog(&bare)
                .unwrap_err()
                .to_string()
                .contains("no per-second histograms")
        );
    }
}
