//! "Findings vs the study": a study preset states what its study found as
//! claims over two of its points (or a point and a number), and every run of
//! it judges each claim from its own measurements (docs/studies.md).
//!
//! A claim compares one metric of point `a` with point `b`: `a > b`, `a < b`
//! or `a = b` within a tolerance. The judgement uses the ratio `a / b` and its
//! 95% interval across repetitions (`stats::ratio`), never the point estimates
//! alone: a claim **holds** when the whole interval is on the claimed side,
//! **does not hold** when it is wholly on the other side, and is
//! **inconclusive** when the interval straddles the line. With one repetition
//! there is no interval: the direction is reported as agreeing or not, and
//! significance is not judged. Absolute figures are never compared (the
//! study's hardware is not ours): the study's own figures are shown beside
//! ours as context.

use serde::{Deserialize, Serialize};

use crate::format::{fmt_bytes, fmt_ns, fmt_rate};
use crate::load::{ConnectionPolicy, Protocol};
use crate::run::{PointAggregate, PointConfig};
use crate::stats::{Summary, ratio};

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

/// One claim of a study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// What the study found, in one line, with where it says so.
    pub claim: String,
    /// The metric compared.
    pub metric: Metric,
    /// The first point.
    pub a: Selector,
    /// The second point, or a number.
    pub b: Operand,
    /// The claimed relation of `a` to `b`.
    pub expect: Expect,
    /// The study's own figures for `a` and `b` (context only; its hardware
    /// is not ours).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub study: Vec<f64>,
}

/// The outcome of one claim in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The 95% interval of `a / b` lies wholly on the claimed side.
    Holds,
    /// The interval lies wholly on the other side.
    DoesNotHold,
    /// The interval straddles the line: this run cannot tell.
    Inconclusive,
    /// One repetition: the point estimates agree with the claim; not tested.
    Agrees,
    /// One repetition: the point estimates disagree; not tested.
    Disagrees,
    /// A point is not in this run, or was not measured.
    NotMeasured,
}

impl Verdict {
    /// For tables.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::DoesNotHold => "does not hold",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Agrees => "agrees (1 repetition, untested)",
            Verdict::Disagrees => "disagrees (1 repetition, untested)",
            Verdict::NotMeasured => "not measured",
        }
    }
}

/// A claim judged against one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    /// The claim.
    pub finding: Finding,
    /// The outcome.
    pub verdict: Verdict,
    /// Median of `a` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a: Option<f64>,
    /// Median of `b` here (or the claim's number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<f64>,
    /// `a / b` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// Its 95% interval (none with one repetition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_ci: Option<(f64, f64)>,
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

    /// Ours: `5,432/s vs 3,100/s = 1.75x [1.60, 1.90]`.
    pub fn here_cell(&self) -> String {
        let m = self.finding.metric;
        match (self.a, self.b, self.ratio) {
            (Some(a), Some(b), Some(r)) => {
                let ci = self
                    .ratio_ci
                    .map_or(String::new(), |(lo, hi)| format!(" [{lo:.2}, {hi:.2}]"));
                format!("{} vs {} = {r:.2}x{ci}", m.format(a), m.format(b))
            }
            _ => "-".into(),
        }
    }
}

/// Judges every claim against the points of a run.
pub fn judge(findings: &[Finding], points: &[PointAggregate]) -> Vec<Judgement> {
    findings.iter().map(|f| judge_one(f, points)).collect()
}

fn find<'a>(sel: &Selector, points: &'a [PointAggregate]) -> Result<&'a PointAggregate, String> {
    let found: Vec<&PointAggregate> = points.iter().filter(|p| sel.matches(&p.config)).collect();
    match found.as_slice() {
        [one] => Ok(one),
        [] => Err(format!("no point {} in this run", sel.describe())),
        many => Err(format!("{} points match {}", many.len(), sel.describe())),
    }
}

fn judge_one(f: &Finding, points: &[PointAggregate]) -> Judgement {
    let mut j = Judgement {
        finding: f.clone(),
        verdict: Verdict::NotMeasured,
        a: None,
        b: None,
        ratio: None,
        ratio_ci: None,
        reason: String::new(),
    };
    let a = match find(&f.a, points).map(|p| f.metric.of(p)) {
        Ok(Some(s)) => s.clone(),
        Ok(None) => {
            j.reason = format!("{} was not measured", f.a.describe());
            return j;
        }
        Err(e) => {
            j.reason = e;
            return j;
        }
    };
    let b = match &f.b {
        Operand::Value(v) => Summary::of(&[*v]).expect("one value"),
        Operand::Point(sel) => match find(sel, points).map(|p| f.metric.of(p)) {
            Ok(Some(s)) => s.clone(),
            Ok(None) => {
                j.reason = format!("{} was not measured", sel.describe());
                return j;
            }
            Err(e) => {
                j.reason = e;
                return j;
            }
        },
    };
    j.a = Some(a.median);
    j.b = Some(b.median);
    if b.median == 0.0 {
        j.reason = "b is 0: no ratio".into();
        return j;
    }
    // `stats::ratio(x, y)` is y / x.
    let Some(r) = ratio(&b, &a) else {
        j.reason = "no ratio".into();
        return j;
    };
    j.ratio = Some(r.ratio);
    // With a constant `b`, the ratio's interval is `a`'s scaled.
    let ci = match (&f.b, r.ci_low.zip(r.ci_high)) {
        (_, Some(ci)) => Some(ci),
        (Operand::Value(v), None) => a.ci_low.zip(a.ci_high).map(|(lo, hi)| (lo / v, hi / v)),
        _ => None,
    };
    j.ratio_ci = ci;
    let (low, high) = match f.expect {
        Expect::Greater => (1.0, f64::INFINITY),
        Expect::Less => (0.0, 1.0),
        Expect::Equal { tolerance } => (1.0 / (1.0 + tolerance), 1.0 + tolerance),
    };
    let line = match f.expect {
        Expect::Greater | Expect::Less => "1".to_string(),
        Expect::Equal { .. } => format!("[{low:.2}, {high:.2}]"),
    };
    match ci {
        Some((lo, hi)) => {
            if lo >= low && hi <= high {
                j.verdict = Verdict::Holds;
                j.reason = format!("the 95% interval of a/b lies within the claim ({line})");
            } else if hi < low || lo > high {
                j.verdict = Verdict::DoesNotHold;
                j.reason = format!("the 95% interval of a/b lies outside the claim ({line})");
            } else {
                j.verdict = Verdict::Inconclusive;
                j.reason = format!("the 95% interval of a/b [{lo:.2}, {hi:.2}] crosses the claim's bound ({line})");
            }
        }
        None => {
            let agrees = r.ratio >= low && r.ratio <= high;
            j.verdict = if agrees { Verdict::Agrees } else { Verdict::Disagrees };
            j.reason = "one repetition: no interval, significance not judged".into();
        }
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;

    fn agg(protocol: &str, rates: &[f64]) -> PointAggregate {
        let p = testing::point(0, protocol, "inventory.m");
        let ms: Vec<_> = rates
            .iter()
            .enumerate()
            .map(|(i, r)| testing::measurement(&p, i as u32 + 1, *r))
            .collect();
        let refs: Vec<&_> = ms.iter().collect();
        PointAggregate::of(&p, &refs, 0.1)
    }

    fn claim(expect: Expect, b: Operand) -> Finding {
        Finding {
            claim: "gRPC leads REST at M".into(),
            metric: Metric::Rate,
            a: Selector {
                protocol: Some(Protocol::Grpc),
                ..Default::default()
            },
            b,
            expect,
            study: vec![4000.0, 2300.0],
        }
    }

    fn rest() -> Operand {
        Operand::Point(Selector {
            protocol: Some(Protocol::Rest),
            ..Default::default()
        })
    }

    #[test]
    fn verdict_table() {
        let eq = Expect::Equal { tolerance: 0.1 };
        type Row = (&'static str, Expect, Vec<f64>, Vec<f64>, Verdict);
        let rows: Vec<Row> = vec![
            (
                "clearly greater",
                Expect::Greater,
                vec![2000.0, 2010.0, 1990.0],
                vec![1000.0, 1005.0, 995.0],
                Verdict::Holds,
            ),
            (
                "clearly smaller",
                Expect::Greater,
                vec![500.0, 505.0, 495.0],
                vec![1000.0, 1005.0, 995.0],
                Verdict::DoesNotHold,
            ),
            (
                "less holds",
                Expect::Less,
                vec![500.0, 505.0, 495.0],
                vec![1000.0, 1005.0, 995.0],
                Verdict::Holds,
            ),
            (
                "overlapping noise",
                Expect::Greater,
                vec![1100.0, 600.0, 1600.0],
                vec![1000.0, 1005.0, 995.0],
                Verdict::Inconclusive,
            ),
            (
                "equal within 10%",
                eq,
                vec![1010.0, 1000.0, 1005.0],
                vec![1000.0, 1005.0, 995.0],
                Verdict::Holds,
            ),
            (
                "equal refuted",
                eq,
                vec![1500.0, 1505.0, 1495.0],
                vec![1000.0, 1005.0, 995.0],
                Verdict::DoesNotHold,
            ),
            (
                "one repetition agrees",
                Expect::Greater,
                vec![2000.0],
                vec![1000.0],
                Verdict::Agrees,
            ),
            (
                "one repetition disagrees",
                Expect::Greater,
                vec![900.0],
                vec![1000.0],
                Verdict::Disagrees,
            ),
        ];
        for (what, expect, a, b, want) in rows {
            let points = vec![agg("grpc", &a), agg("rest", &b)];
            let j = &judge(&[claim(expect, rest())], &points)[0];
            assert_eq!(j.verdict, want, "{what}: {j:?}");
        }
    }

    #[test]
    fn a_missing_or_ambiguous_point_is_not_measured() {
        let only_grpc = vec![agg("grpc", &[1000.0, 1000.0])];
        let j = &judge(&[claim(Expect::Greater, rest())], &only_grpc)[0];
        assert_eq!(j.verdict, Verdict::NotMeasured);
        assert_eq!(j.reason, "no point rest in this run");
        let twice = vec![
            agg("grpc", &[1.0, 1.0]),
            agg("grpc", &[1.0, 1.0]),
            agg("rest", &[1.0, 1.0]),
        ];
        let j = &judge(&[claim(Expect::Greater, rest())], &twice)[0];
        assert_eq!(j.reason, "2 points match grpc");
    }

    #[test]
    fn a_number_on_the_right_uses_the_points_own_interval() {
        // CMPT453: about 20% of calls fail with 20% injected.
        let p = vec![agg("grpc", &[1000.0, 1000.0, 1000.0])];
        let mut f = claim(Expect::Greater, Operand::Value(900.0));
        let j = &judge(std::slice::from_ref(&f), &p)[0];
        assert_eq!(j.verdict, Verdict::Holds, "{j:?}");
        f.expect = Expect::Less;
        assert_eq!(judge(&[f], &p)[0].verdict, Verdict::DoesNotHold);
    }

    #[test]
    fn cells_show_the_studys_figures_and_ours() {
        let points = vec![
            agg("grpc", &[2000.0, 2010.0, 1990.0]),
            agg("rest", &[1000.0, 1005.0, 995.0]),
        ];
        let j = &judge(&[claim(Expect::Greater, rest())], &points)[0];
        assert_eq!(j.study_cell(), "4,000/s vs 2,300/s (1.74x)");
        assert!(
            j.here_cell().starts_with("2,000/s vs 1,000/s = 2.00x ["),
            "{}",
            j.here_cell()
        );
    }
}
