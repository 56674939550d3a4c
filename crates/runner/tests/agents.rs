//! The agent's door (docs/distributed.md): an in-process agent on loopback
//! answers only a coordinator with the token and the same version, and
//! refuses malformed or oversized orders without running anything.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use protobench_runner::agents::{ClockReading, MAX_ORDER_BYTES, VERSION, VERSION_HEADER, agent};
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "runner-agent-test-token-0123456789";

async fn ask(
    addr: std::net::SocketAddr,
    method: Method,
    path: &str,
    token: Option<&str>,
    version: Option<&str>,
    body: Vec<u8>,
) -> (StatusCode, String) {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut req = Request::builder().method(method).uri(format!("http://agent{path}"));
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    if let Some(v) = version {
        req = req.header(VERSION_HEADER, v);
    }
    let resp = sender
        .send_request(req.body(Full::new(Bytes::from(body))).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let text = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&text).into_owned())
}

#[tokio::test]
async fn the_agent_answers_only_its_coordinator() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let cancel = CancellationToken::new();
    let config = agent::AgentConfig {
        token: TOKEN.into(),
        commit: None,
        tls: None,
    };
    let server = tokio::spawn(agent::serve(listener, config, cancel.clone()));
    // No token, a wrong one, one that is a prefix: 401, and nothing about the agent.
    for token in [None, Some("wrong-token-wrong-token-wrong-token"), Some(&TOKEN[..20])] {
        let (status, text) = ask(addr, Method::GET, "/v1/clock", token, Some(VERSION), Vec::new()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{token:?}");
        assert!(!text.contains(VERSION), "{text}");
    }
    // The token with another version (or none): 409, both named.
    let (status, text) = ask(addr, Method::GET, "/v1/clock", Some(TOKEN), Some("0.0.1"), Vec::new()).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(text.contains("version mismatch") && text.contains("0.0.1"), "{text}");
    let (status, _) = ask(addr, Method::GET, "/v1/clock", Some(TOKEN), None, Vec::new()).await;
    assert_eq!(status, StatusCode::CONFLICT);
    // Both right: the clock.
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let (status, text) = ask(addr, Method::GET, "/v1/clock", Some(TOKEN), Some(VERSION), Vec::new()).await;
    assert_eq!(status, StatusCode::OK);
    let reading: ClockReading = serde_json::from_str(&text).unwrap();
    assert!(reading.agent_ns >= before, "{text}");
    // Orders that are not orders are refused before anything runs.
    let (status, text) = ask(
        addr,
        Method::POST,
        "/v1/run",
        Some(TOKEN),
        Some(VERSION),
        b"{\"plan\":".to_vec(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
    let huge = vec![b' '; MAX_ORDER_BYTES + 1];
    let (status, _) = ask(addr, Method::POST, "/v1/run", Some(TOKEN), Some(VERSION), huge).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let (status, _) = ask(addr, Method::GET, "/v1/other", Some(TOKEN), Some(VERSION), Vec::new()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    cancel.cancel();
    tokio::time::timeout(std::time::Duration::from_secs(10), server)
        .await
        .expect("the agent stops when cancelled")
        .unwrap()
        .unwrap();
}

/// The point kinds agents do not run fail as points, each with its reason,
/// before any agent is asked (the agents here do not even exist): a stream
/// point says so, a schedule the split cannot share carries its refusal.
#[tokio::test]
async fn streams_and_schedules_are_refused_per_point_on_agents() {
    use protobench_runner::engine::{AgentsEngine, Engine, LoadEngine};
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let engine = AgentsEngine {
        coordinator: protobench_runner::agents::coordinator::Coordinator {
            agents: vec!["127.0.0.1:9".into(), "127.0.0.1:10".into()],
            token: TOKEN.into(),
            max_clock_uncertainty: std::time::Duration::from_millis(10),
            start_ahead: std::time::Duration::from_secs(1),
            agent_wait: std::time::Duration::ZERO,
            tls: None,
        },
        local: LoadEngine {
            contract_dir: repo.join("contract"),
            commit: None,
        },
    };
    let ctx = protobench_runner::preset::Context {
        catalog: protobench_runner::manifest::Catalog::load(None),
        cpus: protobench_runner::units::CpuSet::parse("0-1").unwrap(),
    };
    let rust_only = protobench_runner::preset::Overrides {
        servers: Some(vec!["rust".into()]),
        ..Default::default()
    };
    let streaming =
        protobench_runner::preset::load_with(&repo.join("presets/streaming.toml"), &ctx, &rust_only).unwrap();
    let point = &streaming.points[0];
    let plan = streaming.stream_plan(point, "127.0.0.1:1", 1_000_000_000).unwrap();
    let e = engine.measure_stream(plan, CancellationToken::new()).await.unwrap_err();
    assert!(
        e.0.contains("a stream point cannot run on agents") && e.0.contains("2 agents"),
        "{e:?}"
    );

    let quick = protobench_runner::preset::load(&repo.join("presets/quick.toml"), &ctx).unwrap();
    let mut plan = quick.load_plan(&quick.points[0], "127.0.0.1:1", 4, 1_000_000_000, 0);
    // A concurrency schedule is split stage by stage; one whose stage
    // cannot give each agent a caller fails as the point, naming the stage.
    plan.stages = vec![
        protobench_load::Stage {
            duration_ns: 1_000_000_000,
            target: 1,
        },
        protobench_load::Stage {
            duration_ns: 1_000_000_000,
            target: 4,
        },
    ];
    let e = engine.measure(plan, None, CancellationToken::new()).await.unwrap_err();
    assert!(
        e.0.contains("cannot split the plan over 2 agents") && e.0.contains("--stage 1 (1s:1)"),
        "{e:?}"
    );
}
