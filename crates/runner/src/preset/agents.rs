//! `agents`: the generator hosts the run's load comes from
//! (docs/distributed.md), each `host:port`, checked here so a wrong one is a
//! file:line:key error like every other (`--agents` replaces the list and
//! is checked by the same rules, named by its flag). The token is never in
//! a preset: it comes from `--agent-token-file` or the environment.

use super::check::Checker;
use super::raw::RawPreset;

/// The checked agents (empty: the run generates its load itself).
pub(super) fn agents(raw: &RawPreset, c: &mut Checker<'_>) -> Vec<String> {
    let Some(list) = &raw.agents else {
        return vec![];
    };
    if list.get_ref().is_empty() {
        c.issue(
            list.span(),
            "agents",
            "is empty (expected host:port of `protobench agent`s, e.g. [\"10.0.0.2:7070\", \"10.0.0.3:7070\"]; leave the key out to generate the load here)",
        );
        return vec![];
    }
    let mut out: Vec<String> = Vec::new();
    for (i, item) in list.get_ref().iter().enumerate() {
        let key = format!("agents[{i}]");
        let addr = item.get_ref();
        match crate::agents::check_address(addr) {
            Err(e) => c.issue(item.span(), &key, e),
            Ok(()) if out.contains(addr) => c.issue(item.span(), &key, format!("`{addr}` is listed twice")),
            Ok(()) => out.push(addr.clone()),
        }
    }
    out
}

/// Agents and an emulated network (`network = [...]` other than loopback)
/// do not combine: the runner's links join namespaces of this host (the
/// generator's and the server's), while agents are other hosts whose path
/// to the server no link of this host shapes. Refused at `agents` (or
/// `--agents`), naming the network.
pub(super) fn refuse_with_networks(
    raw: &RawPreset,
    agents: &[String],
    points: &[protobench_model::run::PointConfig],
    c: &mut Checker<'_>,
) {
    let (Some(list), Some(network)) = (&raw.agents, points.iter().find_map(|p| p.network.as_deref())) else {
        return;
    };
    if agents.is_empty() {
        return;
    }
    c.issue(
        list.span(),
        "agents",
        format!(
            "agents cannot run with an emulated network (`network` lists `{network}`): a link joins this host's namespaces, and the agents are other hosts whose path to the server it does not shape; drop one of `agents` and `network` (docs/distributed.md)"
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::super::{CommandLine, Context, resolve, resolve_command};

    fn ctx() -> Context {
        Context::for_tests()
    }

    const BASE: &str = r#"servers = ["rust"]
protocols = ["rest"]
workloads = ["inventory.xs"]
[load]
concurrency = 4
"#;

    #[test]
    fn agents_resolve_into_the_plan_and_the_flag_replaces_them() {
        let text = format!("agents = [\"10.0.0.2:7070\", \"[fd00::3]:7070\"]\n{BASE}");
        let plan = resolve(&text, "x.toml", &ctx()).unwrap();
        assert_eq!(plan.agents, ["10.0.0.2:7070", "[fd00::3]:7070"]);
        assert!(
            plan.notes.iter().any(|n| n.contains("comes from 2 agents")),
            "{:?}",
            plan.notes
        );
        let command = CommandLine {
            agents: Some(vec!["127.0.0.1:7071".into()]),
            ..Default::default()
        };
        let plan = resolve_command(&text, "x.toml", &ctx(), &command).unwrap();
        assert_eq!(plan.agents, ["127.0.0.1:7071"]);
        // Without the key: no agents, and a stored plan without it reads back.
        let plan = resolve(BASE, "x.toml", &ctx()).unwrap();
        assert!(plan.agents.is_empty());
        let json = serde_json::to_value(&plan).unwrap();
        assert!(json.get("agents").is_none(), "{json}");
    }

    #[test]
    fn a_bad_entry_an_empty_list_a_twice_listed_one_and_a_network_are_named() {
        let text = format!("agents = [\"a:1\", \"b\", \"a:1\"]\n{BASE}");
        let err = resolve(&text, "x.toml", &ctx()).unwrap_err().to_string();
        assert!(
            err.contains("x.toml:1:18: agents[1]: `b` is not an agent address (expected host:port"),
            "{err}"
        );
        assert!(err.contains("agents[2]: `a:1` is listed twice"), "{err}");
        let err = resolve(&format!("agents = []\n{BASE}"), "x.toml", &ctx())
            .unwrap_err()
            .to_string();
        assert!(err.contains("x.toml:1:10: agents: is empty"), "{err}");
        let command = CommandLine {
            agents: Some(vec!["nohost".into()]),
            ..Default::default()
        };
        let err = resolve_command(BASE, "x.toml", &ctx(), &command).unwrap_err();
        assert!(err.command_line_only(), "{err}");
        assert!(
            err.to_string()
                .starts_with("--agents: `nohost` is not an agent address"),
            "{err}"
        );
        let text = format!("network = [\"lan-1g\"]\nagents = [\"a:1\"]\n{BASE}");
        let err = resolve(&text, "x.toml", &ctx()).unwrap_err().to_string();
        assert!(
            err.contains("x.toml:2:10: agents: agents cannot run with an emulated network (`network` lists `lan-1g`)"),
            "{err}"
        );
        // Loopback alone is no emulated network.
        let text = format!("network = [\"loopback\"]\nagents = [\"a:1\"]\n{BASE}");
        assert!(resolve(&text, "x.toml", &ctx()).is_ok());
    }
}
