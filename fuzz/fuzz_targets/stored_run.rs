//! The stored-run decoder: the JSON a run is stored as (protobench-results'
//! store keeps a run's plan, environment, points, results, searches,
//! warm-ups and links as JSON columns; a JSON report carries the whole
//! RunRecord). Every type the store reads back is tried on the input; a run
//! that decodes is rendered as every report renders it (text, Markdown,
//! JSON, findings, HTML with its charts), a result as its load summary and
//! exports, and what the store would write of it must read back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protobench_model::load::LoadResult;
use protobench_model::network::{PointLink, RunLink};
use protobench_model::run::{PointConfig, RunEnvironment, RunRecord, Search, Warmup};
use protobench_results::{export, html, load_summary, report};
use serde::Serialize;
use serde::de::DeserializeOwned;

fuzz_target!(|data: &[u8]| {
    if let Some(run) = stored::<RunRecord>(data) {
        let _ = report::text_table(&run);
        let _ = report::markdown(&run);
        let _ = report::findings_text(&run);
        let _ = report::metadata(&run);
        let _ = report::json(&run);
        let charts = html::charts(&run);
        let _ = html::render(&run, &charts);
        for m in &run.measurements {
            if let Some(r) = &m.result {
                summarise(r);
            }
        }
    }
    if let Some(r) = stored::<LoadResult>(data) {
        summarise(&r);
    }
    let _ = stored::<PointConfig>(data);
    let _ = stored::<RunEnvironment>(data);
    let _ = stored::<Search>(data);
    let _ = stored::<Warmup>(data);
    let _ = stored::<PointLink>(data);
    let _ = stored::<RunLink>(data);
});

/// `data` decoded as a `T`; if it decodes, what the store writes of it reads
/// back to the same JSON.
fn stored<T: Serialize + DeserializeOwned>(data: &[u8]) -> Option<T> {
    let value: T = serde_json::from_slice(data).ok()?;
    let written = serde_json::to_string(&value).expect("plain data serializes");
    let back: T = serde_json::from_str(&written).unwrap_or_else(|e| {
        panic!(
            "{} written as {written} does not read back: {e}",
            std::any::type_name::<T>()
        )
    });
    assert_eq!(written, serde_json::to_string(&back).expect("plain data serializes"));
    Some(value)
}

fn summarise(r: &LoadResult) {
    let _ = load_summary::text(r);
    let _ = load_summary::csv(r);
    let _ = export::openmetrics(r);
    let _ = export::timeline_csv(r);
    let _ = protobench_load::hgrm(r);
    let _ = protobench_load::hlog(r);
}
