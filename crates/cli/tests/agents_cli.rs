//! `protobench agent` and `load --agents` as processes on loopback: the
//! merged result of three agents, the token and start refusals, a stage
//! schedule and Poisson arrivals split over two agents, an agent killed
//! mid-run, and Ctrl-C on the coordinator (docs/distributed.md).
//! Every run is bounded (seconds of load, `timeout` on each process).

mod common;

use common::{Agent, Killed};

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "agents-cli-test-token-0123456789";

fn token_file(dir: &tempfile::TempDir) -> String {
    let p = dir.path().join("token");
    std::fs::write(&p, format!("{TOKEN}\n")).unwrap();
    p.display().to_string()
}

/// Starts an agent on a free loopback port.
fn agent(token_file: &str) -> Agent {
    Agent::start(&["--token-file", token_file])
}

/// A `protobench serve --rest` and `n` agents sharing a token file.
struct Fleet {
    dir: tempfile::TempDir,
    token: String,
    /// The server's address.
    addr: String,
    agents: Vec<Agent>,
    /// The agents' addresses, comma-separated (`--agents`).
    list: String,
    _server: Killed,
}

fn fleet(n: usize) -> Fleet {
    let dir = tempfile::tempdir().unwrap();
    let token = token_file(&dir);
    let (server, addr) = common::serve("rest", &[]);
    let agents: Vec<Agent> = (0..n).map(|_| agent(&token)).collect();
    let list = agents.iter().map(|a| a.addr.as_str()).collect::<Vec<_>>().join(",");
    Fleet {
        dir,
        token,
        addr,
        agents,
        list,
        _server: Killed(server),
    }
}

/// Sends `sig` (e.g. `-KILL`) to process `pid`.
fn signal(sig: &str, pid: u32) {
    let status = Command::new("kill").args([sig, &pid.to_string()]).status().unwrap();
    assert!(status.success(), "kill {sig} {pid}");
}

fn json(stdout: &[u8]) -> serde_json::Value {
    serde_json::from_slice(stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(stdout)))
}

#[test]
fn three_agents_merge_into_one_result_with_each_agents_lane() {
    let f = fleet(3);
    let db = f.dir.path().join("results.db");
    let out = common::protobench(&common::agents_load_args(
        &f.addr,
        &f.list,
        &f.token,
        &[
            "--rate",
            "150",
            "-c",
            "30",
            "--duration",
            "3s",
            "--db",
            db.to_str().unwrap(),
        ],
    ));
    assert!(out.status.success(), "{}", common::stderr(&out));
    let r = json(&out.stdout);
    // The published schema holds the lanes.
    let schema_path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/load-result.schema.json");
    let schema: serde_json::Value = serde_json::from_slice(&std::fs::read(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&r)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    // Stored like any load result, lanes included.
    let stored: String = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT result_json FROM measurements", [], |row| row.get(0))
        .unwrap();
    let stored: serde_json::Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(stored["agents"], r["agents"]);
    // Merged seconds: every whole second of the window, summed over agents.
    let seconds = r["timeline"].as_array().unwrap();
    assert!(seconds.len() >= 3, "{seconds:?}");
    let lanes = r["agents"].as_array().unwrap();
    assert_eq!(lanes.len(), 3);
    assert!(r.get("incomplete").is_none(), "{r}");
    let sum = |k: &str| lanes.iter().map(|l| l[k].as_f64().unwrap()).sum::<f64>();
    // The merged counts are the agents' sums; the rate their sum (within
    // the windows' rounding: each lane's window is the same length).
    assert_eq!(r["calls"].as_f64().unwrap(), sum("calls"));
    assert_eq!(r["successes"].as_f64().unwrap(), sum("successes"));
    assert_eq!(r["latency"]["count"].as_f64().unwrap(), sum("successes"));
    let rate = r["rate"].as_f64().unwrap();
    assert!(
        (rate - sum("rate")).abs() <= 0.02 * rate,
        "merged {rate}, lanes {}",
        sum("rate")
    );
    // 150 calls/s asked: 50 each, offsets 0, 1/150 s, 2/150 s.
    assert!((rate - 150.0).abs() < 15.0, "merged rate {rate}");
    for (i, l) in lanes.iter().enumerate() {
        assert_eq!(l["index"], i as u64);
        assert_eq!(l["agent"], f.agents[i].addr);
        assert_eq!(l["rate_share"], 50.0);
        assert_eq!(
            l["start_offset_ns"].as_u64().unwrap(),
            (i as f64 * 1e9 / 150.0).round() as u64
        );
        assert!(l["clock_offset_ns"].is_i64(), "{l}");
        assert!(l["clock_uncertainty_ns"].as_u64().unwrap() > 0, "{l}");
        assert!(l["generator"]["generator_bound"].is_boolean());
        assert!(l["latency"]["max_ns"].as_u64().unwrap() <= r["latency"]["max_ns"].as_u64().unwrap());
    }
    // Percentiles come from the merged histogram, not an average: the
    // merged max is the largest lane max.
    let lane_max = lanes
        .iter()
        .map(|l| l["latency"]["max_ns"].as_u64().unwrap())
        .max()
        .unwrap();
    assert_eq!(r["latency"]["max_ns"].as_u64().unwrap(), lane_max);
}

#[test]
fn agents_refuse_a_coordinator_without_the_token_and_need_one_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let token = token_file(&dir);
    let a = agent(&token);
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "not-the-token-but-long-enough").unwrap();
    let out = common::protobench(&common::agents_load_args(
        "127.0.0.1:9",
        &a.addr,
        wrong.to_str().unwrap(),
        &["-c", "1", "--duration", "1s"],
    ));
    assert_eq!(out.status.code(), Some(3), "{}", common::stderr(&out));
    let e = common::stderr(&out);
    assert!(e.contains(&a.addr) && e.contains("401") && e.contains("token"), "{e}");
    // No default token: an agent without one does not start.
    let out = Command::new(env!("CARGO_BIN_EXE_protobench"))
        .args(["agent", "--listen", "127.0.0.1:0"])
        .env_remove("PROTOBENCH_AGENT_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::stderr(&out).contains("no agent token"),
        "{}",
        common::stderr(&out)
    );
    // Nor with a short one.
    let short = dir.path().join("short");
    std::fs::write(&short, "abc").unwrap();
    let out = common::protobench(&[
        "agent",
        "--listen",
        "127.0.0.1:0",
        "--token-file",
        short.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(common::stderr(&out).contains("at least 16"), "{}", common::stderr(&out));
}

#[test]
fn stage_schedules_and_poisson_arrivals_run_split_over_two_agents() {
    let f = fleet(2);
    // 2 callers, then 3 more over 2 s, held 1 s: 1 + 1 at the start, 3 + 2 at the peak.
    let out = common::protobench(&common::agents_load_args(
        &f.addr,
        &f.list,
        &f.token,
        &["--stage", "2s:5,1s:5", "--start-users", "2"],
    ));
    assert!(out.status.success(), "{}", common::stderr(&out));
    let r = json(&out.stdout);
    let lanes = r["agents"].as_array().unwrap();
    let shares: Vec<u64> = lanes.iter().map(|l| l["concurrency"].as_u64().unwrap()).collect();
    assert_eq!(shares, [3, 2], "{lanes:?}");
    assert!(
        lanes
            .iter()
            .all(|l| l["failure"].is_null() && l["calls"].as_u64().unwrap() > 0),
        "{lanes:?}"
    );
    // Callers only join, from the two at the start to the peak of five on
    // both agents together.
    let users: Vec<u64> = r["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["users"].as_u64().unwrap())
        .collect();
    assert!(
        users.len() >= 3 && users[0] >= 2 && users.windows(2).all(|w| w[0] <= w[1]) && users.last() == Some(&5),
        "users per second: {users:?}"
    );
    // Poisson at 400/s for 2 s: 200/s from each agent's own draw.
    let out = common::protobench(&common::agents_load_args(
        &f.addr,
        &f.list,
        &f.token,
        &["--rate", "400", "--arrival", "poisson", "-c", "40", "--duration", "2s"],
    ));
    assert!(out.status.success(), "{}", common::stderr(&out));
    let r = json(&out.stdout);
    assert_eq!(r["plan"]["arrival"], "poisson");
    let lanes = r["agents"].as_array().unwrap();
    assert!(
        lanes
            .iter()
            .all(|l| l["rate_share"] == 200.0 && l["failure"].is_null() && l["start_offset_ns"] == 0),
        "{lanes:?}"
    );
    // 800 intended calls expected; a Poisson count has sd ~28: 150 is over 5 sd.
    let calls = r["calls"].as_u64().unwrap();
    assert!(calls.abs_diff(800) < 150, "{calls} calls");
}

#[test]
fn an_agent_that_misses_the_start_is_refused_for_the_point() {
    let dir = tempfile::tempdir().unwrap();
    let token = token_file(&dir);
    let (server, addr) = common::serve("rest", &[]);
    let _server = Killed(server);
    let a = agent(&token);
    // A start 1 ms ahead cannot be met: the order arrives after it.
    let out = common::protobench(&common::agents_load_args(
        &addr,
        &a.addr,
        &token,
        &["-c", "2", "--duration", "1s", "--start-ahead", "1ms"],
    ));
    let r = json(&out.stdout);
    assert_eq!(r["incomplete"], true, "{r}");
    let failure = &r["agents"][0]["failure"];
    assert!(
        failure["message"].as_str().unwrap().contains("refused for this point"),
        "{failure}"
    );
    assert_eq!(r["calls"], 0);
}

#[test]
fn killing_an_agent_mid_run_keeps_the_others_and_names_it() {
    let f = fleet(2);
    let coordinator = Command::new(env!("CARGO_BIN_EXE_protobench"))
        .args(common::agents_load_args(
            &f.addr,
            &f.list,
            &f.token,
            &["--rate", "100", "-c", "20", "--duration", "8s", "--start-ahead", "1s"],
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Into the measured window (start 1 s ahead, then 3 s), kill agent 1:
    // counted from the coordinator's connection to it, not from the spawn
    // (a loaded machine may take seconds to start the coordinator).
    common::wait_connected(&f.agents[1].addr, Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(4));
    signal("-KILL", f.agents[1].child.id());
    let started = Instant::now();
    let out = coordinator.wait_with_output().unwrap();
    // The coordinator does not wait for the dead agent (the stall limit is
    // 1 s + the 10 s call timeout + 5 s; a broken connection is seen at once).
    assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = json(&out.stdout);
    assert_eq!(r["incomplete"], true, "{r}");
    let (kept, dead) = (&r["agents"][0], &r["agents"][1]);
    assert!(kept.get("failure").is_none(), "{kept}");
    assert!(kept["successes"].as_u64().unwrap() > 300, "{kept}");
    let failure = &dead["failure"];
    assert!(failure["after_ns"].as_i64().unwrap() > 1_000_000_000, "{failure}");
    assert!(!failure["message"].as_str().unwrap().is_empty());
    // The merged figures are the surviving agent's.
    assert_eq!(r["successes"], kept["successes"]);
    // The dead agent's lane keeps the seconds it streamed before dying.
    assert!(dead["successes"].as_u64().unwrap() > 0, "{dead}");
}

#[test]
fn ctrl_c_on_the_coordinator_stops_every_agent() {
    let f = fleet(2);
    let args = common::agents_load_args(
        &f.addr,
        &f.list,
        &f.token,
        &["--rate", "50", "-c", "10", "--duration", "60s", "--start-ahead", "1s"],
    );
    let coordinator = Command::new(env!("CARGO_BIN_EXE_protobench"))
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    signal("-INT", coordinator.id());
    let out = coordinator.wait_with_output().unwrap();
    let r = json(&out.stdout);
    assert_eq!(r["end_reason"], "interrupted", "{r}");
    // Every agent stopped its run: each takes a new one at once (an agent
    // still running would answer 409 "already running a plan").
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = common::protobench(&common::agents_load_args(
            &f.addr,
            &f.list,
            &f.token,
            &["-c", "2", "--duration", "1s"],
        ));
        if out.status.success() && json(&out.stdout).get("incomplete").is_none() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "agents still busy: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}
