//! A server never outlives its runner.
//!
//! Every server is started through a hidden subcommand of the runner's own
//! binary, `protobench __exec-with-parent-death --parent PID -- CMD ARGS...`
//! ([`command`] builds it): that small process asks the kernel to send it
//! SIGTERM when its parent dies (`PR_SET_PDEATHSIG`), checks that its parent
//! is still the runner (closing the race with a runner that died before the
//! request), then replaces itself with the server (`exec`, so the server
//! keeps the PID the runner samples and stops). However the runner ends —
//! Ctrl-C, a panic, SIGKILL, the OOM killer — its servers receive SIGTERM,
//! which the environment contract requires them to obey.
//!
//! The kernel sends the signal when the *thread* that forked the child
//! exits, so the runner forks servers from a thread that lives as long as
//! the server ([`crate::server`]).

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use nix::sys::signal::Signal;

/// The hidden subcommand.
pub const SUBCOMMAND: &str = "__exec-with-parent-death";

/// The signal a server gets when its runner dies.
pub const PARENT_DEATH_SIGNAL: Signal = Signal::SIGTERM;

/// `guard __exec-with-parent-death --parent <this pid> -- program args...`.
pub fn command(guard: &Path, program: &Path, args: &[String]) -> Command {
    let mut cmd = Command::new(guard);
    cmd.arg(SUBCOMMAND)
        .arg("--parent")
        .arg(std::process::id().to_string())
        .arg("--")
        .arg(program)
        .args(args);
    cmd
}

/// Why the guard could not become the server.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// The arguments are not `--parent PID -- CMD...`.
    #[error("usage: protobench {SUBCOMMAND} --parent PID -- COMMAND [ARGS...]")]
    Usage,
    /// The kernel refused the parent-death signal.
    #[error("cannot set the parent-death signal: {0}")]
    Prctl(nix::Error),
    /// The runner was already gone.
    #[error("the runner (pid {0}) is gone; not starting the server")]
    ParentGone(i32),
    /// `exec` failed.
    #[error("cannot start {program}: {source}")]
    Exec {
        /// The command.
        program: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// The hidden subcommand: `args` are what follows its name. Returns only on
/// failure (on success the process has become the server).
pub fn exec_with_parent_death(args: &[OsString]) -> GuardError {
    let (parent, cmd) = match args {
        [flag, pid, sep, cmd @ ..] if flag == "--parent" && sep == "--" && !cmd.is_empty() => {
            match pid.to_str().and_then(|p| p.parse::<i32>().ok()) {
                Some(p) => (p, cmd),
                None => return GuardError::Usage,
            }
        }
        _ => return GuardError::Usage,
    };
    if let Err(e) = nix::sys::prctl::set_pdeathsig(PARENT_DEATH_SIGNAL) {
        return GuardError::Prctl(e);
    }
    // Set first, checked second: a parent that died before the request
    // has already handed us to another process.
    if nix::unistd::getppid().as_raw() != parent {
        return GuardError::ParentGone(parent);
    }
    use std::os::unix::process::CommandExt as _;
    let source = Command::new(&cmd[0]).args(&cmd[1..]).exec();
    GuardError::Exec {
        program: cmd[0].to_string_lossy().into_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_arguments_are_refused() {
        let os = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        for a in [
            os(&[]),
            os(&["--parent", "1", "--"]),
            os(&["--parent", "x", "--", "true"]),
            os(&["--parent", "1", "true"]),
        ] {
            assert!(matches!(exec_with_parent_death(&a), GuardError::Usage), "{a:?}");
        }
    }

    #[test]
    fn a_wrong_parent_is_refused_before_exec() {
        let wrong = if nix::unistd::getppid().as_raw() == 1 { 2 } else { 1 };
        let a: Vec<OsString> = ["--parent", &wrong.to_string(), "--", "/bin/true"]
            .iter()
            .map(OsString::from)
            .collect();
        let e = exec_with_parent_death(&a);
        // This test process must not keep the signal it just asked for.
        nix::sys::prctl::set_pdeathsig(None).unwrap();
        assert!(matches!(e, GuardError::ParentGone(p) if p == wrong), "{e}");
    }

    #[test]
    fn the_command_line_names_this_process() {
        let c = command(Path::new("/x/protobench"), Path::new("/srv/bin"), &["-a".into()]);
        let args: Vec<String> = c.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(c.get_program(), "/x/protobench");
        assert_eq!(
            args,
            [
                SUBCOMMAND,
                "--parent",
                &std::process::id().to_string(),
                "--",
                "/srv/bin",
                "-a"
            ]
        );
    }
}
