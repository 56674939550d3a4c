//! `protobench report RUN --format html|md|json|csv [--out DIR]`: render a
//! stored run again, offline.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit::Exit;
use anyhow::Context as _;
use protobench_results::report;
use protobench_results::store::DEFAULT_DB;

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// Self-contained HTML page with SVG charts (+ charts/*.svg and *.png).
    Html,
    /// Markdown.
    Md,
    /// JSON: the run, every measurement and the aggregates.
    Json,
    /// CSV: one row per point with medians and intervals.
    Csv,
}

/// Render a stored run as HTML, Markdown, JSON or CSV.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  protobench report latest\n  protobench report 3 -O md > run-3.md\n  protobench report 3 --format csv | head"
)]
pub(crate) struct Args {
    /// Run id, or `latest`.
    run: String,
    /// Output format.
    #[arg(long, short = 'O', value_enum, default_value = "html")]
    format: Format,
    /// Output directory (HTML default: protobench-report/run-<ID>; other formats print to stdout without it).
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
    /// Results database.
    #[arg(long, default_value = DEFAULT_DB)]
    db: PathBuf,
    /// Serve the report as a page from this binary until Ctrl-C, on ADDR
    /// (default 127.0.0.1:0, any free port; the address is printed). Read-only.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:0")]
    web: Option<std::net::SocketAddr>,
    /// With --web on an address other than loopback: allow it, and require
    /// the one-time token printed at start on every request.
    #[arg(long, requires = "web")]
    web_public: bool,
}

/// Runs `protobench report`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let store = super::common::open_read(&args.db)?;
    let record = store.load_run(super::show::run_id(&store, &args.run)?)?;
    if let Some(addr) = args.web {
        return serve_web(record, addr, args.web_public);
    }
    let (text, file) = match args.format {
        Format::Html => {
            let dir = args
                .out
                .clone()
                .unwrap_or_else(|| PathBuf::from(format!("protobench-report/run-{}", record.id)));
            let path = super::common::write_html(&record, &dir)?;
            println!("{}", path.display());
            return Ok(ExitCode::from(Exit::Success));
        }
        Format::Md => (report::markdown(&record), "report.md"),
        Format::Json => (report::json(&record), "report.json"),
        Format::Csv => (report::csv(&record), "points.csv"),
    };
    match args.out {
        None => print!("{text}"),
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            let path = dir.join(file);
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
            println!("{}", path.display());
        }
    }
    Ok(ExitCode::from(Exit::Success))
}

/// `--web`: the stored report as a page until Ctrl-C.
fn serve_web(
    record: protobench_model::run::RunRecord,
    addr: std::net::SocketAddr,
    public: bool,
) -> anyhow::Result<ExitCode> {
    let access = crate::web::Access::for_address(addr, public).map_err(anyhow::Error::msg)?;
    let html = protobench_results::html::render(&record, &protobench_results::html::charts(&record));
    let page: std::sync::Arc<dyn crate::web::Site> = std::sync::Arc::new(crate::web::OnePage(html));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the page's runtime")?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("--web {addr}: cannot listen"))?;
        let bound = listener.local_addr().context("--web: the bound address")?;
        println!(
            "serving run {} at {} (read-only; Ctrl-C stops)",
            record.id,
            crate::web::url(bound, &access)
        );
        let stop = tokio_util::sync::CancellationToken::new();
        let server = tokio::spawn(crate::web::serve(listener, access, page, stop.clone()));
        let _ = tokio::signal::ctrl_c().await;
        stop.cancel();
        let _ = server.await;
        Ok(ExitCode::from(Exit::Success))
    })
}
