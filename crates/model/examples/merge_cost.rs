//! The coordinator's cost of merging interval histograms, per agent-second.
//!
//! Simulates AGENTS agents that each send SECONDS one-second latency
//! histograms (V2 + deflate, base64, as the agents' wire carries them) of
//! SAMPLES calls each, then times what the coordinator does with them:
//! decode each one and add it into the sum of its second
//! (`protobench_model::merge::IntervalSum`), and the final total. Memory: the
//! encoded frames' size (what a coordinator keeps to export agents' lanes)
//! and the growth of peak RSS while merging.
//!
//! ```text
//! cargo run --release -p protobench-model --example merge_cost -- [AGENTS] [SECONDS] [SAMPLES]
//! ```
//! (defaults 300, 10, 3000). docs/distributed.md, "Scale on paper", quotes it.

use std::time::Instant;

use protobench_model::hdr::{EncodedHistogram, latency_histogram};
use protobench_model::merge::IntervalSum;

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let arg = |i: usize, d: u64| std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let (agents, seconds, samples) = (arg(1, 300), arg(2, 10), arg(3, 3000));
    // Latencies log-uniform from 50 us to 500 ms, a different stream per
    // agent-second: each histogram fills a realistic number of buckets.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut frames = Vec::with_capacity((agents * seconds) as usize);
    for a in 0..agents {
        for s in 0..seconds {
            let mut h = latency_histogram();
            for _ in 0..samples {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                let _ = h.record((50_000.0 * 1e4f64.powf(u)) as u64);
            }
            frames.push((s as u32, format!("agent-{a}"), EncodedHistogram::encode(&h)));
        }
    }
    let encoded_bytes: usize = frames.iter().map(|(_, _, h)| h.as_str().len()).sum();
    let rss_before = peak_rss_kib();
    let started = Instant::now();
    let mut sum = IntervalSum::new();
    for (second, source, h) in &frames {
        sum.add(*second, h, source).expect("same settings");
    }
    let total = sum.total();
    let elapsed = started.elapsed();
    let rss_growth = peak_rss_kib().saturating_sub(rss_before);
    let agent_seconds = (agents * seconds) as f64;
    assert_eq!(total.len(), agents * seconds * samples);
    println!("agents {agents}, seconds {seconds}, samples per agent-second {samples}");
    println!(
        "merge: {:.1} ms in all, {:.1} us per agent-second",
        elapsed.as_secs_f64() * 1e3,
        elapsed.as_secs_f64() * 1e6 / agent_seconds
    );
    println!(
        "encoded frames: {:.1} KiB per agent-second ({:.1} MiB in all)",
        encoded_bytes as f64 / 1024.0 / agent_seconds,
        encoded_bytes as f64 / (1 << 20) as f64
    );
    println!(
        "peak RSS growth while merging: {:.1} MiB ({} merged seconds of about {:.0} KiB each)",
        rss_growth as f64 / 1024.0,
        seconds,
        (total.distinct_values() as f64 * 8.0) / 1024.0
    );
    println!(
        "one core keeps up with {:.0} agents streaming one histogram a second",
        1.0 / (elapsed.as_secs_f64() / agent_seconds)
    );
}
