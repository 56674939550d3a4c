//! What a run says while it runs. The measuring rooms only *say* things:
//! every measurement, warning and link report leaves them as a
//! [`RunEvent`], and the session ([`crate::session::Writer`]) alone writes
//! them to the store before passing each event on to whoever renders it.

use tokio::sync::mpsc::UnboundedSender;

use protobench_model::network::RunLink;
use protobench_model::run::{Measurement, RunStatus};

use crate::engine::Event;

/// What the runner reports while it runs (the CLI renders these; the
/// session stores the measurements, warnings and links among them).
#[derive(Debug, Clone, PartialEq)]
pub enum RunEvent {
    /// Before the first measurement.
    Begin {
        /// Measurements to take now.
        todo: u32,
        /// Measurements in the plan.
        total: u32,
        /// Rough duration estimate.
        estimate_s: f64,
    },
    /// A server is being started.
    ServerStarting {
        /// Server name.
        server: String,
        /// Repetition.
        repetition: u32,
    },
    /// A server was started and verified; `pid` is the process whose CPU
    /// and memory are sampled (the live page samples it each second too).
    ServerReady {
        /// Server name.
        server: String,
        /// Its process.
        pid: u32,
    },
    /// One second of a steady-state warm-up (`warmup = "steady"`), which is
    /// an engine run of its own whose seconds are not the measurement's.
    WarmingUp {
        /// Seconds warmed up so far.
        second: u32,
        /// Successful calls in that second.
        rate: f64,
        /// Whether the steady-state test has now passed (the warm-up ends).
        steady: bool,
    },
    /// A server could not be started or verified.
    ServerFailed {
        /// Server name.
        server: String,
        /// Why.
        reason: String,
    },
    /// A measurement starts.
    PointStarted {
        /// Point index.
        point: u32,
        /// Repetition.
        repetition: u32,
        /// `server protocol workload variant`.
        label: String,
        /// Measurements finished so far.
        done: u32,
        /// Measurements to take.
        todo: u32,
    },
    /// What the engine reports during a measurement (its own events, as sent).
    Engine(Event),
    /// A measurement was taken (or failed): the record to store. Sent just
    /// before its [`RunEvent::PointFinished`].
    Measured(Box<Measurement>),
    /// A measurement ended (successfully or not).
    PointFinished {
        /// Point index.
        point: u32,
        /// `server protocol workload variant`.
        label: String,
        /// Repetition.
        repetition: u32,
        /// The rate, when measured.
        rate: Option<f64>,
        /// Why it failed.
        failure: Option<String>,
    },
    /// Something to record with the run (each said once per run).
    Warning(String),
    /// Something to show but not to record with the run (a measurement the
    /// database refused for now, kept in memory and retried).
    Notice(String),
    /// `--until-decided`: after a round, why the run stops or what the next
    /// round adds (also recorded with the run).
    Round(String),
    /// An emulated link was created and measured before its points (its
    /// `summary_line`: "lan-1g: measured 0.95 Gbit/s up, ...").
    Link(Box<RunLink>),
}

/// How a run ended.
#[derive(Debug, Default)]
pub struct Outcome {
    /// `complete`, or `interrupted` when cancelled.
    pub status: Option<RunStatus>,
    /// Measurements taken now.
    pub measured: u32,
    /// Of those, failed.
    pub failed: u32,
    /// Measurements the database did not accept (to be saved elsewhere).
    pub unsaved: Vec<Measurement>,
    /// The last storage error, if any.
    pub save_error: Option<String>,
    /// Warnings raised.
    pub warnings: Vec<String>,
}

/// The measuring rooms' voice: sends [`RunEvent`]s and says each warning
/// once per run.
#[derive(Debug)]
pub(super) struct Voice {
    tx: UnboundedSender<RunEvent>,
    warned: Vec<String>,
}

impl Voice {
    pub(super) fn new(tx: UnboundedSender<RunEvent>) -> Voice {
        Voice { tx, warned: Vec::new() }
    }

    /// Sends `e` (a receiver that is gone is no reason to stop measuring).
    pub(super) fn emit(&self, e: RunEvent) {
        let _ = self.tx.send(e);
    }

    /// Says `w` unless it was said before in this run.
    pub(super) fn warn(&mut self, w: String) {
        if !self.warned.contains(&w) {
            self.warned.push(w.clone());
            self.emit(RunEvent::Warning(w));
        }
    }

    /// A sender for code that runs beside the rooms (the engine's event
    /// forwarder).
    pub(super) fn sender(&self) -> UnboundedSender<RunEvent> {
        self.tx.clone()
    }
}
