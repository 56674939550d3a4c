//! `--until-decided --budget`: after each round of repetitions, whether to
//! add another. A claim is decided when its direction is (holds or does
//! not hold); its size may stay inconclusive, since more repetitions
//! narrow an interval but cannot move a ratio that differs from the
//! study's. Another round is added while a claim is undecided and the
//! round, at the pace of the rounds so far, fits in what is left of the
//! budget. Pure: the session measures, stores and says what this decides.

use std::time::Duration;

use protobench_model::findings::Direction;
use protobench_model::format::fmt_duration;

use crate::plan::UntilDecided;

/// What to do after a round.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Every claim's direction is decided.
    Decided {
        /// Repetitions it took.
        repetitions: u32,
    },
    /// Another round would not fit in the budget.
    BudgetSpent {
        /// The claims still undecided (1-based, as the report numbers them).
        undecided: Vec<usize>,
    },
    /// Measure repetitions `from..=to` of every point.
    Round {
        /// First new repetition.
        from: u32,
        /// Last new repetition.
        to: u32,
        /// The claims still undecided.
        undecided: Vec<usize>,
    },
}

/// The claims (1-based) whose direction this run cannot tell yet: an
/// interval across the line, or one repetition (untested). Claims that no
/// repetition can decide (not measured, not reproducible here) are not
/// waited for. `directions`: each claim's, in the report's order.
pub fn undecided(directions: &[Direction]) -> Vec<usize> {
    directions
        .iter()
        .enumerate()
        .filter(|(_, d)| matches!(d, Direction::Inconclusive | Direction::Agrees | Direction::Disagrees))
        .map(|(i, _)| i + 1)
        .collect()
}

/// The decision after a round: `repetitions` measured so far, `used` of
/// the budget spent (every round so far), `per_repetition` the pace of the
/// last round.
pub fn next(
    directions: &[Direction],
    repetitions: u32,
    used: Duration,
    per_repetition: Duration,
    rule: UntilDecided,
) -> Next {
    let undecided = undecided(directions);
    if undecided.is_empty() {
        return Next::Decided { repetitions };
    }
    let round = per_repetition * rule.round;
    if used + round > Duration::from_nanos(rule.budget_ns) {
        return Next::BudgetSpent { undecided };
    }
    Next::Round {
        from: repetitions + 1,
        to: repetitions + rule.round,
        undecided,
    }
}

impl Next {
    /// One line for the run's record and the terminal.
    pub fn describe(&self, claims: usize, repetitions: u32, used: Duration, rule: UntilDecided) -> String {
        let budget = fmt_duration(Duration::from_nanos(rule.budget_ns));
        let used = fmt_duration(Duration::from_secs(used.as_secs()));
        let list = |u: &[usize]| u.iter().map(|i| format!("#{i}")).collect::<Vec<_>>().join(", ");
        match self {
            Next::Decided { repetitions } => format!(
                "until decided: every claim's direction decided after {repetitions} repetitions ({used} of the {budget} budget)"
            ),
            Next::BudgetSpent { undecided } => format!(
                "until decided: budget spent ({used} of {budget}): after {repetitions} repetitions {} of {claims} claims undecided ({}); another round would not fit",
                undecided.len(),
                list(undecided)
            ),
            Next::Round { from, to, undecided } => format!(
                "until decided: after {repetitions} repetitions {} of {claims} claims undecided ({}): repetitions {from}-{to} added ({used} of {budget} used)",
                undecided.len(),
                list(undecided)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: UntilDecided = UntilDecided {
        budget_ns: 600_000_000_000,
        first: 3,
        round: 3,
        used_ns: 0,
    };

    #[test]
    fn rounds_are_added_while_a_direction_is_undecided_and_they_fit() {
        use Direction::*;
        let s = Duration::from_secs;
        // Decided (holds, does not hold) and hopeless (not reproducible) claims are not waited for.
        let done = [Holds, DoesNotHold, NotReproducible, NotMeasured];
        assert_eq!(next(&done, 3, s(60), s(20), RULE), Next::Decided { repetitions: 3 });
        let open = [Holds, Inconclusive, Agrees];
        assert_eq!(
            next(&open, 3, s(60), s(20), RULE),
            Next::Round {
                from: 4,
                to: 6,
                undecided: vec![2, 3]
            }
        );
        // 540 s used + 3 x 20 s = 600 s: fits exactly; 541 s does not.
        assert!(matches!(next(&open, 3, s(540), s(20), RULE), Next::Round { .. }));
        assert_eq!(
            next(&open, 3, s(541), s(20), RULE),
            Next::BudgetSpent { undecided: vec![2, 3] }
        );
    }

    #[test]
    fn each_decision_reads_as_one_line() {
        let s = Duration::from_secs;
        let line = Next::Round {
            from: 4,
            to: 6,
            undecided: vec![2, 5],
        }
        .describe(8, 3, s(125), RULE);
        assert_eq!(
            line,
            "until decided: after 3 repetitions 2 of 8 claims undecided (#2, #5): repetitions 4-6 added (125s of 600s used)"
        );
    }
}
