//! Running the kernel's own tools (`ip`, `tc`, `nft`) with a bounded wait,
//! and finding them. What this machine can emulate is
//! [`super::capabilities`]'s.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::NetworkError;

/// How long one `ip`/`tc`/`nft` call may take.
pub(crate) const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `argv` (with `stdin` fed in), waits at most `timeout`, and returns
/// its standard output; a non-zero exit is an error carrying its stderr.
pub(crate) fn run(argv: &[&str], stdin: Option<&str>, timeout: Duration) -> Result<String, NetworkError> {
    let command = argv.join(" ");
    let mut child = Command::new(argv[0])
        .args(&argv[1..])
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| NetworkError::Io {
            what: format!("cannot run `{command}`"),
            source,
        })?;
    if let (Some(text), Some(mut w)) = (stdin, child.stdin.take()) {
        // Small scripts: fits the pipe; an error shows up as the tool's failure.
        let _ = w.write_all(text.as_bytes());
    }
    let read = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut s);
            }
            s
        })
    };
    let out = read(child.stdout.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let err = read(child.stderr.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(NetworkError::Timeout {
                    command,
                    seconds: timeout.as_secs(),
                });
            }
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    if status.success() {
        Ok(stdout)
    } else {
        Err(NetworkError::Command {
            command,
            status: status.to_string(),
            stderr: stderr.trim().to_string(),
        })
    }
}

/// [`run`] with the default timeout and no input.
pub(crate) fn sh(argv: &[&str]) -> Result<String, NetworkError> {
    run(argv, None, COMMAND_TIMEOUT)
}

/// Finds an executable on `PATH`, then in the sbin directories (root's tools
/// live there and `PATH` may lack them).
pub(crate) fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"].iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

/// A regular file with an execute bit.
pub(crate) fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
