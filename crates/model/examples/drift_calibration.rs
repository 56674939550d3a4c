//! Calibration of the drift flag and the steady-state warm-up rule
//! (`bench/drift.sh` records the timelines and runs it).
//!
//! Input: `protobench load -O json` results with per-second timelines,
//! steady ones (a server without JIT, already warm) before `--`, rising ones
//! (a JVM from its first call) after it. For every candidate rule it prints:
//!
//! - **drift flag** (`steady::drift` over a measured window of W seconds
//!   with threshold T): the share of non-overlapping windows flagged on the
//!   steady timelines (false alarms; the target is at most 1 in 10), and on
//!   the rising timelines after their first 30 s (what a measured window
//!   after a 30 s warm-up sees): the share flagged (power) and the median
//!   change reported;
//! - **steady warm-up** (a window of W seconds, threshold T; `not-rising`:
//!   no significant rise above T, the rule before issue 29; `bounded`: the
//!   95% upper bound of the rise is below T): on the steady timelines, the
//!   seconds from each 10 s offset until the rule says steady; on the
//!   rising ones, the second it says steady and how much faster the server
//!   still got (the mean of the last 30 s over the mean of the rule's
//!   window; what a measurement started then would miss).
//!
//! Each input is a `protobench load -O json` result (rates only) or a
//! `protobench report RUN -O json` (every measurement's rates, and the
//! server's CPU per second the runner sampled). With CPU, the drift table
//! also gives the flag with its second signal (`steady::drift_confirmed`:
//! the CPU per call must trend the other way).
//!
//! Usage: `drift_calibration STEADY.json... -- RISING.json...`

use std::process::ExitCode;

use protobench_model::load::LoadResult;
use protobench_model::steady::{Trend, drift, drift_confirmed};

/// Whole seconds of successful calls (the last, partial, second dropped),
/// and the server's CPU per second when sampled (else empty).
type Series = (Vec<f64>, Vec<u64>);

/// The series of a load result or of every measurement of a report.
fn series(path: &str) -> Result<Vec<Series>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{path}: not JSON: {e}"))?;
    let of = |r: &serde_json::Value, cpu: &serde_json::Value| -> Result<Series, String> {
        let r: LoadResult = serde_json::from_value(r.clone()).map_err(|e| format!("{path}: not a load result: {e}"))?;
        let mut rates: Vec<f64> = r.timeline.iter().map(|p| p.successes as f64).collect();
        rates.pop();
        if rates.len() < 40 {
            return Err(format!("{path}: {} whole seconds, at least 40 needed", rates.len()));
        }
        let cpu: Vec<u64> = serde_json::from_value(cpu.clone()).unwrap_or_default();
        Ok((rates, cpu))
    };
    match v.pointer("/run/measurements").and_then(|m| m.as_array()) {
        Some(ms) => ms
            .iter()
            .filter(|m| m["result"].is_object())
            .map(|m| of(&m["result"], &m["server_cpu_timeline"]))
            .collect(),
        None => Ok(vec![of(&v, &serde_json::Value::Null)?]),
    }
}

/// A steady-state rule over the last `window` seconds.
#[derive(Clone, Copy)]
enum Rule {
    /// No significant rise above the threshold (absence of evidence).
    NotRising,
    /// The 95% upper bound of the rise is below the threshold.
    Bounded,
}

fn says_steady(rule: Rule, rates: &[f64], threshold: f64) -> bool {
    let Some(t) = Trend::of(rates) else { return false };
    if t.mean <= 0.0 {
        return false;
    }
    let span = (t.seconds as f64 - 1.0) / t.mean;
    match rule {
        Rule::NotRising => !(t.significant() && t.change() > threshold),
        Rule::Bounded => (t.slope + t.slope_half_width) * span <= threshold,
    }
}

/// The first second (counted from `from`) at which `rule` says steady, at
/// most `cap` seconds on.
fn steady_at(rule: Rule, rates: &[f64], from: usize, window: usize, threshold: f64, cap: usize) -> Option<usize> {
    (from + window..=rates.len().min(from + cap))
        .find(|&end| says_steady(rule, &rates[end - window..end], threshold))
        .map(|end| end - from)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() { f64::NAN } else { v[v.len() / 2] }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(split) = args.iter().position(|a| a == "--") else {
        eprintln!("usage: drift_calibration STEADY.json... -- RISING.json...");
        return ExitCode::from(2);
    };
    let load = |paths: &[String]| {
        paths
            .iter()
            .map(|p| series(p))
            .collect::<Result<Vec<_>, _>>()
            .map(|v| v.into_iter().flatten().collect::<Vec<Series>>())
    };
    let (steady_series, rising_series) = match (load(&args[..split]), load(&args[split + 1..])) {
        (Ok(s), Ok(r)) if !s.is_empty() => (s, r),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("drift_calibration: {e}");
            return ExitCode::from(2);
        }
        _ => {
            eprintln!("drift_calibration: no steady timeline before `--`");
            return ExitCode::from(2);
        }
    };
    let steady: Vec<Vec<f64>> = steady_series.iter().map(|s| s.0.clone()).collect();
    let rising: Vec<Vec<f64>> = rising_series.iter().map(|s| s.0.clone()).collect();
    for (name, set) in [("steady", &steady), ("rising", &rising)] {
        for (i, r) in set.iter().enumerate() {
            let tens: Vec<String> = r.chunks(10).map(|c| format!("{:.0}", mean(c))).collect();
            println!("{name} {}: {} s, 10-second means: {}", i + 1, r.len(), tens.join(" "));
        }
    }

    println!(
        "\nDrift flag: false alarms on steady windows; on rising windows after 30 s, share flagged and median change reported"
    );
    drift_table(&steady_series, &rising_series, |w, _, t| drift(w, t));
    if steady_series.iter().chain(&rising_series).all(|s| !s.1.is_empty()) {
        println!("\nThe same with the second signal (the CPU per call trending the other way):");
        drift_table(&steady_series, &rising_series, drift_confirmed);
    }
    steady_warmup_table(&steady, &rising);
    ExitCode::SUCCESS
}

/// Windows of `window` seconds of each series, with the CPU of the same
/// seconds (empty without).
fn windows(s: &Series, skip: usize, window: usize) -> Vec<(&[f64], &[u64])> {
    let (rates, cpu) = (&s.0[skip.min(s.0.len())..], &s.1[skip.min(s.1.len())..]);
    rates
        .chunks_exact(window)
        .enumerate()
        .map(|(i, w)| (w, cpu.get(i * window..(i + 1) * window).unwrap_or(&[])))
        .collect()
}

/// The drift flag's false alarms and power under `flag`.
fn drift_table(
    steady: &[Series],
    rising: &[Series],
    flag: impl Fn(&[f64], &[u64], f64) -> Option<protobench_model::steady::Drift>,
) {
    println!(
        "{:>8} {:>6} {:>16} {:>16} {:>14}",
        "window", "thr", "steady flagged", "rising flagged", "median change"
    );
    for window in [5usize, 10, 20, 30] {
        for threshold in [0.10, 0.20] {
            let (mut fa, mut n) = (0, 0);
            for r in steady {
                for (w, c) in windows(r, 0, window) {
                    n += 1;
                    fa += usize::from(flag(w, c, threshold).is_some());
                }
            }
            let (mut hits, mut m, mut changes) = (0, 0, Vec::new());
            for r in rising {
                for (w, c) in windows(r, 30, window) {
                    m += 1;
                    if let Some(d) = flag(w, c, threshold) {
                        hits += 1;
                        changes.push(d.change);
                    }
                }
            }
            println!(
                "{:>7}s {:>5.0}% {:>9} of {:<4} {:>9} of {:<4} {:>13}",
                window,
                threshold * 100.0,
                fa,
                n,
                hits,
                m,
                if changes.is_empty() {
                    "-".to_string()
                } else {
                    format!("{:+.0}%", median(changes) * 100.0)
                }
            );
        }
    }
}

/// When each steady-state rule says steady.
fn steady_warmup_table(steady: &[Vec<f64>], rising: &[Vec<f64>]) {
    println!(
        "\nSteady warm-up: seconds to 'steady' on steady timelines (from every 10 s offset, cap 120 s); on rising ones, when it says steady and the rise still to come"
    );
    println!(
        "{:>10} {:>7} {:>5} {:>22} {:>24}",
        "rule", "window", "thr", "steady: median / max", "rising: at s (to come)"
    );
    for (rule, name) in [(Rule::NotRising, "not-rising"), (Rule::Bounded, "bounded")] {
        for window in [5usize, 10, 15, 20] {
            for threshold in [0.02, 0.05, 0.10] {
                let mut waits = Vec::new();
                let mut never = 0;
                for r in steady {
                    for from in (0..r.len().saturating_sub(window + 10)).step_by(10) {
                        match steady_at(rule, r, from, window, threshold, 120) {
                            Some(s) => waits.push(s as f64),
                            None => never += 1,
                        }
                    }
                }
                let max = waits.iter().copied().fold(0.0, f64::max);
                let rising_cells: Vec<String> = rising
                    .iter()
                    .map(|r| match steady_at(rule, r, 0, window, threshold, r.len() - 30) {
                        Some(s) => {
                            let to_come = mean(&r[r.len() - 30..]) / mean(&r[s - window..s]) - 1.0;
                            format!("{s} ({:+.0}%)", to_come * 100.0)
                        }
                        None => "never".into(),
                    })
                    .collect();
                println!(
                    "{:>10} {:>6}s {:>4.0}% {:>22} {:>24}",
                    name,
                    window,
                    threshold * 100.0,
                    format!(
                        "{:.0} / {:.0}{}",
                        median(waits.clone()),
                        max,
                        if never > 0 {
                            format!(" ({never} never)")
                        } else {
                            String::new()
                        }
                    ),
                    rising_cells.join(", ")
                );
            }
        }
    }
}
