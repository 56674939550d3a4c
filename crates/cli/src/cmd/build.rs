//! `protobench build [SERVER...]`: run each server's manifest `build`
//! commands in its directory (all servers when none is named).
//!
//! Exit codes: 0 every build succeeded, 1 a build failed or its toolchain is
//! missing, 2 unknown server.

use std::path::PathBuf;

use crate::exit::Exit;
use protobench_runner::manifest::Manifest;
use std::process::{Command, ExitCode};

/// Build reference servers from their manifests.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  protobench build            # every server with a build step\n  protobench build go java-spring"
)]
pub(crate) struct Args {
    /// Servers to build (default: all with a build).
    servers: Vec<String>,
    /// Directory of server manifests.
    #[arg(long, env = "PROTOBENCH_SERVERS_DIR")]
    servers_dir: Option<PathBuf>,
}

/// Runs `protobench build`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let catalog = super::common::catalog(args.servers_dir.as_deref());
    let names: Vec<String> = if args.servers.is_empty() {
        catalog
            .servers
            .values()
            .filter(|m| !m.build.is_empty())
            .map(|m| m.name.clone())
            .collect()
    } else {
        args.servers.clone()
    };
    let mut failed = 0;
    for name in &names {
        let Some(m) = catalog.servers.get(name) else {
            eprintln!("error: no server `{name}` (servers: {})", catalog.names().join(", "));
            super::common::hint_repository(&catalog);
            return Ok(ExitCode::from(Exit::Usage));
        };
        if m.build.is_empty() {
            println!("{name}: nothing to build");
            continue;
        }
        if let Err(err) = build_one(m, false) {
            eprintln!("{err}");
            failed += 1;
        }
    }
    Ok(if failed > 0 {
        ExitCode::from(Exit::Failed)
    } else {
        ExitCode::from(Exit::Success)
    })
}

/// Runs one server's build commands in its directory. With `quiet_stdout`,
/// progress and the commands' output go to stderr (stdout stays free for
/// `listening` lines, as `serve --server` needs).
pub(crate) fn build_one(m: &Manifest, quiet_stdout: bool) -> Result<(), String> {
    let name = &m.name;
    let missing = m.missing_toolchain();
    if !missing.is_empty() {
        return Err(format!(
            "{name}: cannot build: {} not found on PATH (toolchain in {}/manifest.toml)",
            missing.join(", "),
            m.dir.display()
        ));
    }
    for argv in &m.build {
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]).current_dir(&m.dir);
        if quiet_stdout {
            eprintln!("{name}: {}", argv.join(" "));
            cmd.stdout(std::process::Stdio::from(std::io::stderr()));
        } else {
            println!("{name}: {}", argv.join(" "));
        }
        match cmd.status() {
            Ok(s) if s.success() => {}
            Ok(s) => {
                return Err(format!(
                    "{name}: `{}` failed ({s}) in {}",
                    argv.join(" "),
                    m.dir.display()
                ));
            }
            Err(e) => return Err(format!("{name}: cannot run `{}` in {}: {e}", argv[0], m.dir.display())),
        }
    }
    Ok(())
}
