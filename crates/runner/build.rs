//! Embeds every preset of the repository's `presets/` directory
//! (`$OUT_DIR/presets.rs`: name and text, sorted by name), so that the
//! binary runs them wherever it is installed.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let dir = manifest.join("../../presets");
    println!("cargo:rerun-if-changed=build.rs");
    // A directory: cargo scans it for any change (a preset added or edited).
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut presets: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| {
            let path = e.ok()?.path();
            let name = path.file_stem()?.to_str()?.to_owned();
            (path.extension()? == "toml").then_some((name, path))
        })
        .collect();
    presets.sort();
    assert!(
        presets.iter().any(|(n, _)| n == "quick"),
        "{} has no quick.toml",
        dir.display()
    );
    let mut out = String::from(
        "/// Every preset of `presets/`: name and text, sorted by name.\npub const BUILT_IN: &[(&str, &str)] = &[\n",
    );
    for (name, path) in &presets {
        let path = path
            .canonicalize()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        writeln!(out, "    ({name:?}, include_str!({:?})),", path.display().to_string()).expect("writing to a String");
    }
    out.push_str("];\n");
    let target = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("presets.rs");
    std::fs::write(&target, out).unwrap_or_else(|e| panic!("writing {}: {e}", target.display()));
}
