//! The measurement of one point by its [`Method`]: the warm-up (fixed, or
//! until the rate is steady), one engine run with the server's cost over
//! its measured window, and the searches (discover, stepped ramp,
//! continuous ramp). This room sees the engine, the plan and the server
//! process it samples; it never sees the store or the server catalog, and
//! it stores nothing: it returns what it measured.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use protobench_model::load::{EndReason, LoadPlan, LoadResult};
use protobench_model::run::{PointConfig, Search, SearchStep, ServerCost, Warmup};
use protobench_model::stream::StreamResult;

use super::events::RunEvent;
use crate::engine::{Engine, Event};
use crate::error::MeasureError;
use crate::plan::{DiscoverSpec, Method, Plan, RampSpec, SteadyWarmup};
use crate::procfs::{self, Sampler};
use crate::search::{Discover, KneeRule, Next, Observation, Ramp, Stepper, Stop};
use crate::server::RunningServer;

/// What measuring needs besides the point: the engine, the plan's
/// settings, the run's cancellation and where engine events go.
pub(super) struct Measurer<'a, E: Engine> {
    pub(super) engine: &'a E,
    pub(super) plan: &'a Plan,
    pub(super) method: &'a Method,
    /// The run's token: Ctrl-C. Each engine run gets a child of it.
    pub(super) cancel: &'a CancellationToken,
    /// Engine events are passed on as [`RunEvent::Engine`].
    pub(super) events: UnboundedSender<RunEvent>,
}

/// Where a point is measured: the point, its server's address, the server
/// process (none for a target), the sampled PID with its sampler, and the
/// server stack's own minimum warm-up (a JIT's, from its manifest).
pub(super) struct Site<'a> {
    pub(super) point: &'a PointConfig,
    pub(super) target: &'a str,
    pub(super) server: Option<&'a RunningServer>,
    pub(super) sampled: Option<(u32, &'a Sampler)>,
    pub(super) stack_warmup_min_s: u64,
}

/// One streaming point's measurement: the streaming engine's result and
/// the server's cost over the measured window (CPU per message: over the
/// messages sent and received, as the engine's own).
pub(super) struct StreamMeasured {
    pub(super) result: StreamResult,
    /// The server's RSS before the point's streams opened.
    pub(super) rss_before: Option<u64>,
    pub(super) cost: Option<ServerCost>,
    pub(super) rss: Vec<u64>,
    pub(super) cpu: Vec<u64>,
}

/// One point's measurement: the engine's result, the server's cost over the
/// measured window, its RSS per second, and the search trace.
pub(super) struct Measured {
    pub(super) result: LoadResult,
    /// `None` when nothing was sampled (a target without a PID).
    pub(super) cost: Option<ServerCost>,
    pub(super) rss: Vec<u64>,
    /// The server's CPU time in each whole second of the window (ns).
    pub(super) cpu: Vec<u64>,
    pub(super) search: Option<Search>,
    pub(super) warmup: Option<Warmup>,
}

impl<E: Engine> Measurer<'_, E> {
    /// Measures a point by its method: one run for `fixed` and `rate`; a
    /// search for `discover` (then the best concurrency measured for the
    /// full duration) and the ramps (the knee is the measurement).
    pub(super) async fn point(&self, site: &Site<'_>) -> Result<Measured, MeasureError> {
        let plan = self.plan;
        match self.method {
            Method::Fixed | Method::Rate => {
                self.run_once(site, site.point.concurrency, plan.duration_ns, plan.warmup_ns)
                    .await
            }
            Method::Discover(spec) => self.discover(site, spec).await,
            Method::SteppedRamp(spec) => self.stepped_ramp(site, spec).await,
            Method::ContinuousRamp(spec) => self.continuous_ramp(site, spec).await,
            Method::Stream => Err(MeasureError(
                "a streaming point is measured by Measurer::stream_point".into(),
            )),
        }
    }

    /// A streaming point: a warm-up run of its streams for the preset's
    /// warm-up (discarded), then the measured run for its duration, with
    /// the server's cost over the measured window. The streaming engine
    /// reports no start event, so the window is taken to end when the
    /// engine returned (it returns at the window's end).
    pub(super) async fn stream_point(&self, site: &Site<'_>) -> Result<StreamMeasured, MeasureError> {
        let plan_for = |ns| {
            self.plan
                .stream_plan(site.point, site.target, ns)
                .ok_or_else(|| MeasureError(format!("{} is not a streaming point", site.point.label())))
        };
        // The server's memory before any of this point's streams opened.
        let rss_before = site.sampled.map(|(pid, _)| procfs::sample(pid).rss_bytes);
        if self.plan.warmup_ns > 0 {
            self.engine
                .measure_stream(plan_for(self.plan.warmup_ns)?, self.cancel.child_token())
                .await?;
            if self.cancel.is_cancelled() {
                return Err(interrupted(site));
            }
        }
        let result = self
            .engine
            .measure_stream(plan_for(self.plan.duration_ns)?, self.cancel.child_token())
            .await?;
        let returned = Instant::now();
        let mut m = StreamMeasured {
            result,
            rss_before,
            cost: None,
            rss: vec![],
            cpu: vec![],
        };
        if m.result.end_reason == EndReason::Interrupted && self.cancel.is_cancelled() {
            return Ok(m);
        }
        let window = Duration::from_nanos(m.result.duration_ns);
        let start = returned.checked_sub(window).unwrap_or(returned);
        if let Some((cost, rss, cpu)) =
            server_cost(site, start, window, m.result.messages_sent + m.result.messages_received)
        {
            (m.cost, m.rss, m.cpu) = (Some(cost), rss, cpu);
        }
        Ok(m)
    }

    async fn discover(&self, site: &Site<'_>, spec: &DiscoverSpec) -> Result<Measured, MeasureError> {
        let Some((stepper, stop, _)) = self.search(site, Discover::new(spec.clone()), spec.step_ns).await? else {
            return Err(interrupted(site));
        };
        let plan = self.plan;
        let mut m = self
            .run_once(site, stop.concurrency, plan.duration_ns, plan.warmup_ns)
            .await?;
        m.search = Some(Search {
            steps: stepper.steps().to_vec(),
            chosen_concurrency: stop.concurrency,
            knee_rate: None,
            stop_reason: stop.reason,
            knee_second: None,
            stopped_at_knee: false,
        });
        Ok(m)
    }

    async fn stepped_ramp(&self, site: &Site<'_>, spec: &RampSpec) -> Result<Measured, MeasureError> {
        let Some((stepper, stop, mut measured)) = self.search(site, Ramp::new(spec.clone()), spec.step_ns).await?
        else {
            return Err(interrupted(site));
        };
        let mut m = measured.swap_remove(stop.best);
        m.search = Some(Search {
            steps: stepper.steps().to_vec(),
            chosen_concurrency: stop.concurrency,
            knee_rate: Some(m.result.rate),
            stop_reason: stop.reason,
            knee_second: None,
            stopped_at_knee: false,
        });
        Ok(m)
    }

    /// Runs a search: "ask the stepper, measure once" until it stops.
    /// Returns the stepper, its stop and every step's measurement, or
    /// `None` when interrupted.
    async fn search<S: Stepper>(
        &self,
        site: &Site<'_>,
        mut stepper: S,
        step_ns: u64,
    ) -> Result<Option<(S, Stop, Vec<Measured>)>, MeasureError> {
        let mut concurrency = stepper.first();
        let mut warmup = self.plan.warmup_ns;
        let mut measured = Vec::new();
        loop {
            let m = self.run_once(site, concurrency, step_ns, warmup).await?;
            warmup = 0;
            if self.cancel.is_cancelled() {
                return Ok(None);
            }
            let r = &m.result;
            let next = stepper.observe(Observation {
                concurrency,
                rate: r.rate,
                calls: r.calls,
                errors: r.error_count(),
                p99_ns: r.latency.p99_ns,
            });
            measured.push(m);
            match next {
                Next::Measure(c) => concurrency = c,
                Next::Stop(stop) => return Ok(Some((stepper, stop, measured))),
            }
        }
    }

    /// The warm-up, then one measured engine run at `concurrency`.
    async fn run_once(
        &self,
        site: &Site<'_>,
        concurrency: u32,
        duration_ns: u64,
        warmup_ns: u64,
    ) -> Result<Measured, MeasureError> {
        let (warmup_ns, warmup) = self.warm_up(site, concurrency, warmup_ns).await?;
        let plan = self
            .plan
            .load_plan(site.point, site.target, concurrency, duration_ns, warmup_ns);
        let mut m = self.engine_run(site, plan, self.cancel.child_token(), None).await?;
        m.warmup = warmup;
        Ok(m)
    }

    /// The one warm-up decision. With `warmup = "steady"` the warm-up is an
    /// engine run of its own, stopped as soon as the rate has stopped
    /// rising (at most `warmup_ns`), and the measured run that follows
    /// warms up no further: returns (0, what the warm-up did). Otherwise
    /// the measured run warms up for `warmup_ns` itself.
    async fn warm_up(
        &self,
        site: &Site<'_>,
        concurrency: u32,
        warmup_ns: u64,
    ) -> Result<(u64, Option<Warmup>), MeasureError> {
        match self.plan.warmup_steady {
            Some(spec) if warmup_ns > 0 => {
                let w = self.steady_warmup(site, concurrency, warmup_ns, spec).await?;
                Ok((0, Some(w)))
            }
            _ => Ok((warmup_ns, None)),
        }
    }

    /// Warms up for at least the preset's and the stack's minimum, then
    /// until the per-second rate has stopped rising
    /// (`protobench_model::steady::steady`), or until `max_ns` has passed.
    async fn steady_warmup(
        &self,
        site: &Site<'_>,
        concurrency: u32,
        max_ns: u64,
        spec: SteadyWarmup,
    ) -> Result<Warmup, MeasureError> {
        let plan = self.plan.load_plan(site.point, site.target, concurrency, max_ns, 0);
        // The stack's own minimum (a JIT's) counts as much as the preset's.
        let min_s = u64::from(spec.min_s).max(site.stack_warmup_min_s) as usize;
        let (tx, rx) = unbounded_channel();
        let stop = self.cancel.child_token();
        let mut rates = Vec::new();
        let events = self.events.clone();
        let watcher = watch_seconds(rx, max_ns, stop.clone(), move |rate, _| {
            rates.push(rate);
            let steady = rates.len() >= min_s
                && protobench_model::steady::steady(&rates, spec.window_s as usize, spec.threshold);
            let _ = events.send(RunEvent::WarmingUp {
                second: rates.len() as u32,
                rate,
                steady,
            });
            steady
        });
        let started = Instant::now();
        let result = self.engine.measure(plan, Some(tx), stop).await;
        let steady = watcher.await.unwrap_or(false);
        result?;
        Ok(Warmup {
            duration_ns: started.elapsed().as_nanos() as u64,
            steady,
        })
    }

    /// One engine run of `plan` (cancelled by `stop`, a child of the run's
    /// token) with the server's cost over its measured window; every engine
    /// event also goes to `tap` (the continuous ramp's knee watcher). Only
    /// a run cut short by the user (Ctrl-C) goes without its cost.
    async fn engine_run(
        &self,
        site: &Site<'_>,
        plan: LoadPlan,
        stop: CancellationToken,
        tap: Option<UnboundedSender<Event>>,
    ) -> Result<Measured, MeasureError> {
        let warmup_ns = plan.warmup_ns;
        let (tx, mut rx) = unbounded_channel();
        let started: Arc<Mutex<Option<Instant>>> = Arc::default();
        let forward = {
            let started = started.clone();
            let events = self.events.clone();
            tokio::spawn(async move {
                while let Some(e) = rx.recv().await {
                    if let Event::Started { at, .. } = e {
                        *started.lock().unwrap_or_else(|e| e.into_inner()) = Some(at);
                    }
                    if let Some(tap) = &tap {
                        let _ = tap.send(e.clone());
                    }
                    let _ = events.send(RunEvent::Engine(e));
                }
            })
        };
        let result = self.engine.measure(plan, Some(tx), stop).await;
        let returned = Instant::now();
        let _ = forward.await;
        let result = result?;
        let mut m = Measured {
            result,
            cost: None,
            rss: vec![],
            cpu: vec![],
            search: None,
            warmup: None,
        };
        if m.result.end_reason == EndReason::Interrupted && self.cancel.is_cancelled() {
            return Ok(m);
        }
        let window = Duration::from_nanos(m.result.duration_ns);
        let start = started
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map(|at| at + Duration::from_nanos(warmup_ns))
            .filter(|s| *s + window <= returned + Duration::from_millis(50))
            .unwrap_or_else(|| returned.checked_sub(window).unwrap_or(returned));
        if let Some((cost, rss, cpu)) = server_cost(site, start, window, m.result.calls) {
            (m.cost, m.rss, m.cpu) = (Some(cost), rss, cpu);
        }
        Ok(m)
    }

    /// The continuous ramp: one engine run whose callers join at
    /// `spawn_rate` per second from `start` up to `max` (a concurrency
    /// schedule), keeping their connections. A watcher applies the knee
    /// rule to each closed second and cancels the run at the knee; the
    /// whole timeline is the measurement, the knee (second, users, rate,
    /// reason) its search record. A steady warm-up, if the preset asks for
    /// one, runs first at `start` users.
    async fn continuous_ramp(&self, site: &Site<'_>, spec: &RampSpec) -> Result<Measured, MeasureError> {
        let (warmup_ns, warmup) = self.warm_up(site, spec.start.max(1), self.plan.warmup_ns).await?;
        let (start, stages) = spec.stages();
        let window_ns: u64 = stages.iter().map(|s| s.duration_ns).sum();
        let mut plan = self
            .plan
            .load_plan(site.point, site.target, spec.max, window_ns, warmup_ns);
        plan.duration_ns = None;
        plan.start_users = start;
        plan.stages = stages;
        let stop = self.cancel.child_token();
        let (tap, seconds) = unbounded_channel();
        let mut rule = KneeRule::new(spec);
        let watcher = watch_seconds(seconds, window_ns, stop.clone(), move |_, second| {
            rule.observe(second).is_some()
        });
        let measured = self.engine_run(site, plan, stop, Some(tap)).await;
        let stopped = watcher.await.unwrap_or(false);
        let mut m = measured?;
        if self.cancel.is_cancelled() {
            return Err(interrupted(site));
        }
        let knee = crate::search::find_knee(&m.result.timeline, m.result.duration_ns, spec).ok_or_else(|| {
            MeasureError(format!(
                "the ramp of {} ended before its first whole second",
                site.point.label()
            ))
        })?;
        let steps = m
            .result
            .timeline
            .iter()
            .filter(|p| (u64::from(p.second) + 1) * 1_000_000_000 <= m.result.duration_ns)
            .map(|p| SearchStep {
                concurrency: p.users,
                rate: p.successes as f64,
                errors: p.errors,
                p99_ns: p.p99_ns,
            })
            .collect();
        m.search = Some(Search {
            steps,
            chosen_concurrency: knee.users,
            knee_rate: Some(knee.rate),
            stop_reason: knee.reason,
            knee_second: Some(knee.second),
            stopped_at_knee: stopped,
        });
        m.warmup = warmup;
        Ok(m)
    }
}

/// The one watcher of an engine run's closed seconds: hands each second
/// that ends within `max_ns` (its rate and its timeline point) to `done`,
/// and cancels `stop` the first time `done` says so. A second past
/// `max_ns` is the partial one a run ends with: its low count would read as
/// a fall, so it is not judged. Returns whether `stop` was cancelled by it.
fn watch_seconds(
    mut seconds: UnboundedReceiver<Event>,
    max_ns: u64,
    stop: CancellationToken,
    mut done: impl FnMut(f64, &protobench_model::load::TimelinePoint) -> bool + Send + 'static,
) -> JoinHandle<bool> {
    tokio::spawn(async move {
        let mut stopped = false;
        while let Some(e) = seconds.recv().await {
            if let Event::Progress {
                rate,
                elapsed_ns,
                second,
                ..
            } = e
                && elapsed_ns <= max_ns
                && !stopped
                && done(rate, &second)
            {
                stopped = true;
                stop.cancel();
            }
        }
        stopped
    })
}

/// A search cut short by Ctrl-C: nothing is kept (the caller sees the
/// cancellation and records nothing).
/// The sampled server's cost over the window from `start` (its CPU per
/// one of `count`: calls, or a stream's messages), its RSS and CPU per
/// second; `None` when nothing is sampled (a target without a PID).
fn server_cost(
    site: &Site<'_>,
    start: Instant,
    window: Duration,
    count: u64,
) -> Option<(ServerCost, Vec<u64>, Vec<u64>)> {
    let (pid, sampler) = site.sampled?;
    let samples = sampler.snapshot(pid);
    let (mut cost, rss) = procfs::cost(&samples, start, start + window, count);
    if let Some(peak) = site.server.and_then(RunningServer::cgroup_memory_peak) {
        cost.rss_peak_bytes = cost.rss_peak_bytes.max(peak);
    }
    Some((cost, rss, procfs::cpu_per_second(&samples, start, window)))
}

fn interrupted(site: &Site<'_>) -> MeasureError {
    MeasureError(format!("interrupted during the search of {}", site.point.label()))
}
