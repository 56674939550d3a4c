//! The self-contained HTML report: run metadata, the final table, failures
//! with the server's log tail, and every chart as inline SVG. No script, no
//! external stylesheet, no font download: the file opens offline and prints.
//!
//! [`charts`] builds the charts once; [`write_report`] saves the page and
//! every chart as `charts/<id>.svg` and (with the `png` feature) `.png`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use crate::chart::Chart;
use crate::chart::{bar, category_name, dedup, representative, series_name, slug};
use crate::report::{self, TABLE_HEADER};
use crate::svg::{Bar, BarChart, Line, LineChart, Scale, esc};
use protobench_model::format::{fmt_ns, fmt_rate};
use protobench_model::run::{PointAggregate, PointConfig, PointKind, RunRecord};

struct Layout {
    categories: Vec<String>,
    series: Vec<String>,
    many_servers: bool,
    many_variants: bool,
}

impl Layout {
    fn of(aggs: &[PointAggregate]) -> Layout {
        let servers: Vec<&str> = dedup(aggs.iter().map(|a| a.config.server.as_str()));
        let variants: Vec<String> = dedup(aggs.iter().map(|a| a.config.variant_label()));
        let many_servers = servers.len() > 1;
        let many_variants = variants.len() > 1;
        Layout {
            categories: dedup(aggs.iter().map(|a| category_name(&a.config, many_variants))),
            series: dedup(aggs.iter().map(|a| series_name(&a.config, many_servers))),
            many_servers,
            many_variants,
        }
    }

    fn bars(
        &self,
        aggs: &[PointAggregate],
        title: &str,
        y_label: &str,
        value: impl Fn(&PointAggregate) -> Option<Bar>,
    ) -> BarChart {
        let series = self
            .series
            .iter()
            .map(|s| {
                let bars = self
                    .categories
                    .iter()
                    .map(|c| {
                        aggs.iter()
                            .find(|a| {
                                &series_name(&a.config, self.many_servers) == s
                                    && &category_name(&a.config, self.many_variants) == c
                            })
                            .and_then(&value)
                    })
                    .collect();
                (s.clone(), bars)
            })
            .collect();
        BarChart {
            title: title.into(),
            y_label: y_label.into(),
            categories: self.categories.clone(),
            series,
        }
    }
}

/// The saturation point of a curve: the lowest load level that reaches 95%
/// of the curve's best rate (documented in docs/results.md).
pub fn saturation(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let best = points.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    if !best.is_finite() || best <= 0.0 {
        return None;
    }
    points.iter().copied().find(|p| p.1 >= 0.95 * best)
}

/// Every chart of a run, in report order: the summary bars, clear vs TLS,
/// the latency distributions, the time series, the scaling curves, latency
/// against throughput, rate and latency against message size, and the
/// search traces (docs/results.md lists them).
pub fn charts(run: &RunRecord) -> Vec<Chart> {
    // A run of streams only has the streams' charts (crate::streams).
    if !run.points.is_empty() && run.points.iter().all(|p| p.kind == PointKind::Stream) {
        return crate::streams::charts(run);
    }
    let aggs = run.aggregates();
    if aggs.is_empty() {
        return Vec::new();
    }
    let layout = Layout::of(&aggs);
    let mut out = summary_charts(&aggs, &layout);
    out.extend(crate::relative::rate_chart(&crate::relative::relative_of(&aggs)));
    if !crate::charts::any_failed_call(run)
        && let Some(errors) = out.iter_mut().find(|c| c.id == "errors")
    {
        errors.svg.clear();
        errors.caption = crate::charts::NO_ERRORS.into();
    }
    out.extend(crate::charts::tls_charts(run));
    out.extend(crate::charts::distribution_charts(run));
    out.extend(timeseries_charts(run, &aggs, &layout));
    out.extend(scaling_charts(&aggs, &layout));
    out.extend(crate::charts::hockey_charts(run));
    out.extend(crate::charts::payload_charts(run));
    out.extend(search_charts(run, &aggs, &layout));
    out.extend(crate::charts::ramp_charts(run));
    out.extend(crate::streams::charts(run));
    out
}

impl Chart {
    /// A bar chart, or, when it has no bar at all, a sentence saying nothing
    /// was measured (an empty `svg`).
    fn of_bars(id: &str, caption: &str, c: &BarChart) -> Chart {
        Chart::of_bars_scaled(id, caption, c, Scale::Linear)
    }

    fn of_bars_scaled(id: &str, caption: &str, c: &BarChart, scale: Scale) -> Chart {
        let empty = c.series.iter().all(|(_, bars)| bars.iter().all(Option::is_none));
        Chart {
            id: id.into(),
            title: c.title.clone(),
            caption: if empty {
                format!("{}: nothing was measured.", c.title)
            } else {
                caption.into()
            },
            svg: if empty { String::new() } else { c.render_scaled(scale) },
        }
    }

    fn of_lines(id: String, caption: &str, c: &LineChart) -> Chart {
        Chart {
            id,
            title: c.title.clone(),
            caption: caption.into(),
            svg: c.render(),
        }
    }
}

/// The bar charts over every point: rate, latency percentiles, error rate,
/// server CPU per call and server peak memory.
fn summary_charts(aggs: &[PointAggregate], layout: &Layout) -> Vec<Chart> {
    let rate = layout.bars(aggs, "Rate by protocol and workload", "successful calls/s", |a| {
        bar(&a.rate, 1.0)
    });
    let errors = layout.bars(aggs, "Error rate", "failed calls (%)", |a| bar(&a.error_fraction, 0.01));
    let cpu = layout.bars(aggs, "Server CPU per call", "CPU time per call (µs)", |a| {
        bar(&a.cpu_ns_per_call, 1e3)
    });
    let memory = layout.bars(aggs, "Server peak memory", "peak RSS (MiB)", |a| {
        bar(&a.rss_peak_bytes, 1024.0 * 1024.0)
    });
    vec![
        Chart::of_bars(
            "rate",
            "Median successful calls per second; whiskers are 95% confidence intervals.",
            &rate,
        ),
        {
            let latency = latency_bars(aggs, layout);
            let scale = Scale::for_values(
                latency
                    .series
                    .iter()
                    .flat_map(|(_, bars)| bars.iter().flatten().map(|b| b.value)),
            );
            Chart::of_bars_scaled(
                "latency",
                "Median across repetitions of each latency percentile, measured from the intended start of each call.",
                &latency,
                scale,
            )
        },
        Chart::of_bars(
            "errors",
            "Share of calls that failed (injected failures included).",
            &errors,
        ),
        Chart::of_bars(
            "cost-cpu",
            "Server CPU time (user + system, whole process tree) over the measured window divided by calls.",
            &cpu,
        ),
        Chart::of_bars(
            "cost-memory",
            "Peak resident memory of the server's process tree.",
            &memory,
        ),
    ]
}

/// Latency percentiles: one group per point, bars p50 / p90 / p99.
fn latency_bars(aggs: &[PointAggregate], layout: &Layout) -> BarChart {
    BarChart {
        title: "Latency percentiles".into(),
        y_label: "latency (ms)".into(),
        categories: aggs
            .iter()
            .map(|a| {
                format!(
                    "{} {}",
                    series_name(&a.config, layout.many_servers),
                    category_name(&a.config, layout.many_variants)
                )
            })
            .collect(),
        series: [("p50", 0usize), ("p90", 1), ("p99", 2)]
            .iter()
            .map(|(name, i)| {
                let bars = aggs
                    .iter()
                    .map(|a| bar([&a.p50_ns, &a.p90_ns, &a.p99_ns][*i], 1e6))
                    .collect();
                (name.to_string(), bars)
            })
            .collect(),
    }
}

/// Per-second time series per category (rate, then p99), from the repetition
/// with the median rate.
fn timeseries_charts(run: &RunRecord, aggs: &[PointAggregate], layout: &Layout) -> Vec<Chart> {
    let mut out = Vec::new();
    for cat in &layout.categories {
        let (rate_lines, p99_lines) = timeseries_lines(run, aggs, layout, cat);
        if rate_lines.is_empty() {
            continue;
        }
        let c = LineChart {
            title: format!("Rate per second — {cat}"),
            x_label: "second of the measured window".into(),
            y_label: "successful calls/s".into(),
            log_x: false,
            lines: rate_lines,
        };
        out.push(Chart::of_lines(
            format!("timeseries-rate-{}", slug(cat)),
            "Successful calls completed in each second (the repetition with the median rate).",
            &c,
        ));
        let scale = Scale::for_values(p99_lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)));
        let c = LineChart {
            title: format!("p99 latency per second — {cat}"),
            x_label: "second of the measured window".into(),
            y_label: "p99 latency (ms)".into(),
            log_x: false,
            lines: p99_lines,
        };
        out.push(Chart {
            id: format!("timeseries-p99-{}", slug(cat)),
            title: c.title.clone(),
            caption: "99th percentile latency of each second (same repetition).".into(),
            svg: c.render_scaled(scale),
        });
    }
    out
}

/// The rate and p99 lines of one category: one line per series that has a timeline.
fn timeseries_lines(run: &RunRecord, aggs: &[PointAggregate], layout: &Layout, cat: &str) -> (Vec<Line>, Vec<Line>) {
    let mut rate_lines = Vec::new();
    let mut p99_lines = Vec::new();
    for a in aggs
        .iter()
        .filter(|a| category_name(&a.config, layout.many_variants) == cat)
    {
        let Some(m) = representative(run, a) else {
            continue;
        };
        let Some(r) = m.result.as_ref() else { continue };
        if r.timeline.is_empty() {
            continue;
        }
        let name = series_name(&a.config, layout.many_servers);
        // Only whole seconds of the window: calls finishing after its end
        // land in a last, partial second that would read as a collapse.
        let whole = (r.duration_ns / 1_000_000_000).max(1) as u32;
        let timeline: Vec<_> = r.timeline.iter().filter(|t| t.second < whole).collect();
        rate_lines.push(Line {
            name: name.clone(),
            points: timeline.iter().map(|t| (t.second as f64, t.successes as f64)).collect(),
            marks: vec![],
        });
        p99_lines.push(Line {
            name,
            points: timeline
                .iter()
                .map(|t| (t.second as f64, t.p99_ns as f64 / 1e6))
                .collect(),
            marks: vec![],
        });
    }
    (rate_lines, p99_lines)
}

/// Scaling curves: points that differ only by concurrency (closed loop) or
/// rate (open loop), one chart per group in key order.
fn scaling_charts(aggs: &[PointAggregate], layout: &Layout) -> Vec<Chart> {
    let mut groups: BTreeMap<String, Vec<&PointAggregate>> = BTreeMap::new();
    for a in aggs
        .iter()
        .filter(|a| a.config.kind == PointKind::Fixed || a.config.kind == PointKind::Rate)
    {
        groups.entry(scaling_key(&a.config)).or_default().push(a);
    }
    groups
        .iter()
        .filter_map(|(key, members)| scaling_chart(key, members, layout))
        .collect()
}

/// What the points of one scaling curve share: workload, loop, TLS, injected
/// failures and service time.
fn scaling_key(c: &PointConfig) -> String {
    format!(
        "{} {} {}{}{}",
        c.workload,
        if c.rate.is_some() { "open" } else { "closed" },
        if c.tls { "tls " } else { "" },
        if c.failure_rate > 0.0 {
            format!("fail={} ", c.failure_rate)
        } else {
            String::new()
        },
        c.service_time.clone().unwrap_or_default(),
    )
}

/// One scaling chart, with a line per series of at least two load levels
/// (none when no series has two).
fn scaling_chart(key: &str, members: &[&PointAggregate], layout: &Layout) -> Option<Chart> {
    let open = members.iter().any(|a| a.config.rate.is_some());
    let mut lines: Vec<Line> = Vec::new();
    for s in dedup(members.iter().map(|a| series_name(&a.config, layout.many_servers))) {
        let mut pts: Vec<(f64, f64)> = members
            .iter()
            .filter(|a| series_name(&a.config, layout.many_servers) == s)
            .filter_map(|a| {
                let x = if open {
                    a.config.rate?
                } else {
                    a.config.concurrency as f64
                };
                Some((x, a.rate.as_ref()?.median))
            })
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        if pts.len() < 2 {
            continue;
        }
        let marks = saturation(&pts)
            .map(|(x, y)| vec![(x, y, format!("saturation {}", fmt_rate(y)))])
            .unwrap_or_default();
        lines.push(Line {
            name: s,
            points: pts,
            marks,
        });
    }
    if lines.is_empty() {
        return None;
    }
    let c = LineChart {
        title: format!("Scaling — {key}"),
        x_label: if open {
            "target rate (calls/s)".into()
        } else {
            "concurrency".into()
        },
        y_label: "successful calls/s".into(),
        log_x: true,
        lines,
    };
    Some(Chart::of_lines(
        format!("scaling-{}", slug(key)),
        "Median rate at each load level; the circle marks saturation (the lowest level within 5% of the best rate).",
        &c,
    ))
}

/// The search traces of discover and ramp points, in point order.
fn search_charts(run: &RunRecord, aggs: &[PointAggregate], layout: &Layout) -> Vec<Chart> {
    aggs.iter()
        .filter(|a| matches!(a.config.kind, PointKind::Discover | PointKind::Ramp))
        .filter_map(|a| search_chart(run, a, layout))
        .collect()
}

/// One point's search trace (rate per concurrency step), marking the chosen
/// step; none without a representative measurement or a trace.
fn search_chart(run: &RunRecord, a: &PointAggregate, layout: &Layout) -> Option<Chart> {
    let search = representative(run, a)?.search.as_ref()?;
    let ramp = a.config.kind == PointKind::Ramp;
    let pts: Vec<(f64, f64)> = search.steps.iter().map(|s| (s.concurrency as f64, s.rate)).collect();
    // A continuous ramp's steps are its seconds, in order: the knee is the
    // step of its second (users may repeat across seconds).
    let chosen = match search.knee_second {
        Some(k) => search.steps.get(k as usize),
        None => search.steps.iter().find(|s| s.concurrency == search.chosen_concurrency),
    };
    let label = if ramp { "knee" } else { "best" };
    let marks = chosen
        .map(|s| vec![(s.concurrency as f64, s.rate, format!("{label} c={}", s.concurrency))])
        .unwrap_or_default();
    let name = format!("{} {}", series_name(&a.config, layout.many_servers), a.config.workload);
    let c = LineChart {
        title: format!(
            "{} — {name}",
            if ramp {
                "Ramp to saturation"
            } else {
                "Concurrency discovery"
            }
        ),
        x_label: if search.knee_second.is_some() {
            "users (one point per second of the ramp)".into()
        } else {
            "concurrency".into()
        },
        y_label: "successful calls/s".into(),
        log_x: a.config.kind == PointKind::Discover,
        lines: vec![Line {
            name,
            points: pts,
            marks,
        }],
    };
    Some(Chart::of_lines(
        format!("search-{}", a.config.index),
        &knee_line(search),
        &c,
    ))
}

/// The caption of a search chart: where a continuous ramp's knee was found
/// (second, users, rate) and why it stopped; else why the search stopped.
pub(crate) fn knee_line(search: &protobench_model::run::Search) -> String {
    match (search.knee_second, search.knee_rate) {
        (Some(second), Some(rate)) => format!(
            "Knee found at second {second} of the ramp: {} users, {}/s ({}).",
            search.chosen_concurrency,
            protobench_model::format::fmt_rate(rate),
            search.stop_reason
        ),
        _ => search.stop_reason.clone(),
    }
}

const STYLE: &str = "body{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}\
table{border-collapse:collapse;font-size:13px;margin:1em 0}th,td{border:1px solid #ccc;padding:3px 7px}\
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}\
figure{margin:2em 0}figcaption{font-size:13px;color:#555}svg{max-width:100%;height:auto}\
pre{background:#f7f7f7;padding:8px;overflow:auto;font-size:12px}.warn{color:#a40}.note{color:#555;font-style:italic}dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px}dt{font-weight:bold}dd{margin:0}";

/// "Relative to the reference protocol" as a section; empty without peers.
/// The streaming points' table (crate::streams), when the run has any.
fn streams_section(run: &RunRecord) -> String {
    let rows = crate::streams::rows(run);
    if rows.is_empty() {
        return String::new();
    }
    let mut h = String::from(
        "<section id=\"streams\"><h2>Streams</h2><p>Each streaming point: its workload carried one way \
         (gRPC streams, WebSocket in binary or text frames, Server-Sent Events, polling), its streams open at \
         once, each replaced when it ends. Medians over repetitions; beside the message rate, its 95% confidence interval relative to the median (Student t on the log scale). Per-message latency runs from the \
         intended send time: an echo's schedule, or the server's stamp on a pushed event, so a stream that \
         falls behind shows it. <em>deferred sends</em>: messages that could not go out at their time (flow \
         control, a full buffer). <em>CPU/msg</em>: over the messages sent and received. \
         <em>memory/stream</em>: the server's peak RSS over the window less its RSS before the point's streams opened, per stream open at once.</p>\
",
    );
    h.push_str(&table(&crate::streams::STREAMS_HEADER, &rows, |i| i >= 3));
    h.push_str("</section>");
    h
}

/// An HTML table of `rows` under `header`; the columns `numeric` says
/// are numbers align right.
fn table<R: AsRef<[String]>>(header: &[&str], rows: &[R], numeric: impl Fn(usize) -> bool) -> String {
    let mut h = String::from("<table><thead><tr>");
    for col in header {
        let _ = write!(h, "<th>{}</th>", esc(col));
    }
    h.push_str("</tr></thead><tbody>");
    for row in rows {
        h.push_str("<tr>");
        for (i, cell) in row.as_ref().iter().enumerate() {
            let class = if numeric(i) { " class=\"n\"" } else { "" };
            let _ = write!(h, "<td{class}>{}</td>", esc(cell));
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table>");
    h
}

/// The lanes of the points run on agents (crate::agents), when any did.
fn agents_section(run: &RunRecord) -> String {
    let rows = crate::agents::rows(run);
    if rows.is_empty() {
        return String::new();
    }
    let mut h = String::from(
        "<section id=\"agents\"><h2>Agents</h2><p>The points whose load came from several generator hosts \
         (docs/distributed.md): one row per agent and repetition. The table above shows the merged figures \
         (the agents' histograms added, bucket for bucket); here each agent's own share, rate and latency, \
         its clock offset ± its uncertainty (half the best round trip), and its own generator verdict: one \
         saturated agent shows here. A FAILED agent makes its repetition incomplete: its figures cover the other agents.</p>",
    );
    h.push_str(&table(
        &crate::agents::AGENTS_HEADER,
        &rows,
        crate::agents::numeric_column,
    ));
    h.push_str("</section>");
    h
}

fn relative_section(run: &RunRecord) -> String {
    let mut h = String::new();
    let relative = crate::relative::relative(run);
    if !relative.is_empty() {
        let _ = write!(
            h,
            "<section id=\"relative\"><h2>Relative to the reference protocol</h2><p>Each protocol divided by the first protocol of its peers (same server, workload and load), measured back to back in every repetition, so that drift of the machine cancels; 95% interval, paired by repetition. {}</p><table><thead><tr>",
            esc(&crate::relative::precision_line(&relative).unwrap_or_default())
        );
        for col in crate::relative::HEADER {
            let _ = write!(h, "<th>{}</th>", esc(col));
        }
        h.push_str("</tr></thead><tbody>");
        for row in crate::relative::rows(&relative) {
            h.push_str("<tr>");
            for cell in row {
                let _ = write!(h, "<td>{}</td>", esc(&cell));
            }
            h.push_str("</tr>");
        }
        h.push_str("</tbody></table></section>");
    }
    h
}

/// Renders the HTML page with the given charts inlined.
// Longer than the ~120-line guide: the page's sections in the order they
// appear, each a few `write!`s; the order of the page is the order here.
pub fn render(run: &RunRecord, charts: &[Chart]) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>protobench run {} — {}</title><style>{STYLE}</style></head><body>",
        run.id,
        esc(&run.preset)
    );
    let _ = write!(
        h,
        "<h1>protobench run {} — {}</h1><section id=\"metadata\"><h2>Run</h2><dl>",
        run.id,
        esc(&run.preset)
    );
    for (k, v) in report::metadata(run) {
        let class = if k == "warning" { " class=\"warn\"" } else { "" };
        let _ = write!(h, "<dt{class}>{}</dt><dd{class}>{}</dd>", esc(&k), esc(&v));
    }
    h.push_str("</dl></section><section id=\"results\"><h2>Results</h2><table><thead><tr>");
    for col in TABLE_HEADER {
        let _ = write!(h, "<th>{}</th>", esc(col));
    }
    h.push_str("</tr></thead><tbody>");
    for row in report::table_rows(run) {
        h.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = if report::numeric_column(i) { " class=\"n\"" } else { "" };
            let _ = write!(h, "<td{class}>{}</td>", esc(cell));
        }
        h.push_str("</tr>");
    }
    h.push_str(
        "</tbody></table><p>Medians over repetitions; beside the rate, its 95% confidence interval relative to the median (Student t on the log scale). \
         A point is <em>noisy</em> when the coefficient of variation of its rate exceeds the run's threshold. \
         <em>CPU/call coarse</em>: the server used under 0.2 s of CPU in a window, and /proc counts CPU in 10 ms ticks, \
         so its CPU per call is known to worse than 10%. \
         <em>drifting</em>: the rate within a measured window rose or fell by more than 10% with a \
         trend the noise cannot explain (a rising rate means the warm-up was too short). \
         On an emulated link (<code>net=</code>) the notes give the TCP payload per call and the share of the link's \
         measured capacity the point used; <em>link-bound</em>: 90% or more, so the link, not the server, limited \
         the rate (compare encoded sizes there, not servers).</p></section>",
    );
    h.push_str(&streams_section(run));
    h.push_str(&agents_section(run));
    h.push_str(&relative_section(run));
    if let Some(e) = report::findings_error(run) {
        let _ = write!(
            h,
            "<section id=\"findings\"><h2>Findings vs the study</h2><p class=\"warn\">{}</p></section>",
            esc(&e)
        );
    }
    let findings = report::findings_rows(run);
    if !findings.is_empty() {
        let _ = write!(
            h,
            "<section id=\"findings\"><h2>Findings vs the study</h2><p>Each claim compares one metric of two points (a and b), or a ratio of two ratios (a trend), as the study stated it. <em>Direction</em>: it holds when the 95% interval of the ratio (log scale, paired by repetition where marked) lies wholly on the claimed side, does not hold when it lies wholly on the other, and is inconclusive otherwise. <em>Size</em>, when the study states one: consistent when the interval lies within it (an <em>about</em> size within a factor of 1.5), smaller or larger when wholly outside. The verdict <em>holds</em> only when both agree; <em>not reproducible here</em> when the run lacked a condition of the study. Ratios and orderings, not absolute figures: the study's hardware is not ours. {}.</p><table><thead><tr>",
            esc(&report::findings_tally(run))
        );
        for col in report::FINDINGS_HEADER {
            let _ = write!(h, "<th>{}</th>", esc(col));
        }
        h.push_str("</tr></thead><tbody>");
        for row in findings {
            h.push_str("<tr>");
            for cell in row {
                let _ = write!(h, "<td>{}</td>", esc(&cell));
            }
            h.push_str("</tr>");
        }
        h.push_str("</tbody></table>");
        if let Some(line) = report::decided_after_line(run) {
            let _ = write!(h, "<p>{}</p>", esc(&line));
        }
        h.push_str("</section>");
    }
    let failures: Vec<_> = run.measurements.iter().filter(|m| m.failure.is_some()).collect();
    if !failures.is_empty() {
        h.push_str("<section id=\"failures\"><h2>Failures</h2>");
        for m in failures {
            let f = m.failure.as_ref().expect("filtered");
            let p = run.points.iter().find(|p| p.index == m.point);
            let name = p.map_or(String::new(), |p| p.label());
            let _ = write!(
                h,
                "<details><summary>{} (repetition {}): {}</summary>",
                esc(&name),
                m.repetition,
                esc(&f.reason)
            );
            if let Some(tail) = &f.log_tail {
                let _ = write!(h, "<pre>{}</pre>", esc(tail));
            }
            h.push_str("</details>");
        }
        h.push_str("</section>");
    }
    h.push_str("<section id=\"charts\"><h2>Charts</h2>");
    for c in charts {
        if c.svg.is_empty() {
            let _ = write!(h, "<p id=\"chart-{}\" class=\"note\">{}</p>", c.id, esc(&c.caption));
            continue;
        }
        let _ = write!(
            h,
            "<figure id=\"chart-{}\">{}<figcaption>{}</figcaption></figure>",
            c.id,
            c.svg,
            esc(&c.caption)
        );
    }
    if charts.is_empty() {
        h.push_str("<p>No measurements yet.</p>");
    }
    h.push_str("</section><section id=\"measurements\"><h2>Every measurement</h2><table><thead><tr><th>point</th><th>rep</th><th>status</th><th>rate/s</th><th>mean</th><th>p50</th><th>p95</th><th>p99</th><th>calls</th><th>errors</th><th>server CPU/call</th><th>generator CPU/call</th></tr></thead><tbody>");
    for m in &run.measurements {
        let p = run.points.iter().find(|p| p.index == m.point);
        let name = p.map_or(String::new(), |p| p.label());
        let r = m.result.as_ref();
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(&name),
            m.repetition,
            m.status.name(),
            r.map_or("-".into(), |r| fmt_rate(r.rate)),
            r.map_or("-".into(), |r| fmt_ns(r.latency.mean_ns as f64)),
            r.map_or("-".into(), |r| fmt_ns(r.latency.p50_ns as f64)),
            r.map_or("-".into(), |r| fmt_ns(r.latency.p95_ns as f64)),
            r.map_or("-".into(), |r| fmt_ns(r.latency.p99_ns as f64)),
            r.map_or("-".into(), |r| r.calls.to_string()),
            r.map_or("-".into(), |r| r.error_count().to_string()),
            m.server_cost.map_or("-".into(), |c| fmt_ns(c.cpu_ns_per_call)),
            r.map_or("-".into(), |r| fmt_ns(r.generator.cpu_ns_per_call)),
        );
    }
    h.push_str("</tbody></table></section><footer><p>Generated by protobench. Self-contained: no scripts, no network.</p></footer></body></html>\n");
    h
}

/// What [`write_report`] wrote.
#[derive(Debug, Clone, Default)]
pub struct WrittenReport {
    /// The HTML page.
    pub html: PathBuf,
    /// One SVG per chart.
    pub svgs: Vec<PathBuf>,
    /// One PNG per chart (empty without the `png` feature).
    pub pngs: Vec<PathBuf>,
    /// Charts that could not be rasterized, with the reason.
    pub png_errors: Vec<String>,
}

/// Errors writing a report.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// A file could not be written.
    #[error("cannot write {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

fn write(path: &Path, data: &[u8]) -> Result<(), WriteError> {
    std::fs::write(path, data).map_err(|source| WriteError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Writes `DIR/report.html` and every chart as `DIR/charts/<id>.svg` and
/// `.png` (a chart replaced by a sentence has no file).
pub fn write_report(run: &RunRecord, dir: &Path) -> Result<WrittenReport, WriteError> {
    let charts = charts(run);
    let chart_dir = dir.join("charts");
    std::fs::create_dir_all(&chart_dir).map_err(|source| WriteError::Io {
        path: chart_dir.clone(),
        source,
    })?;
    let mut written = WrittenReport {
        html: dir.join("report.html"),
        ..Default::default()
    };
    write(&written.html, render(run, &charts).as_bytes())?;
    for c in charts.iter().filter(|c| !c.svg.is_empty()) {
        let svg_path = chart_dir.join(format!("{}.svg", c.id));
        write(&svg_path, c.svg.as_bytes())?;
        written.svgs.push(svg_path);
        match crate::png::rasterize(&c.svg) {
            Ok(png) => {
                let png_path = chart_dir.join(format!("{}.png", c.id));
                write(&png_path, &png)?;
                written.pngs.push(png_path);
            }
            Err(e) => written.png_errors.push(format!("{}: {e}", c.id)),
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturation_table() {
        type Case<'a> = (&'a [(f64, f64)], Option<(f64, f64)>);
        let cases: &[Case] = &[
            (&[], None),                                                       // no curve
            (&[(1.0, 0.0), (2.0, 0.0)], None),                                 // nothing succeeded
            (&[(1.0, 100.0), (2.0, 190.0), (4.0, 200.0)], Some((2.0, 190.0))), // 190 is within 5% of 200
            (&[(1.0, 100.0), (2.0, 150.0), (4.0, 200.0)], Some((4.0, 200.0))), // still rising: the last
            (&[(1.0, 100.0), (2.0, 200.0), (4.0, 120.0)], Some((2.0, 200.0))), // collapse after the peak
        ];
        for (pts, want) in cases {
            assert_eq!(saturation(pts), *want, "{pts:?}");
        }
    }

    #[test]
    fn a_continuous_ramp_caption_says_where_the_knee_was_found() {
        let mut search = protobench_model::run::Search {
            steps: vec![],
            chosen_concurrency: 45,
            knee_rate: Some(12_345.0),
            stop_reason: "rate stopped rising for 3 s after second 2 (45 users)".into(),
            knee_second: Some(2),
            stopped_at_knee: false,
        };
        assert_eq!(
            knee_line(&search),
            "Knee found at second 2 of the ramp: 45 users, 12,345/s (rate stopped rising for 3 s after second 2 (45 users))."
        );
        // A stepped ramp or a discovery stored without a knee second: the reason alone.
        search.knee_second = None;
        assert_eq!(knee_line(&search), search.stop_reason);
    }

    #[test]
    fn slug_table() {
        assert_eq!(slug("inventory.m c=16 tls"), "inventory-m-c-16-tls");
        assert_eq!(slug("echo.8k"), "echo-8k");
    }
}
