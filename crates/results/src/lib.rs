//! protobench results: the serde result model, the statistics across
//! repetitions, the SQLite store and the report renderers.
//!
//! No async runtime and no HTTP stack: a stored run re-renders offline.
//!
//! ```
//! use protobench_results::stats::Summary;
//!
//! let rate = Summary::of(&[980.0, 1010.0, 1000.0]).unwrap();
//! assert_eq!(rate.median, 1000.0);
//! assert!(rate.ci_low.unwrap() < 1000.0 && !rate.is_noisy(0.10));
//! ```

pub mod html;
pub mod model;
pub mod png;
pub mod report;
pub mod run;
pub mod stats;
pub mod store;
pub mod svg;
#[doc(hidden)]
pub mod testing;
pub mod time;
