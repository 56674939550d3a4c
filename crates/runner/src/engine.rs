//! The seam between orchestration and the load engine.
//!
//! The runner drives measurements through the small [`Engine`] trait so its
//! orchestration (interleaving, failures, interruption, storage) is tested
//! with a scripted engine, while [`LoadEngine`] calls the real one
//! (`protobench_load::run` and `verify`). The engine's own [`Event`]s pass
//! through unchanged to whoever renders progress.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

pub use protobench_load::Event;
use protobench_model::format::error_chain;
use protobench_model::load::{LoadPlan, LoadResult, Protocol, TlsPlan};
use protobench_model::stream::{StreamPlan, StreamPoint, StreamResult, StreamTransport};

use crate::error::{MeasureError, VerifyError, WorkloadFailure};

/// Measures and verifies servers.
pub trait Engine: Sync {
    /// Runs one load plan (warm-up included) and returns its result. A
    /// cancelled run returns the partial result with `end_reason = interrupted`.
    fn measure(
        &self,
        plan: LoadPlan,
        events: Option<UnboundedSender<Event>>,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<LoadResult, MeasureError>> + Send;

    /// Checks `workloads` of a server against the contract's vectors.
    fn verify(
        &self,
        protocol: Protocol,
        target: &str,
        tls: bool,
        workloads: &[String],
    ) -> impl Future<Output = Result<(), VerifyError>> + Send;

    /// Runs one streaming plan (a `stream` point). An engine that cannot
    /// (agents, a scripted test engine) says so as the point's failure.
    fn measure_stream(
        &self,
        plan: StreamPlan,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<StreamResult, MeasureError>> + Send {
        let _ = (plan, cancel);
        async { Err(MeasureError("this engine does not run streams".into())) }
    }

    /// Checks streaming workloads, each over its point's transport and
    /// frames, against the contract's stream vectors.
    fn verify_streams(
        &self,
        protocol: Protocol,
        target: &str,
        tls: bool,
        checks: &[(String, StreamPoint)],
    ) -> impl Future<Output = Result<(), VerifyError>> + Send {
        let _ = (protocol, target, tls, checks);
        async { Err(VerifyError::Unreachable("this engine does not verify streams".into())) }
    }
}

/// The real engine.
#[derive(Debug, Clone)]
pub struct LoadEngine {
    /// The contract directory holding `vectors/`.
    pub contract_dir: PathBuf,
    /// The commit the binary was built from, stamped on every result (the
    /// one source: the binary's build script).
    pub commit: Option<String>,
}

impl Engine for LoadEngine {
    async fn measure(
        &self,
        plan: LoadPlan,
        events: Option<UnboundedSender<Event>>,
        cancel: CancellationToken,
    ) -> Result<LoadResult, MeasureError> {
        let mut result = protobench_load::run(plan, events, cancel)
            .await
            .map_err(|e| MeasureError(error_chain(&e)))?;
        result.environment.commit = self.commit.clone();
        Ok(result)
    }

    async fn verify(
        &self,
        protocol: Protocol,
        target: &str,
        tls: bool,
        workloads: &[String],
    ) -> Result<(), VerifyError> {
        let ws: Vec<&'static protobench_contract::Workload> = workloads
            .iter()
            .map(|w| {
                protobench_contract::workload::find(w)
                    .ok_or_else(|| VerifyError::Unreachable(format!("unknown workload {w}")))
            })
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
        .map_err(|e| VerifyError::Unreachable(error_chain(&e)))?;
        verdicts_to_result(&report)
    }

    async fn measure_stream(&self, plan: StreamPlan, cancel: CancellationToken) -> Result<StreamResult, MeasureError> {
        self.measure_stream_now(plan, cancel).await
    }

    async fn verify_streams(
        &self,
        protocol: Protocol,
        target: &str,
        tls: bool,
        checks: &[(String, StreamPoint)],
    ) -> Result<(), VerifyError> {
        self.verify_streams_now(protocol, target, tls, checks).await
    }
}

impl LoadEngine {
    /// The engine's stream checks for `checks`: each workload over its
    /// transport, WebSocket in the point's frame type.
    fn stream_checks(protocol: Protocol, checks: &[(String, StreamPoint)]) -> Vec<protobench_load::StreamCheck> {
        let mut out = Vec::new();
        for (workload, point) in checks {
            out.extend(
                protobench_load::stream_checks(protocol, &[point.transport])
                    .into_iter()
                    .filter(|c| c.workload.name == workload.as_str())
                    .filter(|c| c.transport != StreamTransport::WebSocket || c.frames == point.frames),
            );
        }
        out
    }

    async fn measure_stream_now(
        &self,
        plan: StreamPlan,
        cancel: CancellationToken,
    ) -> Result<StreamResult, MeasureError> {
        let mut result = protobench_load::run_stream(plan, cancel)
            .await
            .map_err(|e| MeasureError(error_chain(&e)))?;
        result.environment.commit = self.commit.clone();
        Ok(result)
    }

    async fn verify_streams_now(
        &self,
        protocol: Protocol,
        target: &str,
        tls: bool,
        checks: &[(String, StreamPoint)],
    ) -> Result<(), VerifyError> {
        let engine_checks = Self::stream_checks(protocol, checks);
        if engine_checks.len() < checks.len() {
            return Err(VerifyError::Unreachable(format!(
                "{} of the streaming workloads cannot be checked over their transports on {protocol}",
                checks.len() - engine_checks.len()
            )));
        }
        let tls_plan = tls.then(|| TlsPlan {
            insecure: true,
            ..Default::default()
        });
        let report = protobench_load::verify_streams(
            protocol,
            target,
            tls_plan.as_ref(),
            &engine_checks,
            std::sync::Arc::new(protobench_contract::Dataset::generate()),
            Duration::from_secs(10),
        )
        .await
        .map_err(|e| VerifyError::Unreachable(error_chain(&e)))?;
        verdicts_to_result(&report)
    }
}

/// `Ok` when every verdict is, else the failures (injected ones marked).
fn verdicts_to_result(report: &protobench_load::VerifyReport) -> Result<(), VerifyError> {
    let failed: Vec<WorkloadFailure> = report
        .verdicts
        .iter()
        .filter(|v| v.outcome != protobench_load::Outcome::Ok)
        .map(|v| WorkloadFailure {
            workload: v.workload.clone(),
            finding: v.outcome.to_string(),
            injected: matches!(v.outcome, protobench_load::Outcome::Injected { .. }),
        })
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(VerifyError::Mismatch(failed))
    }
}

/// The engine of a run on agents (docs/distributed.md): each plan is
/// measured by the [`Coordinator`](crate::agents::coordinator::Coordinator)
/// over its agents; verification stays with the local engine (from the
/// coordinator's host). The run loop sees one more [`Engine`].
#[derive(Debug, Clone)]
pub struct AgentsEngine {
    /// Drives the agents.
    pub coordinator: crate::agents::coordinator::Coordinator,
    /// Verifies servers, and stamps the commit on results.
    pub local: LoadEngine,
}

impl Engine for AgentsEngine {
    async fn measure(
        &self,
        plan: LoadPlan,
        events: Option<UnboundedSender<Event>>,
        cancel: CancellationToken,
    ) -> Result<LoadResult, MeasureError> {
        let mut result = self
            .coordinator
            .run(plan, events, cancel)
            .await
            .map_err(|e| MeasureError(error_chain(&e)))?;
        result.environment.commit = self.local.commit.clone();
        Ok(result)
    }

    async fn verify(
        &self,
        protocol: Protocol,
        target: &str,
        tls: bool,
        workloads: &[String],
    ) -> Result<(), VerifyError> {
        self.local.verify(protocol, target, tls, workloads).await
    }

    /// Streams are not split over agents (`protobench_load::split` shares
    /// call load only): the point fails with this reason.
    async fn measure_stream(&self, plan: StreamPlan, cancel: CancellationToken) -> Result<StreamResult, MeasureError> {
        let _ = (plan, cancel);
        Err(MeasureError(format!(
            "a stream point cannot run on agents: they share call load only (fixed, rate, discover and stepped ramp points); run the streaming points without agents ({} agents given; docs/distributed.md)",
            self.coordinator.agents.len()
        )))
    }

    /// The servers' streams are checked from here, as their calls are.
    async fn verify_streams(
        &self,
        protocol: Protocol,
        target: &str,
        tls: bool,
        checks: &[(String, StreamPoint)],
    ) -> Result<(), VerifyError> {
        self.local.verify_streams_now(protocol, target, tls, checks).await
    }
}
