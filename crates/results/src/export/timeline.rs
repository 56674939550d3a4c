//! The per-second timeline of a load result as CSV.

use protobench_model::load::LoadResult;

/// One header line, then one row per second of the measured window:
/// `second,successes,errors,rate,p50_ns,p99_ns`. `rate` is the successes of
/// that second per second of it (the last second may be partial); `p50_ns`
/// and `p99_ns` are empty for a second without successes.
pub fn timeline_csv(r: &LoadResult) -> String {
    let mut out = csv::Writer::from_writer(Vec::new());
    let _ = out.write_record(["second", "successes", "errors", "rate", "p50_ns", "p99_ns"]);
    for p in &r.timeline {
        // The share of this second inside the measured window (the last may be partial).
        let start_ns = u64::from(p.second) * 1_000_000_000;
        let length_s = (r.duration_ns.saturating_sub(start_ns).min(1_000_000_000)) as f64 / 1e9;
        let rate = if length_s > 0.0 {
            format!("{:.3}", p.successes as f64 / length_s)
        } else {
            String::new()
        };
        let latency = |v: u64| if p.successes > 0 { v.to_string() } else { String::new() };
        let _ = out.write_record([
            p.second.to_string(),
            p.successes.to_string(),
            p.errors.to_string(),
            rate,
            latency(p.p50_ns),
            latency(p.p99_ns),
        ]);
    }
    // Writing to a Vec cannot fail, and every field is valid UTF-8.
    String::from_utf8(out.into_inner().unwrap_or_default()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_second_that_pandas_reads_as_numbers() {
        let mut r = protobench_model::testing::result("rest", "inventory.xs", 100.0, 0, 3);
        r.duration_ns = 2_500_000_000;
        r.timeline[1].successes = 0;
        let text = timeline_csv(&r);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "second,successes,errors,rate,p50_ns,p99_ns");
        assert_eq!(lines[1], "0,100,0,100.000,1000000,5000000");
        assert_eq!(lines[2], "1,0,0,0.000,,", "no successes: no latency");
        assert_eq!(lines[3], "2,100,0,200.000,1000000,5000000", "the last half second");
        assert_eq!(lines.len(), 4);
    }
}
