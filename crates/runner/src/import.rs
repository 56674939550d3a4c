//! `protobench import`: measurements a database refused (disk full), kept in
//! an unsaved-results file ([`crate::session::UnsavedFile`]), brought into
//! their run once the database can take them.
//!
//! The run must exist with the same plan; a measurement of a (point,
//! repetition) the run already has is refused (nothing is imported then),
//! and the run is locked meanwhile like a run being measured.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use protobench_model::run::RunStatus;
use protobench_model::time::now_rfc3339;
use protobench_results::store::{Store, StoreError};

use crate::runlock::{LockError, RunLock};
use crate::session::UnsavedFile;

/// Why a file could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file cannot be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// It is not an unsaved-results file.
    #[error("{} is not a protobench unsaved-results file", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// The database refused.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The run is being measured.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The stored run has another plan.
    #[error("run {run} in {} has a different plan than {}: not importing", db.display(), file.display())]
    OtherPlan {
        /// The run.
        run: i64,
        /// The database.
        db: PathBuf,
        /// The file.
        file: PathBuf,
    },
    /// A measurement outside the plan's points and repetitions.
    #[error("{}: point {point}, repetition {repetition} is not in the plan of run {run}", file.display())]
    OutsidePlan {
        /// The run.
        run: i64,
        /// The file.
        file: PathBuf,
        /// Point index.
        point: u32,
        /// Repetition.
        repetition: u32,
    },
    /// Some measurements are already stored (or twice in the file).
    #[error("run {run} already has {}: nothing imported", list(.duplicates))]
    Duplicates {
        /// The run.
        run: i64,
        /// (point, repetition) pairs.
        duplicates: Vec<(u32, u32)>,
    },
}

fn list(d: &[(u32, u32)]) -> String {
    let items: Vec<String> = d.iter().map(|(p, r)| format!("point {p} repetition {r}")).collect();
    format!("a measurement of {}", items.join(", "))
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    /// The run.
    pub run: i64,
    /// Measurements imported.
    pub count: usize,
    /// Measurements the run still lacks.
    pub missing: usize,
    /// The run's status now.
    pub status: RunStatus,
}

/// Imports the measurements of the unsaved-results `file` into the
/// database `db` (which must exist).
pub fn import_unsaved(db: &Path, file: &Path) -> Result<Imported, ImportError> {
    let text = std::fs::read(file).map_err(|source| ImportError::Read {
        path: file.to_owned(),
        source,
    })?;
    let dump: UnsavedFile = serde_json::from_slice(&text).map_err(|source| ImportError::Parse {
        path: file.to_owned(),
        source,
    })?;
    let mut store = Store::open_existing(db)?;
    let run = dump.run;
    store.load_run(run)?;
    let _lock = RunLock::acquire(db, run)?;
    let record = store.load_run(run)?;
    if record.plan != dump.plan {
        return Err(ImportError::OtherPlan {
            run,
            db: db.to_owned(),
            file: file.to_owned(),
        });
    }
    let points: BTreeSet<u32> = record.points.iter().map(|p| p.index).collect();
    let mut seen: BTreeSet<(u32, u32)> = record.measurements.iter().map(|m| (m.point, m.repetition)).collect();
    let mut duplicates = Vec::new();
    for m in &dump.measurements {
        if !points.contains(&m.point) || m.repetition == 0 || m.repetition > record.repetitions {
            return Err(ImportError::OutsidePlan {
                run,
                file: file.to_owned(),
                point: m.point,
                repetition: m.repetition,
            });
        }
        if !seen.insert((m.point, m.repetition)) {
            duplicates.push((m.point, m.repetition));
        }
    }
    if !duplicates.is_empty() {
        return Err(ImportError::Duplicates { run, duplicates });
    }
    for m in &dump.measurements {
        store.save_measurement(run, m)?;
    }
    let record = store.load_run(run)?;
    let missing = record.missing().len();
    let mut status = record.status;
    // Complete once nothing is missing; a run left `running` by a process
    // that is gone (its lock was free) is interrupted.
    let now = if missing == 0 {
        RunStatus::Complete
    } else if status == RunStatus::Running {
        RunStatus::Interrupted
    } else {
        status
    };
    if now != status {
        status = now;
        store.set_status(run, status, &now_rfc3339())?;
    }
    Ok(Imported {
        run,
        count: dump.measurements.len(),
        missing,
        status,
    })
}
