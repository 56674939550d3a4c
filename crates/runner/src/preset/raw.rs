//! The preset file as written: what toml deserialises before any check.

use std::fmt;

use serde::Deserialize;
use serde::de::value::StrDeserializer;
use serde::de::{self, DeserializeOwned, Deserializer};
use toml::Spanned;

use protobench_model::load::{Arrival, Validation};
use protobench_model::run::PointKind;

/// One of a fixed set of names (an enum that serde reads), or the name as
/// written with the names serde accepts: a wrong value is reported by the
/// checker with every other problem instead of stopping toml at the first.
#[derive(Debug, Clone)]
pub(super) enum Choice<T> {
    Known(T),
    Unknown {
        written: String,
        accepted: &'static [&'static str],
    },
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Choice<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let written = String::deserialize(d)?;
        match T::deserialize(StrDeserializer::<UnknownName>::new(&written)) {
            Ok(v) => Ok(Choice::Known(v)),
            Err(UnknownName(accepted)) => Ok(Choice::Unknown { written, accepted }),
        }
    }
}

/// Why a name is none of an enum's: the names it accepts, as serde lists them.
#[derive(Debug)]
struct UnknownName(&'static [&'static str]);

impl de::Error for UnknownName {
    fn custom<M: fmt::Display>(_: M) -> Self {
        UnknownName(&[])
    }

    fn unknown_variant(_: &str, expected: &'static [&'static str]) -> Self {
        UnknownName(expected)
    }
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "accepted: {}", self.0.join(", "))
    }
}

impl std::error::Error for UnknownName {}

/// `load.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Mode {
    /// A fixed number of calls in flight.
    Closed,
    /// Calls started at a fixed rate.
    Open,
}

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

/// `load.connections`: a count, or `"per-caller"` / `"per-call"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum ConnectionsValue {
    Count(i64),
    Name(String),
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
    pub(super) kind: Option<Spanned<Choice<PointKind>>>,
    pub(super) servers: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) protocols: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) workloads: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) network: Option<Spanned<Vec<Spanned<String>>>>,
    /// The agents that generate the load (`host:port`; docs/distributed.md).
    pub(super) agents: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) repetitions: Option<Spanned<i64>>,
    pub(super) warmup: Option<Spanned<DurationValue>>,
    pub(super) warmup_max: Option<Spanned<DurationValue>>,
    pub(super) warmup_min: Option<Spanned<DurationValue>>,
    pub(super) duration: Option<Spanned<DurationValue>>,
    pub(super) timeout: Option<Spanned<DurationValue>>,
    pub(super) connect_timeout: Option<Spanned<DurationValue>>,
    pub(super) tls: Option<Spanned<OneOrMany<bool>>>,
    pub(super) noise_threshold: Option<Spanned<f64>>,
    pub(super) validate: Option<Spanned<Choice<Validation>>>,
    pub(super) load: Option<Spanned<RawLoad>>,
    pub(super) discover: Option<Spanned<RawDiscover>>,
    pub(super) ramp: Option<Spanned<RawRamp>>,
    pub(super) stream: Option<Spanned<RawStream>>,
    pub(super) server: Option<Spanned<RawServer>>,
    pub(super) generator: Option<Spanned<RawGenerator>>,
    pub(super) findings: Option<Vec<Spanned<RawFinding>>>,
    /// How this run differs from the study it reruns, one line each.
    pub(super) differences: Option<Vec<String>>,
    pub(super) thresholds: Option<Spanned<Vec<Spanned<String>>>>,
    /// Running services called but not started (`[[targets]]`).
    pub(super) targets: Option<Spanned<Vec<Spanned<RawTarget>>>>,
}

/// One `[[targets]]` entry (checked in `targets.rs`); the keys are `load`'s
/// flags in snake case.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTarget {
    pub(super) name: Option<Spanned<String>>,
    pub(super) protocol: Option<Spanned<String>>,
    pub(super) address: Option<Spanned<String>>,
    pub(super) url: Option<Spanned<String>>,
    pub(super) method: Option<Spanned<String>>,
    pub(super) path: Option<Spanned<String>>,
    pub(super) headers: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) data: Option<Spanned<String>>,
    pub(super) data_file: Option<Spanned<String>>,
    pub(super) soap_action: Option<Spanned<String>>,
    pub(super) call: Option<Spanned<String>>,
    pub(super) proto: Option<Spanned<OneOrMany<String>>>,
    pub(super) import_path: Option<Spanned<OneOrMany<String>>>,
    pub(super) protoset: Option<Spanned<String>>,
    pub(super) tls: Option<Spanned<bool>>,
    pub(super) cacert: Option<Spanned<String>>,
    pub(super) insecure: Option<Spanned<bool>>,
    pub(super) cert: Option<Spanned<String>>,
    pub(super) key: Option<Spanned<String>>,
    pub(super) server_name: Option<Spanned<String>>,
    pub(super) pid: Option<Spanned<i64>>,
}

/// One `[[findings]]` entry (checked in `findings.rs`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFinding {
    pub(super) claim: Spanned<String>,
    pub(super) source: Option<Spanned<String>>,
    pub(super) metric: Spanned<String>,
    pub(super) a: Spanned<toml::Value>,
    pub(super) b: Spanned<toml::Value>,
    pub(super) a2: Option<Spanned<toml::Value>>,
    pub(super) b2: Option<Spanned<toml::Value>>,
    pub(super) expect: Spanned<String>,
    pub(super) within: Option<Spanned<f64>>,
    pub(super) why: Option<Spanned<String>>,
    pub(super) about: Option<Spanned<f64>>,
    pub(super) at_least: Option<Spanned<f64>>,
    pub(super) at_most: Option<Spanned<f64>>,
    pub(super) kind: Option<Spanned<String>>,
    pub(super) needs: Option<Spanned<OneOrMany<String>>>,
    pub(super) timeouts: Option<Spanned<String>>,
    pub(super) study: Option<Spanned<Vec<f64>>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLoad {
    pub(super) mode: Option<Spanned<Choice<Mode>>>,
    pub(super) concurrency: Option<Spanned<OneOrMany<i64>>>,
    pub(super) connections: Option<Spanned<OneOrMany<ConnectionsValue>>>,
    pub(super) rate: Option<Spanned<OneOrMany<f64>>>,
    pub(super) arrival: Option<Spanned<Choice<Arrival>>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDiscover {
    pub(super) start: Option<Spanned<i64>>,
    pub(super) factor: Option<Spanned<i64>>,
    pub(super) min_gain: Option<Spanned<f64>>,
    pub(super) max: Option<Spanned<i64>>,
    pub(super) step_duration: Option<Spanned<DurationValue>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRamp {
    pub(super) start: Option<Spanned<i64>>,
    pub(super) step: Option<Spanned<i64>>,
    pub(super) step_duration: Option<Spanned<DurationValue>>,
    pub(super) max: Option<Spanned<i64>>,
    pub(super) min_gain: Option<Spanned<f64>>,
    pub(super) patience: Option<Spanned<i64>>,
    pub(super) max_error_rate: Option<Spanned<f64>>,
    pub(super) spawn_rate: Option<Spanned<f64>>,
    pub(super) stepped: Option<Spanned<bool>>,
}

/// `[stream]` of a `kind = "stream"` preset (checked in `stream.rs`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStream {
    pub(super) transports: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) frames: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) messages: Option<Spanned<i64>>,
    pub(super) rate: Option<Spanned<OneOrMany<f64>>>,
}

#[derive(Debug, Default, Deserialize)]
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

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGenerator {
    pub(super) cpus: Option<Spanned<String>>,
    pub(super) threads: Option<Spanned<i64>>,
}
