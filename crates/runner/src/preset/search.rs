//! `[discover]` and `[ramp]`: the settings of the two searches, each only
//! with its own kind, and with defaults when the kind is set but the table
//! is not.

use std::time::Duration;

use toml::Spanned;

use protobench_model::run::PointKind;

use super::check::Checker;
use super::raw::{RawDiscover, RawRamp};
use crate::plan::{DiscoverSpec, RampSpec};

/// `[discover]`, present with kind = "discover" (a step lasts `duration`
/// unless set).
pub(super) fn discover(
    table: Option<&Spanned<RawDiscover>>,
    kind: PointKind,
    duration: Duration,
    c: &mut Checker<'_>,
) -> Option<DiscoverSpec> {
    let empty = RawDiscover::default();
    let d = section(table, PointKind::Discover, kind, &empty, c)?;
    Some(DiscoverSpec {
        start: c.positive(d.start.as_ref(), "discover.start", 2, 1),
        factor: c.positive(d.factor.as_ref(), "discover.factor", 2, 2),
        min_gain: c.fraction(d.min_gain.as_ref(), "discover.min_gain", 0.02),
        max: c.concurrency(d.max.as_ref(), "discover.max", 1024),
        step_ns: c
            .duration(d.step_duration.as_ref(), "discover.step_duration", duration)
            .as_nanos() as u64,
    })
}

/// `[ramp]`, present with kind = "ramp".
pub(super) fn ramp(table: Option<&Spanned<RawRamp>>, kind: PointKind, c: &mut Checker<'_>) -> Option<RampSpec> {
    let empty = RawRamp::default();
    let r = section(table, PointKind::Ramp, kind, &empty, c)?;
    let spawn_rate = match &r.spawn_rate {
        None => 0.0,
        Some(v) => {
            let rate = *v.get_ref();
            let step = r.step.as_ref().map(|s| s.span());
            if let Some(step) = step.or_else(|| r.step_duration.as_ref().map(|s| s.span())) {
                c.issue(
                    step,
                    "ramp.spawn_rate",
                    "give either spawn_rate (users per second) or step and step_duration, not both",
                );
            }
            if !(rate.is_finite() && rate > 0.0 && rate <= 1_000_000.0) {
                c.issue(
                    v.span(),
                    "ramp.spawn_rate",
                    format!("must be a number of users per second above 0 and at most 1000000, got {rate}"),
                );
                0.0
            } else {
                rate
            }
        }
    };
    let stepped = r.stepped.as_ref().is_some_and(|s| *s.get_ref());
    if stepped && r.spawn_rate.is_some() {
        c.issue(
            r.spawn_rate.as_ref().map(|s| s.span()).unwrap_or_default(),
            "ramp.spawn_rate",
            "is for the continuous ramp; a stepped ramp adds `step` users every `step_duration`",
        );
    }
    // The continuous ramp may start from 0 users (Locust does); the stepped
    // one measures `start` as its first concurrency.
    let start = c.positive(r.start.as_ref(), "ramp.start", 1, if stepped { 1 } else { 0 });
    let max = c.concurrency(r.max.as_ref(), "ramp.max", 2000);
    if max < start
        && let Some(m) = &r.max
    {
        c.issue(
            m.span(),
            "ramp.max",
            format!("must be at least ramp.start ({start}), found {max}"),
        );
    }
    Some(RampSpec {
        start,
        step: c.positive(r.step.as_ref(), "ramp.step", 15, 1),
        step_ns: c
            .duration(r.step_duration.as_ref(), "ramp.step_duration", Duration::from_secs(1))
            .as_nanos() as u64,
        max,
        min_gain: c.fraction(r.min_gain.as_ref(), "ramp.min_gain", 0.01),
        patience: c.positive(r.patience.as_ref(), "ramp.patience", 3, 1),
        max_error_rate: c.fraction(r.max_error_rate.as_ref(), "ramp.max_error_rate", 0.01),
        spawn_rate,
        stepped,
    })
}

/// The table of the search `owner` as written (an issue when the preset
/// has another kind), `empty` (every value its default) when the kind is
/// `owner` but the table is absent, else nothing.
fn section<'t, T>(
    table: Option<&'t Spanned<T>>,
    owner: PointKind,
    kind: PointKind,
    empty: &'t T,
    c: &mut Checker<'_>,
) -> Option<&'t T> {
    match table {
        Some(t) => {
            if kind != owner {
                c.issue(
                    t.span(),
                    owner.name(),
                    format!(
                        "is only used with kind = \"{}\" (this preset has kind = \"{}\")",
                        owner.name(),
                        kind.name()
                    ),
                );
            }
            Some(t.get_ref())
        }
        None if kind == owner => Some(empty),
        None => None,
    }
}
