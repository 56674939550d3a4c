//! Renderers over a stored run: each is a separate sink over the same
//! [`RunRecord`] and its [`PointAggregate`]s — a terminal table, Markdown,
//! CSV, JSON, and (in [`crate::html`]) a self-contained HTML page with charts.

use std::fmt::Write as _;

use protobench_model::format::{fmt_bytes, fmt_ns, fmt_rate};
use serde::Serialize;

use protobench_model::run::{PointAggregate, RunRecord};
use protobench_model::stats::Summary;

/// The JSON report schema version (bumped on incompatible changes).
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// The JSON form of a report: the run with all its measurements, plus the aggregates.
#[derive(Debug, Serialize)]
pub struct JsonReport<'a> {
    /// [`REPORT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The run, its plan, environment, points and every measurement.
    pub run: &'a RunRecord,
    /// One aggregate per point across repetitions.
    pub aggregates: Vec<PointAggregate>,
}

/// The run as pretty JSON.
pub fn json(run: &RunRecord) -> String {
    let report = JsonReport {
        schema_version: REPORT_SCHEMA_VERSION,
        run,
        aggregates: run.aggregates(),
    };
    serde_json::to_string_pretty(&report).expect("serializing plain data cannot fail")
}

/// `median ±half` for a rate.
fn rate_cell(s: &Option<Summary>) -> String {
    match s {
        None => "-".into(),
        Some(s) => match s.half_width() {
            Some(h) => format!("{} ±{}", fmt_rate(s.median), fmt_rate(h)),
            None => fmt_rate(s.median),
        },
    }
}

fn ns_cell(s: &Option<Summary>) -> String {
    s.as_ref().map_or("-".into(), |s| fmt_ns(s.median))
}

fn flags(a: &PointAggregate) -> String {
    let mut f = Vec::new();
    if a.repetitions_failed > 0 {
        f.push(format!(
            "FAILED {}/{}",
            a.repetitions_failed,
            a.repetitions_failed + a.repetitions_ok
        ));
    }
    if a.noisy {
        f.push("noisy".into());
    }
    if a.generator_bound {
        f.push("generator-bound".into());
    }
    if a.server_cpu_coarse {
        f.push("CPU/call coarse".into());
    }
    if let Some(w) = &a.warmup_s {
        f.push(format!("warm-up {:.0}s", w.median));
    }
    if a.warmup_unsteady {
        f.push("never steady".into());
    }
    if let Some(d) = &a.drift {
        f.push(format!("drifting {:+.0}%", d.change * 100.0));
    }
    if let Some(c) = &a.chosen_concurrency {
        f.push(format!("at c={:.0}", c.median));
    }
    if let Some(k) = &a.knee_rate {
        f.push(format!("knee {}/s", fmt_rate(k.median)));
    }
    f.join(", ")
}

/// The columns of the final table, one row per point.
pub const TABLE_HEADER: [&str; 12] = [
    "server",
    "protocol",
    "workload",
    "load",
    "rate/s (±95% CI)",
    "p50",
    "p90",
    "p99",
    "errors",
    "CPU/call",
    "memory",
    "notes",
];

/// The table rows as cells.
pub fn table_rows(run: &RunRecord) -> Vec<[String; 12]> {
    run.aggregates()
        .iter()
        .map(|a| {
            [
                a.config.server.clone(),
                a.config.protocol.to_string(),
                a.config.workload.clone(),
                a.config.variant_label(),
                rate_cell(&a.rate),
                ns_cell(&a.p50_ns),
                ns_cell(&a.p90_ns),
                ns_cell(&a.p99_ns),
                a.error_fraction
                    .as_ref()
                    .map_or("-".into(), |s| format!("{:.2}%", s.median * 100.0)),
                ns_cell(&a.cpu_ns_per_call),
                a.rss_peak_bytes.as_ref().map_or("-".into(), |s| fmt_bytes(s.median)),
                flags(a),
            ]
        })
        .collect()
}

/// The final terminal table (plain text, aligned columns).
pub fn text_table(run: &RunRecord) -> String {
    let rows = table_rows(run);
    let mut widths: Vec<usize> = TABLE_HEADER.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let numeric = |i: usize| (4..=10).contains(&i);
    let mut out = String::new();
    let line = |out: &mut String, cells: &[String]| {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let pad = widths[i].saturating_sub(cell.chars().count());
            if i > 0 {
                s.push_str("  ");
            }
            if numeric(i) {
                s.push_str(&" ".repeat(pad));
                s.push_str(cell);
            } else {
                s.push_str(cell);
                if i + 1 < cells.len() {
                    s.push_str(&" ".repeat(pad));
                }
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(&mut out, &TABLE_HEADER.map(String::from));
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    line(&mut out, &rule);
    for row in &rows {
        line(&mut out, row);
    }
    out
}

/// Run metadata as `key: value` lines (for `show` and the Markdown header).
pub fn metadata(run: &RunRecord) -> Vec<(String, String)> {
    let m = &run.environment.machine;
    let mut v = vec![
        ("run".to_string(), run.id.to_string()),
        ("preset".into(), run.preset.clone()),
        ("status".into(), run.status.name().into()),
        ("started".into(), run.started_at.clone()),
        ("finished".into(), run.finished_at.clone().unwrap_or_else(|| "-".into())),
        ("repetitions".into(), run.repetitions.to_string()),
        (
            "measurements".into(),
            format!(
                "{} of {}",
                run.measurements.len(),
                run.points.len() as u32 * run.repetitions
            ),
        ),
        ("cpu".into(), format!("{} ({} cores)", m.cpu_model, m.cores)),
        ("kernel".into(), m.kernel.clone()),
        ("protobench".into(), m.protobench_version.clone()),
        ("commit".into(), m.commit.clone().unwrap_or_else(|| "-".into())),
    ];
    for s in &run.environment.servers {
        let versions: Vec<String> = s.versions.iter().map(|(k, v)| format!("{k} {v}")).collect();
        v.push((
            format!("server {}", s.name),
            format!("{} — {}; {}", s.language, s.stack, versions.join(", ")),
        ));
    }
    for i in &run.environment.isolation {
        v.push(("isolation".into(), i.clone()));
    }
    for w in &run.warnings {
        v.push(("warning".into(), w.clone()));
    }
    v
}

/// The report as Markdown: metadata, the table, failures.
pub fn markdown(run: &RunRecord) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# protobench run {} — {}\n", run.id, run.preset);
    for (k, v) in metadata(run) {
        let _ = writeln!(out, "- **{k}**: {}", md_escape(&v));
    }
    out.push('\n');
    let _ = writeln!(out, "| {} |", TABLE_HEADER.join(" | "));
    let _ = writeln!(
        out,
        "|{}",
        TABLE_HEADER
            .iter()
            .enumerate()
            .map(|(i, _)| if (4..=10).contains(&i) { "---:|" } else { "---|" })
            .collect::<String>()
    );
    for row in table_rows(run) {
        let cells: Vec<String> = row.iter().map(|c| md_escape(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    let failures: Vec<_> = run.measurements.iter().filter(|m| m.failure.is_some()).collect();
    if !failures.is_empty() {
        let _ = writeln!(out, "\n## Failures\n");
        for m in failures {
            let p = &run.points[m.point as usize];
            let f = m.failure.as_ref().expect("filtered");
            let _ = writeln!(
                out,
                "- {} {} {} {} (repetition {}): {}",
                p.server,
                p.protocol,
                p.workload,
                p.variant_label(),
                m.repetition,
                md_escape(&f.reason)
            );
        }
    }
    let _ = writeln!(
        out,
        "\nMedians over repetitions; ± is the 95% confidence interval (Student t, see docs/results.md). \
         Latency is measured from the intended start of each call."
    );
    out
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The aggregates as CSV, one row per point (RFC 4180 quoting).
pub fn csv(run: &RunRecord) -> String {
    let mut out = csv::Writer::from_writer(Vec::new());
    let metrics = [
        "rate",
        "p50_ns",
        "p90_ns",
        "p99_ns",
        "error_fraction",
        "cpu_ns_per_call",
        "calls_per_cpu_second",
        "rss_peak_bytes",
        "rss_mean_bytes",
        "generator_cpu_ns_per_call",
    ];
    let mut header: Vec<String> = [
        "run",
        "point",
        "server",
        "protocol",
        "workload",
        "tls",
        "kind",
        "concurrency",
        "connections",
        "target_rate",
        "failure_rate",
        "service_time",
        "cpu_limit",
        "memory_limit_bytes",
        "repetitions_ok",
        "repetitions_failed",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for m in metrics {
        header.push(format!("{m}_median"));
        header.push(format!("{m}_ci_low"));
        header.push(format!("{m}_ci_high"));
    }
    header.extend(
        [
            "rate_cv",
            "noisy",
            "generator_bound",
            "server_cpu_coarse",
            "drift_change",
            "warmup_s",
            "warmup_unsteady",
            "chosen_concurrency",
            "knee_rate",
            "failures",
        ]
        .map(String::from),
    );
    let _ = out.write_record(&header);
    for a in run.aggregates() {
        let c = &a.config;
        let opt = |v: Option<String>| v.unwrap_or_default();
        let mut row: Vec<String> = vec![
            run.id.to_string(),
            c.index.to_string(),
            c.server.clone(),
            c.protocol.to_string(),
            c.workload.clone(),
            c.tls.to_string(),
            c.kind.name().into(),
            c.concurrency.to_string(),
            c.connections.to_string(),
            opt(c.rate.map(|r| r.to_string())),
            c.failure_rate.to_string(),
            opt(c.service_time.clone()),
            opt(c.cpu_limit.map(|r| r.to_string())),
            opt(c.memory_limit_bytes.map(|r| r.to_string())),
            a.repetitions_ok.to_string(),
            a.repetitions_failed.to_string(),
        ];
        for s in [
            &a.rate,
            &a.p50_ns,
            &a.p90_ns,
            &a.p99_ns,
            &a.error_fraction,
            &a.cpu_ns_per_call,
            &a.calls_per_cpu_second,
            &a.rss_peak_bytes,
            &a.rss_mean_bytes,
            &a.generator_cpu_ns_per_call,
        ] {
            row.push(opt(s.as_ref().map(|s| s.median.to_string())));
            row.push(opt(s.as_ref().and_then(|s| s.ci_low).map(|v| v.to_string())));
            row.push(opt(s.as_ref().and_then(|s| s.ci_high).map(|v| v.to_string())));
        }
        row.push(opt(a.rate.as_ref().and_then(|s| s.cv).map(|v| v.to_string())));
        row.push(a.noisy.to_string());
        row.push(a.generator_bound.to_string());
        row.push(a.server_cpu_coarse.to_string());
        row.push(opt(a.drift.map(|d| d.change.to_string())));
        row.push(opt(a.warmup_s.as_ref().map(|s| s.median.to_string())));
        row.push(a.warmup_unsteady.to_string());
        row.push(opt(a.chosen_concurrency.as_ref().map(|s| s.median.to_string())));
        row.push(opt(a.knee_rate.as_ref().map(|s| s.median.to_string())));
        row.push(a.failures.join("; "));
        let _ = out.write_record(&row);
    }
    // Writing to a Vec cannot fail, and every field is valid UTF-8.
    String::from_utf8(out.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// One row of `protobench compare`.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Server, protocol, workload and variant that match in both runs.
    pub point: String,
    /// Metric compared.
    pub metric: String,
    /// Median in run A.
    pub a: f64,
    /// Median in run B.
    pub b: f64,
    /// `b / a` with its interval and significance.
    pub ratio: protobench_model::stats::Ratio,
}

/// Matches the points of two runs by server, protocol, workload and variant,
/// and compares rate, p99 and server CPU per call.
pub fn compare(a: &RunRecord, b: &RunRecord) -> Vec<Comparison> {
    let key = |p: &PointAggregate| {
        format!(
            "{} {} {} {}",
            p.config.server,
            p.config.protocol,
            p.config.workload,
            p.config.variant_label()
        )
    };
    let aa = a.aggregates();
    let bb = b.aggregates();
    let mut out = Vec::new();
    for pa in &aa {
        let Some(pb) = bb.iter().find(|pb| key(pb) == key(pa)) else {
            continue;
        };
        let metrics: [(&str, &Option<Summary>, &Option<Summary>); 3] = [
            ("rate", &pa.rate, &pb.rate),
            ("p99_ns", &pa.p99_ns, &pb.p99_ns),
            ("cpu_ns_per_call", &pa.cpu_ns_per_call, &pb.cpu_ns_per_call),
        ];
        for (name, sa, sb) in metrics {
            if let (Some(sa), Some(sb)) = (sa, sb)
                && let Some(ratio) = protobench_model::stats::ratio(sa, sb)
            {
                out.push(Comparison {
                    point: key(pa),
                    metric: name.into(),
                    a: sa.median,
                    b: sb.median,
                    ratio,
                });
            }
        }
    }
    out
}

/// `protobench compare` as a text table.
pub fn compare_table(rows: &[Comparison]) -> String {
    let mut out = String::new();
    let fmt = |metric: &str, v: f64| {
        if metric.ends_with("_ns") || metric.ends_with("per_call") {
            fmt_ns(v)
        } else {
            fmt_rate(v)
        }
    };
    let header = ["point", "metric", "A", "B", "B/A (95% CI)", "significant"];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            let ci = match (r.ratio.ci_low, r.ratio.ci_high) {
                (Some(lo), Some(hi)) => format!("{:.3} [{lo:.3}, {hi:.3}]", r.ratio.ratio),
                _ => format!("{:.3}", r.ratio.ratio),
            };
            [
                r.point.clone(),
                r.metric.clone(),
                fmt(&r.metric, r.a),
                fmt(&r.metric, r.b),
                ci,
                if r.ratio.significant {
                    "yes".into()
                } else if r.ratio.ci_low.is_none() {
                    "cannot judge (1 repetition)".into()
                } else {
                    "no".into()
                },
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut push = |row: Vec<String>| {
        let s: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}", w = *w))
            .collect();
        out.push_str(s.join("  ").trim_end());
        out.push('\n');
    };
    push(header.iter().map(|s| s.to_string()).collect());
    push(widths.iter().map(|w| "-".repeat(*w)).collect());
    for row in cells {
        push(row.to_vec());
    }
    out
}
