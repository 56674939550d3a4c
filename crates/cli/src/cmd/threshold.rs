//! `--threshold` on `load` and `run`: the flag, the table printed after the
//! run and the exit code when one fails. Parsing and evaluation are pure, in
//! `protobench_model::threshold`.

use std::process::ExitCode;

use crate::exit::Exit;
use protobench_model::threshold::{Metric, Outcome, Threshold, parse_all};

/// The help of `--threshold`.
pub(crate) const HELP: &str = "Gate checked after the run, repeatable: p50|p90|p95|p99|p99.9|mean|min|max<DURATION, \
rate>CALLS_PER_S, error_rate<PERCENT% (e.g. --threshold 'p99<5ms' --threshold 'error_rate<0.1%'); \
a failed one exits with 4";

/// Parses `load`'s `--threshold` flags, refusing the metrics only a run
/// measures (`run`'s are parsed with its preset, `preset::resolve_command`).
pub(crate) fn parse_flags(written: &[String]) -> Result<Vec<Threshold>, String> {
    let parsed = parse_all(written).map_err(|e| e.to_string())?;
    if let Some(t) = parsed.iter().find(|t| t.metric == Metric::CpuPerCall) {
        return Err(format!(
            "threshold {t:?}: cpu_per_call is the server's CPU, which only `protobench run` measures",
            t = t.to_string()
        ));
    }
    Ok(parsed)
}

/// The exit code the outcomes call for: 0 when all passed (or none).
pub(crate) fn exit_code(outcomes: &[Outcome]) -> ExitCode {
    if protobench_model::threshold::all_passed(outcomes) {
        ExitCode::from(Exit::Success)
    } else {
        ExitCode::from(Exit::Threshold)
    }
}
