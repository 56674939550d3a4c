//! `protobench servers`: the servers a run can use, from their manifests,
//! with whether their toolchain is installed and whether they are built.

use crate::exit::Exit;
use std::path::PathBuf;
use std::process::ExitCode;

use protobench_model::format::TextTable;

/// List the reference servers and whether they can run here.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  protobench servers\n  protobench servers --servers-dir ../my-servers")]
pub(crate) struct Args {
    /// Directory of server manifests.
    #[arg(long, env = "PROTOBENCH_SERVERS_DIR")]
    servers_dir: Option<PathBuf>,
}

/// Runs `protobench servers`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let catalog = super::common::catalog(args.servers_dir.as_deref());
    let mut table = TextTable::new(["server", "language", "protocols", "status"]).without_rule();
    for (name, m) in &catalog.servers {
        let missing = m.missing_toolchain();
        let status = if m.is_embedded() {
            "built in".to_string()
        } else if !missing.is_empty() {
            format!("toolchain missing: {}", missing.join(", "))
        } else if let Some(bin) = m.missing_start_binary() {
            format!("not built ({} missing): protobench build {name}", bin.display())
        } else {
            "ready".to_string()
        };
        table.row([
            name.clone(),
            m.language.clone(),
            protobench_contract::protocol::names(&m.protocols, ","),
            status,
        ]);
    }
    print!("{}", table.render());
    for b in &catalog.broken {
        println!("invalid manifest: {b}");
    }
    if super::common::repo_dir("servers", args.servers_dir.as_deref()).is_none() {
        eprintln!("note: no servers directory found: {}", super::common::NEEDS_REPOSITORY);
    }
    Ok(ExitCode::from(Exit::Success))
}
