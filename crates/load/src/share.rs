//! Each agent's share of a distributed run (docs/distributed.md): pure
//! arithmetic over the plan, no runtime.
//!
//! Closed loop: callers, connections and a request count are split so the
//! shares add up to the plan's (they differ by at most one). A concurrency
//! schedule (`stages`) is split stage by stage the same way: every agent
//! keeps the stages' durations, so all step together, and its targets add
//! up to the plan's in every stage. Open loop, uniform arrivals: each of N
//! agents runs `rate / N` and starts its schedule `i / rate` after the
//! common start, so the merged intended starts are evenly spaced at
//! `1 / rate`, not N calls at once every `N / rate`. Poisson arrivals: each
//! agent runs `rate / N` from its own independent draw
//! ([`LoadPlan::arrival_stream`]), and the superposition of independent
//! Poisson processes is a Poisson process at the summed rate.

use std::fmt;

use protobench_model::load::{Arrival, LoadPlan, Stage};

use crate::engine::share;

/// One agent's part of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Share {
    /// The agent's number, 0-based.
    pub index: u32,
    /// What it runs.
    pub plan: LoadPlan,
    /// How long after the common start its schedule (warm-up first) starts.
    pub start_offset_ns: u64,
}

/// Why a plan cannot be split over agents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SplitError {
    /// No agent given.
    NoAgents,
    /// Fewer callers than agents: an agent would get none.
    TooFewCallers {
        /// The plan's concurrency.
        concurrency: u32,
        /// Agents.
        agents: u32,
    },
    /// A stage with callers, but fewer than agents: an agent would have
    /// none for the whole stage.
    TooFewStageCallers {
        /// The stage's number, 1-based (as `--stage` counts them).
        stage: usize,
        /// The stage.
        at: Stage,
        /// Agents.
        agents: u32,
    },
}

impl fmt::Display for SplitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SplitError::NoAgents => write!(f, "no agents given"),
            SplitError::TooFewCallers { concurrency, agents } => write!(
                f,
                "concurrency {concurrency} cannot be split over {agents} agents: \
                 each agent needs at least one caller"
            ),
            SplitError::TooFewStageCallers { stage, at, agents } => write!(
                f,
                "--stage {stage} ({}:{}): {} callers cannot be split over {agents} agents: each agent needs \
                 at least one caller in every stage that has any (a target of 0, or of {agents} or more)",
                crate::validate::seconds(at.duration_ns),
                at.target,
                at.target
            ),
        }
    }
}

impl std::error::Error for SplitError {}

/// Splits `plan` over `agents` agents.
pub fn split(plan: &LoadPlan, agents: u32) -> Result<Vec<Share>, SplitError> {
    if agents == 0 {
        return Err(SplitError::NoAgents);
    }
    if plan.concurrency < agents {
        return Err(SplitError::TooFewCallers {
            concurrency: plan.concurrency,
            agents,
        });
    }
    // A stage of 0 callers (a pause before the first join: targets never
    // fall) is 0 on every agent; one of 1..agents would leave an agent idle
    // for the whole stage while the others call.
    if let Some((i, s)) = plan
        .stages
        .iter()
        .enumerate()
        .find(|(_, s)| s.target > 0 && s.target < agents)
    {
        return Err(SplitError::TooFewStageCallers {
            stage: i + 1,
            at: *s,
            agents,
        });
    }
    let n = u64::from(agents);
    let part = |total: u32, i: u64| share(u64::from(total), n, i) as u32;
    Ok((0..n)
        .map(|i| {
            let mut p = plan.clone();
            p.concurrency = part(plan.concurrency, i);
            p.connections = part(plan.connections, i).clamp(1, p.concurrency);
            p.requests = plan.requests.map(|r| share(r, n, i).max(1));
            p.rate = plan.rate.map(|r| r / n as f64);
            // `share` grows with its total, so each agent's targets never
            // fall either, and its peak is its share of the peak: its
            // concurrency. The start may leave an agent at 0 callers, as a
            // ramp from 0 does; it joins its first in the first stage.
            p.start_users = part(plan.start_users, i);
            p.stages = plan
                .stages
                .iter()
                .map(|s| Stage {
                    duration_ns: s.duration_ns,
                    target: part(s.target, i),
                })
                .collect();
            let start_offset_ns = match (plan.rate, plan.arrival) {
                (Some(r), Arrival::Uniform) => (i as f64 * 1e9 / r).round() as u64,
                // Independent draws need no offset; a closed loop none either.
                (Some(_), Arrival::Poisson) => {
                    p.arrival_stream = i as u32 + 1;
                    0
                }
                (None, _) => 0,
            };
            Share {
                index: i as u32,
                plan: p,
                start_offset_ns,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::thread_plans;
    use crate::pacer::{Pace, Pacer};
    use protobench_model::load::Protocol;

    /// Every intended start of `shares` over their first `window_ns`, in
    /// ns since the common start, as each agent's engine threads schedule them.
    fn merged_arrivals(shares: &[Share], threads: usize) -> Vec<u64> {
        let mut all = Vec::new();
        for s in shares {
            for tp in thread_plans(&s.plan, threads) {
                let mut pacer = Pacer::new(tp.schedule, tp.stop, tp.warmup_ns);
                while let Pace::Go { intended_ns, .. } = pacer.pace(0) {
                    all.push(s.start_offset_ns + intended_ns);
                }
            }
        }
        all.sort_unstable();
        all
    }

    #[test]
    fn open_loop_at_3000_per_second_over_3_agents_arrives_evenly_spaced() {
        let mut plan = crate::plan_defaults(Protocol::Rest, "127.0.0.1:1");
        plan.rate = Some(3000.0);
        plan.concurrency = 300;
        plan.connections = 30;
        plan.duration_ns = Some(2_000_000_000);
        let shares = split(&plan, 3).unwrap();
        assert_eq!(shares.iter().map(|s| s.plan.rate.unwrap()).sum::<f64>(), 3000.0);
        assert_eq!(
            shares.iter().map(|s| s.start_offset_ns).collect::<Vec<_>>(),
            [0, 333_333, 666_667]
        );
        for threads in [1, 2, 3] {
            let t = merged_arrivals(&shares, threads);
            assert_eq!(t.len(), 6000, "{threads} threads per agent");
            let gaps: Vec<u64> = t.windows(2).map(|w| w[1] - w[0]).collect();
            // One call every 333,333 ns (rounding: +-1 ns), never two at once.
            let (lo, hi) = (gaps.iter().min().unwrap(), gaps.iter().max().unwrap());
            assert!(
                *lo >= 333_332 && *hi <= 333_335,
                "{threads} threads: gaps {lo}..{hi} ns"
            );
        }
        // Without the offsets the same shares arrive in bursts of three.
        let bursty: Vec<Share> = shares
            .iter()
            .cloned()
            .map(|mut s| {
                s.start_offset_ns = 0;
                s
            })
            .collect();
        let t = merged_arrivals(&bursty, 1);
        assert!(t.windows(3).any(|w| w[0] == w[2]), "the check sees bursts");
    }

    #[test]
    fn closed_loop_shares_add_up() {
        let mut plan = crate::plan_defaults(Protocol::Grpc, "127.0.0.1:1");
        plan.concurrency = 1000;
        plan.connections = 50;
        plan.requests = Some(10_001);
        let shares = split(&plan, 3).unwrap();
        let sum = |f: fn(&Share) -> u64| shares.iter().map(f).sum::<u64>();
        assert_eq!(sum(|s| u64::from(s.plan.concurrency)), 1000);
        assert_eq!(sum(|s| u64::from(s.plan.connections)), 50);
        assert_eq!(sum(|s| s.plan.requests.unwrap()), 10_001);
        assert!(shares.iter().all(|s| s.start_offset_ns == 0 && s.plan.rate.is_none()));
        plan.concurrency = 2;
        assert_eq!(
            split(&plan, 3).unwrap_err().to_string(),
            "concurrency 2 cannot be split over 3 agents: each agent needs at least one caller"
        );
    }

    const SEC: u64 = 1_000_000_000;

    fn ramp(start_users: u32, stages: &[(u64, u32)]) -> LoadPlan {
        let mut plan = crate::plan_defaults(Protocol::Rest, "127.0.0.1:1");
        plan.workload = Some("inventory.s".into());
        plan.start_users = start_users;
        plan.stages = stages
            .iter()
            .map(|&(secs, target)| Stage {
                duration_ns: secs * SEC,
                target,
            })
            .collect();
        plan.concurrency = crate::stages::peak(start_users, &plan.stages);
        plan.connections = plan.concurrency;
        plan.duration_ns = None;
        plan
    }

    #[test]
    fn stage_schedules_split_stage_by_stage_and_step_together() {
        // (start, stages, agents, why)
        type Row = (u32, Vec<(u64, u32)>, u32, &'static str);
        let rows: Vec<Row> = vec![
            (1, vec![(10, 100)], 3, "a ramp from one caller: 100 = 34 + 33 + 33"),
            (
                0,
                vec![(5, 0), (10, 30), (10, 30), (5, 61)],
                4,
                "a pause (0 on every agent), ramp, hold, ramp",
            ),
            (
                7,
                vec![(0, 7), (20, 9)],
                7,
                "a jump, then a ramp one caller more than the agents",
            ),
            (2, vec![(3, 5)], 2, "two agents, odd peak"),
        ];
        for (start, stages, agents, why) in rows {
            let plan = ramp(start, &stages);
            crate::validate(&plan).unwrap_or_else(|e| panic!("{why}: the plan is valid: {e}"));
            let shares = split(&plan, agents).unwrap_or_else(|e| panic!("{why}: {e}"));
            assert_eq!(shares.len(), agents as usize, "{why}");
            for s in &shares {
                // Every share is a plan the agent's engine accepts, closed
                // loop, starting with the others.
                crate::validate(&s.plan).unwrap_or_else(|e| panic!("{why}: agent {}: {e}", s.index));
                assert_eq!((s.start_offset_ns, s.plan.rate), (0, None), "{why}");
                // The same stage durations: the agents step at the same times.
                let durations: Vec<u64> = s.plan.stages.iter().map(|st| st.duration_ns).collect();
                assert_eq!(
                    durations,
                    plan.stages.iter().map(|st| st.duration_ns).collect::<Vec<_>>(),
                    "{why}"
                );
                assert_eq!(s.plan.window_ns(), plan.window_ns(), "{why}");
            }
            let total = |f: &dyn Fn(&Share) -> u32| shares.iter().map(f).sum::<u32>();
            let spread =
                |f: &dyn Fn(&Share) -> u32| shares.iter().map(f).max().unwrap() - shares.iter().map(f).min().unwrap();
            assert_eq!(total(&|s| s.plan.start_users), start, "{why}: start");
            assert_eq!(total(&|s| s.plan.concurrency), plan.concurrency, "{why}: peak");
            for (k, st) in plan.stages.iter().enumerate() {
                assert_eq!(total(&|s| s.plan.stages[k].target), st.target, "{why}: stage {}", k + 1);
                assert!(spread(&|s| s.plan.stages[k].target) <= 1, "{why}: stage {}", k + 1);
                // A stage with callers has some on every agent.
                if st.target > 0 {
                    assert!(
                        shares.iter().all(|s| s.plan.stages[k].target >= 1),
                        "{why}: stage {}",
                        k + 1
                    );
                }
            }
            // At every stage's end the agents' callers add up to the
            // plan's; in between (a ramp), each agent rounds its own line
            // down, so the sum is short by less than one caller per agent.
            let users = |p: &LoadPlan, t: u64| crate::stages::users_at(p.start_users, &p.stages, t);
            let mut end = 0;
            for st in &plan.stages {
                end += st.duration_ns;
                let sum: u32 = shares.iter().map(|s| users(&s.plan, end)).sum();
                assert_eq!(sum, users(&plan, end), "{why}: at {end} ns");
            }
            for t in (0..=plan.window_ns()).step_by((SEC / 4) as usize) {
                let sum: u32 = shares.iter().map(|s| users(&s.plan, t)).sum();
                let whole = users(&plan, t);
                assert!(
                    sum <= whole && whole - sum < agents,
                    "{why}: at {t} ns: {sum} of {whole}"
                );
            }
        }
    }

    #[test]
    fn a_stage_with_fewer_callers_than_agents_is_refused_by_number() {
        let plan = ramp(0, &[(5, 0), (10, 2), (10, 30)]);
        assert_eq!(
            split(&plan, 3).unwrap_err().to_string(),
            "--stage 2 (10s:2): 2 callers cannot be split over 3 agents: each agent needs at least one caller \
             in every stage that has any (a target of 0, or of 3 or more)"
        );
        // Over two agents it splits, 1 and 1.
        let shares = split(&plan, 2).unwrap();
        assert_eq!(
            shares.iter().map(|s| s.plan.stages[1].target).collect::<Vec<_>>(),
            [1, 1]
        );
    }

    /// Each agent's intended starts over the window, in ns since the
    /// common start, as its engine threads' pacers draw them.
    fn arrivals_per_agent(shares: &[Share], threads: usize) -> Vec<Vec<u64>> {
        shares
            .iter()
            .map(|s| {
                let mut one = merged_arrivals(std::slice::from_ref(s), threads);
                one.sort_unstable();
                one
            })
            .collect()
    }

    #[test]
    fn poisson_over_3_agents_is_one_poisson_process_at_the_full_rate() {
        let mut plan = crate::plan_defaults(Protocol::Rest, "127.0.0.1:1");
        plan.rate = Some(3000.0);
        plan.arrival = Arrival::Poisson;
        plan.concurrency = 300;
        plan.connections = 300; // HTTP/1.1: one per caller
        plan.duration_ns = Some(20 * SEC);
        plan.workload = Some("inventory.s".into());
        let shares = split(&plan, 3).unwrap();
        for s in &shares {
            crate::validate(&s.plan).unwrap_or_else(|e| panic!("agent {}: {e}", s.index));
        }
        assert!(
            shares
                .iter()
                .all(|s| s.start_offset_ns == 0 && s.plan.rate == Some(1000.0))
        );
        assert_eq!(
            shares.iter().map(|s| s.plan.arrival_stream).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        for threads in [1, 2] {
            let t = merged_arrivals(&shares, threads);
            // 60,000 arrivals expected; a Poisson count has sd ~245: 5 sd.
            assert!(
                t.len().abs_diff(60_000) < 1_225,
                "{threads} threads: {} arrivals",
                t.len()
            );
            let gaps: Vec<f64> = t.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
            let n = gaps.len() as f64;
            let mean = gaps.iter().sum::<f64>() / n;
            let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
            // Exponential gaps: the mean is 1/rate (sd of the sample mean
            // 1/rate/sqrt(n), 0.4% here: 2% is 5 sd) and the coefficient of
            // variation 1 (its sd is about 1/sqrt(n) for exponential gaps,
            // 0.4%: 3% is over 5 sd). Evenly spaced would give 0, bursts of
            // copies far more than 1.
            let cv = sd / mean;
            assert!(
                (mean / 333_333.3 - 1.0).abs() < 0.02,
                "{threads} threads: mean gap {mean} ns"
            );
            assert!((cv - 1.0).abs() < 0.03, "{threads} threads: cv {cv}");
            // And memoryless: P(gap < mean) = 1 - 1/e = 0.632 (sd 0.002: 0.01 is 5 sd).
            let below = gaps.iter().filter(|&&g| g < 333_333.3).count() as f64 / n;
            assert!(
                (below - (1.0 - (-1.0f64).exp())).abs() < 0.01,
                "{threads} threads: {below} below the mean"
            );
            // No agent's stream is a shifted copy of another's: no run of
            // three consecutive gaps (to the ns) recurs across agents.
            assert_eq!(
                shared_gap_runs(&arrivals_per_agent(&shares, threads)),
                0,
                "{threads} threads"
            );
        }
        // The check sees copies: every agent drawing stream 0, as engines
        // did before agents had streams of their own.
        let copies: Vec<Share> = shares
            .iter()
            .cloned()
            .map(|mut s| {
                s.plan.arrival_stream = 0;
                s
            })
            .collect();
        assert!(
            shared_gap_runs(&arrivals_per_agent(&copies, 1)) > 1000,
            "the check sees copies"
        );
    }

    /// How many runs of three consecutive gaps in one agent's arrivals
    /// also occur in another agent's.
    fn shared_gap_runs(agents: &[Vec<u64>]) -> usize {
        let runs = |t: &Vec<u64>| -> std::collections::HashSet<[u64; 3]> {
            t.windows(4).map(|w| [w[1] - w[0], w[2] - w[1], w[3] - w[2]]).collect()
        };
        let sets: Vec<_> = agents.iter().map(runs).collect();
        let mut shared = 0;
        for a in 0..sets.len() {
            for b in a + 1..sets.len() {
                shared += sets[a].intersection(&sets[b]).count();
            }
        }
        shared
    }
}
