//! Pass/fail gates on a result, for CI: `p99<5ms`, `error_rate<0.1%`,
//! `rate>20000` (as k6 thresholds). Parsed from `--threshold` flags and the
//! `thresholds = [...]` of a preset, evaluated after the run.
//!
//! A threshold is `METRIC OP VALUE`:
//!
//! | metric | value | observed as |
//! |---|---|---|
//! | `p50` `p90` `p95` `p99` `p99.9` `mean` `min` `max` | a duration: `5ms`, `250us`, `1.5s` | corrected latency of successful calls |
//! | `rate` | calls per second: `20000`, `20000/s` | successful calls per second |
//! | `error_rate` | a percentage `0.1%` or a fraction `0.001` | failed calls over all calls |
//! | `cpu_per_call` | a duration | server CPU per call (`run` only) |
//!
//! `OP` is `<`, `<=`, `>` or `>=`. In a `run` every threshold is checked at
//! every point against the median over its repetitions. A metric that was
//! not observed (no successful call, no server CPU) fails its threshold: a
//! gate that cannot be checked must not pass.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::format::{TextTable, fmt_ns, fmt_rate};
use crate::load::LoadResult;
use crate::run::{Measurement, MeasurementStatus, RunRecord};
use crate::stats::median;

/// Every form a threshold accepts, for error messages.
pub const ACCEPTED_FORMS: &str = "p50|p90|p95|p99|p99.9|mean|min|max <|<=|>|>= DURATION (e.g. p99<5ms), \
rate >|>=|<|<= CALLS_PER_SECOND (e.g. rate>20000), error_rate <|<=|>|>= PERCENT% or FRACTION (e.g. error_rate<0.1%), \
cpu_per_call <|<= DURATION (run only)";

/// What a threshold measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Median latency.
    P50,
    /// 90th percentile latency.
    P90,
    /// 95th percentile latency.
    P95,
    /// 99th percentile latency.
    P99,
    /// 99.9th percentile latency.
    P999,
    /// Mean latency.
    Mean,
    /// Smallest latency.
    Min,
    /// Largest latency.
    Max,
    /// Successful calls per second.
    Rate,
    /// Failed calls over all calls (a fraction).
    ErrorRate,
    /// Server CPU time per call (ns); only a `run` measures it.
    CpuPerCall,
}

impl Metric {
    const NAMES: [(&'static str, Metric); 12] = [
        ("p50", Metric::P50),
        ("p90", Metric::P90),
        ("p95", Metric::P95),
        ("p99", Metric::P99),
        ("p99.9", Metric::P999),
        ("p999", Metric::P999),
        ("mean", Metric::Mean),
        ("min", Metric::Min),
        ("max", Metric::Max),
        ("rate", Metric::Rate),
        ("error_rate", Metric::ErrorRate),
        ("cpu_per_call", Metric::CpuPerCall),
    ];

    /// The name as written (`p99.9` for the 99.9th percentile).
    pub fn name(self) -> &'static str {
        Metric::NAMES.iter().find(|(_, m)| *m == self).map_or("?", |(n, _)| n)
    }

    fn kind(self) -> Kind {
        match self {
            Metric::Rate => Kind::Rate,
            Metric::ErrorRate => Kind::Fraction,
            _ => Kind::Duration,
        }
    }

    /// The metric of one load result; `None` when it was not observed.
    pub fn of_result(self, r: &LoadResult) -> Option<f64> {
        let l = &r.latency;
        let latency = |v: u64| (l.count > 0).then_some(v as f64);
        match self {
            Metric::P50 => latency(l.p50_ns),
            Metric::P90 => latency(l.p90_ns),
            Metric::P95 => latency(l.p95_ns),
            Metric::P99 => latency(l.p99_ns),
            Metric::P999 => latency(l.p999_ns),
            Metric::Mean => latency(l.mean_ns),
            Metric::Min => latency(l.min_ns),
            Metric::Max => latency(l.max_ns),
            Metric::Rate => Some(r.rate),
            Metric::ErrorRate => (r.calls > 0).then(|| r.error_count() as f64 / r.calls as f64),
            Metric::CpuPerCall => None,
        }
    }

    /// The metric of one measurement of a run (server CPU included).
    pub fn of_measurement(self, m: &Measurement) -> Option<f64> {
        if m.status != MeasurementStatus::Ok {
            return None;
        }
        match self {
            Metric::CpuPerCall => m.server_cost.map(|c| c.cpu_ns_per_call),
            _ => self.of_result(m.result.as_ref()?),
        }
    }

    /// A value of this metric for people: `5.00ms`, `20,000/s`, `0.100%`.
    pub fn show(self, v: f64) -> String {
        match self.kind() {
            Kind::Duration => fmt_ns(v),
            Kind::Rate => format!("{}/s", fmt_rate(v)),
            Kind::Fraction => format!("{}%", trim_number(v * 100.0)),
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Duration,
    Rate,
    Fraction,
}

/// How the observed value must compare with the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Below.
    Lt,
    /// At most.
    Le,
    /// Above.
    Gt,
    /// At least.
    Ge,
}

impl Op {
    fn symbol(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }

    fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Op::Lt => value < limit,
            Op::Le => value <= limit,
            Op::Gt => value > limit,
            Op::Ge => value >= limit,
        }
    }
}

/// One gate: `METRIC OP LIMIT`. Serialized as the text it was written as
/// (normalized: `p99 < 5ms` is stored as `p99<5ms`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Threshold {
    /// What is measured.
    pub metric: Metric,
    /// How it must compare.
    pub op: Op,
    /// The limit in the metric's unit: ns, calls/s, or a fraction.
    pub limit: f64,
    /// The limit as written (`5ms`, `0.1%`).
    limit_text: String,
}

/// Why a threshold could not be parsed: names the threshold and the accepted forms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThresholdError {
    /// The threshold as written.
    pub written: String,
    /// What is wrong with it.
    pub problem: String,
}

impl fmt::Display for ThresholdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid threshold {:?}: {}; accepted forms: {ACCEPTED_FORMS}",
            self.written, self.problem
        )
    }
}

impl std::error::Error for ThresholdError {}

impl Threshold {
    /// Parses `METRIC OP VALUE` (spaces allowed around `OP`).
    pub fn parse(written: &str) -> Result<Threshold, ThresholdError> {
        let fail = |problem: String| ThresholdError {
            written: written.to_owned(),
            problem,
        };
        let s = written.trim();
        let at = s
            .find(['<', '>', '='])
            .ok_or_else(|| fail("no comparison (<, <=, > or >=)".into()))?;
        let name = s[..at].trim();
        let rest = &s[at..];
        let (op, value) = if let Some(v) = rest.strip_prefix("<=") {
            (Op::Le, v)
        } else if let Some(v) = rest.strip_prefix(">=") {
            (Op::Ge, v)
        } else if let Some(v) = rest.strip_prefix('<') {
            (Op::Lt, v)
        } else if let Some(v) = rest.strip_prefix('>') {
            (Op::Gt, v)
        } else {
            return Err(fail("the comparison must be <, <=, > or >=".into()));
        };
        let value = value.trim();
        let metric = Metric::NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, m)| *m)
            .ok_or_else(|| {
                fail(if name.is_empty() {
                    "no metric before the comparison".into()
                } else {
                    format!("unknown metric {name:?}")
                })
            })?;
        if value.is_empty() {
            return Err(fail("no value after the comparison".into()));
        }
        let limit = match metric.kind() {
            Kind::Duration => parse_duration_ns(value).map_err(fail)?,
            Kind::Rate => {
                let n = value.strip_suffix("/s").unwrap_or(value).trim();
                number(n).ok_or_else(|| fail(format!("{value:?} is not a rate in calls per second (e.g. 20000)")))?
            }
            Kind::Fraction => match value.strip_suffix('%') {
                Some(p) => number(p.trim())
                    .map(|p| p / 100.0)
                    .ok_or_else(|| fail(format!("{value:?} is not a percentage (e.g. 0.1%)")))?,
                None => {
                    let f = number(value)
                        .ok_or_else(|| fail(format!("{value:?} is not a percentage (e.g. 0.1%) or a fraction")))?;
                    if f > 1.0 {
                        return Err(fail(format!(
                            "{value} is more than 1: write a percentage with % (e.g. {value}%)"
                        )));
                    }
                    f
                }
            },
        };
        if metric == Metric::CpuPerCall && matches!(op, Op::Gt | Op::Ge) {
            return Err(fail("cpu_per_call can only be bounded from above (< or <=)".into()));
        }
        Ok(Threshold {
            metric,
            op,
            limit,
            limit_text: value.split_whitespace().collect(),
        })
    }

    /// Checks one observed value (`None`: not observed, which fails).
    pub fn check(&self, value: Option<f64>) -> bool {
        value.is_some_and(|v| self.op.holds(v, self.limit))
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}{}", self.metric, self.op.symbol(), self.limit_text)
    }
}

impl From<Threshold> for String {
    fn from(t: Threshold) -> String {
        t.to_string()
    }
}

impl TryFrom<String> for Threshold {
    type Error = ThresholdError;

    fn try_from(s: String) -> Result<Threshold, ThresholdError> {
        Threshold::parse(&s)
    }
}

impl std::str::FromStr for Threshold {
    type Err = ThresholdError;

    fn from_str(s: &str) -> Result<Threshold, ThresholdError> {
        Threshold::parse(s)
    }
}

/// A finite, non-negative number.
fn number(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0)
}

/// `5ms`, `250us`, `250µs`, `800ns`, `1.5s`, `1m` in ns; a unit is required.
fn parse_duration_ns(s: &str) -> Result<f64, String> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("{s:?} needs a unit (ns, us, ms, s), e.g. {s}ms"))?;
    let (n, unit) = (&s[..split], s[split..].trim());
    let n = number(n).ok_or_else(|| format!("{s:?} is not a duration (e.g. 5ms)"))?;
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" => 60e9,
        _ => return Err(format!("unknown unit {unit:?} in {s:?}: use ns, us, ms, s or m")),
    };
    Ok(n * scale)
}

fn trim_number(v: f64) -> String {
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Parses every threshold; the first error stops.
pub fn parse_all<S: AsRef<str>>(written: &[S]) -> Result<Vec<Threshold>, ThresholdError> {
    written.iter().map(|s| Threshold::parse(s.as_ref())).collect()
}

/// One threshold checked at one place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The threshold.
    pub threshold: Threshold,
    /// The point it was checked at (`run`: its label); `None` for a single load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<String>,
    /// The value observed (the median over repetitions in a run), in the
    /// metric's unit; `None` when not observed.
    pub value: Option<f64>,
    /// Whether the threshold held.
    pub passed: bool,
}

impl Outcome {
    /// The observed value for people, `-` if none.
    pub fn shown_value(&self) -> String {
        self.value.map_or_else(|| "-".into(), |v| self.threshold.metric.show(v))
    }
}

/// Checks every threshold against one load result.
pub fn evaluate_result(thresholds: &[Threshold], r: &LoadResult) -> Vec<Outcome> {
    thresholds
        .iter()
        .map(|t| {
            let value = t.metric.of_result(r);
            Outcome {
                threshold: t.clone(),
                point: None,
                value,
                passed: t.check(value),
            }
        })
        .collect()
}

/// Checks every threshold at every point of a run, against the median of the
/// metric over the point's measured repetitions.
pub fn evaluate_run(thresholds: &[Threshold], run: &RunRecord) -> Vec<Outcome> {
    let mut out = Vec::new();
    for t in thresholds {
        for p in &run.points {
            let values: Vec<f64> = run
                .measurements
                .iter()
                .filter(|m| m.point == p.index)
                .filter_map(|m| t.metric.of_measurement(m))
                .collect();
            let value = median(&values);
            out.push(Outcome {
                threshold: t.clone(),
                point: Some(p.label()),
                value,
                passed: t.check(value),
            });
        }
    }
    out
}

/// The outcomes as a text table with a closing verdict line.
pub fn table(outcomes: &[Outcome]) -> String {
    // The point column only when some threshold is judged per point.
    let with_points = outcomes.iter().any(|o| o.point.is_some());
    let columns = |cells: [String; 4]| {
        let [threshold, point, observed, result] = cells;
        if with_points {
            vec![threshold, point, observed, result]
        } else {
            vec![threshold, observed, result]
        }
    };
    let mut table = TextTable::new(columns(["threshold", "point", "observed", "result"].map(String::from)));
    for o in outcomes {
        table.row(columns([
            o.threshold.to_string(),
            o.point.clone().unwrap_or_default(),
            o.shown_value(),
            if o.passed { "pass".into() } else { "FAIL".into() },
        ]));
    }
    let mut s = table.render();
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    s += &if failed == 0 {
        format!("thresholds: all {} passed\n", outcomes.len())
    } else {
        format!("thresholds: {failed} of {} FAILED\n", outcomes.len())
    };
    s
}

/// True when every outcome passed.
pub fn all_passed(outcomes: &[Outcome]) -> bool {
    outcomes.iter().all(|o| o.passed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;

    #[test]
    fn parse_table() {
        let cases: &[(&str, Metric, Op, f64)] = &[
            ("p99<5ms", Metric::P99, Op::Lt, 5e6),                   // the k6-style form
            ("p99 < 5ms", Metric::P99, Op::Lt, 5e6),                 // spaces around the comparison
            ("p99.9<=1.5s", Metric::P999, Op::Le, 1.5e9),            // the 99.9th percentile, fractional value
            ("p999<250us", Metric::P999, Op::Lt, 250e3),             // p999 is another spelling
            ("mean<800µs", Metric::Mean, Op::Lt, 800e3),             // micro sign
            ("max<1m", Metric::Max, Op::Lt, 60e9),                   // minutes
            ("P95<10ns", Metric::P95, Op::Lt, 10.0),                 // metric names ignore case
            ("rate>20000", Metric::Rate, Op::Gt, 20000.0),           // calls per second
            ("rate>=1500/s", Metric::Rate, Op::Ge, 1500.0),          // with its unit
            ("error_rate<0.1%", Metric::ErrorRate, Op::Lt, 0.001),   // a percentage
            ("error_rate<=0.02", Metric::ErrorRate, Op::Le, 0.02),   // a fraction
            ("cpu_per_call<20us", Metric::CpuPerCall, Op::Lt, 20e3), // server CPU
        ];
        for (written, metric, op, limit) in cases {
            let t = Threshold::parse(written).unwrap_or_else(|e| panic!("{written}: {e}"));
            assert_eq!((t.metric, t.op), (*metric, *op), "{written}");
            assert!(
                (t.limit - limit).abs() < 1e-9 * limit.max(1.0),
                "{written}: {}",
                t.limit
            );
        }
    }

    #[test]
    fn parse_errors_name_the_threshold_and_the_problem() {
        let cases: &[(&str, &str)] = &[
            ("p99", "no comparison"),                   // no operator
            ("p98<5ms", "unknown metric \"p98\""),      // not a known percentile
            ("<5ms", "no metric"),                      // nothing before the operator
            ("p99<", "no value"),                       // nothing after it
            ("p99<5", "needs a unit"),                  // a latency without a unit
            ("p99<5hours", "unknown unit"),             // a unit we do not know
            ("p99=5ms", "must be <, <=, > or >="),      // equality is no gate
            ("rate>fast", "not a rate"),                // not a number
            ("error_rate<5", "more than 1"),            // a percentage written without %
            ("error_rate<x%", "not a percentage"),      // not a number
            ("cpu_per_call>1us", "bounded from above"), // a floor on CPU makes no sense
            ("rate>-5", "not a rate"),                  // negative
        ];
        for (written, want) in cases {
            let e = Threshold::parse(written).expect_err(written).to_string();
            assert!(e.contains(want), "{written}: {e}");
            assert!(e.contains(&format!("{written:?}")), "names the threshold: {e}");
            assert!(e.contains("accepted forms: p50|p90"), "lists the forms: {e}");
        }
    }

    #[test]
    fn written_form_is_normalized_and_round_trips_through_serde() {
        let t = Threshold::parse(" p99 <  5ms ").unwrap();
        assert_eq!(t.to_string(), "p99<5ms");
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, "\"p99<5ms\"");
        assert_eq!(serde_json::from_str::<Threshold>(&json).unwrap(), t);
        assert!(serde_json::from_str::<Threshold>("\"p99<5\"").is_err());
    }

    #[test]
    fn check_table() {
        let lt = Threshold::parse("p99<5ms").unwrap();
        let ge = Threshold::parse("rate>=100").unwrap();
        let cases = [
            (&lt, Some(4_999_999.0), true),  // just below
            (&lt, Some(5_000_000.0), false), // equal is not below
            (&ge, Some(100.0), true),        // equal is at least
            (&ge, Some(99.9), false),        // below the floor
            (&lt, None, false),              // not observed: fails
        ];
        for (t, v, want) in cases {
            assert_eq!(t.check(v), want, "{t} with {v:?}");
        }
    }

    #[test]
    fn evaluates_a_load_result() {
        // testing::result: p99 = 5 ms, rate 1000/s, 20 errors of 10020 calls (0.2%).
        let r = testing::result("rest", "inventory.xs", 1000.0, 20, 10);
        let ts = parse_all(&[
            "p99<6ms",
            "p99<5ms",
            "rate>2000",
            "error_rate<0.1%",
            "error_rate<0.25%",
            "cpu_per_call<1ms",
        ])
        .unwrap();
        let got: Vec<bool> = evaluate_result(&ts, &r).iter().map(|o| o.passed).collect();
        assert_eq!(got, [true, false, false, false, true, false]);
        let out = evaluate_result(&ts, &r);
        assert_eq!(out[0].value, Some(5e6));
        let text = table(&out);
        assert!(text.contains("p99<5ms") && text.contains("FAIL"), "{text}");
        assert!(text.ends_with("thresholds: 4 of 6 FAILED\n"), "{text}");
        assert!(!text.contains("point"), "no point column for a single load: {text}");
    }

    #[test]
    fn evaluates_a_run_per_point_with_the_median_over_repetitions() {
        let points = vec![
            testing::point(0, "rest", "inventory.xs"),
            testing::point(1, "grpc", "inventory.xs"),
        ];
        let ms = vec![
            testing::measurement(&points[0], 1, 900.0),
            testing::measurement(&points[0], 2, 1000.0),
            testing::measurement(&points[0], 3, 5000.0),
            testing::measurement(&points[1], 1, 3000.0),
        ];
        let mut run = testing::record(points, ms);
        // Point 0's median rate is 1000/s (the 5000 outlier does not move it).
        let out = evaluate_run(&parse_all(&["rate>1500", "cpu_per_call<60us"]).unwrap(), &run);
        let got: Vec<(bool, Option<f64>)> = out.iter().map(|o| (o.passed, o.value)).collect();
        assert_eq!(
            got,
            [
                (false, Some(1000.0)),
                (true, Some(3000.0)),
                (true, Some(50e3)),
                (true, Some(50e3))
            ]
        );
        let ts = parse_all(&["rate>0"]).unwrap();
        let out = evaluate_run(&ts, &run);
        assert_eq!(out.len(), run.points.len());
        assert!(all_passed(&out));
        // A point with no measurement at all is not observed: it fails.
        run.measurements.retain(|m| m.point != 0);
        let out = evaluate_run(&ts, &run);
        assert!(!out[0].passed && out[0].value.is_none());
        assert!(table(&out).contains("point"));
    }
}
