//! `protobench agent`: a load generator driven by a coordinator
//! (`protobench load --agents`), see docs/distributed.md.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use protobench_runner::agents::{TOKEN_ENV, agent, check_token};
use tokio_util::sync::CancellationToken;

use crate::exit::Exit;

/// Flags of `protobench agent`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    protobench agent --listen 10.0.0.2:7070 --token-file /run/secrets/agent-token\n  \
    PROTOBENCH_AGENT_TOKEN=... protobench agent --listen 0.0.0.0:7070")]
pub(crate) struct Args {
    /// Listen on ADDR (ip:port; port 0 = any free port, printed on start). Only there.
    #[arg(long, value_name = "ADDR")]
    listen: SocketAddr,
    /// The shared token coordinators must present (at least 16 characters);
    /// without it, PROTOBENCH_AGENT_TOKEN. There is no default.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
}

/// The coordinator's flags, shared by `load` and `run` (flattened into
/// both): where the agents are and how to drive them. One place, so that a
/// flag added here reaches both commands.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct CoordinatorArgs {
    /// Run the load on these agents (`protobench agent`), comma-separated
    /// host:port: this process coordinates them, splits the load and merges
    /// their histograms (docs/distributed.md). `run`: replaces the preset's `agents`.
    #[arg(long, value_name = "ADDR,ADDR", value_delimiter = ',')]
    pub(crate) agents: Vec<String>,
    /// With agents: the file holding the agents' shared token (else PROTOBENCH_AGENT_TOKEN).
    #[arg(long, value_name = "FILE")]
    pub(crate) agent_token_file: Option<PathBuf>,
    /// With agents: refuse to start when an agent's clock offset is known
    /// less precisely than this (half the best of 8 round trips).
    #[arg(long, value_parser = super::common::duration_arg, default_value = "10ms")]
    pub(crate) max_clock_uncertainty: Duration,
    /// With agents: how far ahead of the orders the common start is set
    /// (an agent not connected by then is refused for the run).
    #[arg(long, value_parser = super::common::duration_arg, default_value = "3s")]
    pub(crate) start_ahead: Duration,
    /// With agents: keep trying to reach agents that are not up yet for
    /// this long (pods starting) before giving up.
    #[arg(long, value_parser = super::common::duration_arg, default_value = "0s")]
    pub(crate) agent_wait: Duration,
}

impl CoordinatorArgs {
    /// The coordinator of `agents` (the flag's, else those of a preset),
    /// with the token read now; `None` without agents. A token file given
    /// without any agent is refused (it would be ignored).
    pub(crate) fn coordinator(
        &self,
        agents: &[String],
    ) -> Result<Option<protobench_runner::agents::coordinator::Coordinator>, String> {
        let agents = if self.agents.is_empty() { agents } else { &self.agents };
        if agents.is_empty() {
            return match &self.agent_token_file {
                Some(f) => Err(format!(
                    "--agent-token-file {}: there are no agents to drive (give --agents ADDR,ADDR)",
                    f.display()
                )),
                None => Ok(None),
            };
        }
        let token = token(self.agent_token_file.as_ref(), "--agent-token-file")?;
        Ok(Some(protobench_runner::agents::coordinator::Coordinator {
            agents: agents.to_vec(),
            token,
            max_clock_uncertainty: self.max_clock_uncertainty,
            start_ahead: self.start_ahead,
            agent_wait: self.agent_wait,
        }))
    }
}

/// The token from `--token-file` or the environment; none is a usage error.
pub(crate) fn token(file: Option<&PathBuf>, flag: &str) -> Result<String, String> {
    let raw = match file {
        Some(f) => std::fs::read_to_string(f).map_err(|e| format!("{flag} {}: {e}", f.display()))?,
        None => std::env::var(TOKEN_ENV)
            .map_err(|_| format!("no agent token: give {flag} FILE or set {TOKEN_ENV} (there is no default)"))?,
    };
    check_token(&raw)
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let token = match token(args.token_file.as_ref(), "--token-file") {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(Exit::Usage));
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("listening on {}", args.listen))?;
        let addr = listener.local_addr().context("reading the bound address")?;
        // As `serve` says it: one line on stdout, for scripts and tests.
        println!(
            "listening addr={addr} agent protobench={}",
            protobench_runner::agents::VERSION
        );
        let _ = std::io::Write::flush(&mut std::io::stdout());
        let cancel = CancellationToken::new();
        let mut signals = super::common::ShutdownSignals::install()?;
        let on_signal = cancel.clone();
        tokio::spawn(async move {
            if signals.recv().await.is_ok() {
                on_signal.cancel();
            }
        });
        let config = agent::AgentConfig {
            token,
            commit: super::common::git_commit(),
        };
        agent::serve(listener, config, cancel).await.context("serving")?;
        Ok(ExitCode::SUCCESS)
    })
}
