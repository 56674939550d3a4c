//! The report of a run's streaming points (`kind = "stream"`,
//! docs/streaming.md): one row per point with the medians over its
//! repetitions (messages received per second with its 95% interval), and three charts per workload: the per-message latency
//! distribution per way of carrying it, messages per second against the
//! p99 as streams are added, and the server's memory per open stream.
//!
//! A streaming point's measurement carries a [`StreamResult`] instead of a
//! unary [`protobench_model::load::LoadResult`]; the unary tables and
//! charts leave it out, and this module is where it shows.

use protobench_model::format::{TextTable, fmt_bytes, fmt_ns, fmt_num};
use protobench_model::run::{Measurement, MeasurementStatus, PointConfig, PointKind, RunRecord};
use protobench_model::stats::Summary;
use protobench_model::stream::StreamResult;

use crate::chart::{Chart, dedup, slug};
use crate::svg::{Axis, Line, Panel, Plot};

/// The columns of [`rows`].
pub const STREAMS_HEADER: [&str; 14] = [
    "server",
    "workload",
    "carried as",
    "streams",
    "reps",
    "msgs/s in",
    "msgs/s out",
    "p50/msg",
    "p99/msg",
    "first msg p50",
    "deferred sends",
    "failed streams",
    "CPU/msg engine | server",
    "memory/stream",
];

/// One streaming point's repetitions, measured.
struct Reps<'a> {
    config: &'a PointConfig,
    ok: Vec<(&'a Measurement, &'a StreamResult)>,
}

fn stream_points(run: &RunRecord) -> Vec<Reps<'_>> {
    run.points
        .iter()
        .filter(|p| p.kind == PointKind::Stream)
        .map(|config| Reps {
            config,
            ok: run
                .measurements
                .iter()
                .filter(|m| m.point == config.index && m.status == MeasurementStatus::Ok)
                .filter_map(|m| Some((m, m.stream.as_ref()?)))
                .collect(),
        })
        .collect()
}

fn median(values: impl Iterator<Item = f64>) -> Option<f64> {
    Summary::of(&values.collect::<Vec<_>>()).map(|s| s.median)
}

/// The server's resident memory per stream open at once: its peak over
/// the measured window less its memory just before the point's streams
/// opened, over the most streams open at the same time. `None` without
/// samples. An allocator that keeps what it freed counts what it kept,
/// so this is the most a stream may cost, not the least.
pub fn memory_per_stream(m: &Measurement, r: &StreamResult) -> Option<f64> {
    let before = m.server_rss_before_bytes?;
    let peak = m.server_cost.as_ref()?.rss_peak_bytes.max(before);
    (r.streams.max_open > 0).then(|| (peak - before) as f64 / r.streams.max_open as f64)
}

/// The server's CPU per message (sent and received, as the engine's).
fn server_cpu_per_message(m: &Measurement, r: &StreamResult) -> Option<f64> {
    let messages = r.messages_sent + r.messages_received;
    let cost = m.server_cost.as_ref()?;
    (messages > 0).then(|| cost.cpu_ns as f64 / messages as f64)
}

/// One row per streaming point: medians over its measured repetitions.
pub fn rows(run: &RunRecord) -> Vec<[String; 14]> {
    let ns = |v: Option<f64>| v.map_or("-".into(), fmt_ns);
    stream_points(run)
        .iter()
        .map(|p| {
            let c = p.config;
            let carried = c
                .stream
                .map_or_else(|| "-".into(), |s| format!("{} on {}", s.describe(), c.protocol));
            let of = |f: &dyn Fn(&Measurement, &StreamResult) -> Option<f64>| {
                median(p.ok.iter().filter_map(|(m, r)| f(m, r)))
            };
            let summary =
                |f: &dyn Fn(&StreamResult) -> f64| Summary::of(&p.ok.iter().map(|(_, r)| f(r)).collect::<Vec<_>>());
            let engine = of(&|_, r| Some(r.cpu_ns_per_message));
            let server = of(&server_cpu_per_message);
            let failed: u64 = p.ok.iter().map(|(_, r)| r.failed_streams()).sum();
            let opened: u64 = p.ok.iter().map(|(_, r)| r.streams.opened).sum();
            [
                c.server.clone(),
                c.workload.clone(),
                carried,
                c.concurrency.to_string(),
                p.ok.len().to_string(),
                crate::chart::rate_cell(&summary(&|r| r.received_per_second)),
                of(&|_, r| Some(r.sent_per_second)).map_or("-".into(), fmt_num),
                crate::chart::ns_cell(&summary(&|r| r.latency.p50_ns as f64)),
                crate::chart::ns_cell(&summary(&|r| r.latency.p99_ns as f64)),
                ns(of(&|_, r| Some(r.first_message.p50_ns as f64))),
                of(&|_, r| Some(r.deferred_sends as f64)).map_or("-".into(), fmt_num),
                format!("{failed} of {opened}"),
                format!("{} | {}", ns(engine), ns(server)),
                of(&memory_per_stream).map_or("-".into(), fmt_bytes),
            ]
        })
        .collect()
}

/// The rows as a text table, or `None` when the run has no streaming point.
pub fn text(run: &RunRecord) -> Option<String> {
    let rows = rows(run);
    if rows.is_empty() {
        return None;
    }
    let mut t = TextTable::new(STREAMS_HEADER).right([3, 4, 5, 6, 7, 8, 9, 10]);
    for r in rows {
        t.row(r);
    }
    Some(t.render())
}

/// A point's line name in the charts: server (when several) and the way it is carried.
fn series(c: &PointConfig, many_servers: bool) -> String {
    let how = c.stream.map_or_else(|| c.protocol.to_string(), |s| s.describe());
    if many_servers {
        format!("{}/{how}", c.server)
    } else {
        how
    }
}

/// The repetition whose received-message rate is the median.
fn representative<'a>(p: &Reps<'a>) -> Option<&'a StreamResult> {
    let mid = median(p.ok.iter().map(|(_, r)| r.received_per_second))?;
    p.ok.iter().map(|(_, r)| *r).min_by(|a, b| {
        (a.received_per_second - mid)
            .abs()
            .total_cmp(&(b.received_per_second - mid).abs())
    })
}

/// The charts of the streaming points: per workload, the per-message
/// latency distribution (the busiest streams count of each line), messages
/// per second against p99 over the streams counts, and memory per open
/// stream against streams open.
pub fn charts(run: &RunRecord) -> Vec<Chart> {
    let points = stream_points(run);
    let many_servers = dedup(points.iter().map(|p| &p.config.server)).len() > 1;
    let mut out = Vec::new();
    for workload in dedup(points.iter().map(|p| p.config.workload.clone())) {
        let of: Vec<&Reps> = points.iter().filter(|p| p.config.workload == workload).collect();
        let names = dedup(of.iter().map(|p| series(p.config, many_servers)));
        let mut dist = Vec::new();
        let mut hockey = Vec::new();
        let mut memory = Vec::new();
        for name in &names {
            let mut members: Vec<&&Reps> = of.iter().filter(|p| &series(p.config, many_servers) == name).collect();
            members.sort_by_key(|p| p.config.concurrency);
            if let Some(r) = members.last().and_then(|p| representative(p))
                && let Ok(h) = r.histogram.decode()
            {
                let curve = crate::charts::curve_of(&h);
                if curve.len() >= 2 {
                    dist.push(line(format!("{name} ({} streams)", r.plan.streams), curve, 1e6));
                }
            }
            let rate_p99: Vec<(f64, f64)> = members
                .iter()
                .filter_map(|p| {
                    let r = representative(p)?;
                    Some((r.received_per_second, r.latency.p99_ns as f64))
                })
                .collect();
            if rate_p99.len() >= 2 {
                hockey.push(line(name.clone(), rate_p99, 1e6));
            }
            let mem: Vec<(f64, f64)> = members
                .iter()
                .filter_map(|p| {
                    let streams = median(p.ok.iter().map(|(_, r)| r.streams.max_open as f64))?;
                    Some((
                        streams,
                        median(p.ok.iter().filter_map(|(m, r)| memory_per_stream(m, r)))?,
                    ))
                })
                .collect();
            if !mem.is_empty() {
                memory.push(line(name.clone(), mem, 1024.0));
            }
        }
        let id = slug(&workload);
        if !dist.is_empty() {
            let y = Axis::auto(
                "latency per message (ms)",
                dist.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
            );
            out.push(chart(
                format!("stream-distribution-{id}"),
                "Per-message latency at every percentile, from the intended send time (an echo's schedule, a \
                 subscription's server stamp), of the repetition with the median message rate at the most streams.",
                Plot {
                    title: format!("Per-message latency — {workload}"),
                    x: Axis::percentile("percentile (1 / (1 - p) scale)", 4),
                    panels: vec![Panel { y, lines: dist }],
                    markers: vec![],
                },
            ));
        }
        if !hockey.is_empty() {
            let max_x = hockey
                .iter()
                .flat_map(|l| l.points.iter().map(|p| p.0))
                .fold(0.0, f64::max);
            let y = Axis::auto(
                "p99 per message (ms)",
                hockey.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
            );
            out.push(chart(
                format!("stream-rate-{id}"),
                "Messages received per second against the per-message p99, one point per number of streams open \
                 at once (the repetition with the median rate).",
                Plot {
                    title: format!("Messages/s vs p99 — {workload}"),
                    x: Axis::linear("messages received per second", max_x),
                    panels: vec![Panel { y, lines: hockey }],
                    markers: vec![],
                },
            ));
        }
        if !memory.is_empty() {
            let max_x = memory
                .iter()
                .flat_map(|l| l.points.iter().map(|p| p.0))
                .fold(0.0, f64::max);
            let max_y = memory
                .iter()
                .flat_map(|l| l.points.iter().map(|p| p.1))
                .fold(0.0, f64::max);
            out.push(chart(
                format!("stream-memory-{id}"),
                "The server's resident memory per stream open at once: its peak over the window less its memory \
                 before the point's streams opened, over the most streams open together; median over repetitions.",
                Plot {
                    title: format!("Memory per open stream — {workload}"),
                    x: Axis::linear("streams open at once", max_x),
                    panels: vec![Panel {
                        y: Axis::linear("KiB per stream", max_y),
                        lines: memory,
                    }],
                    markers: vec![],
                },
            ));
        }
    }
    out
}

fn line(name: String, mut points: Vec<(f64, f64)>, y_scale: f64) -> Line {
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    Line {
        name,
        points: points.into_iter().map(|(x, y)| (x, y / y_scale)).collect(),
        marks: vec![],
    }
}

fn chart(id: String, caption: &str, p: Plot) -> Chart {
    Chart {
        id,
        title: p.title.clone(),
        caption: caption.into(),
        svg: p.render(),
    }
}
