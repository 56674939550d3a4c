//! The one writer of a run's store while it is measured: the measuring
//! rooms send [`RunEvent`]s; this stores the measurements, warnings and
//! link reports among them and passes every event on.

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use protobench_model::run::{Measurement, MeasurementStatus};
use protobench_results::store::Store;

use crate::orchestrate::events::{Outcome, RunEvent};

/// The one writer of a run's store while it is measured: it stores every
/// measurement, warning and link report the measuring rooms send, then
/// passes each event on unchanged. A measurement the database refuses
/// (disk full, lock) is kept and retried after the next one; whatever is
/// still refused at the end is returned in the [`Outcome`].
pub struct Writer<'s> {
    store: &'s mut Store,
    run_id: i64,
    outcome: Outcome,
}

impl<'s> Writer<'s> {
    /// A writer of run `run_id` in `store`.
    pub fn new(store: &'s mut Store, run_id: i64) -> Writer<'s> {
        Writer {
            store,
            run_id,
            outcome: Outcome::default(),
        }
    }

    /// Stores what `events` carry until their sender is dropped, passing
    /// every event on to `forward`; returns the counts, the warnings and
    /// what could not be stored (its `status` is left for the caller).
    pub async fn consume(
        mut self,
        mut events: UnboundedReceiver<RunEvent>,
        forward: Option<UnboundedSender<RunEvent>>,
    ) -> Outcome {
        let pass = |e: RunEvent| {
            if let Some(tx) = &forward {
                let _ = tx.send(e);
            }
        };
        while let Some(e) = events.recv().await {
            match &e {
                RunEvent::Measured(m) => {
                    if let Some(notice) = self.measurement(m) {
                        pass(RunEvent::Notice(notice));
                    }
                }
                RunEvent::Warning(w) => self.warning(w),
                RunEvent::Link(link) => {
                    if let Err(err) = self.store.save_link(self.run_id, link) {
                        let w = format!("the report of link `{}` was not stored: {err}", link.network);
                        self.warning(&w);
                        pass(RunEvent::Warning(w));
                    }
                }
                _ => {}
            }
            pass(e);
        }
        self.outcome
    }

    /// Records a warning with the run (once).
    fn warning(&mut self, w: &str) {
        if !self.outcome.warnings.iter().any(|s| s == w) {
            let _ = self.store.add_warning(self.run_id, w);
            self.outcome.warnings.push(w.to_string());
        }
    }

    /// Stores a measurement, retrying earlier unsaved ones first; returns a
    /// notice when the database refused it for a new reason.
    fn measurement(&mut self, m: &Measurement) -> Option<String> {
        self.outcome.measured += 1;
        if m.status == MeasurementStatus::Failed {
            self.outcome.failed += 1;
        }
        let mut pending = std::mem::take(&mut self.outcome.unsaved);
        pending.push(m.clone());
        let mut notice = None;
        for m in pending {
            if let Err(e) = self.store.save_measurement(self.run_id, &m) {
                let msg = format!("{e}");
                if self.outcome.save_error.as_deref() != Some(&msg) {
                    notice = Some(format!("{msg}: measurement kept in memory, retrying"));
                }
                self.outcome.save_error = Some(msg);
                self.outcome.unsaved.push(m);
            }
        }
        notice
    }
}
