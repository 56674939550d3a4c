//! The readable summary and the one-row CSV of one load run (`protobench
//! load`): the numbers, the status codes, the failed calls' latency and a
//! latency histogram in the form hey and oha print (linear buckets from the
//! fastest to the slowest call, each with its count and a bar scaled to the
//! fullest bucket), computed from the stored HdrHistogram.

use hdrhistogram::Histogram;
use protobench_model::format::{fmt_bytes, fmt_ns};
use protobench_model::load::{LatencySummary, LoadResult, StatusCount, grpc_code_name};

/// Buckets of the summary's histogram.
pub const BUCKETS: usize = 10;
/// The length of the fullest bucket's bar, in characters.
pub const BAR_WIDTH: usize = 40;
/// The bar's character.
pub const BAR: char = '\u{25a0}';

/// One bucket of a latency histogram: the calls at most `upper_ns` (and
/// above the previous bucket's bound).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    /// The bucket's upper bound.
    pub upper_ns: u64,
    /// Calls in the bucket.
    pub count: u64,
}

/// `n` linear buckets from the histogram's smallest to its largest value;
/// the last bucket's bound is the largest value. One bucket when every
/// value is the same; none for an empty histogram.
pub fn buckets(h: &Histogram<u64>, n: usize) -> Vec<Bucket> {
    if h.is_empty() || n == 0 {
        return Vec::new();
    }
    let (min, max) = (h.min(), h.max());
    // (`min` and `max` are the ends of their HDR buckets: one value has both.)
    if h.equivalent(min, max) {
        return vec![Bucket {
            upper_ns: max,
            count: h.len(),
        }];
    }
    let width = (max - min) as f64 / n as f64;
    let mut out: Vec<Bucket> = (1..=n)
        .map(|i| Bucket {
            upper_ns: if i == n {
                max
            } else {
                min + (width * i as f64).round() as u64
            },
            count: 0,
        })
        .collect();
    for v in h.iter_recorded() {
        // The value a bucket of the histogram stands for, within [min, max].
        let value = h.highest_equivalent(v.value_iterated_to()).clamp(min, max);
        let i = (((value - min) as f64 / width).ceil() as usize)
            .saturating_sub(1)
            .min(n - 1);
        out[i].count += v.count_at_value();
    }
    out
}

/// The histogram as text: one line per bucket, `  <bound> [<count>] |<bar>`,
/// bounds and counts aligned, bars scaled so the fullest bucket has
/// [`BAR_WIDTH`] characters (rounded to the nearest).
pub fn histogram_text(buckets: &[Bucket]) -> String {
    let most = buckets.iter().map(|b| b.count).max().unwrap_or(0);
    let bounds: Vec<String> = buckets.iter().map(|b| fmt_ns(b.upper_ns as f64)).collect();
    let counts: Vec<String> = buckets.iter().map(|b| format!("[{}]", b.count)).collect();
    let bw = bounds.iter().map(|b| b.chars().count()).max().unwrap_or(0);
    let cw = counts.iter().map(String::len).max().unwrap_or(0);
    let mut s = String::new();
    for ((b, bound), count) in buckets.iter().zip(&bounds).zip(&counts) {
        let len = if most == 0 {
            0
        } else {
            ((u128::from(b.count) * BAR_WIDTH as u128 + u128::from(most) / 2) / u128::from(most)) as usize
        };
        let bar: String = std::iter::repeat_n(BAR, len).collect();
        s += &format!("  {bound:>bw$} {count:<cw$} |{bar}\n");
    }
    s
}

/// The status distributions: HTTP codes, the calls without a response by
/// kind, and gRPC codes, as hey and oha list them.
fn statuses(r: &LoadResult) -> String {
    let mut s = String::new();
    let unanswered: Vec<String> = r
        .transport_errors()
        .map(|e| format!("{} {}", e.count, e.kind.name()))
        .collect();
    if !r.http_statuses.is_empty() || !unanswered.is_empty() {
        s += "http status\n";
        for c in &r.http_statuses {
            s += &format!("  [{}] {} response{}\n", c.code, c.count, plural(c.count));
        }
        if !unanswered.is_empty() {
            s += &format!("  [no response] {}\n", unanswered.join(", "));
        }
    }
    if !r.grpc_statuses.is_empty() {
        s += "grpc status\n";
        for c in &r.grpc_statuses {
            s += &format!(
                "  [{} {}] {} response{}\n",
                c.code,
                grpc_code_name(c.code),
                c.count,
                plural(c.count)
            );
        }
    }
    s
}

pub(crate) fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Status counts in one CSV cell: `200:30;404:10`.
fn codes(list: &[StatusCount]) -> String {
    list.iter()
        .map(|c| format!("{}:{}", c.code, c.count))
        .collect::<Vec<_>>()
        .join(";")
}

pub(crate) fn latency_line(label: &str, l: &LatencySummary) -> String {
    if l.count == 0 {
        return format!("{label:<10} -\n");
    }
    format!(
        "{label:<10} min {}  mean {}  p50 {}  p90 {}  p95 {}  p99 {}  p99.9 {}  max {}\n",
        fmt_ns(l.min_ns as f64),
        fmt_ns(l.mean_ns as f64),
        fmt_ns(l.p50_ns as f64),
        fmt_ns(l.p90_ns as f64),
        fmt_ns(l.p95_ns as f64),
        fmt_ns(l.p99_ns as f64),
        fmt_ns(l.p999_ns as f64),
        fmt_ns(l.max_ns as f64)
    )
}

/// The lanes of a distributed run (docs/distributed.md): one line per
/// agent (its rate, latency, clock and its own generator verdict), and
/// what became of an agent that failed. Empty for one generator.
fn agents(r: &LoadResult) -> String {
    if r.agents.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "{:<10} {} agents{}, merged above (histograms added)\n",
        "agents",
        r.agents.len(),
        if r.incomplete {
            ", INCOMPLETE: an agent failed"
        } else {
            ""
        }
    );
    for a in &r.agents {
        let latency = if a.latency.count == 0 {
            "-".to_owned()
        } else {
            format!(
                "p50 {} p99 {}",
                fmt_ns(a.latency.p50_ns as f64),
                fmt_ns(a.latency.p99_ns as f64)
            )
        };
        s += &format!(
            "{:<10} {} {}: {:.1} calls/s, {} calls, {latency}, clock {:+} us +-{} us{}\n",
            format!("agent {}", a.index),
            a.agent,
            a.rate_share.map_or_else(
                || format!("{} callers", a.concurrency),
                |q| format!("{q} calls/s asked")
            ),
            a.rate,
            a.calls,
            a.clock_offset_ns / 1000,
            a.clock_uncertainty_ns.div_ceil(1000),
            if a.generator.generator_bound {
                ", GENERATOR-BOUND"
            } else {
                ""
            }
        );
        if let Some(f) = &a.failure {
            s += &format!(
                "{:<10} FAILED {:.1} s after the start: {}\n",
                "",
                f.after_ns as f64 / 1e9,
                f.message
            );
        }
    }
    s
}

/// The readable summary of one load run (`protobench load`'s text output).
pub fn text(r: &LoadResult) -> String {
    let p = &r.plan;
    let what = p.workload.clone().unwrap_or_else(|| "custom call".into());
    let lp = match p.rate {
        Some(rate) => format!("open loop at {rate} calls/s ({:?})", p.arrival).to_lowercase(),
        None if !p.stages.is_empty() => {
            let stages: Vec<String> = p
                .stages
                .iter()
                .map(|st| {
                    format!(
                        "{}:{}",
                        protobench_model::format::fmt_ns(st.duration_ns as f64),
                        st.target
                    )
                })
                .collect();
            format!("closed loop, {} users then {}", p.start_users, stages.join(","))
        }
        None => "closed loop".into(),
    };
    let over = if p.per_call {
        "a new connection per call".to_owned()
    } else {
        format!(
            "{} connection{}",
            p.connections,
            if p.connections == 1 { "" } else { "s" }
        )
    };
    let mut s = format!(
        "{} {} {what}: {lp}, concurrency {} over {over}{}\n",
        p.protocol,
        p.target,
        p.concurrency,
        if p.tls.is_some() { ", TLS" } else { "" }
    );
    s += &format!(
        "{:<10} {:.2} s measured ({}), {} calls, {} successes, {} errors\n",
        "run",
        r.duration_ns as f64 / 1e9,
        r.end_reason.name(),
        r.calls,
        r.successes,
        r.error_count()
    );
    s += &format!(
        "{:<10} {:.1} calls/s (started {:.1}/s)\n",
        "rate", r.rate, r.started_rate
    );
    if let Some(pct) = r.success_percent() {
        s += &format!("{:<10} {pct:.2}% of {} calls\n", "success", r.calls);
    }
    s += &latency_line("latency", &r.latency);
    s += &latency_line("service", &r.service_time);
    if let Some(failed) = &r.error_latency {
        s += &latency_line("failed", failed);
    }
    s += &latency_line("connect", &r.connect);
    if p.per_call || r.connects_per_second > 0.0 {
        s += &format!(
            "{:<10} {:.1} connects/s, {:.1}% of latency spent connecting ({} opened)\n",
            "connects",
            r.connects_per_second,
            r.connect_share * 100.0,
            r.connections_opened
        );
    }
    if r.errors.is_empty() {
        s += &format!("{:<10} none\n", "errors");
    }
    for (i, e) in r.errors.iter().enumerate() {
        s += &format!(
            "{:<10} {} {} (first: {})\n",
            if i == 0 { "errors" } else { "" },
            e.kind.name(),
            e.count,
            e.sample
        );
    }
    s += &statuses(r);
    s += &format!(
        "{:<10} sent {}/call, received {}/call ({} / {} in all)\n",
        "bytes",
        fmt_bytes(r.bytes_sent_per_call),
        fmt_bytes(r.bytes_received_per_call),
        fmt_bytes(r.bytes_sent as f64),
        fmt_bytes(r.bytes_received as f64)
    );
    let g = &r.generator;
    s += &format!(
        "{:<10} cpu {} in the measured window ({}/call, {:.0}% of {} thread{}), schedule lag p99 {}\n",
        "generator",
        fmt_ns(g.cpu_ns as f64),
        fmt_ns(g.cpu_ns_per_call),
        g.cpu_utilization * 100.0,
        g.threads,
        if g.threads == 1 { "" } else { "s" },
        if g.schedule_lag.count == 0 {
            "-".into()
        } else {
            fmt_ns(g.schedule_lag.p99_ns as f64)
        }
    );
    match (&g.reason, g.generator_bound) {
        (reason, true) => s += &format!("{:<10} GENERATOR-BOUND: {}\n", "", reason.clone().unwrap_or_default()),
        // Not judged (a window too short).
        (Some(reason), false) => s += &format!("{:<10} not judged: {reason}\n", ""),
        (None, false) => {}
    }
    s += &agents(r);
    // A histogram that does not decode: the summary goes without it.
    if let Some(h) = r.histogram.decode().ok().filter(|h| !h.is_empty()) {
        s += "\nlatency histogram (successful calls, from the intended start):\n";
        s += &histogram_text(&buckets(&h, BUCKETS));
    }
    s
}

/// One header line and one row (`protobench load --format csv`).
pub fn csv(r: &LoadResult) -> String {
    let p = &r.plan;
    let l = &r.latency;
    let st = &r.service_time;
    let header = "protocol,target,workload,concurrency,connections,target_rate,duration_ns,end_reason,calls,successes,errors,rate,\
latency_min_ns,latency_mean_ns,latency_p50_ns,latency_p90_ns,latency_p95_ns,latency_p99_ns,latency_p999_ns,latency_max_ns,\
service_p50_ns,service_p99_ns,bytes_sent_per_call,bytes_received_per_call,generator_cpu_ns,generator_cpu_ns_per_call,generator_bound,per_call,connects_per_second,connect_share,\
success_percent,error_latency_p50_ns,error_latency_p99_ns,http_statuses,grpc_statuses";
    let row = [
        p.protocol.name().to_owned(),
        p.target.clone(),
        p.workload.clone().unwrap_or_default(),
        p.concurrency.to_string(),
        p.connections.to_string(),
        p.rate.map(|r| r.to_string()).unwrap_or_default(),
        r.duration_ns.to_string(),
        r.end_reason.name().into(),
        r.calls.to_string(),
        r.successes.to_string(),
        r.error_count().to_string(),
        format!("{:.3}", r.rate),
        l.min_ns.to_string(),
        l.mean_ns.to_string(),
        l.p50_ns.to_string(),
        l.p90_ns.to_string(),
        l.p95_ns.to_string(),
        l.p99_ns.to_string(),
        l.p999_ns.to_string(),
        l.max_ns.to_string(),
        st.p50_ns.to_string(),
        st.p99_ns.to_string(),
        format!("{:.1}", r.bytes_sent_per_call),
        format!("{:.1}", r.bytes_received_per_call),
        r.generator.cpu_ns.to_string(),
        format!("{:.1}", r.generator.cpu_ns_per_call),
        r.generator.generator_bound.to_string(),
        p.per_call.to_string(),
        format!("{:.1}", r.connects_per_second),
        format!("{:.4}", r.connect_share),
        r.success_percent().map(|p| format!("{p:.2}")).unwrap_or_default(),
        r.error_latency.map(|l| l.p50_ns.to_string()).unwrap_or_default(),
        r.error_latency.map(|l| l.p99_ns.to_string()).unwrap_or_default(),
        codes(&r.http_statuses),
        codes(&r.grpc_statuses),
    ];
    // RFC 4180 quoting, as the run report's CSV (`report::csv`).
    let mut out = csv::Writer::from_writer(Vec::new());
    let _ = out.write_record(header.split(','));
    let _ = out.write_record(&row);
    // Writing to a Vec cannot fail, and every field is valid UTF-8.
    String::from_utf8(out.into_inner().unwrap_or_default()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use hdrhistogram::serialization::Serializer as _;
    use protobench_model::load::{ErrorCount, ErrorKind};
    use protobench_model::testing;

    fn histogram(values: &[(u64, u64)]) -> Histogram<u64> {
        // As the engine records: 1 us to 1 h, 3 significant digits.
        let mut h = Histogram::new_with_bounds(1_000, 3_600 * 1_000_000_000, 3).unwrap();
        for &(v, n) in values {
            h.record_n(v, n).unwrap();
        }
        h
    }

    #[test]
    fn buckets_are_linear_from_the_fastest_to_the_slowest_call() {
        let h = histogram(&[(1_000_000, 1), (5_200_000, 10), (10_000_000, 4)]);
        let b = buckets(&h, 10);
        let counts: Vec<u64> = b.iter().map(|b| b.count).collect();
        assert_eq!(counts, [1, 0, 0, 0, 10, 0, 0, 0, 0, 4]);
        assert_eq!(
            b.last().unwrap().upper_ns,
            h.max(),
            "the last bound is the slowest call"
        );
        // About 0.9 ms wide (the recorded values are kept to 3 digits).
        let width = b[1].upper_ns - b[0].upper_ns;
        assert!(width.abs_diff(900_000) < 10_000, "{width}");
        assert_eq!(counts.iter().sum::<u64>(), h.len());
    }

    #[test]
    fn one_value_is_one_bucket_and_nothing_is_no_bucket() {
        let b = buckets(&histogram(&[(2_000_000, 7)]), 10);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].count, 7);
        assert!(buckets(&histogram(&[]), 10).is_empty());
    }

    #[test]
    fn histogram_text_aligns_bounds_and_counts_and_scales_bars_to_the_fullest_bucket() {
        let b = [
            Bucket {
                upper_ns: 1_000_000,
                count: 1,
            },
            Bucket {
                upper_ns: 2_000_000,
                count: 10,
            },
            Bucket {
                upper_ns: 3_500_000,
                count: 4,
            },
            Bucket {
                upper_ns: 10_000_000,
                count: 0,
            },
        ];
        let bar = |n: usize| BAR.to_string().repeat(n);
        let want = format!(
            "   1.00ms [1]  |{}\n   2.00ms [10] |{}\n   3.50ms [4]  |{}\n  10.00ms [0]  |\n",
            bar(4),
            bar(40),
            bar(16)
        );
        assert_eq!(histogram_text(&b), want);
    }

    #[test]
    fn the_summary_shows_success_rate_statuses_and_failed_latency_only_when_calls_failed() {
        let mut r = testing::result("rest", "tasks.int", 100.0, 20, 1);
        r.errors.push(ErrorCount {
            kind: ErrorKind::Reset,
            count: 3,
            sample: "connection reset".into(),
        });
        r.calls += 3;
        let text = text(&r);
        assert!(text.contains("\nsuccess    81.30% of 123 calls\n"), "{text}");
        assert!(text.contains("\nfailed     min "), "{text}");
        assert!(
            text.contains("\nhttp status\n  [200] 100 responses\n  [500] 20 responses\n  [no response] 3 reset\n"),
            "{text}"
        );
        let ok = text_of(testing::result("rest", "tasks.int", 100.0, 0, 1));
        assert!(!ok.contains("\nfailed "), "{ok}");
        assert!(ok.contains("\nsuccess    100.00% of 100 calls\n"), "{ok}");
        assert!(ok.contains("\nhttp status\n  [200] 100 responses\nbytes "), "{ok}");
    }

    fn text_of(r: LoadResult) -> String {
        text(&r)
    }

    #[test]
    fn a_distributed_run_shows_each_agents_lane_and_a_failed_one() {
        let mut r = testing::result("rest", "inventory.s", 300.0, 0, 3);
        assert!(!text(&r).contains("agents"));
        let lane = |index: u32, bound: bool, failure: Option<&str>| protobench_model::load::AgentLane {
            index,
            agent: format!("10.0.0.{index}:7070"),
            clock_offset_ns: -12_000,
            clock_uncertainty_ns: 150_000,
            round_trip_ns: 300_000,
            concurrency: 10,
            rate_share: Some(100.0),
            start_offset_ns: 0,
            calls: 300,
            successes: 300,
            rate: 100.0,
            latency: testing::latency(1_000_000),
            generator: protobench_model::load::Generator {
                generator_bound: bound,
                ..r.generator.clone()
            },
            failure: failure.map(|m| protobench_model::load::AgentFailure {
                after_ns: 2_500_000_000,
                message: m.into(),
            }),
        };
        r.agents = vec![
            lane(0, false, None),
            lane(1, true, None),
            lane(2, false, Some("connection lost")),
        ];
        r.incomplete = true;
        let t = text(&r);
        assert!(t.contains("3 agents, INCOMPLETE: an agent failed"), "{t}");
        assert!(
            t.contains("agent 0    10.0.0.0:7070 100 calls/s asked: 100.0 calls/s, 300 calls"),
            "{t}"
        );
        assert!(t.contains("clock -12 us +-150 us"), "{t}");
        assert_eq!(t.matches("GENERATOR-BOUND").count(), 1, "{t}");
        assert!(t.contains("FAILED 2.5 s after the start: connection lost"), "{t}");
    }

    #[test]
    fn grpc_statuses_are_named() {
        let mut r = testing::result("grpc", "tasks.int", 10.0, 0, 1);
        r.grpc_statuses = vec![StatusCount { code: 0, count: 10 }, StatusCount { code: 14, count: 1 }];
        let text = text(&r);
        assert!(
            text.contains("\ngrpc status\n  [0 OK] 10 responses\n  [14 UNAVAILABLE] 1 response\n"),
            "{text}"
        );
    }

    #[test]
    fn the_summary_ends_with_the_latency_histogram() {
        let mut r = testing::result("rest", "tasks.int", 100.0, 0, 1);
        let h = histogram(&[(1_000_000, 90), (3_000_000, 10)]);
        let mut bytes = Vec::new();
        hdrhistogram::serialization::V2DeflateSerializer::new()
            .serialize(&h, &mut bytes)
            .unwrap();
        r.histogram = base64::engine::general_purpose::STANDARD.encode(bytes).into();
        let text = text(&r);
        let (_, hist) = text
            .split_once("\nlatency histogram (successful calls, from the intended start):\n")
            .expect("a histogram section");
        let lines: Vec<&str> = hist.lines().collect();
        assert_eq!(lines.len(), 10, "{hist}");
        assert!(
            lines[0].ends_with(&format!("[90] |{}", BAR.to_string().repeat(40))),
            "{hist}"
        );
        assert!(
            lines[9].ends_with(&format!("[10] |{}", BAR.to_string().repeat(4))),
            "{hist}"
        );
    }

    #[test]
    fn csv_has_one_row_with_the_status_columns() {
        let csv = csv(&testing::result("rest", "tasks.int", 100.0, 20, 1));
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0]
                .ends_with(",success_percent,error_latency_p50_ns,error_latency_p99_ns,http_statuses,grpc_statuses"),
            "{}",
            lines[0]
        );
        assert_eq!(lines[0].split(',').count(), lines[1].split(',').count());
        assert!(
            lines[1].ends_with(",83.33,500000,2500000,200:100;500:20,"),
            "{}",
            lines[1]
        );
    }
}
