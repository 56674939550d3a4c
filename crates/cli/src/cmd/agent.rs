//! `protobench agent`: a load generator driven by a coordinator
//! (`protobench load --agents`), see docs/distributed.md.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use protobench_model::format::error_chain;
use protobench_runner::agents::{TOKEN_ENV, agent, check_token, tls};
use tokio_util::sync::CancellationToken;

use crate::exit::Exit;

/// Flags of `protobench agent`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    protobench agent --listen 10.0.0.2:7070 --token-file /run/secrets/agent-token\n  \
    protobench agent --listen 10.0.0.2:7070 --token-file token --tls-cert agent.pem --tls-key agent.key --client-ca ca.pem\n  \
    PROTOBENCH_AGENT_TOKEN=... protobench agent --listen 0.0.0.0:7070")]
pub(crate) struct Args {
    /// Listen on ADDR (ip:port; port 0 = any free port, printed on start). Only there.
    #[arg(long, value_name = "ADDR")]
    listen: SocketAddr,
    /// The shared token coordinators must present (at least 16 characters);
    /// without it, PROTOBENCH_AGENT_TOKEN. There is no default.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Serve TLS with this certificate chain (PEM); needs --tls-key. The
    /// token is still required.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// With --tls-cert: accept only coordinators whose client certificate
    /// this CA (PEM) signed (mutual TLS). Without it, the agent says so on
    /// start: coordinators are then authenticated by the token alone.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    client_ca: Option<PathBuf>,
}

/// The coordinator's side of mutual TLS with its agents (`load --agents`,
/// `run --agents`): flattened into each command that drives agents.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct AgentTlsArgs {
    /// With --agents: speak TLS to the agents and accept only agent
    /// certificates this CA (PEM) signed, for the name each is dialled by.
    #[arg(long, value_name = "FILE")]
    agent_ca: Option<PathBuf>,
    /// With --agent-ca: present this client certificate (PEM) to the agents
    /// (for agents started with --client-ca); needs --agent-key.
    #[arg(long, value_name = "FILE", requires_all = ["agent_ca", "agent_key"])]
    agent_cert: Option<PathBuf>,
    /// The private key of --agent-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "agent_cert")]
    agent_key: Option<PathBuf>,
}

impl AgentTlsArgs {
    /// The runner's TLS settings for dialling agents; `None` without
    /// --agent-ca (clear text). An unusable file is named with its flag.
    pub(crate) fn client_tls(&self) -> Result<Option<tls::ClientTls>, String> {
        let Some(agent_ca) = self.agent_ca.clone() else {
            return Ok(None);
        };
        let files = tls::CoordinatorTlsFiles {
            agent_ca,
            client: self.agent_cert.clone().zip(self.agent_key.clone()),
        };
        tls::client_config(&files)
            .map(|c| Some(std::sync::Arc::new(c)))
            .map_err(|e| error_chain(&e))
    }
}

/// The agent's TLS settings from its flags; `None` without --tls-cert.
fn server_tls(args: &Args) -> Result<Option<tls::ServerTls>, String> {
    let (Some(cert), Some(key)) = (args.tls_cert.clone(), args.tls_key.clone()) else {
        return Ok(None);
    };
    let files = tls::AgentTlsFiles {
        cert,
        key,
        client_ca: args.client_ca.clone(),
    };
    tls::server_config(&files)
        .map(|c| Some(std::sync::Arc::new(c)))
        .map_err(|e| error_chain(&e))
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
    #[command(flatten)]
    pub(crate) tls: AgentTlsArgs,
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
            let given = [
                ("--agent-token-file", self.agent_token_file.as_ref()),
                ("--agent-ca", self.tls.agent_ca.as_ref()),
                ("--agent-cert", self.tls.agent_cert.as_ref()),
                ("--agent-key", self.tls.agent_key.as_ref()),
            ];
            return match given.iter().find_map(|(flag, f)| f.map(|f| (flag, f))) {
                Some((flag, f)) => Err(format!(
                    "{flag} {}: there are no agents to drive (give --agents ADDR,ADDR)",
                    f.display()
                )),
                None => Ok(None),
            };
        }
        let token = token(self.agent_token_file.as_ref(), "--agent-token-file")?;
        let tls = self.tls.client_tls()?;
        Ok(Some(protobench_runner::agents::coordinator::Coordinator {
            agents: agents.to_vec(),
            token,
            max_clock_uncertainty: self.max_clock_uncertainty,
            start_ahead: self.start_ahead,
            agent_wait: self.agent_wait,
            tls,
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
    let (token, tls) = match token(args.token_file.as_ref(), "--token-file").and_then(|t| Ok((t, server_tls(&args)?))) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(Exit::Usage));
        }
    };
    if tls.is_some() && args.client_ca.is_none() {
        eprintln!(
            "warning: --tls-cert without --client-ca: the agent encrypts and proves its identity, but does not \
             authenticate coordinators by certificate; the token alone does"
        );
    }
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
        let transport = match (&tls, &args.client_ca) {
            (None, _) => "h2c",
            (Some(_), None) => "tls",
            (Some(_), Some(_)) => "mtls",
        };
        println!(
            "listening addr={addr} agent protobench={} transport={transport}",
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
            tls,
        };
        agent::serve(listener, config, cancel).await.context("serving")?;
        Ok(ExitCode::SUCCESS)
    })
}
