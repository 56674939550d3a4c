//! The checks shared by every section: each problem is recorded with its
//! place and key, and a default stands in so that checking goes on.

use std::ops::Range;
use std::time::Duration;

use toml::Spanned;

use super::raw::{Choice, DurationValue};
use super::{Issue, line_col};
use crate::units::parse_duration;

/// The problems found so far in one preset text.
pub(super) struct Checker<'a> {
    text: &'a str,
    pub(super) issues: Vec<Issue>,
}

impl<'a> Checker<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Checker {
            text,
            issues: Vec::new(),
        }
    }

    /// Records a problem at `span`.
    /// A value that came from the command line ([`super::Flag::span`]) is
    /// named by its flag, on line 0.
    pub(super) fn issue(&mut self, span: Range<usize>, key: &str, message: impl Into<String>) {
        let (line, column, key) = match super::Flag::at(span.start) {
            Some(flag) => (0, 0, flag.name().to_string()),
            None => {
                let (line, column) = line_col(self.text, span.start);
                (line, column, key.to_string())
            }
        };
        self.issues.push(Issue {
            line,
            column,
            key,
            message: message.into(),
        });
    }

    /// A duration (seconds or text with a unit), or `default` when absent or wrong.
    pub(super) fn duration(&mut self, v: Option<&Spanned<DurationValue>>, key: &str, default: Duration) -> Duration {
        let Some(v) = v else { return default };
        let d = match v.get_ref() {
            DurationValue::Seconds(s) if s.is_finite() && *s >= 0.0 => {
                Duration::try_from_secs_f64(*s).unwrap_or(Duration::MAX)
            }
            DurationValue::Seconds(s) => {
                self.issue(
                    v.span(),
                    key,
                    format!("{s} is not a duration (e.g. \"500ms\", \"2s\", or a number of seconds)"),
                );
                default
            }
            DurationValue::Text(t) => match parse_duration(t) {
                Ok(d) => d,
                Err(e) => {
                    self.issue(v.span(), key, e);
                    return default;
                }
            },
        };
        // Every duration fits the engine's range (and so a u64 of ns).
        if d > Duration::from_nanos(protobench_load::MAX_DURATION_NS) {
            self.issue(v.span(), key, format!("must be {}", protobench_load::MAX_DURATION_TEXT));
            return default;
        }
        d
    }

    /// An integer of at least `min` that fits a `u32`, or `default` when absent or wrong.
    pub(super) fn positive(&mut self, v: Option<&Spanned<i64>>, key: &str, default: u32, min: i64) -> u32 {
        let Some(v) = v else { return default };
        let n = *v.get_ref();
        if n < min || n > u32::MAX as i64 {
            self.issue(
                v.span(),
                key,
                format!("must be an integer of at least {min}, found {n}"),
            );
            return default;
        }
        n as u32
    }

    /// A number of calls in flight from 1 to what one engine run takes
    /// ([`protobench_load::MAX_CONCURRENCY`]), or `default` when absent or wrong.
    pub(super) fn concurrency(&mut self, v: Option<&Spanned<i64>>, key: &str, default: u32) -> u32 {
        let max = protobench_load::MAX_CONCURRENCY;
        match v.map(|v| (v, *v.get_ref())) {
            Some((v, n)) if n > i64::from(max) => {
                self.issue(
                    v.span(),
                    key,
                    format!("must be at most {max} (calls in flight in one engine run), found {n}"),
                );
                default
            }
            _ => self.positive(v, key, default, 1),
        }
    }

    /// A fraction from 0 to 1, or `default` when absent or wrong.
    pub(super) fn fraction(&mut self, v: Option<&Spanned<f64>>, key: &str, default: f64) -> f64 {
        let Some(v) = v else { return default };
        let x = *v.get_ref();
        if !(0.0..=1.0).contains(&x) {
            self.issue(v.span(), key, format!("must be a fraction between 0 and 1, found {x}"));
            return default;
        }
        x
    }

    /// The value of a [`Choice`], or `default` when it is absent or unknown.
    pub(super) fn choice<T: Copy>(&mut self, v: Option<&Spanned<Choice<T>>>, key: &str, default: T) -> T {
        let Some(v) = v else { return default };
        match v.get_ref() {
            Choice::Known(x) => *x,
            Choice::Unknown { written, accepted } => {
                self.issue(
                    v.span(),
                    key,
                    format!("unknown value `{written}` (accepted: {})", accepted.join(", ")),
                );
                default
            }
        }
    }

    /// A list of names from `accepted`, each once; missing or empty is a problem.
    pub(super) fn names(
        &mut self,
        v: Option<&Spanned<Vec<Spanned<String>>>>,
        key: &str,
        accepted: &[&str],
    ) -> Vec<String> {
        let Some(list) = v else {
            self.issue(0..0, key, format!("missing (accepted: {})", accepted.join(", ")));
            return vec![];
        };
        if list.get_ref().is_empty() {
            self.issue(
                list.span(),
                key,
                format!("is empty (accepted: {})", accepted.join(", ")),
            );
        }
        let mut out = Vec::new();
        for (i, item) in list.get_ref().iter().enumerate() {
            let name = item.get_ref();
            if !accepted.contains(&name.as_str()) {
                self.issue(
                    item.span(),
                    &format!("{key}[{i}]"),
                    format!("unknown `{name}` (accepted: {})", accepted.join(", ")),
                );
            } else if out.contains(name) {
                self.issue(item.span(), &format!("{key}[{i}]"), format!("`{name}` is listed twice"));
            } else {
                out.push(name.clone());
            }
        }
        out
    }
}
