//! `protobench serve`: the built-in reference servers as a process.
//!
//! Configuration is the server environment contract (`PROTOBENCH_*`, see
//! `contract/README.md`); flags override the variables they name. The tokio
//! runtime is built here, sized by `--workers` / `PROTOBENCH_WORKERS`.

use std::io::Write as _;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use crate::exit::Exit;
use anyhow::Context as _;
use protobench_contract::{Dataset, Protocol};
use protobench_server::{ServerConfig, TlsFiles, config::parse_addr};

/// Flags of `protobench serve`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  protobench serve --rest 127.0.0.1:8080 --grpc 127.0.0.1:50051\n  protobench serve --rest 127.0.0.1:0 --soap 127.0.0.1:0   # any free ports, printed on start"
)]
pub(crate) struct Args {
    /// Serve `rest` (JSON over HTTP/1.1) on ADDR (ip:port, port 0 = any free port) [env: PROTOBENCH_REST_ADDR]
    #[arg(long, value_name = "ADDR", value_parser = parse_addr)]
    rest: Option<SocketAddr>,
    /// Serve `rest-h2` (JSON over HTTP/2) on ADDR [env: PROTOBENCH_REST_H2_ADDR]
    #[arg(long = "rest-h2", value_name = "ADDR", value_parser = parse_addr)]
    rest_h2: Option<SocketAddr>,
    /// Serve `grpc` on ADDR [env: PROTOBENCH_GRPC_ADDR]
    #[arg(long, value_name = "ADDR", value_parser = parse_addr)]
    grpc: Option<SocketAddr>,
    /// Serve `soap` on ADDR [env: PROTOBENCH_SOAP_ADDR]
    #[arg(long, value_name = "ADDR", value_parser = parse_addr)]
    soap: Option<SocketAddr>,
    /// Serve `graphql` (POST /graphql, HTTP/1.1) on ADDR [env: PROTOBENCH_GRAPHQL_ADDR]
    #[arg(long, value_name = "ADDR", value_parser = parse_addr)]
    graphql: Option<SocketAddr>,
    /// Serve `graphql-get` (the same GraphQL handler; persisted queries by GET) on ADDR [env: PROTOBENCH_GRAPHQL_GET_ADDR]
    #[arg(long = "graphql-get", value_name = "ADDR", value_parser = parse_addr)]
    graphql_get: Option<SocketAddr>,
    /// Serve `connect` (Connect unary, protobuf or JSON, HTTP/1.1) on ADDR [env: PROTOBENCH_CONNECT_ADDR]
    #[arg(long, value_name = "ADDR", value_parser = parse_addr)]
    connect: Option<SocketAddr>,
    /// Serve `connect-json` (the same Connect handler) on ADDR [env: PROTOBENCH_CONNECT_JSON_ADDR]
    #[arg(long = "connect-json", value_name = "ADDR", value_parser = parse_addr)]
    connect_json: Option<SocketAddr>,
    /// Serve `grpc-web` (binary or text, HTTP/1.1) on ADDR [env: PROTOBENCH_GRPC_WEB_ADDR]
    #[arg(long = "grpc-web", value_name = "ADDR", value_parser = parse_addr)]
    grpc_web: Option<SocketAddr>,
    /// Serve `grpc-web-text` (the same gRPC-Web service) on ADDR [env: PROTOBENCH_GRPC_WEB_TEXT_ADDR]
    #[arg(long = "grpc-web-text", value_name = "ADDR", value_parser = parse_addr)]
    grpc_web_text: Option<SocketAddr>,
    /// Serve every listener with TLS; without a certificate, generate a self-signed one
    #[arg(long)]
    tls: bool,
    /// PEM certificate chain (implies --tls) [env: PROTOBENCH_TLS_CERT]
    #[arg(long, value_name = "PEM", requires = "key")]
    cert: Option<PathBuf>,
    /// PEM private key (implies --tls) [env: PROTOBENCH_TLS_KEY]
    #[arg(long, value_name = "PEM", requires = "cert")]
    key: Option<PathBuf>,
    /// Tokio worker threads [env: PROTOBENCH_WORKERS; default: the CPUs available]
    #[arg(long, value_name = "N")]
    workers: Option<NonZeroUsize>,
    /// Run another reference server from servers/NAME/manifest.toml (built first)
    /// with the same flags and environment instead of the built-in one
    #[arg(long, value_name = "NAME")]
    server: Option<String>,
}

/// Serves until SIGTERM or SIGINT, then drains calls in flight (up to 10 s)
/// and exits 0. With no address from flags or environment, serves every
/// protocol on 127.0.0.1 with free ports.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut config = match ServerConfig::from_env() {
        Ok(config) => config,
        Err(err) => {
            eprintln!("error: {err}");
            return Ok(ExitCode::from(Exit::Usage));
        }
    };
    for (protocol, addr) in [
        (Protocol::Rest, args.rest),
        (Protocol::RestH2, args.rest_h2),
        (Protocol::Grpc, args.grpc),
        (Protocol::Soap, args.soap),
        (Protocol::Graphql, args.graphql),
        (Protocol::GraphqlGet, args.graphql_get),
        (Protocol::Connect, args.connect),
        (Protocol::ConnectJson, args.connect_json),
        (Protocol::GrpcWeb, args.grpc_web),
        (Protocol::GrpcWebText, args.grpc_web_text),
    ] {
        if addr.is_some() {
            config.set_addr(protocol, addr);
        }
    }
    if Protocol::ALL.iter().all(|&p| config.addr(p).is_none()) {
        let any_port = SocketAddr::from(([127, 0, 0, 1], 0));
        for protocol in Protocol::ALL {
            config.set_addr(protocol, Some(any_port));
        }
    }
    if let Some(workers) = args.workers {
        config.workers = workers.get();
    }
    if let (Some(cert), Some(key)) = (args.cert, args.key) {
        config.tls = Some(TlsFiles { cert, key });
    }
    let mut generated_dir = None;
    if args.tls && config.tls.is_none() {
        let dir = std::env::temp_dir().join(format!("protobench-tls-{}", std::process::id()));
        let files = protobench_server::generate_self_signed(&dir).context("generating a self-signed certificate")?;
        println!(
            "generated certificate cert={} key={}",
            files.cert.display(),
            files.key.display()
        );
        config.tls = Some(files);
        generated_dir = Some(dir);
    }
    if let Some(name) = args.server.as_deref().filter(|n| *n != "rust") {
        let served = serve_other(name, &config);
        if let Some(dir) = generated_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        return served;
    }
    let dataset = match load_dataset() {
        Ok(dataset) => dataset,
        Err(err) => {
            eprintln!("error: {err:#}");
            return Ok(ExitCode::from(Exit::Usage));
        }
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.workers)
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let served = runtime.block_on(async {
        let mut signals = super::common::ShutdownSignals::install()?;
        let server = protobench_server::start(config, Arc::new(dataset))
            .await
            .context("starting the servers")?;
        let mut out = std::io::stdout().lock();
        for listener in server.listeners() {
            writeln!(out, "{listener}")?;
        }
        out.flush()?;
        drop(out);
        signals.recv().await?;
        server.shutdown().await;
        anyhow::Ok(())
    });
    if let Some(dir) = generated_dir {
        let _ = std::fs::remove_dir_all(dir);
    }
    served?;
    Ok(ExitCode::from(Exit::Success))
}

/// `PROTOBENCH_DATASET`, else the repository's `contract/data/dataset.json`,
/// else the same data generated in memory (what `dataset.json` is written from).
fn load_dataset() -> anyhow::Result<Dataset> {
    if let Some(path) = std::env::var_os("PROTOBENCH_DATASET").filter(|p| !p.is_empty()) {
        return Ok(protobench_server::load_dataset(&PathBuf::from(path))?);
    }
    let path = super::common::contract_dir().join("data/dataset.json");
    if path.is_file() {
        Ok(protobench_server::load_dataset(&path)?)
    } else {
        Ok(Dataset::generate())
    }
}

/// `serve --server NAME`: builds the server from its manifest (in
/// `$PROTOBENCH_SERVERS_DIR`, default the repository's `servers/`), then runs its
/// start command with the resolved `PROTOBENCH_*` environment. Its stdout
/// (the `listening` lines) passes through unchanged; SIGTERM/SIGINT are
/// forwarded and the server gets 15 s to drain before it is killed.
fn serve_other(name: &str, config: &ServerConfig) -> anyhow::Result<ExitCode> {
    let servers_dir = std::env::var_os("PROTOBENCH_SERVERS_DIR").map(PathBuf::from);
    let catalog = super::common::catalog(servers_dir.as_deref());
    let Some(manifest) = catalog.servers.get(name) else {
        eprintln!("error: no server `{name}` (servers: {})", catalog.names().join(", "));
        super::common::hint_repository(&catalog);
        return Ok(ExitCode::from(Exit::Usage));
    };
    for protocol in Protocol::ALL {
        let explicit = std::env::var_os(protocol.addr_env()).is_some();
        if explicit && config.addr(protocol).is_some() && !manifest.protocols.contains(&protocol) {
            eprintln!(
                "error: server `{name}` does not serve {} (it serves {})",
                protocol.name(),
                protobench_contract::protocol::names(&manifest.protocols, ", ")
            );
            return Ok(ExitCode::from(Exit::Usage));
        }
    }
    if let Err(err) = super::build::build_one(manifest, true) {
        eprintln!("error: {err}");
        return Ok(ExitCode::from(Exit::Failed));
    }
    let exe = std::env::current_exe().context("finding this executable")?;
    let argv = manifest.start_command(&exe);
    let mut cmd = tokio::process::Command::new(&argv[0]);
    cmd.args(&argv[1..]).current_dir(&manifest.dir).kill_on_drop(true);
    cmd.envs(&manifest.env);
    for protocol in Protocol::ALL {
        cmd.env_remove(protocol.addr_env());
        if let Some(addr) = config.addr(protocol)
            && manifest.protocols.contains(&protocol)
        {
            cmd.env(protocol.addr_env(), addr.to_string());
        }
    }
    cmd.env("PROTOBENCH_WORKERS", config.workers.to_string());
    if let Some(tls) = &config.tls {
        cmd.env("PROTOBENCH_TLS_CERT", &tls.cert)
            .env("PROTOBENCH_TLS_KEY", &tls.key);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    runtime.block_on(async {
        let mut signals = super::common::ShutdownSignals::install()?;
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting `{}` in {}", argv.join(" "), manifest.dir.display()))?;
        let status = tokio::select! {
            status = child.wait() => status?,
            signal = signals.recv() => {
                signal?;
                if let Some(pid) = child.id() {
                    let pid = nix::unistd::Pid::from_raw(pid as i32);
                    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
                }
                match tokio::time::timeout(std::time::Duration::from_secs(15), child.wait()).await {
                    Ok(status) => status?,
                    Err(_) => {
                        eprintln!("error: server `{name}` did not stop within 15 s; killing it");
                        child.kill().await?;
                        child.wait().await?
                    }
                }
            }
        };
        Ok(match status.code() {
            Some(0) => ExitCode::from(Exit::Success),
            Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
            None => ExitCode::from(1),
        })
    })
}
