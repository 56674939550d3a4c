//! The charts the studies draw (issue #10):
//!
//! - latency distribution: percentile axis ticks and log spacing, the curve
//!   from a stored histogram
//! - time chart: several series on one time axis, the knee marker
//! - hockey stick: one line per protocol from search steps, in rate order
//! - payload: grouped by protocol, ordered by size
//! - clear vs TLS: the percentage change
//! - axes: log y above one decade, linear below; whiskers never below zero
//! - no empty charts: no error chart when no call failed

use base64::Engine as _;
use hdrhistogram::serialization::Serializer as _;
use protobench_model::run::{PointConfig, PointKind, RunRecord, Search, SearchStep};
use protobench_model::testing;
use protobench_results::charts::{self, TimeSeries};
use protobench_results::html;
use protobench_results::svg::{Axis, Bar, BarChart, Marker, Scale};

/// A stored histogram (V2 + deflate, base64) of these latencies in ns.
fn histogram(values_ns: impl Iterator<Item = u64>) -> String {
    let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
    for v in values_ns {
        h.record(v).unwrap();
    }
    let mut buf = Vec::new();
    hdrhistogram::serialization::V2DeflateSerializer::new()
        .serialize(&h, &mut buf)
        .unwrap();
    base64::engine::general_purpose::STANDARD.encode(buf)
}

/// `(x, label)` of every `<text class="{class}" x="...">label</text>`.
fn texts(svg: &str, class: &str) -> Vec<(f64, String)> {
    let key = format!("class=\"{class}\" x=\"");
    svg.match_indices(&key)
        .map(|(i, _)| {
            let rest = &svg[i + key.len()..];
            let x: f64 = rest[..rest.find('"').unwrap()].parse().unwrap();
            let label = &rest[rest.find('>').unwrap() + 1..rest.find("</text>").unwrap()];
            (x, label.to_string())
        })
        .collect()
}

fn x_of(ticks: &[(f64, String)], label: &str) -> f64 {
    ticks
        .iter()
        .find(|t| t.1 == label)
        .unwrap_or_else(|| panic!("no tick {label} in {ticks:?}"))
        .0
}

fn point(index: u32, protocol: &str, workload: &str, f: impl FnOnce(&mut PointConfig)) -> PointConfig {
    let mut p = testing::point(index, protocol, workload);
    f(&mut p);
    p
}

#[test]
fn percentile_curve_reads_a_stored_histogram() {
    // 1..=10,000 µs: p50 = 5 ms, p99 = 9.9 ms, max 10 ms.
    let h = histogram((1..=10_000u64).map(|v| v * 1_000));
    let curve = charts::percentile_curve(&h).unwrap();
    assert_eq!(curve[0].0, 0.0);
    let at = |p: f64| curve.iter().find(|c| (c.0 - p).abs() < 1e-9).unwrap().1;
    assert!((at(0.5) / 5e6 - 1.0).abs() < 0.01, "p50 {}", at(0.5));
    assert!((at(0.99) / 9.9e6 - 1.0).abs() < 0.01, "p99 {}", at(0.99));
    // 10,000 samples resolve four nines; the line ends at the largest value.
    let last = curve.last().unwrap();
    assert!((last.0 - 0.9999).abs() < 1e-9);
    assert!((last.1 / 10e6 - 1.0).abs() < 0.01);
    assert!(curve.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    assert!(charts::percentile_curve("not base64!").is_err());
}

#[test]
fn distribution_chart_has_a_log_percentile_axis_and_a_line_per_protocol() {
    let points = vec![
        testing::point(0, "rest", "inventory.s"),
        testing::point(1, "grpc", "inventory.s"),
    ];
    let mut ms = vec![
        testing::measurement(&points[0], 1, 1000.0),
        testing::measurement(&points[1], 1, 2000.0),
    ];
    ms[0].result.as_mut().unwrap().histogram = histogram((1..=20_000u64).map(|v| 1_000_000 + v * 100)).into();
    ms[1].result.as_mut().unwrap().histogram = histogram((1..=20_000u64).map(|v| 500_000 + v * 1_000)).into();
    let run = testing::record(points, ms);
    let plots = charts::distribution_plots(&run);
    assert_eq!(plots.len(), 1, "one chart per workload");
    let (cat, plot) = &plots[0];
    assert_eq!(cat, "inventory.s");
    let names: Vec<&str> = plot.panels[0].lines.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["rest", "grpc"]);
    let svg = plot.render();
    let ticks = texts(&svg, "xtick");
    let (p50, p90, p99, p999, p9999) = (
        x_of(&ticks, "50%"),
        x_of(&ticks, "90%"),
        x_of(&ticks, "99%"),
        x_of(&ticks, "99.9%"),
        x_of(&ticks, "99.99%"),
    );
    assert!(p50 < p90 && p90 < p99 && p99 < p999 && p999 < p9999);
    // Each step is one decade of 1 / (1 - p): equal distances ...
    let decade = p99 - p90;
    for (a, b) in [(p99, p999), (p999, p9999)] {
        assert!((b - a - decade).abs() < 0.3, "{a} -> {b} vs {decade}");
    }
    // ... and 50% sits log10(2) of a decade from 0%.
    let p0 = x_of(&ticks, "0%");
    assert!(((p50 - p0) / decade - 2f64.log10()).abs() < 0.01);
    assert!(((p90 - p0) / decade - 1.0).abs() < 0.01);
    let html = html::render(&run, &html::charts(&run));
    assert!(html.contains("id=\"chart-distribution-inventory-s\""));
}

#[test]
fn time_chart_stacks_series_on_one_time_axis_with_the_knee_marked() {
    let series = vec![
        TimeSeries {
            name: "users".into(),
            y_label: "users".into(),
            latency: false,
            points: (0..=40).map(|s| (s as f64, 15.0 * s as f64)).collect(),
        },
        TimeSeries {
            name: "calls/s".into(),
            y_label: "calls/s".into(),
            latency: false,
            points: (0..=40)
                .map(|s| (s as f64, (1000.0 * s as f64).min(20_000.0)))
                .collect(),
        },
        TimeSeries {
            name: "p95".into(),
            y_label: "latency (ms)".into(),
            latency: true,
            points: (0..=40).map(|s| (s as f64, if s < 20 { 1.0 } else { 50.0 })).collect(),
        },
    ];
    let marker = Marker {
        x: 20.0,
        label: "knee: 300 users, 20,000 calls/s".into(),
    };
    let plot = charts::time_plot("Continuous ramp", &series, Some(marker)).unwrap();
    assert_eq!(plot.panels.len(), 3, "one panel per y axis");
    assert_eq!(plot.panels[2].y.scale, Scale::Log, "p95 spans 1..50 ms");
    assert_eq!(plot.panels[0].y.scale, Scale::Linear);
    let svg = plot.render();
    assert_eq!(svg.matches("class=\"marker\"").count(), 1);
    let labels = texts(&svg, "marker-label");
    assert_eq!(labels.len(), 1);
    assert_eq!(labels[0].1, "knee: 300 users, 20,000 calls/s");
    // The marker stands at second 20: halfway between the ticks 10 and 30.
    let ticks = texts(&svg, "xtick");
    let (t10, t30) = (x_of(&ticks, "10"), x_of(&ticks, "30"));
    let marker_x = labels[0].0 - 4.0;
    assert!((marker_x - (t10 + t30) / 2.0).abs() < 0.2, "{marker_x} vs {t10}..{t30}");
    // Nothing to draw, no chart.
    assert!(charts::time_plot("empty", &[], None).is_none());
}

#[test]
fn timeline_series_come_from_todays_timeline_fields() {
    let mut r = testing::result("rest", "inventory.s", 100.0, 0, 3);
    let s = charts::timeline_series(&r);
    let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["users", "calls/s", "p50", "p95", "p99"],
        "no errors/s line when nothing failed"
    );
    assert_eq!(s[0].points, [(0.0, 16.0), (1.0, 16.0), (2.0, 16.0)]);
    assert_eq!(s[1].points, [(0.0, 100.0), (1.0, 100.0), (2.0, 100.0)]);
    assert_eq!(s[4].points[0], (0.0, 5.0));
    r.timeline[1].errors = 4;
    assert_eq!(charts::timeline_series(&r)[2].name, "errors/s");
    // A timeline written before users and p95 were recorded (0) has neither.
    for t in &mut r.timeline {
        (t.users, t.p95_ns) = (0, 0);
    }
    let names: Vec<String> = charts::timeline_series(&r).into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["calls/s", "errors/s", "p50", "p99"]);
}

fn discover(
    index: u32,
    protocol: &str,
    steps: &[(u32, f64, u64)],
    chosen: u32,
) -> (PointConfig, protobench_model::run::Measurement) {
    let p = point(index, protocol, "inventory.m", |p| p.kind = PointKind::Discover);
    let mut m = testing::measurement(&p, 1, 1000.0);
    m.search = Some(Search {
        steps: steps
            .iter()
            .map(|&(concurrency, rate, p99_ms)| SearchStep {
                concurrency,
                rate,
                errors: 0,
                p99_ns: p99_ms * 1_000_000,
            })
            .collect(),
        chosen_concurrency: chosen,
        knee_rate: None,
        stop_reason: "rate gain below 2%".into(),
        knee_second: None,
        stopped_at_knee: false,
    });
    (p, m)
}

#[test]
fn hockey_stick_from_search_steps_has_a_line_per_protocol_in_rate_order() {
    // Steps stored out of order: the chart follows the load level.
    let (p0, m0) = discover(
        0,
        "rest",
        &[(8, 900.0, 9), (2, 300.0, 2), (4, 600.0, 3), (16, 950.0, 30)],
        8,
    );
    let (p1, m1) = discover(1, "grpc", &[(2, 500.0, 1), (4, 1000.0, 2), (8, 1500.0, 6)], 8);
    let run = testing::record(vec![p0, p1], vec![m0, m1]);
    let plots = charts::hockey_plots(&run);
    assert_eq!(plots.len(), 1);
    let lines = &plots[0].1.panels[0].lines;
    let names: Vec<&str> = lines.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["rest", "grpc"]);
    assert_eq!(
        lines[0].points,
        [(300.0, 2.0), (600.0, 3.0), (900.0, 9.0), (950.0, 30.0)],
        "x = achieved rate, y = p99 ms, in rate order"
    );
    assert_eq!(lines[1].marks, [(1500.0, 6.0, "best c=8".to_string())]);
    assert_eq!(plots[0].1.panels[0].y.scale, Scale::Log, "p99 spans 1..30 ms");
    assert!(html::charts(&run).iter().any(|c| c.id == "hockey-inventory-m"));
}

#[test]
fn hockey_stick_joins_fixed_points_of_several_concurrencies() {
    let mut points = Vec::new();
    let mut ms = Vec::new();
    for (i, c) in [64u32, 1, 16].into_iter().enumerate() {
        let p = point(i as u32, "rest", "echo.1k", |p| {
            p.concurrency = c;
            p.connections = c;
        });
        let mut m = testing::measurement(&p, 1, 100.0 * c as f64);
        m.result.as_mut().unwrap().latency.p99_ns = 1_000_000 * c as u64;
        ms.push(m);
        points.push(p);
    }
    // One point of another workload: no line of one level.
    points.push(testing::point(3, "rest", "echo.8k"));
    ms.push(testing::measurement(&points[3], 1, 10.0));
    let run = testing::record(points, ms);
    let plots = charts::hockey_plots(&run);
    assert_eq!(plots.len(), 1, "echo.8k has a single load level");
    assert_eq!(
        plots[0].1.panels[0].lines[0].points,
        [(100.0, 1.0), (1600.0, 16.0), (6400.0, 64.0)]
    );
}

#[test]
fn size_family_table() {
    let cases = [
        ("echo.128b", Some("echo")),
        ("echo.128k", Some("echo")),
        ("inventory.xs", Some("inventory")),
        ("inventory.l", Some("inventory")),
        ("grpcbench.string-10k", Some("grpcbench.string")),
        ("grpcbench.complex", None), // not a size
        ("product.small", Some("product")),
        ("product.typical", None), // a different operation (modify)
        ("tasks.file-3m4", Some("tasks.file")),
        ("tasks.int", None),
    ];
    for (w, want) in cases {
        assert_eq!(charts::size_family(w), want, "{w}");
    }
}

#[test]
fn payload_chart_groups_by_protocol_and_orders_by_size() {
    let sizes = [("echo.128k", 131_072.0), ("echo.128b", 128.0), ("echo.8k", 8192.0)];
    let mut points = Vec::new();
    let mut ms = Vec::new();
    for (pi, (protocol, overhead)) in [("rest", 300.0), ("grpc", 60.0)].into_iter().enumerate() {
        for (wi, (w, size)) in sizes.iter().enumerate() {
            let p = testing::point((pi * 3 + wi) as u32, protocol, w);
            let mut m = testing::measurement(&p, 1, 1e7 / (size + overhead));
            let r = m.result.as_mut().unwrap();
            r.bytes_sent_per_call = size + overhead;
            r.bytes_received_per_call = size + overhead;
            ms.push(m);
            points.push(p);
        }
    }
    // Not a size family: no payload chart of its own.
    points.push(testing::point(6, "rest", "tasks.int"));
    ms.push(testing::measurement(&points[6], 1, 10.0));
    let run = testing::record(points, ms);
    let plots = charts::payload_plots(&run);
    assert_eq!(plots.len(), 1);
    let (key, plot, order) = &plots[0];
    assert_eq!(key, "echo c=16");
    assert_eq!(order, &["echo.128b", "echo.8k", "echo.128k"]);
    assert_eq!(plot.panels.len(), 3, "rate, p50, p99");
    let rate = &plot.panels[0].lines;
    assert_eq!(
        rate.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(),
        ["rest", "grpc"]
    );
    let xs: Vec<f64> = rate[1].points.iter().map(|p| p.0).collect();
    assert_eq!(xs, [2.0 * 188.0, 2.0 * 8252.0, 2.0 * 131_132.0]);
    assert!(
        rate[0].points.windows(2).all(|w| w[0].1 > w[1].1),
        "rate falls with size"
    );
    assert_eq!(plot.x.scale, Scale::Log);
    let labels: Vec<&str> = plot.x.ticks.iter().map(|t| t.1.as_str()).collect();
    assert_eq!(
        labels,
        ["1kB", "10kB", "100kB"],
        "decimal units, powers of ten over 3+ decades"
    );
}

#[test]
fn tls_comparison_shows_the_percentage_change() {
    let points = vec![
        testing::point(0, "rest", "inventory.s"),
        point(1, "rest", "inventory.s", |p| p.tls = true),
        testing::point(2, "grpc", "inventory.s"), // no TLS twin
    ];
    let mut ms = vec![
        testing::measurement(&points[0], 1, 1000.0),
        testing::measurement(&points[1], 1, 800.0),
        testing::measurement(&points[2], 1, 900.0),
    ];
    ms[1].result.as_mut().unwrap().latency.p99_ns = 6_500_000; // 5 ms in clear: +30%
    let run = testing::record(points, ms);
    let cmp = charts::tls_comparisons(&run);
    assert_eq!(cmp.len(), 1);
    assert_eq!(cmp[0].label, "rest inventory.s c=16");
    assert!((cmp[0].rate_change_pct + 20.0).abs() < 1e-9);
    assert_eq!(charts::fmt_change(cmp[0].rate_change_pct), "-20%");
    assert!((cmp[0].p99_change_pct.unwrap() - 30.0).abs() < 1e-9);
    let chart = charts::tls_charts(&run);
    assert_eq!(chart.len(), 2);
    assert!(chart[0].svg.contains("rest inventory.s c=16 (-20%)"));
    assert!(chart[1].svg.contains("(+30%)"));
    let fmt_cases = [(4.54, "+4.5%"), (-0.01, "+0.0%"), (12.4, "+12%")];
    for (v, want) in fmt_cases {
        assert_eq!(charts::fmt_change(v), want);
    }
}

#[test]
fn no_tls_chart_without_both_ways() {
    let p = testing::point(0, "rest", "inventory.s");
    let m = testing::measurement(&p, 1, 1000.0);
    let run = testing::record(vec![p], vec![m]);
    assert!(charts::tls_charts(&run).is_empty());
}

#[test]
fn latency_axis_turns_log_above_one_decade() {
    // (values, scale): the switch is at more than 10x between the extremes.
    let cases: &[(&[f64], Scale)] = &[
        (&[1.0, 10.0], Scale::Linear),     // exactly one decade
        (&[1.0, 10.01], Scale::Log),       // just over
        (&[0.0, 2.0, 5.0], Scale::Linear), // zeros are ignored
        (&[0.2, 3.0, 40.0], Scale::Log),
        (&[], Scale::Linear),
    ];
    for (v, want) in cases {
        assert_eq!(Scale::for_values(v.iter().copied()), *want, "{v:?}");
    }
    let axis = Axis::auto("ms", [0.3, 42.0]);
    assert_eq!((axis.min, axis.max), (0.2, 50.0), "1-2-5 steps around the data");
    let labels: Vec<&str> = axis.ticks.iter().map(|t| t.1.as_str()).collect();
    assert_eq!(labels, ["0.2", "0.5", "1", "2", "5", "10", "20", "50"]);
    let linear = Axis::auto("ms", [3.0, 9.0]);
    assert_eq!((linear.scale, linear.min), (Scale::Linear, 0.0));
}

#[test]
fn report_latency_bars_are_log_when_they_span_more_than_a_decade() {
    let p = testing::point(0, "rest", "inventory.s");
    let m = testing::measurement(&p, 1, 1000.0); // p50 1 ms, p99 5 ms
    let run = testing::record(vec![p.clone()], vec![m.clone()]);
    let latency = |run: &RunRecord| html::charts(run).into_iter().find(|c| c.id == "latency").unwrap().svg;
    assert!(!latency(&run).contains("(log scale)"));
    let mut m = m;
    m.result.as_mut().unwrap().latency.p99_ns = 50_000_000;
    let run = testing::record(vec![p], vec![m]);
    assert!(latency(&run).contains("latency (ms) (log scale)"));
}

/// The y of every `class="ci"` whisker's two ends.
fn whiskers(svg: &str) -> Vec<(f64, f64)> {
    let num = |s: &str, key: &str| -> f64 {
        let i = s.find(key).unwrap() + key.len();
        s[i..i + s[i..].find('"').unwrap()].parse().unwrap()
    };
    svg.match_indices("class=\"ci\"")
        .map(|(i, _)| {
            let s = &svg[i..];
            (num(s, "y1=\""), num(s, "y2=\""))
        })
        .collect()
}

#[test]
fn confidence_whiskers_never_go_below_zero() {
    for scale in [Scale::Linear, Scale::Log] {
        let chart = BarChart {
            title: "t".into(),
            y_label: "ms".into(),
            categories: vec!["a".into(), "b".into()],
            series: vec![(
                "rest".into(),
                vec![
                    Some(Bar {
                        value: 2.0,
                        ci: Some((-5.0, 10.0)),
                    }),
                    Some(Bar {
                        value: 40.0,
                        ci: Some((30.0, 50.0)),
                    }),
                ],
            )],
        };
        let svg = chart.render_scaled(scale);
        let w = whiskers(&svg);
        assert_eq!(w.len(), 2);
        // The plot's baseline is at y = 300 (top 40 + height 260).
        let baseline = 300.0;
        assert_eq!(w[0].0, baseline, "{scale:?}: a negative low end is drawn at the origin");
        assert!(
            w.iter().all(|(lo, hi)| *lo <= baseline && *hi < *lo),
            "{scale:?}: {w:?}"
        );
    }
}

#[test]
fn no_error_chart_when_no_call_failed_but_a_sentence() {
    let p = testing::point(0, "rest", "inventory.s");
    let run = testing::record(vec![p.clone()], vec![testing::measurement(&p, 1, 1000.0)]);
    let all = html::charts(&run);
    let errors = all.iter().find(|c| c.id == "errors").unwrap();
    assert!(errors.svg.is_empty());
    assert_eq!(errors.caption, charts::NO_ERRORS);
    let page = html::render(&run, &all);
    assert!(page.contains(&format!(
        "<p id=\"chart-errors\" class=\"note\">{}</p>",
        charts::NO_ERRORS
    )));
    assert!(!page.contains("<figure id=\"chart-errors\""));
    let dir = tempfile::tempdir().unwrap();
    let written = html::write_report(&run, dir.path()).unwrap();
    assert!(!dir.path().join("charts/errors.svg").exists());
    assert!(dir.path().join("charts/rate.svg").exists());
    assert!(written.svgs.iter().all(|p| !p.ends_with("errors.svg")));

    // One failed call: the chart is back.
    let mut m = testing::measurement(&p, 1, 1000.0);
    m.result = Some(testing::result("rest", "inventory.s", 1000.0, 3, 2));
    let run = testing::record(vec![p], vec![m]);
    let errors = html::charts(&run).into_iter().find(|c| c.id == "errors").unwrap();
    assert!(errors.svg.starts_with("<svg"));
}

#[test]
fn no_empty_cost_chart_without_server_cost() {
    // An external server: no CPU nor memory was measured.
    let p = testing::point(0, "rest", "inventory.s");
    let mut m = testing::measurement(&p, 1, 1000.0);
    m.server_cost = None;
    let run = testing::record(vec![p], vec![m]);
    let all = html::charts(&run);
    for id in ["cost-cpu", "cost-memory"] {
        let c = all.iter().find(|c| c.id == id).unwrap();
        assert!(c.svg.is_empty(), "{id}");
        assert!(c.caption.ends_with(": nothing was measured."), "{}", c.caption);
    }
    assert!(!all.iter().find(|c| c.id == "rate").unwrap().svg.is_empty());
}

#[test]
fn no_distribution_of_a_single_sample() {
    let p = testing::point(0, "rest", "inventory.s");
    let mut m = testing::measurement(&p, 1, 1000.0);
    m.result.as_mut().unwrap().histogram = histogram(std::iter::once(1_000_000)).into();
    let run = testing::record(vec![p], vec![m]);
    assert!(charts::distribution_plots(&run).is_empty());
}

#[test]
fn hockey_stick_names_the_way_of_loading_when_a_group_mixes_them() {
    let (p0, m0) = discover(0, "rest", &[(2, 300.0, 2), (4, 600.0, 3)], 4);
    let mut points = vec![p0];
    let mut ms = vec![m0];
    for (i, rate) in [(1u32, 100.0), (2, 400.0)] {
        let p = point(i, "rest", "inventory.m", |p| {
            p.kind = PointKind::Rate;
            p.rate = Some(rate);
        });
        ms.push(testing::measurement(&p, 1, rate));
        points.push(p);
    }
    let run = testing::record(points, ms);
    let plots = charts::hockey_plots(&run);
    let names: Vec<&str> = plots[0].1.panels[0].lines.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["rest (discover)", "rest (open loop)"]);
}
