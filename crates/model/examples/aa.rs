//! A/A calibration of the ratio intervals (`bench/aa.sh` runs it): reads a
//! JSON report (`protobench report RUN -O json`) of one point measured in
//! many interleaved repetitions, splits them into comparisons of two
//! "points" — repetitions 1, 3, 5 against 2, 4, 6, then 7, 9, 11 against
//! 8, 10, 12, ... — and counts how often the 95% interval of their ratio
//! excludes 1, i.e. how often the same thing measured twice is called
//! different. The intervals are `stats::ratio_with`, the code every claim
//! and `compare` use.
//!
//! Usage: `cargo run -p protobench-model --example aa -- REPORT.json [PER_SIDE]`
//! (PER_SIDE repetitions per side, default 3).

use std::process::ExitCode;

use protobench_model::run::{Measurement, PointAggregate, RunRecord};
use protobench_model::stats::{Pairing, Summary, ratio_with};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: aa REPORT.json [PER_SIDE]");
        return ExitCode::from(2);
    };
    let per_side: usize = match args.get(1).map(|s| s.parse()) {
        None => 3,
        Some(Ok(n)) if n >= 2 => n,
        Some(_) => {
            eprintln!("aa: PER_SIDE must be an integer of at least 2, found `{}`", args[1]);
            return ExitCode::from(2);
        }
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("aa: reading {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let run: RunRecord = match serde_json::from_str::<serde_json::Value>(&text)
        .map_err(|e| e.to_string())
        .and_then(|v| serde_json::from_value(v["run"].clone()).map_err(|e| e.to_string()))
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("aa: {path} is not a protobench JSON report: {e}");
            return ExitCode::from(2);
        }
    };
    let [point] = run.points.as_slice() else {
        eprintln!("aa: expected a run of one point, found {} points", run.points.len());
        return ExitCode::from(2);
    };
    let mut ms: Vec<&Measurement> = run.measurements.iter().filter(|m| m.result.is_some()).collect();
    ms.sort_by_key(|m| m.repetition);
    let block = 2 * per_side;
    let comparisons = ms.len() / block;
    // One side of a comparison: its measurements renumbered 1..=per_side,
    // so that A's k-th and B's k-th (measured one after the other) pair up.
    let side = |chunk: &[&Measurement], offset: usize| -> PointAggregate {
        let renumbered: Vec<Measurement> = chunk
            .iter()
            .skip(offset)
            .step_by(2)
            .enumerate()
            .map(|(k, m)| Measurement {
                repetition: k as u32 + 1,
                ..(*m).clone()
            })
            .collect();
        let refs: Vec<&Measurement> = renumbered.iter().collect();
        PointAggregate::of(point, &refs, run.noise_threshold)
    };
    type Pick = fn(&PointAggregate) -> Option<&Summary>;
    let metrics: [(&str, Pick); 3] = [
        ("rate", |a| a.rate.as_ref()),
        ("p50", |a| a.p50_ns.as_ref()),
        ("p99", |a| a.p99_ns.as_ref()),
    ];
    println!(
        "A/A: {} ({} repetitions): {comparisons} comparisons of {per_side} against {per_side} interleaved repetitions",
        point.label(),
        ms.len()
    );
    let mut worst = 0.0f64;
    for (name, pick) in metrics {
        for pairing in [Pairing::SameRepetitions, Pairing::Never] {
            let mut differ = 0;
            let mut halves: Vec<f64> = Vec::new();
            for chunk in ms.chunks_exact(block) {
                let (a, b) = (side(chunk, 0), side(chunk, 1));
                let (Some(sa), Some(sb)) = (pick(&a), pick(&b)) else {
                    continue;
                };
                let Some(r) = ratio_with(sa, sb, pairing) else { continue };
                if r.significant {
                    differ += 1;
                }
                if let Some((lo, hi)) = r.interval() {
                    halves.push((hi / lo).sqrt() - 1.0);
                }
            }
            halves.sort_by(f64::total_cmp);
            let median_half = halves.get(halves.len() / 2).copied().unwrap_or(f64::NAN);
            let share = differ as f64 / comparisons.max(1) as f64;
            if pairing == Pairing::SameRepetitions {
                worst = worst.max(share);
            }
            println!(
                "  {name:<4} {:<8}: {differ:>3} of {comparisons} called different ({:.1}%); median interval x/÷ {:.1}%",
                if pairing == Pairing::SameRepetitions {
                    "paired"
                } else {
                    "unpaired"
                },
                share * 100.0,
                median_half * 100.0
            );
        }
    }
    if comparisons < 40 {
        println!("fewer than 40 comparisons: not enough to calibrate");
        return ExitCode::from(1);
    }
    if worst > 0.10 {
        println!("FAIL: a paired false-difference rate above 10%");
        return ExitCode::from(1);
    }
    println!("ok: every paired false-difference rate at most 10%");
    ExitCode::SUCCESS
}
