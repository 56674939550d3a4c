//! Workers: engine threads, each with a single-threaded event loop, its own
//! connections, pacer and recorder (no locks on the hot path), and one
//! coordinator that starts them together, gathers per-second reports for
//! progress events and merges everything at the end.
//!
//! A thread runs `concurrency / threads` callers. Each caller loops: ask the
//! pacer for the next intended start, sleep until then, take a connection
//! (HTTP/1.1: its own; HTTP/2: a handle on the connection it shares), call,
//! judge the response, record. The driver never sees a clock.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use protobench_model::load::{ErrorKind, LoadPlan};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::check::{Check, CheckState};
use crate::driver::{ByteCounters, CallError, Driver};
use crate::pacer::{Pace, Pacer, Schedule, Stop};
use crate::record::{CallStatus, Recorder, SecondReport};
use crate::timer::{PreciseTimer, thread_cpu_ns};

/// How a thread's share of the plan looks.
#[derive(Debug, Clone)]
pub(crate) struct ThreadPlan {
    pub(crate) index: usize,
    pub(crate) connections: usize,
    pub(crate) callers: usize,
    /// With a concurrency schedule: when each of this thread's callers joins,
    /// in ns since the run's start (non-decreasing); empty = all at once.
    pub(crate) joins: Vec<u64>,
    pub(crate) schedule: Schedule,
    pub(crate) stop: Stop,
    pub(crate) warmup_ns: u64,
    pub(crate) timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) open_loop: bool,
    /// Every call opens its own connection and closes it after the response.
    pub(crate) per_call: bool,
}

/// Messages from engine threads to the coordinator.
#[derive(Debug)]
pub(crate) enum Msg {
    /// Initial connections are open (or failed).
    Ready {
        connected: usize,
        first_error: Option<CallError>,
    },
    /// One closed second.
    Second(SecondReport),
    /// The thread is done.
    Done(Box<ThreadReport>),
}

/// What one thread hands back.
#[derive(Debug)]
pub(crate) struct ThreadReport {
    pub(crate) recorder: Recorder,
    pub(crate) bytes_sent: u64,
    pub(crate) bytes_received: u64,
    /// CPU time of the thread over its measured window.
    pub(crate) cpu_ns: u64,
    /// Wall time of that window: from the end of the warm-up to the thread's
    /// last call (0 when the run ended before the warm-up did).
    pub(crate) window_ns: u64,
}

/// The start signal: `Some(instant)` to go, `None` to abort.
pub(crate) type StartSignal = watch::Receiver<Option<Option<Instant>>>;

/// Splits `total` over `parts`: part `i` gets `total / parts`, plus one for the first `total % parts`.
pub(crate) fn share(total: u64, parts: u64, i: u64) -> u64 {
    total / parts + u64::from(i < total % parts)
}

/// Runs one engine thread to completion on the current (new) thread.
pub(crate) fn thread_main<D: Driver + Send + Sync>(
    driver: Arc<D>,
    check: Check,
    plan: ThreadPlan,
    tx: mpsc::UnboundedSender<Msg>,
    start: StartSignal,
    cancel: CancellationToken,
) {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = tx.send(Msg::Ready {
                connected: 0,
                first_error: Some(CallError::new(
                    ErrorKind::Other,
                    format!("cannot start an event loop: {e}"),
                )),
            });
            return;
        }
    };
    let local = tokio::task::LocalSet::new();
    let report = local.block_on(&rt, worker(driver, check, plan, tx.clone(), start, cancel));
    drop(local);
    drop(rt);
    if let Some(report) = report {
        let _ = tx.send(Msg::Done(report));
    }
}

/// Shared state of one thread's callers.
struct Ctx<D: Driver> {
    driver: Arc<D>,
    check: Check,
    check_state: CheckState,
    plan: ThreadPlan,
    pacer: RefCell<Pacer>,
    recorder: RefCell<Recorder>,
    counters: Rc<ByteCounters>,
    start: Instant,
    tx: mpsc::UnboundedSender<Msg>,
    /// Callers in a call right now.
    busy: Cell<usize>,
}

impl<D: Driver> Ctx<D> {
    fn elapsed_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn send_seconds(&self, reports: Vec<SecondReport>) {
        for r in reports {
            let _ = self.tx.send(Msg::Second(r));
        }
    }
}

/// One connection slot: HTTP/2 keeps the connection here and hands out
/// shared handles; HTTP/1.1 hands the connection itself to its one caller.
struct ConnCell<D: Driver> {
    current: RefCell<Option<D::Conn>>,
    connecting: tokio::sync::Mutex<()>,
}

impl<D: Driver> ConnCell<D> {
    fn new() -> ConnCell<D> {
        ConnCell {
            current: RefCell::new(None),
            connecting: tokio::sync::Mutex::new(()),
        }
    }

    fn try_share(&self, driver: &D) -> Option<D::Conn> {
        let mut cur = self.current.borrow_mut();
        match cur.as_ref() {
            Some(c) if driver.is_usable(c) => driver.share(c),
            Some(_) => {
                *cur = None;
                None
            }
            None => None,
        }
    }

    /// A usable connection handle, opening a connection if there is none.
    async fn acquire(&self, ctx: &Ctx<D>) -> Result<D::Conn, CallError> {
        if let Some(c) = self.try_share(&ctx.driver) {
            return Ok(c);
        }
        let _guard = self.connecting.lock().await;
        if let Some(c) = self.try_share(&ctx.driver) {
            return Ok(c);
        }
        let conn = open_counted(ctx).await?;
        match ctx.driver.share(&conn) {
            Some(handle) => {
                *self.current.borrow_mut() = Some(conn);
                Ok(handle)
            }
            None => Ok(conn),
        }
    }
}

/// Opens one connection within the connect timeout, not recorded.
async fn open<D: Driver>(ctx: &Ctx<D>) -> Result<D::Conn, CallError> {
    match tokio::time::timeout(ctx.plan.connect_timeout, ctx.driver.connect(&ctx.counters)).await {
        Ok(r) => r,
        Err(_) => Err(CallError::new(
            ErrorKind::Connect,
            format!(
                "connecting timed out after {}",
                protobench_model::format::fmt_duration(ctx.plan.connect_timeout)
            ),
        )),
    }
}

/// Opens one connection and records its connect time; those begun in the
/// measured window count towards `connects_per_second`.
async fn open_counted<D: Driver>(ctx: &Ctx<D>) -> Result<D::Conn, CallError> {
    let begun_ns = ctx.elapsed_ns();
    let t0 = Instant::now();
    let conn = open(ctx).await?;
    let mut rec = ctx.recorder.borrow_mut();
    rec.connect.saturating_record(t0.elapsed().as_nanos() as u64);
    rec.connections_opened += 1;
    if begun_ns >= ctx.plan.warmup_ns {
        rec.connects_measured += 1;
    }
    Ok(conn)
}

/// Per call: one connection opened and closed before the start, to fail
/// fast when the target does not answer (not counted as opened).
async fn probe<D: Driver>(ctx: &Ctx<D>) -> (usize, Option<CallError>) {
    match open(ctx).await {
        Ok(conn) => {
            drop(conn);
            (1, None)
        }
        Err(e) => (0, Some(e)),
    }
}

/// Opens the initial connections, all at once (per call: none, but one
/// probe). With a concurrency schedule, only those of the callers there from
/// the start (at least one, to know the target answers): later callers
/// connect as they join. Returns how many opened, the first error, and each
/// cell's handle; `None` when cancelled (Ctrl-C while connecting gives up
/// now, not at the connect timeout).
async fn connect_initial<D: Driver>(
    ctx: &Rc<Ctx<D>>,
    cells: &[Rc<ConnCell<D>>],
    cancel: &CancellationToken,
) -> Option<(usize, Option<CallError>, Vec<Option<D::Conn>>)> {
    let initial = if ctx.plan.per_call {
        0
    } else if ctx.plan.joins.is_empty() {
        cells.len()
    } else {
        let at_start = ctx.plan.joins.iter().take_while(|&&j| j == 0).count();
        at_start.clamp(1, cells.len().max(1))
    };
    let opening = futures_join_all(cells.iter().take(initial).map(|cell| {
        let cell = cell.clone();
        let ctx = ctx.clone();
        async move { cell.acquire(&ctx).await }
    }));
    let opened = tokio::select! {
        opened = opening => opened,
        () = cancel.cancelled() => return None,
    };
    let mut first_error = None;
    let mut connected = 0;
    let mut handles: Vec<Option<D::Conn>> = Vec::new();
    for r in opened {
        match r {
            Ok(c) => {
                connected += 1;
                handles.push(Some(c));
            }
            Err(e) => {
                first_error.get_or_insert(e);
                handles.push(None);
            }
        }
    }
    // The initial connections were opened before the start, not while measuring.
    ctx.recorder.borrow_mut().connects_measured = 0;
    if ctx.plan.per_call {
        (connected, first_error) = tokio::select! {
            r = probe(ctx) => r,
            () = cancel.cancelled() => return None,
        };
    }
    Some((connected, first_error, handles))
}

/// The per-thread engine loop, one async task on a current-thread runtime:
/// connect, wait for the common start, run the callers, report each second,
/// stop. Its phases read in order here; its shared state is in `Ctx`.
async fn worker<D: Driver>(
    driver: Arc<D>,
    check: Check,
    plan: ThreadPlan,
    tx: mpsc::UnboundedSender<Msg>,
    mut start: StartSignal,
    cancel: CancellationToken,
) -> Option<Box<ThreadReport>> {
    let counters = Rc::new(ByteCounters::default());
    let recorder = Recorder::new(plan.warmup_ns);
    let pacer = Pacer::new(plan.schedule, plan.stop, plan.warmup_ns);
    let ctx = Rc::new(Ctx {
        driver,
        check,
        check_state: CheckState::default(),
        pacer: RefCell::new(pacer),
        recorder: RefCell::new(recorder),
        counters,
        start: Instant::now(),
        tx: tx.clone(),
        busy: Cell::new(0),
        plan,
    });
    let cells: Vec<Rc<ConnCell<D>>> = (0..ctx.plan.connections).map(|_| Rc::new(ConnCell::new())).collect();
    let (connected, first_error, mut handles) = connect_initial(&ctx, &cells, &cancel).await?;
    let _ = tx.send(Msg::Ready { connected, first_error });
    // Wait for the common start (or an abort).
    let start_at = loop {
        if let Some(decision) = *start.borrow_and_update() {
            break decision;
        }
        if start.changed().await.is_err() {
            break None;
        }
    };
    let start_at = start_at?;
    // Rebuild the context with the common start instant.
    let ctx = {
        let Ok(inner) = Rc::try_unwrap(ctx) else {
            unreachable!("no other holder")
        };
        Rc::new(Ctx {
            start: start_at,
            ..inner
        })
    };
    PreciseTimer::new().sleep_until(start_at).await;
    // The measured window starts when the warm-up ends: CPU and wall time
    // are taken there (on this thread: its CPU clock is per thread).
    let window_start: Rc<Cell<Option<(u64, Instant)>>> = Rc::new(Cell::new(None));
    let measure_start = start_at + Duration::from_nanos(ctx.plan.warmup_ns);
    let window_marker = {
        let window_start = window_start.clone();
        tokio::task::spawn_local(async move {
            // (tokio's timer: a millisecond late is of no matter here)
            tokio::time::sleep_until(measure_start.into()).await;
            window_start.set(Some((thread_cpu_ns(), Instant::now())));
        })
    };
    tokio::task::yield_now().await;
    // HTTP/1.1: each caller owns the connection it was given; HTTP/2: the
    // initial handle goes back, callers share the cell's connection.
    let mut callers = Vec::with_capacity(ctx.plan.callers);
    for i in 0..ctx.plan.callers {
        let cell = cells[i % cells.len().max(1)].clone();
        let own = if i < handles.len() { handles[i].take() } else { None };
        let join_ns = ctx.plan.joins.get(i).copied().unwrap_or(0);
        callers.push(tokio::task::spawn_local(caller(ctx.clone(), cell, own, join_ns)));
    }
    let ticker = tokio::task::spawn_local(ticker(ctx.clone()));
    // A cancelled run stops its callers here, at their next await: a call in
    // flight is dropped unrecorded, what was recorded stays. (The callers
    // do not watch the cancellation themselves: polling it beside every
    // call cost about 5% of the engine's instructions per call on HTTP/1.1.)
    let aborts: Vec<_> = callers.iter().map(|c| c.abort_handle()).collect();
    let all_ended = async move {
        for c in callers {
            let _ = c.await;
        }
    };
    tokio::pin!(all_ended);
    tokio::select! {
        () = &mut all_ended => {}
        () = cancel.cancelled() => {
            for a in &aborts {
                a.abort();
            }
            all_ended.await;
        }
    }
    ticker.abort();
    let _ = ticker.await;
    window_marker.abort();
    let _ = window_marker.await;
    let (cpu_ns, window_ns) = match window_start.get() {
        Some((cpu0, t0)) => (thread_cpu_ns().saturating_sub(cpu0), t0.elapsed().as_nanos() as u64),
        None => (0, 0),
    };
    let mut rec = ctx.recorder.borrow_mut();
    let until = ctx.elapsed_ns().max(rec.last_completion_ns);
    let closed = rec.roll_to(until);
    ctx.send_seconds(closed);
    let last = rec.finish_seconds();
    let _ = ctx.tx.send(Msg::Second(last));
    let (s0, r0) = rec
        .bytes_at_measure_start
        .unwrap_or((ctx.counters.sent.get(), ctx.counters.received.get()));
    let recorder = std::mem::replace(&mut *rec, Recorder::new(0));
    Some(Box::new(ThreadReport {
        recorder,
        bytes_sent: ctx.counters.sent.get() - s0,
        bytes_received: ctx.counters.received.get() - r0,
        cpu_ns,
        window_ns,
    }))
}

/// Polls futures concurrently and returns their outputs in order.
async fn futures_join_all<F: std::future::Future>(futs: impl Iterator<Item = F>) -> Vec<F::Output> {
    let handles: Vec<_> = futs.map(|f| Box::pin(f)).collect();
    let mut out: Vec<Option<F::Output>> = (0..handles.len()).map(|_| None).collect();
    let mut handles: Vec<Option<_>> = handles.into_iter().map(Some).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, h) in handles.iter_mut().enumerate() {
            if let Some(f) = h {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        out[i] = Some(v);
                        *h = None;
                    }
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().map(|o| o.expect("every future completed")).collect()
}

/// Closes seconds on time even when no call completes (a stalled server).
async fn ticker<D: Driver>(ctx: Rc<Ctx<D>>) {
    let first = ctx.start + Duration::from_nanos(ctx.plan.warmup_ns) + Duration::from_secs(1);
    let mut interval = tokio::time::interval_at(first.into(), Duration::from_secs(1));
    loop {
        interval.tick().await;
        let now = ctx.elapsed_ns();
        let closed = ctx.recorder.borrow_mut().roll_to(now);
        ctx.send_seconds(closed);
    }
}

async fn caller<D: Driver>(ctx: Rc<Ctx<D>>, cell: Rc<ConnCell<D>>, mut conn: Option<D::Conn>, join_ns: u64) {
    let open_loop = ctx.plan.open_loop;
    // Created on the first wait: closed-loop callers never wait for a slot.
    let mut timer: Option<PreciseTimer> = None;
    // Open loop: wake a little early and spin to the intended start.
    let spin = crate::timer::spin_for(ctx.pacer.borrow().mean_interval_ns());
    // And wait for each reply awake, for up to twice as long (a tenth of
    // the interval, at most 200 us), when that is long enough to catch a
    // reply (a loopback call takes about 100 us here): at 2,000 calls/s per
    // thread and above it would not, and would only cost CPU.
    crate::driver::net::set_read_spin(crate::timer::read_spin_for(spin));
    if join_ns > 0 {
        // A concurrency schedule: join at the scheduled time, unless the run
        // is over by then (`u64::MAX`: the schedule never reaches this caller).
        let end_ns = match ctx.plan.stop {
            Stop::Duration(d) => ctx.plan.warmup_ns.saturating_add(d),
            Stop::Requests(_) => u64::MAX,
        };
        if join_ns >= end_ns || join_ns == u64::MAX {
            return;
        }
        let at = ctx.start + Duration::from_nanos(join_ns);
        timer.get_or_insert_with(PreciseTimer::new).sleep_until(at).await;
        // Close the seconds before this one first: this caller counts from now.
        let closed = ctx.recorder.borrow_mut().roll_to(ctx.elapsed_ns());
        ctx.send_seconds(closed);
    }
    ctx.recorder.borrow_mut().users += 1;
    let mut deadline = None;
    loop {
        let now_ns = ctx.elapsed_ns();
        let pace = ctx.pacer.borrow_mut().pace(now_ns);
        let Pace::Go { intended_ns, measured } = pace else {
            return;
        };
        // Without a wait the call starts now: the clock was read just before
        // the pacer's few instructions (one clock read per call fewer).
        let started_ns = if intended_ns > now_ns {
            let at = ctx.start + Duration::from_nanos(intended_ns);
            timer
                .get_or_insert_with(PreciseTimer::new)
                .sleep_then_spin(at, spin)
                .await;
            ctx.elapsed_ns()
        } else {
            if open_loop && measured && ctx.busy.get() + 1 >= ctx.plan.callers && intended_ns + 1_000_000 < now_ns {
                // Every caller was busy when this call was due.
                ctx.recorder.borrow_mut().starved += 1;
            }
            now_ns
        };
        if measured {
            let mut rec = ctx.recorder.borrow_mut();
            if rec.bytes_at_measure_start.is_none() {
                rec.bytes_at_measure_start = Some((ctx.counters.sent.get(), ctx.counters.received.get()));
            }
            rec.started += 1;
            if open_loop {
                rec.lag.saturating_record(started_ns.saturating_sub(intended_ns));
            }
        }
        ctx.busy.set(ctx.busy.get() + 1);
        let mut connect_ns = 0;
        let mut status = None;
        let started = ctx.start + Duration::from_nanos(started_ns);
        let outcome = one_call(
            &ctx,
            &cell,
            &mut conn,
            started,
            &mut deadline,
            &mut connect_ns,
            &mut status,
        )
        .await;
        ctx.busy.set(ctx.busy.get() - 1);
        let ended_ns = ctx.elapsed_ns();
        let connect_failed = matches!(&outcome, Err(e) if e.kind == ErrorKind::Connect);
        {
            let mut rec = ctx.recorder.borrow_mut();
            if measured {
                let closed = rec.roll_to(ended_ns);
                ctx.send_seconds(closed);
                if let Some(status) = status {
                    rec.status(status);
                }
                match &outcome {
                    Ok(()) => {
                        rec.success(intended_ns, started_ns, ended_ns);
                        rec.connect_in_call(connect_ns, ended_ns.saturating_sub(intended_ns));
                    }
                    Err(e) => rec.failure(e.kind, &e.message, intended_ns, ended_ns),
                }
            }
        }
        if connect_failed && !open_loop {
            // Closed loop against a refusing server: do not spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// A caller's call timer, kept for all its calls (`None` until the first).
///
/// A timer made afresh for every call cost about a tenth of the engine's
/// instructions per call on HTTP/1.1 (callgrind: the timer wheel's insert
/// and removal, a clock read). This one is moved only when the next call's
/// limit would pass it, to that limit plus a sixteenth of the timeout. So a
/// call without an answer is abandoned after the timeout and at most a
/// sixteenth more (10 s to 10.625 s at the default), never before; its
/// latency is recorded as measured.
type CallDeadline = Option<std::pin::Pin<Box<tokio::time::Sleep>>>;

/// The call timer, set to fire no earlier than `timeout` after `from`.
fn arm(deadline: &mut CallDeadline, from: Instant, timeout: Duration) -> std::pin::Pin<&mut tokio::time::Sleep> {
    let due = tokio::time::Instant::from_std(from) + timeout;
    let late = due + timeout / 16;
    let sleep = deadline.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(late)));
    if sleep.deadline() < due {
        sleep.as_mut().reset(late);
    }
    sleep.as_mut()
}

/// One call started at `started`, with its time limit (from the end of its
/// connect, if it makes one). `connect_ns` gets the time the call spent
/// getting a connection (0 when it had one), and `status` the response's
/// status when there was one. Per call, the connection is opened here and
/// closed (dropped) when the call ends.
async fn one_call<D: Driver>(
    ctx: &Ctx<D>,
    cell: &ConnCell<D>,
    conn: &mut Option<D::Conn>,
    started: Instant,
    deadline: &mut CallDeadline,
    connect_ns: &mut u64,
    status: &mut Option<CallStatus>,
) -> Result<(), CallError> {
    if ctx.plan.per_call || conn.as_ref().is_some_and(|c| !ctx.driver.is_usable(c)) {
        *conn = None;
    }
    if conn.is_none() && !ctx.plan.per_call {
        // A handle on an open shared connection: not a connect.
        *conn = cell.try_share(&ctx.driver);
    }
    let outcome = async {
        let mut limit_from = started;
        if conn.is_none() {
            let t0 = Instant::now();
            // Boxed: a connect's future (TLS handshake included) is large, and
            // inline it would size this future, which is built and moved
            // for every call, though most calls never connect.
            *conn = Some(if ctx.plan.per_call {
                Box::pin(open_counted(ctx)).await
            } else {
                Box::pin(cell.acquire(ctx)).await
            }?);
            limit_from = Instant::now();
            *connect_ns = (limit_from - t0).as_nanos() as u64;
        }
        let mut deadline = arm(deadline, limit_from, ctx.plan.timeout);
        let c = conn.as_mut().expect("just set");
        let keep = ctx.check.keep(&ctx.check_state);
        let call = tokio::select! {
            biased;
            r = ctx.driver.call(c, keep) => Ok(r),
            () = &mut deadline => Err(()),
        };
        let resp = match call {
            Ok(r) => r?,
            Err(()) => {
                // The connection's state is unknown (HTTP/1.1) or the stream is
                // dropped (HTTP/2: reset with CANCEL): never reuse an HTTP/1.1 one.
                if ctx.driver.share(c).is_none() {
                    *conn = None;
                }
                return Err(CallError::new(
                    ErrorKind::Timeout,
                    format!(
                        "no response within {}",
                        protobench_model::format::fmt_duration(ctx.plan.timeout)
                    ),
                ));
            }
        };
        *status = Some(CallStatus {
            http: resp.status,
            grpc: resp.grpc.as_ref().map(|g| g.code),
        });
        ctx.check.judge(&resp, &ctx.check_state)
    }
    .await;
    if ctx.plan.per_call {
        *conn = None;
    }
    outcome
}

/// Merges per-second reports from all threads into timeline points.
/// One second being gathered: threads reported, successes, errors, latency, users.
type PendingSecond = (usize, u64, u64, Option<Histogram<u64>>, u32);

#[derive(Default)]
pub(crate) struct Timeline {
    pending: std::collections::BTreeMap<u32, PendingSecond>,
    pub(crate) points: Vec<protobench_model::load::TimelinePoint>,
    /// Each closed second's merged latency histogram (for `.hlog` exports).
    histograms: Vec<(u32, Histogram<u64>)>,
}

impl Timeline {
    /// Adds one thread's second; returns the point when all `threads` reported it.
    pub(crate) fn add(&mut self, r: SecondReport, threads: usize) -> Option<protobench_model::load::TimelinePoint> {
        let e = self.pending.entry(r.second).or_insert((0, 0, 0, None, 0));
        e.0 += 1;
        e.1 += r.successes;
        e.2 += r.errors;
        e.4 += r.users;
        if let Some(h) = r.latency {
            match &mut e.3 {
                Some(acc) => {
                    let _ = acc.add(&h);
                }
                None => e.3 = Some(h),
            }
        }
        if e.0 >= threads {
            let second = r.second;
            let e = self.pending.remove(&second).expect("present");
            if let Some(h) = &e.3 {
                self.histograms.push((second, h.clone()));
            }
            let p = point(second, e);
            self.points.push(p);
            return Some(p);
        }
        None
    }

    /// The histogram of a second that closed ([`Timeline::add`] returned
    /// its point), encoded; empty when it had no successes.
    pub(crate) fn last_histogram(&self, second: u32) -> protobench_model::hdr::EncodedHistogram {
        self.histograms
            .iter()
            .rev()
            .find(|(s, _)| *s == second)
            .map(|(_, h)| protobench_model::hdr::EncodedHistogram::encode(h))
            .unwrap_or_default()
    }

    /// Closes what is left, in order.
    pub(crate) fn finish(mut self) -> Vec<protobench_model::load::TimelinePoint> {
        let rest = std::mem::take(&mut self.pending);
        for (second, e) in rest {
            self.points.push(point(second, e));
        }
        self.points.sort_by_key(|p| p.second);
        self.points
    }

    /// Closes what is left, in order, with each second's histogram.
    pub(crate) fn finish_with_histograms(
        mut self,
    ) -> (Vec<protobench_model::load::TimelinePoint>, Vec<(u32, Histogram<u64>)>) {
        for (second, e) in &self.pending {
            if let Some(h) = &e.3 {
                self.histograms.push((*second, h.clone()));
            }
        }
        let mut histograms = std::mem::take(&mut self.histograms);
        histograms.sort_by_key(|(s, _)| *s);
        (self.finish(), histograms)
    }
}

fn point(second: u32, e: PendingSecond) -> protobench_model::load::TimelinePoint {
    let (p50, p95, p99) =
        e.3.map(|h| {
            (
                h.value_at_quantile(0.5),
                h.value_at_quantile(0.95),
                h.value_at_quantile(0.99),
            )
        })
        .unwrap_or((0, 0, 0));
    protobench_model::load::TimelinePoint {
        second,
        successes: e.1,
        errors: e.2,
        p50_ns: p50,
        p95_ns: p95,
        p99_ns: p99,
        users: e.4,
    }
}

/// The seed of thread `thread`'s Poisson draw in arrival stream `stream`.
///
/// Stream 0 (one process) keeps the seeds it always had, `0x9e37 + thread`.
/// Stream `s` puts its threads `s * 2^32` further on, so no two (stream,
/// thread) pairs share a seed while threads stay below 2^32. The draw is
/// splitmix64 over a state that advances by a fixed odd gamma, so two seeds
/// give shifted copies of one sequence only if they differ by a multiple of
/// that gamma within the draws made; `poisson_streams_do_not_overlap` checks
/// that none of these seeds lies within 2^40 draws of another.
pub(crate) fn poisson_seed(stream: u32, thread: u64) -> u64 {
    (0x9e37 + thread).wrapping_add(u64::from(stream) << 32)
}

/// The thread share of a plan.
pub(crate) fn thread_plans(plan: &LoadPlan, threads: usize) -> Vec<ThreadPlan> {
    let t = threads as u64;
    (0..t)
        .map(|i| {
            let schedule = match plan.rate {
                None => Schedule::Closed,
                Some(rate) => {
                    let thread_rate = rate / t as f64;
                    match plan.arrival {
                        protobench_model::load::Arrival::Uniform => Schedule::Uniform {
                            interval_ns: 1e9 / thread_rate,
                            phase_ns: i as f64 * 1e9 / rate,
                        },
                        protobench_model::load::Arrival::Poisson => Schedule::Poisson {
                            mean_interval_ns: 1e9 / thread_rate,
                            seed: poisson_seed(plan.arrival_stream, i),
                        },
                    }
                }
            };
            let stop = match plan.requests {
                Some(n) => Stop::Requests(share(n, t, i)),
                None => Stop::Duration(plan.window_ns()),
            };
            let callers = share(u64::from(plan.concurrency), t, i) as usize;
            // Thread i runs the global callers i, i + t, i + 2t, ... (the
            // same count `share` gives it), so joins spread over threads.
            let joins = if plan.stages.is_empty() {
                Vec::new()
            } else {
                (0..callers as u64)
                    .map(|j| {
                        let k = (j * t + i) as u32;
                        crate::stages::join_at_ns(plan.start_users, &plan.stages, k)
                            .map_or(u64::MAX, |at| at.saturating_add(plan.warmup_ns))
                    })
                    .collect()
            };
            ThreadPlan {
                index: i as usize,
                connections: share(u64::from(plan.connections), t, i) as usize,
                callers,
                joins,
                schedule,
                stop,
                warmup_ns: plan.warmup_ns,
                timeout: Duration::from_nanos(plan.timeout_ns),
                connect_timeout: Duration::from_nanos(plan.connect_timeout_ns),
                open_loop: plan.rate.is_some(),
                per_call: plan.per_call,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_differ_by_at_most_one() {
        for (total, parts) in [(10, 3), (1, 4), (1000, 2), (7, 7)] {
            let s: Vec<u64> = (0..parts).map(|i| share(total, parts, i)).collect();
            assert_eq!(s.iter().sum::<u64>(), total);
            assert!(s.iter().max().unwrap() - s.iter().min().unwrap() <= 1);
        }
    }

    #[test]
    fn a_single_process_keeps_its_poisson_seeds() {
        let mut plan = crate::plan_defaults(protobench_model::load::Protocol::Rest, "127.0.0.1:1");
        plan.rate = Some(1000.0);
        plan.arrival = protobench_model::load::Arrival::Poisson;
        plan.connections = 4;
        let seeds_of = |plan: &LoadPlan| -> Vec<u64> {
            thread_plans(plan, 4)
                .iter()
                .map(|tp| match tp.schedule {
                    Schedule::Poisson { seed, .. } => seed,
                    other => panic!("{other:?}"),
                })
                .collect()
        };
        let seeds = seeds_of(&plan);
        // The seeds of every run before agents had streams: schedules of
        // single-process runs are unchanged.
        assert_eq!(seeds, [0x9e37, 0x9e38, 0x9e39, 0x9e3a]);
        plan.arrival_stream = 2;
        let agent = seeds_of(&plan);
        assert!(agent.iter().all(|s| !seeds.contains(s)), "{agent:x?}");
    }

    #[test]
    fn poisson_streams_do_not_overlap() {
        // The draw's state advances by GAMMA per number; a seed b lies on
        // seed a's sequence m draws on when b - a = m * GAMMA (mod 2^64),
        // so m = (b - a) * GAMMA^-1. Check no (stream, thread) seed is within
        // 2^40 draws of another, either way, for 512 streams x 64 threads.
        const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut inv: u64 = GAMMA; // Newton's iteration for the inverse mod 2^64
        for _ in 0..6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(GAMMA.wrapping_mul(inv)));
        }
        assert_eq!(GAMMA.wrapping_mul(inv), 1);
        let mut deltas = std::collections::HashSet::new();
        for ds in 0..512u32 {
            for dt in 0..64u64 {
                for (a, b) in [((0, 0), (ds, dt)), ((0, dt), (ds, 0))] {
                    let d = poisson_seed(b.0, b.1).wrapping_sub(poisson_seed(a.0, a.1));
                    if d != 0 {
                        deltas.insert(d);
                    }
                }
            }
        }
        for d in deltas {
            let m = d.wrapping_mul(inv);
            assert!(
                m.min(m.wrapping_neg()) >= 1 << 40,
                "seeds {d:#x} apart overlap after {m} draws"
            );
        }
    }
}
