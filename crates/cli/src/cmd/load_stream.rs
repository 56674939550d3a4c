//! `protobench load` with a streaming workload (`--workload stream.*`):
//! one streaming run of the engine (`protobench_load::run_stream`),
//! printed as the per-message summary or as JSON. Ctrl-C and SIGTERM end
//! it early; what was measured is still printed (exit 130).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use protobench_model::stream::{StreamPlan, StreamResult};
use tokio_util::sync::CancellationToken;

use crate::exit::Exit;

/// Where and how the result goes.
pub(crate) struct Output {
    /// JSON instead of the summary.
    pub(crate) json: bool,
    /// `-o FILE`.
    pub(crate) out: Option<PathBuf>,
}

/// Runs the plan and prints its result; a run that could not start is
/// the engine's error, for the caller to report.
pub(crate) fn run(plan: StreamPlan, output: Output) -> anyhow::Result<Result<ExitCode, protobench_load::LoadError>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let mut signals = {
        let _runtime = rt.enter();
        super::common::ShutdownSignals::install()?
    };
    let result: Result<StreamResult, protobench_load::LoadError> = rt.block_on(async {
        let cancel = CancellationToken::new();
        let on_signal = cancel.clone();
        tokio::spawn(async move {
            if signals.recv().await.is_ok() {
                on_signal.cancel();
            }
        });
        protobench_load::run_stream(plan, cancel).await
    });
    let mut result = match result {
        Ok(r) => r,
        Err(e) => return Ok(Err(e)),
    };
    result.environment.commit = super::common::git_commit();
    let text = if output.json {
        serde_json::to_string_pretty(&result)? + "\n"
    } else {
        protobench_results::stream_summary::text(&result)
    };
    match &output.out {
        Some(path) => std::fs::write(path, &text).with_context(|| format!("writing --out {}", path.display()))?,
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
    }
    Ok(Ok(
        if result.end_reason == protobench_model::load::EndReason::Interrupted {
            ExitCode::from(Exit::Interrupted)
        } else {
            ExitCode::from(Exit::Success)
        },
    ))
}
