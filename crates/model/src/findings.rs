//! "Findings vs the study": a study preset states what its study found as
//! claims over its points (or a point and a number), and every run of it
//! judges each claim from its own measurements (docs/studies.md).
//!
//! A claim compares one metric of point `a` with point `b`: `a > b`, `a < b`
//! or `a = b` within a tolerance; a **trend** compares two such ratios,
//! `(a2 / b2) / (a / b)` against 1 ("the ratio rises"). The judgement uses
//! the ratio and its 95% interval on the log scale, paired by repetition
//! when every point was measured in the same repetitions
//! (`stats::log_contrast`), never the point estimates alone. A verdict has
//! two parts:
//!
//! - **direction**: holds when the whole interval is on the claimed side,
//!   does not hold when it is wholly on the other side, inconclusive when it
//!   straddles the line; with one repetition there is no interval, and the
//!   point estimate only agrees or disagrees (untested);
//! - **size**, when the study states one (`about`, `at_least`, `at_most`):
//!   consistent, smaller, larger or inconclusive.
//!
//! The headline is `holds` only when the direction holds and the size is
//! consistent or not stated. A claim whose condition the run lacked (more
//! CPUs than the server had, a link-limited figure on loopback, calls lost
//! to protobench's own timeout) is `not reproducible here`, with the reason.
//! Absolute figures are never compared (the study's hardware is not ours):
//! the study's own figures are shown beside ours as context.

use serde::{Deserialize, Serialize};

use crate::format::{fmt_bytes, fmt_ns, fmt_rate};
use crate::load::{ConnectionPolicy, Protocol};
use crate::run::{PointAggregate, PointConfig};
use crate::stats::{ContrastError, Pairing, Summary, log_contrast};

/// A metric a claim is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Successful calls per second.
    Rate,
    /// Mean latency.
    Mean,
    /// Median latency.
    P50,
    /// 90th percentile latency.
    P90,
    /// 95th percentile latency.
    P95,
    /// 99th percentile latency.
    P99,
    /// Fraction of calls that failed.
    ErrorRate,
    /// Server CPU time per call.
    CpuPerCall,
    /// Peak server memory.
    Memory,
    /// Bytes the client received per call.
    BytesReceivedPerCall,
    /// `ramp`: calls per second at the knee (the saturation point).
    KneeRate,
    /// `ramp`: callers at the knee; `discover`: the best concurrency.
    KneeUsers,
}

impl Metric {
    /// Every metric, in the order of [`Metric::name`]'s list.
    pub const ALL: [Metric; 12] = [
        Metric::Rate,
        Metric::Mean,
        Metric::P50,
        Metric::P90,
        Metric::P95,
        Metric::P99,
        Metric::ErrorRate,
        Metric::CpuPerCall,
        Metric::Memory,
        Metric::BytesReceivedPerCall,
        Metric::KneeRate,
        Metric::KneeUsers,
    ];

    /// The name in presets.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Rate => "rate",
            Metric::Mean => "mean",
            Metric::P50 => "p50",
            Metric::P90 => "p90",
            Metric::P95 => "p95",
            Metric::P99 => "p99",
            Metric::ErrorRate => "error_rate",
            Metric::CpuPerCall => "cpu_per_call",
            Metric::Memory => "memory",
            Metric::BytesReceivedPerCall => "bytes_received_per_call",
            Metric::KneeRate => "knee_rate",
            Metric::KneeUsers => "knee_users",
        }
    }

    /// The metric of a point across its repetitions.
    pub fn of(self, a: &PointAggregate) -> Option<&Summary> {
        match self {
            Metric::Rate => a.rate.as_ref(),
            Metric::Mean => a.mean_ns.as_ref(),
            Metric::P50 => a.p50_ns.as_ref(),
            Metric::P90 => a.p90_ns.as_ref(),
            Metric::P95 => a.p95_ns.as_ref(),
            Metric::P99 => a.p99_ns.as_ref(),
            Metric::ErrorRate => a.error_fraction.as_ref(),
            Metric::CpuPerCall => a.cpu_ns_per_call.as_ref(),
            Metric::Memory => a.rss_peak_bytes.as_ref(),
            Metric::BytesReceivedPerCall => a.bytes_received_per_call.as_ref(),
            Metric::KneeRate => a.knee_rate.as_ref(),
            Metric::KneeUsers => a.chosen_concurrency.as_ref(),
        }
    }

    /// A value of this metric for people (`1,234/s`, `1.20ms`, `20.0%`).
    pub fn format(self, v: f64) -> String {
        match self {
            Metric::Rate | Metric::KneeRate => format!("{}/s", fmt_rate(v)),
            Metric::KneeUsers => format!("{v:.0} users"),
            Metric::ErrorRate => format!("{:.1}%", v * 100.0),
            Metric::Memory | Metric::BytesReceivedPerCall => fmt_bytes(v),
            _ => fmt_ns(v),
        }
    }
}

impl std::str::FromStr for Metric {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown metric `{s}`"))
    }
}

/// Which point of the run a side of a claim means: every given field must
/// match, and exactly one point may match.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Selector {
    /// Server (`java-spring`, `python:flask`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// Workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<bool>,
    /// Calls in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// Open-loop target rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Injected failure fraction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_rate: Option<f64>,
    /// Server CPU limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_limit: Option<f64>,
    /// Connection policy (`per-caller`, `per-call` or a count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<ConnectionPolicy>,
    /// Network, as the preset writes it (`loopback` also matches a point of
    /// a preset without networks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
}

impl Selector {
    /// Whether `p` has every field this selector gives.
    pub fn matches(&self, p: &PointConfig) -> bool {
        self.server.as_ref().is_none_or(|s| *s == p.server)
            && self.protocol.is_none_or(|x| x == p.protocol)
            && self.workload.as_ref().is_none_or(|w| *w == p.workload)
            && self.tls.is_none_or(|t| t == p.tls)
            && self.concurrency.is_none_or(|c| c == p.concurrency)
            && self.rate.is_none_or(|r| Some(r) == p.rate)
            && self.failure_rate.is_none_or(|f| f == p.failure_rate)
            && self.cpu_limit.is_none_or(|c| Some(c) == p.cpu_limit)
            && self.connections.is_none_or(|c| c == p.policy())
            && self.network.as_ref().is_none_or(|n| match &p.network {
                Some(net) => net == n,
                None => n == "loopback",
            })
    }

    /// `server protocol workload ...`, the fields given.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Some(s) = &self.server {
            parts.push(s.clone());
        }
        if let Some(p) = self.protocol {
            parts.push(p.to_string());
        }
        if let Some(w) = &self.workload {
            parts.push(w.clone());
        }
        if let Some(t) = self.tls {
            parts.push(if t { "tls" } else { "clear" }.into());
        }
        if let Some(c) = self.concurrency {
            parts.push(format!("c={c}"));
        }
        if let Some(r) = self.rate {
            parts.push(format!("rate={r}"));
        }
        if let Some(f) = self.failure_rate {
            parts.push(format!("fail={}%", f * 100.0));
        }
        if let Some(c) = self.cpu_limit {
            parts.push(format!("cpu={c}"));
        }
        match self.connections {
            Some(ConnectionPolicy::PerCaller) => parts.push("conn=per-caller".into()),
            Some(ConnectionPolicy::PerCall) => parts.push("conn=per-call".into()),
            Some(ConnectionPolicy::Shared(n)) => parts.push(format!("conn={n}")),
            None => {}
        }
        if let Some(n) = &self.network {
            parts.push(format!("net={n}"));
        }
        parts.join(" ")
    }
}

/// The other side of a claim: a point, or a number in the metric's unit
/// (calls/s, ns, a fraction, bytes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Operand {
    /// A number.
    Value(f64),
    /// A point.
    Point(Selector),
}

/// What the claim says of `a` against `b`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    /// `a` is larger.
    Greater,
    /// `a` is smaller.
    Less,
    /// `a` equals `b` within a relative tolerance (0.10 = ±10%).
    Equal {
        /// Relative tolerance.
        tolerance: f64,
    },
}

impl Expect {
    /// `>`, `<` or `= ±10%`.
    pub fn symbol(&self) -> String {
        match self {
            Expect::Greater => ">".into(),
            Expect::Less => "<".into(),
            Expect::Equal { tolerance } => format!("= ±{}%", tolerance * 100.0),
        }
    }
}

/// How far an `about` size may be from the study's and still be called
/// consistent: the interval of the ratio must lie within `[X / 1.5, X · 1.5]`
/// (docs/studies.md, "Sizes", says why 1.5).
pub const ABOUT_FACTOR: f64 = 1.5;

/// The size a claim states for its ratio (`a / b`, or for a trend the ratio
/// of ratios).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeClaim {
    /// About this ratio, within [`ABOUT_FACTOR`] either way.
    About(f64),
    /// At least this ratio.
    AtLeast(f64),
    /// At most this ratio.
    AtMost(f64),
}

impl SizeClaim {
    /// `about 20x`, `at least 2x`, `at most 0.5x`.
    pub fn describe(&self) -> String {
        match self {
            SizeClaim::About(x) => format!("about {}x", crate::format::plain_number(*x)),
            SizeClaim::AtLeast(x) => format!("at least {}x", crate::format::plain_number(*x)),
            SizeClaim::AtMost(x) => format!("at most {}x", crate::format::plain_number(*x)),
        }
    }
}

/// What a claim is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClaimKind {
    /// A finding of the study.
    #[default]
    Finding,
    /// A check that protobench's failure injector did what the study's
    /// setup did (e.g. 20% injected failures show as about 20% errors): it
    /// holds by construction and says nothing about the study's finding.
    InjectorCheck,
}

/// A condition of the study a claim needs, without which this run cannot
/// test it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Need {
    /// The study's figure was limited by its network link: judge it on an
    /// emulated link, not on loopback.
    Link,
    /// The study measured its own application (its database, schema and
    /// query mix) and the figure follows from what that application does
    /// per request, which the contract does not model: kept as the study's
    /// record, never judged here.
    Application,
}

/// One claim of a study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// What the study found, in one line.
    pub claim: String,
    /// Where the study says so: section, figure, table or page (empty in
    /// runs stored before sources were required).
    #[serde(default)]
    pub source: String,
    /// The metric compared.
    pub metric: Metric,
    /// The first point.
    pub a: Selector,
    /// The second point, or a number.
    pub b: Operand,
    /// A trend: the first point of the later pair. The claim is then about
    /// `(a2 / b2) / (a / b)`: `>` says the ratio rises from `a / b` to
    /// `a2 / b2`, `<` that it falls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a2: Option<Selector>,
    /// A trend: the second point of the later pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b2: Option<Selector>,
    /// The claimed relation of `a` to `b` (or of the later ratio to the first).
    pub expect: Expect,
    /// The size the study states, if it states one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<SizeClaim>,
    /// Why an equality's tolerance is what it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// A finding of the study or a check of the failure injector.
    #[serde(default, skip_serializing_if = "is_default")]
    pub kind: ClaimKind,
    /// Conditions of the study the claim needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<Need>,
    /// Calls lost to protobench's call timeout are part of what the claim
    /// is about (the study lost calls too): do not refuse the claim for
    /// them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timeouts_expected: bool,
    /// The study's own figures for `a` and `b` (context only; its hardware
    /// is not ours).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub study: Vec<f64>,
}

fn is_default(k: &ClaimKind) -> bool {
    *k == ClaimKind::default()
}

impl Finding {
    /// `a / b` or, for a trend, `(a2 / b2) / (a / b)`.
    pub fn quantity(&self) -> &'static str {
        if self.a2.is_some() { "(a2/b2)/(a/b)" } else { "a/b" }
    }

    /// Every point the claim reads, `a` first (`b` may be a number, then
    /// the trend's `a2` and `b2`).
    pub fn selectors(&self) -> Vec<&Selector> {
        let mut all = vec![&self.a];
        if let Operand::Point(sel) = &self.b {
            all.push(sel);
        }
        all.extend(self.a2.iter().chain(self.b2.iter()));
        all
    }

    /// The relation in one short line: `rate: a > b, about 20x`.
    pub fn relation(&self) -> String {
        let mut s = if self.a2.is_some() {
            let word = match self.expect {
                Expect::Greater => "rises to",
                Expect::Less => "falls to",
                Expect::Equal { .. } => "stays at",
            };
            format!("{}: a/b {word} a2/b2", self.metric.name())
        } else {
            format!("{}: a {} b", self.metric.name(), self.expect.symbol())
        };
        if let Some(size) = &self.size {
            s.push_str(", ");
            s.push_str(&size.describe());
        }
        s
    }
}

/// The direction part of a verdict: is the claimed relation on the right
/// side of 1 (or, for `=`, within its tolerance)?
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The 95% interval lies wholly on the claimed side.
    Holds,
    /// The interval lies wholly on the other side.
    DoesNotHold,
    /// The interval straddles the line: this run cannot tell.
    Inconclusive,
    /// One repetition: the point estimate agrees with the claim; not tested.
    Agrees,
    /// One repetition: the point estimate disagrees; not tested.
    Disagrees,
    /// A point is not in this run, or was not measured.
    NotMeasured,
    /// The run lacked a condition the claim needs (reason in the judgement).
    NotReproducible,
}

impl Direction {
    /// For tables.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Holds => "holds",
            Direction::DoesNotHold => "does not hold",
            Direction::Inconclusive => "inconclusive",
            Direction::Agrees => "agrees (untested)",
            Direction::Disagrees => "disagrees (untested)",
            Direction::NotMeasured => "not measured",
            Direction::NotReproducible => "not reproducible here",
        }
    }
}

/// The size part of a verdict: is the ratio the size the study states?
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeVerdict {
    /// The interval lies within the stated size.
    Consistent,
    /// The interval lies wholly below it.
    Smaller,
    /// The interval lies wholly above it.
    Larger,
    /// The interval reaches both inside and outside it.
    Inconclusive,
    /// The claim states no size.
    NotStated,
    /// No interval (one repetition, or not measured): not judged.
    Untested,
}

impl SizeVerdict {
    /// For tables.
    pub fn name(self) -> &'static str {
        match self {
            SizeVerdict::Consistent => "consistent",
            SizeVerdict::Smaller => "smaller",
            SizeVerdict::Larger => "larger",
            SizeVerdict::Inconclusive => "inconclusive",
            SizeVerdict::NotStated => "not stated",
            SizeVerdict::Untested => "untested",
        }
    }
}

/// The headline outcome of one claim in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The direction holds and the size is consistent or not stated.
    Holds,
    /// The direction holds, but the ratio is decidedly smaller or larger
    /// than the study's.
    SizeDiffers,
    /// The direction does not hold.
    DoesNotHold,
    /// The direction, or the size, cannot be told from this run.
    Inconclusive,
    /// One repetition: the point estimates agree with the claim; not tested.
    Agrees,
    /// One repetition: the point estimates disagree; not tested.
    Disagrees,
    /// A point is not in this run, or was not measured.
    NotMeasured,
    /// The run lacked a condition the claim needs.
    NotReproducible,
}

impl Verdict {
    /// For tables.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::SizeDiffers => "direction holds, size differs",
            Verdict::DoesNotHold => "does not hold",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Agrees => "agrees (1 repetition, untested)",
            Verdict::Disagrees => "disagrees (1 repetition, untested)",
            Verdict::NotMeasured => "not measured",
            Verdict::NotReproducible => "not reproducible here",
        }
    }

    /// The headline of a direction and a size: `holds` only when the
    /// direction holds and the size is consistent or not stated.
    pub fn of(direction: Direction, size: SizeVerdict) -> Verdict {
        match (direction, size) {
            (Direction::Holds, SizeVerdict::Consistent | SizeVerdict::NotStated) => Verdict::Holds,
            (Direction::Holds, SizeVerdict::Smaller | SizeVerdict::Larger) => Verdict::SizeDiffers,
            (Direction::Holds, SizeVerdict::Inconclusive | SizeVerdict::Untested) => Verdict::Inconclusive,
            (Direction::DoesNotHold, _) => Verdict::DoesNotHold,
            (Direction::Inconclusive, _) => Verdict::Inconclusive,
            (Direction::Agrees, _) => Verdict::Agrees,
            (Direction::Disagrees, _) => Verdict::Disagrees,
            (Direction::NotMeasured, _) => Verdict::NotMeasured,
            (Direction::NotReproducible, _) => Verdict::NotReproducible,
        }
    }
}

/// A claim judged against one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    /// The claim.
    pub finding: Finding,
    /// The headline outcome ([`Verdict::of`] the two parts).
    pub verdict: Verdict,
    /// Whether the claimed relation holds.
    pub direction: Direction,
    /// Whether the ratio is the size the study states.
    pub size: SizeVerdict,
    /// Median of `a` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a: Option<f64>,
    /// Median of `b` here (or the claim's number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<f64>,
    /// The judged ratio here: `a / b`, or for a trend `(a2 / b2) / (a / b)`
    /// (the centre of its interval on the log scale, `stats::log_contrast`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// Its 95% interval (none with one repetition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_ci: Option<(f64, f64)>,
    /// The interval comes from per-repetition ratios (every point measured
    /// in the same interleaved repetitions).
    #[serde(default)]
    pub paired: bool,
    /// Why, in one line.
    pub reason: String,
}

impl Judgement {
    /// The study's figures: `4,000/s vs 2,300/s (1.74x)`.
    pub fn study_cell(&self) -> String {
        let m = self.finding.metric;
        match self.finding.study.as_slice() {
            [a, b] if *b != 0.0 => format!("{} vs {} ({:.2}x)", m.format(*a), m.format(*b), a / b),
            [a, ..] => m.format(*a),
            [] => "-".into(),
        }
    }

    /// Ours: `5,432/s vs 3,100/s = 1.75x [1.60, 1.90] paired`; a trend
    /// shows the ratio of ratios alone.
    pub fn here_cell(&self) -> String {
        let m = self.finding.metric;
        let ci = self.ratio_ci.map_or(String::new(), |(lo, hi)| {
            format!(" [{lo:.2}, {hi:.2}]{}", if self.paired { " paired" } else { "" })
        });
        match (self.a, self.b, self.ratio) {
            (_, _, Some(r)) if self.finding.a2.is_some() => format!("{} = {r:.2}x{ci}", self.finding.quantity()),
            (Some(a), Some(b), Some(r)) => format!("{} vs {} = {r:.2}x{ci}", m.format(a), m.format(b)),
            _ => "-".into(),
        }
    }

    /// The headline as a table shows it; an injector check says so.
    pub fn verdict_cell(&self) -> String {
        let v = match self.verdict {
            Verdict::NotMeasured | Verdict::NotReproducible => format!("{}: {}", self.verdict.name(), self.reason),
            v => v.name().to_string(),
        };
        match self.finding.kind {
            ClaimKind::InjectorCheck => format!("injector check: {v}"),
            ClaimKind::Finding => v,
        }
    }
}

/// What the run had that claims may need: facts about the run as a whole
/// (each point's own settings are in its config).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conditions {
    /// The CPUs the servers could run on (their pinned set, else the
    /// machine's); `None` when not known.
    pub server_cpus: Option<usize>,
}

/// Judges every claim against the points of a run.
pub fn judge(findings: &[Finding], points: &[PointAggregate], conditions: &Conditions) -> Vec<Judgement> {
    findings.iter().map(|f| judge_one(f, points, conditions)).collect()
}

fn find<'a>(sel: &Selector, points: &'a [PointAggregate]) -> Result<&'a PointAggregate, String> {
    let found: Vec<&PointAggregate> = points.iter().filter(|p| sel.matches(&p.config)).collect();
    match found.as_slice() {
        [one] => Ok(one),
        [] => Err(format!("no point {} in this run", sel.describe())),
        many => Err(format!("{} points match {}", many.len(), sel.describe())),
    }
}

/// Why the run cannot test the claim at these points, if it cannot.
fn refusal(f: &Finding, points: &[&PointAggregate], conditions: &Conditions) -> Option<String> {
    for p in points {
        if let (Some(limit), Some(cpus)) = (p.config.cpu_limit, conditions.server_cpus)
            && limit > cpus as f64
        {
            return Some(format!(
                "{} asks for {} CPUs; the server had {cpus}",
                p.config.label(),
                crate::format::plain_number(limit)
            ));
        }
    }
    if f.needs.contains(&Need::Application) {
        return Some(
            "the study measured its own application (its database and query mix); the contract's data and calls are not it"
                .to_owned(),
        );
    }
    if f.needs.contains(&Need::Link)
        && let Some(p) = points
            .iter()
            .find(|p| p.config.network.as_deref().is_none_or(|n| n == "loopback"))
    {
        return Some(format!(
            "the study's figure was limited by its network link; {} ran on loopback (judge it on an emulated link)",
            p.config.label()
        ));
    }
    if f.metric == Metric::CpuPerCall
        && let Some(p) = points.iter().find(|p| p.server_cpu_coarse)
    {
        return Some(format!(
            "{}'s server used under {} s of CPU in a repetition's window: counted in 10 ms clock ticks, its CPU per call is not known to 10% (judge cost at a higher rate)",
            p.config.label(),
            crate::format::plain_number(crate::run::SERVER_CPU_RESOLUTION_NS as f64 / 1e9)
        ));
    }
    if !f.timeouts_expected
        && let Some(p) = points.iter().find(|p| p.timeouts > 0)
    {
        return Some(format!(
            "{} lost {} calls to protobench's call timeout and the study lost none (raise the preset's timeout)",
            p.config.label(),
            p.timeouts
        ));
    }
    None
}

/// The size part, from the judged interval.
fn size_verdict(size: Option<SizeClaim>, ci: Option<(f64, f64)>) -> SizeVerdict {
    let Some(size) = size else {
        return SizeVerdict::NotStated;
    };
    let Some((lo, hi)) = ci else {
        return SizeVerdict::Untested;
    };
    let (low, high) = match size {
        SizeClaim::About(x) => (x / ABOUT_FACTOR, x * ABOUT_FACTOR),
        SizeClaim::AtLeast(x) => (x, f64::INFINITY),
        SizeClaim::AtMost(x) => (0.0, x),
    };
    if lo >= low && hi <= high {
        SizeVerdict::Consistent
    } else if hi < low {
        SizeVerdict::Smaller
    } else if lo > high {
        SizeVerdict::Larger
    } else {
        SizeVerdict::Inconclusive
    }
}

// Longer than the ~120-line guide: the verdict's steps in the order they
// apply (refusals by condition, the two points, direction, size, trend),
// each returning early with the judgement so far; split, each step would
// need the whole judgement passed in and out.
fn judge_one(f: &Finding, points: &[PointAggregate], conditions: &Conditions) -> Judgement {
    let mut j = Judgement {
        finding: f.clone(),
        verdict: Verdict::NotMeasured,
        direction: Direction::NotMeasured,
        size: if f.size.is_some() {
            SizeVerdict::Untested
        } else {
            SizeVerdict::NotStated
        },
        a: None,
        b: None,
        ratio: None,
        ratio_ci: None,
        paired: false,
        reason: String::new(),
    };
    let mut found: Vec<&PointAggregate> = Vec::new();
    let mut summaries: Vec<Summary> = Vec::new();
    for sel in f.selectors() {
        match find(sel, points).map(|p| (p, f.metric.of(p))) {
            Ok((p, Some(s))) => {
                found.push(p);
                summaries.push(s.clone());
            }
            Ok((_, None)) => {
                j.reason = format!("{} was not measured", sel.describe());
                return j;
            }
            Err(e) => {
                j.reason = e;
                return j;
            }
        }
    }
    j.a = Some(summaries[0].median);
    j.b = match &f.b {
        Operand::Value(v) => Some(*v),
        Operand::Point(_) => Some(summaries[1].median),
    };
    if let Some(why) = refusal(f, &found, conditions) {
        j.direction = Direction::NotReproducible;
        j.verdict = Verdict::NotReproducible;
        j.reason = why;
        return j;
    }
    // The judged quantity as a log-scale contrast of the points' metrics.
    let (terms, divisor): (Vec<(f64, &Summary)>, f64) = match (&f.b, summaries.as_slice()) {
        (Operand::Value(v), [a]) => (vec![(1.0, a)], *v),
        (Operand::Point(_), [a, b]) => (vec![(1.0, a), (-1.0, b)], 1.0),
        (Operand::Point(_), [a, b, a2, b2]) => (vec![(1.0, a2), (-1.0, b2), (-1.0, a), (1.0, b)], 1.0),
        _ => {
            j.reason = "a trend needs four points: a, b, a2 and b2".into();
            return j;
        }
    };
    if !(divisor > 0.0 && divisor.is_finite()) {
        j.reason = format!("b is {divisor}: no ratio");
        return j;
    }
    let r = match log_contrast(&terms, Pairing::SameRepetitions) {
        Ok(r) => r.divided_by(divisor),
        Err(ContrastError::NotPositive { value }) => {
            // No logarithm: the ratio of medians, without an interval.
            let med = |sign: f64, s: &Summary| s.median.powf(sign);
            let r: f64 = terms.iter().map(|(sign, s)| med(*sign, s)).product::<f64>() / divisor;
            j.reason = format!("a value is {value}: no interval on the log scale");
            if r.is_finite() {
                j.ratio = Some(r);
            }
            j.direction = Direction::Inconclusive;
            j.verdict = Verdict::Inconclusive;
            return j;
        }
        Err(e) => {
            j.reason = e.to_string();
            return j;
        }
    };
    j.ratio = Some(r.ratio);
    j.ratio_ci = r.interval();
    j.paired = r.paired;
    let (low, high) = match f.expect {
        Expect::Greater => (1.0, f64::INFINITY),
        Expect::Less => (0.0, 1.0),
        Expect::Equal { tolerance } => (1.0 / (1.0 + tolerance), 1.0 + tolerance),
    };
    let line = match f.expect {
        Expect::Greater | Expect::Less => "1".to_string(),
        Expect::Equal { .. } => format!("[{low:.2}, {high:.2}]"),
    };
    let q = f.quantity();
    match j.ratio_ci {
        Some((lo, hi)) => {
            let how = if r.paired { "paired " } else { "" };
            if lo >= low && hi <= high {
                j.direction = Direction::Holds;
                j.reason = format!("the {how}95% interval of {q} lies within the claim ({line})");
            } else if hi < low || lo > high {
                j.direction = Direction::DoesNotHold;
                j.reason = format!("the {how}95% interval of {q} lies outside the claim ({line})");
            } else {
                j.direction = Direction::Inconclusive;
                j.reason =
                    format!("the {how}95% interval of {q} [{lo:.2}, {hi:.2}] crosses the claim's bound ({line})");
            }
            j.size = size_verdict(f.size, j.ratio_ci);
            if j.direction == Direction::Holds
                && let Some(size) = f.size
            {
                j.reason = format!("{}; size {} against {}", j.reason, j.size.name(), size.describe());
            }
        }
        None => {
            let agrees = r.ratio >= low && r.ratio <= high;
            j.direction = if agrees {
                Direction::Agrees
            } else {
                Direction::Disagrees
            };
            j.reason = "one repetition: no interval, significance not judged".into();
        }
    }
    j.verdict = Verdict::of(j.direction, j.size);
    j
}

/// The claims stored with a run (its plan's `findings`), read back typed in
/// this one place. A run stored without claims has none; claims that no
/// longer read (a run stored by another version, a hand-edited database)
/// are an error that says so, never an empty table.
pub fn stored(run: &crate::run::RunRecord) -> Result<Vec<Finding>, String> {
    match run.plan.get("findings") {
        None => Ok(Vec::new()),
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| {
            format!(
                "the study's claims stored with run {} cannot be read ({e}): no verdicts are shown",
                run.id
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{ErrorCount, ErrorKind};
    use crate::testing;

    fn agg_at(protocol: &str, workload: &str, rates: &[f64]) -> PointAggregate {
        let p = testing::point(0, protocol, workload);
        let ms: Vec<_> = rates
            .iter()
            .enumerate()
            .map(|(i, r)| testing::measurement(&p, i as u32 + 1, *r))
            .collect();
        let refs: Vec<&_> = ms.iter().collect();
        PointAggregate::of(&p, &refs, 0.1)
    }

    fn agg(protocol: &str, rates: &[f64]) -> PointAggregate {
        agg_at(protocol, "inventory.m", rates)
    }

    fn sel(protocol: Protocol) -> Selector {
        Selector {
            protocol: Some(protocol),
            ..Default::default()
        }
    }

    fn claim(expect: Expect, b: Operand) -> Finding {
        Finding {
            claim: "gRPC leads REST at M".into(),
            source: "Figure 5.3".into(),
            metric: Metric::Rate,
            a: sel(Protocol::Grpc),
            b,
            a2: None,
            b2: None,
            expect,
            size: None,
            why: None,
            kind: ClaimKind::Finding,
            needs: Vec::new(),
            timeouts_expected: false,
            study: vec![4000.0, 2300.0],
        }
    }

    fn rest() -> Operand {
        Operand::Point(sel(Protocol::Rest))
    }

    fn judge_none(f: &Finding, points: &[PointAggregate]) -> Judgement {
        judge(std::slice::from_ref(f), points, &Conditions::default()).remove(0)
    }

    const TIGHT_B: [f64; 3] = [1000.0, 1005.0, 995.0];

    #[test]
    fn direction_table() {
        let eq = Expect::Equal { tolerance: 0.1 };
        type Row = (&'static str, Expect, Vec<f64>, Direction);
        let rows: Vec<Row> = vec![
            // a/b ≈ 2 every repetition
            (
                "clearly greater",
                Expect::Greater,
                vec![2000.0, 2010.0, 1990.0],
                Direction::Holds,
            ),
            // a/b ≈ 0.5 every repetition
            (
                "clearly smaller",
                Expect::Greater,
                vec![500.0, 505.0, 495.0],
                Direction::DoesNotHold,
            ),
            ("less holds", Expect::Less, vec![500.0, 505.0, 495.0], Direction::Holds),
            // per-repetition ratios 1.1, 0.6, 1.6: the interval straddles 1
            (
                "overlapping noise",
                Expect::Greater,
                vec![1100.0, 600.0, 1600.0],
                Direction::Inconclusive,
            ),
            ("equal within 10%", eq, vec![1010.0, 1000.0, 1005.0], Direction::Holds),
            (
                "equal refuted",
                eq,
                vec![1500.0, 1505.0, 1495.0],
                Direction::DoesNotHold,
            ),
        ];
        for (what, expect, a, want) in rows {
            let points = vec![agg("grpc", &a), agg("rest", &TIGHT_B)];
            let j = judge_none(&claim(expect, rest()), &points);
            assert_eq!(j.direction, want, "{what}: {j:?}");
            assert!(j.paired, "{what}: both points share repetitions 1-3");
        }
    }

    #[test]
    fn one_repetition_agrees_or_disagrees_untested() {
        let rows = [
            (2000.0, Direction::Agrees, Verdict::Agrees),      // 2x, claimed >
            (900.0, Direction::Disagrees, Verdict::Disagrees), // 0.9x, claimed >
        ];
        for (a, direction, verdict) in rows {
            let mut f = claim(Expect::Greater, rest());
            f.size = Some(SizeClaim::About(2.0));
            let j = judge_none(&f, &[agg("grpc", &[a]), agg("rest", &[1000.0])]);
            assert_eq!(
                (j.direction, j.size, j.verdict),
                (direction, SizeVerdict::Untested, verdict)
            );
            assert_eq!(j.ratio_ci, None);
        }
    }

    #[test]
    fn size_table() {
        // a/b = 2 in every repetition: the interval is [2, 2]
        type Row = (&'static str, Option<SizeClaim>, SizeVerdict, Verdict);
        let rows: Vec<Row> = vec![
            ("no size", None, SizeVerdict::NotStated, Verdict::Holds),
            // band [1.33, 3]
            (
                "about 2",
                Some(SizeClaim::About(2.0)),
                SizeVerdict::Consistent,
                Verdict::Holds,
            ),
            // band [13.3, 30]: CMPT453's "about 20x" against 2x
            (
                "about 20",
                Some(SizeClaim::About(20.0)),
                SizeVerdict::Smaller,
                Verdict::SizeDiffers,
            ),
            // band [1.07, 2.4]... 2 is inside
            (
                "about 1.6",
                Some(SizeClaim::About(1.6)),
                SizeVerdict::Consistent,
                Verdict::Holds,
            ),
            // band [0.8, 1.8]: 2 is above it
            (
                "about 1.2",
                Some(SizeClaim::About(1.2)),
                SizeVerdict::Larger,
                Verdict::SizeDiffers,
            ),
            (
                "at least 1.5",
                Some(SizeClaim::AtLeast(1.5)),
                SizeVerdict::Consistent,
                Verdict::Holds,
            ),
            (
                "at least 3",
                Some(SizeClaim::AtLeast(3.0)),
                SizeVerdict::Smaller,
                Verdict::SizeDiffers,
            ),
            (
                "at most 3",
                Some(SizeClaim::AtMost(3.0)),
                SizeVerdict::Consistent,
                Verdict::Holds,
            ),
            (
                "at most 1.5",
                Some(SizeClaim::AtMost(1.5)),
                SizeVerdict::Larger,
                Verdict::SizeDiffers,
            ),
        ];
        let points = vec![agg("grpc", &[2000.0, 2010.0, 1990.0]), agg("rest", &TIGHT_B)];
        for (what, size, want_size, want) in rows {
            let mut f = claim(Expect::Greater, rest());
            f.size = size;
            let j = judge_none(&f, &points);
            assert_eq!(
                (j.direction, j.size, j.verdict),
                (Direction::Holds, want_size, want),
                "{what}: {j:?}"
            );
        }
        // a wide interval reaching across the band: the size cannot be told
        let mut f = claim(Expect::Greater, rest());
        f.size = Some(SizeClaim::About(2.0));
        let wide = vec![agg("grpc", &[1700.0, 3000.0, 2300.0]), agg("rest", &TIGHT_B)];
        let j = judge_none(&f, &wide);
        assert_eq!(
            (j.direction, j.size, j.verdict),
            (Direction::Holds, SizeVerdict::Inconclusive, Verdict::Inconclusive),
            "{j:?}"
        );
    }

    #[test]
    fn the_headline_needs_both_parts() {
        use Direction as D;
        use SizeVerdict as S;
        let rows = [
            (D::Holds, S::NotStated, Verdict::Holds),
            (D::Holds, S::Consistent, Verdict::Holds),
            (D::Holds, S::Smaller, Verdict::SizeDiffers),
            (D::Holds, S::Larger, Verdict::SizeDiffers),
            (D::Holds, S::Inconclusive, Verdict::Inconclusive),
            (D::DoesNotHold, S::Consistent, Verdict::DoesNotHold),
            (D::Inconclusive, S::Consistent, Verdict::Inconclusive),
            (D::Agrees, S::Untested, Verdict::Agrees),
            (D::NotReproducible, S::NotStated, Verdict::NotReproducible),
        ];
        for (d, s, want) in rows {
            assert_eq!(Verdict::of(d, s), want, "{d:?} x {s:?}");
        }
    }

    #[test]
    fn a_less_than_b_and_b_greater_than_a_always_agree() {
        let datasets: [(&[f64], &[f64]); 4] = [
            (&[74_525.0, 49_694.0, 52_306.0], &[19_560.0, 16_982.0, 32_070.0]),
            (&[1100.0, 600.0, 1600.0], &TIGHT_B),
            (&[1000.0, 1300.0, 900.0], &[1100.0, 1250.0, 1000.0]),
            (&[500.0, 505.0, 495.0], &TIGHT_B),
        ];
        for (x, y) in datasets {
            let points = vec![agg("grpc", x), agg("rest", y)];
            let mut less = claim(Expect::Less, rest());
            less.size = Some(SizeClaim::About(0.4));
            let mut greater = claim(Expect::Greater, Operand::Point(sel(Protocol::Grpc)));
            greater.a = sel(Protocol::Rest);
            greater.size = Some(SizeClaim::About(2.5));
            let (jl, jg) = (judge_none(&less, &points), judge_none(&greater, &points));
            // "a is 0.4x b" and "b is 2.5x a" are one claim: the same verdict,
            // with "larger than claimed" on one side "smaller" on the other
            let mirrored = match jg.size {
                SizeVerdict::Smaller => SizeVerdict::Larger,
                SizeVerdict::Larger => SizeVerdict::Smaller,
                s => s,
            };
            assert_eq!(
                (jl.direction, jl.size, jl.verdict),
                (jg.direction, mirrored, jg.verdict),
                "{x:?} {y:?}"
            );
            let ((lo, hi), (glo, ghi)) = (jl.ratio_ci.unwrap(), jg.ratio_ci.unwrap());
            assert!((lo * ghi - 1.0).abs() < 1e-12 && (hi * glo - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn a_missing_or_ambiguous_point_is_not_measured() {
        let only_grpc = vec![agg("grpc", &[1000.0, 1000.0])];
        let j = judge_none(&claim(Expect::Greater, rest()), &only_grpc);
        assert_eq!((j.verdict, j.direction), (Verdict::NotMeasured, Direction::NotMeasured));
        assert_eq!(j.reason, "no point rest in this run");
        let twice = vec![
            agg("grpc", &[1.0, 1.0]),
            agg("grpc", &[1.0, 1.0]),
            agg("rest", &[1.0, 1.0]),
        ];
        let j = judge_none(&claim(Expect::Greater, rest()), &twice);
        assert_eq!(j.reason, "2 points match grpc");
    }

    #[test]
    fn a_number_on_the_right_uses_the_points_own_interval() {
        // CMPT453: about 20% of calls fail with 20% injected.
        let p = vec![agg("grpc", &[1000.0, 1010.0, 990.0])];
        let mut f = claim(Expect::Greater, Operand::Value(900.0));
        let j = judge_none(&f, &p);
        assert_eq!(j.verdict, Verdict::Holds, "{j:?}");
        // one-sample interval of the logs, divided by 900
        let (lo, hi) = j.ratio_ci.unwrap();
        assert!(
            lo > 1.0 && hi < 1.2 && (j.ratio.unwrap() - 1000.0 / 900.0).abs() < 1e-3,
            "{j:?}"
        );
        assert!(!j.paired, "one point against a number has nothing to pair with");
        f.expect = Expect::Less;
        assert_eq!(judge_none(&f, &p).verdict, Verdict::DoesNotHold);
    }

    fn trend() -> Finding {
        // Berg: the gRPC/REST ratio rises from XS to L
        let at = |protocol, workload: &str| Selector {
            protocol: Some(protocol),
            workload: Some(workload.into()),
            ..Default::default()
        };
        Finding {
            a: at(Protocol::Grpc, "inventory.xs"),
            b: Operand::Point(at(Protocol::Rest, "inventory.xs")),
            a2: Some(at(Protocol::Grpc, "inventory.l")),
            b2: Some(at(Protocol::Rest, "inventory.l")),
            ..claim(Expect::Greater, rest())
        }
    }

    #[test]
    fn a_trend_judges_the_ratio_of_ratios() {
        // XS: grpc/rest = 0.25 each repetition; L: 1.30 each: (1.3/0.25) = 5.2
        let points = vec![
            agg_at("grpc", "inventory.xs", &[250.0, 200.0, 300.0]),
            agg_at("rest", "inventory.xs", &[1000.0, 800.0, 1200.0]),
            agg_at("grpc", "inventory.l", &[130.0, 117.0, 143.0]),
            agg_at("rest", "inventory.l", &[100.0, 90.0, 110.0]),
        ];
        let j = judge_none(&trend(), &points);
        assert_eq!(j.verdict, Verdict::Holds, "{j:?}");
        assert!(j.paired && (j.ratio.unwrap() - 5.2).abs() < 1e-9, "{j:?}");
        assert_eq!(j.here_cell(), "(a2/b2)/(a/b) = 5.20x [5.20, 5.20] paired");
        // "falls" is refuted on the same data
        let mut falls = trend();
        falls.expect = Expect::Less;
        assert_eq!(judge_none(&falls, &points).verdict, Verdict::DoesNotHold);
        // without the L points: not measured
        let j = judge_none(&trend(), &points[..2]);
        assert_eq!(j.reason, "no point grpc inventory.l in this run");
    }

    #[test]
    fn refusal_rules() {
        let points = |cpu: Option<f64>, network: Option<&str>, timeouts: u64| {
            let mut v = vec![agg("grpc", &[2000.0, 2010.0, 1990.0]), agg("rest", &TIGHT_B)];
            for p in &mut v {
                p.config.cpu_limit = cpu;
                p.config.network = network.map(String::from);
            }
            v[1].timeouts = timeouts;
            v
        };
        let two = Conditions { server_cpus: Some(1) };
        let link = Finding {
            needs: vec![Need::Link],
            ..claim(Expect::Greater, rest())
        };
        let application = Finding {
            needs: vec![Need::Application],
            ..claim(Expect::Greater, rest())
        };
        let expected = Finding {
            timeouts_expected: true,
            ..claim(Expect::Greater, rest())
        };
        let plain = claim(Expect::Greater, rest());
        let cost = Finding {
            metric: Metric::CpuPerCall,
            ..claim(Expect::Greater, rest())
        };
        let coarse = |mut v: Vec<PointAggregate>| {
            v[1].server_cpu_coarse = true;
            v
        };
        type Row<'a> = (
            &'static str,
            &'a Finding,
            Vec<PointAggregate>,
            &'a Conditions,
            Option<&'static str>,
        );
        let none = Conditions::default();
        let rows: Vec<Row> = vec![
            // grpcbench's 2-CPU series on a server pinned to one CPU
            (
                "2 CPUs on 1",
                &plain,
                points(Some(2.0), None, 0),
                &two,
                Some("asks for 2 CPUs; the server had 1"),
            ),
            ("1 CPU on 1", &plain, points(Some(1.0), None, 0), &two, None),
            ("CPUs unknown", &plain, points(Some(2.0), None, 0), &none, None),
            // Berg's starred figures
            (
                "link on loopback",
                &link,
                points(None, None, 0),
                &none,
                Some("ran on loopback"),
            ),
            (
                "link named loopback",
                &link,
                points(None, Some("loopback"), 0),
                &none,
                Some("ran on loopback"),
            ),
            ("link emulated", &link, points(None, Some("lan-1g"), 0), &none, None),
            // the GraphQL papers' own applications: refused on any data
            (
                "application",
                &application,
                points(None, Some("lan-1g"), 0),
                &none,
                Some("measured its own application"),
            ),
            // Hedelin's SOAP large/stress against our 10 s timeout
            (
                "timeouts",
                &plain,
                points(None, None, 12),
                &none,
                Some("lost 12 calls to protobench's call timeout"),
            ),
            ("timeouts expected", &expected, points(None, None, 12), &none, None),
            // Niswar's CPU claims at 1 call/s: a few ms of CPU a window
            (
                "CPU per call, coarse",
                &cost,
                coarse(points(None, None, 0)),
                &none,
                Some("under 0.2 s of CPU in a repetition's window"),
            ),
            // the rate is not read from the CPU clock
            ("rate, CPU coarse", &plain, coarse(points(None, None, 0)), &none, None),
        ];
        for (what, f, pts, cond, want) in rows {
            let j = judge(std::slice::from_ref(f), &pts, cond).remove(0);
            match want {
                Some(text) => {
                    assert_eq!(j.verdict, Verdict::NotReproducible, "{what}: {j:?}");
                    assert!(j.reason.contains(text), "{what}: {}", j.reason);
                    assert!(j.verdict_cell().starts_with("not reproducible here: "), "{what}");
                }
                None => assert_eq!(j.verdict, Verdict::Holds, "{what}: {j:?}"),
            }
        }
    }

    #[test]
    fn an_injector_check_says_so() {
        let f = Finding {
            kind: ClaimKind::InjectorCheck,
            ..claim(Expect::Greater, Operand::Value(900.0))
        };
        let j = judge_none(&f, &[agg("grpc", &[1000.0, 1010.0, 990.0])]);
        assert_eq!(j.verdict_cell(), "injector check: holds");
    }

    #[test]
    fn timeouts_are_counted_from_the_measurements() {
        let p = testing::point(0, "soap", "hedelin.large");
        let mut m = testing::measurement(&p, 1, 100.0);
        m.result.as_mut().unwrap().errors.push(ErrorCount {
            kind: ErrorKind::Timeout,
            count: 7,
            sample: "call timed out after 10s".into(),
        });
        let a = PointAggregate::of(&p, &[&m, &testing::measurement(&p, 2, 100.0)], 0.1);
        assert_eq!(a.timeouts, 7);
    }

    #[test]
    fn cells_show_the_studys_figures_and_ours() {
        let points = vec![agg("grpc", &[2000.0, 2010.0, 1990.0]), agg("rest", &TIGHT_B)];
        let j = judge_none(&claim(Expect::Greater, rest()), &points);
        assert_eq!(j.study_cell(), "4,000/s vs 2,300/s (1.74x)");
        assert_eq!(j.here_cell(), "2,000/s vs 1,000/s = 2.00x [2.00, 2.00] paired");
    }

    #[test]
    fn findings_stored_before_sources_still_read() {
        let old = serde_json::json!({
            "claim": "gRPC leads", "metric": "rate",
            "a": {"protocol": "grpc"}, "b": {"protocol": "rest"}, "expect": "greater"
        });
        let f: Finding = serde_json::from_value(old).unwrap();
        assert_eq!((f.source.as_str(), f.size, f.kind), ("", None, ClaimKind::Finding));
    }
}
