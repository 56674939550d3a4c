//! `load.connections`: `"per-caller"`, `"per-call"` or a shared count, for
//! every kind of experiment, down to the engine's plan; bad values get the
//! file:line:key errors every preset problem gets.

use protobench_model::load::ConnectionPolicy;
use protobench_model::run::PointKind;
use protobench_runner::manifest::Catalog;
use protobench_runner::plan::Plan;
use protobench_runner::preset::{self, Context};
use protobench_runner::units::CpuSet;

fn ctx() -> Context {
    Context {
        catalog: Catalog::load(None),
        cpus: CpuSet::parse("0-1").unwrap(),
    }
}

/// A preset of `kind` on `protocols` with `connections` (as written in TOML).
fn preset(kind: &str, protocols: &str, connections: &str) -> String {
    let load = match kind {
        "fixed" => "concurrency = 16\n",
        "rate" => "rate = 100\nconcurrency = 16\n",
        _ => "",
    };
    format!(
        "kind = \"{kind}\"\nservers = [\"rust\"]\nprotocols = [{protocols}]\nworkloads = [\"inventory.xs\"]\n[load]\n{load}connections = {connections}\n"
    )
}

fn resolve(text: &str) -> Plan {
    preset::resolve(text, "t.toml", &ctx()).unwrap_or_else(|e| panic!("{e}\n--- preset ---\n{text}"))
}

fn err(text: &str) -> String {
    preset::resolve(text, "presets/t.toml", &ctx()).unwrap_err().to_string()
}

#[test]
fn the_three_forms_reach_the_engine_plan_for_every_kind() {
    use ConnectionPolicy::{PerCall, PerCaller, Shared};
    for kind in ["fixed", "rate", "discover", "ramp"] {
        for (written, policy, label) in [
            ("\"per-caller\"", PerCaller, ""),
            ("\"per-call\"", PerCall, "/conn=per-call"),
            ("2", Shared(2), "/conn=2"),
        ] {
            let plan = resolve(&preset(kind, "\"grpc\"", written));
            let what = format!("{kind} {written}");
            assert_eq!(plan.points.len(), 1, "{what}");
            let point = &plan.points[0];
            assert_eq!(point.policy(), policy, "{what}");
            assert!(point.label().ends_with(label), "{what}: {}", point.label());
            // Whatever the callers (a search's step, the fixed concurrency),
            // a count stays the count; the others follow the callers.
            for callers in [4, 16, 64] {
                let lp = plan.load_plan(point, "127.0.0.1:1", callers, 1_000_000_000, 0);
                let want = match policy {
                    PerCaller => (callers, false),
                    PerCall => (callers, true),
                    Shared(n) => (n, false),
                };
                assert_eq!((lp.connections, lp.per_call), want, "{what} at {callers} callers");
            }
        }
    }
}

#[test]
fn per_caller_is_the_default_and_a_list_is_a_dimension() {
    let text = "kind = \"ramp\"\nservers = [\"rust\"]\nprotocols = [\"grpc\"]\nworkloads = [\"inventory.xs\"]\n";
    let plan = resolve(text);
    assert_eq!(plan.points[0].policy(), ConnectionPolicy::PerCaller);
    assert_eq!(plan.points[0].label(), "rust grpc inventory.xs ramp");
    let plan = resolve(&preset("discover", "\"grpc\"", "[\"per-caller\", \"per-call\", 1]"));
    let labels: Vec<String> = plan.points.iter().map(|p| p.load_label()).collect();
    assert_eq!(labels, ["discover", "discover/conn=per-call", "discover/conn=1"]);
}

#[test]
fn the_policy_is_stored_with_the_plan() {
    let plan = resolve(&preset("fixed", "\"rest-h2\"", "[\"per-call\", 4]"));
    let json = serde_json::to_string(&plan).unwrap();
    let back: Plan = serde_json::from_str(&json).unwrap();
    assert_eq!(back, plan);
    assert_eq!(back.points[0].connection_policy, Some(ConnectionPolicy::PerCall));
    assert_eq!(back.points[1].connection_policy, Some(ConnectionPolicy::Shared(4)));
}

#[test]
fn http1_cannot_share_a_connection() {
    use ConnectionPolicy::{PerCall, PerCaller, Shared};
    // Mixed with HTTP/2: the HTTP/1.1 points take one connection per caller, with a note.
    let plan = resolve(&preset("fixed", "\"rest\", \"soap\", \"grpc\"", "[4, \"per-call\"]"));
    let of = |name: &str| -> Vec<ConnectionPolicy> {
        plan.points
            .iter()
            .filter(|p| p.protocol.name() == name)
            .map(|p| p.policy())
            .collect()
    };
    assert_eq!(of("rest"), [PerCaller, PerCall]);
    assert_eq!(of("soap"), [PerCaller, PerCall]);
    assert_eq!(of("grpc"), [Shared(4), PerCall]);
    assert!(
        plan.notes
            .iter()
            .any(|n| n.contains("rest and soap (HTTP/1.1) cannot share")),
        "{:?}",
        plan.notes
    );
    // Per call and per caller are fine on HTTP/1.1 alone.
    for written in ["\"per-call\"", "\"per-caller\"", "16"] {
        resolve(&preset("fixed", "\"rest\"", written));
    }
    let kind = PointKind::Ramp;
    assert_eq!(
        err(&preset(kind.name(), "\"rest\", \"soap\"", "1")),
        "presets/t.toml:6:15: load.connections: 1 shared connection needs HTTP/2: rest and soap (HTTP/1.1) carry one call at a time per connection; use \"per-caller\" or \"per-call\""
    );
    assert_eq!(
        err(&preset("fixed", "\"rest\"", "4")),
        "presets/t.toml:7:15: load.connections: 4 shared connections need HTTP/2: rest (HTTP/1.1) carries one call at a time per connection; use \"per-caller\" or \"per-call\""
    );
}

#[test]
fn bad_values_name_file_line_and_key() {
    let cases = [
        (
            preset("fixed", "\"grpc\"", "\"per-host\""),
            "presets/t.toml:7:15: load.connections: must be \"per-caller\", \"per-call\" or a number of connections from 1 to 100000, found \"per-host\"",
        ),
        (
            preset("discover", "\"grpc\"", "0"),
            "presets/t.toml:6:15: load.connections: must be \"per-caller\", \"per-call\" or a number of connections from 1 to 100000, found 0",
        ),
        (
            preset("ramp", "\"grpc\"", "[1, \"keep-alive\"]"),
            "presets/t.toml:6:15: load.connections: must be \"per-caller\", \"per-call\" or a number of connections from 1 to 100000, found \"keep-alive\"",
        ),
        (
            preset("rate", "\"grpc\"", "32"),
            "presets/t.toml:8:15: load.connections: number of connections (32) cannot be greater than load.concurrency (16)",
        ),
        (
            preset("fixed", "\"grpc\"", "[]"),
            "presets/t.toml:7:15: load.connections: is empty",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(err(&text), want, "\n--- preset ---\n{text}");
    }
}
