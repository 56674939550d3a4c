//! Each agent's share of a distributed run (docs/distributed.md): pure
//! arithmetic over the plan, no runtime.
//!
//! Closed loop: callers, connections and a request count are split so the
//! shares add up to the plan's (they differ by at most one). Open loop:
//! each of N agents runs `rate / N` and starts its schedule `i / rate` after
//! the common start, so the merged intended starts are evenly spaced at
//! `1 / rate`, not N calls at once every `N / rate`.

use std::fmt;

use protobench_model::load::{Arrival, LoadPlan};

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
    /// Something the split does not cover yet.
    Unsupported(&'static str),
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
            SplitError::Unsupported(what) => write!(f, "{what} is not supported with agents yet"),
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
    if !plan.stages.is_empty() {
        return Err(SplitError::Unsupported("a concurrency schedule (stages)"));
    }
    if plan.rate.is_some() && plan.arrival == Arrival::Poisson {
        // Every engine seeds its Poisson draw the same way: the agents'
        // streams would be shifted copies, not independent processes.
        return Err(SplitError::Unsupported("poisson arrival (use uniform)"));
    }
    let n = u64::from(agents);
    Ok((0..n)
        .map(|i| {
            let mut p = plan.clone();
            p.concurrency = share(u64::from(plan.concurrency), n, i) as u32;
            p.connections = (share(u64::from(plan.connections), n, i) as u32).clamp(1, p.concurrency);
            p.requests = plan.requests.map(|r| share(r, n, i).max(1));
            p.rate = plan.rate.map(|r| r / n as f64);
            let start_offset_ns = plan.rate.map_or(0, |r| (i as f64 * 1e9 / r).round() as u64);
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
}
