//! One module per subcommand.

pub(crate) mod build;
pub(crate) mod compare;
pub(crate) mod contract;
pub(crate) mod load;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod runs;
pub(crate) mod serve;
pub(crate) mod servers;
pub(crate) mod show;
pub(crate) mod verify;

use std::path::PathBuf;

use anyhow::Context as _;

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
