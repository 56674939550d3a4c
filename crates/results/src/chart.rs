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

/// A rate's median with its 95% interval relative to it (`1,234 ±4.6%`,
/// or `1,234 -21%/+27%` when the interval is not symmetric, as a log-scale
/// one is not: `stats::value_interval`), `-` when there is none: the
/// tables' rate cell.
pub(crate) fn rate_cell(s: &Option<protobench_model::stats::Summary>) -> String {
    use protobench_model::format::fmt_rate;
    match s {
        None => "-".into(),
        Some(s) => match s.ci_low.zip(s.ci_high) {
            Some((lo, hi)) if s.median > 0.0 => {
                format!(
                    "{} {}",
                    fmt_rate(s.median),
                    relative_interval(lo / s.median - 1.0, hi / s.median - 1.0)
                )
            }
            _ => fmt_rate(s.median),
        },
    }
}

/// `±4.6%` when both ends round alike, else `-21%/+27%`: one decimal
/// below 10%, none above.
fn relative_interval(down: f64, up: f64) -> String {
    let pct = |x: f64| {
        let p = x * 100.0;
        if p.abs() < 10.0 {
            format!("{p:+.1}%")
        } else {
            format!("{p:+.0}%")
        }
    };
    let (d, u) = (pct(down), pct(up));
    if d.trim_start_matches('-') == u.trim_start_matches('+') && d.starts_with('-') {
        format!("±{}", u.trim_start_matches('+'))
    } else {
        format!("{d}/{u}")
    }
}

/// A duration's median, `-` when there is none.
pub(crate) fn ns_cell(s: &Option<protobench_model::stats::Summary>) -> String {
    s.as_ref()
        .map_or("-".into(), |s| protobench_model::format::fmt_ns(s.median))
}

#[cfg(test)]
mod tests {
    use super::*;
    use protobench_model::stats::Summary;

    /// The rate cell shows the interval relative to the median, symmetric
    /// or not, and never a bound below 0 (500/1,000/1,500 is -77%/+261%,
    /// not 1,000 ±1,242).
    #[test]
    fn a_rate_cell_shows_its_interval_relative_to_the_median() {
        assert_eq!(rate_cell(&Summary::of(&[1001.0, 1002.0, 1003.0])), "1,002 ±0.2%");
        assert_eq!(rate_cell(&Summary::of(&[500.0, 1000.0, 1500.0])), "1,000 -77%/+261%");
        assert_eq!(rate_cell(&Summary::of(&[1000.0])), "1,000");
        assert_eq!(rate_cell(&None), "-");
        assert_eq!(relative_interval(-0.046, 0.046), "±4.6%");
        assert_eq!(relative_interval(-0.21, 0.27), "-21%/+27%");
        assert_eq!(relative_interval(0.03, 0.4), "+3.0%/+40%");
    }
}
