//! protobench results: the SQLite store of benchmark runs and the report
//! renderers (text, JSON, CSV, Markdown, HTML with SVG/PNG charts) over the
//! data model of `protobench-model`.
//!
//! No async runtime and no HTTP stack: a stored run re-renders offline.
//!
//! ```
//! use protobench_model::testing;
//! use protobench_results::report;
//!
//! let point = testing::point(0, "rest", "inventory.s");
//! let m = testing::measurement(&point, 1, 1000.0);
//! let run = testing::record(vec![point], vec![m]);
//! assert!(report::text_table(&run).contains("inventory.s"));
//! ```

pub mod agents;
pub mod chart;
pub mod charts;
pub mod export;
pub mod html;
pub mod load_summary;
pub mod png;
pub mod regression;
pub mod relative;
pub mod report;
pub mod store;
pub mod stream_summary;
pub mod streams;
pub mod svg;
