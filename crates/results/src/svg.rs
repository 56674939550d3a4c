//! Charts as standalone SVG, generated here so that reports need no
//! JavaScript, no CDN and no network: the HTML report inlines these strings
//! and the same strings are saved as `.svg` files (and rasterized to PNG).
//!
//! Three shapes cover every chart of a report: grouped bars (with 95%
//! interval whiskers), lines over a numeric x axis (with marked points, e.g.
//! the saturation point of a scaling curve), and [`Plot`]: lines in one or
//! more stacked panels that share an x axis of any [`Scale`] (linear, log, or
//! the percentile axis of latency distributions), with vertical [`Marker`]s
//! (the knee of a ramp) across every panel.
//!
//! The y scale of bars and lines is an argument of `render_scaled`, not a
//! field, so that every chart literal stays valid: latency charts pass
//! [`Scale::for_values`], which is logarithmic when the values span more
//! than a decade (docs/results.md, "Reports").

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

/// How values map onto an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Equal steps of value are equal distances.
    Linear,
    /// Equal ratios are equal distances (values must be positive; smaller
    /// ones sit on the axis's lower end).
    Log,
    /// Percentiles as fractions in `[0, 1)` on a `1 / (1 - p)` log axis:
    /// 90%, 99%, 99.9% and 99.99% are equally spaced (the HdrHistogram plot).
    Percentile,
}

impl Scale {
    /// `Log` when the positive values span more than a decade (the largest
    /// is more than 10 times the smallest), else `Linear`: the rule for
    /// every latency axis of a report.
    pub fn for_values(values: impl IntoIterator<Item = f64>) -> Scale {
        let (lo, hi) = positive_range(values);
        if lo.is_finite() && hi > 10.0 * lo {
            Scale::Log
        } else {
            Scale::Linear
        }
    }

    /// Where `v` lies on this scale's straight line.
    fn map(self, v: f64) -> f64 {
        match self {
            Scale::Linear => v,
            Scale::Log => v.max(f64::MIN_POSITIVE).log10(),
            Scale::Percentile => -(1.0 - v.clamp(0.0, 1.0 - 1e-12)).log10(),
        }
    }
}

/// The smallest and largest positive finite values (infinite and negative
/// infinite when there are none).
fn positive_range(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    values
        .into_iter()
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)))
}

fn is_power_of_ten(v: f64) -> bool {
    (v.log10() - v.log10().round()).abs() < 1e-9
}

/// One axis: label, scale, range and tick marks (value, label).
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// The axis title, with its unit.
    pub label: String,
    /// How values map onto it.
    pub scale: Scale,
    /// The value at the axis origin.
    pub min: f64,
    /// The value at its far end.
    pub max: f64,
    /// Tick marks: value and label.
    pub ticks: Vec<(f64, String)>,
}

impl Axis {
    /// A linear axis from 0 to a "nice" bound above `max`, ticks every nice step.
    pub fn linear(label: &str, max: f64) -> Axis {
        let (top, step) = nice_axis(max);
        let mut ticks = Vec::new();
        let mut v = 0.0;
        while v <= top + step * 1e-9 {
            ticks.push((v, fmt_num(v)));
            v += step;
        }
        Axis {
            label: label.into(),
            scale: Scale::Linear,
            min: 0.0,
            max: top,
            ticks,
        }
    }

    /// A log axis from the 1-2-5 step at or below `lo` to the one at or above
    /// `hi`; ticks at 1, 2 and 5 times each power of ten when the axis spans
    /// at most two and a half decades, at powers of ten otherwise (so that a
    /// short panel stays legible).
    pub fn log(label: &str, lo: f64, hi: f64) -> Axis {
        let lo = if lo.is_finite() && lo > 0.0 { lo } else { 1.0 };
        let hi = if hi.is_finite() && hi > lo { hi } else { lo * 10.0 };
        let steps = |d: i32| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(d));
        let d_lo = lo.log10().floor() as i32;
        let d_hi = hi.log10().ceil() as i32;
        let all: Vec<f64> = (d_lo..=d_hi).flat_map(steps).collect();
        let min = all.iter().copied().rfind(|v| *v <= lo * (1.0 + 1e-9)).unwrap_or(lo);
        let max = all.iter().copied().find(|v| *v >= hi * (1.0 - 1e-9)).unwrap_or(hi);
        let decades = (max / min).log10();
        let ticks = all
            .into_iter()
            .filter(|v| *v >= min * (1.0 - 1e-9) && *v <= max * (1.0 + 1e-9))
            .filter(|v| decades <= 2.5 + 1e-9 || is_power_of_ten(*v))
            .map(|v| (v, fmt_num(v)))
            .collect();
        Axis {
            label: label.into(),
            scale: Scale::Log,
            min,
            max,
            ticks,
        }
    }

    /// [`Axis::log`] when the values span more than a decade, else
    /// [`Axis::linear`] (see [`Scale::for_values`]).
    pub fn auto(label: &str, values: impl IntoIterator<Item = f64> + Clone) -> Axis {
        let (lo, hi) = positive_range(values.clone());
        match Scale::for_values(values) {
            Scale::Log => Axis::log(label, lo, hi),
            _ => Axis::linear(label, if hi.is_finite() { hi } else { 0.0 }),
        }
    }

    /// The percentile axis from 0% to `nines` nines (4: 99.99%), ticked at
    /// 0%, 50%, 90%, 99%, 99.9%, ... (values are fractions, 0.999 = 99.9%).
    pub fn percentile(label: &str, nines: u32) -> Axis {
        let nines = nines.max(1);
        let mut ticks = vec![(0.0, "0%".to_string()), (0.5, "50%".to_string())];
        for k in 1..=nines {
            let p = 1.0 - 10f64.powi(-(k as i32));
            let text = match k {
                1 => "90%".to_string(),
                _ => format!("99{}{}%", if k > 2 { "." } else { "" }, "9".repeat(k as usize - 2)),
            };
            ticks.push((p, text));
        }
        Axis {
            label: label.into(),
            scale: Scale::Percentile,
            min: 0.0,
            max: 1.0 - 10f64.powi(-(nines as i32)),
            ticks,
        }
    }

    /// Replaces every tick label with `f(value)` (e.g. bytes, percent).
    pub fn with_labels(mut self, f: impl Fn(f64) -> String) -> Axis {
        for t in &mut self.ticks {
            t.1 = f(t.0);
        }
        self
    }

    /// Where `v` falls, from 0 (origin) to 1 (far end), clamped.
    pub fn fraction(&self, v: f64) -> f64 {
        let (a, b) = (self.scale.map(self.min), self.scale.map(self.max));
        // A degenerate axis (or NaN ends) puts everything at the origin.
        if b.partial_cmp(&a) != Some(std::cmp::Ordering::Greater) || !v.is_finite() {
            return 0.0;
        }
        ((self.scale.map(v) - a) / (b - a)).clamp(0.0, 1.0)
    }
}

/// A vertical line across every panel of a [`Plot`] at `x`, with a label
/// (the knee of a ramp, a phase change).
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    /// Where, in x axis units.
    pub x: f64,
    /// What it marks.
    pub label: String,
}

/// One panel of a [`Plot`]: its own y axis and lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// The y axis.
    pub y: Axis,
    /// The lines drawn in it.
    pub lines: Vec<Line>,
}

/// Lines in stacked panels over one shared x axis, with vertical markers.
/// A line keeps its colour in every panel (colours follow line names).
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    /// Title above the chart.
    pub title: String,
    /// The shared x axis (drawn under the last panel).
    pub x: Axis,
    /// The panels, top to bottom.
    pub panels: Vec<Panel>,
    /// Vertical markers across every panel.
    pub markers: Vec<Marker>,
}

const PANEL_GAP: f64 = 26.0;

/// Draws a y axis (grid lines, tick labels, title, both axis lines) for a
/// plot area from `top` down `h` pixels.
fn draw_y_axis(out: &mut String, axis: &Axis, top: f64, h: f64) {
    let plot_w = W - LEFT - RIGHT;
    for (v, label) in &axis.ticks {
        let y = top + h - axis.fraction(*v) * h;
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" x2="{x2}" y1="{y:.1}" y2="{y:.1}" stroke="#e0e0e0"/><text class="ytick" x="{tx}" y="{ty:.1}" text-anchor="end">{l}</text>"##,
            x2 = LEFT + plot_w,
            tx = LEFT - 6.0,
            ty = y + 4.0,
            l = esc(label),
        );
    }
    let cy = top + h / 2.0;
    let scale = if axis.scale == Scale::Log { " (log scale)" } else { "" };
    let _ = write!(
        out,
        r##"<text class="ylabel" x="16" y="{cy}" text-anchor="middle" transform="rotate(-90 16 {cy})">{}{scale}</text><line x1="{LEFT}" x2="{LEFT}" y1="{top}" y2="{b}" stroke="#444"/><line x1="{LEFT}" x2="{r}" y1="{b}" y2="{b}" stroke="#444"/>"##,
        esc(&axis.label),
        b = top + h,
        r = W - RIGHT,
    );
}

fn legend_rows<'a>(names: impl Iterator<Item = &'a str>) -> f64 {
    1.0 + (names.map(|n| 24.0 + 7.0 * n.chars().count() as f64).sum::<f64>() / (W - LEFT)).floor()
}

/// Draws one line (polyline, its points when few, its marks) with colour `c`.
fn draw_line(out: &mut String, line: &Line, c: &str, xs: &dyn Fn(f64) -> f64, ys: &dyn Fn(f64) -> f64) {
    let pts: Vec<(f64, f64)> = line
        .points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    if pts.is_empty() {
        return;
    }
    let d: Vec<String> = pts.iter().map(|&(x, y)| format!("{:.1},{:.1}", xs(x), ys(y))).collect();
    let _ = write!(
        out,
        r#"<polyline class="line" fill="none" stroke="{c}" stroke-width="2" points="{p}"><title>{t}</title></polyline>"#,
        p = d.join(" "),
        t = esc(&line.name),
    );
    if pts.len() <= 40 {
        for &(x, y) in &pts {
            let _ = write!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{c}"/>"#,
                xs(x),
                ys(y)
            );
        }
    }
    for (x, y, label) in &line.marks {
        // A label that would run past the right edge goes left of its mark.
        let (tx, anchor) = if xs(*x) + 8.0 + 7.0 * label.chars().count() as f64 > W {
            (xs(*x) - 8.0, "end")
        } else {
            (xs(*x) + 8.0, "start")
        };
        let _ = write!(
            out,
            r##"<circle class="mark" cx="{cx:.1}" cy="{cy:.1}" r="6" fill="none" stroke="#d00" stroke-width="2"><title>{t}</title></circle><text x="{tx:.1}" y="{ty:.1}" fill="#d00" text-anchor="{anchor}">{t}</text>"##,
            cx = xs(*x),
            cy = ys(*y),
            ty = ys(*y) - 8.0,
            t = esc(label),
        );
    }
}

impl Plot {
    /// Renders the plot as a standalone SVG document.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let n = self.panels.len().max(1) as f64;
        let panel_h = if n > 1.0 { 150.0 } else { PLOT_H };
        let names: Vec<&str> = dedup_names(self.panels.iter().flat_map(|p| p.lines.iter().map(|l| l.name.as_str())));
        let bottom = TOP + n * panel_h + (n - 1.0) * PANEL_GAP;
        let height = bottom + 44.0 + legend_rows(names.iter().copied()) * 18.0 + 10.0;
        header(&mut out, height, &self.title);
        let plot_w = W - LEFT - RIGHT;
        let xs = |v: f64| LEFT + self.x.fraction(v) * plot_w;
        for (i, panel) in self.panels.iter().enumerate() {
            let top = TOP + i as f64 * (panel_h + PANEL_GAP);
            draw_y_axis(&mut out, &panel.y, top, panel_h);
            for (v, _) in &self.x.ticks {
                let x = xs(*v);
                let _ = write!(
                    out,
                    r##"<line x1="{x:.1}" x2="{x:.1}" y1="{top}" y2="{b}" stroke="#f0f0f0"/>"##,
                    b = top + panel_h,
                );
            }
            let ys = |v: f64| top + panel_h - panel.y.fraction(v) * panel_h;
            for line in &panel.lines {
                let c = color(names.iter().position(|n| *n == line.name).unwrap_or(0));
                draw_line(&mut out, line, c, &xs, &ys);
            }
        }
        for (v, label) in &self.x.ticks {
            let x = xs(*v);
            // A label at the far right ends at its tick rather than past the image.
            let anchor = if x + 3.5 * label.chars().count() as f64 > W {
                "end"
            } else {
                "middle"
            };
            let _ = write!(
                out,
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="{bottom}" y2="{b2}" stroke="#444"/><text class="xtick" x="{x:.1}" y="{ty}" text-anchor="{anchor}">{l}</text>"##,
                b2 = bottom + 4.0,
                ty = bottom + 16.0,
                l = esc(label),
            );
        }
        let scale = if self.x.scale == Scale::Log { " (log scale)" } else { "" };
        let _ = write!(
            out,
            r#"<text class="xlabel" x="{x}" y="{y}" text-anchor="middle">{}{scale}</text>"#,
            esc(&self.x.label),
            x = LEFT + plot_w / 2.0,
            y = bottom + 34.0,
        );
        for m in &self.markers {
            let x = xs(m.x);
            let _ = write!(
                out,
                r##"<line class="marker" x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{bottom}" stroke="#d00" stroke-width="1.5" stroke-dasharray="6 4"><title>{t}</title></line><text class="marker-label" x="{tx:.1}" y="{ty}" fill="#d00">{t}</text>"##,
                tx = x + 4.0,
                ty = TOP + 12.0,
                t = esc(&m.label),
            );
        }
        legend(&mut out, bottom + 58.0, &names);
        out.push_str("</svg>");
        out
    }
}

fn dedup_names<'a>(it: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for n in it {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
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
    /// Renders the chart as a standalone SVG document, y axis linear from 0.
    pub fn render(&self) -> String {
        self.render_scaled(Scale::Linear)
    }

    /// The values the y axis must show: bars and interval ends.
    fn values(&self) -> impl Iterator<Item = f64> + Clone + '_ {
        self.series
            .iter()
            .flat_map(|(_, bars)| bars.iter().flatten())
            .flat_map(|b| [Some(b.value), b.ci.map(|c| c.0), b.ci.map(|c| c.1)])
            .flatten()
    }

    /// Renders with a linear or log y axis (`Scale::Percentile` draws linear).
    /// Bars rise from the axis origin; interval whiskers are clipped to the
    /// plot (never below zero, nor below a log axis's origin).
    pub fn render_scaled(&self, scale: Scale) -> String {
        let mut out = String::new();
        let max_label = self.categories.iter().map(|c| c.chars().count()).max().unwrap_or(0) as f64;
        let rotate = self.categories.len() > 4 || max_label > 14.0;
        let label_h = if rotate {
            (max_label * 6.5).min(170.0) + 10.0
        } else {
            24.0
        };
        let rows = legend_rows(self.series.iter().map(|(n, _)| n.as_str()));
        let height = TOP + PLOT_H + label_h + rows * 18.0 + 16.0;
        header(&mut out, height, &self.title);
        let axis = if scale == Scale::Log {
            let (lo, hi) = positive_range(self.values());
            Axis::log(&self.y_label, lo, hi)
        } else {
            Axis::linear(&self.y_label, self.values().fold(0.0, f64::max))
        };
        draw_y_axis(&mut out, &axis, TOP, PLOT_H);
        let plot_w = W - LEFT - RIGHT;
        let n_cat = self.categories.len().max(1) as f64;
        let group_w = plot_w / n_cat;
        let n_series = self.series.len().max(1) as f64;
        let bar_w = (group_w * 0.8 / n_series).max(1.0);
        let y_of = |v: f64| TOP + PLOT_H - axis.fraction(v.max(0.0)) * PLOT_H;
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
                        r##"<line class="ci" x1="{cx:.1}" x2="{cx:.1}" y1="{y1:.1}" y2="{y2:.1}" stroke="#222"/><line x1="{a:.1}" x2="{b:.1}" y1="{y1:.1}" y2="{y1:.1}" stroke="#222"/><line x1="{a:.1}" x2="{b:.1}" y1="{y2:.1}" y2="{y2:.1}" stroke="#222"/>"##,
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
    /// Renders the chart as a standalone SVG document, y axis linear from 0.
    pub fn render(&self) -> String {
        self.render_scaled(Scale::Linear)
    }

    /// Renders with a linear or log y axis (`Scale::Percentile` draws linear).
    pub fn render_scaled(&self, scale: Scale) -> String {
        self.plot(scale).render()
    }

    /// The chart as a one-panel [`Plot`].
    pub fn plot(&self, scale: Scale) -> Plot {
        let pts = || self.lines.iter().flat_map(|l| l.points.iter());
        let y = if scale == Scale::Log {
            let (lo, hi) = positive_range(pts().map(|p| p.1));
            Axis::log(&self.y_label, lo, hi)
        } else {
            Axis::linear(&self.y_label, pts().map(|p| p.1).fold(0.0, f64::max))
        };
        let x_scale = if self.log_x { Scale::Log } else { Scale::Linear };
        let xs: Vec<f64> = pts()
            .map(|p| p.0)
            .filter(|x| x.is_finite() && (!self.log_x || *x > 0.0))
            .collect();
        let xmin = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let xmax = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (xmin, xmax) = if xmin.is_finite() && xmax > xmin {
            (xmin, xmax)
        } else if self.log_x && xmin.is_finite() {
            (xmin, xmin * 2.0)
        } else {
            (0.0, 1.0)
        };
        // x ticks: the distinct x values when few (sweeps), else ~8 even ticks.
        let mut distinct = xs.clone();
        distinct.sort_by(f64::total_cmp);
        distinct.dedup();
        let ticks: Vec<(f64, String)> = if distinct.len() <= 12 {
            distinct.into_iter().map(|v| (v, fmt_num(v))).collect()
        } else if self.log_x {
            Axis::log("", xmin, xmax)
                .ticks
                .into_iter()
                .filter(|(v, _)| *v >= xmin && *v <= xmax)
                .collect()
        } else {
            Axis::linear("", xmax)
                .ticks
                .into_iter()
                .filter(|(v, _)| *v >= xmin)
                .collect()
        };
        Plot {
            title: self.title.clone(),
            x: Axis {
                label: self.x_label.clone(),
                scale: x_scale,
                min: xmin,
                max: xmax,
                ticks,
            },
            panels: vec![Panel {
                y,
                lines: self.lines.clone(),
            }],
            markers: vec![],
        }
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
