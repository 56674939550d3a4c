//! A concurrency schedule (issue 10) against a small in-test HTTP server on
//! loopback that counts connections on its side.
//!
//! - callers join on schedule and keep their connections: the server sees
//!   exactly the final user count of connections, all open at once, and
//!   `connections_opened` says the same (not a sum over steps)
//! - the timeline's users rise second by second while calls go on
//! - a cancelled schedule (the runner's knee stop) returns what ran
//!
//! Every run is bounded (at most ~2.5 s, a few thousand calls).

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use protobench_load::{EndReason, LoadPlan, Stage, plan_defaults, run};
use tokio_util::sync::CancellationToken;

/// Connection counts seen by the server.
#[derive(Default)]
struct Seen {
    accepted: AtomicU64,
    open: AtomicU64,
    max_open: AtomicU64,
    calls: AtomicU64,
}

/// An HTTP/1.1 server answering `tasks.int` on 127.0.0.1:0 that counts
/// connections (accepted, open, most open at once) and calls.
async fn serve(seen: Arc<Seen>) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            seen.accepted.fetch_add(1, Ordering::SeqCst);
            let open = seen.open.fetch_add(1, Ordering::SeqCst) + 1;
            seen.max_open.fetch_max(open, Ordering::SeqCst);
            let seen = seen.clone();
            tokio::spawn(async move {
                let s = seen.clone();
                let svc = hyper::service::service_fn(move |_req| {
                    s.calls.fetch_add(1, Ordering::SeqCst);
                    async move {
                        // A little service time, so a few callers do not flood the loop.
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        Ok::<_, Infallible>(
                            hyper::Response::builder()
                                .header("content-type", "application/json")
                                .body(Full::new(Bytes::from_static(br#"{"value":2147483647}"#)).boxed())
                                .unwrap(),
                        )
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
                seen.open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    addr
}

/// 1 user, then linearly to 8 over 2 s, then 0.5 s at 8 (HTTP/1.1: one connection per user).
fn ramp_plan(addr: std::net::SocketAddr) -> LoadPlan {
    let mut p = plan_defaults("rest".parse().unwrap(), &addr.to_string());
    p.workload = Some("tasks.int".into());
    p.duration_ns = None;
    p.start_users = 1;
    p.stages = vec![
        Stage {
            duration_ns: 2_000_000_000,
            target: 8,
        },
        Stage {
            duration_ns: 500_000_000,
            target: 8,
        },
    ];
    p.concurrency = 8;
    p.connections = 8;
    p.threads = 2;
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_join_on_schedule_and_keep_their_connections() {
    let seen = Arc::new(Seen::default());
    let addr = serve(seen.clone()).await;
    let r = run(ramp_plan(addr), None, CancellationToken::new()).await.unwrap();
    assert_eq!(r.end_reason, EndReason::Duration);
    assert_eq!(r.duration_ns, 2_500_000_000, "the stages' total is the window");
    assert_eq!(r.error_count(), 0, "{:?}", r.errors);
    // One connection per user, opened when the user joined, never replaced:
    // the final user count, not a sum over steps (1 + 2 + ... + 8 = 36).
    assert_eq!(r.connections_opened, 8);
    assert_eq!(seen.accepted.load(Ordering::SeqCst), 8);
    assert_eq!(
        seen.max_open.load(Ordering::SeqCst),
        8,
        "every earlier connection was still open"
    );
    // Users rise while calls go on: 1 + 3.5/s, joining at 2/7, 4/7, ... s;
    // the one due exactly at 2 s counts in the second it joined in (2).
    let users: Vec<u32> = r.timeline.iter().map(|p| p.users).collect();
    assert_eq!(users, [4, 7, 8], "{users:?}");
    assert!(r.timeline[0].successes > 0 && r.timeline[1].successes > r.timeline[0].successes);
    let p = &r.timeline[1];
    assert!(p.p50_ns > 0 && p.p50_ns <= p.p95_ns && p.p95_ns <= p.p99_ns, "{p:?}");
    assert!(seen.calls.load(Ordering::SeqCst) >= r.calls);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_schedule_returns_what_ran_with_the_users_so_far() {
    let seen = Arc::new(Seen::default());
    let addr = serve(seen.clone()).await;
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        // 1.3 s after the common start.
        while let Some(e) = events.recv().await {
            if let protobench_load::Event::Started { at, .. } = e {
                tokio::time::sleep_until((at + Duration::from_millis(1_300)).into()).await;
                stop.cancel();
            }
        }
    });
    let r = run(ramp_plan(addr), Some(tx), cancel).await.unwrap();
    assert_eq!(r.end_reason, EndReason::Interrupted);
    // At 1.3 s: 1 + floor(3.5 * 1.3) = 5 users had joined, each with its connection.
    assert_eq!(r.connections_opened, 5);
    assert_eq!(seen.accepted.load(Ordering::SeqCst), 5);
    assert_eq!(r.timeline.last().unwrap().users, 5, "{:?}", r.timeline);
}
