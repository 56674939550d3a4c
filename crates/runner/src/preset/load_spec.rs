//! `[load]`: closed or open loop, the arrival of open-loop calls, and the
//! concurrency, connections and rates each kind needs.

use std::ops::Range;

use toml::Spanned;

use protobench_load::MAX_CONCURRENCY;
use protobench_model::load::{Arrival, ConnectionPolicy, Protocol};
use protobench_model::run::PointKind;

use super::check::Checker;
use super::raw::{ConnectionsValue, Mode, OneOrMany, RawLoad};

/// `[load]`, checked: the load dimensions of the matrix.
pub(super) struct LoadSpec {
    pub(super) arrival: Arrival,
    /// Calls in flight (closed loop), the one cap (open loop), or `[0]`
    /// when a search chooses it.
    pub(super) concurrency: Vec<u32>,
    /// Connection policies to try; empty = one connection per caller.
    pub(super) connections: Vec<ConnectionPolicy>,
    /// Calls per second (open loop), or `[None]` (closed loop).
    pub(super) rates: Vec<Option<f64>>,
}

/// Checks `[load]` against the preset's kind.
pub(super) fn load_spec(raw: Option<&Spanned<RawLoad>>, kind: PointKind, c: &mut Checker<'_>) -> LoadSpec {
    let empty = RawLoad::default();
    let load = raw.map_or(&empty, |l| l.get_ref());
    let open = mode(load, kind, c) == Mode::Open;
    let arrival = c.choice(load.arrival.as_ref(), "load.arrival", Arrival::Uniform);
    let concurrency = counts(load.concurrency.as_ref(), "load.concurrency", c);
    let connections = policies(load.connections.as_ref(), c);
    let rates = rates(load.rate.as_ref(), c);
    let load_span = raw.map_or(0..0, |l| l.span());
    let (concurrency, rates) = match (kind, open) {
        (PointKind::Fixed | PointKind::Stream, false) => closed_loop(load, load_span, concurrency, c),
        (PointKind::Stream, true) => {
            c.issue(
                load_span.clone(),
                "load.mode",
                "a stream preset opens [load] concurrency streams; its message rate is [stream] rate",
            );
            (vec![], vec![])
        }
        (PointKind::Fixed | PointKind::Rate, true) => open_loop(load, load_span, concurrency, rates, c),
        (PointKind::Discover | PointKind::Ramp, _) => searched(load, kind, c),
        (PointKind::Rate, false) => (vec![], vec![]),
    };
    if let (Some(conns), Some(v)) = (&connections, &load.connections) {
        let shared = conns.iter().filter_map(|p| match p {
            ConnectionPolicy::Shared(n) => Some(*n),
            _ => None,
        });
        for conn in shared {
            for &conc in concurrency.iter().filter(|c| **c > 0) {
                if conn > conc {
                    c.issue(
                        v.span(),
                        "load.connections",
                        format!("number of connections ({conn}) cannot be greater than load.concurrency ({conc})"),
                    );
                }
            }
        }
    }
    LoadSpec {
        arrival,
        concurrency,
        connections: connections.unwrap_or_default(),
        rates,
    }
}

/// `load.mode`: open loop by default with kind = "rate", else closed; the
/// searches are closed loop and "rate" is open loop.
fn mode(load: &RawLoad, kind: PointKind, c: &mut Checker<'_>) -> Mode {
    let default = if kind == PointKind::Rate {
        Mode::Open
    } else {
        Mode::Closed
    };
    let mode = c.choice(load.mode.as_ref(), "load.mode", default);
    let Some(written) = &load.mode else { return mode };
    match (kind, mode) {
        (PointKind::Rate, Mode::Closed) => c.issue(
            written.span(),
            "load.mode",
            "kind = \"rate\" is open loop: use mode = \"open\" or leave it out",
        ),
        (PointKind::Discover | PointKind::Ramp, Mode::Open) => c.issue(
            written.span(),
            "load.mode",
            format!("kind = \"{}\" is closed loop: use mode = \"closed\"", kind.name()),
        ),
        _ => {}
    }
    mode
}

/// `load.connections`: `"per-caller"`, `"per-call"` or counts from 1 to
/// 1000000 (one value or a list, a matrix dimension).
fn policies(v: Option<&Spanned<OneOrMany<ConnectionsValue>>>, c: &mut Checker<'_>) -> Option<Vec<ConnectionPolicy>> {
    let v = v?;
    let list = v.get_ref().to_vec();
    if list.is_empty() {
        c.issue(v.span(), "load.connections", "is empty");
    }
    let mut out = Vec::new();
    for value in list {
        let policy = match &value {
            ConnectionsValue::Count(n) if (1..=i64::from(MAX_CONCURRENCY)).contains(n) => {
                Some(ConnectionPolicy::Shared(*n as u32))
            }
            ConnectionsValue::Count(_) => None,
            ConnectionsValue::Name(s) => match s.as_str() {
                "per-caller" => Some(ConnectionPolicy::PerCaller),
                "per-call" => Some(ConnectionPolicy::PerCall),
                _ => None,
            },
        };
        match policy {
            Some(p) => out.push(p),
            None => {
                let found = match value {
                    ConnectionsValue::Count(n) => n.to_string(),
                    ConnectionsValue::Name(s) => format!("{s:?}"),
                };
                c.issue(
                    v.span(),
                    "load.connections",
                    format!("must be \"per-caller\", \"per-call\" or a number of connections from 1 to {MAX_CONCURRENCY}, found {found}"),
                );
            }
        }
    }
    Some(out)
}

/// A shared connection count needs HTTP/2: HTTP/1.1 (`rest`, `soap`) carries
/// one call at a time per connection. When every protocol is HTTP/1.1, a
/// count below the callers (any count, for the searches) is an issue; mixed
/// with HTTP/2 protocols, the HTTP/1.1 points take one connection per caller
/// instead, with a note.
pub(super) fn http1_connections(
    raw: Option<&Spanned<RawLoad>>,
    load: &LoadSpec,
    protocols: &[Protocol],
    kind: PointKind,
    c: &mut Checker<'_>,
    notes: &mut Vec<String>,
) {
    let Some(v) = raw.and_then(|l| l.get_ref().connections.as_ref()) else {
        return;
    };
    let searched = matches!(kind, PointKind::Discover | PointKind::Ramp);
    let below = |n: u32| searched || load.concurrency.iter().any(|&conc| n < conc);
    let Some(n) = load.connections.iter().find_map(|p| match p {
        ConnectionPolicy::Shared(n) if below(*n) => Some(*n),
        _ => None,
    }) else {
        return;
    };
    let http1: Vec<String> = protocols
        .iter()
        .filter(|p| p.is_http1())
        .map(|p| p.to_string())
        .collect();
    if http1.is_empty() {
        return;
    }
    if http1.len() == protocols.len() {
        c.issue(
            v.span(),
            "load.connections",
            format!(
                "{n} shared connection{} HTTP/2: {} (HTTP/1.1) carr{} one call at a time per connection; use \"per-caller\" or \"per-call\"",
                if n == 1 { " needs" } else { "s need" },
                http1.join(" and "),
                if http1.len() == 1 { "ies" } else { "y" }
            ),
        );
    } else {
        notes.push(format!(
            "load.connections: {} (HTTP/1.1) cannot share connections: one connection per caller instead",
            http1.join(" and ")
        ));
    }
}

/// `load.concurrency`: counts from 1 to what one engine run takes
/// ([`protobench_load::MAX_CONCURRENCY`]).
fn counts(v: Option<&Spanned<OneOrMany<i64>>>, key: &str, c: &mut Checker<'_>) -> Option<Vec<u32>> {
    let v = v?;
    let list = v.get_ref().to_vec();
    if list.is_empty() {
        c.issue(v.span(), key, "is empty");
    }
    let mut out = Vec::new();
    for n in list {
        if !(1..=i64::from(MAX_CONCURRENCY)).contains(&n) {
            c.issue(
                v.span(),
                key,
                format!("must be between 1 and {MAX_CONCURRENCY} (calls in flight in one engine run), found {n}"),
            );
        } else {
            out.push(n as u32);
        }
    }
    Some(out)
}

/// `load.rate`: calls per second above 0.
fn rates(v: Option<&Spanned<OneOrMany<f64>>>, c: &mut Checker<'_>) -> Option<Vec<f64>> {
    let v = v?;
    let list = v.get_ref().to_vec();
    if list.is_empty() {
        c.issue(v.span(), "load.rate", "is empty");
    }
    let rates = list
        .into_iter()
        .filter(|r| {
            let ok = r.is_finite() && *r > 0.0;
            if !ok {
                c.issue(v.span(), "load.rate", format!("must be above 0 calls/s, found {r}"));
            }
            ok
        })
        .collect();
    Some(rates)
}

/// Closed loop needs the concurrency and takes no rate.
fn closed_loop(
    load: &RawLoad,
    load_span: Range<usize>,
    concurrency: Option<Vec<u32>>,
    c: &mut Checker<'_>,
) -> (Vec<u32>, Vec<Option<f64>>) {
    if let Some(r) = &load.rate {
        c.issue(
            r.span(),
            "load.rate",
            "is for open loop: set load.mode = \"open\" or remove it",
        );
    }
    let concurrency = concurrency.unwrap_or_else(|| {
        c.issue(
            load_span,
            "load.concurrency",
            "missing: closed loop needs the calls in flight (e.g. concurrency = [1, 10, 50])",
        );
        vec![]
    });
    (concurrency, vec![None])
}

/// Open loop needs the rates and takes one concurrency cap (64 by default).
fn open_loop(
    load: &RawLoad,
    load_span: Range<usize>,
    concurrency: Option<Vec<u32>>,
    rates: Option<Vec<f64>>,
    c: &mut Checker<'_>,
) -> (Vec<u32>, Vec<Option<f64>>) {
    let rates = rates.unwrap_or_else(|| {
        c.issue(
            load_span,
            "load.rate",
            "missing: open loop needs calls per second (e.g. rate = [1, 100, 1000])",
        );
        vec![]
    });
    let cap = concurrency.unwrap_or_else(|| vec![64]);
    if cap.len() > 1
        && let Some(v) = &load.concurrency
    {
        c.issue(
            v.span(),
            "load.concurrency",
            "open loop takes one concurrency cap, not a list",
        );
    }
    (cap.into_iter().take(1).collect(), rates.into_iter().map(Some).collect())
}

/// The searches choose the concurrency themselves and take no rate.
fn searched(load: &RawLoad, kind: PointKind, c: &mut Checker<'_>) -> (Vec<u32>, Vec<Option<f64>>) {
    let written = [
        (load.concurrency.as_ref().map(|v| v.span()), "load.concurrency"),
        (load.rate.as_ref().map(|v| v.span()), "load.rate"),
    ];
    for (span, key) in written {
        if let Some(span) = span {
            c.issue(
                span,
                key,
                format!(
                    "is chosen by the search with kind = \"{}\": remove it (set [{}] instead)",
                    kind.name(),
                    kind.name()
                ),
            );
        }
    }
    (vec![0], vec![None])
}
