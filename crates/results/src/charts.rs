//! The charts the published studies draw, built from a stored run and
//! rendered with [`crate::svg`]:
//!
//! - the latency distribution on a log percentile axis (HdrHistogram's
//!   plot), one chart per workload, one line per protocol;
//! - latency against achieved throughput (the "hockey stick"), from the
//!   steps of `discover`/`ramp` searches and from `fixed`/`rate` points that
//!   differ only by load;
//! - rate and latency against message size, for points that differ only by
//!   the size of their workload;
//! - clear against TLS, with the percentage change;
//! - a time chart of several series over one time axis with a vertical
//!   marker (the continuous ramp's users, calls/s and p95 with its knee).
//!
//! Each builder returns plain data ([`Plot`], [`TlsComparison`]) so that
//! tests check what is drawn, and a `*_charts` wrapper turns it into report
//! [`Chart`]s. A builder that has nothing to draw returns nothing: a report
//! never shows an empty chart.

use hdrhistogram::Histogram;
use protobench_model::format::fmt_num;
use protobench_model::hdr::{EncodedHistogram, HdrError};
use protobench_model::load::LoadResult;
use protobench_model::run::{PointAggregate, PointConfig, PointKind, RunRecord};

use crate::chart::{Chart, bar, category_name, dedup, representative, series_name, slug};
use crate::svg::{Axis, Bar, BarChart, Line, Marker, Panel, Plot, Scale};

/// Steps per decade of the percentile axis when sampling a histogram.
const SAMPLES_PER_DECADE: f64 = 20.0;

/// The latency distribution of a stored histogram (HdrHistogram V2 +
/// deflate, base64, values in ns) as `(percentile, latency ns)` points on
/// the `1 / (1 - p)` axis: evenly spaced on that axis from 0% to the
/// percentile one sample resolves (`1 - 1/count`, capped at 99.9999%), the
/// last point being the largest value. Empty for an empty histogram.
pub fn percentile_curve(histogram: &str) -> Result<Vec<(f64, f64)>, HdrError> {
    Ok(curve_of(&EncodedHistogram::from(histogram).decode()?))
}

/// [`percentile_curve`] of a decoded histogram.
pub(crate) fn curve_of(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    let count = h.len();
    if count == 0 {
        return Vec::new();
    }
    let end = (count as f64).log10().min(6.0);
    let steps = (end * SAMPLES_PER_DECADE).floor() as u32;
    // The grid, plus the median (a tick that falls between grid steps).
    let mut ps: Vec<f64> = (0..=steps)
        .map(|i| 1.0 - 10f64.powf(-(i as f64) / SAMPLES_PER_DECADE))
        .collect();
    if end >= 2f64.log10() {
        ps.push(0.5);
        ps.sort_by(f64::total_cmp);
    }
    let mut out: Vec<(f64, f64)> = ps.into_iter().map(|p| (p, h.value_at_quantile(p) as f64)).collect();
    let p_end = 1.0 - 10f64.powf(-end);
    if out.last().is_some_and(|l| l.0 < p_end) {
        out.push((p_end, h.max() as f64));
    } else if let Some(l) = out.last_mut() {
        l.1 = h.max() as f64;
    }
    out
}

/// What the charts of a run group by: which points are series, which are
/// categories.
struct Names {
    many_servers: bool,
    many_variants: bool,
}

impl Names {
    fn of(aggs: &[PointAggregate]) -> Names {
        Names {
            many_servers: dedup(aggs.iter().map(|a| a.config.server.as_str())).len() > 1,
            many_variants: dedup(aggs.iter().map(|a| a.config.variant_label())).len() > 1,
        }
    }

    fn series(&self, c: &PointConfig) -> String {
        series_name(c, self.many_servers)
    }

    fn category(&self, c: &PointConfig) -> String {
        category_name(c, self.many_variants)
    }
}

/// The percentile axis reaches at least 99.99% so that charts compare.
const MIN_NINES: u32 = 4;

/// Latency distributions: one plot per category (workload, plus the variant
/// when variants differ), one line per protocol (or server/protocol) from
/// the repetition with the median rate. Points whose histogram is missing,
/// unreadable or of a single sample are left out of the chart.
pub fn distribution_plots(run: &RunRecord) -> Vec<(String, Plot)> {
    let aggs = run.aggregates();
    let names = Names::of(&aggs);
    let mut out = Vec::new();
    for cat in dedup(aggs.iter().map(|a| names.category(&a.config))) {
        let mut lines = Vec::new();
        for a in aggs.iter().filter(|a| names.category(&a.config) == cat) {
            let Some(r) = representative(run, a).and_then(|m| m.result.as_ref()) else {
                continue;
            };
            let Ok(h) = r.histogram.decode() else {
                continue;
            };
            let curve = curve_of(&h);
            // One sample draws no distribution.
            if curve.len() < 2 {
                continue;
            }
            lines.push(Line {
                name: names.series(&a.config),
                points: curve.into_iter().map(|(p, ns)| (p, ns / 1e6)).collect(),
                marks: vec![],
            });
        }
        if lines.is_empty() {
            continue;
        }
        let nines = lines
            .iter()
            .filter_map(|l| l.points.last())
            .map(|(p, _)| (-(1.0 - p).log10() - 1e-6).ceil() as u32)
            .max()
            .unwrap_or(MIN_NINES)
            .clamp(MIN_NINES, 6);
        let y = Axis::auto("latency (ms)", lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)));
        out.push((
            cat.clone(),
            Plot {
                title: format!("Latency distribution — {cat}"),
                x: Axis::percentile("percentile (1 / (1 - p) scale)", nines),
                panels: vec![Panel { y, lines }],
                markers: vec![],
            },
        ));
    }
    out
}

/// [`distribution_plots`] as report charts (`distribution-<category>`).
pub fn distribution_charts(run: &RunRecord) -> Vec<Chart> {
    distribution_plots(run)
        .into_iter()
        .map(|(cat, p)| {
            chart(
                format!("distribution-{}", slug(&cat)),
                "Latency at every percentile from the stored histogram of the repetition with the median rate \
                 (corrected for coordinated omission); each step right is ten times rarer. A line ends where \
                 its sample count stops resolving percentiles.",
                &p,
            )
        })
        .collect()
}

fn chart(id: String, caption: &str, p: &Plot) -> Chart {
    Chart {
        id,
        title: p.title.clone(),
        caption: caption.into(),
        svg: p.render(),
    }
}

/// Everything a point's configuration holds but its load (concurrency,
/// target rate, search) and its protocol and server: points with the same
/// key differ only by load.
fn without_load(c: &PointConfig) -> String {
    let mut parts = vec![c.workload.clone()];
    if c.tls {
        parts.push("tls".into());
    }
    if c.failure_rate > 0.0 {
        parts.push(format!("fail={}%", c.failure_rate * 100.0));
    }
    if let Some(st) = &c.service_time {
        parts.push(format!("st={st}"));
    }
    if let Some(l) = c.cpu_limit {
        parts.push(format!("cpu={l}"));
    }
    if let Some(m) = c.memory_limit_bytes {
        parts.push(format!("mem={}MiB", m / (1024 * 1024)));
    }
    parts.join(" ")
}

/// How a hockey-stick line got its load levels.
fn load_source(c: &PointConfig) -> &'static str {
    match c.kind {
        PointKind::Discover => "discover",
        PointKind::Ramp => "ramp",
        PointKind::Fixed | PointKind::Rate if c.rate.is_some() => "open loop",
        PointKind::Fixed | PointKind::Rate => "closed loop",
        PointKind::Stream => "streams",
    }
}

/// Latency against achieved throughput: one plot per group of points that
/// differ only by load (workload, TLS, failures, service time and limits
/// equal), one line per protocol (or server/protocol, and per way of
/// loading when a group mixes them): the steps of a `discover` or `ramp`
/// search, or the `fixed`/`rate` points of several concurrencies or target
/// rates. x is the achieved rate, y the p99 latency; points follow the load
/// level (concurrency, target rate), which is rate order until the server
/// saturates, so that a collapse bends the line back. The chosen step of a
/// search is marked (`best` for discover, `knee` for ramp). Lines need two
/// load levels; a group without such a line has no plot.
pub fn hockey_plots(run: &RunRecord) -> Vec<(String, Plot)> {
    let aggs = run.aggregates();
    let names = Names::of(&aggs);
    let mut out = Vec::new();
    for key in dedup(aggs.iter().map(|a| without_load(&a.config))) {
        let members: Vec<&PointAggregate> = aggs.iter().filter(|a| without_load(&a.config) == key).collect();
        let sources = dedup(members.iter().map(|a| load_source(&a.config)));
        let mut lines = Vec::new();
        for series in dedup(members.iter().map(|a| names.series(&a.config))) {
            for source in &sources {
                let of_line: Vec<&&PointAggregate> = members
                    .iter()
                    .filter(|a| names.series(&a.config) == series && load_source(&a.config) == *source)
                    .collect();
                // (load level, achieved rate, p99 ms)
                let mut pts: Vec<(f64, f64, f64)> = Vec::new();
                let mut marks = Vec::new();
                for a in &of_line {
                    match a.config.kind {
                        PointKind::Discover | PointKind::Ramp => {
                            let Some(search) = representative(run, a).and_then(|m| m.search.as_ref()) else {
                                continue;
                            };
                            let label = if a.config.kind == PointKind::Ramp {
                                "knee"
                            } else {
                                "best"
                            };
                            for s in &search.steps {
                                pts.push((s.concurrency as f64, s.rate, s.p99_ns as f64 / 1e6));
                                if s.concurrency == search.chosen_concurrency {
                                    marks.push((s.rate, s.p99_ns as f64 / 1e6, format!("{label} c={}", s.concurrency)));
                                }
                            }
                        }
                        PointKind::Fixed | PointKind::Rate => {
                            let (Some(rate), Some(p99)) = (a.rate.as_ref(), a.p99_ns.as_ref()) else {
                                continue;
                            };
                            let load = a.config.rate.unwrap_or(a.config.concurrency as f64);
                            pts.push((load, rate.median, p99.median / 1e6));
                        }
                        // Streams have charts of their own (stream_charts).
                        PointKind::Stream => {}
                    }
                }
                pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
                if pts.len() < 2 {
                    continue;
                }
                lines.push(Line {
                    name: if sources.len() > 1 {
                        format!("{series} ({source})")
                    } else {
                        series.clone()
                    },
                    points: pts.iter().map(|p| (p.1, p.2)).collect(),
                    marks,
                });
            }
        }
        if lines.is_empty() {
            continue;
        }
        let x_max = lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.0))
            .fold(0.0, f64::max);
        let y = Axis::auto(
            "p99 latency (ms)",
            lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
        );
        out.push((
            key.clone(),
            Plot {
                title: format!("Latency against throughput — {key}"),
                x: Axis::linear("achieved successful calls/s", x_max),
                panels: vec![Panel { y, lines }],
                markers: vec![],
            },
        ));
    }
    out
}

/// [`hockey_plots`] as report charts (`hockey-<group>`).
pub fn hockey_charts(run: &RunRecord) -> Vec<Chart> {
    hockey_plots(run)
        .into_iter()
        .map(|(key, p)| {
            chart(
                format!("hockey-{}", slug(&key)),
                "p99 latency against the rate achieved at each load level (search steps, or points of several \
                 concurrencies or target rates), in load order: the line is flat while the server keeps up and \
                 turns up where it saturates.",
                &p,
            )
        })
        .collect()
}

/// The size family of a workload and its size: the name up to its last `.`
/// or `-`, when what follows names a size (`xs`, `s`, `m`, `l`, `xl`,
/// `small`, `large`, or a number with a unit such as `128b`, `8k`, `3m4`).
/// `echo.8k` -> `echo`; `grpcbench.string-10k` -> `grpcbench.string`;
/// `tasks.int` and `product.typical` have none.
pub fn size_family(workload: &str) -> Option<&str> {
    let cut = workload.rfind(['.', '-'])?;
    let (family, size) = (&workload[..cut], &workload[cut + 1..]);
    let named = ["xs", "s", "m", "l", "xl", "xxl", "small", "large"].contains(&size);
    let numbered = size.starts_with(|c: char| c.is_ascii_digit()) && size.chars().all(|c| c.is_ascii_alphanumeric());
    (!family.is_empty() && (named || numbered)).then_some(family)
}

/// A size on a decimal axis: `500B`, `1kB`, `20kB`, `1MB` (powers of ten
/// read better with decimal units than with KiB).
pub fn fmt_wire_bytes(b: f64) -> String {
    if b >= 1e6 {
        format!("{}MB", fmt_num(b / 1e6))
    } else if b >= 1e3 {
        format!("{}kB", fmt_num(b / 1e3))
    } else {
        format!("{}B", fmt_num(b))
    }
}

/// The bytes on the wire of one call of a point: sent plus received,
/// medians over repetitions.
fn wire_bytes(a: &PointAggregate) -> Option<f64> {
    let b = a.bytes_sent_per_call.as_ref()?.median + a.bytes_received_per_call.as_ref()?.median;
    (b > 0.0).then_some(b)
}

/// Rate and latency against message size: one plot per group of points that
/// differ only by the size of their workload (same size family, same load
/// and variant), with three panels (rate, p50, p99) and one line per
/// protocol (or server/protocol) ordered by size. The size is what the
/// generator measured on the wire per call (request + response, framing and
/// headers included), so each protocol's line sits at its own encoding's
/// sizes. A group needs a line of two sizes.
pub fn payload_plots(run: &RunRecord) -> Vec<(String, Plot, Vec<String>)> {
    let aggs = run.aggregates();
    let names = Names::of(&aggs);
    let key = |c: &PointConfig| size_family(&c.workload).map(|f| format!("{f} {}", c.variant_label()));
    let mut out = Vec::new();
    for k in dedup(aggs.iter().filter_map(|a| key(&a.config))) {
        let members: Vec<&PointAggregate> = aggs.iter().filter(|a| key(&a.config).as_ref() == Some(&k)).collect();
        let mut panels: [Vec<Line>; 3] = Default::default();
        let mut order: Vec<(f64, String)> = Vec::new();
        for series in dedup(members.iter().map(|a| names.series(&a.config))) {
            let mut pts: Vec<(f64, &PointAggregate)> = members
                .iter()
                .filter(|a| names.series(&a.config) == series)
                .filter_map(|a| Some((wire_bytes(a)?, *a)))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            if dedup(pts.iter().map(|p| p.1.config.workload.as_str())).len() < 2 {
                continue;
            }
            if order.len() < pts.len() {
                order = pts.iter().map(|p| (p.0, p.1.config.workload.clone())).collect();
            }
            let metric = |f: &dyn Fn(&PointAggregate) -> Option<f64>| -> Vec<(f64, f64)> {
                pts.iter().filter_map(|(x, a)| Some((*x, f(a)?))).collect()
            };
            let lines = [
                metric(&|a| Some(a.rate.as_ref()?.median)),
                metric(&|a| Some(a.p50_ns.as_ref()?.median / 1e6)),
                metric(&|a| Some(a.p99_ns.as_ref()?.median / 1e6)),
            ];
            for (panel, points) in panels.iter_mut().zip(lines) {
                panel.push(Line {
                    name: series.clone(),
                    points,
                    marks: vec![],
                });
            }
        }
        if panels[0].is_empty() {
            continue;
        }
        let xs = || panels[0].iter().flat_map(|l| l.points.iter().map(|p| p.0));
        let (lo, hi) = (xs().fold(f64::INFINITY, f64::min), xs().fold(0.0, f64::max));
        let x = Axis::log(
            "bytes on the wire per call (request + response as measured, framing and headers included)",
            lo,
            hi,
        )
        .with_labels(fmt_wire_bytes);
        let labels = ["calls/s", "p50 (ms)", "p99 (ms)"];
        let panels: Vec<Panel> = panels
            .into_iter()
            .zip(labels)
            .map(|(lines, label)| Panel {
                y: Axis::auto(label, lines.iter().flat_map(|l| l.points.iter().map(|p| p.1))),
                lines,
            })
            .collect();
        out.push((
            k.clone(),
            Plot {
                title: format!("Rate and latency against message size — {k}"),
                x,
                panels,
                markers: vec![],
            },
            order.into_iter().map(|o| o.1).collect(),
        ));
    }
    out
}

/// [`payload_plots`] as report charts (`payload-<group>`).
pub fn payload_charts(run: &RunRecord) -> Vec<Chart> {
    payload_plots(run)
        .into_iter()
        .map(|(key, p, order)| {
            chart(
                format!("payload-{}", slug(&key)),
                &format!(
                    "Median rate, p50 and p99 against the bytes each call put on the wire (one line per \
                     protocol; each encoding has its own sizes). Workloads by size: {}.",
                    order.join(" < ")
                ),
                &p,
            )
        })
        .collect()
}

/// One configuration measured in clear text and with TLS.
#[derive(Debug, Clone, PartialEq)]
pub struct TlsComparison {
    /// The configuration, TLS aside (`rest inventory.s c=16`; the server
    /// first when the run has several).
    pub label: String,
    /// Clear-text rate (median, interval).
    pub clear_rate: Bar,
    /// TLS rate.
    pub tls_rate: Bar,
    /// Change of the rate from clear to TLS, in percent.
    pub rate_change_pct: f64,
    /// Clear-text p99 latency (ms).
    pub clear_p99_ms: Option<Bar>,
    /// TLS p99 latency (ms).
    pub tls_p99_ms: Option<Bar>,
    /// Change of the p99 latency, in percent.
    pub p99_change_pct: Option<f64>,
}

/// `(to - from) / from` in percent; `None` when `from` is not positive.
pub fn percent_change(from: f64, to: f64) -> Option<f64> {
    (from > 0.0 && to.is_finite()).then(|| (to - from) / from * 100.0)
}

/// A change for people: `-20%`, `+4.5%` (one decimal under 10%).
pub fn fmt_change(pct: f64) -> String {
    if pct.abs() < 10.0 {
        let s = format!("{pct:+.1}%");
        if s == "-0.0%" { "+0.0%".into() } else { s }
    } else {
        format!("{pct:+.0}%")
    }
}

/// Every point measured with `tls = false` whose configuration was also
/// measured with `tls = true` (all else equal), in point order.
pub fn tls_comparisons(run: &RunRecord) -> Vec<TlsComparison> {
    let aggs = run.aggregates();
    let names = Names::of(&aggs);
    let same_but_tls = |clear: &PointConfig, tls: &PointConfig| {
        let mut c = clear.clone();
        c.tls = true;
        c.index = tls.index;
        &c == tls
    };
    let mut out = Vec::new();
    for clear in aggs.iter().filter(|a| !a.config.tls) {
        let Some(tls) = aggs
            .iter()
            .find(|t| t.config.tls && same_but_tls(&clear.config, &t.config))
        else {
            continue;
        };
        let (Some(clear_rate), Some(tls_rate)) = (bar(&clear.rate, 1.0), bar(&tls.rate, 1.0)) else {
            continue;
        };
        let Some(rate_change_pct) = percent_change(clear_rate.value, tls_rate.value) else {
            continue;
        };
        let clear_p99_ms = bar(&clear.p99_ns, 1e6);
        let tls_p99_ms = bar(&tls.p99_ns, 1e6);
        out.push(TlsComparison {
            label: format!(
                "{} {} {}",
                names.series(&clear.config),
                clear.config.workload,
                clear.config.variant_label()
            ),
            p99_change_pct: clear_p99_ms
                .zip(tls_p99_ms)
                .and_then(|(c, t)| percent_change(c.value, t.value)),
            clear_rate,
            tls_rate,
            rate_change_pct,
            clear_p99_ms,
            tls_p99_ms,
        });
    }
    out
}

/// [`tls_comparisons`] as two bar charts, rate and p99 latency (`tls-rate`,
/// `tls-latency`), the change written after each configuration; none when
/// no configuration ran both ways.
pub fn tls_charts(run: &RunRecord) -> Vec<Chart> {
    let cmp = tls_comparisons(run);
    if cmp.is_empty() {
        return Vec::new();
    }
    let rate = BarChart {
        title: "Clear vs TLS — rate".into(),
        y_label: "successful calls/s".into(),
        categories: cmp
            .iter()
            .map(|c| format!("{} ({})", c.label, fmt_change(c.rate_change_pct)))
            .collect(),
        series: vec![
            ("clear".into(), cmp.iter().map(|c| Some(c.clear_rate)).collect()),
            ("TLS".into(), cmp.iter().map(|c| Some(c.tls_rate)).collect()),
        ],
    };
    let latency = BarChart {
        title: "Clear vs TLS — p99 latency".into(),
        y_label: "p99 latency (ms)".into(),
        categories: cmp
            .iter()
            .map(|c| match c.p99_change_pct {
                Some(p) => format!("{} ({})", c.label, fmt_change(p)),
                None => c.label.clone(),
            })
            .collect(),
        series: vec![
            ("clear".into(), cmp.iter().map(|c| c.clear_p99_ms).collect()),
            ("TLS".into(), cmp.iter().map(|c| c.tls_p99_ms).collect()),
        ],
    };
    let latency_scale = Scale::for_values(
        latency
            .series
            .iter()
            .flat_map(|(_, b)| b.iter().flatten().map(|b| b.value)),
    );
    vec![
        Chart {
            id: "tls-rate".into(),
            title: rate.title.clone(),
            caption: format!(
                "Median rate of each configuration in clear text and with TLS; the change from clear to TLS \
                 follows each name ({}). Whiskers are 95% confidence intervals.",
                cmp.iter()
                    .map(|c| format!("{} {}", c.label, fmt_change(c.rate_change_pct)))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            svg: rate.render(),
        },
        Chart {
            id: "tls-latency".into(),
            title: latency.title.clone(),
            caption: "Median p99 latency in clear text and with TLS, with the change from clear to TLS.".into(),
            svg: latency.render_scaled(latency_scale),
        },
    ]
}

/// One series of a time chart.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeSeries {
    /// Legend name (`users`, `calls/s`, `p95`).
    pub name: String,
    /// The y axis it is drawn on, with its unit: series with the same label
    /// share a panel.
    pub y_label: String,
    /// A latency: its panel turns logarithmic when it spans more than a decade.
    pub latency: bool,
    /// (second, value) points.
    pub points: Vec<(f64, f64)>,
}

/// Several series over one time axis (seconds), one panel per y label in
/// first-seen order, with an optional vertical marker across every panel
/// (the knee of a continuous ramp). Locust draws users, calls/s and
/// response times in three charts over the same time; this is those charts
/// stacked. `None` when no series has a point.
pub fn time_plot(title: &str, series: &[TimeSeries], marker: Option<Marker>) -> Option<Plot> {
    if series.iter().all(|s| s.points.is_empty()) {
        return None;
    }
    let x_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .chain(marker.iter().map(|m| m.x))
        .fold(0.0, f64::max);
    let mut panels = Vec::new();
    for label in dedup(
        series
            .iter()
            .filter(|s| !s.points.is_empty())
            .map(|s| s.y_label.as_str()),
    ) {
        let of: Vec<&TimeSeries> = series.iter().filter(|s| s.y_label == label).collect();
        let values = || of.iter().flat_map(|s| s.points.iter().map(|p| p.1));
        let y = if of.iter().any(|s| s.latency) {
            Axis::auto(label, values().collect::<Vec<_>>())
        } else {
            Axis::linear(label, values().fold(0.0, f64::max))
        };
        panels.push(Panel {
            y,
            lines: of
                .iter()
                .map(|s| Line {
                    name: s.name.clone(),
                    points: s.points.clone(),
                    marks: vec![],
                })
                .collect(),
        });
    }
    Some(Plot {
        title: title.into(),
        x: Axis::linear("second", x_max),
        panels,
        markers: marker.into_iter().collect(),
    })
}

/// The series of a result's per-second timeline: calls/s (and errors/s when
/// any call failed) and p50/p99 latency. Whole seconds only: calls that
/// finish after the window land in a partial last second.
pub fn timeline_series(result: &LoadResult) -> Vec<TimeSeries> {
    let whole = (result.duration_ns / 1_000_000_000).max(1) as u32;
    let t: Vec<_> = result.timeline.iter().filter(|t| t.second < whole).collect();
    let s = |name: &str, y_label: &str, latency: bool, f: &dyn Fn(&protobench_model::load::TimelinePoint) -> f64| {
        TimeSeries {
            name: name.into(),
            y_label: y_label.into(),
            latency,
            points: t.iter().map(|p| (p.second as f64, f(p))).collect(),
        }
    };
    let mut out = Vec::new();
    // A concurrency schedule (the continuous ramp) records its users.
    if t.iter().any(|p| p.users > 0) {
        out.push(s("users", "users", false, &|p| p.users as f64));
    }
    out.push(s("calls/s", "calls/s", false, &|p| p.successes as f64));
    if t.iter().any(|p| p.errors > 0) {
        out.push(s("errors/s", "calls/s", false, &|p| p.errors as f64));
    }
    out.push(s("p50", "latency (ms)", true, &|p| p.p50_ns as f64 / 1e6));
    if t.iter().any(|p| p.p95_ns > 0) {
        out.push(s("p95", "latency (ms)", true, &|p| p.p95_ns as f64 / 1e6));
    }
    out.push(s("p99", "latency (ms)", true, &|p| p.p99_ns as f64 / 1e6));
    out
}

/// The continuous ramp over time, as Locust draws it: users, calls/s and
/// latency per second on one time axis, the knee marked, for every `ramp`
/// point run as one continuous run (from the repetition with the median rate).
pub fn ramp_charts(run: &RunRecord) -> Vec<Chart> {
    let mut out = Vec::new();
    for a in run.aggregates() {
        if a.config.kind != protobench_model::run::PointKind::Ramp {
            continue;
        }
        let Some(m) = crate::chart::representative(run, &a) else {
            continue;
        };
        let (Some(r), Some(search)) = (&m.result, &m.search) else {
            continue;
        };
        let Some(knee) = search.knee_second else { continue };
        let marker = Marker {
            x: f64::from(knee),
            label: format!("knee: {} users", search.chosen_concurrency),
        };
        out.extend(time_chart(
            &format!("ramp-{}", a.config.index),
            &format!("Continuous ramp — {}", a.config.label()),
            "Users, calls/s and latency per second of one continuous ramp; the dashed line marks the second the knee rule stopped at.",
            &timeline_series(r),
            Some(marker),
        ));
    }
    out
}

/// A report chart of [`time_plot`] (`id` as given); `None` without points.
pub fn time_chart(
    id: &str,
    title: &str,
    caption: &str,
    series: &[TimeSeries],
    marker: Option<Marker>,
) -> Option<Chart> {
    time_plot(title, series, marker).map(|p| chart(id.into(), caption, &p))
}

/// The sentence that replaces the error-rate chart when no call failed.
pub const NO_ERRORS: &str = "No call failed in any measurement: no error chart.";

/// Whether any call of any measurement failed (the error chart has something to show).
pub fn any_failed_call(run: &RunRecord) -> bool {
    run.measurements
        .iter()
        .filter_map(|m| m.result.as_ref())
        .any(|r| r.error_count() > 0)
}
