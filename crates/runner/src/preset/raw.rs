//! The preset file as written: what toml deserialises before any check.

use serde::Deserialize;
use toml::Spanned;

/// A number of seconds or a string with a unit.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum DurationValue {
    Seconds(f64),
    Text(String),
}

/// One value or a list (a matrix dimension).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    pub(super) fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrMany::One(v) => vec![v.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// A size in bytes or a string with a unit.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum SizeValue {
    Bytes(u64),
    Text(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPreset {
    pub(super) name: Option<Spanned<String>>,
    pub(super) description: Option<String>,
    pub(super) kind: Option<Spanned<String>>,
    pub(super) servers: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) protocols: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) workloads: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) repetitions: Option<Spanned<i64>>,
    pub(super) warmup: Option<Spanned<DurationValue>>,
    pub(super) duration: Option<Spanned<DurationValue>>,
    pub(super) timeout: Option<Spanned<DurationValue>>,
    pub(super) connect_timeout: Option<Spanned<DurationValue>>,
    pub(super) tls: Option<Spanned<OneOrMany<bool>>>,
    pub(super) noise_threshold: Option<Spanned<f64>>,
    pub(super) validate: Option<Spanned<String>>,
    pub(super) load: Option<Spanned<RawLoad>>,
    pub(super) discover: Option<Spanned<RawDiscover>>,
    pub(super) ramp: Option<Spanned<RawRamp>>,
    pub(super) server: Option<Spanned<RawServer>>,
    pub(super) generator: Option<Spanned<RawGenerator>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLoad {
    pub(super) mode: Option<Spanned<String>>,
    pub(super) concurrency: Option<Spanned<OneOrMany<i64>>>,
    pub(super) connections: Option<Spanned<OneOrMany<i64>>>,
    pub(super) rate: Option<Spanned<OneOrMany<f64>>>,
    pub(super) arrival: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDiscover {
    pub(super) start: Option<Spanned<i64>>,
    pub(super) factor: Option<Spanned<i64>>,
    pub(super) min_gain: Option<Spanned<f64>>,
    pub(super) max: Option<Spanned<i64>>,
    pub(super) step_duration: Option<Spanned<DurationValue>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRamp {
    pub(super) start: Option<Spanned<i64>>,
    pub(super) step: Option<Spanned<i64>>,
    pub(super) step_duration: Option<Spanned<DurationValue>>,
    pub(super) max: Option<Spanned<i64>>,
    pub(super) min_gain: Option<Spanned<f64>>,
    pub(super) patience: Option<Spanned<i64>>,
    pub(super) max_error_rate: Option<Spanned<f64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServer {
    pub(super) cpus: Option<Spanned<String>>,
    pub(super) workers: Option<Spanned<i64>>,
    pub(super) cpu_limit: Option<Spanned<OneOrMany<f64>>>,
    pub(super) memory_limit: Option<Spanned<OneOrMany<SizeValue>>>,
    pub(super) failure_rate: Option<Spanned<OneOrMany<f64>>>,
    pub(super) failure_seed: Option<Spanned<i64>>,
    pub(super) service_time: Option<Spanned<OneOrMany<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGenerator {
    pub(super) cpus: Option<Spanned<String>>,
    pub(super) threads: Option<Spanned<i64>>,
}
