//! Is a server's rate steady? The trend of a per-second rate timeline, the
//! drift flag of a measured window, and the "stopped getting faster" test of
//! a warm-up (docs/results.md, "Drift and steady state").
//!
//! Both rest on one least-squares line through the per-second rates: its
//! slope, the slope's 95% confidence interval (Student's t with n - 2 degrees
//! of freedom), and the change the slope implies over the window as a
//! fraction of the mean rate. A window drifts when the interval excludes zero
//! (the trend is not noise) **and** the implied change exceeds a threshold
//! (it matters). A JIT runtime that speeds up 3x within a window drifts; a
//! server whose rate wanders by 10-30% from second to second on a shared
//! machine does not, unless the wandering has a direction.

use serde::{Deserialize, Serialize};

use crate::stats::t_quantile_975;

/// Fewest seconds on which a trend is judged.
pub const MIN_SECONDS: usize = 5;
/// The steady-state warm-up's window, calibrated with `bench/drift.sh`
/// (docs/presets.md, "Calibrating the rule"): on a quiet 2-vCPU VM a
/// 5-second window called a fresh JVM steady at 6 and 14 s with +365% and
/// +76% of its rate still to come; a 10-second window at 22 s, with -3%
/// and +9% to come, while a warm Rust server still passed at the first
/// window (median 10 s, at most 15 s).
pub const STEADY_WINDOW_S: usize = 10;
/// The implied change over a window, as a fraction of its mean rate, above
/// which a significant trend counts as drift.
pub const DEFAULT_DRIFT_THRESHOLD: f64 = 0.10;

/// The least-squares trend of a rate timeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trend {
    /// Seconds in the window.
    pub seconds: usize,
    /// Mean rate.
    pub mean: f64,
    /// Slope, calls/s per second.
    pub slope: f64,
    /// Half-width of the slope's 95% confidence interval (zero when the
    /// rates lie exactly on a line).
    pub slope_half_width: f64,
}

impl Trend {
    /// Fits `rates` (one per second, in order); `None` below 3 points.
    pub fn of(rates: &[f64]) -> Option<Trend> {
        let n = rates.len();
        if n < 3 {
            return None;
        }
        let nf = n as f64;
        let mean_x = (nf - 1.0) / 2.0;
        let mean = rates.iter().sum::<f64>() / nf;
        let (mut sxy, mut sxx) = (0.0, 0.0);
        for (i, r) in rates.iter().enumerate() {
            let dx = i as f64 - mean_x;
            sxy += dx * (r - mean);
            sxx += dx * dx;
        }
        let slope = sxy / sxx;
        let residual: f64 = rates
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let fit = mean + slope * (i as f64 - mean_x);
                (r - fit) * (r - fit)
            })
            .sum();
        let se = (residual / (nf - 2.0) / sxx).sqrt();
        Some(Trend {
            seconds: n,
            mean,
            slope,
            slope_half_width: t_quantile_975(n - 2) * se,
        })
    }

    /// The change the slope implies from the first to the last second, as a
    /// fraction of the mean rate (0 when the mean is 0).
    pub fn change(&self) -> f64 {
        if self.mean <= 0.0 {
            return 0.0;
        }
        self.slope * (self.seconds as f64 - 1.0) / self.mean
    }

    /// Whether the slope's interval excludes zero.
    pub fn significant(&self) -> bool {
        self.slope.abs() > self.slope_half_width
    }
}

/// A measured window whose rate moved in one direction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    /// Implied change over the window as a fraction of its mean rate
    /// (positive: getting faster).
    pub change: f64,
}

impl Drift {
    /// One line for tables: `rate rose 35% within the window`.
    pub fn describe(&self) -> String {
        let dir = if self.change > 0.0 { "rose" } else { "fell" };
        format!("rate {dir} {:.0}% within the window", self.change.abs() * 100.0)
    }
}

/// The drift of a measured window: `Some` when its per-second rates have a
/// significant trend implying a change above `threshold`; `None` when steady
/// or too short to judge (fewer than [`MIN_SECONDS`] seconds).
pub fn drift(rates: &[f64], threshold: f64) -> Option<Drift> {
    if rates.len() < MIN_SECONDS {
        return None;
    }
    let t = Trend::of(rates)?;
    (t.significant() && t.change().abs() > threshold).then(|| Drift { change: t.change() })
}

/// The drift of a measured window with the server's CPU sampled each
/// second (`cpu_ns[i]`: its CPU time in second `i`): the rate's drift of
/// [`drift`], kept only when the CPU per call has a significant trend the
/// **opposite** way (a server that got faster spends less CPU per call).
/// A rate that wanders because the machine lent the server less CPU (other
/// tenants, a build beside the run) leaves the CPU per call flat and is
/// not drift; `bench/drift.sh` measured the false alarms of both rules
/// (docs/results.md, "Drift and steady state"). Without a CPU timeline (a
/// target without a PID, runs stored before it existed) this is [`drift`].
///
/// What it cannot see: a server whose speed changes while its CPU per
/// call does not (a rate bound by something other than its CPU).
pub fn drift_confirmed(rates: &[f64], cpu_ns: &[u64], threshold: f64) -> Option<Drift> {
    let d = drift(rates, threshold)?;
    if cpu_ns.is_empty() {
        return Some(d);
    }
    let per_call: Vec<f64> = rates
        .iter()
        .zip(cpu_ns)
        .filter(|(r, _)| **r > 0.0)
        .map(|(r, c)| *c as f64 / r)
        .collect();
    if per_call.len() < MIN_SECONDS {
        return Some(d);
    }
    let t = Trend::of(&per_call)?;
    (t.significant() && t.change().signum() == -d.change.signum()).then_some(d)
}

/// Whether a warm-up may stop: over the last `window` seconds, the rate shows
/// no significant rise implying more than `threshold` of change. Falling or
/// flat rates are steady for this purpose (warming up longer would not make
/// the server faster). `false` until `window` seconds exist.
pub fn steady(rates: &[f64], window: usize, threshold: f64) -> bool {
    let window = window.max(MIN_SECONDS);
    if rates.len() < window {
        return false;
    }
    let Some(t) = Trend::of(&rates[rates.len() - window..]) else {
        return false;
    };
    !(t.significant() && t.change() > threshold)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drift_needs_the_cpu_per_call_to_move_the_other_way() {
        // the rate rises 40% over 10 s
        let rates: Vec<f64> = (0..10).map(|i| 1000.0 + 40.0 * i as f64 + wobble(i, 5.0)).collect();
        let rate_only = drift(&rates, 0.10).expect("the rate alone drifts");
        // a JIT: the same CPU per second, so CPU per call falls: confirmed
        let jit: Vec<u64> = (0..10)
            .map(|i| 500_000_000 + (wobble(i + 3, 1.0) * 1e6) as u64)
            .collect();
        assert_eq!(drift_confirmed(&rates, &jit, 0.10), Some(rate_only));
        // a machine lending the server more CPU: CPU per call flat: no drift
        let lent: Vec<u64> = rates
            .iter()
            .enumerate()
            .map(|(i, r)| (r * 500_000.0 * (1.0 + wobble(i + 7, 0.01))) as u64)
            .collect();
        assert_eq!(drift_confirmed(&rates, &lent, 0.10), None);
        // CPU per call rising with the rate (the wrong way): no drift
        let wrong: Vec<u64> = rates
            .iter()
            .enumerate()
            .map(|(i, r)| (r * (500_000.0 + 20_000.0 * i as f64)) as u64)
            .collect();
        assert_eq!(drift_confirmed(&rates, &wrong, 0.10), None);
        // a falling rate with CPU per call rising (a server slowing down): confirmed
        let falling: Vec<f64> = rates.iter().rev().copied().collect();
        let same_cpu: Vec<u64> = vec![500_000_000; 10];
        assert!(drift_confirmed(&falling, &same_cpu, 0.10).is_some_and(|d| d.change < 0.0));
        // no CPU timeline: the rate alone decides
        assert_eq!(drift_confirmed(&rates, &[], 0.10), Some(rate_only));
        // a steady rate is never drift, whatever the CPU did
        let flat: Vec<f64> = (0..10).map(|i| 1000.0 + wobble(i, 20.0)).collect();
        assert_eq!(drift_confirmed(&flat, &jit, 0.10), None);
    }

    /// A deterministic "noise" of about ±`amp` around 0 (no RNG needed).
    fn wobble(i: usize, amp: f64) -> f64 {
        let x = ((i * 7919 + 13) % 101) as f64 / 100.0; // 0..1, scrambled
        (x - 0.5) * 2.0 * amp
    }

    fn timeline(seconds: usize, f: impl Fn(usize) -> f64) -> Vec<f64> {
        (0..seconds).map(f).collect()
    }

    #[test]
    fn drift_table() {
        let rows: Vec<(&str, Vec<f64>, Option<bool>)> = vec![
            // (what the server does, its timeline, Some(rising?) or None for no drift)
            ("flat", timeline(10, |_| 1000.0), None),
            (
                "noisy flat (±25% per second)",
                timeline(10, |i| 1000.0 + wobble(i, 250.0)),
                None,
            ),
            (
                "rising throughout (JIT: 5k to 17k)",
                timeline(10, |i| 5000.0 + 1300.0 * i as f64),
                Some(true),
            ),
            (
                "falling (leak: -4%/s)",
                timeline(10, |i| 1000.0 * (1.0 - 0.04 * i as f64)),
                Some(false),
            ),
            (
                "a significant but tiny trend (1% over the window) is not drift",
                timeline(20, |i| 1000.0 + 0.5 * i as f64),
                None,
            ),
            ("too short to judge", vec![100.0, 200.0, 300.0, 400.0], None),
        ];
        for (why, rates, want) in rows {
            let got = drift(&rates, DEFAULT_DRIFT_THRESHOLD);
            assert_eq!(got.map(|d| d.change > 0.0), want, "{why}: {got:?}");
        }
        let d = drift(&timeline(10, |i| 1000.0 + 100.0 * i as f64), 0.1).unwrap();
        assert_eq!(d.describe(), "rate rose 62% within the window");
    }

    #[test]
    fn steady_table() {
        let rising_then_flat = |i: usize| {
            if i < 8 {
                2000.0 * (i + 1) as f64
            } else {
                16_000.0 + wobble(i, 400.0)
            }
        };
        let rows: Vec<(&str, Vec<f64>, bool)> = vec![
            (
                "flat from the start: steady once the window is full",
                timeline(5, |_| 900.0),
                true,
            ),
            ("not enough seconds yet", timeline(4, |_| 900.0), false),
            ("still rising", timeline(12, |i| 1000.0 * (i + 1) as f64), false),
            (
                "rising then flat: the last 5 s are steady",
                timeline(14, rising_then_flat),
                true,
            ),
            (
                "rising then flat, window still on the rise",
                timeline(10, rising_then_flat),
                false,
            ),
            (
                "falling counts as steady (more warm-up will not help)",
                timeline(8, |i| 1000.0 - 50.0 * i as f64),
                true,
            ),
            ("noisy flat", timeline(10, |i| 1000.0 + wobble(i, 300.0)), true),
        ];
        for (why, rates, want) in rows {
            assert_eq!(steady(&rates, 5, 0.02), want, "{why}: {rates:?}");
        }
    }

    #[test]
    fn trend_fits_a_line_exactly() {
        let t = Trend::of(&[10.0, 20.0, 30.0, 40.0]).unwrap();
        assert!((t.slope - 10.0).abs() < 1e-9);
        assert!(t.slope_half_width < 1e-9);
        assert!((t.change() - 30.0 / 25.0).abs() < 1e-9);
        assert!(Trend::of(&[1.0, 2.0]).is_none());
    }
}
