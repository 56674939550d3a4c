//! The protobench runner: presets become one validated [`plan::Plan`]; the
//! runner starts each server from its manifest, pins and limits it, verifies
//! it, warms it up, measures every point through the load engine with
//! repetitions interleaved, samples the server's CPU and memory, and records
//! every measurement in the results database as soon as it is taken.
//!
//! The runner never prints: it emits [`orchestrate::RunEvent`]s and the
//! binary renders them.
//!
//! ```
//! use protobench_runner::{manifest::Catalog, preset, units::CpuSet};
//!
//! let ctx = preset::Context { catalog: Catalog::load(None), cpus: CpuSet::parse("0-1").unwrap() };
//! let text = "servers = [\"rust\"]\nprotocols = [\"rest\"]\nworkloads = [\"inventory.xs\"]\n[load]\nconcurrency = 4\n";
//! let plan = preset::resolve(text, "example.toml", &ctx).unwrap();
//! assert_eq!(plan.points.len(), 1);
//! assert_eq!(plan.server_cpus.unwrap().to_string(), "0");
//! ```

/// One call specification for `load` and `[[targets]]`.
pub mod agents;
pub mod call;
pub mod engine;
pub mod error;
pub mod guard;
pub mod import;
pub mod isolation;
pub mod location;
pub mod lookup;
pub mod manifest;
/// Emulated networks: the server on its own host behind a shaped link, measured.
pub mod network;
pub mod orchestrate;
pub mod plan;
pub mod preset;
pub mod procfs;
pub mod runlock;
pub mod search;
pub mod server;
pub mod session;
pub mod units;
