//! `protobench run [PRESET]`: resolve a preset into a plan, measure it with
//! the built-in or manifest servers through a runner session (which stores
//! every measurement as it is taken), then print the table and write the
//! HTML report.
//!
//! Exit codes: 0 every measurement taken, 1 some measurements failed (server
//! did not start, failed verification, crashed), 2 invalid preset or usage,
//! 3 runtime failure (database unusable, ...), 4 every measurement taken but
//! a threshold failed, 130 interrupted (resume with `--resume RUN`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use protobench_model::run::{RunRecord, RunStatus};
use protobench_results::store::DEFAULT_DB;
use protobench_runner::agents::coordinator::Coordinator;
use protobench_runner::engine::{AgentsEngine, LoadEngine};
use protobench_runner::lookup;
use protobench_runner::manifest::Catalog;
use protobench_runner::orchestrate::RunOptions;
use protobench_runner::plan::Plan;
use protobench_runner::preset::{CommandLine, Context, Overrides};
use protobench_runner::session::{Finished, Resumed, Session, SessionError, Unsaved};
use protobench_runner::units::{CpuSet, parse_duration};
use tokio_util::sync::CancellationToken;

use super::common::{catalog, git_commit, hint_repository, repo_dir, write_html};
use crate::exit::Exit;

/// Run a preset (default: quick) and report it.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  protobench run\n  protobench run presets/grpcbench.toml --repetitions 5 --db results.db\n  protobench run quick --threshold 'p99<5ms' --threshold 'error_rate<0.1%'   # exit 4 if one fails\n  protobench run --resume 3\n  protobench run berg2023 --until-decided --budget 40m   # rounds until every claim is decided\n  protobench run bolanowski2022 --claims-only --until-decided   # only the points its claims read\n  protobench run --list"
)]
pub(crate) struct Args {
    /// Preset name (a file in the presets directory, else the built-in preset; see --list) or path to a preset file.
    preset: Option<String>,
    /// Results database.
    #[arg(long, default_value = DEFAULT_DB)]
    db: PathBuf,
    /// Finish an interrupted run: measure what it is missing.
    #[arg(long, value_name = "RUN", conflicts_with = "preset")]
    resume: Option<i64>,
    /// Directory for the HTML report (default: protobench-report/run-<ID>).
    #[arg(long, short = 'o', value_name = "DIR")]
    out: Option<PathBuf>,
    /// Do not write the HTML report.
    #[arg(long)]
    no_report: bool,
    /// Override the preset's measured duration of each point (e.g. 1s).
    #[arg(long, value_parser = parse_duration_arg)]
    duration: Option<Duration>,
    /// Override the preset's warm-up (e.g. 0s).
    #[arg(long, value_parser = parse_duration_arg)]
    warmup: Option<Duration>,
    /// Override the preset's repetitions.
    #[arg(long)]
    repetitions: Option<u32>,
    /// Run the preset on these servers instead of its own (comma-separated,
    /// e.g. go,python:flask); checked like the preset's `servers`.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    servers: Option<Vec<String>>,
    /// Replace the preset's protocols (comma-separated, e.g. rest,grpc).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    protocols: Option<Vec<String>>,
    /// Replace the preset's workloads (comma-separated, e.g. inventory.s,echo.8k).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    workloads: Option<Vec<String>>,
    /// Multiply every warm-up, measured window and search step by this
    /// (0.1 = a tenth); the report records the scale.
    #[arg(long, value_name = "SCALE")]
    time_scale: Option<f64>,
    #[arg(long = "threshold", value_name = "GATE", help = super::threshold::HELP)]
    thresholds: Vec<String>,
    /// Add rounds of 3 interleaved repetitions while a claim of the
    /// preset's study is undecided (its direction), within --budget.
    #[arg(long)]
    until_decided: bool,
    /// With --until-decided: the run's measuring time at most [default: 45m].
    #[arg(long, value_parser = parse_duration_arg, requires = "until_decided")]
    budget: Option<Duration>,
    /// Measure only the points the preset's claims read (a study whose
    /// claims compare a few points of a large matrix); the report notes how
    /// many were left out.
    #[arg(long)]
    claims_only: bool,
    /// Follow the run on a live page served by this binary at ADDR (default
    /// 127.0.0.1:0, any free port; the address is printed); after the run it
    /// serves the finished report until Ctrl-C. Read-only.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:0")]
    web: Option<std::net::SocketAddr>,
    /// With --web on an address other than loopback: allow it, and require
    /// the one-time token printed at start on every request.
    #[arg(long, requires = "web")]
    web_public: bool,
    /// With --web: a stored run (id or `latest`) to draw behind the live
    /// curves, with a running verdict per point (faster, slower, within the noise).
    #[arg(long, value_name = "RUN", requires = "web")]
    baseline: Option<String>,
    /// The database of --baseline (default: --db).
    #[arg(long, value_name = "DB", requires = "baseline")]
    baseline_db: Option<PathBuf>,
    /// Print the resolved plan and exit without measuring.
    #[arg(long)]
    dry_run: bool,
    /// List the presets (those of the presets directory and the built-in
    /// ones) and exit.
    #[arg(long, conflicts_with_all = ["preset", "resume"])]
    list: bool,
    /// Directory of presets (default: $PROTOBENCH_PRESETS_DIR, the repository's presets/, ./presets);
    /// a file there wins over the built-in preset of its name.
    #[arg(long, env = "PROTOBENCH_PRESETS_DIR")]
    presets_dir: Option<PathBuf>,
    /// Directory of server manifests (default: $PROTOBENCH_SERVERS_DIR, the repository's servers/, ./servers).
    #[arg(long, env = "PROTOBENCH_SERVERS_DIR")]
    servers_dir: Option<PathBuf>,
    #[command(flatten)]
    coordinator: super::agent::CoordinatorArgs,
    /// With agents: the servers listen on this address of this host (one
    /// the agents reach) instead of 127.0.0.1; needed when an agent is not
    /// on this host's loopback.
    #[arg(long, value_name = "IP")]
    server_address: Option<std::net::IpAddr>,
}

/// `--until-decided` without `--budget`.
const DEFAULT_BUDGET: Duration = Duration::from_secs(45 * 60);

fn parse_duration_arg(s: &str) -> Result<Duration, String> {
    parse_duration(s)
}

/// Runs `protobench run`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.list {
        return list(&args);
    }
    let catalog = catalog(args.servers_dir.as_deref());
    // The baseline first: a wrong one fails before a run is created.
    let baseline = match read_baseline(&args) {
        Ok(b) => b,
        Err(code) => return Ok(code),
    };
    // 1. The session: a new run from a preset, or the stored run to resume.
    let mut agents = None;
    let mut session = match args.resume {
        Some(id) => {
            if !command_line(&args).is_empty() {
                eprintln!(
                    "error: --resume continues the stored plan: --duration, --warmup, --repetitions, --time-scale, --servers, --protocols, --workloads, --threshold and --agents cannot be changed (the token and --server-address can)"
                );
                return Ok(ExitCode::from(Exit::Usage));
            }
            let resumed = match Session::resume(&args.db, id) {
                // Another process measures it: say who, nothing else.
                Err(SessionError::Lock(e)) => {
                    eprintln!("error: {e}");
                    return Ok(ExitCode::from(Exit::Runtime));
                }
                other => other.with_context(|| format!("opening run {id} to resume it"))?,
            };
            match resumed {
                Resumed::AlreadyComplete => {
                    eprintln!("run {id} is already complete");
                    return Ok(ExitCode::from(Exit::Success));
                }
                Resumed::Session(s) => *s,
            }
        }
        None => {
            let plan = match new_plan(&args, &catalog) {
                Ok(plan) => plan,
                Err(code) => return Ok(code),
            };
            if args.dry_run {
                println!("{}", serde_json::to_string_pretty(&plan)?);
                return Ok(ExitCode::from(Exit::Success));
            }
            // An emulated network this machine cannot apply, or agents
            // without their token, fail before the run exists.
            if let Err(code) = check_networks(&plan) {
                return Ok(code);
            }
            agents = match coordinator(&args, &plan) {
                Ok(c) => c,
                Err(code) => return Ok(code),
            };
            // The database before anything starts: locked or unwritable fails now.
            Session::start(plan, &args.db, &catalog, git_commit()).context("opening the results database")?
        }
    };
    for run in session.abandoned() {
        eprintln!(
            "note: run {run} was left `running` by a protobench process that is gone: marked interrupted{}",
            if *run == session.run_id() {
                String::new()
            } else {
                format!(
                    " (finish it with `protobench run --resume {run} --db {}`)",
                    args.db.display()
                )
            }
        );
    }
    if args.resume.is_some() {
        if let Err(code) = check_networks(session.plan()) {
            return Ok(code);
        }
        agents = match coordinator(&args, session.plan()) {
            Ok(c) => c,
            Err(code) => return Ok(code),
        };
    }
    announce(session.plan(), &catalog);
    // 2. Pin the generator before any runtime thread exists.
    if let Some(w) = session.pin_generator() {
        eprintln!("warning: {w}");
    }
    // The live page, if asked for, before the first measurement.
    let web = match args.web {
        Some(addr) => match crate::live_page::WebView::start(
            addr,
            args.web_public,
            &session.plan().preset,
            session.run_id(),
            baseline,
        ) {
            Ok(w) => {
                w.live.report_so_far(report_so_far(args.db.clone(), session.run_id()));
                Some(w)
            }
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(Exit::Usage));
            }
        },
        None => None,
    };
    let started = Instant::now();
    let finished = measure(
        &mut session,
        &catalog,
        web.as_ref().map(|w| w.live.clone()),
        agents,
        args.server_address,
    )?;
    // 3. Table and report from the database (what was stored is what is shown).
    let code = report(&mut session, &finished, &args, started)?;
    if let Some(web) = web {
        serve_report(web, &mut session, &finished);
    }
    Ok(code)
}

/// `--baseline RUN` (in `--baseline-db`, else `--db`) read for the live page.
fn read_baseline(args: &Args) -> Result<Option<crate::live_page::Baseline>, ExitCode> {
    let Some(run) = &args.baseline else {
        return Ok(None);
    };
    let db = args.baseline_db.as_ref().unwrap_or(&args.db);
    let read = || -> anyhow::Result<_> {
        let store = super::common::open_read(db)?;
        let id = super::show::run_id(&store, run)?;
        Ok(store.load_run(id)?)
    };
    match read() {
        Ok(r) => Ok(Some(crate::live_page::Baseline::of(&r))),
        Err(e) => {
            eprintln!("error: --baseline {run} (in {}): {e:#}", db.display());
            Err(ExitCode::from(Exit::Usage))
        }
    }
}

/// The live page's report of run `id` so far: read from the database (a
/// reader beside the run's one writer) and rendered when a page asks;
/// `None` until a measurement is stored.
fn report_so_far(db: std::path::PathBuf, id: i64) -> crate::live_page::SoFar {
    Box::new(move || {
        let run = super::common::open_read(&db).ok()?.load_run(id).ok()?;
        if run.measurements.is_empty() {
            return None;
        }
        Some(protobench_results::html::render(
            &run,
            &protobench_results::html::charts(&run),
        ))
    })
}

/// `--web` after the run: how it ended and its report, until Ctrl-C.
fn serve_report(web: crate::live_page::WebView, session: &mut Session, finished: &Finished) {
    let line = format!(
        "run {} {}: {} measurements ({} failed)",
        session.run_id(),
        finished.status.name(),
        finished.outcome.measured,
        finished.outcome.failed
    );
    let html = session
        .record()
        .ok()
        .map(|r| protobench_results::html::render(&r, &protobench_results::html::charts(&r)));
    web.serve_report_until_stopped(&line, html);
}

/// `--list`: one line per preset: name, where it is read from, description.
fn list(args: &Args) -> anyhow::Result<ExitCode> {
    use std::io::Write as _;
    let presets = repo_dir("presets", args.presets_dir.as_deref());
    let mut out = std::io::stdout().lock();
    for p in lookup::list(presets.as_deref()) {
        let source = match &p.source {
            lookup::Source::File(path) => path.display().to_string(),
            lookup::Source::BuiltIn => "built in".to_owned(),
        };
        writeln!(out, "{:<18} {source:<30} {}", p.name, p.description)?;
    }
    Ok(ExitCode::from(Exit::Success))
}

/// The plan of a new run: the preset with the command line's changes, in
/// one conversion (`preset::resolve_command`). Errors are printed here; the
/// exit code is returned.
fn new_plan(args: &Args, catalog: &Catalog) -> Result<Plan, ExitCode> {
    let ctx = Context {
        catalog: catalog.clone(),
        cpus: CpuSet::available(),
    };
    let name = args.preset.clone().unwrap_or_else(|| "quick".into());
    let presets = repo_dir("presets", args.presets_dir.as_deref());
    lookup::find_command(&name, presets.as_deref(), &ctx, &command_line(args)).map_err(|e| {
        eprintln!("error: {e}");
        if let lookup::FindError::Invalid(p) = &e
            && p.issues
                .iter()
                .any(|i| i.key.starts_with("servers") || i.key.starts_with("--servers"))
        {
            hint_repository(catalog);
        }
        ExitCode::from(Exit::Usage)
    })
}

/// What the command line changes in the preset.
fn command_line(args: &Args) -> CommandLine {
    CommandLine {
        lists: Overrides {
            servers: args.servers.clone(),
            protocols: args.protocols.clone(),
            workloads: args.workloads.clone(),
        },
        time_scale: args.time_scale,
        duration: args.duration,
        warmup: args.warmup,
        repetitions: args.repetitions,
        thresholds: args.thresholds.clone(),
        until_decided: args.until_decided.then(|| args.budget.unwrap_or(DEFAULT_BUDGET)),
        claims_only: args.claims_only,
        agents: (!args.coordinator.agents.is_empty()).then(|| args.coordinator.agents.clone()),
    }
}

/// The coordinator of a run on agents (the plan's, which `--agents`
/// replaced), its token read now, and the servers' listen address; `None`
/// when the run generates its load itself. Errors are printed here and
/// the exit code (2) returned, before anything starts.
fn coordinator(args: &Args, plan: &Plan) -> Result<Option<Coordinator>, ExitCode> {
    let usage = |e: String| {
        eprintln!("error: {e}");
        ExitCode::from(Exit::Usage)
    };
    let Some(c) = args.coordinator.coordinator(&plan.agents).map_err(usage)? else {
        return match args.server_address {
            Some(ip) => Err(usage(format!(
                "--server-address {ip}: applies to a run on agents (give --agents or a preset's `agents`)"
            ))),
            None => Ok(None),
        };
    };
    if args.server_address.is_none()
        && let Some(far) = c.agents.iter().find(|a| !protobench_runner::agents::on_loopback(a))
    {
        return Err(usage(format!(
            "agent {far} is not on this host's loopback, and the servers listen on 127.0.0.1 where it cannot reach them: give --server-address IP (an address of this host the agents reach; docs/distributed.md)"
        )));
    }
    Ok(Some(c))
}

/// Every emulated network of the plan can be applied on this machine
/// (docs/network.md); otherwise each reason is printed and the exit code
/// (2) returned.
fn check_networks(plan: &Plan) -> Result<(), ExitCode> {
    let unusable = protobench_runner::orchestrate::netrun::check_plan(plan);
    for e in &unusable {
        eprintln!("error: {e}");
    }
    if unusable.is_empty() {
        Ok(())
    } else {
        Err(ExitCode::from(Exit::Usage))
    }
}

/// The plan's notes, and servers whose toolchain is missing.
fn announce(plan: &Plan, catalog: &Catalog) {
    for n in &plan.notes {
        eprintln!("note: {n}");
    }
    for (name, m) in &catalog.servers {
        if plan.groups.iter().any(|g| &g.server == name) {
            let missing = m.missing_toolchain();
            if !missing.is_empty() {
                eprintln!(
                    "warning: server `{name}` needs {} on PATH ({}/manifest.toml): its points will be marked failed",
                    missing.join(", "),
                    m.dir.display()
                );
            }
        }
    }
}

/// Measures the session on a runtime sized for the generator's CPUs, with
/// the live view and Ctrl-C/SIGTERM handling.
/// With `agents`, every point's load comes from them (`AgentsEngine`);
/// the servers are still started, exposed and verified here.
fn measure(
    session: &mut Session,
    catalog: &Catalog,
    web: Option<std::sync::Arc<crate::live_page::Live>>,
    agents: Option<Coordinator>,
    server_host: Option<std::net::IpAddr>,
) -> anyhow::Result<Finished> {
    let workers = session.plan().generator_cpus.as_ref().map_or(2, |c| c.len().max(2));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let exe = std::env::current_exe().context("finding this executable")?;
    let contract = super::common::contract_dir();
    let dataset = contract.join("data/dataset.json");
    let work_dir = std::env::temp_dir().join(format!("protobench-run-{}-{}", std::process::id(), session.run_id()));
    let mut opts = RunOptions::new(exe.clone(), dataset.is_file().then_some(dataset), work_dir.clone());
    // Every server ends with this process, however it ends.
    opts.guard = Some(exe);
    opts.server_host = server_host;
    let engine = LoadEngine {
        contract_dir: contract,
        commit: git_commit(),
    };
    let cancel = CancellationToken::new();
    let mut signals = {
        let _runtime = rt.enter();
        super::common::ShutdownSignals::install()?
    };
    let started = Instant::now();
    let finished = rt.block_on(async {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let view = tokio::spawn(live::render(rx, started));
        // With --web, every event passes the live page first (it never waits).
        let tx = match web {
            None => tx,
            Some(page) => {
                let (tee, mut events) = tokio::sync::mpsc::unbounded_channel();
                tokio::spawn(async move {
                    while let Some(e) = events.recv().await {
                        page.on(&e);
                        let _ = tx.send(e);
                    }
                });
                tee
            }
        };
        {
            let cancel = cancel.clone();
            tokio::spawn(async move {
                if signals.recv().await.is_ok() {
                    cancel.cancel();
                }
            });
        }
        let finished = match agents {
            None => session.execute(catalog, &engine, &opts, Some(tx), cancel.clone()).await,
            Some(coordinator) => {
                let engine = AgentsEngine {
                    coordinator,
                    local: engine,
                };
                session.execute(catalog, &engine, &opts, Some(tx), cancel.clone()).await
            }
        };
        let _ = view.await;
        finished
    });
    let _ = std::fs::remove_dir_all(&work_dir);
    Ok(finished)
}

/// Prints what could not be stored, the table, warnings and the summary
/// line, writes the HTML report, and returns the exit code.
fn report(session: &mut Session, finished: &Finished, args: &Args, started: Instant) -> anyhow::Result<ExitCode> {
    let run_id = session.run_id();
    let outcome = &finished.outcome;
    if let Some(unsaved) = &finished.unsaved {
        eprintln!(
            "error: {} measurement(s) could not be written to {}: {}",
            outcome.unsaved.len(),
            args.db.display(),
            outcome.save_error.as_deref().unwrap_or("unknown error")
        );
        match unsaved {
            Unsaved::File(p) => {
                eprintln!("       they are saved in {} (JSON: plan and measurements)", p.display());
                eprintln!(
                    "       run {run_id} is incomplete: once the database can take them, `protobench import {} --db {}` stores them (or `protobench run --resume {run_id} --db {}` measures them again)",
                    p.display(),
                    args.db.display(),
                    args.db.display()
                );
            }
            Unsaved::Text(text) => {
                eprintln!("       no file could be written either; the measurements follow on standard output");
                eprintln!(
                    "       run {run_id} is incomplete: `protobench run --resume {run_id} --db {}` measures them again",
                    args.db.display()
                );
                println!("{text}");
            }
        }
    }
    if let Some(e) = &finished.status_error {
        eprintln!("warning: the run's status could not be recorded: {e}");
    }
    let record = session.record().with_context(|| format!("reading run {run_id} back"))?;
    print!("{}", protobench_results::report::text_table(&record));
    print!("{}", protobench_results::relative::text(&record));
    print!("{}", protobench_results::report::findings_text(&record));
    for w in &record.warnings {
        eprintln!("warning: {w}");
    }
    println!(
        "\nrun {run_id} {}: {} measurements in {:.0} s ({} failed); database {}",
        finished.status.name(),
        outcome.measured,
        started.elapsed().as_secs_f64(),
        outcome.failed,
        args.db.display()
    );
    if !args.no_report {
        let dir = args
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("protobench-report/run-{run_id}")));
        match write_html(&record, &dir) {
            Ok(path) => println!("report: {}", path.display()),
            Err(e) => eprintln!("warning: report not written: {e:#}"),
        }
    }
    // An interrupted run is not judged: its missing points would fail.
    let gates = if finished.status == RunStatus::Interrupted {
        ExitCode::from(Exit::Success)
    } else {
        thresholds(session, &record)
    };
    if !outcome.unsaved.is_empty() {
        return Ok(ExitCode::from(Exit::Runtime));
    }
    if finished.status == RunStatus::Interrupted {
        eprintln!(
            "interrupted: {} measurement(s) left; finish with `protobench run --resume {run_id} --db {}`",
            record.missing().len(),
            args.db.display()
        );
        return Ok(ExitCode::from(Exit::Interrupted));
    }
    if finished.status_error.is_some() {
        return Ok(ExitCode::from(Exit::Runtime));
    }
    Ok(if outcome.failed > 0 {
        ExitCode::from(Exit::Failed)
    } else {
        gates
    })
}

/// Checks the plan's thresholds at every point (the session stores their
/// outcomes with the run), prints the table, and returns the exit code
/// they call for.
fn thresholds(session: &mut Session, record: &RunRecord) -> ExitCode {
    let (outcomes, not_stored) = session.judge_thresholds(record);
    if outcomes.is_empty() {
        return ExitCode::from(Exit::Success);
    }
    print!("\n{}", protobench_model::threshold::table(&outcomes));
    if let Some(e) = not_stored {
        eprintln!("warning: the thresholds' outcomes could not be stored: {e}");
    }
    super::threshold::exit_code(&outcomes)
}

/// The live terminal view: a progress bar with ETA, the current point and its
/// live rate and p99 on a TTY (indicatif); one line per measurement otherwise.
///
/// The rate shown is never stale: it is the last closed second's while a
/// measured window runs, the finished measurement's (marked so) after it,
/// and none while a server starts, an engine run warms up or connects.
/// (indicatif's own `{per_sec}` would be an average over the bar's life.)
mod live {
    use std::io::IsTerminal as _;
    use std::time::{Duration, Instant};

    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    use protobench_model::format::{fmt_ns, fmt_rate};
    use protobench_runner::engine::Event;
    use protobench_runner::orchestrate::RunEvent;
    use tokio::sync::mpsc::UnboundedReceiver;

    pub(super) async fn render(mut rx: UnboundedReceiver<RunEvent>, started: Instant) {
        let tty = std::io::stderr().is_terminal();
        let bar = if tty {
            ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr())
        } else {
            ProgressBar::hidden()
        };
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {prefix}  {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        if tty {
            bar.enable_steady_tick(Duration::from_millis(200));
        }
        let mut message = Message::default();
        let mut todo = 0;
        let mut estimate = 0.0;
        // ETA: the plan's estimate until a measurement finished, then the
        // measured pace.
        let eta = |bar: &ProgressBar, todo: u32, estimate: f64| {
            let done = bar.position() as f64;
            let per = if done > 0.0 {
                started.elapsed().as_secs_f64() / done
            } else {
                estimate / f64::from(todo.max(1))
            };
            let left = (f64::from(todo) - done).max(0.0) * per;
            bar.set_prefix(format!("ETA {}m{:02}s", (left / 60.0) as u64, (left % 60.0) as u64));
        };
        while let Some(e) = rx.recv().await {
            if let Some(m) = message.on(&e) {
                bar.set_message(m);
            }
            match e {
                RunEvent::Begin {
                    todo: t,
                    total,
                    estimate_s,
                } => {
                    // An --until-decided round begins again: its
                    // measurements come after those already taken.
                    todo = bar.position() as u32 + t;
                    estimate = estimate_s;
                    bar.set_length(u64::from(todo));
                    eta(&bar, todo, estimate);
                    if !tty {
                        eprintln!("measuring {t} of {total} measurements (about {:.0} s)", estimate_s);
                    }
                }
                RunEvent::ServerFailed { server, reason } => {
                    bar.suspend(|| eprintln!("server {server}: {reason}"));
                }
                RunEvent::PointFinished {
                    rate,
                    failure,
                    label: finished,
                    repetition,
                    ..
                } => {
                    bar.inc(1);
                    eta(&bar, todo, estimate);
                    if !tty {
                        let done = bar.position();
                        let what = match (rate, failure) {
                            (_, Some(f)) => format!("FAILED: {f}"),
                            (Some(r), None) => format!("{}/s", fmt_rate(r)),
                            (None, None) => "-".into(),
                        };
                        eprintln!(
                            "[{done}/{todo} {:>4.0}s] {finished} #{repetition}: {what}",
                            started.elapsed().as_secs_f64()
                        );
                    }
                }
                RunEvent::Warning(w) => bar.suspend(|| eprintln!("warning: {w}")),
                RunEvent::Link(link) => bar.suspend(|| eprintln!("link {}", link.summary_line())),
                RunEvent::Notice(n) => bar.suspend(|| eprintln!("warning: {n}")),
                RunEvent::Round(line) => bar.suspend(|| eprintln!("note: {line}")),
                RunEvent::ServerStarting { .. }
                | RunEvent::ServerReady { .. }
                | RunEvent::WarmingUp { .. }
                | RunEvent::PointStarted { .. }
                | RunEvent::Engine(_)
                | RunEvent::Measured(_) => {}
            }
        }
        bar.finish_and_clear();
    }

    /// The bar's message, from the events: `None` when an event leaves it as is.
    #[derive(Debug, Default)]
    pub(super) struct Message {
        /// The current measurement: `label #repetition`.
        label: String,
    }

    impl Message {
        pub(super) fn on(&mut self, e: &RunEvent) -> Option<String> {
            match e {
                RunEvent::ServerStarting { server, repetition } => {
                    Some(format!("starting server {server} (repetition {repetition})"))
                }
                RunEvent::PointStarted { repetition, label, .. } => {
                    self.label = format!("{label} #{repetition}");
                    Some(self.label.clone())
                }
                // A new engine run (a warm-up, a search step, the measured
                // run): no second of it has closed yet.
                RunEvent::Engine(Event::Started { .. }) => Some(format!("{}: starting", self.label)),
                RunEvent::Engine(Event::Progress {
                    rate, p99_ns, errors, ..
                }) => {
                    let err = if *errors > 0 {
                        format!(" errors {errors}")
                    } else {
                        String::new()
                    };
                    Some(format!(
                        "{}: {}/s p99 {}{err} (last second)",
                        self.label,
                        fmt_rate(*rate),
                        fmt_ns(*p99_ns as f64)
                    ))
                }
                RunEvent::WarmingUp { second, rate, steady } => Some(format!(
                    "{}: warming up {second} s, {}/s (last second){}",
                    self.label,
                    fmt_rate(*rate),
                    if *steady { ", steady" } else { "" }
                )),
                RunEvent::PointFinished { rate, failure, .. } => Some(match (rate, failure) {
                    (_, Some(_)) => format!("{}: failed", self.label),
                    (Some(r), None) => format!("{}: measured {}/s", self.label, fmt_rate(*r)),
                    (None, None) => format!("{}: done", self.label),
                }),
                RunEvent::Begin { .. }
                | RunEvent::ServerReady { .. }
                | RunEvent::ServerFailed { .. }
                | RunEvent::Warning(_)
                | RunEvent::Notice(_)
                | RunEvent::Round(_)
                | RunEvent::Link(_)
                | RunEvent::Engine(Event::Interval { .. })
                | RunEvent::Measured(_) => None,
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use protobench_model::load::TimelinePoint;

        fn progress(rate: f64) -> RunEvent {
            RunEvent::Engine(Event::Progress {
                elapsed_ns: 1_000_000_000,
                calls: rate as u64,
                errors: 0,
                rate,
                p99_ns: 2_000_000,
                second: TimelinePoint {
                    second: 0,
                    successes: rate as u64,
                    errors: 0,
                    p50_ns: 1_000_000,
                    p95_ns: 1_500_000,
                    p99_ns: 2_000_000,
                    users: 1,
                },
            })
        }

        fn point(label: &str) -> RunEvent {
            RunEvent::PointStarted {
                point: 0,
                repetition: 1,
                label: label.into(),
                done: 0,
                todo: 2,
            }
        }

        /// Issue #13: the bar never shows a rate that is not the current one.
        #[test]
        fn the_rate_shown_is_the_last_seconds_then_the_measurements_then_none() {
            let mut m = Message::default();
            let started = RunEvent::Engine(Event::Started {
                at: Instant::now(),
                connections: 1,
                threads: 1,
            });
            let finished = |rate| RunEvent::PointFinished {
                point: 0,
                label: "a".into(),
                repetition: 1,
                rate: Some(rate),
                failure: None,
            };
            let steps: Vec<(RunEvent, &str)> = vec![
                (point("a"), "a #1"),
                (started.clone(), "a #1: starting"),
                (
                    RunEvent::WarmingUp {
                        second: 3,
                        rate: 8_000.0,
                        steady: false,
                    },
                    "a #1: warming up 3 s, 8,000/s (last second)",
                ),
                (
                    RunEvent::WarmingUp {
                        second: 10,
                        rate: 11_000.0,
                        steady: true,
                    },
                    "a #1: warming up 10 s, 11,000/s (last second), steady",
                ),
                (started.clone(), "a #1: starting"),
                (progress(12_000.0), "a #1: 12,000/s p99 2.00ms (last second)"),
                (progress(9_000.0), "a #1: 9,000/s p99 2.00ms (last second)"),
                (finished(10_500.0), "a #1: measured 10,500/s"),
                (point("b"), "b #1"),
                (started, "b #1: starting"),
            ];
            for (e, want) in steps {
                assert_eq!(m.on(&e).as_deref(), Some(want), "after {e:?}");
            }
            assert_eq!(m.on(&RunEvent::Warning("w".into())), None);
        }
    }
}
