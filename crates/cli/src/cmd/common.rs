//! What several commands share: where the repository's directories are,
//! the server catalog, the results database for reading, the HTML report,
//! and catching Ctrl-C/SIGTERM.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use protobench_model::run::RunRecord;
use protobench_results::store::{Store, StoreError};
use protobench_runner::manifest::Catalog;

/// The environment variable naming a protobench checkout to use.
pub(crate) const HOME_ENV: &str = "PROTOBENCH_HOME";

/// What to say when something needs the repository and none was found.
pub(crate) const NEEDS_REPOSITORY: &str = "servers other than the built-in `rust` need a protobench checkout (their source and manifests): run inside one, set PROTOBENCH_HOME to it, or give --servers-dir (PROTOBENCH_SERVERS_DIR) its servers/ directory";

/// Whether `dir` is the root of a protobench checkout.
fn is_repository(dir: &Path) -> bool {
    dir.join("contract/workloads.json").is_file() && dir.join("presets").is_dir() && dir.join("servers").is_dir()
}

/// The protobench checkout found at run time, never a path fixed at build
/// time: `$PROTOBENCH_HOME`; else the first directory, walking up from the
/// current one, that is a checkout; else the same walking up from this
/// executable (`target/release/protobench` of a checkout). `None` for an
/// installed binary used elsewhere: it then runs on what is built in.
pub(crate) fn repository() -> Option<PathBuf> {
    static FOUND: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            find_repository(
                std::env::var_os(HOME_ENV).map(PathBuf::from),
                std::env::current_dir().ok(),
                std::env::current_exe().ok().and_then(|e| e.canonicalize().ok()),
            )
        })
        .clone()
}

/// [`repository`] from its inputs: `home` as given, else a checkout
/// containing `cwd` or `exe`.
fn find_repository(home: Option<PathBuf>, cwd: Option<PathBuf>, exe: Option<PathBuf>) -> Option<PathBuf> {
    if let Some(home) = home.filter(|h| !h.as_os_str().is_empty()) {
        return Some(home);
    }
    let exe_dir = exe.and_then(|e| e.parent().map(Path::to_owned));
    [cwd, exe_dir]
        .into_iter()
        .flatten()
        .find_map(|start| start.ancestors().find(|d| is_repository(d)).map(Path::to_owned))
}

/// A repository directory: `given` (a flag or its environment variable),
/// else the found checkout's `NAME`, else `./NAME`; `None` when none of
/// these exists.
pub(crate) fn repo_dir(name: &str, given: Option<&Path>) -> Option<PathBuf> {
    if let Some(d) = given {
        return Some(d.to_owned());
    }
    repository()
        .map(|r| r.join(name))
        .filter(|d| d.is_dir())
        .or_else(|| Some(PathBuf::from(name)).filter(|d| d.is_dir()))
}

/// The catalog of servers from `--servers-dir` or the default places (just
/// the built-in server when there is none).
pub(crate) fn catalog(servers_dir: Option<&Path>) -> Catalog {
    Catalog::load(repo_dir("servers", servers_dir).as_deref())
}

/// After an unknown server: when only the built-in server is known, says
/// that the others need the repository and how to point at it.
pub(crate) fn hint_repository(catalog: &Catalog) {
    if catalog.servers.len() == 1 && catalog.servers.contains_key(protobench_runner::manifest::BUILTIN) {
        eprintln!("note: {NEEDS_REPOSITORY}");
    }
}

/// The git commit this binary was built from, recorded by build.rs.
pub(crate) fn git_commit() -> Option<String> {
    let commit = env!("PROTOBENCH_GIT_COMMIT");
    (commit != "unknown").then(|| commit.to_owned())
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
/// the found checkout's, else `./contract`. It may not exist (an installed
/// binary used elsewhere): the vectors and the data set are then generated
/// in memory, the same bytes `contract check` compares the files with.
pub(crate) fn contract_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PROTOBENCH_CONTRACT_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    repo_dir("contract", None).unwrap_or_else(|| PathBuf::from("contract"))
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

/// A duration flag of `load`, `verify` and the agents' flags:
/// `parse_duration`, at most
/// [`protobench_load::MAX_DURATION_NS`] (clap names the flag and the value).
pub(crate) fn duration_arg(s: &str) -> Result<std::time::Duration, String> {
    let max = std::time::Duration::from_nanos(protobench_load::MAX_DURATION_NS);
    match protobench_runner::units::parse_duration(s) {
        Ok(d) if d <= max => Ok(d),
        Ok(_) => Err(format!("must be {}", protobench_load::MAX_DURATION_TEXT)),
        Err(e) if e.ends_with("too long a duration") => Err(format!("must be {}", protobench_load::MAX_DURATION_TEXT)),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_is_found_from_the_current_directory_or_the_executable() {
        let root = tempfile::tempdir().unwrap();
        let repo = root.path().join("checkout");
        for d in ["presets", "servers", "contract", "crates/cli", "target/release"] {
            std::fs::create_dir_all(repo.join(d)).unwrap();
        }
        std::fs::write(repo.join("contract/workloads.json"), "[]").unwrap();
        let elsewhere = root.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let exe = repo.join("target/release/protobench");
        let installed = elsewhere.join("bin/protobench");

        // From a directory inside the checkout, wherever the binary is.
        let found = find_repository(None, Some(repo.join("crates/cli")), Some(installed.clone()));
        assert_eq!(found, Some(repo.clone()));
        // From anywhere, with the checkout's own target/release binary.
        assert_eq!(
            find_repository(None, Some(elsewhere.clone()), Some(exe)),
            Some(repo.clone())
        );
        // An installed binary used elsewhere: none.
        assert_eq!(
            find_repository(None, Some(elsewhere.clone()), Some(installed.clone())),
            None
        );
        // A directory with only some of the checkout's parts is not one.
        std::fs::remove_file(repo.join("contract/workloads.json")).unwrap();
        assert_eq!(find_repository(None, Some(repo.clone()), None), None);
        // PROTOBENCH_HOME wins; empty means unset.
        let home = Some(elsewhere.clone());
        assert_eq!(find_repository(home, Some(repo.clone()), None), Some(elsewhere.clone()));
        assert_eq!(
            find_repository(Some(PathBuf::new()), Some(elsewhere), Some(installed)),
            None
        );
    }
}
