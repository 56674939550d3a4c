//! `[[findings]]`: what the preset's study found, as claims each run judges
//! (`protobench_model::findings`, docs/studies.md). Each side of a claim must
//! name at most one point of the plan; a side naming none (a server left out
//! with `--servers`, say) is noted and judged "not measured".

use serde::Deserialize;
use toml::Spanned;

use protobench_model::findings::{Expect, Finding, Metric, Operand, Selector};
use protobench_model::run::PointConfig;

use super::check::Checker;
use super::raw::RawFinding;

/// The default tolerance of `expect = "="`.
pub(super) const DEFAULT_TOLERANCE: f64 = 0.10;

/// Checks the claims against the plan's points.
pub(super) fn findings(
    raw: Option<&Vec<Spanned<RawFinding>>>,
    points: &[PointConfig],
    c: &mut Checker<'_>,
    notes: &mut Vec<String>,
) -> Vec<Finding> {
    let Some(raw) = raw else { return Vec::new() };
    let mut out = Vec::new();
    for (i, f) in raw.iter().enumerate() {
        let n = i + 1;
        let span = f.span();
        let f = f.get_ref();
        let metric = match f.metric.get_ref().parse::<Metric>() {
            Ok(m) => Some(m),
            Err(e) => {
                let names: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
                c.issue(
                    f.metric.span(),
                    "findings.metric",
                    format!("{e} (accepted: {})", names.join(", ")),
                );
                None
            }
        };
        let expect = match (f.expect.get_ref().as_str(), &f.tolerance) {
            (">", None) => Some(Expect::Greater),
            ("<", None) => Some(Expect::Less),
            ("=", tol) => {
                let t = tol.as_ref().map_or(DEFAULT_TOLERANCE, |t| *t.get_ref());
                if t > 0.0 && t <= 1.0 {
                    Some(Expect::Equal { tolerance: t })
                } else {
                    let at = tol.as_ref().map_or(f.expect.span(), |t| t.span());
                    c.issue(
                        at,
                        "findings.tolerance",
                        format!("must be above 0 and at most 1, found {t}"),
                    );
                    None
                }
            }
            (">" | "<", Some(t)) => {
                c.issue(t.span(), "findings.tolerance", "only goes with expect = \"=\"");
                None
            }
            (other, _) => {
                c.issue(
                    f.expect.span(),
                    "findings.expect",
                    format!("unknown relation `{other}` (accepted: >, <, =)"),
                );
                None
            }
        };
        let a = selector(&f.a, "findings.a", points, c, notes, n);
        let b = match f.b.get_ref() {
            toml::Value::Integer(v) => Some(Operand::Value(*v as f64)),
            toml::Value::Float(v) if v.is_finite() => Some(Operand::Value(*v)),
            _ => selector(&f.b, "findings.b", points, c, notes, n).map(Operand::Point),
        };
        if let Some(s) = &f.study
            && !(1..=2).contains(&s.get_ref().len())
        {
            c.issue(
                s.span(),
                "findings.study",
                "must list the study's figure for a, then for b (one or two numbers)",
            );
        }
        if f.claim.get_ref().trim().is_empty() {
            c.issue(span.clone(), "findings.claim", "must say what the study found");
        }
        if let (Some(metric), Some(expect), Some(a), Some(b)) = (metric, expect, a, b) {
            out.push(Finding {
                claim: f.claim.get_ref().trim().to_string(),
                metric,
                a,
                b,
                expect,
                study: f.study.as_ref().map(|s| s.get_ref().clone()).unwrap_or_default(),
            });
        }
    }
    out
}

/// One side: a table of point fields matching at most one point.
fn selector(
    v: &Spanned<toml::Value>,
    key: &str,
    points: &[PointConfig],
    c: &mut Checker<'_>,
    notes: &mut Vec<String>,
    n: usize,
) -> Option<Selector> {
    let sel = match Selector::deserialize(v.get_ref().clone()) {
        Ok(s) => s,
        Err(e) => {
            c.issue(
                v.span(),
                key,
                format!(
                    "{} (expected a table of server, protocol, workload, tls, concurrency, rate, failure_rate, cpu_limit, connections, network{})",
                    e.message().trim(),
                    if key.ends_with(".b") { ", or a number" } else { "" }
                ),
            );
            return None;
        }
    };
    let matching: Vec<&PointConfig> = points.iter().filter(|p| sel.matches(p)).collect();
    match matching.len() {
        0 => notes.push(format!(
            "finding {n}: no point {} in this plan; it will be judged \"not measured\"",
            sel.describe()
        )),
        1 => {}
        k => {
            let labels: Vec<String> = matching.iter().take(3).map(|p| p.label()).collect();
            c.issue(
                v.span(),
                key,
                format!(
                    "matches {k} points ({}{}): add fields until it names one",
                    labels.join("; "),
                    if k > 3 { "; ..." } else { "" }
                ),
            );
        }
    }
    Some(sel)
}
