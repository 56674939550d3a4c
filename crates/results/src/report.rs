//! Renderers over a stored run: each is a separate sink over the same
//! [`RunRecord`] and its [`PointAggregate`]s — a terminal table, Markdown,
//! CSV, JSON, and (in [`crate::html`]) a self-contained HTML page with charts.

use std::fmt::Write as _;

use protobench_model::format::{TextTable, fmt_bytes, fmt_ns, fmt_rate};
use protobench_model::network::{fmt_bits, fmt_ms};
use serde::Serialize;

use crate::chart::{ns_cell, rate_cell};
use protobench_model::findings::{Conditions, Finding, Judgement};
use protobench_model::run::{PointAggregate, PointKind, RunRecord};
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
    /// The study's claims judged against this run (study presets only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Judgement>,
    /// Each protocol relative to the reference protocol of its peers
    /// ([`crate::relative`]); absent when no point has a peer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub relative: Vec<crate::relative::Relative>,
}

/// The run as pretty JSON.
pub fn json(run: &RunRecord) -> String {
    let aggregates = run.aggregates();
    let report = JsonReport {
        schema_version: REPORT_SCHEMA_VERSION,
        run,
        relative: crate::relative::relative_of(&aggregates),
        aggregates,
        findings: judgements(run),
    };
    serde_json::to_string_pretty(&report).expect("serializing plain data cannot fail")
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
    if let Some(link) = link_note(a) {
        f.push(link);
    }
    if a.agents > 0 {
        f.push(format!("{} agents", a.agents));
    }
    if !a.agents_failed.is_empty() {
        f.push(format!("INCOMPLETE: {}", a.agents_failed.join("; ")));
    }
    if let Some(c) = &a.chosen_concurrency {
        f.push(format!("at c={:.0}", c.median));
    }
    if let Some(k) = &a.knee_rate {
        f.push(format!("knee {}/s", fmt_rate(k.median)));
    }
    f.join(", ")
}

/// On an emulated link: bytes per call against the link's measured
/// capacity, e.g. `12.3 KiB/call, 97% of 95.5 Mbit/s: link-bound`.
fn link_note(a: &PointAggregate) -> Option<String> {
    let share = a.link_share.as_ref()?;
    let mut s = format!(
        "{}/call, {:.0}% of {}",
        a.bytes_per_call.as_ref().map_or("-".into(), |b| fmt_bytes(b.median)),
        share.median * 100.0,
        a.link_capacity_bps.map_or("-".into(), fmt_bits)
    );
    if a.link_bound {
        s.push_str(": link-bound");
    }
    if let Some(t) = &a.toxiproxy_cpu_ns_per_call {
        let _ = write!(s, ", toxiproxy {}/call", fmt_ns(t.median));
    }
    Some(s)
}

/// The columns of the final table, one row per point.
pub const TABLE_HEADER: [&str; 17] = [
    "server",
    "protocol",
    "workload",
    "load",
    "rate/s (±95% CI)",
    "mean",
    "p50",
    "p90",
    "p95",
    "p99",
    "p99.9",
    "errors",
    "CPU/call",
    "server CPU",
    "memory",
    "bytes req/resp",
    "notes",
];

/// Whether a column of [`TABLE_HEADER`] holds numbers (right-aligned).
pub fn numeric_column(i: usize) -> bool {
    (4..=15).contains(&i)
}

/// The table rows as cells.
pub fn table_rows(run: &RunRecord) -> Vec<[String; 17]> {
    run.aggregates()
        .iter()
        // Streaming points have a table of their own (crate::streams).
        .filter(|a| a.config.kind != PointKind::Stream)
        .map(|a| {
            [
                a.config.server.clone(),
                a.config.protocol.to_string(),
                a.config.workload.clone(),
                a.config.variant_label(),
                rate_cell(&a.rate),
                ns_cell(&a.mean_ns),
                ns_cell(&a.p50_ns),
                ns_cell(&a.p90_ns),
                ns_cell(&a.p95_ns),
                ns_cell(&a.p99_ns),
                ns_cell(&a.p999_ns),
                a.error_fraction
                    .as_ref()
                    .map_or("-".into(), |s| format!("{:.2}%", s.median * 100.0)),
                ns_cell(&a.cpu_ns_per_call),
                cpu_percent_cell(a),
                a.rss_peak_bytes.as_ref().map_or("-".into(), |s| fmt_bytes(s.median)),
                match (&a.bytes_sent_per_call, &a.bytes_received_per_call) {
                    (Some(up), Some(down)) => format!("{}/{}", fmt_bytes(up.median), fmt_bytes(down.median)),
                    _ => "-".into(),
                },
                flags(a),
            ]
        })
        .collect()
}

/// Server CPU in percent of one core (`top`'s figure), and of its CPU limit
/// where the point had one (grpc_bench's figure): `98% of 1 CPU`.
fn cpu_percent_cell(a: &PointAggregate) -> String {
    let Some(p) = &a.cpu_percent else {
        return "-".into();
    };
    match a.config.cpu_limit {
        Some(limit) if limit > 0.0 => format!(
            "{:.0}% of {} CPU{}",
            p.median / limit,
            protobench_model::format::plain_number(limit),
            if limit == 1.0 { "" } else { "s" }
        ),
        _ => format!("{:.0}%", p.median),
    }
}

/// The claims of the run's study (its plan's `findings`) judged against
/// its measurements; empty for a preset without claims.
/// Claims that cannot be read judge nothing ([`findings_error`] says why).
pub fn judgements(run: &RunRecord) -> Vec<Judgement> {
    let findings: Vec<Finding> = protobench_model::findings::stored(run).unwrap_or_default();
    protobench_model::findings::judge(&findings, &run.aggregates(), &conditions(run))
}

/// For a run measured `--until-decided`: per claim, whether its direction
/// was decided after each round (judged again on the repetitions of the
/// rounds so far); empty for other runs.
fn decided_by_round(run: &RunRecord) -> Vec<Vec<bool>> {
    use protobench_model::findings::Direction;
    let Some(rule) = run.plan.get("until_decided") else {
        return Vec::new();
    };
    let number = |k: &str| rule.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0) as u32;
    let (first, round) = (number("first").max(1), number("round").max(1));
    let claims = protobench_model::findings::stored(run).map_or(0, |f| f.len());
    let mut out: Vec<Vec<bool>> = vec![Vec::new(); claims];
    let mut reps = first;
    while reps <= run.repetitions {
        let mut so_far = run.clone();
        so_far.measurements.retain(|m| m.repetition <= reps);
        for (i, j) in judgements(&so_far).iter().enumerate().take(claims) {
            out[i].push(matches!(j.direction, Direction::Holds | Direction::DoesNotHold));
        }
        reps += round;
    }
    out
}

/// For a run measured `--until-decided`: per claim, the round from which
/// its direction stayed decided to the end (judged again on the
/// repetitions of the rounds so far), `None` when it ended undecided;
/// empty for other runs. A claim decided early and undecided again after a
/// later round counts from the round it was decided again.
pub fn decided_after(run: &RunRecord) -> Vec<Option<u32>> {
    decided_by_round(run).iter().map(|r| stayed_decided_from(r)).collect()
}

/// The first round (from 1) of the unbroken run of decided rounds that
/// reaches the last one; `None` when the last round left it undecided.
fn stayed_decided_from(rounds: &[bool]) -> Option<u32> {
    match rounds.iter().rposition(|decided| !decided) {
        None if rounds.is_empty() => None,
        None => Some(1),
        Some(i) if i + 1 == rounds.len() => None,
        Some(i) => Some(i as u32 + 2),
    }
}

/// `#3 undecided`, or `#3 undecided (decided after round 2, 4 only)` for
/// a claim some rounds decided but the last did not.
fn undecided_part(claim: usize, rounds: &[bool]) -> String {
    let decided: Vec<String> = rounds
        .iter()
        .enumerate()
        .filter(|(_, d)| **d)
        .map(|(r, _)| (r + 1).to_string())
        .collect();
    if decided.is_empty() {
        format!("#{claim} undecided")
    } else {
        format!("#{claim} undecided (decided after round {} only)", decided.join(", "))
    }
}

/// `until decided: ... #1 round 2, #2 round 1, #3 undecided` (runs measured
/// `--until-decided`), or `None`. A claim that ended undecided after being
/// decided says in which rounds it was.
pub fn decided_after_line(run: &RunRecord) -> Option<String> {
    use protobench_model::findings::Direction;
    let history = decided_by_round(run);
    if history.is_empty() {
        return None;
    }
    let after = decided_after(run);
    // Claims no round could decide say why, not "undecided".
    let now = judgements(run);
    let parts: Vec<String> = after
        .iter()
        .zip(&now)
        .zip(&history)
        .enumerate()
        .map(|(i, ((a, j), rounds))| match (a, j.direction) {
            (Some(r), _) => format!("#{} round {r}", i + 1),
            (None, d @ (Direction::NotMeasured | Direction::NotReproducible)) => format!("#{} {}", i + 1, d.name()),
            (None, _) => undecided_part(i + 1, rounds),
        })
        .collect();
    Some(format!(
        "until decided: the round each claim's direction was decided in: {} ({} repetitions measured)",
        parts.join(", "),
        run.repetitions
    ))
}

/// Why the run's claims cannot be read, when they cannot.
pub fn findings_error(run: &RunRecord) -> Option<String> {
    protobench_model::findings::stored(run).err()
}

/// What the run had that claims may need: the CPUs its servers could use
/// (the plan's `server_cpus` list, else the machine's cores).
pub fn conditions(run: &RunRecord) -> Conditions {
    let pinned = run
        .plan
        .get("server_cpus")
        .and_then(|v| v.as_str())
        .and_then(cpu_list_len);
    let cores = run.environment.machine.cores as usize;
    Conditions {
        server_cpus: pinned.or((cores > 0).then_some(cores)),
    }
}

/// The number of CPUs of a CPU list as the plan stores it (`0`, `0-3`,
/// `0,2-3`); `None` when it is not one.
fn cpu_list_len(list: &str) -> Option<usize> {
    let mut n = 0;
    for part in list.split(',').map(str::trim) {
        n += match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                b.checked_sub(a)? + 1
            }
            None => {
                part.parse::<usize>().ok()?;
                1
            }
        };
    }
    (n > 0).then_some(n)
}

/// The columns of the findings table.
pub const FINDINGS_HEADER: [&str; 8] = [
    "#",
    "the study found",
    "source",
    "study",
    "here",
    "direction",
    "size",
    "verdict",
];

/// The findings table's rows as cells.
pub fn findings_rows(run: &RunRecord) -> Vec<[String; 8]> {
    judgements(run)
        .iter()
        .enumerate()
        .map(|(i, j)| {
            [
                (i + 1).to_string(),
                format!("{} [{}]", j.finding.claim, j.finding.relation()),
                if j.finding.source.is_empty() {
                    "-".into()
                } else {
                    j.finding.source.clone()
                },
                j.study_cell(),
                j.here_cell(),
                j.direction.name().to_string(),
                j.size.name().to_string(),
                j.verdict_cell(),
            ]
        })
        .collect()
}

/// "Findings vs the study" as plain text, with a tally; empty without claims.
pub fn findings_text(run: &RunRecord) -> String {
    if let Some(e) = findings_error(run) {
        return format!("\nFindings vs the study: {e}\n");
    }
    let rows = findings_rows(run);
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nFindings vs the study (ratios and orderings, not absolute figures: the study's hardware is not ours)\n",
    );
    let mut table = TextTable::new(FINDINGS_HEADER);
    for row in rows {
        table.row(row);
    }
    out.push_str(&table.render());
    let _ = writeln!(out, "{}", findings_tally(run));
    if let Some(line) = decided_after_line(run) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// `3 of 12 claims hold, ...`: the headline verdicts counted.
pub fn findings_tally(run: &RunRecord) -> String {
    use protobench_model::findings::Verdict::*;
    let js = judgements(run);
    let count = |v: &[protobench_model::findings::Verdict]| js.iter().filter(|j| v.contains(&j.verdict)).count();
    format!(
        "{} of {} claims hold, {} hold in direction with a different size, {} do not hold, {} inconclusive, {} with one repetition (untested), {} not reproducible here, {} not measured",
        count(&[Holds]),
        js.len(),
        count(&[SizeDiffers]),
        count(&[DoesNotHold]),
        count(&[Inconclusive]),
        count(&[Agrees, Disagrees]),
        count(&[NotReproducible]),
        count(&[NotMeasured])
    )
}

/// The final terminal table (plain text, aligned columns).
pub fn text_table(run: &RunRecord) -> String {
    let rows = table_rows(run);
    let mut out = String::new();
    if !rows.is_empty() || run.points.iter().all(|p| p.kind != PointKind::Stream) {
        let mut table = TextTable::new(TABLE_HEADER).right((0..TABLE_HEADER.len()).filter(|&i| numeric_column(i)));
        for row in rows {
            table.row(row);
        }
        out = table.render();
    }
    if let Some(streams) = crate::streams::text(run) {
        out.push_str("\nStreams (medians over repetitions, the rate with its 95% interval relative to the median; per-message latency from the intended send time)\n");
        out.push_str(&streams);
    }
    if let Some(agents) = crate::agents::text(run) {
        out.push_str(&agents);
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
    for l in &run.links {
        v.push(("link".into(), l.summary_line()));
        let profile = [("up", l.up_rate_bps), ("down", l.down_rate_bps)]
            .iter()
            .filter_map(|(d, r)| r.map(|r| format!("{d} {}", fmt_bits(r as f64))))
            .collect::<Vec<_>>()
            .join(", ");
        v.push((
            format!("link {} profile", l.network),
            format!(
                "{}{}RTT {}",
                profile,
                if profile.is_empty() { "" } else { ", " },
                fmt_ms(l.profile_rtt_ns)
            ),
        ));
        if let Some(cpu) = l.toxiproxy_cpu_ns {
            v.push((
                format!("link {} toxiproxy", l.network),
                format!("{:.2} CPU-s during the link measurement", cpu as f64 / 1e9),
            ));
        }
        for n in &l.notes {
            v.push((format!("link {} note", l.network), n.clone()));
        }
        for w in &l.warnings {
            v.push(("warning".into(), format!("{}: far from its profile: {w}", l.network)));
        }
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
            .map(|(i, _)| if numeric_column(i) { "---:|" } else { "---|" })
            .collect::<String>()
    );
    for row in table_rows(run) {
        let cells: Vec<String> = row.iter().map(|c| md_escape(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    let relative = crate::relative::relative(run);
    if !relative.is_empty() {
        let _ = writeln!(
            out,
            "\n## Relative to the reference protocol\n\nEach protocol divided by the first protocol of its peers (same server, workload and load), measured back to back in every repetition; 95% interval, paired by repetition. {}\n",
            crate::relative::precision_line(&relative).unwrap_or_default()
        );
        let _ = writeln!(
            out,
            "| {} |\n|---|---|---|---:|---:|---:|",
            crate::relative::HEADER.join(" | ")
        );
        for row in crate::relative::rows(&relative) {
            let cells: Vec<String> = row.iter().map(|c| md_escape(c)).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    }
    let findings = findings_rows(run);
    if !findings.is_empty() {
        let _ = writeln!(
            out,
            "\n## Findings vs the study\n\nRatios and orderings, not absolute figures: the study's hardware is not ours. {}.\n",
            findings_tally(run)
        );
        let _ = writeln!(
            out,
            "| {} |\n|---:|---|---|---|---|---|---|---|",
            FINDINGS_HEADER.join(" | ")
        );
        for row in findings {
            let cells: Vec<String> = row.iter().map(|c| md_escape(c)).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
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
        "\nMedians over repetitions; beside the rate, its 95% confidence interval relative to the median (Student t on the log scale, see docs/results.md). \
         Latency is measured from the intended start of each call."
    );
    out
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The aggregates as CSV, one row per point (RFC 4180 quoting).
// Longer than the ~120-line guide: one column list and one row builder
// that must stay in the same order, kept side by side in one place.
pub fn csv(run: &RunRecord) -> String {
    let mut out = csv::Writer::from_writer(Vec::new());
    let metrics = [
        "rate",
        "p50_ns",
        "mean_ns",
        "p90_ns",
        "p95_ns",
        "p99_ns",
        "p999_ns",
        "error_fraction",
        "cpu_ns_per_call",
        "calls_per_cpu_second",
        "rss_peak_bytes",
        "rss_mean_bytes",
        "generator_cpu_ns_per_call",
        "bytes_sent_per_call",
        "bytes_received_per_call",
        "cpu_percent",
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
            "network",
            "bytes_per_call",
            "link_share",
            "link_capacity_bps",
            "link_bound",
            "toxiproxy_cpu_ns_per_call",
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
            &a.mean_ns,
            &a.p90_ns,
            &a.p95_ns,
            &a.p99_ns,
            &a.p999_ns,
            &a.error_fraction,
            &a.cpu_ns_per_call,
            &a.calls_per_cpu_second,
            &a.rss_peak_bytes,
            &a.rss_mean_bytes,
            &a.generator_cpu_ns_per_call,
            &a.bytes_sent_per_call,
            &a.bytes_received_per_call,
            &a.cpu_percent,
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
        row.push(opt(c.network.clone()));
        row.push(opt(a.bytes_per_call.as_ref().map(|s| s.median.to_string())));
        row.push(opt(a.link_share.as_ref().map(|s| s.median.to_string())));
        row.push(opt(a.link_capacity_bps.map(|v| v.to_string())));
        row.push(a.link_bound.to_string());
        row.push(opt(a.toxiproxy_cpu_ns_per_call.as_ref().map(|s| s.median.to_string())));
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
/// and compares rate, mean, p95 and p99 latency and server CPU per call.
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
        let metrics: [(&str, &Option<Summary>, &Option<Summary>); 5] = [
            ("rate", &pa.rate, &pb.rate),
            ("mean_ns", &pa.mean_ns, &pb.mean_ns),
            ("p95_ns", &pa.p95_ns, &pb.p95_ns),
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
    let fmt = |metric: &str, v: f64| {
        if metric.ends_with("_ns") || metric.ends_with("per_call") {
            fmt_ns(v)
        } else {
            fmt_rate(v)
        }
    };
    let mut table = TextTable::new(["point", "metric", "A", "B", "B/A (95% CI)", "significant"]);
    for r in rows {
        let ci = match (r.ratio.ci_low, r.ratio.ci_high) {
            (Some(lo), Some(hi)) => format!("{:.3} [{lo:.3}, {hi:.3}]", r.ratio.ratio),
            _ => format!("{:.3}", r.ratio.ratio),
        };
        table.row([
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
        ]);
    }
    table.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 29: a claim decided in one round can be undecided again after
    /// the next; the report then names the rounds that decided it instead
    /// of a round it did not stay decided from.
    #[test]
    fn a_claim_counts_from_the_round_it_stayed_decided_from() {
        assert_eq!(stayed_decided_from(&[]), None);
        assert_eq!(stayed_decided_from(&[true]), Some(1));
        assert_eq!(stayed_decided_from(&[false, true]), Some(2));
        assert_eq!(stayed_decided_from(&[true, false, true, true]), Some(3));
        assert_eq!(stayed_decided_from(&[true, false]), None);
        assert_eq!(undecided_part(2, &[false, false]), "#2 undecided");
        assert_eq!(
            undecided_part(4, &[true, false, true, false]),
            "#4 undecided (decided after round 1, 3 only)"
        );
    }
}
