//! The results database: one SQLite file holding every run, its resolved plan,
//! its environment, every measurement with its HDR histogram and per-second
//! time series.
//!
//! The schema is versioned with `PRAGMA user_version` and upgraded by the
//! ordered [`MIGRATIONS`]; `docs/results.md` documents every table. A
//! measurement is written in its own transaction as soon as it is taken, so
//! an interrupted run loses nothing that finished.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, params};

use protobench_model::hdr::EncodedHistogram;
use protobench_model::load::{LoadResult, TimelinePoint};
use protobench_model::network::{PointLink, RunLink};
use protobench_model::run::{
    Failure, Measurement, MeasurementStatus, PointConfig, RunEnvironment, RunRecord, RunStatus, Search, ServerCost,
    Warmup,
};
use protobench_model::stream::StreamResult;
use protobench_model::threshold::{Outcome, Threshold};

/// The schema version this build writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: u32 = 7;

/// The default database file.
pub const DEFAULT_DB: &str = "protobench-results.db";

/// Schema migrations: entry `i` upgrades version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 0 -> 1: the first schema.
    r#"
    CREATE TABLE runs (
        id                 INTEGER PRIMARY KEY AUTOINCREMENT,
        preset             TEXT    NOT NULL,
        preset_path        TEXT,
        status             TEXT    NOT NULL,
        started_at         TEXT    NOT NULL,
        finished_at        TEXT,
        repetitions        INTEGER NOT NULL,
        noise_threshold    REAL    NOT NULL,
        plan_json          TEXT    NOT NULL,
        environment_json   TEXT    NOT NULL,
        warnings_json      TEXT    NOT NULL DEFAULT '[]',
        protobench_version TEXT    NOT NULL,
        git_commit         TEXT
    );
    CREATE TABLE points (
        run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        point_index  INTEGER NOT NULL,
        server       TEXT    NOT NULL,
        protocol     TEXT    NOT NULL,
        workload     TEXT    NOT NULL,
        tls          INTEGER NOT NULL,
        label        TEXT    NOT NULL,
        config_json  TEXT    NOT NULL,
        PRIMARY KEY (run_id, point_index)
    );
    CREATE TABLE measurements (
        id                     INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id                 INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        point_index            INTEGER NOT NULL,
        repetition             INTEGER NOT NULL,
        status                 TEXT    NOT NULL,
        failure_reason         TEXT,
        log_tail               TEXT,
        started_at             TEXT    NOT NULL,
        finished_at            TEXT    NOT NULL,
        rate                   REAL,
        calls                  INTEGER,
        errors                 INTEGER,
        p50_ns                 INTEGER,
        p90_ns                 INTEGER,
        p99_ns                 INTEGER,
        server_cpu_ns          INTEGER,
        server_cpu_ns_per_call REAL,
        rss_peak_bytes         INTEGER,
        rss_mean_bytes         INTEGER,
        generator_cpu_ns       INTEGER,
        result_json            TEXT,
        search_json            TEXT,
        UNIQUE (run_id, point_index, repetition)
    );
    CREATE TABLE histograms (
        measurement_id INTEGER PRIMARY KEY REFERENCES measurements(id) ON DELETE CASCADE,
        kind           TEXT NOT NULL,
        encoding       TEXT NOT NULL,
        data           TEXT NOT NULL
    );
    CREATE TABLE timeseries (
        measurement_id INTEGER NOT NULL REFERENCES measurements(id) ON DELETE CASCADE,
        second         INTEGER NOT NULL,
        successes      INTEGER NOT NULL,
        errors         INTEGER NOT NULL,
        p50_ns         INTEGER NOT NULL,
        p99_ns         INTEGER NOT NULL,
        server_rss_bytes INTEGER,
        PRIMARY KEY (measurement_id, second)
    );
    CREATE INDEX measurements_run ON measurements(run_id, point_index);
    "#,
    // 1 -> 2: how a steady-state warm-up went (issue 16).
    "ALTER TABLE measurements ADD COLUMN warmup_json TEXT;",
    // 2 -> 3: users and p95 per second, for the continuous ramp (issue 10).
    // Rows written before read back as 0.
    "ALTER TABLE timeseries ADD COLUMN users INTEGER NOT NULL DEFAULT 0;
     ALTER TABLE timeseries ADD COLUMN p95_ns INTEGER NOT NULL DEFAULT 0;",
    // 3 -> 4: emulated networks (issue 12): each point's network, each
    // measurement's share of its link, each link as measured.
    r#"
    ALTER TABLE points ADD COLUMN network TEXT;
    ALTER TABLE measurements ADD COLUMN link_json TEXT;
    CREATE TABLE links (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        network     TEXT    NOT NULL,
        measured_at TEXT    NOT NULL,
        rtt_ns      INTEGER NOT NULL,
        up_goodput_bps   REAL NOT NULL,
        down_goodput_bps REAL NOT NULL,
        link_json   TEXT    NOT NULL
    );
    CREATE INDEX links_run ON links(run_id);
    "#,
    // 4 -> 5: thresholds checked after a run (issue 13).
    r#"
    CREATE TABLE thresholds (
        run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        position  INTEGER NOT NULL,
        threshold TEXT    NOT NULL,
        point     TEXT,
        value     REAL,
        passed    INTEGER NOT NULL,
        PRIMARY KEY (run_id, position)
    );
    "#,
    // 5 -> 6: the server's CPU per second, the drift flag's second signal
    // (issue 29). Rows written before read back without it.
    "ALTER TABLE timeseries ADD COLUMN server_cpu_ns INTEGER;",
    // 6 -> 7: a streaming point's result (issue 31), whole with its
    // per-message histogram; its rate, calls, errors and percentiles
    // columns hold messages received per second, messages received,
    // failed streams and per-message latency; rss_before_bytes is the
    // server's memory before its streams opened.
    "ALTER TABLE measurements ADD COLUMN stream_json TEXT;
     ALTER TABLE measurements ADD COLUMN rss_before_bytes INTEGER;",
];

/// What went wrong with the database. Each names the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another process holds a write lock.
    #[error("results database {path} is locked by another process (is another protobench run writing to it?)")]
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// The disk (or the file system quota) is full.
    #[error("results database {path}: disk full")]
    DiskFull {
        /// The file.
        path: PathBuf,
    },
    /// The file cannot be written (permissions, read-only file system, missing directory).
    #[error("results database {path} is not writable")]
    ReadOnly {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: rusqlite::Error,
    },
    /// The file does not exist (reading commands never create it).
    #[error("results database {path} does not exist (run `protobench run` first, or pass --db)")]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// The file was written by a newer protobench.
    #[error("results database {path} has schema version {found}, newer than this protobench understands ({supported})")]
    TooNew {
        /// The file.
        path: PathBuf,
        /// Its `user_version`.
        found: u32,
        /// [`SCHEMA_VERSION`].
        supported: u32,
    },
    /// That measurement is already stored; the store never replaces one.
    #[error(
        "results database {path}: run {run} already has a measurement of point {point}, repetition {repetition} (stored measurements are never replaced)"
    )]
    Duplicate {
        /// The file.
        path: PathBuf,
        /// The run.
        run: i64,
        /// The point's index.
        point: u32,
        /// The repetition.
        repetition: u32,
    },
    /// No run with that id.
    #[error("no run {id} in {path}")]
    NoSuchRun {
        /// The id asked for.
        id: i64,
        /// The file.
        path: PathBuf,
    },
    /// Stored JSON could not be read back.
    #[error("results database {path}: corrupt {what}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Which column.
        what: String,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// Any other SQLite error.
    #[error("results database {path}")]
    Sqlite {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: rusqlite::Error,
    },
}

/// Everything needed to record a new run.
#[derive(Debug, Clone)]
pub struct NewRun {
    /// Preset name.
    pub preset: String,
    /// Preset file.
    pub preset_path: Option<String>,
    /// Resolved plan as JSON.
    pub plan: serde_json::Value,
    /// Repetitions per point.
    pub repetitions: u32,
    /// Noisy-point threshold (coefficient of variation).
    pub noise_threshold: f64,
    /// Machine, servers, isolation.
    pub environment: RunEnvironment,
    /// The points of the plan.
    pub points: Vec<PointConfig>,
    /// Start (RFC 3339).
    pub started_at: String,
}

/// One line of `protobench runs`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunSummary {
    /// Run id.
    pub id: i64,
    /// Preset.
    pub preset: String,
    /// Status.
    pub status: RunStatus,
    /// Start.
    pub started_at: String,
    /// End.
    pub finished_at: Option<String>,
    /// Points in the plan.
    pub points: u32,
    /// Repetitions per point.
    pub repetitions: u32,
    /// Measurements taken.
    pub measured: u32,
    /// Measurements that failed.
    pub failed: u32,
}

/// An open results database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Opens (creating if needed) the database for writing and brings its
    /// schema up to date. Fails early, before anything is measured, when the
    /// file is locked, read-only or on a full disk.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let conn = Connection::open(path).map_err(|e| classify(path, e))?;
        let mut store = Store {
            conn,
            path: path.to_owned(),
        };
        store.setup()?;
        store.migrate()?;
        // Prove we can write now rather than after the first measurement.
        store
            .conn
            .execute_batch("BEGIN IMMEDIATE; COMMIT;")
            .map_err(|e| store.err(e))?;
        Ok(store)
    }

    /// Opens an existing database for writing (never creates one: a missing
    /// file is [`StoreError::Missing`]).
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing { path: path.to_owned() });
        }
        Store::open(path)
    }

    /// Opens an existing database for reading (never creates one).
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing { path: path.to_owned() });
        }
        let conn =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
                .map_err(|e| classify(path, e))?;
        let store = Store {
            conn,
            path: path.to_owned(),
        };
        store
            .conn
            .busy_timeout(Duration::from_secs(5))
            .map_err(|e| store.err(e))?;
        let version = store.schema_version()?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: path.to_owned(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        if version < SCHEMA_VERSION {
            // An older file: upgrade needs write access.
            drop(store);
            return Store::open(path);
        }
        Ok(store)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the file (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get::<_, u32>(0))
            .map_err(|e| self.err(e))
    }

    fn setup(&mut self) -> Result<(), StoreError> {
        self.conn
            .busy_timeout(Duration::from_secs(2))
            .map_err(|e| self.err(e))?;
        self.conn
            .execute_batch("PRAGMA foreign_keys = ON; PRAGMA journal_mode = DELETE;")
            .map_err(|e| self.err(e))?;
        // A testing aid (docs/results.md): cap the file's size to provoke a
        // "disk full" error without filling a disk.
        if let Some(pages) = std::env::var("PROTOBENCH_DB_MAX_PAGES")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            self.conn
                .pragma_update(None, "max_page_count", pages)
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Caps the file at `pages` pages (`PRAGMA max_page_count`); writes past it
    /// fail as [`StoreError::DiskFull`]. For tests of the full-disk path.
    pub fn limit_pages(&self, pages: u64) -> Result<(), StoreError> {
        self.conn
            .pragma_update(None, "max_page_count", pages)
            .map_err(|e| self.err(e))
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let version = self.schema_version()?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: self.path.clone(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let tx = self.conn.transaction().map_err(|e| classify(&self.path, e))?;
            tx.execute_batch(sql).map_err(|e| classify(&self.path, e))?;
            tx.pragma_update(None, "user_version", (i + 1) as u32)
                .map_err(|e| classify(&self.path, e))?;
            tx.commit().map_err(|e| classify(&self.path, e))?;
        }
        Ok(())
    }

    fn err(&self, e: rusqlite::Error) -> StoreError {
        classify(&self.path, e)
    }

    /// Stores the thresholds checked after run `run_id`, replacing any stored
    /// before (a resumed run is checked again).
    pub fn save_thresholds(&mut self, run_id: i64, outcomes: &[Outcome]) -> Result<(), StoreError> {
        let tx = self.conn.transaction().map_err(|e| classify(&self.path, e))?;
        tx.execute("DELETE FROM thresholds WHERE run_id = ?1", [run_id])
            .map_err(|e| classify(&self.path, e))?;
        for (i, o) in outcomes.iter().enumerate() {
            tx.execute(
                "INSERT INTO thresholds (run_id, position, threshold, point, value, passed) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![run_id, i as i64, o.threshold.to_string(), o.point, o.value, o.passed],
            )
            .map_err(|e| classify(&self.path, e))?;
        }
        tx.commit().map_err(|e| classify(&self.path, e))
    }

    /// The thresholds checked after run `run_id`, in the order they were
    /// checked; empty when it had none.
    pub fn thresholds(&self, run_id: i64) -> Result<Vec<Outcome>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT threshold, point, value, passed FROM thresholds WHERE run_id = ?1 ORDER BY position")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([run_id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, Option<f64>>(2)?,
                    r.get::<_, bool>(3)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (text, point, value, passed) = row.map_err(|e| self.err(e))?;
            let threshold = Threshold::parse(&text).map_err(|e| StoreError::Corrupt {
                path: self.path.clone(),
                what: "threshold".into(),
                source: serde::de::Error::custom(e),
            })?;
            out.push(Outcome {
                threshold,
                point,
                value,
                passed,
            });
        }
        Ok(out)
    }

    /// Records a new run and its points; returns its id.
    pub fn create_run(&mut self, run: &NewRun) -> Result<i64, StoreError> {
        self.create_run_with(run, |_| Ok::<_, StoreError>(()))
            .map(|(id, ())| id)
    }

    /// [`Store::create_run`], calling `before_commit` with the new id before
    /// the run becomes visible to other connections (to take the run's lock
    /// first, so that nobody sees it `running` and unlocked); its error
    /// rolls the run back.
    pub fn create_run_with<T, E: From<StoreError>>(
        &mut self,
        run: &NewRun,
        before_commit: impl FnOnce(i64) -> Result<T, E>,
    ) -> Result<(i64, T), E> {
        let path = self.path.clone();
        let c = |e| classify(&path, e);
        let tx = self.conn.transaction().map_err(c)?;
        tx.execute(
            "INSERT INTO runs (preset, preset_path, status, started_at, repetitions, noise_threshold, plan_json,
                               environment_json, protobench_version, git_commit)
             VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                run.preset,
                run.preset_path,
                run.started_at,
                run.repetitions,
                run.noise_threshold,
                run.plan.to_string(),
                json(&run.environment),
                run.environment.machine.protobench_version,
                run.environment.machine.commit,
            ],
        )
        .map_err(c)?;
        let id = tx.last_insert_rowid();
        for p in &run.points {
            tx.execute(
                "INSERT INTO points (run_id, point_index, server, protocol, workload, tls, label, config_json, network)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    id,
                    p.index,
                    p.server,
                    p.protocol.name(),
                    p.workload,
                    p.tls,
                    p.variant_label(),
                    json(p),
                    p.network
                ],
            )
            .map_err(c)?;
        }
        let held = before_commit(id)?;
        tx.commit().map_err(c)?;
        Ok((id, held))
    }

    /// Stores one measurement, its histogram and time series, in one
    /// transaction. A measurement of the same point and repetition already
    /// stored is never replaced: that is [`StoreError::Duplicate`].
    pub fn save_measurement(&mut self, run_id: i64, m: &Measurement) -> Result<(), StoreError> {
        let path = self.path.clone();
        let c = |e| classify(&path, e);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(c)?;
        let stored: i64 = tx
            .query_row(
                "SELECT COUNT(*) FROM measurements WHERE run_id = ?1 AND point_index = ?2 AND repetition = ?3",
                params![run_id, m.point, m.repetition],
                |r| r.get(0),
            )
            .map_err(c)?;
        if stored > 0 {
            return Err(StoreError::Duplicate {
                path: self.path.clone(),
                run: run_id,
                point: m.point,
                repetition: m.repetition,
            });
        }
        let r = m.result.as_ref();
        let st = m.stream.as_ref();
        let cost = m.server_cost.as_ref();
        // The histogram and timeline live in their own tables, not twice.
        let stripped = r.map(|r| LoadResult {
            histogram: EncodedHistogram::default(),
            timeline: Vec::new(),
            ..r.clone()
        });
        tx.execute(
            "INSERT INTO measurements (run_id, point_index, repetition, status, failure_reason, log_tail,
                 started_at, finished_at, rate, calls, errors, p50_ns, p90_ns, p99_ns, server_cpu_ns,
                 server_cpu_ns_per_call, rss_peak_bytes, rss_mean_bytes, generator_cpu_ns, result_json, search_json, warmup_json,
                 link_json, stream_json, rss_before_bytes)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)",
            params![
                run_id,
                m.point,
                m.repetition,
                m.status.name(),
                m.failure.as_ref().map(|f| f.reason.clone()),
                m.failure.as_ref().and_then(|f| f.log_tail.clone()),
                m.started_at,
                m.finished_at,
                r.map(|r| r.rate).or(st.map(|s| s.received_per_second)),
                r.map(|r| r.calls as i64).or(st.map(|s| s.messages_received as i64)),
                r.map(|r| r.error_count() as i64).or(st.map(|s| s.failed_streams() as i64)),
                r.map(|r| r.latency.p50_ns as i64).or(st.map(|s| s.latency.p50_ns as i64)),
                r.map(|r| r.latency.p90_ns as i64).or(st.map(|s| s.latency.p90_ns as i64)),
                r.map(|r| r.latency.p99_ns as i64).or(st.map(|s| s.latency.p99_ns as i64)),
                cost.map(|c| c.cpu_ns as i64),
                cost.map(|c| c.cpu_ns_per_call),
                cost.map(|c| c.rss_peak_bytes as i64),
                cost.map(|c| c.rss_mean_bytes as i64),
                r.map(|r| r.generator.cpu_ns as i64),
                stripped.as_ref().map(json),
                m.search.as_ref().map(json),
                m.warmup.as_ref().map(json),
                m.link.as_ref().map(json),
                st.map(json),
                m.server_rss_before_bytes.map(|b| b as i64),
            ],
        )
        .map_err(c)?;
        let mid = tx.last_insert_rowid();
        if let Some(r) = r {
            if !r.histogram.is_empty() {
                tx.execute(
                    "INSERT INTO histograms (measurement_id, kind, encoding, data) VALUES (?1, 'latency_ns', 'hdr-v2-deflate-base64', ?2)",
                    params![mid, r.histogram.as_str()],
                )
                .map_err(c)?;
            }
            let mut stmt = tx
                .prepare(
                    "INSERT INTO timeseries (measurement_id, second, successes, errors, p50_ns, p99_ns, server_rss_bytes, users, p95_ns, server_cpu_ns)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )
                .map_err(c)?;
            for t in &r.timeline {
                let rss = m.server_rss_timeline.get(t.second as usize).map(|v| *v as i64);
                let cpu = m.server_cpu_timeline.get(t.second as usize).map(|v| *v as i64);
                stmt.execute(params![
                    mid,
                    t.second,
                    t.successes as i64,
                    t.errors as i64,
                    t.p50_ns as i64,
                    t.p99_ns as i64,
                    rss,
                    t.users,
                    t.p95_ns as i64,
                    cpu
                ])
                .map_err(c)?;
            }
        }
        tx.commit().map_err(c)?;
        Ok(())
    }

    /// Sets a run's status (and its end time when it is not `running`).
    pub fn set_status(&mut self, run_id: i64, status: RunStatus, at: &str) -> Result<(), StoreError> {
        let finished = (status != RunStatus::Running).then_some(at);
        self.conn
            .execute(
                "UPDATE runs SET status = ?1, finished_at = ?2 WHERE id = ?3",
                params![status.name(), finished, run_id],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Gives run `run_id` more repetitions, with the plan that says so (an
    /// `--until-decided` round): the new repetitions are then what the run
    /// is missing, so `--resume` measures them too.
    pub fn set_repetitions(
        &mut self,
        run_id: i64,
        repetitions: u32,
        plan: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let plan = serde_json::to_string(plan).expect("a JSON value");
        self.conn
            .execute(
                "UPDATE runs SET repetitions = ?1, plan_json = ?2 WHERE id = ?3",
                params![repetitions, plan, run_id],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Appends a warning to a run.
    pub fn add_warning(&mut self, run_id: i64, warning: &str) -> Result<(), StoreError> {
        let current: String = self
            .conn
            .query_row("SELECT warnings_json FROM runs WHERE id = ?1", [run_id], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        let mut list: Vec<String> = serde_json::from_str(&current).unwrap_or_default();
        if !list.iter().any(|w| w == warning) {
            list.push(warning.to_owned());
        }
        self.conn
            .execute(
                "UPDATE runs SET warnings_json = ?1 WHERE id = ?2",
                params![json(&list), run_id],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Records a link of a run as measured before its points ran.
    pub fn save_link(&mut self, run_id: i64, link: &RunLink) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO links (run_id, network, measured_at, rtt_ns, up_goodput_bps, down_goodput_bps, link_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    run_id,
                    link.network,
                    link.measured_at,
                    link.rtt_ns as i64,
                    link.up_goodput_bps,
                    link.down_goodput_bps,
                    json(link)
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The run's links in the order they were measured.
    fn links(&self, run_id: i64) -> Result<Vec<RunLink>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT link_json FROM links WHERE run_id = ?1 ORDER BY id")
            .map_err(|e| self.err(e))?;
        let rows: Vec<String> = stmt
            .query_map([run_id], |r| r.get(0))
            .map_err(|e| self.err(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.err(e))?;
        rows.iter().map(|s| self.parse(s, "link record")).collect()
    }

    /// Every run, newest first.
    pub fn list_runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT r.id, r.preset, r.status, r.started_at, r.finished_at, r.repetitions,
                        (SELECT COUNT(*) FROM points p WHERE p.run_id = r.id),
                        (SELECT COUNT(*) FROM measurements m WHERE m.run_id = r.id),
                        (SELECT COUNT(*) FROM measurements m WHERE m.run_id = r.id AND m.status = 'failed')
                 FROM runs r ORDER BY r.id DESC",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(RunSummary {
                    id: r.get(0)?,
                    preset: r.get(1)?,
                    status: RunStatus::parse(&r.get::<_, String>(2)?).unwrap_or(RunStatus::Failed),
                    started_at: r.get(3)?,
                    finished_at: r.get(4)?,
                    repetitions: r.get(5)?,
                    points: r.get(6)?,
                    measured: r.get(7)?,
                    failed: r.get(8)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// The newest run's id, if any.
    pub fn latest_run(&self) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row("SELECT MAX(id) FROM runs", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    /// Loads a run with its points and measurements (histograms and time series included).
    pub fn load_run(&self, id: i64) -> Result<RunRecord, StoreError> {
        let run = self.run_row(id)?;
        let points = self.points(id)?;
        let measurements = self.measurements(id)?;
        let links = self.links(id)?;
        Ok(RunRecord {
            id,
            preset: run.preset,
            preset_path: run.preset_path,
            status: RunStatus::parse(&run.status).unwrap_or(RunStatus::Failed),
            started_at: run.started_at,
            finished_at: run.finished_at,
            plan: self.parse(&run.plan_json, "plan")?,
            repetitions: run.repetitions,
            noise_threshold: run.noise_threshold,
            environment: self.parse(&run.environment_json, "environment")?,
            warnings: self.parse(&run.warnings_json, "warnings")?,
            points,
            measurements,
            links,
        })
    }

    /// The run's own row, or [`StoreError::NoSuchRun`].
    fn run_row(&self, id: i64) -> Result<RunRow, StoreError> {
        self.conn
            .query_row(RunRow::SELECT, [id], RunRow::from_row)
            .optional()
            .map_err(|e| self.err(e))?
            .ok_or_else(|| StoreError::NoSuchRun {
                id,
                path: self.path.clone(),
            })
    }

    /// The run's points, in plan order.
    fn points(&self, run_id: i64) -> Result<Vec<PointConfig>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT config_json FROM points WHERE run_id = ?1 ORDER BY point_index")
            .map_err(|e| self.err(e))?;
        let configs: Vec<String> = stmt
            .query_map([run_id], |r| r.get(0))
            .map_err(|e| self.err(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.err(e))?;
        configs.iter().map(|c| self.parse(c, "point config")).collect()
    }

    /// The run's measurements by repetition then point, each with its
    /// histogram and time series.
    fn measurements(&self, run_id: i64) -> Result<Vec<Measurement>, StoreError> {
        let mut stmt = self.conn.prepare(MeasurementRow::SELECT).map_err(|e| self.err(e))?;
        let rows: Vec<MeasurementRow> = stmt
            .query_map([run_id], MeasurementRow::from_row)
            .map_err(|e| self.err(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.err(e))?;
        rows.into_iter().map(|row| self.measurement(row)).collect()
    }

    /// One measurement from its row, its time series and its JSON columns.
    fn measurement(&self, row: MeasurementRow) -> Result<Measurement, StoreError> {
        let (timeline, rss, cpu) = self.timeline(row.id)?;
        let mut result: Option<LoadResult> = row
            .result_json
            .map(|s| self.parse(&s, "measurement result"))
            .transpose()?;
        if let Some(r) = result.as_mut() {
            r.histogram = row.histogram.unwrap_or_default().into();
            r.timeline = timeline;
        }
        let server_cost = row.server_cpu_ns.map(|cpu_ns| {
            let calls = result.as_ref().map(|r| r.calls).unwrap_or(0);
            ServerCost {
                cpu_ns: cpu_ns as u64,
                cpu_ns_per_call: row.server_cpu_ns_per_call.unwrap_or(0.0),
                calls_per_cpu_second: if cpu_ns > 0 {
                    calls as f64 / (cpu_ns as f64 / 1e9)
                } else {
                    0.0
                },
                rss_peak_bytes: row.rss_peak_bytes.unwrap_or(0) as u64,
                rss_mean_bytes: row.rss_mean_bytes.unwrap_or(0) as u64,
            }
        });
        Ok(Measurement {
            server_rss_before_bytes: row.rss_before_bytes.map(|b| b as u64),
            stream: row
                .stream_json
                .map(|s| self.parse::<StreamResult>(&s, "streaming result"))
                .transpose()?,
            point: row.point,
            repetition: row.repetition,
            status: if row.status == "ok" {
                MeasurementStatus::Ok
            } else {
                MeasurementStatus::Failed
            },
            failure: row.failure_reason.map(|reason| Failure {
                reason,
                log_tail: row.log_tail,
            }),
            result,
            server_cost,
            server_rss_timeline: rss,
            server_cpu_timeline: cpu,
            search: row
                .search_json
                .map(|s| self.parse::<Search>(&s, "search trace"))
                .transpose()?,
            warmup: row
                .warmup_json
                .map(|s| self.parse::<Warmup>(&s, "warm-up record"))
                .transpose()?,
            link: row
                .link_json
                .map(|s| self.parse::<PointLink>(&s, "link share"))
                .transpose()?,
            started_at: row.started_at,
            finished_at: row.finished_at,
        })
    }

    /// The timeline of measurement `mid`, with the server's RSS and CPU per
    /// second where they were sampled (the CPU up to the first second without).
    fn timeline(&self, mid: i64) -> Result<StoredTimeline, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT second, successes, errors, p50_ns, p99_ns, server_rss_bytes, users, p95_ns, server_cpu_ns FROM timeseries
                 WHERE measurement_id = ?1 ORDER BY second",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([mid], |r| {
                Ok((
                    TimelinePoint {
                        second: r.get(0)?,
                        successes: r.get::<_, i64>(1)? as u64,
                        errors: r.get::<_, i64>(2)? as u64,
                        p50_ns: r.get::<_, i64>(3)? as u64,
                        p99_ns: r.get::<_, i64>(4)? as u64,
                        users: r.get(6)?,
                        p95_ns: r.get::<_, i64>(7)? as u64,
                    },
                    r.get::<_, Option<i64>>(5)?,
                    r.get::<_, Option<i64>>(8)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut timeline = Vec::new();
        let mut rss = Vec::new();
        let mut cpu = Vec::new();
        for row in rows {
            let (t, r, c) = row.map_err(|e| self.err(e))?;
            timeline.push(t);
            if let Some(r) = r {
                rss.push(r as u64);
            }
            if let Some(c) = c
                && cpu.len() == t.second as usize
            {
                cpu.push(c as u64);
            }
        }
        Ok((timeline, rss, cpu))
    }

    fn parse<T: serde::de::DeserializeOwned>(&self, s: &str, what: &str) -> Result<T, StoreError> {
        serde_json::from_str(s).map_err(|source| StoreError::Corrupt {
            path: self.path.clone(),
            what: what.into(),
            source,
        })
    }
}

/// A measurement's timeline as stored: the seconds, and the server's RSS
/// and CPU per second.
type StoredTimeline = (Vec<TimelinePoint>, Vec<u64>, Vec<u64>);

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("serializing plain data cannot fail")
}

/// The columns of `runs` that [`Store::load_run`] reads.
struct RunRow {
    preset: String,
    preset_path: Option<String>,
    status: String,
    started_at: String,
    finished_at: Option<String>,
    plan_json: String,
    repetitions: u32,
    noise_threshold: f64,
    environment_json: String,
    warnings_json: String,
}

impl RunRow {
    const SELECT: &str = "SELECT preset, preset_path, status, started_at, finished_at, plan_json, repetitions,
                                 noise_threshold, environment_json, warnings_json FROM runs WHERE id = ?1";

    fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
        Ok(RunRow {
            preset: r.get(0)?,
            preset_path: r.get(1)?,
            status: r.get(2)?,
            started_at: r.get(3)?,
            finished_at: r.get(4)?,
            plan_json: r.get(5)?,
            repetitions: r.get(6)?,
            noise_threshold: r.get(7)?,
            environment_json: r.get(8)?,
            warnings_json: r.get(9)?,
        })
    }
}

/// One row of `measurements` with its latency histogram, as
/// [`Store::load_run`] reads it.
struct MeasurementRow {
    id: i64,
    point: u32,
    repetition: u32,
    status: String,
    failure_reason: Option<String>,
    log_tail: Option<String>,
    started_at: String,
    finished_at: String,
    result_json: Option<String>,
    search_json: Option<String>,
    warmup_json: Option<String>,
    link_json: Option<String>,
    stream_json: Option<String>,
    rss_before_bytes: Option<i64>,
    server_cpu_ns: Option<i64>,
    server_cpu_ns_per_call: Option<f64>,
    rss_peak_bytes: Option<i64>,
    rss_mean_bytes: Option<i64>,
    histogram: Option<String>,
}

impl MeasurementRow {
    const SELECT: &str =
        "SELECT m.id, m.point_index, m.repetition, m.status, m.failure_reason, m.log_tail, m.started_at,
                                 m.finished_at, m.result_json, m.search_json, m.server_cpu_ns, m.server_cpu_ns_per_call,
                                 m.rss_peak_bytes, m.rss_mean_bytes, h.data, m.warmup_json, m.link_json,
                                 m.stream_json, m.rss_before_bytes
                          FROM measurements m LEFT JOIN histograms h ON h.measurement_id = m.id
                          WHERE m.run_id = ?1 ORDER BY m.repetition, m.point_index";

    fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<MeasurementRow> {
        Ok(MeasurementRow {
            id: r.get(0)?,
            point: r.get(1)?,
            repetition: r.get(2)?,
            status: r.get(3)?,
            failure_reason: r.get(4)?,
            log_tail: r.get(5)?,
            started_at: r.get(6)?,
            finished_at: r.get(7)?,
            result_json: r.get(8)?,
            search_json: r.get(9)?,
            server_cpu_ns: r.get(10)?,
            server_cpu_ns_per_call: r.get(11)?,
            rss_peak_bytes: r.get(12)?,
            rss_mean_bytes: r.get(13)?,
            histogram: r.get(14)?,
            warmup_json: r.get(15)?,
            link_json: r.get(16)?,
            stream_json: r.get(17)?,
            rss_before_bytes: r.get(18)?,
        })
    }
}

/// Maps an SQLite error to what the user needs to know, naming the file.
fn classify(path: &Path, e: rusqlite::Error) -> StoreError {
    let path = path.to_owned();
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => StoreError::Locked { path },
        Some(ErrorCode::DiskFull) => StoreError::DiskFull { path },
        Some(ErrorCode::ReadOnly) | Some(ErrorCode::CannotOpen) | Some(ErrorCode::PermissionDenied) => {
            StoreError::ReadOnly { path, source: e }
        }
        _ => StoreError::Sqlite { path, source: e },
    }
}
