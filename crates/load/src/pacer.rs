//! When the next call starts: pure arithmetic over elapsed time, no runtime.
//!
//! Open and closed loop, stop-by-time and stop-by-count are data of one
//! [`Pacer`], not separate loops (after ghz's `load/pacer.go`). A worker asks
//! [`Pacer::pace`] for its next call; the answer is the call's *intended* start
//! (the worker sleeps until then if it is in the future) or [`Pace::Stop`].
//! Latency is measured from that intended start, so a server stall delays the
//! schedule's later calls without hiding their waiting time (coordinated
//! omission). Each engine thread owns one pacer; an open-loop rate is split
//! evenly over threads (uniform: phase-shifted, Poisson: superposition of
//! independent Poisson processes is a Poisson process with the summed rate).

use protobench_contract::data::Rng;

/// What a pacer schedules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Schedule {
    /// Start the next call as soon as a caller is free.
    Closed,
    /// Start calls evenly spaced: call `i` is intended at `phase_ns + i * interval_ns`.
    Uniform {
        /// Gap between two intended starts.
        interval_ns: f64,
        /// Intended start of the first call.
        phase_ns: f64,
    },
    /// Start calls as a Poisson process: exponential gaps with this mean.
    Poisson {
        /// Mean gap between two intended starts.
        mean_interval_ns: f64,
        /// Seed of the gap draw.
        seed: u64,
    },
}

/// When to stop issuing calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// No call intended at or after `warmup + duration` starts.
    Duration(u64),
    /// After this many measured calls (warm-up calls not counted).
    Requests(u64),
}

/// The answer for the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Start a call intended at `intended_ns` (since the run's start); wait
    /// until then if it is in the future. `measured` is false in the warm-up.
    Go {
        /// Intended start.
        intended_ns: u64,
        /// Whether the call counts in the statistics.
        measured: bool,
    },
    /// Issue no more calls.
    Stop,
}

/// The schedule of one engine thread.
#[derive(Debug, Clone)]
pub struct Pacer {
    schedule: Schedule,
    stop: Stop,
    warmup_ns: u64,
    /// Open loop: intended start of the next call.
    next_ns: f64,
    /// Calls handed out so far.
    hits: u64,
    /// Measured calls handed out so far.
    measured: u64,
    rng: Rng,
}

impl Pacer {
    /// The mean gap between this thread's intended starts; none in a closed loop.
    pub fn mean_interval_ns(&self) -> Option<f64> {
        match self.schedule {
            Schedule::Closed => None,
            Schedule::Uniform { interval_ns, .. } => Some(interval_ns),
            Schedule::Poisson { mean_interval_ns, .. } => Some(mean_interval_ns),
        }
    }

    /// A pacer starting at elapsed time 0.
    pub fn new(schedule: Schedule, stop: Stop, warmup_ns: u64) -> Pacer {
        let (next_ns, seed) = match schedule {
            Schedule::Closed => (0.0, 0),
            Schedule::Uniform { phase_ns, .. } => (phase_ns, 0),
            Schedule::Poisson { seed, .. } => (0.0, seed),
        };
        let mut pacer = Pacer {
            schedule,
            stop,
            warmup_ns,
            next_ns,
            hits: 0,
            measured: 0,
            rng: Rng::new(seed),
        };
        if let Schedule::Poisson { mean_interval_ns, .. } = schedule {
            pacer.next_ns = pacer.exponential(mean_interval_ns);
        }
        pacer
    }

    /// Calls handed out so far.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// The next call, given the time elapsed since the run's start.
    pub fn pace(&mut self, elapsed_ns: u64) -> Pace {
        let intended_ns = match self.schedule {
            Schedule::Closed => elapsed_ns,
            Schedule::Uniform { .. } | Schedule::Poisson { .. } => self.next_ns as u64,
        };
        let measured = intended_ns >= self.warmup_ns;
        let done = match self.stop {
            Stop::Duration(d) => intended_ns >= self.warmup_ns.saturating_add(d),
            Stop::Requests(n) => measured && self.measured >= n,
        };
        if done {
            return Pace::Stop;
        }
        self.hits += 1;
        if measured {
            self.measured += 1;
        }
        match self.schedule {
            Schedule::Closed => {}
            Schedule::Uniform { interval_ns, phase_ns } => self.next_ns = phase_ns + self.hits as f64 * interval_ns,
            Schedule::Poisson { mean_interval_ns, .. } => self.next_ns += self.exponential(mean_interval_ns),
        }
        Pace::Go { intended_ns, measured }
    }

    fn exponential(&mut self, mean: f64) -> f64 {
        // u in (0, 1]: 53 random bits, never 0, so ln(u) is finite.
        let u = ((self.rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
        -u.ln() * mean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const SEC: u64 = 1_000_000_000;

    fn go(intended_ns: u64, measured: bool) -> Pace {
        Pace::Go { intended_ns, measured }
    }

    /// Runs `steps` of (elapsed, expected) against one pacer.
    fn table(mut pacer: Pacer, steps: &[(u64, Pace, &str)]) {
        for (i, (elapsed, want, why)) in steps.iter().enumerate() {
            assert_eq!(pacer.pace(*elapsed), *want, "row {i}: {why}");
        }
    }

    #[test]
    fn closed_loop_starts_now_and_stops_by_time() {
        table(
            Pacer::new(Schedule::Closed, Stop::Duration(SEC), 0),
            &[
                (0, go(0, true), "first call starts at once"),
                (
                    5 * MS,
                    go(5 * MS, true),
                    "the intended start is whenever a caller is free",
                ),
                (SEC - 1, go(SEC - 1, true), "last nanosecond of the window still starts"),
                (SEC, Pace::Stop, "the window is over"),
                (2 * SEC, Pace::Stop, "and stays over"),
            ],
        );
    }

    #[test]
    fn closed_loop_warmup_calls_are_not_measured_and_extend_the_run() {
        table(
            Pacer::new(Schedule::Closed, Stop::Duration(SEC), 2 * SEC),
            &[
                (0, go(0, false), "warm-up call"),
                (2 * SEC - 1, go(2 * SEC - 1, false), "still warm-up"),
                (2 * SEC, go(2 * SEC, true), "measured window opens after the warm-up"),
                (3 * SEC - 1, go(3 * SEC - 1, true), "duration counts after the warm-up"),
                (3 * SEC, Pace::Stop, "warm-up + duration elapsed"),
            ],
        );
    }

    #[test]
    fn closed_loop_stops_by_count_of_measured_calls() {
        table(
            Pacer::new(Schedule::Closed, Stop::Requests(2), SEC),
            &[
                (0, go(0, false), "warm-up calls do not count against requests"),
                (SEC, go(SEC, true), "measured call 1"),
                (SEC + 1, go(SEC + 1, true), "measured call 2"),
                (SEC + 2, Pace::Stop, "2 measured calls made"),
            ],
        );
    }

    #[test]
    fn uniform_open_loop_is_independent_of_when_callers_ask() {
        // 100 calls/s: one every 10 ms.
        table(
            Pacer::new(
                Schedule::Uniform {
                    interval_ns: 10.0 * MS as f64,
                    phase_ns: 0.0,
                },
                Stop::Duration(SEC),
                0,
            ),
            &[
                (0, go(0, true), "first call at 0"),
                (
                    0,
                    go(10 * MS, true),
                    "an idle caller reserves the next slot, 10 ms ahead (it waits)",
                ),
                (
                    500 * MS,
                    go(20 * MS, true),
                    "a late caller gets the missed slot: latency counts from 20 ms",
                ),
                (500 * MS, go(30 * MS, true), "and the next one, not a slot from now"),
            ],
        );
    }

    #[test]
    fn uniform_open_loop_stops_at_the_first_slot_past_the_window() {
        // 4 calls/s for 1 s after a 0.5 s warm-up, phase 125 ms (thread 1 of 2 at 8 calls/s).
        let p = Pacer::new(
            Schedule::Uniform {
                interval_ns: 250.0 * MS as f64,
                phase_ns: 125.0 * MS as f64,
            },
            Stop::Duration(SEC),
            500 * MS,
        );
        table(
            p,
            &[
                (0, go(125 * MS, false), "phase shifts this thread's slots"),
                (0, go(375 * MS, false), "still in the warm-up"),
                (0, go(625 * MS, true), "first measured slot"),
                (0, go(875 * MS, true), "second"),
                (0, go(1125 * MS, true), "third"),
                (0, go(1375 * MS, true), "fourth: 4 calls in the 1 s window"),
                (0, Pace::Stop, "1625 ms is past warm-up + duration"),
            ],
        );
    }

    #[test]
    fn uniform_open_loop_stops_by_count() {
        table(
            Pacer::new(
                Schedule::Uniform {
                    interval_ns: MS as f64,
                    phase_ns: 0.0,
                },
                Stop::Requests(2),
                0,
            ),
            &[
                (0, go(0, true), "call 1"),
                (0, go(MS, true), "call 2"),
                (0, Pace::Stop, "requests reached, whatever the time"),
            ],
        );
    }

    #[test]
    fn uniform_schedule_does_not_drift_over_many_calls() {
        // 3 calls/s has an inexact interval; the n-th start is still n/3 s.
        let mut p = Pacer::new(
            Schedule::Uniform {
                interval_ns: SEC as f64 / 3.0,
                phase_ns: 0.0,
            },
            Stop::Duration(u64::MAX),
            0,
        );
        let mut last = 0;
        for _ in 0..=300_000 {
            if let Pace::Go { intended_ns, .. } = p.pace(0) {
                last = intended_ns;
            }
        }
        assert!(last.abs_diff(100_000 * SEC) <= 1, "{last}");
    }

    #[test]
    fn poisson_open_loop_has_the_requested_mean_rate() {
        let mut p = Pacer::new(
            Schedule::Poisson {
                mean_interval_ns: MS as f64,
                seed: 7,
            },
            Stop::Duration(10 * SEC),
            0,
        );
        let mut n = 0u64;
        let mut prev = 0;
        while let Pace::Go { intended_ns, .. } = p.pace(0) {
            assert!(intended_ns >= prev, "intended starts never go back");
            prev = intended_ns;
            n += 1;
        }
        // 10,000 expected; a Poisson count has sd 100, so 3% is > 3 sd.
        assert!((9_700..=10_300).contains(&n), "{n}");
    }

    #[test]
    fn poisson_is_reproducible_from_its_seed() {
        let draw = |seed| {
            let mut p = Pacer::new(
                Schedule::Poisson {
                    mean_interval_ns: 1000.0,
                    seed,
                },
                Stop::Requests(5),
                0,
            );
            (0..5).map(|_| p.pace(0)).collect::<Vec<_>>()
        };
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
    }
}
