//! A concurrency schedule: when each caller joins a closed-loop run.
//!
//! The shape of k6's ramping VUs (`stages`): the run starts with
//! `start_users` callers; each stage moves the target linearly from the
//! previous stage's target to its own over its duration (a stage with the
//! same target holds it; a zero-length stage jumps). At elapsed time `t`
//! the number of active callers is the floor of the target line, so caller
//! `k` (counted from 0) joins at the first instant the line reaches `k + 1`.
//! Callers never leave before the end: a stage that lowers the target is
//! refused by validation (no ramp-down).
//!
//! Pure arithmetic over nanoseconds since the schedule's start (the end of
//! the warm-up), table-tested here like the pacer.

use protobench_model::load::Stage;

/// When caller `k` (0-based) joins, in ns since the schedule's start:
/// `Some(0)` for the `start` callers, `None` for a caller the schedule never
/// reaches.
pub fn join_at_ns(start: u32, stages: &[Stage], k: u32) -> Option<u64> {
    if k < start {
        return Some(0);
    }
    let need = u128::from(k) + 1;
    let mut from = u128::from(start);
    let mut t0: u128 = 0;
    for s in stages {
        let to = u128::from(s.target);
        let d = u128::from(s.duration_ns);
        if to >= need && from < need {
            // The first t with from + floor((to - from) * t / d) >= need.
            let t = if d == 0 {
                0
            } else {
                (d * (need - from)).div_ceil(to - from)
            };
            return Some((t0 + t).min(u128::from(u64::MAX)) as u64);
        }
        from = from.max(to);
        t0 += d;
    }
    None
}

/// Callers active at `t_ns` since the schedule's start.
pub fn users_at(start: u32, stages: &[Stage], t_ns: u64) -> u32 {
    let t = u128::from(t_ns);
    let mut from = u128::from(start);
    let mut t0: u128 = 0;
    for s in stages {
        let to = u128::from(s.target);
        let d = u128::from(s.duration_ns);
        if t < t0 + d {
            let gained = if to > from { (to - from) * (t - t0) / d } else { 0 };
            return (from + gained) as u32;
        }
        from = from.max(to);
        t0 += d;
    }
    from as u32
}

/// The highest number of callers the schedule reaches.
pub fn peak(start: u32, stages: &[Stage]) -> u32 {
    stages.iter().map(|s| s.target).fold(start, u32::max)
}

/// Parses `DURATION:TARGET` (k6's `--stage` form, e.g. `30s:100`) with the
/// given duration parser.
pub fn parse_stage(s: &str, duration_ns: impl Fn(&str) -> Result<u64, String>) -> Result<Stage, String> {
    let Some((d, t)) = s.split_once(':') else {
        return Err(format!("expected DURATION:TARGET (e.g. 30s:100), got `{s}`"));
    };
    let duration_ns = duration_ns(d.trim()).map_err(|e| format!("bad duration `{d}` in `{s}`: {e}"))?;
    let target = t
        .trim()
        .parse::<u32>()
        .map_err(|_| format!("bad target `{t}` in `{s}`: expected a whole number of users"))?;
    Ok(Stage { duration_ns, target })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: u64 = 1_000_000_000;

    fn st(secs: u64, target: u32) -> Stage {
        Stage {
            duration_ns: secs * SEC,
            target,
        }
    }

    #[test]
    fn join_times_table() {
        // (start, stages, caller, join time, why)
        type Row = (u32, Vec<Stage>, u32, Option<u64>, &'static str);
        let rows: Vec<Row> = vec![
            (
                1,
                vec![st(10, 11)],
                0,
                Some(0),
                "a start user is there from the beginning",
            ),
            (
                1,
                vec![st(10, 11)],
                1,
                Some(SEC),
                "one user per second: the second joins at 1 s",
            ),
            (
                1,
                vec![st(10, 11)],
                10,
                Some(10 * SEC),
                "the last joins at the end of the stage",
            ),
            (1, vec![st(10, 11)], 11, None, "past the peak: never"),
            (
                0,
                vec![st(1, 15)],
                0,
                Some(SEC.div_ceil(15)),
                "15 users/s from 0: the first after 1/15 s",
            ),
            (0, vec![st(1, 15)], 14, Some(SEC), "and the 15th at 1 s"),
            (
                0,
                vec![st(5, 0), st(1, 2)],
                0,
                Some(5 * SEC + SEC / 2),
                "a hold at 0, then 2 over 1 s",
            ),
            (2, vec![st(0, 5)], 4, Some(0), "a zero-length stage jumps at once"),
            (
                1,
                vec![st(3, 1), st(2, 3)],
                2,
                Some(5 * SEC),
                "hold 3 s, then +2 over 2 s",
            ),
        ];
        for (start, stages, k, want, why) in rows {
            assert_eq!(join_at_ns(start, &stages, k), want, "{why}");
        }
    }

    #[test]
    fn users_at_counts_the_callers_that_joined() {
        // The two views agree: users_at(t) = #{k : join_at(k) <= t}.
        let cases: Vec<(u32, Vec<Stage>)> = vec![
            (0, vec![st(1, 15), st(2, 15), st(3, 100)]),
            (3, vec![st(7, 10)]),
            (1, vec![st(0, 4), st(2, 9)]),
        ];
        for (start, stages) in cases {
            let max = peak(start, &stages);
            let total: u64 = stages.iter().map(|s| s.duration_ns).sum();
            for t in (0..=total + SEC).step_by((SEC / 7) as usize) {
                let joined = (0..max + 5)
                    .filter(|&k| join_at_ns(start, &stages, k).is_some_and(|j| j <= t))
                    .count() as u32;
                assert_eq!(users_at(start, &stages, t), joined, "start {start} {stages:?} at {t}");
            }
        }
    }

    #[test]
    fn stages_parse_in_k6_order() {
        let secs = |d: &str| -> Result<u64, String> {
            d.strip_suffix('s')
                .and_then(|n| n.parse::<u64>().ok())
                .map(|n| n * SEC)
                .ok_or_else(|| "expected a duration like 30s".to_string())
        };
        assert_eq!(parse_stage("30s:100", secs), Ok(st(30, 100)));
        assert_eq!(
            parse_stage("100", secs).unwrap_err(),
            "expected DURATION:TARGET (e.g. 30s:100), got `100`"
        );
        assert_eq!(
            parse_stage("30s:-1", secs).unwrap_err(),
            "bad target `-1` in `30s:-1`: expected a whole number of users"
        );
        assert_eq!(
            parse_stage("x:5", secs).unwrap_err(),
            "bad duration `x` in `x:5`: expected a duration like 30s"
        );
    }
}
