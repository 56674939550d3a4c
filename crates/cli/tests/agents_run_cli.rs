//! `protobench run` on agents (docs/distributed.md, "A whole run on
//! agents"): real `protobench agent` processes on loopback with a token
//! file, a small preset of 2 points x 2 repetitions with 1-second windows,
//! the run stored (each measurement with its agents' lanes) and reported
//! (text, HTML, schema-valid JSON naming each point's agents); a preset's
//! `agents` key; a bad entry refused naming it; agents with an emulated
//! network or off loopback without `--server-address` refused, and
//! `--server-address` moving the servers to another address; a wrong
//! token failing each point with the agent named, without hanging; an
//! agent killed mid-run marking its point incomplete, naming it.
//! Every process is bounded (`timeout`), every window is one second.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{Agent, agent, agent_token_file};

/// `protobench ARGS` in `dir`, bounded by `timeout` (a hang fails the test,
/// it does not stall it), with no preset or server directory from the
/// environment and no token from it either.
fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new("timeout")
        .args(["-k", "5", "150", env!("CARGO_BIN_EXE_protobench")])
        .args(args)
        .current_dir(dir)
        .env_remove("PROTOBENCH_PRESETS_DIR")
        .env_remove("PROTOBENCH_SERVERS_DIR")
        .env_remove("PROTOBENCH_AGENT_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Two points (rest on two workloads) x 2 repetitions, 1-second windows,
/// closed loop with 4 callers (2 per agent), on the built-in Rust server.
/// `extra` goes at the top level (e.g. `agents = [...]`).
fn preset(dir: &Path, extra: &str) -> String {
    let p = dir.join("agents-small.toml");
    std::fs::write(
        &p,
        format!(
            r#"name = "agents-small"
{extra}
servers = ["rust"]
protocols = ["rest"]
workloads = ["inventory.xs", "inventory.s"]
repetitions = 2
warmup = "0s"
duration = "1s"
[load]
concurrency = 4
"#
        ),
    )
    .unwrap();
    p.display().to_string()
}

/// The coordinator's flags of these tests: a generous clock bound and a
/// short start lead for a loaded machine on loopback.
const DRIVE: [&str; 4] = ["--max-clock-uncertainty", "200ms", "--start-ahead", "2s"];

/// `run PRESET` with the token in `token`, the database `db`, the
/// coordinator's flags of these tests ([`DRIVE`]) and `extra`.
fn run_args<'a>(preset: &'a str, token: &'a str, db: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["run", preset, "--agent-token-file", token, "--db", db];
    args.extend(DRIVE);
    args.extend_from_slice(extra);
    args
}

fn agents(n: usize, token: &str) -> (Vec<Agent>, String) {
    let agents: Vec<Agent> = (0..n).map(|_| agent(token)).collect();
    let list = agents.iter().map(|a| a.addr.as_str()).collect::<Vec<_>>().join(",");
    (agents, list)
}

/// Every stored measurement of run 1 in `db` measured, with one lane per
/// agent of `addrs`, in agent order, that called; returns the results.
fn stored_lanes(db: &Path, addrs: &[&str], measurements: usize) -> Vec<serde_json::Value> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT status, result_json FROM measurements WHERE run_id = 1 ORDER BY point_index, repetition")
        .unwrap();
    let rows: Vec<(String, Option<String>)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), measurements, "{rows:?}");
    let mut results = Vec::new();
    for (status, json) in rows {
        assert_eq!(status, "ok", "{json:?}");
        let r: serde_json::Value = serde_json::from_str(&json.unwrap()).unwrap();
        let lanes = r["agents"].as_array().unwrap_or_else(|| panic!("no lanes: {r}"));
        let named: Vec<&str> = lanes.iter().map(|l| l["agent"].as_str().unwrap()).collect();
        assert_eq!(named, addrs, "{r}");
        assert!(r.get("incomplete").is_none(), "{r}");
        for l in lanes {
            assert!(l["calls"].as_u64().unwrap() > 0, "an agent made no call: {l}");
            assert_eq!(l["concurrency"], 4 / addrs.len() as u64, "{l}");
            assert!(l["clock_uncertainty_ns"].as_u64().unwrap() > 0, "{l}");
            assert!(l.get("failure").is_none(), "{l}");
        }
        // The merged figures are the lanes' sums.
        let sum = |k: &str| lanes.iter().map(|l| l[k].as_u64().unwrap()).sum::<u64>();
        assert_eq!(r["calls"].as_u64().unwrap(), sum("calls"), "{r}");
        assert_eq!(r["successes"].as_u64().unwrap(), sum("successes"), "{r}");
        results.push(r);
    }
    results
}

#[test]
fn a_run_on_agents_stores_each_measurements_lanes_and_reports_them() {
    let dir = tempfile::tempdir().unwrap();
    let token = agent_token_file(dir.path());
    let (agents, list) = agents(2, &token);
    let preset = preset(dir.path(), "");
    let out = run_in(
        dir.path(),
        &run_args(&preset, &token, "r.db", &["--agents", &list, "-o", "html"]),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("run 1 complete: 4 measurements"), "{stdout}");
    // The table marks each point, and the Agents table has a row per lane.
    let addrs: Vec<&str> = agents.iter().map(|a| a.addr.as_str()).collect();
    assert_eq!(stdout.matches("2 agents").count(), 2, "{stdout}");
    let (_, lanes) = stdout
        .split_once("\nAgents (")
        .unwrap_or_else(|| panic!("no agents table: {stdout}"));
    for a in &addrs {
        assert_eq!(lanes.lines().filter(|l| l.contains(a)).count(), 4, "{a}: {lanes}");
    }
    assert!(
        stderr.contains("the load of every point comes from 2 agents"),
        "{stderr}"
    );

    let results = stored_lanes(&dir.path().join("r.db"), &addrs, 4);
    // Each result, lanes included, follows the published load result schema.
    for r in &results {
        let errors = common::schema_errors("load-result.schema.json", r);
        assert!(errors.is_empty(), "{errors:#?}");
    }

    let html = std::fs::read_to_string(dir.path().join("html/report.html")).unwrap();
    assert!(html.contains("<section id=\"agents\">"), "no agents section");
    for a in &addrs {
        assert_eq!(html.matches(&format!("<td>{a}</td>")).count(), 4, "{a}");
    }

    let out = run_in(
        dir.path(),
        &["report", "1", "--format", "json", "--db", "r.db", "--out", "json"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("json/report.json")).unwrap()).unwrap();
    let errors = common::schema_errors("report.schema.json", &v);
    assert!(errors.is_empty(), "{errors:#?}");
    let aggs = v["aggregates"].as_array().unwrap();
    assert_eq!(aggs.len(), 2);
    for a in aggs {
        assert_eq!(a["agents"], 2, "{a}");
        assert!(a.get("agents_failed").is_none(), "{a}");
    }
    assert_eq!(v["run"]["plan"]["agents"], serde_json::json!(addrs));
    for m in v["run"]["measurements"].as_array().unwrap() {
        let named: Vec<&str> = m["result"]["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["agent"].as_str().unwrap())
            .collect();
        assert_eq!(named, addrs, "{m}");
    }
}

#[test]
fn a_presets_agents_drive_the_run_and_a_bad_entry_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let token = agent_token_file(dir.path());
    let (agents, _) = agents(2, &token);
    let addrs: Vec<&str> = agents.iter().map(|a| a.addr.as_str()).collect();
    let listed = format!("agents = [\"{}\", \"{}\"]", addrs[0], addrs[1]);
    let preset = preset(dir.path(), &listed);
    // The servers listen on another address of this host (the path of
    // agents on other hosts), which these agents reach too.
    let extra = [
        "--workloads",
        "inventory.xs",
        "--repetitions",
        "1",
        "--no-report",
        "--server-address",
        "127.0.0.2",
    ];
    let out = run_in(dir.path(), &run_args(&preset, &token, "p.db", &extra));
    assert!(
        out.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let results = stored_lanes(&dir.path().join("p.db"), &addrs, 1);
    let target = results[0]["plan"]["target"].as_str().unwrap();
    assert!(target.starts_with("127.0.0.2:"), "{target}");

    // Each refusal: exit 2, its message, and no run created.
    let refused = |args: &[&str], want: &[&str]| {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        all.extend(["--db", "refused.db", "--no-report"]);
        let out = run_in(dir.path(), &all);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        for w in want {
            assert!(e.contains(w), "{args:?}: no {w:?} in {e}");
        }
        assert!(!dir.path().join("refused.db").exists(), "{args:?}: a run was created");
    };
    // Without a token (none in the preset, none in the environment).
    refused(&[&preset], &["no agent token", "--agent-token-file"]);
    // A bad entry is named with what was expected, in the file and on the command line.
    let bad = preset.replace(".toml", "-bad.toml");
    let text_of = |p: &str| std::fs::read_to_string(p).unwrap();
    std::fs::write(&bad, text_of(&preset).replace(addrs[1], "agent-1:seventy")).unwrap();
    refused(
        &[&bad, "--agent-token-file", &token],
        &[":2:", "agents[1]: `agent-1:seventy`: the port `seventy` is not a port"],
    );
    refused(
        &[&preset, "--agents", "127.0.0.1", "--agent-token-file", &token],
        &["--agents: `127.0.0.1` is not an agent address (expected host:port"],
    );
    // Agents and an emulated network do not combine.
    let net = preset.replace(".toml", "-net.toml");
    std::fs::write(
        &net,
        text_of(&preset).replace("servers =", "network = [\"lan-1g\"]\nservers ="),
    )
    .unwrap();
    refused(
        &[&net, "--agent-token-file", &token],
        &["agents: agents cannot run with an emulated network (`network` lists `lan-1g`)"],
    );
    // An agent off loopback cannot reach servers on 127.0.0.1.
    refused(
        &[&preset, "--agents", "10.9.8.7:7070", "--agent-token-file", &token],
        &["agent 10.9.8.7:7070 is not on this host's loopback", "--server-address"],
    );
}

#[test]
fn a_wrong_token_fails_each_point_naming_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let token = agent_token_file(dir.path());
    let (agents, list) = agents(2, &token);
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "not-the-token-but-long-enough").unwrap();
    let preset = preset(dir.path(), "");
    let extra = ["--repetitions", "1", "--agents", &list, "--no-report"];
    let out = run_in(dir.path(), &run_args(&preset, wrong.to_str().unwrap(), "w.db", &extra));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // Exit 1: the run went on and every measurement failed (no hang: timeout would give 124).
    assert_eq!(out.status.code(), Some(1), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stdout.contains("2 measurements") && stdout.contains("(2 failed)"),
        "{stdout}"
    );
    let conn = rusqlite::Connection::open(dir.path().join("w.db")).unwrap();
    let reasons: Vec<String> = conn
        .prepare("SELECT failure_reason FROM measurements WHERE status = 'failed'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(reasons.len(), 2);
    for r in reasons {
        assert!(
            r.contains(&format!("agent {}", agents[0].addr)) && r.contains("401") && r.contains("token"),
            "{r}"
        );
    }
}

#[test]
fn an_agent_killed_mid_run_marks_its_point_incomplete_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let token = agent_token_file(dir.path());
    let (mut agents, list) = agents(2, &token);
    let preset = preset(dir.path(), "");
    let mut args = vec!["-k", "5", "150", env!("CARGO_BIN_EXE_protobench")];
    let extra = [
        "--workloads",
        "inventory.xs",
        "--repetitions",
        "1",
        "--duration",
        "8s",
        "--agents",
        &list,
        "--no-report",
    ];
    args.extend(run_args(&preset, &token, "k.db", &extra));
    let run = Command::new("timeout")
        .args(&args)
        .current_dir(dir.path())
        .env_remove("PROTOBENCH_AGENT_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The coordinator holds a connection to each agent from its clock check
    // to the end of the point; 2 s start lead, then 3 s into the window.
    common::wait_connected(&agents[1].addr, std::time::Duration::from_secs(90));
    std::thread::sleep(std::time::Duration::from_secs(5));
    agents[1].child.kill().unwrap();
    let out = run.wait_with_output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // The repetition is kept (exit 0, nothing failed), marked and named.
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let dead = agents[1].addr.clone();
    assert!(
        stdout.contains(&format!("2 agents, INCOMPLETE: agent {dead} (repetition 1): ")),
        "{stdout}"
    );
    let row = stdout
        .lines()
        .find(|l| l.contains(&dead) && !l.contains("INCOMPLETE"))
        .unwrap_or_else(|| panic!("no lane of {dead}: {stdout}"));
    assert!(row.contains("FAILED"), "{row}");
    let conn = rusqlite::Connection::open(dir.path().join("k.db")).unwrap();
    let json: String = conn
        .query_row("SELECT result_json FROM measurements WHERE status = 'ok'", [], |r| {
            r.get(0)
        })
        .unwrap();
    let r: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(r["incomplete"], true, "{r}");
    let (kept, lost) = (&r["agents"][0], &r["agents"][1]);
    assert!(
        kept.get("failure").is_none() && kept["successes"].as_u64().unwrap() > 0,
        "{kept}"
    );
    assert!(lost["failure"]["after_ns"].as_i64().unwrap() > 0, "{lost}");
    assert_eq!(
        r["successes"], kept["successes"],
        "the merged figures are the kept agent's"
    );
}
