//! The coordinator of one run: starts the engine threads, waits until their
//! connections are open, gives them one common start instant, forwards their
//! per-second reports as [`Event`]s and assembles the [`LoadResult`] from
//! their histograms and counters when they finish.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use protobench_model::hdr::EncodedHistogram;
use protobench_model::load::{EndReason, Environment, Generator, LoadPlan, LoadResult, SCHEMA_VERSION};
use protobench_model::merge::LaneHistograms;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::error::LoadError;
use crate::validate::validate;
use crate::{Event, driver, engine, prepare, record};

/// Runs a plan to its end (or until `cancel`) and returns the result.
///
/// A cancelled run returns the partial result with `end_reason = interrupted`.
/// The run fails only when it cannot start: an invalid plan, an unusable
/// input, or no connection at all to the target.
pub async fn run(
    plan: LoadPlan,
    events: Option<mpsc::UnboundedSender<Event>>,
    cancel: CancellationToken,
) -> Result<LoadResult, LoadError> {
    run_at(plan, events, cancel, None).await.map(|(result, _)| result)
}

/// [`run`] for one agent of a distributed run (docs/distributed.md): the
/// measured window's start (warm-up first) is `start`, an absolute time on
/// this machine's clock, instead of as soon as the connections are open;
/// [`Event::Interval`]s carry each second's histogram; and the result comes
/// with the histograms the coordinator adds besides the latency one.
///
/// A start that has passed once the connections are open is refused
/// ([`LoadError::Late`]): the agent would miss the common start.
pub async fn run_at(
    plan: LoadPlan,
    events: Option<mpsc::UnboundedSender<Event>>,
    cancel: CancellationToken,
    start: Option<SystemTime>,
) -> Result<(LoadResult, LaneHistograms), LoadError> {
    validate(&plan)?;
    let prepared = prepare::prepare(&plan).await?;
    let addr = prepared.addr;
    let start = Start { at: start, events };
    match prepared.driver {
        prepare::AnyDriver::Http1(d) => run_with(Arc::new(d), prepared.check, plan, addr, start, cancel).await,
        prepare::AnyDriver::Http2(d) => run_with(Arc::new(*d), prepared.check, plan, addr, start, cancel).await,
    }
}

/// The common start: now (plus 1 ms for the threads to see it), or the
/// given absolute time, refused when it has passed; with its wall-clock time.
fn common_start(at: Option<SystemTime>) -> Result<(Instant, SystemTime), LoadError> {
    match at {
        None => Ok((
            Instant::now() + Duration::from_millis(1),
            SystemTime::now() + Duration::from_millis(1),
        )),
        Some(at) => match at.duration_since(SystemTime::now()) {
            Ok(ahead) => Ok((Instant::now() + ahead, at)),
            Err(past) => Err(LoadError::Late {
                late_ns: past.duration().as_nanos() as u64,
            }),
        },
    }
}

/// Sends a closed second as `Progress` (with the calls and errors so far)
/// and, for an agent's run (`intervals`), its histogram as `Interval`.
fn forward_second(
    ev: &mpsc::UnboundedSender<Event>,
    timeline: &engine::Timeline,
    p: protobench_model::load::TimelinePoint,
    (calls, errors): (u64, u64),
    intervals: bool,
) {
    let _ = ev.send(Event::Progress {
        elapsed_ns: (u64::from(p.second) + 1) * 1_000_000_000,
        calls,
        errors,
        rate: p.successes as f64,
        p99_ns: p.p99_ns,
        second: p,
    });
    if intervals {
        let _ = ev.send(Event::Interval {
            second: p.second,
            histogram: timeline.last_histogram(p.second),
        });
    }
}

/// When to start and where to send events.
struct Start {
    at: Option<SystemTime>,
    events: Option<mpsc::UnboundedSender<Event>>,
}

// Longer than the project's ~120-line guide on purpose: it is one async
// sequence (spawn the engine threads, gather their Ready reports, give the
// common start, forward per-second reports, join) whose channels and counts
// live across its awaits; cut into pieces, they would be threaded through a
// struct and the order of the phases would no longer read top to bottom.
async fn run_with<D: driver::Driver + Send + Sync>(
    driver: Arc<D>,
    check: crate::check::Check,
    plan: LoadPlan,
    addr: std::net::SocketAddr,
    start: Start,
    cancel: CancellationToken,
) -> Result<(LoadResult, LaneHistograms), LoadError> {
    let Start { at: start_at, events } = start;
    let threads = if plan.threads > 0 {
        plan.threads as usize
    } else {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(plan.connections as usize)
            .max(1)
    };
    let plans = engine::thread_plans(&plan, threads);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (start_tx, start_rx) = watch::channel(None);
    let mut handles = Vec::with_capacity(threads);
    for tp in plans {
        let (driver, check, tx, start_rx, cancel) = (
            driver.clone(),
            check.clone(),
            tx.clone(),
            start_rx.clone(),
            cancel.clone(),
        );
        let h = std::thread::Builder::new()
            .name(format!("protobench-load-{}", tp.index))
            .spawn(move || engine::thread_main(driver, check, tp, tx, start_rx, cancel))
            .map_err(LoadError::Thread)?;
        handles.push(h);
    }
    drop(tx);
    let mut ready = 0;
    let mut connected = 0u64;
    let mut first_error = None;
    while ready < threads {
        // Biased, the cancellation first: a thread that sees the cancel
        // reports ready with no connection, and an unbiased select could
        // take that report before the cancel and call the run unreachable.
        let msg = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                // Ctrl-C while connecting: the threads drop their connection
                // attempts on the same token; do not wait for the timeout.
                let _ = start_tx.send(Some(None));
                for h in handles {
                    let _ = h.join();
                }
                return Err(LoadError::Interrupted { target: addr.to_string() });
            }
            m = rx.recv() => m,
        };
        match msg {
            Some(engine::Msg::Ready {
                connected: c,
                first_error: e,
            }) => {
                ready += 1;
                connected += c as u64;
                if first_error.is_none() {
                    first_error = e;
                }
            }
            Some(_) => {}
            None => break,
        }
    }
    if connected == 0 {
        let _ = start_tx.send(Some(None));
        for h in handles {
            let _ = h.join();
        }
        let cause = first_error.as_ref().and_then(|e| e.cause);
        return Err(LoadError::Connect {
            target: addr.to_string(),
            message: first_error.map_or_else(|| "no connection opened".into(), |e| e.message),
            cause,
        });
    }
    let (t0, wall0) = match common_start(start_at) {
        Ok(start) => start,
        Err(e) => {
            let _ = start_tx.send(Some(None));
            for h in handles {
                let _ = h.join();
            }
            return Err(e);
        }
    };
    let wall0 = wall0 + Duration::from_nanos(plan.warmup_ns);
    let _ = start_tx.send(Some(Some(t0)));
    if let Some(ev) = &events {
        let _ = ev.send(Event::Started {
            at: t0,
            connections: connected,
            threads: threads as u32,
        });
    }
    let mut timeline = engine::Timeline::default();
    let mut reports = Vec::with_capacity(threads);
    let (mut calls, mut errors) = (0u64, 0u64);
    while let Some(msg) = rx.recv().await {
        match msg {
            engine::Msg::Second(r) => {
                if let Some(p) = timeline.add(r, threads) {
                    calls += p.successes + p.errors;
                    errors += p.errors;
                    if let Some(ev) = &events {
                        forward_second(ev, &timeline, p, (calls, errors), start_at.is_some());
                    }
                }
            }
            engine::Msg::Done(r) => reports.push(*r),
            engine::Msg::Ready { .. } => {}
        }
    }
    let ended = Instant::now();
    let interrupted = cancel.is_cancelled();
    for h in handles {
        let _ = h.join();
    }
    Ok(assemble(
        &plan,
        reports,
        timeline,
        threads,
        t0,
        ended,
        interrupted,
        wall0,
    ))
}

// Longer than the ~120-line guide: one pass adds every thread's recorders
// (histograms, counts, bytes, CPU) into the result's fields; the fields are
// many and flat (the JSON schema's), so the length is one line per field.
#[allow(clippy::too_many_arguments, reason = "one call site; the parts of a finished run")]
fn assemble(
    plan: &LoadPlan,
    reports: Vec<engine::ThreadReport>,
    timeline: engine::Timeline,
    threads: usize,
    t0: Instant,
    ended: Instant,
    interrupted: bool,
    wall0: SystemTime,
) -> (LoadResult, LaneHistograms) {
    let mut latency = record::histogram();
    let mut service = record::histogram();
    let mut lag = record::histogram();
    let mut connect = record::histogram();
    let mut errors = record::Errors::default();
    let mut error_latency: Option<hdrhistogram::Histogram<u64>> = None;
    let mut statuses = record::StatusCounts::default();
    let (mut successes, mut failures, mut started, mut starved) = (0, 0, 0, 0);
    let (mut sent, mut received, mut cpu_ns, mut window_ns, mut opened, mut last) = (0, 0, 0, 0, 0, 0);
    let (mut connects, mut connect_in_calls_ns, mut latency_sum_ns) = (0u64, 0u64, 0u64);
    for r in reports {
        let rec = r.recorder;
        let _ = latency.add(&rec.latency);
        let _ = service.add(&rec.service);
        let _ = lag.add(&rec.lag);
        let _ = connect.add(&rec.connect);
        errors.merge(rec.errors);
        statuses.merge(&rec.statuses);
        if let Some(h) = rec.error_latency {
            match &mut error_latency {
                Some(acc) => {
                    let _ = acc.add(&h);
                }
                None => error_latency = Some(h),
            }
        }
        successes += rec.successes;
        failures += rec.failures;
        started += rec.started;
        starved += rec.starved;
        opened += rec.connections_opened;
        connects += rec.connects_measured;
        connect_in_calls_ns += rec.connect_in_calls_ns;
        latency_sum_ns += rec.latency_sum_ns;
        last = last.max(rec.last_completion_ns);
        sent += r.bytes_sent;
        received += r.bytes_received;
        cpu_ns += r.cpu_ns;
        window_ns += r.window_ns;
    }
    let run_ns = ended.saturating_duration_since(t0).as_nanos() as u64;
    let end_reason = if interrupted {
        EndReason::Interrupted
    } else if plan.requests.is_some() {
        EndReason::Requests
    } else {
        EndReason::Duration
    };
    let duration_ns = match end_reason {
        EndReason::Interrupted | EndReason::Knee => run_ns.saturating_sub(plan.warmup_ns),
        EndReason::Requests => last.saturating_sub(plan.warmup_ns),
        EndReason::Duration => plan.window_ns(),
    }
    .max(1);
    let secs = duration_ns as f64 / 1e9;
    let calls = successes + failures;
    let per_call = |b: u64| {
        if calls == 0 { 0.0 } else { b as f64 / calls as f64 }
    };
    // CPU and wall time over the same window, per thread: a thread cannot be
    // busier than its wall time (the clamp only absorbs clock granularity).
    let cpu_utilization = if window_ns == 0 {
        0.0
    } else {
        (cpu_ns as f64 / window_ns as f64).min(1.0)
    };
    let started_rate = started as f64 / secs;
    let (generator_bound, reason) = generator_verdict(&Verdict {
        target_rate: plan.rate,
        started_rate,
        cpu_utilization,
        threads: threads as u32,
        lag_p99_ns: if lag.is_empty() { 0 } else { lag.value_at_quantile(0.99) },
        calls,
        errors: errors.total(),
        starved,
        window_ns: duration_ns,
    });
    let (timeline, intervals) = timeline.finish_with_histograms();
    let (http_statuses, grpc_statuses) = statuses.into_counts();
    let result = LoadResult {
        schema_version: SCHEMA_VERSION,
        plan: plan.clone(),
        // The commit is the binary's, which the engine cannot know: the
        // front-end that does stamps it (`load`, the runner's LoadEngine).
        environment: Environment::detect(env!("CARGO_PKG_VERSION"), None),
        started_at: protobench_model::time::rfc3339_millis(wall0),
        duration_ns,
        end_reason,
        calls,
        successes,
        rate: successes as f64 / secs,
        started_rate,
        latency: record::summary(&latency),
        service_time: record::summary(&service),
        connect: record::summary(&connect),
        connections_opened: opened,
        connects_per_second: connects as f64 / secs,
        connect_share: if latency_sum_ns == 0 {
            0.0
        } else {
            connect_in_calls_ns as f64 / latency_sum_ns as f64
        },
        errors: errors.into_counts(),
        success_percent: if calls == 0 {
            0.0
        } else {
            successes as f64 * 100.0 / calls as f64
        },
        http_statuses,
        grpc_statuses,
        error_latency: error_latency.as_ref().map(record::summary),
        bytes_sent: sent,
        bytes_received: received,
        bytes_sent_per_call: per_call(sent),
        bytes_received_per_call: per_call(received),
        generator: Generator {
            threads: threads as u32,
            cpu_ns,
            cpu_ns_per_call: if calls == 0 { 0.0 } else { cpu_ns as f64 / calls as f64 },
            cpu_utilization,
            schedule_lag: record::summary(&lag),
            generator_bound,
            reason,
        },
        timeline,
        histogram: EncodedHistogram::encode(&latency),
        intervals: intervals.iter().map(interval).collect(),
        agents: Vec::new(),
        incomplete: false,
        agent_intervals: Vec::new(),
    };
    let lane = lane_histograms(&service, &connect, &lag, error_latency.as_ref());
    (result, lane)
}

fn interval((second, h): &(u32, hdrhistogram::Histogram<u64>)) -> protobench_model::load::IntervalHistogram {
    protobench_model::load::IntervalHistogram {
        second: *second,
        histogram: EncodedHistogram::encode(h),
    }
}

/// The histograms besides latency that a coordinator of agents adds.
fn lane_histograms(
    service: &hdrhistogram::Histogram<u64>,
    connect: &hdrhistogram::Histogram<u64>,
    lag: &hdrhistogram::Histogram<u64>,
    error_latency: Option<&hdrhistogram::Histogram<u64>>,
) -> LaneHistograms {
    LaneHistograms {
        service: EncodedHistogram::encode(service),
        connect: EncodedHistogram::encode(connect),
        lag: EncodedHistogram::encode(lag),
        error_latency: error_latency.map(EncodedHistogram::encode),
    }
}

/// Inputs of the generator-bound rule.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Verdict {
    pub(crate) target_rate: Option<f64>,
    pub(crate) started_rate: f64,
    pub(crate) cpu_utilization: f64,
    pub(crate) threads: u32,
    pub(crate) lag_p99_ns: u64,
    pub(crate) calls: u64,
    pub(crate) errors: u64,
    pub(crate) starved: u64,
    /// The measured window.
    pub(crate) window_ns: u64,
}

/// The shortest measured window the generator-bound rule judges.
pub const MIN_JUDGED_WINDOW_NS: u64 = 1_000_000_000;
/// The fewest measured calls the generator-bound rule judges.
pub const MIN_JUDGED_CALLS: u64 = 100;

/// CPU share of its threads above which the engine counts as saturated.
pub const CPU_BOUND_UTILIZATION: f64 = 0.9;
/// Open loop: schedule lag p99 above which the engine counts as late.
pub const LAG_BOUND_NS: u64 = 10_000_000;

/// The generator-bound rule (docs/engine.md):
/// 1. the engine threads were busy ≥ 90% of the run (either loop), or
/// 2. open loop, the server kept up (errors < 1% of calls) and calls were not
///    held back by the concurrency limit (< 1% found every caller busy), yet
///    calls started below 95% of the target rate or the schedule lag p99
///    exceeded 10 ms.
///
/// A window under 1 s or with fewer than 100 calls is not judged
/// (`generator_bound` false, the reason says so): start-up and the last
/// calls' drain dominate it.
pub(crate) fn generator_verdict(v: &Verdict) -> (bool, Option<String>) {
    if v.window_ns < MIN_JUDGED_WINDOW_NS || v.calls < MIN_JUDGED_CALLS {
        return (
            false,
            Some(format!(
                "window too short to judge ({}, {} call{}; needs at least 1 s and 100 calls)",
                protobench_model::format::fmt_ns(v.window_ns as f64),
                v.calls,
                if v.calls == 1 { "" } else { "s" }
            )),
        );
    }
    if v.cpu_utilization >= CPU_BOUND_UTILIZATION {
        return (
            true,
            Some(format!(
                "engine threads were {:.0}% busy ({} thread{})",
                v.cpu_utilization * 100.0,
                v.threads,
                if v.threads == 1 { "" } else { "s" }
            )),
        );
    }
    if let Some(target) = v.target_rate {
        let server_ok = v.calls == 0 || (v.errors as f64) < 0.01 * v.calls as f64;
        let not_starved = (v.starved as f64) < 0.01 * v.calls.max(1) as f64;
        if server_ok && not_starved {
            if v.started_rate < 0.95 * target {
                return (
                    true,
                    Some(format!(
                        "started {:.1} calls/s, below 95% of the target rate {target}",
                        v.started_rate
                    )),
                );
            }
            if v.lag_p99_ns > LAG_BOUND_NS {
                return (
                    true,
                    Some(format!(
                        "schedule lag p99 {:.1} ms exceeds 10 ms",
                        v.lag_p99_ns as f64 / 1e6
                    )),
                );
            }
        }
    }
    (false, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_bound_rule() {
        let base = Verdict {
            target_rate: Some(1000.0),
            started_rate: 1000.0,
            cpu_utilization: 0.2,
            threads: 1,
            lag_p99_ns: 100_000,
            calls: 10_000,
            errors: 0,
            starved: 0,
            window_ns: 10_000_000_000,
        };
        let rows: Vec<(Verdict, bool, &str)> = vec![
            (base, false, "on schedule, idle CPU: the server set the pace"),
            (
                Verdict {
                    cpu_utilization: 0.95,
                    ..base
                },
                true,
                "busy engine threads, any loop",
            ),
            (
                Verdict {
                    target_rate: None,
                    cpu_utilization: 0.95,
                    ..base
                },
                true,
                "closed loop, busy threads",
            ),
            (
                Verdict {
                    started_rate: 900.0,
                    ..base
                },
                true,
                "open loop fell behind its rate with a healthy server",
            ),
            (
                Verdict {
                    lag_p99_ns: 20_000_000,
                    ..base
                },
                true,
                "open loop started calls late",
            ),
            (
                Verdict {
                    started_rate: 900.0,
                    errors: 500,
                    ..base
                },
                false,
                "server erroring: not the generator's fault",
            ),
            (
                Verdict {
                    lag_p99_ns: 20_000_000,
                    starved: 5_000,
                    ..base
                },
                false,
                "every caller was busy: the concurrency limit",
            ),
            (
                Verdict {
                    target_rate: None,
                    started_rate: 1.0,
                    ..base
                },
                false,
                "closed loop has no target rate",
            ),
            (
                Verdict {
                    cpu_utilization: 1.0,
                    window_ns: 1,
                    calls: 0,
                    ..base
                },
                false,
                "--duration 1ns: nothing to judge",
            ),
            (
                Verdict {
                    cpu_utilization: 1.0,
                    calls: 99,
                    ..base
                },
                false,
                "too few calls to judge",
            ),
            (
                Verdict {
                    cpu_utilization: 1.0,
                    window_ns: 999_999_999,
                    ..base
                },
                false,
                "under a second",
            ),
        ];
        for (v, want, why) in rows {
            assert_eq!(generator_verdict(&v).0, want, "{why}");
        }
        let short = Verdict {
            window_ns: 1,
            calls: 0,
            ..base
        };
        assert_eq!(
            generator_verdict(&short).1.unwrap(),
            "window too short to judge (1ns, 0 calls; needs at least 1 s and 100 calls)"
        );
    }
}
