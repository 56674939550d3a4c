//! Renderers over one stored-shape run: text table, Markdown, CSV, JSON,
//! HTML with inline SVG charts, and PNG files.
//!
//! - aggregates: median, interval and noisy flag per point
//! - each renderer shows every point; HTML has no script and every chart
//! - compare finds significant differences

use protobench_model::run::{Failure, Measurement, MeasurementStatus, RunEnvironment, RunRecord, RunStatus};
use protobench_model::testing;
use protobench_results::html;
use protobench_results::report;

fn run() -> RunRecord {
    let points = vec![
        testing::point(0, "rest", "inventory.xs"),
        testing::point(1, "grpc", "inventory.xs"),
        testing::point(2, "rest", "echo.8k"),
        testing::point(3, "grpc", "echo.8k"),
    ];
    let mut measurements = Vec::new();
    for rep in 1..=3 {
        measurements.push(testing::measurement(&points[0], rep, 1000.0 + rep as f64));
        measurements.push(testing::measurement(&points[1], rep, 2000.0 + 10.0 * rep as f64));
        // noisy: 500, 1000, 1500
        measurements.push(testing::measurement(&points[2], rep, 500.0 * rep as f64));
    }
    measurements.push(Measurement {
        server_rss_before_bytes: None,
        stream: None,
        point: 3,
        repetition: 1,
        status: MeasurementStatus::Failed,
        failure: Some(Failure {
            reason: "verification of `rust` grpc failed: echo.8k: <bad>".into(),
            log_tail: Some("thread panicked <here>".into()),
        }),
        result: None,
        server_cost: None,
        server_rss_timeline: vec![],
        server_cpu_timeline: vec![],
        search: None,
        link: None,
        warmup: None,
        started_at: "x".into(),
        finished_at: "y".into(),
    });
    RunRecord {
        id: 7,
        preset: "quick".into(),
        preset_path: None,
        status: RunStatus::Complete,
        started_at: "2026-01-01T00:00:00Z".into(),
        finished_at: Some("2026-01-01T00:03:00Z".into()),
        plan: serde_json::json!({}),
        repetitions: 3,
        noise_threshold: 0.1,
        environment: RunEnvironment::default(),
        warnings: vec!["a warning".into()],
        points,
        measurements,
        links: vec![],
    }
}

#[test]
fn aggregates_have_medians_intervals_and_noise() {
    let a = run().aggregates();
    assert_eq!(a[0].rate.as_ref().unwrap().median, 1002.0);
    assert!(a[0].rate.as_ref().unwrap().ci_low.is_some());
    assert!(!a[0].noisy);
    assert!(a[2].noisy, "CV of 500/1000/1500 is 50%");
    assert_eq!((a[3].repetitions_ok, a[3].repetitions_failed), (0, 1));
    assert!(a[3].rate.is_none());
    assert_eq!(a[3].failures.len(), 1);
}

#[test]
fn text_table_has_a_row_per_point_and_flags() {
    let t = report::text_table(&run());
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 2 + 4);
    assert!(lines[0].starts_with("server  protocol  workload"));
    assert!(lines[2].contains("1,002 ±0.2%"), "{}", lines[2]);
    assert!(lines[4].contains("noisy"));
    assert!(lines[5].contains("FAILED 1/1"));
}

#[test]
fn markdown_has_table_and_failures() {
    let md = report::markdown(&run());
    assert!(md.contains("| server | protocol | workload |"));
    assert_eq!(md.matches("\n| rust |").count(), 4);
    assert!(md.contains("## Failures"));
}

#[test]
fn csv_has_a_header_and_a_row_per_point() {
    let csv = report::csv(&run());
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 5);
    let cols = lines[0].split(',').count();
    assert!(lines[0].starts_with("run,point,server,protocol,workload"));
    assert!(lines[0].contains("rate_median,rate_ci_low,rate_ci_high"));
    // the failure reason contains no comma here, so a plain split works
    for l in &lines[1..] {
        assert_eq!(l.split(',').count(), cols, "{l}");
    }
}

#[test]
fn json_matches_the_published_schema() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/report.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let mut r = run();
    r.measurements[0].search = Some(protobench_model::run::Search {
        steps: vec![protobench_model::run::SearchStep {
            concurrency: 2,
            rate: 10.0,
            errors: 0,
            p99_ns: 5,
        }],
        chosen_concurrency: 2,
        knee_rate: Some(10.0),
        stop_reason: "reached max".into(),
        knee_second: Some(0),
        stopped_at_knee: false,
    });
    let v: serde_json::Value = serde_json::from_str(&report::json(&r)).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn json_round_trips_the_run() {
    let r = run();
    let v: serde_json::Value = serde_json::from_str(&report::json(&r)).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["run"]["id"], 7);
    assert_eq!(v["aggregates"].as_array().unwrap().len(), 4);
    let back: RunRecord = serde_json::from_value(v["run"].clone()).unwrap();
    assert_eq!(back, r);
}

#[test]
fn html_is_self_contained_with_every_chart() {
    let r = run();
    let charts = html::charts(&r);
    let ids: Vec<&str> = charts.iter().map(|c| c.id.as_str()).collect();
    for want in [
        "rate",
        "latency",
        "errors",
        "cost-cpu",
        "cost-memory",
        "timeseries-rate-inventory-xs",
        "timeseries-p99-echo-8k",
    ] {
        assert!(ids.contains(&want), "{want} missing from {ids:?}");
    }
    let page = html::render(&r, &charts);
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(!page.contains("<script"), "no scripts");
    assert!(
        !page.contains("http://")
            || page.matches("http://").count() == page.matches("http://www.w3.org/2000/svg").count(),
        "no external resources"
    );
    // Every chart inline, but the error chart: no call failed, a sentence instead.
    let drawn = charts.iter().filter(|c| !c.svg.is_empty()).count();
    assert_eq!(drawn, charts.len() - 1);
    assert_eq!(page.matches("<svg").count(), drawn);
    assert!(page.contains("thread panicked &lt;here&gt;"), "log tail escaped");
}

#[test]
fn scaling_curves_mark_saturation() {
    let mut r = run();
    r.points = (0..4)
        .map(|i| {
            let mut p = testing::point(i, "grpc", "inventory.xs");
            p.concurrency = [1, 10, 50, 100][i as usize];
            p.connections = p.concurrency;
            p
        })
        .collect();
    r.measurements = r
        .points
        .iter()
        .map(|p| testing::measurement(p, 1, [100.0, 900.0, 1000.0, 1010.0][p.index as usize]))
        .collect();
    let charts = html::charts(&r);
    let scaling = charts
        .iter()
        .find(|c| c.id.starts_with("scaling-"))
        .expect("a scaling chart");
    assert_eq!(scaling.svg.matches("class=\"mark\"").count(), 1);
    assert!(
        scaling.svg.contains("saturation 1,000"),
        "950 is within 5% of 1010: the knee is at 50"
    );
}

#[test]
fn report_files_are_written_as_html_svg_and_png() {
    let dir = tempfile::tempdir().unwrap();
    let w = html::write_report(&run(), dir.path()).unwrap();
    assert!(w.html.is_file());
    assert!(!w.svgs.is_empty());
    assert_eq!(w.pngs.len(), w.svgs.len(), "{:?}", w.png_errors);
    let png = std::fs::read(&w.pngs[0]).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn compare_flags_significant_differences() {
    let a = run();
    let mut b = run();
    for m in &mut b.measurements {
        if m.point == 1
            && let Some(r) = m.result.as_mut()
        {
            r.rate *= 2.0;
        }
    }
    let rows = report::compare(&a, &b);
    let grpc = rows
        .iter()
        .find(|r| r.point.contains("grpc inventory.xs") && r.metric == "rate")
        .unwrap();
    assert!(grpc.ratio.significant && (grpc.ratio.ratio - 2.0).abs() < 1e-9);
    let rest = rows
        .iter()
        .find(|r| r.point.contains("rest inventory.xs") && r.metric == "rate")
        .unwrap();
    assert!(!rest.ratio.significant);
    let table = report::compare_table(&rows);
    assert!(table.contains("B/A (95% CI)"));
}

#[test]
fn cpu_per_call_from_a_few_ticks_is_flagged_coarse() {
    let mut r = run();
    // Point 0: 0.5 s of server CPU in every window; point 1: 30 ms in one.
    for m in r.measurements.iter_mut() {
        if let Some(c) = m.server_cost.as_mut() {
            c.cpu_ns = 500_000_000;
        }
    }
    let m = r.measurements.iter_mut().find(|m| m.point == 1).unwrap();
    m.server_cost.as_mut().unwrap().cpu_ns = 30_000_000;
    let a = r.aggregates();
    assert!(!a[0].server_cpu_coarse);
    assert!(a[1].server_cpu_coarse, "30 ms of CPU is three ticks");
    let t = report::text_table(&r);
    let lines: Vec<&str> = t.lines().collect();
    assert!(!lines[2].contains("coarse"), "{}", lines[2]);
    assert!(lines[3].contains("CPU/call coarse"), "{}", lines[3]);
    let csv = report::csv(&r);
    assert!(csv.lines().next().unwrap().contains("server_cpu_coarse"));
}

/// Issue 16: a repetition whose rate rose through its window is flagged
/// `drifting` in the table, the CSV and the JSON; a flat one is not.
#[test]
fn a_window_whose_rate_rises_is_flagged_drifting() {
    let flat = testing::point(0, "grpc", "inventory.m");
    let jit = testing::point(1, "grpc", "inventory.l");
    let mut rising = testing::measurement(&jit, 1, 10_000.0);
    let r = rising.result.as_mut().unwrap();
    r.duration_ns = 10_000_000_000;
    r.timeline = (0..10)
        .map(|s| protobench_model::load::TimelinePoint {
            second: s,
            successes: 5_000 + 1_300 * u64::from(s),
            errors: 0,
            p50_ns: 1_000_000,
            p95_ns: 1_500_000,
            p99_ns: 2_000_000,
            users: 16,
        })
        .collect();
    let run = testing::record(
        vec![flat.clone(), jit],
        vec![testing::measurement(&flat, 1, 1000.0), rising],
    );
    let a = run.aggregates();
    assert!(a[0].drift.is_none(), "{:?}", a[0].drift);
    let d = a[1].drift.expect("the rising window drifts");
    assert!(d.change > 1.0, "5k -> 16.7k is +{:.0}%", d.change * 100.0);
    let table = report::text_table(&run);
    let row = table.lines().find(|l| l.contains("inventory.l")).unwrap();
    assert!(row.contains("drifting +"), "{row}");
    assert!(
        !table
            .lines()
            .find(|l| l.contains("inventory.m"))
            .unwrap()
            .contains("drifting")
    );
    let csv = report::csv(&run);
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "drift_change").unwrap();
    let jit_row: Vec<&str> = csv.lines().nth(2).unwrap().split(',').collect();
    assert!(jit_row[col].parse::<f64>().unwrap() > 1.0);
    let json: serde_json::Value = serde_json::from_str(&report::json(&run)).unwrap();
    assert!(json["aggregates"][1]["drift"]["change"].as_f64().unwrap() > 1.0);
    assert!(json["aggregates"][0].get("drift").is_none());
}

/// Mean and p95 (Hedelin, grpc_bench, CMPT453 report them), p99.9, bytes per
/// call and server CPU in percent of a core, or of the CPU limit, are in the
/// table, the CSV and the JSON, and compare reports mean and p95.
#[test]
fn the_studies_metrics_are_shown_everywhere() {
    let mut r = run();
    // testing::latency(1 ms): mean 1.1 ms, p95 3 ms, p99.9 8 ms; 100 B sent and
    // 1000 B received per call; server CPU 50 µs/call at ~1,000 calls/s over 2 s.
    r.points[2].cpu_limit = Some(0.5);
    let t = report::text_table(&r);
    let header = t.lines().next().unwrap();
    for col in ["mean", "p95", "p99.9", "server CPU", "bytes req/resp"] {
        assert!(header.contains(col), "{col} in {header}");
    }
    let row = t.lines().nth(2).unwrap();
    for cell in ["1.10ms", "3.00ms", "8.00ms", "100B/1000B", "5%"] {
        assert!(row.contains(cell), "{cell} in {row}");
    }
    // point 2 at 1,000 calls/s (median of 500/1000/1500) x 50 µs = 5% of a
    // core, 10% of its half-CPU limit.
    let limited = t.lines().nth(4).unwrap();
    assert!(limited.contains("10% of 0.5 CPUs"), "{limited}");

    let csv = report::csv(&r);
    let head = csv.lines().next().unwrap();
    for col in [
        "mean_ns_median",
        "p95_ns_median",
        "p999_ns_median",
        "bytes_sent_per_call_median",
        "cpu_percent_median",
    ] {
        assert!(head.contains(col), "{col} in {head}");
    }
    let a = &r.aggregates()[0];
    assert_eq!(a.p95_ns.as_ref().unwrap().median, 3_000_000.0);
    assert_eq!(a.mean_ns.as_ref().unwrap().median, 1_100_000.0);
    assert_eq!(a.bytes_received_per_call.as_ref().unwrap().median, 1000.0);
    let cpu = a.cpu_percent.as_ref().unwrap().median;
    assert!((cpu - 5.01).abs() < 0.01, "{cpu}");

    let metrics: Vec<String> = report::compare(&r, &r).into_iter().map(|c| c.metric).collect();
    for m in ["mean_ns", "p95_ns", "p99_ns"] {
        assert!(metrics.iter().any(|x| x == m), "{m} in {metrics:?}");
    }
}

/// A study preset's claims (in the stored plan) are judged in the text,
/// Markdown, HTML and JSON reports; the JSON keeps the published schema.
#[test]
fn findings_are_judged_in_every_report() {
    let mut r = run();
    // grpc inventory.xs ~2,010/s against rest inventory.xs ~1,002/s.
    r.plan = serde_json::json!({ "findings": [
        { "claim": "gRPC leads REST on XS (study: 4,700 vs 4,700)", "metric": "rate",
          "a": { "protocol": "grpc", "workload": "inventory.xs" },
          "b": { "protocol": "rest", "workload": "inventory.xs" },
          "expect": "greater", "study": [4700.0, 4700.0] },
        { "claim": "REST leads gRPC on XS", "metric": "rate",
          "a": { "protocol": "rest", "workload": "inventory.xs" },
          "b": { "protocol": "grpc", "workload": "inventory.xs" },
          "expect": "greater" },
        { "claim": "SOAP is slowest", "metric": "rate",
          "a": { "protocol": "soap", "workload": "inventory.xs" },
          "b": { "protocol": "rest", "workload": "inventory.xs" },
          "expect": "less" },
        { "claim": "gRPC about 20x REST on XS", "source": "Figure 2", "metric": "rate",
          "a": { "protocol": "grpc", "workload": "inventory.xs" },
          "b": { "protocol": "rest", "workload": "inventory.xs" },
          "expect": "greater", "size": { "about": 20.0 } }
    ]});
    let t = report::findings_text(&r);
    let rows: Vec<&str> = t.lines().skip(4).take(4).collect();
    assert_eq!(rows.len(), 4, "{t}");
    assert!(
        rows[0].ends_with("holds") && rows[0].contains("4,700/s vs 4,700/s (1.00x)"),
        "{}",
        rows[0]
    );
    assert!(rows[1].ends_with("does not hold"), "{}", rows[1]);
    assert!(
        rows[2].contains("not measured: no point soap inventory.xs in this run"),
        "{}",
        rows[2]
    );
    // issue 29: the direction holds, the size (2x against about 20x) does not
    let cells: Vec<&str> = rows[3].split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(
        cells[cells.len() - 3..],
        ["holds", "smaller", "direction holds, size differs"],
        "{}",
        rows[3]
    );
    assert!(cells.contains(&"Figure 2"), "{}", rows[3]);
    assert!(
        t.contains("1 of 4 claims hold, 1 hold in direction with a different size, 1 do not hold, 0 inconclusive"),
        "{t}"
    );
    let md = report::markdown(&r);
    assert!(md.contains("## Findings vs the study"));
    assert!(
        md.contains("| Figure 2 |") && md.contains("| holds | smaller | direction holds, size differs |"),
        "{md}"
    );
    let page = html::render(&r, &[]);
    assert!(page.contains("<section id=\"findings\">"));
    assert!(page.contains("<td>smaller</td><td>direction holds, size differs</td>"));
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/report.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v: serde_json::Value = serde_json::from_str(&report::json(&r)).unwrap();
    assert_eq!(v["findings"][0]["verdict"], "holds");
    assert_eq!(
        (
            &v["findings"][3]["direction"],
            &v["findings"][3]["size"],
            &v["findings"][3]["verdict"]
        ),
        (&"holds".into(), &"smaller".into(), &"size_differs".into())
    );
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // A run without claims shows nothing.
    assert_eq!(report::findings_text(&run()), "");
}

/// Issue 29: grpcbench's 2-CPU claims on a server pinned to one CPU are not
/// judged; the plan's `server_cpus` (else the machine's cores) is what the
/// server had.
#[test]
fn a_claim_needing_more_cpus_than_the_server_had_is_not_reproducible() {
    let mut r = run();
    for p in &mut r.points {
        p.cpu_limit = Some(2.0);
    }
    let claim = serde_json::json!({ "claim": "2 CPUs: gRPC leads", "source": "write-up 001", "metric": "rate",
        "a": { "protocol": "grpc", "workload": "inventory.xs" },
        "b": { "protocol": "rest", "workload": "inventory.xs" }, "expect": "greater" });
    // (server_cpus in the plan, machine cores, verdict)
    let rows = [
        (Some("0"), 2, "not reproducible here"), // pinned to one CPU of two
        (Some("0-1"), 2, "holds"),               // two CPUs of its own
        (Some("0,2-3"), 4, "holds"),             // three
        (None, 1, "not reproducible here"),      // not pinned, a 1-core machine
        (None, 0, "holds"),                      // nothing known: judged
    ];
    for (cpus, cores, want) in rows {
        r.plan = serde_json::json!({ "findings": [claim.clone()] });
        if let Some(c) = cpus {
            r.plan["server_cpus"] = c.into();
        }
        r.environment.machine.cores = cores;
        let j = &report::judgements(&r)[0];
        assert_eq!(j.verdict.name(), want, "{cpus:?} on {cores} cores: {}", j.reason);
        if want != "holds" {
            assert!(j.reason.ends_with("asks for 2 CPUs; the server had 1"), "{}", j.reason);
        }
    }
}

/// Issue 30: claims stored with a run that no longer read are said to be
/// unreadable in the text and the page, never shown as no claims at all.
#[test]
fn claims_that_cannot_be_read_back_are_said_so() {
    let mut r = run();
    r.plan = serde_json::json!({ "findings": [{ "claim": "gRPC is faster", "metric": 42 }] });
    let text = report::findings_text(&r);
    assert!(
        text.contains("the study's claims stored with run 7 cannot be read (")
            && text.contains("no verdicts are shown"),
        "{text}"
    );
    let page = html::render(&r, &[]);
    assert!(page.contains("cannot be read ("), "the page says so too");
    // A run stored without claims has none, and says nothing.
    r.plan = serde_json::json!({});
    assert_eq!(report::findings_text(&r), "");
}
