//! Preset validation: every problem is reported before anything starts, with
//! the file, line, column and key, and the accepted values.
//!
//! - every shipped preset resolves on a 2-CPU machine
//! - every claim of a study says where the study says so
//! - grpcbench judges the write-up on its 100 B string; its 2-CPU claims are
//!   refused on a server with one CPU
//! - Berg's Python claims name the servers the study ran
//! - Bolanowski: every task I-V has its clear and TLS claim
//! - the quick preset is what the issue asks for
//! - a table of broken presets and their exact messages
//! - matrix expansion, server groups and the interleaved schedule

use std::path::Path;

use protobench_model::findings::{self, Operand};
use protobench_model::load::Protocol;
use protobench_model::run::{PointAggregate, PointKind};
use protobench_model::testing;
use protobench_runner::manifest::Catalog;
use protobench_runner::preset::{self, Context};
use protobench_runner::units::CpuSet;

fn ctx() -> Context {
    Context {
        catalog: Catalog::load(None),
        cpus: CpuSet::parse("0-1").unwrap(),
    }
}

/// The shipped presets may name any server in the repository's servers/.
fn shipped() -> Context {
    let servers = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../servers");
    Context {
        catalog: Catalog::load(Some(&servers)),
        ..ctx()
    }
}

fn presets_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../presets")
}

#[test]
fn every_shipped_preset_resolves() {
    let shipped = shipped();
    let mut n = 0;
    for e in std::fs::read_dir(presets_dir()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let plan = preset::load(&p, &shipped).unwrap_or_else(|e| panic!("{e}"));
            assert!(!plan.points.is_empty(), "{}", p.display());
            // Every claim of a study names points the preset measures.
            let unmatched: Vec<&String> = plan.notes.iter().filter(|n| n.starts_with("finding ")).collect();
            assert!(unmatched.is_empty(), "{}: {unmatched:?}", p.display());
            n += 1;
        }
    }
    assert!(n >= 6, "expected the quick preset and one per study, found {n}");
}

/// Issue 29: a claim without its place in the study cannot be checked
/// against the study; the loader refuses one, and every shipped claim has one.
#[test]
fn every_shipped_claim_says_where_the_study_says_so() {
    let shipped = shipped();
    let mut claims = 0;
    for e in std::fs::read_dir(presets_dir()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let plan = preset::load(&p, &shipped).unwrap_or_else(|e| panic!("{e}"));
            for f in &plan.findings {
                assert!(f.source.len() >= 5, "{}: `{}` has no source", p.display(), f.claim);
                if let protobench_model::findings::Expect::Equal { .. } = f.expect {
                    assert!(
                        f.why.as_ref().is_some_and(|w| w.len() > 10),
                        "{}: `{}`",
                        p.display(),
                        f.claim
                    );
                }
                claims += 1;
            }
        }
    }
    assert!(claims >= 100, "{claims} claims");
}

/// Issue 29, item 7: the write-up's default request was a 100 B string, so
/// its claims are judged there; a claim on another workload must say that it
/// is protobench's addition, in its text and its source.
#[test]
fn grpcbench_judges_the_write_up_on_its_100_byte_string() {
    let plan = preset::load(&presets_dir().join("grpcbench.toml"), &shipped()).unwrap_or_else(|e| panic!("{e}"));
    let addition = "protobench addition, not in the write-up";
    for f in &plan.findings {
        let mut sides = vec![&f.a];
        if let Operand::Point(b) = &f.b {
            sides.push(b);
        }
        sides.extend(f.a2.iter().chain(f.b2.iter()));
        let workloads: Vec<Option<&str>> = sides.iter().map(|s| s.workload.as_deref()).collect();
        if workloads.iter().all(|w| *w == Some("grpcbench.string-100b")) {
            continue;
        }
        assert!(
            f.claim.contains(addition) && f.source.contains(addition),
            "`{}` is judged on {workloads:?}, not the write-up's grpcbench.string-100b, and does not say it is protobench's addition",
            f.claim
        );
    }
    // The headline claims the write-up makes are there: the 2-CPU memory
    // column and Python among the last at 1 CPU.
    let claims: Vec<&str> = plan.findings.iter().map(|f| f.claim.as_str()).collect();
    for want in [
        "2 CPUs: Java about 200 MB",
        "2 CPUs: C++ and Rust",
        "1 CPU: Python is among the last",
    ] {
        assert!(
            claims.iter().any(|c| c.starts_with(want)),
            "no claim `{want}...` in {claims:#?}"
        );
    }
}

/// On a 2-core machine the server gets one CPU, so every claim with a point
/// at `cpu_limit = 2` is "not reproducible here" and the 1-CPU claims are
/// judged: the same measurements at every point, judged as a run would.
#[test]
fn grpcbench_two_cpu_claims_are_refused_on_a_server_with_one_cpu() {
    let plan = preset::load(&presets_dir().join("grpcbench.toml"), &shipped()).unwrap_or_else(|e| panic!("{e}"));
    let server_cpus = plan.server_cpus.as_ref().map(CpuSet::len);
    assert_eq!(server_cpus, Some(1), "a 2-core machine pins the server to one CPU");
    let points: Vec<PointAggregate> = plan
        .points
        .iter()
        .map(|p| {
            let ms: Vec<_> = (1..=3)
                .map(|r| testing::measurement(p, r, 1000.0 * f64::from(r)))
                .collect();
            PointAggregate::of(p, &ms.iter().collect::<Vec<_>>(), 0.1)
        })
        .collect();
    let judged = findings::judge(&plan.findings, &points, &findings::Conditions { server_cpus });
    let mut two = 0;
    for j in &judged {
        let f = &j.finding;
        let mut sides = vec![&f.a];
        if let Operand::Point(b) = &f.b {
            sides.push(b);
        }
        if sides.iter().any(|s| s.cpu_limit == Some(2.0)) {
            two += 1;
            assert_eq!(
                j.verdict,
                findings::Verdict::NotReproducible,
                "`{}`: {}",
                f.claim,
                j.reason
            );
            assert!(j.reason.ends_with("asks for 2 CPUs; the server had 1"), "{}", j.reason);
            assert!(
                f.claim.starts_with("2 CPUs"),
                "`{}` needs 2 CPUs and should say so",
                f.claim
            );
        } else {
            assert_ne!(
                j.verdict,
                findings::Verdict::NotReproducible,
                "`{}`: {}",
                f.claim,
                j.reason
            );
            assert_ne!(j.verdict, findings::Verdict::NotMeasured, "`{}`: {}", f.claim, j.reason);
        }
    }
    // Go, Node, Rust's p99 and the three memory claims of the 2-CPU series.
    assert_eq!(two, 6);
}

/// Berg & Mebrahtu Redi ran FastAPI on 10 uvicorn workers with
/// ORJSONResponse and grpcio's thread-pool server: the Python claims name
/// those variants, and the stack's default python server is not measured.
#[test]
fn berg_python_claims_name_the_servers_the_study_ran() {
    let shipped = shipped();
    for name in ["berg2023", "berg2023-lan"] {
        let plan =
            preset::load(&presets_dir().join(format!("{name}.toml")), &shipped).unwrap_or_else(|e| panic!("{e}"));
        let mut python = 0;
        for f in &plan.findings {
            let mut sides = vec![&f.a];
            if let Operand::Point(b) = &f.b {
                sides.push(b);
            }
            sides.extend(f.a2.iter().chain(f.b2.iter()));
            for s in sides
                .iter()
                .filter(|s| s.server.as_deref().is_some_and(|n| n.starts_with("python")))
            {
                let want = match s.protocol {
                    Some(Protocol::Rest) => "python:uvicorn-workers",
                    Some(Protocol::Grpc) => "python:grpcio-sync",
                    other => panic!("{name}: `{}` names python with {other:?}", f.claim),
                };
                assert_eq!(s.server.as_deref(), Some(want), "{name}: `{}`", f.claim);
                python += 1;
            }
        }
        // XS, S, M, L (a and b each) and the trend's four points
        assert_eq!(python, 4 * 2 + 4, "{name}");
        let servers: Vec<&str> = plan.points.iter().map(|p| p.server.as_str()).collect();
        assert!(
            !servers.contains(&"python"),
            "{name}: the stack's default python server is not the study's"
        );
    }
}

/// Bolanowski's tasks I-V each have a clear and a TLS claim with a new
/// connection per call, with the study's two medians beside it.
#[test]
fn bolanowski_claims_every_small_task_clear_and_tls() {
    let plan = preset::load(&presets_dir().join("bolanowski2022.toml"), &shipped()).unwrap_or_else(|e| panic!("{e}"));
    for workload in [
        "tasks.clone-hello",
        "tasks.clone-lorem",
        "tasks.int",
        "tasks.ints",
        "tasks.objects",
    ] {
        for tls in [false, true] {
            let n = plan
                .findings
                .iter()
                .filter(|f| {
                    f.a.workload.as_deref() == Some(workload)
                        && f.a.tls == Some(tls)
                        && f.study.len() == 2
                        && matches!(&f.b, Operand::Point(b) if b.workload.as_deref() == Some(workload) && b.protocol != f.a.protocol)
                })
                .count();
            assert_eq!(n, 1, "{workload} tls={tls}: one REST vs gRPC claim");
        }
    }
}

/// The studies' main conclusions compare ratios (issue 29): each study
/// preset of Berg, CMPT453 and Hedelin encodes one as a trend.
#[test]
fn each_main_conclusion_is_a_trend_claim() {
    let shipped = shipped();
    for (name, trends) in [
        ("berg2023", 3),
        ("berg2023-lan", 3),
        ("cmpt453", 1),
        ("hedelin2024", 2),
        ("hedelin2024-tls", 1),
    ] {
        let plan =
            preset::load(&presets_dir().join(format!("{name}.toml")), &shipped).unwrap_or_else(|e| panic!("{e}"));
        let found = plan
            .findings
            .iter()
            .filter(|f| f.a2.is_some() && f.b2.is_some())
            .count();
        assert_eq!(found, trends, "{name}");
    }
}

#[test]
fn each_study_preset_expands_to_its_studys_matrix() {
    let shipped = shipped();
    // (preset, points, claims): each count is the product of the study's
    // dimensions, so a preset that drops or adds a case fails here.
    let table = [
        // 3 stacks x REST/gRPC x inventory XS..L (python's REST and gRPC
        // are two variants, one protocol each)
        ("berg2023", 3 * 2 * 4, 15),
        // the same on loopback and lan-1g
        ("berg2023-lan", 3 * 2 * 4 * 2, 15),
        // REST/gRPC x tasks I-VII x clear/TLS x per-call/reused
        ("bolanowski2022", 2 * 7 * 2 * 2, 15),
        // REST/gRPC x tasks I, III, V x clear/TLS x loopback/2 ms
        ("bolanowski2022-rtt", 2 * 3 * 2 * 2, 7),
        // Flask REST, FastAPI REST, grpc.aio x concurrency 1/10/50/100
        ("cmpt453", 3 * 4, 6),
        // the same three x 5 echo sizes at c=10
        ("cmpt453-payload", 3 * 5, 5),
        // the same three x c=20/50/100 at 20% failures
        ("cmpt453-failures", 3 * 3, 4),
        // 6 gRPC stacks x 5 messages x 1 and 2 CPUs
        ("grpcbench", 6 * 5 * 2, 13),
        // SOAP/REST/gRPC x 4 shapes x 50/100/200 users
        ("hedelin2024", 3 * 4 * 3, 23),
        // SOAP/REST/gRPC, one ramp each
        ("hedelin2024-ramp", 3, 4),
        // SOAP/REST/gRPC x clear/TLS
        ("hedelin2024-tls", 3 * 2, 6),
    ];
    for (name, points, claims) in table {
        let plan =
            preset::load(&presets_dir().join(format!("{name}.toml")), &shipped).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((plan.points.len(), plan.findings.len()), (points, claims), "{name}");
        assert_eq!(
            plan.repetitions, 3,
            "{name}: every study point is repeated for an interval"
        );
        assert!(
            plan.notes.iter().any(|n| n.starts_with("differs from the study: ")),
            "{name}: says what differs"
        );
    }
}

#[test]
fn quick_preset_is_four_protocols_four_workloads_six_short_repetitions() {
    let plan = preset::load(&presets_dir().join("quick.toml"), &ctx()).unwrap();
    assert_eq!(plan.kind, PointKind::Fixed);
    // six pairs of 1 s give the relative table's paired intervals t(0.975, 5)
    assert_eq!(plan.repetitions, 6);
    assert_eq!(plan.points.len(), 16);
    assert_eq!(plan.groups.len(), 1, "one server process per repetition");
    assert_eq!(plan.groups[0].protocols, Protocol::CORE);
    assert!(plan.points.iter().all(|p| p.rate.is_none() && p.server == "rust"));
    assert_eq!(plan.server_cpus.as_ref().unwrap().to_string(), "0");
    assert_eq!(plan.generator_cpus.as_ref().unwrap().to_string(), "1");
    // 96 measurements of 1.25 s each: well within 3 minutes.
    let secs = plan.total() as f64 * (plan.duration_ns + plan.warmup_ns) as f64 / 1e9;
    assert!(secs <= 150.0, "{secs} s of measurement");
}

const BASE: &str = r#"servers = ["rust"]
protocols = ["rest"]
workloads = ["inventory.xs"]
"#;

fn err(text: &str) -> String {
    preset::resolve(text, "presets/t.toml", &ctx()).unwrap_err().to_string()
}

#[test]
fn broken_presets_name_file_line_key_and_accepted_values() {
    let cases: &[(&str, &str)] = &[
        // unknown kind lists the kinds
        (
            "kind = \"sweep\"\nservers = [\"rust\"]\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 1\n",
            "presets/t.toml:1:8: kind: unknown value `sweep` (accepted: fixed, discover, ramp, rate, stream)",
        ),
        // unknown protocol lists the protocols
        (
            "servers = [\"rust\"]\nprotocols = [\"rest\", \"odata\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 1\n",
            "presets/t.toml:2:22: protocols[1]: unknown `odata` (accepted: rest, rest-h2, grpc, soap, graphql, graphql-get, connect, connect-json, grpc-web, grpc-web-text)",
        ),
        // unknown server lists the servers
        (
            "servers = [\"tomcat\"]\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 1\n",
            "presets/t.toml:1:12: servers[0]: unknown `tomcat` (accepted: rust)",
        ),
        // closed loop without concurrency
        (
            "servers = [\"rust\"]\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[load]\nmode = \"closed\"\n",
            "presets/t.toml:4:1: load.concurrency: missing: closed loop needs the calls in flight (e.g. concurrency = [1, 10, 50])",
        ),
        // more connections than concurrency names both keys
        (
            "servers = [\"rust\"]\nprotocols = [\"grpc\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 10\nconnections = 50\n",
            "presets/t.toml:6:15: load.connections: number of connections (50) cannot be greater than load.concurrency (10)",
        ),
        // a misspelt key: serde lists the accepted keys
        (
            "servers = [\"rust\"]\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurency = 1\n",
            "presets/t.toml:5:1: load.concurency: unknown field `concurency`, expected one of `mode`, `concurrency`, `connections`, `rate`, `arrival`",
        ),
        // a duration without unit
        (
            "servers = [\"rust\"]\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\nduration = \"10\"\n[load]\nconcurrency = 1\n",
            "presets/t.toml:4:12: duration: `10` has no unit (accepted: ns, us, ms, s, m, h)",
        ),
        // overlapping CPU sets
        (
            "servers = [\"rust\"]\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 1\n[server]\ncpus = \"0-1\"\n[generator]\ncpus = \"1\"\n",
            "presets/t.toml:9:8: generator.cpus: CPUs `1` overlap server.cpus `0-1`: server and generator must run on disjoint CPU sets",
        ),
        // CPUs that do not exist
        (
            "servers = [\"rust\"]\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 1\n[server]\ncpus = \"7\"\n",
            "presets/t.toml:7:8: server.cpus: CPUs `7` are not all available (available: 0-1)",
        ),
        // a section for another kind
        (
            "servers = [\"rust\"]\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 1\n[ramp]\nstep = 15\n",
            "presets/t.toml:6:1: ramp: is only used with kind = \"ramp\" (this preset has kind = \"fixed\")",
        ),
        // a failure rate above 1
        (
            "servers = [\"rust\"]\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 1\n[server]\nfailure_rate = 20\n",
            "presets/t.toml:7:16: server.failure_rate: must be a fraction between 0 and 1, found 20",
        ),
        // a bad service time
        (
            "servers = [\"rust\"]\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 1\n[server]\nservice_time = \"nap:1ms\"\n",
            "presets/t.toml:7:16: server.service_time: unknown service time mode `nap` (accepted: sleep, spin)",
        ),
        // rate kind without rates
        (
            "kind = \"rate\"\nservers = [\"rust\"]\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 8\n",
            "presets/t.toml:5:1: load.rate: missing: open loop needs calls per second (e.g. rate = [1, 100, 1000])",
        ),
        // discover with a fixed concurrency
        (
            "kind = \"discover\"\nservers = [\"rust\"]\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 8\n",
            "presets/t.toml:6:15: load.concurrency: is chosen by the search with kind = \"discover\": remove it (set [discover] instead)",
        ),
        // TOML syntax error
        (
            "servers = [\"rust\"\nprotocols = [\"rest\"]\n",
            "presets/t.toml:2:1: protocols: missing comma between array elements, expected `,`",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(err(text), *want, "\n--- preset ---\n{text}");
    }
}

#[test]
fn unknown_workload_lists_the_workloads() {
    let e =
        err("servers = [\"rust\"]\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xxl\"]\n[load]\nconcurrency = 1\n");
    assert!(
        e.starts_with(
            "presets/t.toml:3:14: workloads[0]: unknown `inventory.xxl` (accepted: inventory.xs, inventory.s,"
        ),
        "{e}"
    );
    assert!(e.contains("grpcbench.complex"), "{e}");
}

#[test]
fn all_problems_are_reported_at_once_in_file_order() {
    let e = err(
        "kind = \"x\"\nservers = [\"rust\"]\nprotocols = [\"ftp\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 0\n",
    );
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 3, "{e}");
    assert!(lines[0].starts_with("presets/t.toml:1:"));
    assert!(lines[1].starts_with("presets/t.toml:3:"));
    assert!(lines[2].starts_with("presets/t.toml:6:"));
}

#[test]
fn matrix_expands_knobs_into_server_groups() {
    let text = format!(
        "{BASE}tls = [false, true]\n[load]\nconcurrency = [1, 10]\n[server]\nfailure_rate = [0.0, 0.2]\ncpu_limit = 1\nmemory_limit = \"256MiB\"\n"
    );
    let plan = preset::resolve(&text, "t.toml", &ctx()).unwrap();
    // 2 tls x 2 failure rates = 4 server processes, each with 2 concurrency points
    assert_eq!(plan.groups.len(), 4);
    assert_eq!(plan.points.len(), 8);
    assert!(
        plan.groups
            .iter()
            .all(|g| g.points.len() == 2 && g.cpu_limit == Some(1.0))
    );
    assert_eq!(plan.groups[0].memory_limit_bytes, Some(256 << 20));
    assert!(plan.points.iter().any(|p| p.tls && p.failure_rate == 0.2));
}

#[test]
fn http1_connections_always_equal_concurrency() {
    let text = "servers = [\"rust\"]\nprotocols = [\"rest\", \"grpc\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 100\nconnections = 4\n";
    let plan = preset::resolve(text, "t.toml", &ctx()).unwrap();
    let rest = plan.points.iter().find(|p| p.protocol == Protocol::Rest).unwrap();
    let grpc = plan.points.iter().find(|p| p.protocol == Protocol::Grpc).unwrap();
    assert_eq!((rest.concurrency, rest.connections), (100, 100));
    assert_eq!((grpc.concurrency, grpc.connections), (100, 4));
}

#[test]
fn repetitions_are_interleaved_and_rotated() {
    let text = format!("{BASE}repetitions = 2\ntls = [false, true]\n[load]\nconcurrency = 1\n");
    let plan = preset::resolve(&text, "t.toml", &ctx()).unwrap();
    let order: Vec<(u32, u32)> = plan.schedule().iter().map(|(rep, g, _)| (*rep, *g)).collect();
    // every group once per repetition, never the same group twice in a row
    assert_eq!(order, [(1, 0), (1, 1), (2, 1), (2, 0)]);
}

#[test]
fn peers_run_back_to_back_in_an_order_drawn_anew_each_repetition() {
    let text = "servers = [\"rust\"]\nprotocols = [\"rest\", \"rest-h2\", \"grpc\", \"soap\"]\nworkloads = [\"inventory.xs\", \"inventory.m\", \"echo.8k\"]\nrepetitions = 6\n[load]\nconcurrency = 16\n";
    let plan = preset::resolve(text, "t.toml", &ctx()).unwrap();
    let schedule = plan.schedule();
    assert_eq!(schedule.len(), 6);
    let mut orders = Vec::new();
    for (_, _, order) in &schedule {
        // every point once per repetition
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..12).collect::<Vec<u32>>());
        // the four protocols of one workload are measured back to back
        let workloads: Vec<&str> = order
            .iter()
            .map(|&p| plan.points[p as usize].workload.as_str())
            .collect();
        for block in workloads.chunks(4) {
            assert!(block.iter().all(|w| *w == block[0]), "{workloads:?}");
        }
        orders.push(order.clone());
    }
    // drawn anew: no two repetitions in the same order, and not always the
    // same protocol first
    for i in 0..orders.len() {
        for j in i + 1..orders.len() {
            assert_ne!(orders[i], orders[j], "repetitions {} and {}", i + 1, j + 1);
        }
    }
    let firsts: std::collections::BTreeSet<_> = orders.iter().map(|o| plan.points[o[0] as usize].protocol).collect();
    assert!(firsts.len() > 1, "{firsts:?}");
    // and the same plan always runs in the same order
    assert_eq!(plan.schedule(), schedule);
}

#[test]
fn open_loop_rates_become_points() {
    let text = format!("kind = \"rate\"\n{BASE}[load]\nrate = [1, 10, 100]\n");
    let plan = preset::resolve(&text, "t.toml", &ctx()).unwrap();
    let rates: Vec<Option<f64>> = plan.points.iter().map(|p| p.rate).collect();
    assert_eq!(rates, [Some(1.0), Some(10.0), Some(100.0)]);
    assert_eq!(plan.points[0].load_label(), "rate=1/s");
}

#[test]
fn one_cpu_machine_is_not_pinned_and_says_so() {
    let ctx = Context {
        catalog: Catalog::load(None),
        cpus: CpuSet::parse("0").unwrap(),
    };
    let plan = preset::resolve(&format!("{BASE}[load]\nconcurrency = 1\n"), "t.toml", &ctx).unwrap();
    assert!(plan.server_cpus.is_none() && plan.generator_cpus.is_none());
    assert!(plan.notes.iter().any(|n| n.contains("not pinned")), "{:?}", plan.notes);
}

/// More calls in flight than one engine run takes (100,000) are refused when
/// the preset is read, not when the engine starts after the earlier points.
#[test]
fn concurrency_beyond_the_engines_range_is_refused_by_key() {
    let cases = [
        (
            format!("{BASE}[load]\nconcurrency = [10, 200000]\n"),
            "presets/t.toml:5:15: load.concurrency: must be between 1 and 100000 (calls in flight in one engine run), found 200000",
        ),
        (
            format!("kind = \"discover\"\n{BASE}[discover]\nmax = 100001\n"),
            "presets/t.toml:6:7: discover.max: must be at most 100000 (calls in flight in one engine run), found 100001",
        ),
        (
            format!("kind = \"ramp\"\n{BASE}[ramp]\nmax = 4000000000\n"),
            "presets/t.toml:6:7: ramp.max: must be at most 100000 (calls in flight in one engine run), found 4000000000",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(err(&text), want);
    }
    let ok = preset::resolve(&format!("{BASE}[load]\nconcurrency = 100000\n"), "t.toml", &ctx()).unwrap();
    assert_eq!(ok.points[0].concurrency, 100_000);
}

/// Issue 14, item 8: a duration no engine run can have is refused by name,
/// never wrapped past 2^64 ns (`warmup = 18446744073.8` was 90 ms) nor a panic
/// (`duration = 1e30`).
#[test]
fn durations_beyond_the_engines_range_are_refused() {
    let load = "[load]\nconcurrency = 1\n";
    let cases = [
        (
            format!("{BASE}duration = 1e30\n{load}"),
            "presets/t.toml:4:12: duration: must be at most 1000000s (11.6 days)",
        ),
        (
            format!("{BASE}warmup = 18446744073.8\n{load}"),
            "presets/t.toml:4:10: warmup: must be at most 1000000s (11.6 days)",
        ),
        (
            format!("{BASE}warmup = \"steady\"\nwarmup_max = \"300h\"\n{load}"),
            "presets/t.toml:5:14: warmup_max: must be at most 1000000s (11.6 days)",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(err(&text), want);
    }
    let ok = preset::resolve(&format!("{BASE}warmup = \"steady\"\n{load}"), "t.toml", &ctx()).unwrap();
    assert_eq!(ok.warmup_ns, 120_000_000_000, "warmup_max defaults to 120 s");
    assert!(ok.warmup_steady.is_some());
    assert_eq!(
        err(&format!("{BASE}warmup = \"1s\"\nwarmup_max = \"5s\"\n{load}")),
        "presets/t.toml:5:14: warmup_max: only goes with warmup = \"steady\" (the longest a steady-state warm-up may take)"
    );
    assert_eq!(
        ok.warmup_steady.unwrap().min_s,
        10,
        "warmup_min defaults to the test's 10 s window"
    );
    assert_eq!(ok.warmup_steady.unwrap().window_s, 10);
    let min = preset::resolve(
        &format!("{BASE}warmup = \"steady\"\nwarmup_min = \"30s\"\n{load}"),
        "t.toml",
        &ctx(),
    )
    .unwrap();
    assert_eq!(min.warmup_steady.unwrap().min_s, 30);
    assert_eq!(
        err(&format!(
            "{BASE}warmup = \"steady\"\nwarmup_min = \"30s\"\nwarmup_max = \"20s\"\n{load}"
        )),
        "presets/t.toml:5:14: warmup_min: must not be longer than warmup_max (20s)"
    );
    assert_eq!(
        err(&format!("{BASE}warmup = \"1s\"\nwarmup_min = \"5s\"\n{load}")),
        "presets/t.toml:5:14: warmup_min: only goes with warmup = \"steady\" (the shortest a steady-state warm-up may take)"
    );
}

/// `--servers`, `--protocols` and `--workloads` replace the preset's lists;
/// bad values are named by their flag, and the file's own problems keep their
/// line numbers even where a multi-line list was replaced.
#[test]
fn command_line_overrides_replace_the_lists_and_are_checked_like_the_file() {
    let shipped = shipped();
    let text = "name = \"t\"\nservers = [\n  \"rust\",\n]\nprotocols = [\"rest\", \"grpc\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 4\n";
    let o = preset::Overrides {
        servers: Some(vec!["go".into(), "rust".into()]),
        protocols: Some(vec!["soap".into()]),
        workloads: None,
    };
    let plan = preset::resolve_with(text, "presets/t.toml", &shipped, &o).unwrap_or_else(|e| panic!("{e}"));
    let got: Vec<(String, Protocol)> = plan.points.iter().map(|p| (p.server.clone(), p.protocol)).collect();
    assert_eq!(
        got,
        vec![("go".into(), Protocol::Soap), ("rust".into(), Protocol::Soap)]
    );
    // Without overrides: the file as written.
    let plain = preset::resolve_with(text, "presets/t.toml", &shipped, &preset::Overrides::default()).unwrap();
    assert_eq!(plain.points.len(), 2);
    assert!(plain.points.iter().all(|p| p.server == "rust"));

    // A bad override names its flag; a bad file value keeps its line (8).
    let bad = preset::Overrides {
        servers: Some(vec!["nope".into()]),
        ..Default::default()
    };
    let e = preset::resolve_with(
        &text.replace("concurrency = 4", "concurrency = 0"),
        "presets/t.toml",
        &shipped,
        &bad,
    )
    .unwrap_err()
    .to_string();
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 2, "{e}");
    assert!(
        lines[0].starts_with("--servers: ")
            && lines[0].contains("nope")
            && lines[0].ends_with("(command line, for presets/t.toml)"),
        "{e}"
    );
    assert!(lines[1].starts_with("presets/t.toml:8:15: load.concurrency: "), "{e}");
}

/// `--claims-only` keeps the points the claims read, renumbered, and every
/// claim still reads one point; a preset without claims is refused.
#[test]
fn claims_only_keeps_the_points_the_claims_read_and_nothing_else() {
    let shipped = shipped();
    let only = preset::CommandLine {
        claims_only: true,
        ..Default::default()
    };
    // (preset, points of the full matrix, points its claims read):
    // Bolanowski's claims are all on a new connection per call; the GraphQL
    // extension's on task V, clear, reused, REST/gRPC/GraphQL; CMPT453's on
    // Flask and grpc.aio (FastAPI is shown, not claimed).
    for (name, all, read) in [
        ("bolanowski2022", 56, 28),
        ("bolanowski2022-graphql", 84, 3),
        ("cmpt453", 12, 8),
    ] {
        let path = presets_dir().join(format!("{name}.toml"));
        let full = preset::load(&path, &shipped).unwrap_or_else(|e| panic!("{e}"));
        let plan = preset::load_command(&path, &shipped, &only).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((full.points.len(), plan.points.len()), (all, read), "{name}");
        // Exactly the points some claim reads, in plan order, renumbered.
        let claimed: Vec<_> = full
            .points
            .iter()
            .filter(|p| full.findings.iter().any(|f| f.selectors().iter().any(|s| s.matches(p))))
            .map(|p| (p.server.clone(), p.protocol, p.workload.clone(), p.tls, p.policy()))
            .collect();
        let kept: Vec<_> = plan
            .points
            .iter()
            .map(|p| (p.server.clone(), p.protocol, p.workload.clone(), p.tls, p.policy()))
            .collect();
        assert_eq!(kept, claimed, "{name}");
        assert!(
            plan.points.iter().enumerate().all(|(i, p)| p.index == i as u32),
            "{name}"
        );
        // Every point in exactly one group; groups numbered by position and
        // none empty; the schedule measures each point once a repetition.
        let mut served: Vec<u32> = plan.groups.iter().flat_map(|g| g.points.clone()).collect();
        served.sort();
        assert_eq!(served, (0..read as u32).collect::<Vec<_>>(), "{name}");
        assert!(
            plan.groups
                .iter()
                .enumerate()
                .all(|(i, g)| g.index == i as u32 && !g.points.is_empty())
        );
        assert_eq!(
            plan.schedule().iter().map(|(_, _, p)| p.len()).sum::<usize>(),
            read * plan.repetitions as usize
        );
        // Each side of each claim still matches exactly one point.
        for f in &plan.findings {
            for sel in f.selectors() {
                let n = plan.points.iter().filter(|p| sel.matches(p)).count();
                assert_eq!(n, 1, "{name}: {} reads {}", f.claim, sel.describe());
            }
        }
        let note = format!("claims only: {read} of the preset's {all} points are measured");
        assert!(
            plan.notes.iter().any(|n| n.starts_with(&note)),
            "{name}: {:?}",
            plan.notes
        );
    }
    // No claims, nothing to keep: refused, naming the flag.
    let e = preset::load_command(&presets_dir().join("quick.toml"), &shipped, &only)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("--claims-only: the preset states no claims"), "{e}");
}

/// `--time-scale` multiplies the experiment's durations (not per-call
/// limits), is recorded, and refuses what is not a scale.
#[test]
fn time_scale_multiplies_every_experiment_duration() {
    let text = &format!(
        "{BASE}kind = \"discover\"\nwarmup = \"2s\"\nduration = \"100s\"\ntimeout = \"10s\"\n[discover]\nstep_duration = \"20s\"\n"
    );
    let mut plan = preset::resolve(text, "t.toml", &ctx()).unwrap_or_else(|e| panic!("{e}"));
    plan.scale_time(0.1).unwrap();
    assert_eq!(plan.warmup_ns, 200_000_000);
    assert_eq!(plan.duration_ns, 10_000_000_000);
    assert_eq!(plan.discover.as_ref().unwrap().step_ns, 2_000_000_000);
    assert_eq!(
        plan.timeout_ns, 10_000_000_000,
        "a call's limit is not the experiment's length"
    );
    assert_eq!(plan.time_scale, 0.1);
    assert!(
        plan.notes.iter().any(|n| n.starts_with("time scale 0.1:")),
        "{:?}",
        plan.notes
    );
    let json = serde_json::to_value(&plan).unwrap();
    assert_eq!(json["time_scale"], 0.1);
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e6] {
        let e = plan.clone().scale_time(bad).unwrap_err();
        assert!(
            e.starts_with("--time-scale: ") && e.contains("expected a number above 0"),
            "{e}"
        );
    }
    // A steady warm-up keeps the 10-second window its test needs.
    let mut steady = preset::resolve(
        &format!("{BASE}warmup = \"steady\"\nwarmup_min = \"30s\"\n[load]\nconcurrency = 1\n"),
        "t.toml",
        &ctx(),
    )
    .unwrap();
    steady.scale_time(0.5).unwrap();
    assert_eq!(steady.warmup_steady.unwrap().min_s, 15);
    steady.scale_time(0.01).unwrap();
    assert_eq!(steady.warmup_steady.unwrap().min_s, 10);
}

/// `[[findings]]`: claims of the study, checked against the plan's points.
#[test]
fn findings_are_checked_against_the_plan() {
    let base = "servers = [\"rust\"]\nprotocols = [\"rest\", \"grpc\"]\nworkloads = [\"inventory.xs\"]\ntls = [false, true]\n[load]\nconcurrency = 1\n";
    let ok = format!(
        "{base}[[findings]]\nclaim = \"gRPC leads\"\nmetric = \"rate\"\na = {{ protocol = \"grpc\", tls = false }}\nb = {{ protocol = \"rest\", tls = false }}\nexpect = \">\"\nabout = 1.7\nsource = \"Figure 5.3\"\nstudy = [4000, 2300]\n[[findings]]\nclaim = \"a tenth fail\"\nsource = \"Experiment 3\"\nkind = \"injector-check\"\nmetric = \"error_rate\"\na = {{ protocol = \"grpc\", tls = true }}\nb = 0.1\nexpect = \"=\"\nwithin = 0.5\nwhy = \"a seeded draw per call\"\n[[findings]]\nclaim = \"not here\"\nsource = \"p. 4\"\nmetric = \"p95\"\na = {{ server = \"go\", protocol = \"grpc\", tls = false }}\nb = {{ protocol = \"rest\", tls = false }}\nexpect = \"<\"\n"
    );
    let plan = preset::resolve(&ok, "t.toml", &ctx()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plan.findings.len(), 3);
    assert_eq!(plan.findings[0].study, vec![4000.0, 2300.0]);
    assert_eq!(
        plan.findings[0].size,
        Some(protobench_model::findings::SizeClaim::About(1.7))
    );
    assert_eq!(plan.findings[0].source, "Figure 5.3");
    assert_eq!(
        plan.findings[1].kind,
        protobench_model::findings::ClaimKind::InjectorCheck
    );
    assert!(matches!(plan.findings[1].b, protobench_model::findings::Operand::Value(v) if v == 0.1));
    assert!(
        plan.notes
            .iter()
            .any(|n| n.starts_with("finding 3: no point go grpc clear in this plan")),
        "{:?}",
        plan.notes
    );

    let bad = format!(
        "{base}[[findings]]\nclaim = \"x\"\nmetric = \"speed\"\na = {{ protocol = \"grpc\" }}\nb = {{ protokol = \"rest\" }}\nexpect = \">=\"\n[[findings]]\nclaim = \"y\"\nmetric = \"rate\"\na = {{ protocol = \"grpc\", tls = false }}\nb = 1\nexpect = \">\"\nwithin = 0.1\nsource = \"x\"\n"
    );
    let e = preset::resolve(&bad, "t.toml", &ctx()).unwrap_err().to_string();
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 6, "{e}");
    assert_eq!(
        lines[0],
        "t.toml:7:1: findings.source: missing: say where the study says so (section, figure, table or page)"
    );
    assert!(
        lines[1].starts_with("t.toml:9:10: findings.metric: unknown metric `speed` (accepted: rate, mean, p50"),
        "{e}"
    );
    assert!(
        lines[2].starts_with("t.toml:10:5: findings.a: matches 2 points (rust grpc inventory.xs"),
        "{e}"
    );
    assert!(
        lines[3].starts_with("t.toml:11:5: findings.b: unknown field `protokol`"),
        "{e}"
    );
    assert_eq!(
        lines[4],
        "t.toml:12:10: findings.expect: unknown relation `>=` (accepted: >, <, =)"
    );
    assert_eq!(lines[5], "t.toml:19:10: findings.within: only goes with expect = \"=\"");
}

/// Sizes, equality reasons and trends: each mistake named with its key.
#[test]
fn claim_sizes_reasons_and_trends_are_checked() {
    let base = "servers = [\"rust\"]\nprotocols = [\"rest\", \"grpc\"]\nworkloads = [\"inventory.xs\", \"inventory.m\"]\n[load]\nconcurrency = 1\n[[findings]]\nclaim = \"c\"\nsource = \"s\"\nmetric = \"rate\"\na = { protocol = \"grpc\", workload = \"inventory.xs\" }\nb = { protocol = \"rest\", workload = \"inventory.xs\" }\n";
    let cases: &[(&str, &str)] = &[
        // a size on the wrong side of 1 for its relation
        (
            "expect = \">\"\nabout = 0.5\n",
            "findings.about: 0.5 contradicts expect = \">\": the ratio a/b must be above 1",
        ),
        (
            "expect = \"<\"\nat_most = 2\n",
            "findings.at_most: 2 contradicts expect = \"<\": the ratio a/b must be below 1",
        ),
        // two sizes
        (
            "expect = \">\"\nabout = 2\nat_least = 1.5\n",
            "findings.at_least: goes with `about`: give one of about, at_least, at_most",
        ),
        // an equality without its reason, or without its tolerance
        (
            "expect = \"=\"\nwithin = 0.1\n",
            "findings.why: missing: say why the tolerance is what it is",
        ),
        (
            "expect = \"=\"\n",
            "findings.within: missing: expect = \"=\" needs within = F",
        ),
        // half a trend
        (
            "expect = \">\"\na2 = { protocol = \"grpc\", workload = \"inventory.m\" }\n",
            "findings.a2: a trend needs both a2 and b2",
        ),
        (
            "expect = \">\"\nkind = \"check\"\n",
            "findings.kind: unknown kind `check` (accepted: finding, injector-check)",
        ),
        (
            "expect = \">\"\nneeds = \"wan\"\n",
            "findings.needs: unknown condition `wan` (accepted: link, application)",
        ),
    ];
    for (tail, want) in cases {
        let text = format!("{base}{tail}");
        let e = preset::resolve(&text, "t.toml", &ctx()).unwrap_err().to_string();
        assert!(e.lines().any(|l| l.contains(want)), "{tail}: {e}");
    }
    let trend = format!(
        "{base}a2 = {{ protocol = \"grpc\", workload = \"inventory.m\" }}\nb2 = {{ protocol = \"rest\", workload = \"inventory.m\" }}\nexpect = \">\"\nneeds = \"link\"\ntimeouts = \"expected\"\n"
    );
    let plan = preset::resolve(&trend, "t.toml", &ctx()).unwrap_or_else(|e| panic!("{e}"));
    let f = &plan.findings[0];
    assert_eq!(f.a2.as_ref().and_then(|s| s.workload.as_deref()), Some("inventory.m"));
    assert_eq!(f.needs, vec![protobench_model::findings::Need::Link]);
    assert!(f.timeouts_expected);
}

#[test]
fn broken_networks_name_file_line_key_and_the_accepted_forms() {
    let cases: &[(&str, &str)] = &[
        (
            "network = [\"loopback\", \"lan-10g\"]\n",
            "presets/t.toml:4:24: network[1]: unknown network profile `lan-10g` (accepted: loopback, lan-1g, wan-100m-40ms, mobile-4g, or settings like rate=100mbit,delay=20ms)",
        ),
        (
            "network = [\"rate=100mb\"]\n",
            "presets/t.toml:4:12: network[0]: rate: `100mb` is not a rate (accepted: a number with bit, kbit, mbit or gbit, e.g. 100mbit)",
        ),
        (
            "network = [\"lan-1g\", \"lan-1g\"]\n",
            "presets/t.toml:4:22: network[1]: `lan-1g` is listed twice",
        ),
        (
            "network = []\n",
            "presets/t.toml:4:11: network: is empty (accepted: loopback, lan-1g, wan-100m-40ms, mobile-4g, or settings like rate=100mbit,delay=20ms)",
        ),
    ];
    for (extra, want) in cases {
        assert_eq!(
            err(&format!("{BASE}{extra}[load]\nconcurrency = 1\n")),
            *want,
            "{extra}"
        );
    }
}

#[test]
fn networks_are_a_matrix_dimension_outermost() {
    let text = format!("{BASE}network = [\"loopback\", \"rate=100mbit,delay=20ms\"]\n[load]\nconcurrency = [1, 8]\n");
    let plan = preset::resolve(&text, "presets/t.toml", &ctx()).unwrap();
    // one server group per network, each network's points contiguous
    assert_eq!(plan.groups.len(), 2);
    assert_eq!(plan.points.len(), 4);
    let nets: Vec<Option<&str>> = plan.points.iter().map(|p| p.network.as_deref()).collect();
    assert_eq!(
        nets,
        [
            Some("loopback"),
            Some("loopback"),
            Some("rate=100mbit,delay=20ms"),
            Some("rate=100mbit,delay=20ms")
        ]
    );
    assert_eq!(
        plan.groups[1].network.as_ref().map(ToString::to_string).as_deref(),
        Some("rate=100mbit,delay=20ms")
    );
    assert_eq!(plan.groups[1].points, [2, 3]);
    assert_eq!(plan.points[3].variant_label(), "c=8 net=rate=100mbit,delay=20ms");
    // no key, or loopback alone: points carry no network (labels as before)
    for extra in ["", "network = [\"loopback\"]\n"] {
        let text = format!("{BASE}{extra}[load]\nconcurrency = 1\n");
        let plan = preset::resolve(&text, "presets/t.toml", &ctx()).unwrap();
        assert!(plan.points.iter().all(|p| p.network.is_none()), "{extra}");
        assert!(plan.groups.iter().all(|g| g.network.is_none()), "{extra}");
    }
}

/// `graphql-get` is GET: a mutation workload cannot ride it, so the
/// protocols preset skips those pairs with one note each and keeps the
/// queries.
#[test]
fn protocols_preset_runs_only_queries_on_graphql_get() {
    let plan = preset::load(&presets_dir().join("protocols.toml"), &shipped()).unwrap();
    let on_get: Vec<&str> = plan
        .points
        .iter()
        .filter(|p| p.protocol == Protocol::GraphqlGet && p.server == "rust")
        .map(|p| p.workload.as_str())
        .collect();
    assert_eq!(on_get, ["inventory.s", "inventory.m"]);
    for w in ["echo.8k", "grpcbench.complex"] {
        let note = format!("`{w}` is a GraphQL mutation, which `graphql-get` (GET) cannot carry: skipped");
        assert_eq!(plan.notes.iter().filter(|n| **n == note).count(), 1, "{:?}", plan.notes);
        assert!(
            plan.points
                .iter()
                .any(|p| p.protocol == Protocol::Graphql && p.workload == w)
        );
        assert!(
            !plan
                .points
                .iter()
                .any(|p| p.protocol == Protocol::GraphqlGet && p.workload == w)
        );
    }
}
