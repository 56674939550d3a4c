//! Statistics across repetitions: median, a 95% confidence interval, the
//! coefficient of variation, and the ratio of two medians.
//!
//! Why these choices (documented for users in `docs/results.md`):
//!
//! - A benchmark point is repeated a handful of times (3 to 10), interleaved
//!   with the other points. The **median** is reported because one disturbed
//!   repetition (a neighbour's build, a page-cache flush) moves it least.
//! - The **95% confidence interval** is Student-t based and centred on the
//!   median: `median ± t(0.975, n−1) · s / √n`, with `s` the sample standard
//!   deviation. With so few repetitions a bootstrap of the median can only
//!   return the observed values (its interval collapses to `[min, max]` or
//!   narrower and says nothing about the spread), whereas the t interval widens
//!   honestly when `n` is small. With `n = 1` there is no interval.
//! - A point is **noisy** when its coefficient of variation (`s / mean`) is
//!   above a threshold (10% by default): its median is then less trustworthy
//!   than its interval suggests.
//! - Two medians are compared by their **ratio** `b / a`; its interval combines
//!   the relative half-widths in quadrature (first-order error propagation).
//!   A difference is **significant** when that interval excludes 1.

use serde::{Deserialize, Serialize};

/// The default coefficient-of-variation threshold above which a point is noisy.
pub const DEFAULT_NOISE_THRESHOLD: f64 = 0.10;

/// The summary of one metric over the repetitions of a point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// How many values were summarized.
    pub n: usize,
    /// The median.
    pub median: f64,
    /// The arithmetic mean.
    pub mean: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
    /// The sample standard deviation (0 for one value).
    pub stddev: f64,
    /// Lower end of the 95% confidence interval (`None` for one value).
    pub ci_low: Option<f64>,
    /// Upper end of the 95% confidence interval (`None` for one value).
    pub ci_high: Option<f64>,
    /// Coefficient of variation, `stddev / mean` (`None` when the mean is 0).
    pub cv: Option<f64>,
}

impl Summary {
    /// Summarizes `values`; `None` when there are none or one is not finite.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let n = values.len();
        let med = median(values)?;
        let mean = values.iter().sum::<f64>() / n as f64;
        let stddev = if n > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let (ci_low, ci_high) = if n > 1 {
            let half = t_quantile_975(n - 1) * stddev / (n as f64).sqrt();
            (Some(med - half), Some(med + half))
        } else {
            (None, None)
        };
        let cv = if mean != 0.0 { Some(stddev / mean.abs()) } else { None };
        Some(Summary {
            n,
            median: med,
            mean,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            stddev,
            ci_low,
            ci_high,
            cv,
        })
    }

    /// Half the width of the confidence interval, if there is one.
    pub fn half_width(&self) -> Option<f64> {
        Some((self.ci_high? - self.ci_low?) / 2.0)
    }

    /// True when the coefficient of variation is above `threshold`.
    pub fn is_noisy(&self, threshold: f64) -> bool {
        self.cv.is_some_and(|cv| cv > threshold)
    }
}

/// The median of `values` (mean of the two middle ones for an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    Some(if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    })
}

/// The 0.975 quantile of Student's t distribution with `dof` degrees of
/// freedom (two-sided 95%). Exact table to 30, then the normal-based
/// Cornish-Fisher expansion, which is within 0.001 beyond that.
pub fn t_quantile_975(dof: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    match dof {
        0 => f64::INFINITY,
        1..=30 => TABLE[dof - 1],
        _ => {
            let z: f64 = 1.959_964;
            let v = dof as f64;
            z + (z.powi(3) + z) / (4.0 * v) + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * v * v)
        }
    }
}

/// The ratio `b / a` of two summarized metrics with its interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    /// `b.median / a.median`.
    pub ratio: f64,
    /// Lower end of the 95% interval of the ratio (`None` without intervals).
    pub ci_low: Option<f64>,
    /// Upper end of the 95% interval of the ratio.
    pub ci_high: Option<f64>,
    /// True when the interval excludes 1.
    pub significant: bool,
}

/// Compares two summaries: the ratio of medians `b / a` and whether the
/// difference is significant (its 95% interval excludes 1). `None` when `a`'s
/// median is 0.
pub fn ratio(a: &Summary, b: &Summary) -> Option<Ratio> {
    if a.median == 0.0 {
        return None;
    }
    let r = b.median / a.median;
    let rel = |s: &Summary| -> Option<f64> {
        let h = s.half_width()?;
        if s.median == 0.0 {
            None
        } else {
            Some(h / s.median.abs())
        }
    };
    let (ci_low, ci_high, significant) = match (rel(a), rel(b)) {
        (Some(ra), Some(rb)) => {
            let half = r.abs() * (ra * ra + rb * rb).sqrt();
            let (lo, hi) = (r - half, r + half);
            (Some(lo), Some(hi), lo > 1.0 || hi < 1.0)
        }
        _ => (None, None, false),
    };
    Some(Ratio {
        ratio: r,
        ci_low,
        ci_high,
        significant,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6 * b.abs().max(1.0)
    }

    #[test]
    fn median_table() {
        let cases: &[(&[f64], Option<f64>)] = &[
            (&[], None),                        // nothing to summarize
            (&[5.0], Some(5.0)),                // one value is its own median
            (&[3.0, 1.0, 2.0], Some(2.0)),      // odd count: the middle after sorting
            (&[4.0, 1.0, 3.0, 2.0], Some(2.5)), // even count: mean of the two middle
            (&[1.0, 1.0, 100.0], Some(1.0)),    // an outlier does not move it
        ];
        for (values, want) in cases {
            assert_eq!(median(values), *want, "median of {values:?}");
        }
    }

    #[test]
    fn t_quantile_table() {
        let cases = [
            (1, 12.706),  // the widest: two values
            (2, 4.303),   // three repetitions, the quick preset
            (9, 2.262),   // ten repetitions
            (30, 2.042),  // end of the table
            (40, 2.021),  // expansion beyond the table
            (120, 1.980), // close to the normal quantile
        ];
        for (dof, want) in cases {
            assert!(
                (t_quantile_975(dof) - want).abs() < 0.002,
                "t({dof}) = {} want {want}",
                t_quantile_975(dof)
            );
        }
        assert!(t_quantile_975(0).is_infinite());
    }

    #[test]
    fn summary_of_three_repetitions() {
        let s = Summary::of(&[100.0, 110.0, 90.0]).unwrap();
        assert_eq!(s.n, 3);
        assert!(close(s.median, 100.0));
        assert!(close(s.mean, 100.0));
        assert!(close(s.stddev, 10.0));
        // half width = 4.303 * 10 / sqrt(3)
        let half = 4.303 * 10.0 / 3f64.sqrt();
        assert!(close(s.ci_low.unwrap(), 100.0 - half));
        assert!(close(s.ci_high.unwrap(), 100.0 + half));
        assert!(close(s.cv.unwrap(), 0.1));
        assert!(!s.is_noisy(0.10), "exactly at the threshold is not noisy");
        assert!(s.is_noisy(0.09));
    }

    #[test]
    fn summary_of_one_value_has_no_interval() {
        let s = Summary::of(&[42.0]).unwrap();
        assert_eq!((s.ci_low, s.ci_high, s.stddev), (None, None, 0.0));
        assert_eq!(s.cv, Some(0.0));
    }

    #[test]
    fn summary_refuses_empty_and_non_finite() {
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
    }

    #[test]
    fn zero_mean_has_no_cv() {
        let s = Summary::of(&[0.0, 0.0]).unwrap();
        assert_eq!(s.cv, None);
        assert!(!s.is_noisy(0.1));
    }

    #[test]
    fn ratio_table() {
        let tight_a = Summary::of(&[100.0, 101.0, 99.0]).unwrap();
        let tight_b = Summary::of(&[200.0, 202.0, 198.0]).unwrap();
        let wide_b = Summary::of(&[60.0, 105.0, 150.0]).unwrap();
        let single = Summary::of(&[120.0]).unwrap();

        // b doubles with tight intervals: significant
        let r = ratio(&tight_a, &tight_b).unwrap();
        assert!(close(r.ratio, 2.0) && r.significant);
        assert!(r.ci_low.unwrap() < 2.0 && r.ci_high.unwrap() > 2.0);

        // b is wildly spread around a similar median: not significant
        let r = ratio(&tight_a, &wide_b).unwrap();
        assert!(!r.significant);

        // one repetition: no interval, never called significant
        let r = ratio(&tight_a, &single).unwrap();
        assert!(close(r.ratio, 1.2) && r.ci_low.is_none() && !r.significant);

        // a median of zero has no ratio
        let zero = Summary::of(&[0.0, 0.0]).unwrap();
        assert!(ratio(&zero, &tight_a).is_none());
    }
}
