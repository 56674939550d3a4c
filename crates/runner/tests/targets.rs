//! `[[targets]]` in presets (issue #13): services protobench calls but does
//! not start.
//!
//! - a target forms a group and points like a server, beside the catalog's
//!   servers, with its own call, address, TLS and PID in the engine's plan
//! - a preset of targets only needs no servers, protocols or workloads
//! - every bad key or combination is named with its line, all at once
//! - the stored plan reads back (resume needs no preset)

use protobench_model::load::{Protocol, Validation};
use protobench_model::run::PointKind;
use protobench_runner::manifest::Catalog;
use protobench_runner::plan::TARGET_WORKLOAD;
use protobench_runner::preset::{self, Context};
use protobench_runner::units::CpuSet;

fn ctx() -> Context {
    Context {
        catalog: Catalog::load(None),
        cpus: CpuSet::parse("0-1").unwrap(),
    }
}

#[test]
fn targets_form_groups_and_points_beside_servers() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("api.protoset"), b"").unwrap();
    let file = dir.path().join("mine.toml");
    let text = format!(
        r#"kind = "fixed"
servers = ["rust"]
protocols = ["rest"]
workloads = ["inventory.xs"]
repetitions = 2
[load]
concurrency = [1, 4]

[[targets]]
name = "orders"
protocol = "rest"
url = "http://127.0.0.1:8080/v1/orders"
method = "POST"
headers = ["x-k: v"]
data = '{{"id": 1}}'

[[targets]]
name = "greeter"
protocol = "grpc"
address = "127.0.0.1:50051"
call = "helloworld.Greeter/SayHello"
protoset = "api.protoset"
data = '{{"request": {{"name": "a"}}}}'
insecure = true
pid = {pid}
"#,
        pid = std::process::id()
    );
    std::fs::write(&file, &text).unwrap();
    let plan = preset::load(&file, &ctx()).unwrap_or_else(|e| panic!("{e}"));
    // rust x 2 concurrencies, then each target x 2 concurrencies.
    assert_eq!(plan.points.len(), 6);
    assert_eq!(
        plan.groups.iter().map(|g| g.server.as_str()).collect::<Vec<_>>(),
        ["rust", "orders", "greeter"]
    );
    let greeter = &plan.groups[2];
    assert_eq!(
        (greeter.protocols.as_slice(), greeter.tls),
        (&[Protocol::Grpc][..], true)
    );
    let p = &plan.points[greeter.points[1] as usize];
    assert_eq!(
        (p.workload.as_str(), p.concurrency, p.kind),
        (TARGET_WORKLOAD, 4, PointKind::Fixed)
    );

    // The engine's plan carries the target's own call, address and TLS.
    let lp = plan.load_plan(p, "ignored", 4, 1_000_000_000, 0);
    assert_eq!(lp.target, "127.0.0.1:50051");
    assert_eq!(lp.workload, None);
    let custom = lp.custom.as_ref().unwrap();
    assert_eq!(custom.call.as_deref(), Some("helloworld.Greeter/SayHello"));
    assert_eq!(
        custom.protoset.as_deref(),
        Some(dir.path().join("api.protoset").as_path())
    );
    assert!(lp.tls.as_ref().unwrap().insecure);
    protobench_load::validate(&lp).unwrap();
    let orders = plan.target("orders").unwrap();
    assert_eq!(orders.custom.method.as_deref(), Some("POST"));
    assert_eq!(
        (
            orders.custom.headers[0].name.as_str(),
            orders.custom.headers[0].value.as_str()
        ),
        ("x-k", "v")
    );
    assert_eq!(plan.target("greeter").unwrap().pid, Some(std::process::id()));
    // A server's points are unchanged.
    let rust = plan.load_plan(&plan.points[0], "127.0.0.1:1", 1, 1, 0);
    assert_eq!(
        (rust.workload.as_deref(), rust.custom.is_none()),
        (Some("inventory.xs"), true)
    );

    // The report's notes say what was not done.
    let notes = plan.notes.join("\n");
    assert!(
        notes.contains("target `orders` (rest POST / at http://127.0.0.1:8080/v1/orders) is not verified")
            && notes.contains("server CPU and memory not measured (no pid)")
            && notes.contains(&format!("sampled from PID {}", std::process::id())),
        "{notes}"
    );
    // Stored with the run, read back for --resume.
    let json = serde_json::to_string(&plan).unwrap();
    assert_eq!(
        serde_json::from_str::<protobench_runner::plan::Plan>(&json).unwrap(),
        plan
    );
}

#[test]
fn a_preset_of_targets_only_needs_no_servers() {
    let text = r#"validate = "full"
[load]
concurrency = 2
[[targets]]
name = "api"
protocol = "rest-h2"
address = "127.0.0.1:9"
path = "/health"
"#;
    let plan = preset::resolve(text, "t.toml", &ctx()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((plan.points.len(), plan.groups.len()), (1, 1));
    assert_eq!(plan.validate, Validation::Full);
    assert_eq!(plan.points[0].label(), "api rest-h2 custom c=2");
    assert!(plan.targets[0].pid.is_none() && plan.targets[0].tls.is_none());
}

#[test]
fn bad_targets_are_named_with_their_lines() {
    let text = r#"network = ["lan-1g"]
[[targets]]
name = "rust"
protocol = "grpc"
address = "http://127.0.0.1:1"
method = "GET"
proto = "missing.proto"
protoset = "missing.protoset"
soap_action = "x"
pid = 0

[[targets]]
protocol = "smtp"
url = "ftp://x"
insecure = true
cacert = "none.pem"
headers = ["no colon"]
"#;
    let err = preset::resolve(text, "t.toml", &ctx()).unwrap_err();
    let got: Vec<String> = err
        .issues
        .iter()
        .map(|i| format!("{}:{}: {}", i.line, i.key, i.message))
        .collect();
    let want = [
        "1:network: puts a server protobench starts behind an emulated link; a target is a service protobench does not start: run the targets in a preset without `network`",
        "3:targets[0].name: `rust` is a server protobench starts; give the target another name",
        "5:targets[0].address: `http://127.0.0.1:1` is not host:port (a URL goes in `url`)",
        "6:targets[0].method: applies only to protocol rest, rest-h2 or soap, not grpc",
        "7:targets[0].proto: no file ./missing.proto (relative paths start at the preset's directory)",
        "8:targets[0].protoset: and targets[0].proto cannot be used together",
        "8:targets[0].protoset: no file ./missing.protoset (relative paths start at the preset's directory)",
        "9:targets[0].soap_action: applies only to protocol soap, not grpc",
        "10:targets[0].pid: must be a process ID (1 or more), found 0",
        "13:targets[1].protocol: unknown `smtp` (accepted: rest, rest-h2, grpc, soap, graphql, graphql-get, connect, connect-json, grpc-web, grpc-web-text)",
        "14:targets[1].url: `ftp://x` is not an http:// or https:// URL (host:port goes in `address`)",
        "15:targets[1].insecure: and targets[1].cacert cannot be used together",
        "16:targets[1].cacert: no file ./none.pem (relative paths start at the preset's directory)",
        "17:targets[1].headers[0]: `no colon` is not \"Name: value\"",
    ];
    for w in want {
        assert!(got.iter().any(|g| g == w), "missing {w:?} in:\n{}", got.join("\n"));
    }
    // Missing keys are named at the entry.
    assert!(
        got.iter()
            .any(|g| g.ends_with("targets[0].call: missing: the gRPC method, e.g. call = \"package.Service/Method\"")),
        "{}",
        got.join("\n")
    );
    assert!(
        got.iter()
            .any(|g| g.ends_with("targets[1].name: missing: the target's name, e.g. \"my-api\"")),
        "{}",
        got.join("\n")
    );

    // An unknown key stops toml at its line, naming it.
    let err = preset::resolve(
        "[[targets]]\nname = \"a\"\nprotocol = \"rest\"\naddress = \"127.0.0.1:1\"\nbody = \"x\"\n",
        "t.toml",
        &ctx(),
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("t.toml:5:1: targets.body: unknown field `body`, expected one of "),
        "{text}"
    );

    // What the engine refuses is refused here, in its words.
    let err = preset::resolve(
        "[[targets]]\nname = \"a\"\nprotocol = \"rest\"\naddress = \"127.0.0.1:1\"\nmethod = \"GE T\"\n",
        "t.toml",
        &ctx(),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains(": targets[0]: --method \"GE T\": not a valid HTTP method"),
        "{err}"
    );
}

/// Engine double: rate = min(100 x concurrency, 1000); records every plan
/// and counts verifications (a target must get none).
#[derive(Default)]
struct Recording {
    calls: std::sync::Mutex<Vec<protobench_model::load::LoadPlan>>,
    verifies: std::sync::Mutex<usize>,
}

impl protobench_runner::engine::Engine for Recording {
    async fn measure(
        &self,
        plan: protobench_model::load::LoadPlan,
        _events: Option<tokio::sync::mpsc::UnboundedSender<protobench_runner::engine::Event>>,
        _cancel: tokio_util::sync::CancellationToken,
    ) -> Result<protobench_model::load::LoadResult, protobench_runner::error::MeasureError> {
        self.calls.lock().unwrap().push(plan.clone());
        let rate = (100.0 * plan.concurrency as f64).min(1000.0);
        let mut r = protobench_model::testing::result(plan.protocol.name(), "", rate, 0, 1);
        r.duration_ns = 20_000_000;
        r.plan = plan;
        Ok(r)
    }

    async fn verify(
        &self,
        _protocol: Protocol,
        _target: &str,
        _tls: bool,
        _workloads: &[String],
    ) -> Result<(), protobench_runner::error::VerifyError> {
        *self.verifies.lock().unwrap() += 1;
        Ok(())
    }
}

/// Every kind runs on a target: nothing is started or verified, every
/// engine run carries the target's call, and no server cost is stored
/// without a PID.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_runs_on_a_target_without_starting_or_verifying_it() {
    let target = "[[targets]]\nname = \"api\"\nprotocol = \"grpc\"\naddress = \"127.0.0.1:9\"\ncall = \"a.B/C\"\n";
    let kinds = [
        ("fixed", "[load]\nconcurrency = 2\n", vec![2]),
        ("rate", "[load]\nmode = \"open\"\nrate = 50\nconcurrency = 4\n", vec![4]),
        // 2 -> 200/s, 4 -> 400, 8 -> 800, 16 -> 1000, 32 -> 1000 (no gain): best 16, measured
        (
            "discover",
            "[discover]\nstep_duration = \"1s\"\n",
            vec![2, 4, 8, 16, 32, 16],
        ),
        // 1, 6, 11, 16: the stepped ramp stops at its max
        (
            "ramp",
            "[ramp]\nstepped = true\nstart = 1\nstep = 5\nmax = 16\nstep_duration = \"1s\"\n",
            vec![1, 6, 11, 16],
        ),
    ];
    for (kind, load, want) in kinds {
        let text = format!("kind = \"{kind}\"\nrepetitions = 1\nwarmup = \"0s\"\nduration = \"1s\"\n{load}{target}");
        let plan = preset::resolve(&text, "t.toml", &ctx()).unwrap_or_else(|e| panic!("{kind}: {e}"));
        let dir = tempfile::tempdir().unwrap();
        let mut store = protobench_results::store::Store::open(&dir.path().join("r.db")).unwrap();
        let id = store
            .create_run(&protobench_results::store::NewRun {
                preset: plan.preset.clone(),
                preset_path: None,
                plan: serde_json::to_value(&plan).unwrap(),
                repetitions: plan.repetitions,
                noise_threshold: plan.noise_threshold,
                environment: Default::default(),
                points: plan.points.clone(),
                started_at: "now".into(),
            })
            .unwrap();
        let todo = plan.points.iter().map(|p| (p.index, 1)).collect();
        let engine = Recording::default();
        // A server start would run this and fail: nothing may be started.
        let opts = protobench_runner::orchestrate::RunOptions::new("/bin/false".into(), None, dir.path().join("work"));
        let outcome = protobench_runner::orchestrate::execute(
            &plan,
            &ctx().catalog,
            &engine,
            &mut store,
            id,
            &todo,
            &opts,
            None,
            tokio_util::sync::CancellationToken::new(),
        )
        .await;
        assert_eq!(
            (outcome.measured, outcome.failed),
            (1, 0),
            "{kind}: {:?}",
            outcome.warnings
        );
        assert_eq!(
            *engine.verifies.lock().unwrap(),
            0,
            "{kind}: a target is never verified"
        );
        let calls = engine.calls.lock().unwrap();
        let conc: Vec<u32> = calls.iter().map(|c| c.concurrency).collect();
        assert_eq!(conc, want, "{kind}");
        for c in calls.iter() {
            assert_eq!(
                (
                    c.target.as_str(),
                    c.workload.as_deref(),
                    c.custom.as_ref().and_then(|c| c.call.as_deref())
                ),
                ("127.0.0.1:9", None, Some("a.B/C")),
                "{kind}"
            );
        }
        let run = store.load_run(id).unwrap();
        assert!(run.measurements[0].server_cost.is_none(), "{kind}");
        assert!(
            run.warnings
                .iter()
                .any(|w| w.contains("target `api`") && w.contains("is not verified"))
        );
    }
}
