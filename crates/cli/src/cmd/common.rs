//! What several commands share: where the repository's directories are,
//! the server catalog, the results database for reading, the HTML report,
//! and catching Ctrl-C/SIGTERM.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use protobench_model::run::RunRecord;
use protobench_results::store::{Store, StoreError};
use protobench_runner::manifest::Catalog;

/// A repository directory: the one this binary was built from, else `./NAME`.
pub(crate) fn repo_dir(name: &str, given: Option<&Path>) -> PathBuf {
    if let Some(d) = given {
        return d.to_owned();
    }
    let built = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(name);
    if built.is_dir() { built } else { PathBuf::from(name) }
}

/// The catalog of servers from `--servers-dir` or the default places.
pub(crate) fn catalog(servers_dir: Option<&Path>) -> Catalog {
    Catalog::load(Some(&repo_dir("servers", servers_dir)))
}

/// The git commit this binary was built from, when the source tree is here.
pub(crate) fn git_commit() -> Option<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(dir)
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

/// Opens the results database for reading.
pub(crate) fn open_read(db: &Path) -> anyhow::Result<Store> {
    Store::open_read_only(db).map_err(|e: StoreError| anyhow::Error::from(e))
}

/// Writes the HTML report and charts; returns the page's path.
pub(crate) fn write_html(record: &RunRecord, dir: &Path) -> anyhow::Result<PathBuf> {
    let written = protobench_results::html::write_report(record, dir)
        .with_context(|| format!("writing the report to {}", dir.display()))?;
    for e in &written.png_errors {
        eprintln!("warning: PNG not written for chart {e}");
    }
    Ok(written.html)
}

/// The repository's `contract/` directory: `$PROTOBENCH_CONTRACT_DIR`, else
/// the one this binary was built from, else `./contract`.
pub(crate) fn contract_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PROTOBENCH_CONTRACT_DIR") {
        return PathBuf::from(dir);
    }
    let built = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../contract");
    if built.is_dir() {
        built
    } else {
        PathBuf::from("contract")
    }
}

/// SIGINT (Ctrl-C) and SIGTERM, caught from the moment this is created: it
/// must exist before anything tells a supervisor that we are ready (the
/// `listening` lines, a spawned child), or a prompt SIGTERM would meet the
/// default disposition and kill the process with no clean exit.
pub(crate) struct ShutdownSignals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl ShutdownSignals {
    /// Installs the handlers; call inside the tokio runtime.
    pub(crate) fn install() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                term: signal(SignalKind::terminate()).context("listening for SIGTERM")?,
                int: signal(SignalKind::interrupt()).context("listening for SIGINT")?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// Resolves on the first SIGINT or SIGTERM.
    pub(crate) async fn recv(&mut self) -> anyhow::Result<()> {
        #[cfg(unix)]
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
        #[cfg(not(unix))]
        tokio::signal::ctrl_c().await.context("listening for Ctrl-C")?;
        Ok(())
    }
}
