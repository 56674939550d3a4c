//! Records the git commit this binary is built from (`PROTOBENCH_GIT_COMMIT`,
//! "unknown" outside a git checkout), so that a run can name it wherever the
//! binary is later copied or installed.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).current_dir(dir).output().ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-changed=build.rs");
    let commit = git(&dir, &["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    // Built again when HEAD moves: HEAD itself (a checkout), the branch it
    // names (a commit) and the packed refs (a gc).
    // (Only files that exist: a missing one would run this script every build.)
    let mut watched = Vec::new();
    if let Some(git_dir) = git(&dir, &["rev-parse", "--absolute-git-dir"]) {
        watched.push(PathBuf::from(git_dir).join("HEAD"));
    }
    if let Some(common) = git(&dir, &["rev-parse", "--path-format=absolute", "--git-common-dir"]) {
        let common = PathBuf::from(common);
        watched.push(common.join("packed-refs"));
        if let Some(branch) = git(&dir, &["symbolic-ref", "-q", "HEAD"]) {
            watched.push(common.join(branch));
        }
    }
    for path in watched.iter().filter(|p| p.is_file()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!("cargo:rustc-env=PROTOBENCH_GIT_COMMIT={commit}");
}
