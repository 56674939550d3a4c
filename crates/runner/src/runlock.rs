//! One writer per run: the lock a run being measured holds.
//!
//! The lock is `flock(LOCK_EX)` on `<db>.run-<ID>.lock` beside the database,
//! holding the writer's PID. The kernel releases it when the holder exits,
//! however it exits, so a run whose status is `running` while its lock is
//! free was abandoned (its runner was killed) and is `interrupted`.
//!
//! The holder deletes the file when it is done, still holding the lock; an
//! acquirer whose locked file is no longer the one at the path (deleted and
//! re-created in between) tries again.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, Write as _};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// Why a run's lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds it.
    #[error("run {run} is being measured by another protobench process ({})", holder_text(*.pid))]
    Busy {
        /// The run.
        run: i64,
        /// The holder, when it wrote its PID.
        pid: Option<u32>,
    },
    /// The lock file could not be created or locked.
    #[error("cannot lock run {run} ({}): {source}", path.display())]
    Io {
        /// The run.
        run: i64,
        /// The lock file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

fn holder_text(pid: Option<u32>) -> String {
    pid.map_or_else(|| "pid unknown".into(), |p| format!("pid {p}"))
}

/// The lock file of run `run` of the database `db`.
pub fn lock_path(db: &Path, run: i64) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".run-{run}.lock"));
    db.with_file_name(name)
}

/// The lock on one run, held until dropped.
#[derive(Debug)]
pub struct RunLock {
    file: Flock<File>,
    path: PathBuf,
}

impl RunLock {
    /// Takes the lock of run `run` without waiting.
    pub fn acquire(db: &Path, run: i64) -> Result<RunLock, LockError> {
        let path = lock_path(db, run);
        let io = |source| LockError::Io {
            run,
            path: path.clone(),
            source,
        };
        loop {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(io)?;
            let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(f) => f,
                Err((mut f, Errno::EWOULDBLOCK)) => {
                    return Err(LockError::Busy {
                        run,
                        pid: read_pid(&mut f),
                    });
                }
                Err((_, e)) => return Err(io(e.into())),
            };
            // The file may have been deleted by its last holder between our
            // open and our lock: then this lock protects nothing.
            let ours = file.metadata().map_err(io)?;
            match std::fs::metadata(&path) {
                Ok(m) if m.dev() == ours.dev() && m.ino() == ours.ino() => {}
                _ => continue,
            }
            file.set_len(0).map_err(io)?;
            file.rewind().map_err(io)?;
            writeln!(file, "{}", std::process::id()).map_err(io)?;
            return Ok(RunLock { file, path });
        }
    }

    /// Whether some process holds the lock of run `run` now (its PID when it
    /// wrote one). A missing lock file is a free lock.
    pub fn holder(db: &Path, run: i64) -> Option<Option<u32>> {
        let file = File::open(lock_path(db, run)).ok()?;
        match Flock::lock(file, FlockArg::LockSharedNonblock) {
            Ok(_) => None,
            Err((mut f, _)) => Some(read_pid(&mut f)),
        }
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Deleted while still locked; the lock goes with the descriptor.
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.flush();
    }
}

fn read_pid(f: &mut File) -> Option<u32> {
    let mut s = String::new();
    f.rewind().ok()?;
    f.read_to_string(&mut s).ok()?;
    s.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_free_after_drop() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("r.db");
        assert_eq!(lock_path(&db, 4), dir.path().join("r.db.run-4.lock"));
        assert_eq!(RunLock::holder(&db, 4), None);
        let held = RunLock::acquire(&db, 4).unwrap();
        assert_eq!(RunLock::holder(&db, 4), Some(Some(std::process::id())));
        let e = RunLock::acquire(&db, 4).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "run 4 is being measured by another protobench process (pid {})",
                std::process::id()
            )
        );
        // Another run of the same database is independent.
        let other = RunLock::acquire(&db, 5).unwrap();
        drop(held);
        assert!(!lock_path(&db, 4).exists());
        assert_eq!(RunLock::holder(&db, 4), None);
        let again = RunLock::acquire(&db, 4).unwrap();
        drop((again, other));
    }
}
