//! Measures what the dataset views save: per call, building the owned
//! response with `Operation::respond` (which copies the dataset part) and
//! encoding it, against encoding a view of the shared dataset.
//!
//! `cargo run --release -p protobench-server --example encode_cost`

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::Message as _;
use protobench_contract::{Dataset, Encoding, workload};
use protobench_server::views::{DeviceListView, FileContentView, ItemListView, ObjectListView};

/// Mean time per call of `f` over at least `min` of wall time.
fn time(min: Duration, mut f: impl FnMut()) -> Duration {
    let mut n = 0u32;
    let start = Instant::now();
    while start.elapsed() < min || n < 10 {
        f();
        n += 1;
    }
    start.elapsed() / n
}

fn main() {
    let dataset = Arc::new(Dataset::generate());
    let budget = Duration::from_millis(500);
    println!(
        "{:<16} {:<9} {:>12} {:>12} {:>7}",
        "workload", "encoding", "respond+enc", "view enc", "saved"
    );
    for name in ["inventory.m", "inventory.l", "tasks.objects", "tasks.file-3m4"] {
        let w = workload::find(name).unwrap();
        let request = w.request();
        for encoding in [Encoding::Protobuf, Encoding::Json] {
            let owned = time(budget, || {
                let response = w.operation.respond(&request, &dataset).unwrap();
                black_box(response.encode(encoding));
            });
            let view = time(budget, || {
                let d = dataset.clone();
                let bytes = match (name, encoding) {
                    ("inventory.m", Encoding::Protobuf) => DeviceListView::new(d).encode_to_vec(),
                    ("inventory.m", _) => serde_json::to_vec(&DeviceListView::new(d)).unwrap(),
                    ("inventory.l", Encoding::Protobuf) => ItemListView::new(d).encode_to_vec(),
                    ("inventory.l", _) => serde_json::to_vec(&ItemListView::new(d)).unwrap(),
                    ("tasks.objects", Encoding::Protobuf) => ObjectListView::new(d).encode_to_vec(),
                    ("tasks.objects", _) => serde_json::to_vec(&ObjectListView::new(d)).unwrap(),
                    (_, Encoding::Protobuf) => FileContentView::new(d, "file-3m4").unwrap().encode_to_vec(),
                    _ => serde_json::to_vec(&FileContentView::new(d, "file-3m4").unwrap()).unwrap(),
                };
                black_box(bytes);
            });
            let saved = 1.0 - view.as_secs_f64() / owned.as_secs_f64();
            println!(
                "{name:<16} {:<9} {:>9.1} us {:>9.1} us {:>6.0}%",
                format!("{encoding:?}"),
                owned.as_secs_f64() * 1e6,
                view.as_secs_f64() * 1e6,
                saved * 100.0
            );
        }
    }
}
