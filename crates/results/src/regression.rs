//! `compare --fail-on-regression`: is run B worse than run A beyond the noise?
//!
//! A row regresses when the whole 95% interval of its ratio B/A lies past
//! the tolerance on the bad side: for `rate` (higher is better) its upper end
//! is below `1 - tolerance`; for latency and CPU per call (lower is better)
//! its lower end is above `1 + tolerance`. The point estimate alone never
//! decides. A row without an interval (one repetition in either run) cannot
//! be judged and is reported as such.

use serde::Serialize;

use crate::report::Comparison;

/// The verdict on one row of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Worse beyond the noise and the tolerance.
    Regression,
    /// Not shown to be worse (better, equal, or within the noise/tolerance).
    NoRegression,
    /// No interval: one repetition in A or B.
    CannotJudge,
}

/// True for metrics where a larger value is better.
pub fn higher_is_better(metric: &str) -> bool {
    matches!(metric, "rate" | "calls_per_cpu_second")
}

/// Judges one row with `tolerance` as a fraction (0.05 = 5%).
pub fn judge(row: &Comparison, tolerance: f64) -> Verdict {
    let (Some(lo), Some(hi)) = (row.ratio.ci_low, row.ratio.ci_high) else {
        return Verdict::CannotJudge;
    };
    let worse = if higher_is_better(&row.metric) {
        hi < 1.0 - tolerance
    } else {
        lo > 1.0 + tolerance
    };
    if worse {
        Verdict::Regression
    } else {
        Verdict::NoRegression
    }
}

/// Parses a tolerance: `5%`, `5` (percent) or `0.05%`; at least 0, below 100%.
pub fn parse_tolerance(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let n = t.strip_suffix('%').unwrap_or(t).trim();
    match n.parse::<f64>() {
        Ok(p) if p.is_finite() && (0.0..100.0).contains(&p) => Ok(p / 100.0),
        _ => Err(format!(
            "invalid tolerance {s:?}: a percentage from 0 to below 100, e.g. 5%"
        )),
    }
}

#[cfg(test)]
mod tests {
    use protobench_model::stats::Ratio;

    use super::*;

    fn row(metric: &str, ratio: f64, ci: Option<(f64, f64)>) -> Comparison {
        Comparison {
            point: "rust grpc inventory.xs c=16".into(),
            metric: metric.into(),
            a: 1.0,
            b: ratio,
            ratio: Ratio {
                ratio,
                ci_low: ci.map(|c| c.0),
                ci_high: ci.map(|c| c.1),
                significant: ci.is_some_and(|(lo, hi)| lo > 1.0 || hi < 1.0),
                paired: false,
            },
        }
    }

    #[test]
    fn judge_table() {
        use Verdict::*;
        let cases = [
            (row("rate", 0.80, Some((0.75, 0.85))), Regression), // rate down 20%, interval below 0.95
            (row("rate", 0.80, Some((0.60, 0.97))), NoRegression), // point 20% worse, interval reaches the tolerance
            (row("rate", 0.93, Some((0.92, 0.94))), Regression), // 7% down, tight interval
            (row("rate", 0.97, Some((0.96, 0.98))), NoRegression), // significant but within 5%
            (row("rate", 1.30, Some((1.20, 1.40))), NoRegression), // faster is no regression
            (row("p99_ns", 1.20, Some((1.10, 1.30))), Regression), // latency up beyond 5%
            (row("p99_ns", 1.20, Some((0.90, 1.50))), NoRegression), // latency up but within the noise
            (row("p99_ns", 0.50, Some((0.40, 0.60))), NoRegression), // latency down is better
            (row("cpu_ns_per_call", 1.10, Some((1.06, 1.14))), Regression), // CPU per call up
            (row("rate", 0.50, None), CannotJudge),              // one repetition: no interval
        ];
        for (r, want) in cases {
            assert_eq!(judge(&r, 0.05), want, "{} {:?}", r.metric, r.ratio);
        }
    }

    #[test]
    fn tolerance_table() {
        let cases = [
            ("5%", Some(0.05)),
            ("5", Some(0.05)),
            ("0.5%", Some(0.005)),
            ("0", Some(0.0)),
        ];
        for (s, want) in cases {
            assert_eq!(parse_tolerance(s).ok(), want, "{s}");
        }
        for bad in ["-1%", "100%", "five", ""] {
            let e = parse_tolerance(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")) && e.contains("e.g. 5%"), "{e}");
        }
    }
}
