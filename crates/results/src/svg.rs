//! Charts as standalone SVG, generated here so that reports need no
//! JavaScript, no CDN and no network: the HTML report inlines these strings
//! and the same strings are saved as `.svg` files (and rasterized to PNG).
//!
//! Two shapes cover every chart of a report: grouped bars (with 95% interval
//! whiskers) and lines over a numeric x axis (with marked points, e.g. the
//! saturation point of a scaling curve).

use std::fmt::Write as _;

use protobench_model::format::fmt_num;

/// A colour-blind-friendly palette (Okabe-Ito, then Tableau extras).
const PALETTE: [&str; 10] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000", "#8c564b", "#7f7f7f",
];

/// The colour of series `i`.
pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// One bar value with an optional 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bar {
    /// Height.
    pub value: f64,
    /// Interval (low, high).
    pub ci: Option<(f64, f64)>,
}

/// Grouped bars: one group per category, one bar per series.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BarChart {
    /// Title above the chart.
    pub title: String,
    /// Label of the value axis, with its unit.
    pub y_label: String,
    /// Group names along the x axis.
    pub categories: Vec<String>,
    /// Series name and one optional bar per category.
    pub series: Vec<(String, Vec<Option<Bar>>)>,
}

/// A line series.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Line {
    /// Legend name.
    pub name: String,
    /// Points (x, y), in x order.
    pub points: Vec<(f64, f64)>,
    /// Marked points (x, y, label), e.g. the saturation point.
    pub marks: Vec<(f64, f64, String)>,
}

/// Lines over a numeric x axis.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LineChart {
    /// Title above the chart.
    pub title: String,
    /// Label of the x axis, with its unit.
    pub x_label: String,
    /// Label of the y axis, with its unit.
    pub y_label: String,
    /// Logarithmic x axis (concurrency sweeps).
    pub log_x: bool,
    /// The lines.
    pub lines: Vec<Line>,
}

const W: f64 = 860.0;
const TOP: f64 = 40.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 20.0;
const PLOT_H: f64 = 260.0;

/// Escapes text for XML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" upper bound and tick step for a maximum value.
fn nice_axis(max: f64) -> (f64, f64) {
    if max <= 0.0 || !max.is_finite() {
        return (1.0, 0.25);
    }
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

fn header(out: &mut String, height: f64, title: &str) {
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" viewBox="0 0 {W} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12" role="img"><title>{t}</title><rect width="100%" height="100%" fill="#ffffff"/><text x="{x}" y="22" font-size="15" font-weight="bold" text-anchor="middle">{t}</text>"##,
        t = esc(title),
        x = W / 2.0,
    );
}

fn y_axis(out: &mut String, max: f64, step: f64, label: &str) {
    let plot_w = W - LEFT - RIGHT;
    let mut v = 0.0;
    while v <= max + step * 1e-9 {
        let y = TOP + PLOT_H - v / max * PLOT_H;
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" x2="{x2}" y1="{y:.1}" y2="{y:.1}" stroke="#e0e0e0"/><text x="{tx}" y="{ty:.1}" text-anchor="end">{l}</text>"##,
            x2 = LEFT + plot_w,
            tx = LEFT - 6.0,
            ty = y + 4.0,
            l = fmt_num(v),
        );
        v += step;
    }
    let cy = TOP + PLOT_H / 2.0;
    let _ = write!(
        out,
        r##"<text x="16" y="{cy}" text-anchor="middle" transform="rotate(-90 16 {cy})">{}</text><line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{b}" stroke="#444"/><line x1="{LEFT}" x2="{r}" y1="{b}" y2="{b}" stroke="#444"/>"##,
        esc(label),
        b = TOP + PLOT_H,
        r = W - RIGHT,
    );
}

fn legend(out: &mut String, y: f64, names: &[&str]) -> f64 {
    let mut x = LEFT;
    let mut y = y;
    for (i, name) in names.iter().enumerate() {
        let w = 24.0 + 7.0 * name.chars().count() as f64;
        if x + w > W - RIGHT {
            x = LEFT;
            y += 18.0;
        }
        let _ = write!(
            out,
            r#"<rect x="{x}" y="{ry}" width="12" height="12" fill="{c}"/><text x="{tx}" y="{ty}">{n}</text>"#,
            ry = y - 10.0,
            c = color(i),
            tx = x + 16.0,
            ty = y,
            n = esc(name),
        );
        x += w;
    }
    y + 18.0
}

impl BarChart {
    /// Renders the chart as a standalone SVG document.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let max_label = self.categories.iter().map(|c| c.chars().count()).max().unwrap_or(0) as f64;
        let rotate = self.categories.len() > 4 || max_label > 14.0;
        let label_h = if rotate {
            (max_label * 6.5).min(170.0) + 10.0
        } else {
            24.0
        };
        let legend_rows = 1.0
            + (self
                .series
                .iter()
                .map(|(n, _)| 24.0 + 7.0 * n.len() as f64)
                .sum::<f64>()
                / (W - LEFT))
                .floor();
        let height = TOP + PLOT_H + label_h + legend_rows * 18.0 + 16.0;
        header(&mut out, height, &self.title);
        let max = self
            .series
            .iter()
            .flat_map(|(_, bars)| bars.iter().flatten())
            .map(|b| b.ci.map_or(b.value, |(_, hi)| hi.max(b.value)))
            .fold(0.0, f64::max);
        let (ymax, step) = nice_axis(max);
        y_axis(&mut out, ymax, step, &self.y_label);
        let plot_w = W - LEFT - RIGHT;
        let n_cat = self.categories.len().max(1) as f64;
        let group_w = plot_w / n_cat;
        let n_series = self.series.len().max(1) as f64;
        let bar_w = (group_w * 0.8 / n_series).max(1.0);
        let y_of = |v: f64| TOP + PLOT_H - (v.max(0.0) / ymax * PLOT_H).min(PLOT_H);
        for (ci, cat) in self.categories.iter().enumerate() {
            let gx = LEFT + ci as f64 * group_w + group_w * 0.1;
            for (si, (name, bars)) in self.series.iter().enumerate() {
                let Some(Some(bar)) = bars.get(ci) else {
                    continue;
                };
                let x = gx + si as f64 * bar_w;
                let y = y_of(bar.value);
                let _ = write!(
                    out,
                    r#"<rect class="bar" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{c}"><title>{t}: {v}</title></rect>"#,
                    w = (bar_w - 1.0).max(0.5),
                    h = TOP + PLOT_H - y,
                    c = color(si),
                    t = esc(&format!("{cat} / {name}")),
                    v = fmt_num(bar.value),
                );
                if let Some((lo, hi)) = bar.ci {
                    let cx = x + bar_w / 2.0;
                    let _ = write!(
                        out,
                        r##"<line x1="{cx:.1}" x2="{cx:.1}" y1="{y1:.1}" y2="{y2:.1}" stroke="#222"/><line x1="{a:.1}" x2="{b:.1}" y1="{y1:.1}" y2="{y1:.1}" stroke="#222"/><line x1="{a:.1}" x2="{b:.1}" y1="{y2:.1}" y2="{y2:.1}" stroke="#222"/>"##,
                        y1 = y_of(lo),
                        y2 = y_of(hi),
                        a = cx - 3.0,
                        b = cx + 3.0,
                    );
                }
            }
            let lx = LEFT + (ci as f64 + 0.5) * group_w;
            let ly = TOP + PLOT_H + 14.0;
            if rotate {
                let _ = write!(
                    out,
                    r#"<text x="{lx:.1}" y="{ly:.1}" text-anchor="end" transform="rotate(-40 {lx:.1} {ly:.1})">{}</text>"#,
                    esc(cat)
                );
            } else {
                let _ = write!(
                    out,
                    r#"<text x="{lx:.1}" y="{ly:.1}" text-anchor="middle">{}</text>"#,
                    esc(cat)
                );
            }
        }
        let names: Vec<&str> = self.series.iter().map(|(n, _)| n.as_str()).collect();
        legend(&mut out, TOP + PLOT_H + label_h + 14.0, &names);
        out.push_str("</svg>");
        out
    }
}

impl LineChart {
    /// Renders the chart as a standalone SVG document.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let legend_rows =
            1.0 + (self.lines.iter().map(|l| 24.0 + 7.0 * l.name.len() as f64).sum::<f64>() / (W - LEFT)).floor();
        let height = TOP + PLOT_H + 44.0 + legend_rows * 18.0 + 10.0;
        header(&mut out, height, &self.title);
        let pts = || self.lines.iter().flat_map(|l| l.points.iter());
        let ymax_raw = pts().map(|p| p.1).fold(0.0, f64::max);
        let (ymax, step) = nice_axis(ymax_raw);
        y_axis(&mut out, ymax, step, &self.y_label);
        let tx = |x: f64| if self.log_x { x.max(1e-9).log2() } else { x };
        let xmin = pts().map(|p| tx(p.0)).fold(f64::INFINITY, f64::min);
        let xmax = pts().map(|p| tx(p.0)).fold(f64::NEG_INFINITY, f64::max);
        let (xmin, xmax) = if xmin.is_finite() && xmax > xmin {
            (xmin, xmax)
        } else {
            (0.0, 1.0)
        };
        let plot_w = W - LEFT - RIGHT;
        let xs = |x: f64| LEFT + (tx(x) - xmin) / (xmax - xmin) * plot_w;
        let ys = |y: f64| TOP + PLOT_H - (y.max(0.0) / ymax * PLOT_H).min(PLOT_H);
        // x ticks: the distinct x values when few (sweeps), else ~8 even ticks.
        let mut distinct: Vec<f64> = pts().map(|p| p.0).collect();
        distinct.sort_by(f64::total_cmp);
        distinct.dedup();
        let ticks: Vec<f64> = if distinct.len() <= 12 {
            distinct
        } else {
            let (m, s) = nice_axis(xmax);
            let mut t = Vec::new();
            let mut v = 0.0;
            while v <= m && !self.log_x {
                if v >= xmin {
                    t.push(v);
                }
                v += s;
            }
            t
        };
        for t in ticks {
            let x = xs(t);
            let _ = write!(
                out,
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="{b}" y2="{b2}" stroke="#444"/><text x="{x:.1}" y="{ty}" text-anchor="middle">{l}</text>"##,
                b = TOP + PLOT_H,
                b2 = TOP + PLOT_H + 4.0,
                ty = TOP + PLOT_H + 16.0,
                l = fmt_num(t),
            );
        }
        let _ = write!(
            out,
            r#"<text x="{x}" y="{y}" text-anchor="middle">{}</text>"#,
            esc(&self.x_label),
            x = LEFT + plot_w / 2.0,
            y = TOP + PLOT_H + 34.0,
        );
        for (i, line) in self.lines.iter().enumerate() {
            if line.points.is_empty() {
                continue;
            }
            let d: Vec<String> = line
                .points
                .iter()
                .map(|&(x, y)| format!("{:.1},{:.1}", xs(x), ys(y)))
                .collect();
            let _ = write!(
                out,
                r#"<polyline class="line" fill="none" stroke="{c}" stroke-width="2" points="{p}"><title>{t}</title></polyline>"#,
                c = color(i),
                p = d.join(" "),
                t = esc(&line.name),
            );
            if line.points.len() <= 40 {
                for &(x, y) in &line.points {
                    let _ = write!(
                        out,
                        r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{}"/>"#,
                        xs(x),
                        ys(y),
                        color(i)
                    );
                }
            }
            for (x, y, label) in &line.marks {
                let _ = write!(
                    out,
                    r##"<circle class="mark" cx="{cx:.1}" cy="{cy:.1}" r="6" fill="none" stroke="#d00" stroke-width="2"><title>{t}</title></circle><text x="{tx:.1}" y="{ty:.1}" fill="#d00">{t}</text>"##,
                    cx = xs(*x),
                    cy = ys(*y),
                    tx = xs(*x) + 8.0,
                    ty = ys(*y) - 8.0,
                    t = esc(label),
                );
            }
        }
        let names: Vec<&str> = self.lines.iter().map(|l| l.name.as_str()).collect();
        legend(&mut out, TOP + PLOT_H + 58.0, &names);
        out.push_str("</svg>");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_axis_table() {
        let cases = [
            (0.0, (1.0, 0.25)),        // empty chart still has an axis
            (9.0, (10.0, 2.0)),        // small values
            (1234.0, (1250.0, 250.0)), // rounds up to a multiple of a nice step
            (100_000.0, (100_000.0, 20_000.0)),
        ];
        for (max, want) in cases {
            assert_eq!(nice_axis(max), want, "axis for {max}");
        }
    }

    #[test]
    fn bar_chart_is_well_formed_and_escapes() {
        let chart = BarChart {
            title: "rate <by> protocol & workload".into(),
            y_label: "calls/s".into(),
            categories: vec!["inventory.xs".into(), "echo.8k".into()],
            series: vec![
                (
                    "rest".into(),
                    vec![
                        Some(Bar {
                            value: 100.0,
                            ci: Some((90.0, 110.0)),
                        }),
                        None,
                    ],
                ),
                (
                    "grpc".into(),
                    vec![
                        Some(Bar { value: 150.0, ci: None }),
                        Some(Bar { value: 20.0, ci: None }),
                    ],
                ),
            ],
        };
        let svg = chart.render();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches("class=\"bar\"").count(), 3);
        assert!(svg.contains("&lt;by&gt; protocol &amp; workload"));
        assert!(!svg.contains("<by>"));
    }

    #[test]
    fn line_chart_marks_points() {
        let chart = LineChart {
            title: "scaling".into(),
            x_label: "concurrency".into(),
            y_label: "calls/s".into(),
            log_x: true,
            lines: vec![Line {
                name: "rest".into(),
                points: vec![(2.0, 10.0), (4.0, 19.0), (8.0, 20.0)],
                marks: vec![(4.0, 19.0, "knee".into())],
            }],
        };
        let svg = chart.render();
        assert_eq!(svg.matches("class=\"line\"").count(), 1);
        assert_eq!(svg.matches("class=\"mark\"").count(), 1);
    }
}
