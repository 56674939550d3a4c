//! The preset parser (protobench-runner's preset::resolve, TOML text):
//! parse, validate and resolve against the repository's server manifests;
//! every issue it reports points inside the text.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use protobench_runner::manifest::Catalog;
use protobench_runner::preset::{self, Context};
use protobench_runner::units::CpuSet;

fn context() -> &'static Context {
    static CONTEXT: OnceLock<Context> = OnceLock::new();
    CONTEXT.get_or_init(|| {
        let servers = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../servers");
        Context {
            catalog: Catalog::load(Some(&servers)),
            cpus: CpuSet::parse("0-3").expect("a CPU list"),
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Err(e) = preset::resolve(text, "fuzz.toml", context()) {
        let lines = text.lines().count().max(1);
        for issue in &e.issues {
            assert!(issue.line <= lines + 1, "issue {issue:?} past the text's {lines} lines");
        }
        let _ = e.to_string();
    }
});
