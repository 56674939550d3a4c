//! The exit codes of every command, as one type (documented in README.md):
//! a decision names its meaning, never a number.

use std::process::ExitCode;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// Success (also when standard output was closed early, as by `| head`).
    Success,
    /// A check failed (verify, contract check, build) or some measurements
    /// of a run failed.
    Failed,
    /// Bad usage or input (a preset, a flag, a file).
    Usage,
    /// A runtime failure: the database, the target, the disk.
    Runtime,
    /// Every measurement was taken but a `--threshold` failed.
    Threshold,
    /// `compare --fail-on-regression` found a regression.
    Regression,
    /// Interrupted (Ctrl-C, SIGTERM); a run can be resumed.
    Interrupted,
}

impl Exit {
    /// The process status.
    pub(crate) fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Failed => 1,
            Exit::Usage => 2,
            Exit::Runtime => 3,
            Exit::Threshold => 4,
            Exit::Regression => 5,
            Exit::Interrupted => 130,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// README.md documents these numbers; scripts rely on them.
    #[test]
    fn the_codes_are_the_documented_ones() {
        let all = [
            Exit::Success,
            Exit::Failed,
            Exit::Usage,
            Exit::Runtime,
            Exit::Threshold,
            Exit::Regression,
            Exit::Interrupted,
        ];
        let codes: Vec<u8> = all.iter().map(|e| e.code()).collect();
        assert_eq!(codes, vec![0, 1, 2, 3, 4, 5, 130]);
    }
}
