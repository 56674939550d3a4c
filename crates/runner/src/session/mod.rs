//! A run session: the one layer that writes the results store during a run.
//! The measuring rooms ([`crate::orchestrate`]) only say what they measured;
//! the session's [`Writer`] stores each measurement, warning and link report
//! from those events ([`writer`]), and the session stores the thresholds'
//! outcomes.
//!
//! [`Session::start`] records a new run (its plan, the machine, the servers'
//! manifests and the isolation in force); [`Session::resume`] reopens an
//! interrupted one and works out what it is missing. [`Session::execute`]
//! measures through the orchestrator, stores every measurement as it is
//! taken, sets the run's final status, and keeps whatever the database
//! refused in a JSON file beside it, so nothing measured is lost. The binary
//! only renders the events and the finished record.
//!
//! A session holds its run's lock ([`crate::runlock`]) from start to end, so
//! one run is measured by one process at a time, and a run left `running`
//! by a process that is gone is recognised (its lock is free) and marked
//! `interrupted` by the next session or [`mark_abandoned`].

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use protobench_model::load::Environment;
use protobench_model::run::{Measurement, RunEnvironment, RunRecord, RunStatus};
use protobench_model::threshold::{Outcome as GateOutcome, Threshold};
use protobench_model::time::now_rfc3339;
use protobench_results::store::{NewRun, Store, StoreError};

use crate::engine::Engine;
use crate::isolation::{self, CgroupSupport};
use crate::manifest::Catalog;
use crate::orchestrate::{self, Outcome, RunEvent, RunOptions};
use crate::plan::Plan;
use crate::runlock::{LockError, RunLock};

pub mod rounds;
pub mod writer;
pub use writer::Writer;

/// Why a session could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The results database could not be opened, read or written (the
    /// store's error names the file and what happened).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The run is being measured by another process (or its lock file
    /// cannot be made).
    #[error(transparent)]
    Lock(#[from] LockError),
    /// A stored run's plan could not be read back.
    #[error("reading the plan of run {run}")]
    StoredPlan {
        /// The run.
        run: i64,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

/// A run being measured: its store, its id, its plan and what is left to do.
#[derive(Debug)]
pub struct Session {
    store: Store,
    run_id: i64,
    plan: Plan,
    todo: BTreeSet<(u32, u32)>,
    abandoned: Vec<i64>,
    _lock: RunLock,
}

/// What [`Session::resume`] found.
#[derive(Debug)]
pub enum Resumed {
    /// Nothing left to measure.
    AlreadyComplete,
    /// The session for what is left.
    Session(Box<Session>),
}

/// How a session ended.
#[derive(Debug)]
pub struct Finished {
    /// The run's final status (`complete`, `interrupted`).
    pub status: RunStatus,
    /// What the orchestrator reports.
    pub outcome: Outcome,
    /// Where measurements the database refused were written, or their JSON
    /// when no file could be written either.
    pub unsaved: Option<Unsaved>,
    /// The final status could not be recorded.
    pub status_error: Option<StoreError>,
}

/// Measurements the database did not accept, kept elsewhere.
#[derive(Debug)]
pub enum Unsaved {
    /// Written to this file.
    File(PathBuf),
    /// No file could be written: the JSON itself.
    Text(String),
}

impl Session {
    /// Records a new run of `plan` in the database at `db` (created if
    /// missing), with the environment: this machine, the plan's servers
    /// from `catalog`, the isolation in force. `commit` is the build's.
    pub fn start(plan: Plan, db: &Path, catalog: &Catalog, commit: Option<String>) -> Result<Session, SessionError> {
        let mut store = Store::open(db)?;
        let abandoned = mark(&mut store)?;
        let servers: BTreeSet<&str> = plan.groups.iter().map(|g| g.server.as_str()).collect();
        let environment = RunEnvironment {
            machine: Environment::detect(env!("CARGO_PKG_VERSION"), commit),
            servers: servers
                .iter()
                .filter_map(|s| catalog.servers.get(*s))
                .map(|m| m.info())
                .collect(),
            isolation: isolation_notes(&plan),
        };
        let new = NewRun {
            preset: plan.preset.clone(),
            preset_path: plan.preset_path.clone(),
            plan: serde_json::to_value(&plan).expect("a plan is plain data"),
            repetitions: plan.repetitions,
            noise_threshold: plan.noise_threshold,
            environment,
            points: plan.points.clone(),
            started_at: now_rfc3339(),
        };
        // Locked before anyone can see it `running`.
        let (run_id, lock) = store.create_run_with(&new, |id| RunLock::acquire(db, id).map_err(SessionError::Lock))?;
        let todo = (1..=plan.repetitions)
            .flat_map(|r| plan.points.iter().map(move |p| (p.index, r)))
            .collect();
        Ok(Session {
            store,
            run_id,
            plan,
            todo,
            abandoned,
            _lock: lock,
        })
    }

    /// Reopens run `id` in the database at `db` (which must exist) to
    /// measure what it is missing; refused while another process measures it.
    pub fn resume(db: &Path, id: i64) -> Result<Resumed, SessionError> {
        let mut store = Store::open_existing(db)?;
        store.load_run(id)?;
        let lock = RunLock::acquire(db, id)?;
        let mut abandoned = mark(&mut store)?;
        // Read again: the last holder may have written until it let go.
        let record = store.load_run(id)?;
        if record.status == RunStatus::Running {
            // Its lock was free: whoever measured it is gone.
            store.set_status(id, RunStatus::Interrupted, &now_rfc3339())?;
            abandoned.insert(0, id);
        }
        let missing = record.missing();
        if record.status == RunStatus::Complete && missing.is_empty() {
            return Ok(Resumed::AlreadyComplete);
        }
        let plan: Plan = serde_json::from_value(record.plan.clone())
            .map_err(|source| SessionError::StoredPlan { run: id, source })?;
        store.set_status(id, RunStatus::Running, &now_rfc3339())?;
        Ok(Resumed::Session(Box::new(Session {
            store,
            run_id: id,
            plan,
            todo: missing.into_iter().collect(),
            abandoned,
            _lock: lock,
        })))
    }

    /// The run's id.
    pub fn run_id(&self) -> i64 {
        self.run_id
    }

    /// Runs found `running` without a process measuring them (their runner
    /// was killed), now marked `interrupted`.
    pub fn abandoned(&self) -> &[i64] {
        &self.abandoned
    }

    /// The plan being measured.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Records a warning with the run (it is also shown in the report).
    pub fn warn(&mut self, warning: &str) {
        let _ = self.store.add_warning(self.run_id, warning);
    }

    /// Pins this process to the plan's generator CPUs (call before any
    /// runtime thread exists); a failure is recorded as a warning and returned.
    pub fn pin_generator(&mut self) -> Option<String> {
        let cpus = self.plan.generator_cpus.clone()?;
        let e = isolation::pin_process(&cpus).err()?;
        let w = format!("generator not pinned: {e}");
        self.warn(&w);
        Some(w)
    }

    /// Measures what is left, storing each measurement as it is taken, then
    /// records the final status. With `--until-decided`, rounds of
    /// repetitions follow while a claim is undecided and the budget allows
    /// ([`rounds`]); each is stored like the first. Measurements the
    /// database refused are written to a JSON file beside it (or returned
    /// as text).
    pub async fn execute<E: Engine>(
        &mut self,
        catalog: &Catalog,
        engine: &E,
        opts: &RunOptions,
        events: Option<UnboundedSender<RunEvent>>,
        cancel: CancellationToken,
    ) -> Finished {
        let mut outcome = Outcome::default();
        loop {
            let started = Instant::now();
            let round = orchestrate::execute(
                &self.plan,
                catalog,
                engine,
                &mut self.store,
                self.run_id,
                &self.todo,
                opts,
                events.clone(),
                cancel.clone(),
            )
            .await;
            let repetitions: BTreeSet<u32> = self.todo.iter().map(|(_, r)| *r).collect();
            merge(&mut outcome, round);
            let complete = outcome.status == Some(RunStatus::Complete) && outcome.unsaved.is_empty();
            if !complete || !self.another_round(started.elapsed(), repetitions.len() as u32, events.as_ref()) {
                break;
            }
        }
        let mut status = outcome.status.unwrap_or(RunStatus::Failed);
        // Measurements missing from the database leave the run unfinished:
        // `--resume` (or `protobench import`) completes it.
        if status == RunStatus::Complete && !outcome.unsaved.is_empty() {
            status = RunStatus::Interrupted;
        }
        let status_error = self.store.set_status(self.run_id, status, &now_rfc3339()).err();
        let unsaved = (!outcome.unsaved.is_empty()).then(|| self.keep_unsaved(&outcome.unsaved));
        Finished {
            status,
            outcome,
            unsaved,
            status_error,
        }
    }

    /// After a complete round of `--until-decided`: judges the stored run,
    /// and either says why it stops or adds the next round (the plan's
    /// repetitions and the budget used, stored; the new repetitions to
    /// measure). `took`: the round's time, over `repetitions` repetitions.
    fn another_round(&mut self, took: Duration, repetitions: u32, events: Option<&UnboundedSender<RunEvent>>) -> bool {
        let Some(mut rule) = self.plan.until_decided else {
            return false;
        };
        rule.used_ns = rule.used_ns.saturating_add(took.as_nanos() as u64);
        let Ok(record) = self.store.load_run(self.run_id) else {
            return false;
        };
        let directions: Vec<_> = protobench_results::report::judgements(&record)
            .iter()
            .map(|j| j.direction)
            .collect();
        let done = self.plan.repetitions;
        let used = Duration::from_nanos(rule.used_ns);
        let next = rounds::next(&directions, done, used, took / repetitions.max(1), rule);
        let line = next.describe(directions.len(), done, used, rule);
        self.warn(&line);
        if let Some(tx) = events {
            let _ = tx.send(RunEvent::Round(line));
        }
        let rounds::Next::Round { from, to, .. } = next else {
            return false;
        };
        self.plan.repetitions = to;
        self.plan.until_decided = Some(rule);
        let plan = serde_json::to_value(&self.plan).expect("a plan is plain data");
        if let Err(e) = self.store.set_repetitions(self.run_id, to, &plan) {
            self.warn(&format!(
                "until decided: the next round could not be recorded ({e}); stopped"
            ));
            return false;
        }
        self.todo = (from..=to)
            .flat_map(|r| self.plan.points.iter().map(move |p| (p.index, r)))
            .collect();
        true
    }

    /// Writes refused measurements (with the plan) to a new file
    /// [`unsaved_file_name`] beside the database, else in the temporary
    /// directory; returns the JSON itself when neither works. An existing
    /// file is never overwritten.
    fn keep_unsaved(&self, measurements: &[Measurement]) -> Unsaved {
        let dump = UnsavedFile {
            run: self.run_id,
            database: self.store.path().to_path_buf(),
            plan: serde_json::to_value(&self.plan).expect("a plan is plain data"),
            measurements: measurements.to_vec(),
        };
        let text = serde_json::to_string_pretty(&dump).expect("plain data");
        let stem = self.store.path().file_stem().unwrap_or_default().to_string_lossy();
        let stamp = now_rfc3339().replace(['-', ':'], "");
        let dirs = [
            self.store
                .path()
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf(),
            std::env::temp_dir(),
        ];
        for dir in dirs {
            for n in 1..=100 {
                let p = dir.join(unsaved_file_name(&stem, self.run_id, &stamp, n));
                match write_new(&p, &text) {
                    Ok(()) => return Unsaved::File(p),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                    Err(_) => break,
                }
            }
        }
        Unsaved::Text(text)
    }

    /// Checks the plan's thresholds at every point of `record` (the run as
    /// stored) and stores their outcomes with the run. Returns the outcomes
    /// and, when they could not be stored, why.
    pub fn judge_thresholds(&mut self, record: &RunRecord) -> (Vec<GateOutcome>, Option<StoreError>) {
        let ts: &[Threshold] = &self.plan.thresholds;
        if ts.is_empty() {
            return (vec![], None);
        }
        let outcomes = protobench_model::threshold::evaluate_run(ts, record);
        let stored = self.store.save_thresholds(self.run_id, &outcomes).err();
        (outcomes, stored)
    }

    /// The run as stored (what the table and the report show).
    pub fn record(&self) -> Result<RunRecord, StoreError> {
        self.store.load_run(self.run_id)
    }
}

/// What an unsaved-results file holds (`protobench import` reads it back).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct UnsavedFile {
    /// The run the measurements belong to.
    pub run: i64,
    /// The database that refused them.
    #[serde(default)]
    pub database: PathBuf,
    /// The run's plan (an import checks it against the stored one).
    pub plan: serde_json::Value,
    /// The measurements.
    pub measurements: Vec<Measurement>,
}

/// `protobench-<database stem>-run-<ID>-unsaved-<UTC time>[-N].json`: two
/// databases in one directory, or two attempts at one run, never share a file.
pub fn unsaved_file_name(db_stem: &str, run: i64, stamp: &str, n: u32) -> String {
    let suffix = if n > 1 { format!("-{n}") } else { String::new() };
    format!("protobench-{db_stem}-run-{run}-unsaved-{stamp}{suffix}.json")
}

/// Creates `path` (failing if it exists) holding `text`.
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
    f.write_all(text.as_bytes()).inspect_err(|_| {
        let _ = std::fs::remove_file(path);
    })
}

/// Marks every run of `store` that is `running` while no process holds its
/// lock (its runner was killed) `interrupted`; returns their ids.
fn mark(store: &mut Store) -> Result<Vec<i64>, StoreError> {
    let db = store.path().to_path_buf();
    let mut marked = Vec::new();
    for r in store.list_runs()? {
        if r.status != RunStatus::Running {
            continue;
        }
        // Holding the lock, nobody can start measuring it meanwhile.
        if let Ok(_lock) = RunLock::acquire(&db, r.id) {
            store.set_status(r.id, RunStatus::Interrupted, &now_rfc3339())?;
            marked.push(r.id);
        }
    }
    Ok(marked)
}

/// [`Session`]'s check of abandoned runs for the reading commands: opens
/// the database for writing only when some run was abandoned, or when it
/// cannot be read (a writer killed mid-transaction leaves a journal that
/// only a writer rolls back).
pub fn mark_abandoned(db: &Path) -> Result<Vec<i64>, StoreError> {
    let any = Store::open_read_only(db).and_then(|s| s.list_runs()).map(|runs| {
        runs.iter()
            .any(|r| r.status == RunStatus::Running && RunLock::holder(db, r.id).is_none())
    });
    if let Ok(false) = any {
        return Ok(vec![]);
    }
    mark(&mut Store::open_existing(db)?)
}

/// Adds a round's outcome to the run's: counts, what is still unsaved, the
/// last save error and status, the warnings said.
fn merge(total: &mut Outcome, round: Outcome) {
    total.status = round.status;
    total.measured += round.measured;
    total.failed += round.failed;
    total.unsaved.extend(round.unsaved);
    if round.save_error.is_some() {
        total.save_error = round.save_error;
    }
    for w in round.warnings {
        if !total.warnings.contains(&w) {
            total.warnings.push(w);
        }
    }
}

/// How server and generator are kept apart, one line each, plus the plan's notes.
fn isolation_notes(plan: &Plan) -> Vec<String> {
    let pinned = |c: &Option<crate::units::CpuSet>| c.as_ref().map_or("not pinned".into(), |c| c.to_string());
    let mut notes = vec![
        format!(
            "server CPUs: {}; generator CPUs: {}",
            pinned(&plan.server_cpus),
            pinned(&plan.generator_cpus)
        ),
        CgroupSupport::detect().describe(),
    ];
    notes.extend(plan.notes.iter().cloned());
    notes
}
