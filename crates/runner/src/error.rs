//! The runner's errors, as variants a caller can match.
//!
//! A [`RunnerError`] is why one measurement (or a run) could not be taken;
//! the orchestrator records it as the measurement's failure (its Display is
//! the stored reason) and goes on with the run. Nothing decides anything by
//! looking inside a message: whether every verification failure was an
//! injected one, for example, is a property of [`VerifyError`].

use protobench_model::load::Protocol;
use protobench_results::store::StoreError;

/// One workload that did not verify, as the engine found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadFailure {
    /// The workload's name.
    pub workload: String,
    /// What was found against what was expected (`FAIL: found X, expected Y`).
    pub finding: String,
    /// The server answered with the contract's injected failure
    /// (`PROTOBENCH_FAILURE_RATE`): a correct answer under failure injection.
    pub injected: bool,
}

/// Why a server did not pass verification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// Some workloads were answered wrongly (at least one entry).
    #[error("{}", .0.iter().map(|f| format!("{}: {}", f.workload, f.finding)).collect::<Vec<_>>().join("; "))]
    Mismatch(Vec<WorkloadFailure>),
    /// The server could not be asked at all (connection, TLS, unknown workload).
    #[error("{0}")]
    Unreachable(String),
}

impl VerifyError {
    /// Whether every failure was the contract's injected failure.
    pub fn only_injected(&self) -> bool {
        matches!(self, VerifyError::Mismatch(fs) if fs.iter().all(|f| f.injected))
    }
}

/// The load engine could not run a plan (failed calls are data, not this).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MeasureError(pub String);

/// Why a measurement or a run could not be completed.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The server could not be started (no manifest, missing toolchain, not
    /// built, crashed or timed out at start).
    #[error("{reason}")]
    ServerStart {
        /// Server name.
        server: String,
        /// What went wrong, naming the server.
        reason: String,
        /// The end of its output, when it ran.
        log_tail: Option<String>,
    },
    /// A protocol of the server failed verification against the vectors.
    #[error("verification of `{server}` {protocol} failed: {difference}")]
    Verification {
        /// Server name.
        server: String,
        /// The protocol that failed.
        protocol: Protocol,
        /// The first differences found.
        difference: VerifyError,
        /// The end of the server's output.
        log_tail: String,
    },
    /// The server process exited when it should have been serving.
    #[error("server `{server}` exited ({status}){}", context_text(.context))]
    ServerExited {
        /// Server name.
        server: String,
        /// Exit status, as text.
        status: String,
        /// When it was found and what else failed.
        context: ExitContext,
        /// The end of the server's output.
        log_tail: String,
    },
    /// The engine could not run the measurement.
    #[error("measurement failed: {0}")]
    Measurement(#[source] MeasureError),
    /// Ctrl-C or SIGTERM.
    #[error("interrupted")]
    Interrupted,
    /// The emulated link of the point's network could not be checked,
    /// created or measured (docs/network.md).
    #[error("network `{network}`: {reason}")]
    Network {
        /// The network as the preset writes it.
        network: String,
        /// What went wrong (the error chain).
        reason: String,
    },
    /// The results database failed (the store's error names the file).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// When a server was found to have exited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitContext {
    /// Before a point, after it had already been restarted once.
    AlreadyRestarted,
    /// During a measurement that itself completed.
    DuringMeasurement,
    /// During a measurement that failed with this engine error.
    DuringFailedMeasurement(MeasureError),
}

fn context_text(c: &ExitContext) -> String {
    match c {
        ExitContext::AlreadyRestarted => " and was already restarted once".into(),
        ExitContext::DuringMeasurement => " during the measurement".into(),
        ExitContext::DuringFailedMeasurement(e) => format!(" during the measurement: {e}"),
    }
}

impl RunnerError {
    /// The end of the server's output, when the error is about a server.
    pub fn log_tail(&self) -> Option<String> {
        match self {
            RunnerError::ServerStart { log_tail, .. } => log_tail.clone(),
            RunnerError::Verification { log_tail, .. } | RunnerError::ServerExited { log_tail, .. } => {
                Some(log_tail.clone())
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(workload: &str, injected: bool) -> WorkloadFailure {
        WorkloadFailure {
            workload: workload.into(),
            finding: "FAIL: found http status 500, expected http status 200".into(),
            injected,
        }
    }

    #[test]
    fn only_injected_failures_are_told_apart_by_type() {
        let rows = [
            (VerifyError::Mismatch(vec![failure("a", true)]), true, "one injected"),
            (
                VerifyError::Mismatch(vec![failure("a", true), failure("b", true)]),
                true,
                "all injected",
            ),
            (
                VerifyError::Mismatch(vec![failure("a", true), failure("b", false)]),
                false,
                "one real difference among injected ones",
            ),
            (
                VerifyError::Unreachable("connection refused".into()),
                false,
                "no answer at all",
            ),
        ];
        for (e, want, why) in rows {
            assert_eq!(e.only_injected(), want, "{why}");
        }
    }

    #[test]
    fn display_is_the_stored_failure_reason() {
        let rows: Vec<(RunnerError, &str)> = vec![
            (
                RunnerError::Verification {
                    server: "rust".into(),
                    protocol: Protocol::Grpc,
                    difference: VerifyError::Mismatch(vec![failure("echo.8k", false)]),
                    log_tail: String::new(),
                },
                "verification of `rust` grpc failed: echo.8k: FAIL: found http status 500, expected http status 200",
            ),
            (
                RunnerError::ServerExited {
                    server: "go".into(),
                    status: "signal 9".into(),
                    context: ExitContext::DuringFailedMeasurement(MeasureError("connection reset".into())),
                    log_tail: String::new(),
                },
                "server `go` exited (signal 9) during the measurement: connection reset",
            ),
            (
                RunnerError::ServerExited {
                    server: "go".into(),
                    status: "exit status 1".into(),
                    context: ExitContext::AlreadyRestarted,
                    log_tail: String::new(),
                },
                "server `go` exited (exit status 1) and was already restarted once",
            ),
            (
                RunnerError::Measurement(MeasureError("cannot connect".into())),
                "measurement failed: cannot connect",
            ),
        ];
        for (e, want) in rows {
            assert_eq!(e.to_string(), want);
        }
        let tail = RunnerError::ServerStart {
            server: "go".into(),
            reason: "server `go` is not built".into(),
            log_tail: Some("tail".into()),
        };
        assert_eq!(tail.log_tail().as_deref(), Some("tail"));
        assert_eq!(RunnerError::Interrupted.log_tail(), None);
    }
}
