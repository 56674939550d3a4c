//! The seam between orchestration and the load engine.
//!
//! The runner drives measurements through the small [`Engine`] trait so its
//! orchestration (interleaving, failures, interruption, storage) is tested
//! with a scripted engine, while [`LoadEngine`] calls the real one
//! (`protobench_load::run` and `verify`).

use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use protobench_model::format::error_chain;
use protobench_model::load::{LoadPlan, LoadResult, TlsPlan};

/// What the engine reports while a measurement runs.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineEvent {
    /// Connections are open; the warm-up (then the measured window) starts now.
    Started {
        /// When.
        at: Instant,
    },
    /// One second of the measured window closed.
    Progress {
        /// Time since the measured window started.
        elapsed_ns: u64,
        /// Calls completed so far.
        calls: u64,
        /// Failed calls so far.
        errors: u64,
        /// Successful calls in the last second.
        rate: f64,
        /// p99 latency in the last second.
        p99_ns: u64,
    },
}

/// Measures and verifies servers.
pub trait Engine: Sync {
    /// Runs one load plan (warm-up included) and returns its result. A
    /// cancelled run returns the partial result with `end_reason = interrupted`.
    fn measure(
        &self,
        plan: LoadPlan,
        events: Option<UnboundedSender<EngineEvent>>,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<LoadResult, String>> + Send;

    /// Checks `workloads` of a server against the contract's vectors;
    /// `Err` says which workload failed and how.
    fn verify(
        &self,
        protocol: &str,
        target: &str,
        tls: bool,
        workloads: &[String],
    ) -> impl Future<Output = Result<(), String>> + Send;
}

/// The real engine.
#[derive(Debug, Clone)]
pub struct LoadEngine {
    /// The contract directory holding `vectors/`.
    pub contract_dir: PathBuf,
}

impl Engine for LoadEngine {
    async fn measure(
        &self,
        plan: LoadPlan,
        events: Option<UnboundedSender<EngineEvent>>,
        cancel: CancellationToken,
    ) -> Result<LoadResult, String> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let forward = tokio::spawn(async move {
            while let Some(e) = rx.recv().await {
                let mapped = match e {
                    protobench_load::Event::Started { .. } => EngineEvent::Started { at: Instant::now() },
                    protobench_load::Event::Progress {
                        elapsed_ns,
                        calls,
                        errors,
                        rate,
                        p99_ns,
                    } => EngineEvent::Progress {
                        elapsed_ns,
                        calls,
                        errors,
                        rate,
                        p99_ns,
                    },
                };
                if let Some(events) = &events {
                    let _ = events.send(mapped);
                }
            }
        });
        let result = protobench_load::run(plan, Some(tx), cancel)
            .await
            .map_err(|e| error_chain(&e));
        let _ = forward.await;
        result
    }

    async fn verify(&self, protocol: &str, target: &str, tls: bool, workloads: &[String]) -> Result<(), String> {
        let ws: Vec<&'static protobench_contract::Workload> = workloads
            .iter()
            .map(|w| protobench_contract::workload::find(w).ok_or_else(|| format!("unknown workload {w}")))
            .collect::<Result<_, _>>()?;
        let tls_plan = tls.then(|| TlsPlan {
            insecure: true,
            ..Default::default()
        });
        let report = protobench_load::verify(
            protocol,
            target,
            tls_plan.as_ref(),
            &ws,
            &self.contract_dir,
            Duration::from_secs(10),
        )
        .await
        .map_err(|e| error_chain(&e))?;
        if report.passed() {
            return Ok(());
        }
        let failed: Vec<String> = report
            .verdicts
            .iter()
            .filter(|v| v.outcome != protobench_load::Outcome::Ok)
            .map(|v| format!("{}: {}", v.workload, v.outcome))
            .collect();
        Err(failed.join("; "))
    }
}
