//! Exports of one load result for the tools people already run: Prometheus
//! / OpenMetrics text ([`openmetrics`]) and the per-second timeline as CSV
//! for pandas and spreadsheets ([`timeline_csv`]). HdrHistogram's own formats
//! (`.hgrm`, `.hlog`) need the histogram library and live in the engine
//! crate (`protobench_load::hgrm`, `protobench_load::hlog`).

mod openmetrics;
mod timeline;

pub use openmetrics::openmetrics;
pub use timeline::timeline_csv;
