//! The `discover` and `ramp` searches as pure steppers: given what was
//! measured so far, say which concurrency to measure next, or stop and say
//! which step was best and why.
//!
//! No time, no engine, no server: the orchestrator loops "ask the stepper,
//! measure once" and the rules are table-tested here (as ghz keeps its
//! concurrency schedules as small types of their own).

use protobench_model::load::TimelinePoint;
use protobench_model::run::SearchStep;

use crate::plan::{DiscoverSpec, RampSpec};

/// What one search step measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    /// Concurrency of the step.
    pub concurrency: u32,
    /// Successful calls per second.
    pub rate: f64,
    /// Calls completed (successes and failures).
    pub calls: u64,
    /// Failed calls.
    pub errors: u64,
    /// 99th percentile latency.
    pub p99_ns: u64,
}

impl Observation {
    /// Failed calls as a fraction of all calls (0 when there were none).
    pub fn error_rate(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.errors as f64 / self.calls as f64
        }
    }
}

/// What a stepper wants next.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Measure one step at this concurrency.
    Measure(u32),
    /// The search is over.
    Stop(Stop),
}

/// The end of a search.
#[derive(Debug, Clone, PartialEq)]
pub struct Stop {
    /// The index (in observation order) of the best step.
    pub best: usize,
    /// The concurrency of the best step.
    pub concurrency: u32,
    /// Why the search stopped, one line.
    pub reason: String,
}

/// A search over concurrency levels.
pub trait Stepper {
    /// The first concurrency to measure.
    fn first(&self) -> u32;
    /// Records one measured step and says what to do next.
    fn observe(&mut self, obs: Observation) -> Next;
    /// Every step observed so far, in order.
    fn steps(&self) -> &[SearchStep];
}

fn step(obs: &Observation) -> SearchStep {
    SearchStep {
        concurrency: obs.concurrency,
        rate: obs.rate,
        errors: obs.errors,
        p99_ns: obs.p99_ns,
    }
}

/// Discovery of the best concurrency (Berg & Mebrahtu Redi 2023): start at
/// `start`, multiply by `factor` while the rate improves by more than
/// `min_gain` over the best so far, never above `max`.
#[derive(Debug, Clone)]
pub struct Discover {
    spec: DiscoverSpec,
    steps: Vec<SearchStep>,
    best: Option<(usize, f64)>,
}

impl Discover {
    /// A discovery with these settings.
    pub fn new(spec: DiscoverSpec) -> Discover {
        Discover {
            spec,
            steps: Vec::new(),
            best: None,
        }
    }
}

impl Stepper for Discover {
    fn first(&self) -> u32 {
        self.spec.start
    }

    fn observe(&mut self, obs: Observation) -> Next {
        let index = self.steps.len();
        self.steps.push(step(&obs));
        let c = obs.concurrency;
        if let Some((best, rate)) = self.best
            && obs.rate <= rate * (1.0 + self.spec.min_gain)
        {
            let best = if obs.rate > rate { index } else { best };
            return Next::Stop(Stop {
                best,
                concurrency: self.steps[best].concurrency,
                reason: format!(
                    "rate at concurrency {c} ({:.0}/s) improved by {:.1}% or less over the best ({rate:.0}/s): stopped",
                    obs.rate,
                    self.spec.min_gain * 100.0
                ),
            });
        }
        self.best = Some((index, obs.rate));
        let next = c.saturating_mul(self.spec.factor);
        if next > self.spec.max {
            return Next::Stop(Stop {
                best: index,
                concurrency: c,
                reason: format!("reached discover.max ({})", self.spec.max),
            });
        }
        Next::Measure(next)
    }

    fn steps(&self) -> &[SearchStep] {
        &self.steps
    }
}

/// A stepwise ramp to saturation (Hedelin 2024): add `step` callers at a
/// time; the knee is the best step before the rate stopped rising by more
/// than `min_gain` for `patience` steps, or before errors exceeded
/// `max_error_rate`.
#[derive(Debug, Clone)]
pub struct Ramp {
    spec: RampSpec,
    steps: Vec<SearchStep>,
    best: Option<(usize, f64)>,
    flat: u32,
}

impl Ramp {
    /// A ramp with these settings.
    pub fn new(spec: RampSpec) -> Ramp {
        Ramp {
            spec,
            steps: Vec::new(),
            best: None,
            flat: 0,
        }
    }

    fn stop(&self, reason: String) -> Next {
        let best = self.best.map_or(self.steps.len() - 1, |(i, _)| i);
        Next::Stop(Stop {
            best,
            concurrency: self.steps[best].concurrency,
            reason,
        })
    }
}

impl Stepper for Ramp {
    fn first(&self) -> u32 {
        self.spec.start
    }

    fn observe(&mut self, obs: Observation) -> Next {
        let index = self.steps.len();
        self.steps.push(step(&obs));
        let c = obs.concurrency;
        let error_rate = obs.error_rate();
        if error_rate > self.spec.max_error_rate {
            return self.stop(format!(
                "errors began at concurrency {c} ({:.1}% of calls failed, above ramp.max_error_rate)",
                error_rate * 100.0
            ));
        }
        match self.best {
            Some((_, best)) if obs.rate <= best * (1.0 + self.spec.min_gain) => {
                self.flat += 1;
                if self.flat >= self.spec.patience {
                    return self.stop(format!(
                        "rate stopped rising for {} steps after concurrency {}",
                        self.flat,
                        c - self.spec.step * self.flat
                    ));
                }
            }
            _ => {
                self.best = Some((index, obs.rate));
                self.flat = 0;
            }
        }
        if c + self.spec.step > self.spec.max {
            return self.stop(format!("reached ramp.max ({})", self.spec.max));
        }
        Next::Measure(c + self.spec.step)
    }

    fn steps(&self) -> &[SearchStep] {
        &self.steps
    }
}

/// Where a continuous ramp's knee was found.
#[derive(Debug, Clone, PartialEq)]
pub struct Knee {
    /// The second of the measured window with the best rate before the stop.
    pub second: u32,
    /// Users (callers) active at the end of that second.
    pub users: u32,
    /// Successful calls in that second.
    pub rate: f64,
    /// Why the ramp stopped, one line.
    pub reason: String,
}

/// The knee rule of a continuous ramp, second by second (the stepped
/// ramp's rule with a second as the step): a second "rises" when its rate
/// beats the best so far by more than `min_gain`; after `patience` seconds
/// in a row that do not rise, or at the first second whose failed calls
/// exceed `max_error_rate`, the ramp stops and the knee is the best second
/// before (the failing second itself when it is the first). Feed it whole
/// seconds only: a partial last second would read as a fall.
#[derive(Debug, Clone)]
pub struct KneeRule {
    min_gain: f64,
    patience: u32,
    max_error_rate: f64,
    seen: Vec<TimelinePoint>,
    best: Option<usize>,
    flat: u32,
}

impl KneeRule {
    /// The rule with a ramp's thresholds.
    pub fn new(spec: &RampSpec) -> KneeRule {
        KneeRule {
            min_gain: spec.min_gain,
            patience: spec.patience,
            max_error_rate: spec.max_error_rate,
            seen: Vec::new(),
            best: None,
            flat: 0,
        }
    }

    /// Records one whole second; `Some` when the ramp should stop here.
    pub fn observe(&mut self, p: &TimelinePoint) -> Option<Knee> {
        let index = self.seen.len();
        self.seen.push(*p);
        let calls = p.successes + p.errors;
        let error_rate = if calls == 0 {
            0.0
        } else {
            p.errors as f64 / calls as f64
        };
        if error_rate > self.max_error_rate {
            return Some(self.knee(format!(
                "errors began in second {} at {} users ({:.1}% of calls failed, above ramp.max_error_rate)",
                p.second,
                p.users,
                error_rate * 100.0
            )));
        }
        let rate = p.successes as f64;
        match self.best {
            Some(b) if rate <= self.seen[b].successes as f64 * (1.0 + self.min_gain) => {
                self.flat += 1;
                if self.flat >= self.patience {
                    let best = self.seen[b];
                    return Some(self.knee(format!(
                        "rate stopped rising for {} s after second {} ({} users)",
                        self.flat, best.second, best.users
                    )));
                }
            }
            _ => {
                self.best = Some(index);
                self.flat = 0;
            }
        }
        None
    }

    /// The knee when the ramp ended without a stop (it reached its maximum):
    /// the best second seen, or `None` when no whole second was.
    pub fn at_end(&self, max: u32) -> Option<Knee> {
        (!self.seen.is_empty()).then(|| self.knee(format!("reached ramp.max ({max} users)")))
    }

    fn knee(&self, reason: String) -> Knee {
        let p = self.seen[self.best.unwrap_or(self.seen.len() - 1)];
        Knee {
            second: p.second,
            users: p.users,
            rate: p.successes as f64,
            reason,
        }
    }
}

/// The knee of a whole continuous-ramp timeline: [`KneeRule`] over its
/// whole seconds (those ending by `window_ns`), stopping where it stops, or
/// at the end as "reached ramp.max". `None` without a whole second.
pub fn find_knee(timeline: &[TimelinePoint], window_ns: u64, spec: &RampSpec) -> Option<Knee> {
    let mut rule = KneeRule::new(spec);
    for p in timeline
        .iter()
        .filter(|p| (u64::from(p.second) + 1) * 1_000_000_000 <= window_ns)
    {
        if let Some(knee) = rule.observe(p) {
            return Some(knee);
        }
    }
    rule.at_end(spec.max)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's rate and errors at a concurrency.
    type Rates = Box<dyn Fn(u32) -> (f64, u64)>;

    fn obs(concurrency: u32, rate: f64, errors: u64) -> Observation {
        Observation {
            concurrency,
            rate,
            calls: 1000,
            errors,
            p99_ns: 1_000_000,
        }
    }

    /// Feeds `rate_at(c)` to a stepper until it stops; returns the
    /// concurrencies measured and the stop.
    fn drive(s: &mut dyn Stepper, rate_at: impl Fn(u32) -> (f64, u64)) -> (Vec<u32>, Stop) {
        let mut c = s.first();
        let mut seen = vec![];
        for _ in 0..1000 {
            seen.push(c);
            let (rate, errors) = rate_at(c);
            match s.observe(obs(c, rate, errors)) {
                Next::Measure(n) => c = n,
                Next::Stop(stop) => return (seen, stop),
            }
        }
        panic!("the search never stopped: {seen:?}");
    }

    fn discover(max: u32) -> Discover {
        Discover::new(DiscoverSpec {
            start: 2,
            factor: 2,
            min_gain: 0.02,
            max,
            step_ns: 1,
        })
    }

    #[test]
    fn discover_table() {
        // (what the server does, max, concurrencies measured, chosen, reason starts with)
        type Row = (&'static str, Rates, u32, Vec<u32>, u32, &'static str);
        let rows: Vec<Row> = vec![
            (
                "peaks at 64: 128 is no better, so 64 is chosen",
                Box::new(|c| (f64::from(c.min(64)) * 100.0, 0)),
                1024,
                vec![2, 4, 8, 16, 32, 64, 128],
                64,
                "rate at concurrency 128",
            ),
            (
                "never stops improving: stops at max",
                Box::new(|c| f64::from(c) * 100.0).then_no_errors(),
                64,
                vec![2, 4, 8, 16, 32, 64],
                64,
                "reached discover.max (64)",
            ),
            (
                "falls after 8: the best before the fall is chosen",
                Box::new(|c| (if c <= 8 { f64::from(c) } else { 1.0 }, 0)),
                1024,
                vec![2, 4, 8, 16],
                8,
                "rate at concurrency 16",
            ),
            (
                "gains of 1% (under min_gain 2%) stop at once, but a small gain is still the best",
                Box::new(|c| (1000.0 + f64::from(c), 0)),
                1024,
                vec![2, 4],
                4,
                "rate at concurrency 4",
            ),
        ];
        for (why, rates, max, want_seen, want_chosen, want_reason) in rows {
            let mut d = discover(max);
            let (seen, stop) = drive(&mut d, rates);
            assert_eq!(seen, want_seen, "{why}");
            assert_eq!(stop.concurrency, want_chosen, "{why}");
            assert_eq!(d.steps()[stop.best].concurrency, want_chosen, "{why}");
            assert!(stop.reason.starts_with(want_reason), "{why}: {}", stop.reason);
            assert_eq!(d.steps().len(), seen.len(), "{why}: every step is recorded");
        }
    }

    trait NoErrors {
        fn then_no_errors(self) -> Box<dyn Fn(u32) -> (f64, u64)>;
    }
    impl<F: Fn(u32) -> f64 + 'static> NoErrors for Box<F> {
        fn then_no_errors(self) -> Box<dyn Fn(u32) -> (f64, u64)> {
            Box::new(move |c| (self(c), 0))
        }
    }

    fn ramp() -> Ramp {
        Ramp::new(RampSpec {
            start: 15,
            step: 15,
            step_ns: 1,
            max: 150,
            min_gain: 0.01,
            patience: 3,
            max_error_rate: 0.01,
            spawn_rate: 0.0,
            stepped: true,
        })
    }

    #[test]
    fn ramp_table() {
        type Row = (&'static str, Rates, Vec<u32>, u32, &'static str);
        let rows: Vec<Row> = vec![
            (
                "plateau from 45: three flat steps, the knee is 45",
                Box::new(|c| (f64::from(c.min(45)) * 10.0, 0)),
                vec![15, 30, 45, 60, 75, 90],
                45,
                "rate stopped rising for 3 steps after concurrency 45",
            ),
            (
                "errors at 60 (5% > 1%): stop, the knee is the best step before",
                Box::new(|c| (f64::from(c) * 10.0, if c >= 60 { 50 } else { 0 })),
                vec![15, 30, 45, 60],
                45,
                "errors began at concurrency 60 (5.0% of calls failed",
            ),
            (
                "errors on the first step: that step is all there is",
                Box::new(|_| (100.0, 500)),
                vec![15],
                15,
                "errors began at concurrency 15",
            ),
            (
                "rises all the way: stops at max",
                Box::new(|c| (f64::from(c) * 10.0, 0)),
                vec![15, 30, 45, 60, 75, 90, 105, 120, 135, 150],
                150,
                "reached ramp.max (150)",
            ),
            (
                "a rise after two flat steps resets patience",
                Box::new(|c| {
                    let r = match c {
                        15 => 100.0,
                        30 | 45 => 100.0,
                        60 => 200.0,
                        _ => 200.0,
                    };
                    (r, 0)
                }),
                vec![15, 30, 45, 60, 75, 90, 105],
                60,
                "rate stopped rising for 3 steps after concurrency 60",
            ),
        ];
        for (why, rates, want_seen, want_knee, want_reason) in rows {
            let mut r = ramp();
            let (seen, stop) = drive(&mut r, rates);
            assert_eq!(seen, want_seen, "{why}");
            assert_eq!(stop.concurrency, want_knee, "{why}");
            assert!(stop.reason.starts_with(want_reason), "{why}: {}", stop.reason);
        }
    }

    /// A synthetic continuous ramp: 15 users/s from 15, one point per
    /// second with `rate_at(users)` successes and errors.
    fn timeline(seconds: u32, rate_at: impl Fn(u32) -> (u64, u64)) -> Vec<TimelinePoint> {
        (0..seconds)
            .map(|s| {
                let users = 15 * (s + 1);
                let (successes, errors) = rate_at(users);
                TimelinePoint {
                    second: s,
                    successes,
                    errors,
                    p50_ns: 1_000_000,
                    p95_ns: 2_000_000,
                    p99_ns: 3_000_000,
                    users,
                }
            })
            .collect()
    }

    #[test]
    fn knee_rule_table() {
        let spec = RampSpec {
            stepped: false,
            spawn_rate: 15.0,
            ..ramp().spec
        };
        type Rates = Box<dyn Fn(u32) -> (u64, u64)>;
        // (what the server does, seconds run, knee second, knee users, knee rate, reason starts with)
        type Row = (&'static str, Rates, u32, u32, u32, u64, &'static str);
        let rows: Vec<Row> = vec![
            (
                "plateau from 45 users (second 2): three flat seconds, the knee is second 2",
                Box::new(|u| (u64::from(u.min(45)) * 10, 0)),
                10,
                2,
                45,
                450,
                "rate stopped rising for 3 s after second 2 (45 users)",
            ),
            (
                "errors from 60 users (5% > 1%): stop, the knee is the best second before",
                Box::new(|u| (u64::from(u) * 10, if u >= 60 { 50 } else { 0 })),
                10,
                2,
                45,
                450,
                "errors began in second 3 at 60 users (7.7% of calls failed",
            ),
            (
                "errors from the first second: that second is all there is",
                Box::new(|_| (100, 500)),
                10,
                0,
                15,
                100,
                "errors began in second 0 at 15 users",
            ),
            (
                "rises all the way: the knee is the last second, at the maximum",
                Box::new(|u| (u64::from(u) * 10, 0)),
                10,
                9,
                150,
                1500,
                "reached ramp.max (150 users)",
            ),
            (
                "noisy plateau: +-0.5% wobble above 1000/s does not count as rising",
                Box::new(|u| {
                    let r = if u < 60 { u64::from(u) * 20 } else { 1200 };
                    let wobble = [0, 6, 0, 5, 0, 6][(u / 15) as usize % 6];
                    (r + wobble, 0)
                }),
                20,
                3,
                60,
                1200,
                "rate stopped rising for 3 s after second 3 (60 users)",
            ),
            (
                "a noise spike above min_gain resets patience; the spike is the knee",
                Box::new(|u| (if u == 75 { 1300 } else { u64::from(u.min(60)) * 20 }, 0)),
                20,
                4,
                75,
                1300,
                "rate stopped rising for 3 s after second 4 (75 users)",
            ),
        ];
        for (why, rates, seconds, second, users, rate, reason) in rows {
            let t = timeline(seconds, rates);
            let knee = find_knee(
                &t,
                u64::from(seconds) * 1_000_000_000,
                &RampSpec {
                    max: 150,
                    ..spec.clone()
                },
            )
            .expect("a knee");
            assert_eq!(
                (knee.second, knee.users, knee.rate),
                (second, users, rate as f64),
                "{why}"
            );
            assert!(knee.reason.starts_with(reason), "{why}: {}", knee.reason);
        }
    }

    #[test]
    fn knee_ignores_a_partial_last_second_and_needs_a_whole_one() {
        let spec = ramp().spec;
        // Rising, then a partial last second (the run ended 0.3 s into it)
        // whose low count must not read as a fall.
        let mut t = timeline(4, |u| (u64::from(u) * 10, 0));
        t[3].successes = 10;
        let knee = find_knee(&t, 3_300_000_000, &spec).unwrap();
        assert_eq!(knee.second, 2, "{knee:?}");
        assert!(find_knee(&t[..1], 900_000_000, &spec).is_none(), "no whole second");
    }
}
