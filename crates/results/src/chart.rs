//! One chart of a report ([`Chart`]) and what every chart builder shares:
//! the names of a point's series and group, bars of a summary, file-name
//! slugs and the repetition a chart draws. The summary charts
//! ([`crate::html`]) and the study charts ([`crate::charts`]) both build on
//! it.

use protobench_model::run::{MeasurementStatus, PointAggregate, PointConfig, RunRecord};

use crate::svg::Bar;

/// One chart of a report.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// File-name-safe id, e.g. `rate`, `timeseries-inventory-m`.
    pub id: String,
    /// Title.
    pub title: String,
    /// What it shows, one sentence.
    pub caption: String,
    /// The SVG document; empty when there is nothing to draw (no call
    /// failed, nothing was measured), and the caption then says so in one
    /// sentence that the report shows instead of a chart.
    pub svg: String,
}

/// A point's legend name: the protocol, prefixed by the server when the run has several.
pub(crate) fn series_name(c: &PointConfig, many_servers: bool) -> String {
    if many_servers {
        format!("{}/{}", c.server, c.protocol)
    } else {
        c.protocol.to_string()
    }
}

/// A point's group name: the workload, plus the variant when variants differ.
pub(crate) fn category_name(c: &PointConfig, many_variants: bool) -> String {
    if many_variants {
        format!("{} {}", c.workload, c.variant_label())
    } else {
        c.workload.clone()
    }
}

/// The values in their first order, each once.
pub(crate) fn dedup<T: PartialEq>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for v in it {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// A bar of a summary's median over `scale`, its interval clipped at zero.
pub(crate) fn bar(s: &Option<protobench_model::stats::Summary>, scale: f64) -> Option<Bar> {
    let s = s.as_ref()?;
    Some(Bar {
        value: s.median / scale,
        ci: s
            .ci_low
            .zip(s.ci_high)
            .map(|(lo, hi)| (lo.max(0.0) / scale, hi / scale)),
    })
}

/// `s` as a file-name-safe id: lower-case ASCII letters and digits, runs
/// of anything else as one `-`.
pub(crate) fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

/// The measurement whose rate is the median of the point's repetitions.
pub(crate) fn representative<'a>(
    run: &'a RunRecord,
    a: &PointAggregate,
) -> Option<&'a protobench_model::run::Measurement> {
    let median = a.rate.as_ref()?.median;
    run.measurements
        .iter()
        .filter(|m| m.point == a.config.index && m.status == MeasurementStatus::Ok)
        .min_by(|x, y| {
            let dx = x.result.as_ref().map_or(f64::INFINITY, |r| (r.rate - median).abs());
            let dy = y.result.as_ref().map_or(f64::INFINITY, |r| (r.rate - median).abs());
            dx.total_cmp(&dy)
        })
}

/// A rate's median with the half-width of its 95% interval (`1,234 ±56`),
/// `-` when there is none: the tables' rate cell.
pub(crate) fn rate_cell(s: &Option<protobench_model::stats::Summary>) -> String {
    use protobench_model::format::fmt_rate;
    match s {
        None => "-".into(),
        Some(s) => match s.half_width() {
            Some(h) => format!("{} ±{}", fmt_rate(s.median), fmt_rate(h)),
            None => fmt_rate(s.median),
        },
    }
}

/// A duration's median, `-` when there is none.
pub(crate) fn ns_cell(s: &Option<protobench_model::stats::Summary>) -> String {
    s.as_ref()
        .map_or("-".into(), |s| protobench_model::format::fmt_ns(s.median))
}
