//! `[[findings]]`: what the preset's study found, as claims each run judges
//! (`protobench_model::findings`, docs/studies.md, docs/presets.md). Each
//! side of a claim must name at most one point of the plan; a side naming
//! none (a server left out with `--servers`, say) is noted and judged "not
//! measured". Every claim says where the study says so (`source`); a size
//! (`about`, `at_least`, `at_most`) must lie on the claimed side of 1, and
//! an equality's tolerance (`within`) must carry its reason (`why`).

use serde::Deserialize;
use toml::Spanned;

use protobench_model::findings::{ClaimKind, Expect, Finding, Metric, Need, Operand, Selector, SizeClaim};
use protobench_model::run::PointConfig;

use super::check::Checker;
use super::raw::RawFinding;

/// Checks the claims against the plan's points.
// Longer than the ~120-line guide: each key of a claim is checked in file
// order with its own message, and a claim is kept only when all of them
// passed (the tuple at the end); cut apart, each piece would carry the same
// claim, its span and the checker.
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
        let expect = expect(f, c);
        let size = size(f, expect, c);
        let a = selector(&f.a, "findings.a", points, c, notes, n);
        let b = match f.b.get_ref() {
            toml::Value::Integer(v) => Some(Operand::Value(*v as f64)),
            toml::Value::Float(v) if v.is_finite() => Some(Operand::Value(*v)),
            _ => selector(&f.b, "findings.b", points, c, notes, n).map(Operand::Point),
        };
        let (a2, b2, trend_ok) = match (&f.a2, &f.b2) {
            (None, None) => (None, None, true),
            (Some(a2), Some(b2)) => {
                if matches!(b, Some(Operand::Value(_))) {
                    c.issue(
                        f.b.span(),
                        "findings.b",
                        "a trend (a2, b2) needs b to be a point, not a number",
                    );
                }
                (
                    selector(a2, "findings.a2", points, c, notes, n),
                    selector(b2, "findings.b2", points, c, notes, n),
                    true,
                )
            }
            (Some(one), None) | (None, Some(one)) => {
                c.issue(
                    one.span(),
                    if f.a2.is_some() { "findings.a2" } else { "findings.b2" },
                    "a trend needs both a2 and b2 (the later pair whose ratio is compared with a/b)",
                );
                (None, None, false)
            }
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
        let source = match &f.source {
            Some(s) if !s.get_ref().trim().is_empty() => Some(s.get_ref().trim().to_string()),
            Some(s) => {
                c.issue(
                    s.span(),
                    "findings.source",
                    "must say where the study says so (section, figure, table or page)",
                );
                None
            }
            None => {
                c.issue(
                    span.clone(),
                    "findings.source",
                    "missing: say where the study says so (section, figure, table or page)",
                );
                None
            }
        };
        let kind = match f.kind.as_ref().map(|k| k.get_ref().as_str()) {
            None | Some("finding") => Some(ClaimKind::Finding),
            Some("injector-check") => Some(ClaimKind::InjectorCheck),
            Some(other) => {
                c.issue(
                    f.kind.as_ref().map_or(span.clone(), |k| k.span()),
                    "findings.kind",
                    format!("unknown kind `{other}` (accepted: finding, injector-check)"),
                );
                None
            }
        };
        let mut needs = Vec::new();
        if let Some(v) = &f.needs {
            for need in v.get_ref().to_vec() {
                match need.as_str() {
                    "link" => needs.push(Need::Link),
                    "application" => needs.push(Need::Application),
                    other => c.issue(
                        v.span(),
                        "findings.needs",
                        format!("unknown condition `{other}` (accepted: link, application)"),
                    ),
                }
            }
        }
        let timeouts_expected = match &f.timeouts {
            None => false,
            Some(t) if t.get_ref() == "expected" => true,
            Some(t) => {
                c.issue(
                    t.span(),
                    "findings.timeouts",
                    format!("unknown value `{}` (accepted: expected)", t.get_ref()),
                );
                false
            }
        };
        if let (Some(metric), Some(expect), Some(size), Some(a), Some(b), true, Some(source), Some(kind)) =
            (metric, expect, size, a, b, trend_ok, source, kind)
        {
            out.push(Finding {
                claim: f.claim.get_ref().trim().to_string(),
                source,
                metric,
                a,
                b,
                a2,
                b2,
                expect,
                size,
                why: f.why.as_ref().map(|w| w.get_ref().trim().to_string()),
                kind,
                needs,
                timeouts_expected,
                study: f.study.as_ref().map(|s| s.get_ref().clone()).unwrap_or_default(),
            });
        }
    }
    out
}

/// `expect` with `within` and `why`: `=` needs both, `>` and `<` neither.
fn expect(f: &RawFinding, c: &mut Checker<'_>) -> Option<Expect> {
    match (f.expect.get_ref().as_str(), &f.within) {
        (">", None) => Some(Expect::Greater),
        ("<", None) => Some(Expect::Less),
        ("=", Some(w)) => {
            let t = *w.get_ref();
            let reason = f.why.as_ref().is_some_and(|w| !w.get_ref().trim().is_empty());
            if !reason {
                c.issue(
                    w.span(),
                    "findings.why",
                    "missing: say why the tolerance is what it is (the study's own spread, a stated margin)",
                );
            }
            if !(t > 0.0 && t <= 1.0) {
                c.issue(
                    w.span(),
                    "findings.within",
                    format!("must be above 0 and at most 1, found {t}"),
                );
                return None;
            }
            reason.then_some(Expect::Equal { tolerance: t })
        }
        ("=", None) => {
            c.issue(
                f.expect.span(),
                "findings.within",
                "missing: expect = \"=\" needs within = F (e.g. 0.1 for ±10%) and why = \"...\"",
            );
            None
        }
        (">" | "<", Some(w)) => {
            c.issue(w.span(), "findings.within", "only goes with expect = \"=\"");
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
    }
}

/// At most one of `about`, `at_least`, `at_most`, above 0, on the claimed
/// side of 1. `Some(None)`: no size; `None`: a wrong one.
fn size(f: &RawFinding, expect: Option<Expect>, c: &mut Checker<'_>) -> Option<Option<SizeClaim>> {
    let given: Vec<(&str, &Spanned<f64>, SizeClaim)> = [
        ("about", &f.about, SizeClaim::About as fn(f64) -> SizeClaim),
        ("at_least", &f.at_least, SizeClaim::AtLeast),
        ("at_most", &f.at_most, SizeClaim::AtMost),
    ]
    .into_iter()
    .filter_map(|(k, v, make)| v.as_ref().map(|v| (k, v, make(*v.get_ref()))))
    .collect();
    let (key, v, size) = match given.as_slice() {
        [] => return Some(None),
        [one] => *one,
        [_, (k2, v2, _), ..] => {
            c.issue(
                v2.span(),
                &format!("findings.{k2}"),
                format!("goes with `{}`: give one of about, at_least, at_most", given[0].0),
            );
            return None;
        }
    };
    let x = *v.get_ref();
    let key = format!("findings.{key}");
    if !(x.is_finite() && x > 0.0) {
        c.issue(v.span(), &key, format!("must be a ratio above 0, found {x}"));
        return None;
    }
    let wrong_side = match (expect, size) {
        (Some(Expect::Equal { .. }), _) => {
            c.issue(v.span(), &key, "does not go with expect = \"=\" (its size is `within`)");
            return None;
        }
        (Some(Expect::Greater), SizeClaim::About(x) | SizeClaim::AtLeast(x)) => x <= 1.0,
        (Some(Expect::Less), SizeClaim::About(x) | SizeClaim::AtMost(x)) => x >= 1.0,
        (Some(Expect::Greater), SizeClaim::AtMost(x)) => x <= 1.0,
        (Some(Expect::Less), SizeClaim::AtLeast(x)) => x >= 1.0,
        (None, _) => false,
    };
    if wrong_side {
        let side = if expect == Some(Expect::Greater) {
            "above"
        } else {
            "below"
        };
        c.issue(
            v.span(),
            &key,
            format!(
                "{x} contradicts expect = \"{}\": the ratio a/b must be {side} 1",
                f.expect.get_ref()
            ),
        );
        return None;
    }
    Some(Some(size))
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
                    if key == "findings.b" { ", or a number" } else { "" }
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
