//! Prints the inventory response sizes next to the published ones.
use protobench_contract::{Dataset, Encoding, workload};
fn main() {
    let d = Dataset::generate();
    for (name, enc, published) in [
        ("inventory.s", Encoding::Json, 646),
        ("inventory.m", Encoding::Json, 49_945),
        ("inventory.m", Encoding::Protobuf, 22_080),
        ("inventory.l", Encoding::Json, 500_820),
        ("inventory.l", Encoding::Protobuf, 220_410),
    ] {
        let w = workload::find(name).unwrap();
        let n = w.operation.respond(&w.request(), &d).unwrap().encode(enc).len();
        println!(
            "{name:12} {enc:?}: {n} B, published {published} B, ratio {:.4}",
            n as f64 / published as f64
        );
    }
}
