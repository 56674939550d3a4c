//! `protobench run [PRESET]`: resolve a preset into a plan, measure it with
//! the built-in or manifest servers, store every measurement as it is taken,
//! then print the table and write the HTML report.
//!
//! Exit codes: 0 every measurement taken, 1 some measurements failed (server
//! did not start, failed verification, crashed), 2 invalid preset or usage,
//! 3 runtime failure (database unusable, ...), 130 interrupted (resume with
//! `--resume RUN`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use protobench_model::load::Environment;
use protobench_model::run::{RunEnvironment, RunRecord, RunStatus};
use protobench_model::time::now_rfc3339;
use protobench_results::store::{DEFAULT_DB, NewRun, Store, StoreError};
use protobench_runner::engine::LoadEngine;
use protobench_runner::isolation::{self, CgroupSupport};
use protobench_runner::manifest::Catalog;
use protobench_runner::orchestrate::{self, RunOptions};
use protobench_runner::plan::Plan;
use protobench_runner::preset::{self, Context};
use protobench_runner::units::{CpuSet, parse_duration};
use tokio_util::sync::CancellationToken;

/// The quick preset, built in so `protobench run` works outside the repository.
const QUICK: &str = include_str!("../../../../presets/quick.toml");

/// Run a preset (default: quick) and report it.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Preset name (looked up in the presets directory) or path to a preset file.
    preset: Option<String>,
    /// Results database.
    #[arg(long, default_value = DEFAULT_DB)]
    db: PathBuf,
    /// Finish an interrupted run: measure what it is missing.
    #[arg(long, value_name = "RUN", conflicts_with = "preset")]
    resume: Option<i64>,
    /// Directory for the HTML report (default: protobench-report/run-<ID>).
    #[arg(long)]
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
    /// Print the resolved plan and exit without measuring.
    #[arg(long)]
    dry_run: bool,
    /// Directory of presets (default: $PROTOBENCH_PRESETS_DIR, the repository's presets/, ./presets).
    #[arg(long, env = "PROTOBENCH_PRESETS_DIR")]
    presets_dir: Option<PathBuf>,
    /// Directory of server manifests (default: $PROTOBENCH_SERVERS_DIR, the repository's servers/, ./servers).
    #[arg(long, env = "PROTOBENCH_SERVERS_DIR")]
    servers_dir: Option<PathBuf>,
}

fn parse_duration_arg(s: &str) -> Result<Duration, String> {
    parse_duration(s)
}

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

fn git_commit() -> Option<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(dir)
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

/// Runs `protobench run`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let catalog = catalog(args.servers_dir.as_deref());
    let cpus = CpuSet::available();
    let ctx = Context {
        catalog: catalog.clone(),
        cpus: cpus.clone(),
    };

    // 1. The plan: from a preset, or from the stored run when resuming.
    let (mut plan, resume) = match args.resume {
        Some(id) => {
            let store = Store::open(&args.db).with_context(|| format!("opening run {id} to resume it"))?;
            let record = store.load_run(id)?;
            if record.status == RunStatus::Complete && record.missing().is_empty() {
                eprintln!("run {id} is already complete");
                return Ok(ExitCode::SUCCESS);
            }
            let plan: Plan =
                serde_json::from_value(record.plan.clone()).with_context(|| format!("reading the plan of run {id}"))?;
            (plan, Some(record))
        }
        None => {
            let name = args.preset.clone().unwrap_or_else(|| "quick".into());
            let presets = repo_dir("presets", args.presets_dir.as_deref());
            let path = if Path::new(&name).is_file() {
                PathBuf::from(&name)
            } else {
                presets.join(format!("{name}.toml"))
            };
            let result = if path.is_file() {
                preset::load(&path, &ctx)
            } else if name == "quick" {
                preset::resolve(QUICK, "presets/quick.toml (built in)", &ctx)
            } else {
                let known: Vec<String> = std::fs::read_dir(&presets)
                    .map(|d| {
                        let mut v: Vec<String> = d
                            .filter_map(|e| {
                                let p = e.ok()?.path();
                                if p.extension()? == "toml" {
                                    Some(p.file_stem()?.to_string_lossy().into_owned())
                                } else {
                                    None
                                }
                            })
                            .collect();
                        v.sort();
                        v
                    })
                    .unwrap_or_default();
                eprintln!(
                    "error: no preset `{name}` ({} does not exist; presets: {})",
                    path.display(),
                    if known.is_empty() {
                        "quick".into()
                    } else {
                        known.join(", ")
                    }
                );
                return Ok(ExitCode::from(2));
            };
            match result {
                Ok(plan) => (plan, None),
                Err(e) => {
                    eprintln!("error: invalid preset\n{e}");
                    return Ok(ExitCode::from(2));
                }
            }
        }
    };
    if resume.is_none() {
        if let Some(d) = args.duration {
            plan.duration_ns = d.as_nanos() as u64;
            plan.notes.push(format!("duration overridden to {d:?} (--duration)"));
        }
        if let Some(w) = args.warmup {
            plan.warmup_ns = w.as_nanos() as u64;
            plan.notes.push(format!("warm-up overridden to {w:?} (--warmup)"));
        }
        if let Some(r) = args.repetitions {
            if r == 0 {
                eprintln!("error: --repetitions must be at least 1");
                return Ok(ExitCode::from(2));
            }
            plan.repetitions = r;
            plan.notes
                .push(format!("repetitions overridden to {r} (--repetitions)"));
        }
    } else if args.duration.is_some() || args.warmup.is_some() || args.repetitions.is_some() {
        eprintln!(
            "error: --resume continues the stored plan: --duration, --warmup and --repetitions cannot be changed"
        );
        return Ok(ExitCode::from(2));
    }
    if args.dry_run {
        println!("{}", serde_json::to_string_pretty(&plan)?);
        return Ok(ExitCode::SUCCESS);
    }

    // 2. The database, before anything starts: locked or unwritable fails now.
    let mut store = Store::open(&args.db)
        .map_err(anyhow::Error::from)
        .context("opening the results database")?;
    let cgroups = CgroupSupport::detect();
    let mut isolation_notes = vec![
        format!(
            "server CPUs: {}; generator CPUs: {}",
            plan.server_cpus.as_ref().map_or("not pinned".into(), |c| c.to_string()),
            plan.generator_cpus
                .as_ref()
                .map_or("not pinned".into(), |c| c.to_string())
        ),
        cgroups.describe(),
    ];
    isolation_notes.extend(plan.notes.iter().cloned());
    let (run_id, todo) = match &resume {
        Some(record) => {
            store.set_status(record.id, RunStatus::Running, &now_rfc3339())?;
            (record.id, record.missing().into_iter().collect::<BTreeSet<_>>())
        }
        None => {
            let servers: BTreeSet<&str> = plan.groups.iter().map(|g| g.server.as_str()).collect();
            let environment = RunEnvironment {
                machine: Environment::detect(env!("CARGO_PKG_VERSION"), git_commit()),
                servers: servers
                    .iter()
                    .filter_map(|s| catalog.servers.get(*s))
                    .map(|m| m.info())
                    .collect(),
                isolation: isolation_notes.clone(),
            };
            let new = NewRun {
                preset: plan.preset.clone(),
                preset_path: plan.preset_path.clone(),
                plan: serde_json::to_value(&plan)?,
                repetitions: plan.repetitions,
                noise_threshold: plan.noise_threshold,
                environment,
                points: plan.points.clone(),
                started_at: now_rfc3339(),
            };
            let id = store.create_run(&new).context("recording the run")?;
            let todo = (1..=plan.repetitions)
                .flat_map(|r| plan.points.iter().map(move |p| (p.index, r)))
                .collect();
            (id, todo)
        }
    };
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

    // 3. Pin the generator before any runtime thread exists.
    if let Some(g) = &plan.generator_cpus
        && let Err(e) = isolation::pin_process(g)
    {
        let w = format!("generator not pinned: {e}");
        eprintln!("warning: {w}");
        let _ = store.add_warning(run_id, &w);
    }
    let workers = plan.generator_cpus.as_ref().map_or(2, |c| c.len().max(2));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let exe = std::env::current_exe().context("finding this executable")?;
    let contract = super::contract_dir();
    let dataset = contract.join("data/dataset.json");
    let work_dir = std::env::temp_dir().join(format!("protobench-run-{}-{run_id}", std::process::id()));
    let opts = RunOptions::new(exe, dataset.is_file().then_some(dataset), work_dir.clone());
    let engine = LoadEngine { contract_dir: contract };
    let cancel = CancellationToken::new();
    let started = Instant::now();

    let mut signals = {
        let _runtime = rt.enter();
        super::ShutdownSignals::install()?
    };
    let outcome = rt.block_on(async {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let view = tokio::spawn(live::render(rx, started));
        {
            let cancel = cancel.clone();
            tokio::spawn(async move {
                if signals.recv().await.is_ok() {
                    cancel.cancel();
                }
            });
        }
        let outcome = orchestrate::execute(
            &plan,
            &catalog,
            &engine,
            &mut store,
            run_id,
            &todo,
            &opts,
            Some(tx),
            cancel.clone(),
        )
        .await;
        let _ = view.await;
        outcome
    });
    let _ = std::fs::remove_dir_all(&work_dir);
    let status = outcome.status.unwrap_or(RunStatus::Failed);
    let status_saved = store.set_status(run_id, status, &now_rfc3339());

    // 4. Nothing measured is lost: what the database refused goes to a JSON file.
    if !outcome.unsaved.is_empty() {
        let dump = serde_json::json!({ "run": run_id, "plan": plan, "measurements": outcome.unsaved });
        let file = format!("protobench-run-{run_id}-unsaved.json");
        let mut candidates = vec![
            args.db
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .join(&file),
        ];
        candidates.push(std::env::temp_dir().join(&file));
        let text = serde_json::to_string_pretty(&dump)?;
        let saved = candidates.iter().find(|p| std::fs::write(p, &text).is_ok());
        eprintln!(
            "error: {} measurement(s) could not be written to {}: {}",
            outcome.unsaved.len(),
            args.db.display(),
            outcome.save_error.as_deref().unwrap_or("unknown error")
        );
        match saved {
            Some(p) => eprintln!("       they are saved in {} (JSON: plan and measurements)", p.display()),
            None => {
                eprintln!("       no file could be written either; the measurements follow on standard output");
                println!("{text}");
            }
        }
    }
    if let Err(e) = &status_saved {
        eprintln!("warning: the run's status could not be recorded: {e}");
    }

    // 5. Table and report from the database (what was stored is what is shown).
    let record = match store.load_run(run_id) {
        Ok(r) => r,
        Err(e) => bail!("reading run {run_id} back: {e}"),
    };
    print!("{}", protobench_results::report::text_table(&record));
    for w in &record.warnings {
        eprintln!("warning: {w}");
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "\nrun {run_id} {}: {} measurements in {:.0} s ({} failed); database {}",
        status.name(),
        outcome.measured,
        elapsed,
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
    if status == RunStatus::Interrupted {
        let missing = record.missing().len();
        eprintln!(
            "interrupted: {missing} measurement(s) left; finish with `protobench run --resume {run_id} --db {}`",
            args.db.display()
        );
        return Ok(ExitCode::from(130));
    }
    if !outcome.unsaved.is_empty() || status_saved.is_err() {
        return Ok(ExitCode::from(3));
    }
    Ok(if outcome.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
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

/// Maps store errors for messages (used by the reading commands).
pub(crate) fn open_read(db: &Path) -> anyhow::Result<Store> {
    Store::open_read_only(db).map_err(|e: StoreError| anyhow::Error::from(e))
}

/// The live terminal view: a progress bar with ETA, the current point and its
/// live rate and p99 on a TTY (indicatif); one line per measurement otherwise.
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
        let mut label = String::new();
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
            match e {
                RunEvent::Begin {
                    todo: t,
                    total,
                    estimate_s,
                } => {
                    todo = t;
                    estimate = estimate_s;
                    bar.set_length(t as u64);
                    eta(&bar, todo, estimate);
                    if !tty {
                        eprintln!("measuring {t} of {total} measurements (about {:.0} s)", estimate_s);
                    }
                }
                RunEvent::ServerStarting { server, repetition } => {
                    bar.set_message(format!("starting server {server} (repetition {repetition})"));
                }
                RunEvent::ServerFailed { server, reason } => {
                    bar.suspend(|| eprintln!("server {server}: {reason}"));
                }
                RunEvent::PointStarted {
                    repetition, label: l, ..
                } => {
                    label = format!("{l} #{repetition}");
                    bar.set_message(label.clone());
                }
                RunEvent::Engine(Event::Progress {
                    rate, p99_ns, errors, ..
                }) => {
                    let err = if errors > 0 {
                        format!(" errors {errors}")
                    } else {
                        String::new()
                    };
                    bar.set_message(format!(
                        "{label}: {}/s p99 {}{err}",
                        fmt_rate(rate),
                        fmt_ns(p99_ns as f64)
                    ));
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
                RunEvent::Engine(Event::Started { .. }) => {}
            }
        }
        bar.finish_and_clear();
    }
}
