//! protobench's data model: what a load run is asked to do ([`load::LoadPlan`])
//! and what it measured ([`load::LoadResult`]), a benchmark run of many points
//! and repetitions ([`run`]), statistics across repetitions ([`stats`]), and
//! the formatting every renderer shares ([`format`], [`time`]).
//!
//! Plain serde data and pure functions: no async runtime, no HTTP stack, no
//! database. The load engine produces these types, the store saves them and
//! the renderers read them, so each of those depends on this crate and none
//! on another.
//!
//! ```
//! use protobench_model::stats::Summary;
//!
//! let rate = Summary::of(&[980.0, 1010.0, 1000.0]).unwrap();
//! assert_eq!(rate.median, 1000.0);
//! assert!(rate.ci_low.unwrap() < 1000.0 && !rate.is_noisy(0.10));
//! ```

pub mod findings;
pub mod format;
pub mod hdr;
pub mod load;
pub mod merge;
pub mod network;
pub mod run;
pub mod stats;
pub mod steady;
pub mod stream;
#[doc(hidden)]
pub mod testing;
pub mod threshold;
pub mod time;
