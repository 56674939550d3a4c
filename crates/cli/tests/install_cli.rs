//! The binary as installed (issue #13): a copy (or hard link) of it in a temporary
//! directory, run from another one with no `CARGO_*` or `PROTOBENCH_*`
//! variable, finds nothing of the source tree, and still
//!
//! - lists every preset (built in) and resolves them; names the way to the
//!   repository for servers other than the built-in one;
//! - runs the quick preset to the end (SQLite file and report in the current
//!   directory), the servers verified against the built-in vectors;
//! - verifies the built-in server on every protocol, checks a contract
//!   directory it is given, and refuses to guess one;
//! - prints completions for every shell and manual pages for every command;
//! - with `PROTOBENCH_HOME`, uses the checkout it names.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use protobench_results::store::Store;

/// The repository this test is built from (only the test reads it).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Every preset name of the repository's `presets/`.
fn repo_presets() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo().join("presets"))
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "toml").then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    names
}

/// A copy of the binary in a temporary directory, and an empty working
/// directory; neither is inside a checkout.
struct Installed {
    _bin_dir: tempfile::TempDir,
    exe: PathBuf,
    cwd: tempfile::TempDir,
}

impl Installed {
    fn new() -> Installed {
        let bin_dir = tempfile::tempdir().unwrap();
        let exe = bin_dir.path().join("protobench");
        // A hard link is a copy as far as the binary can tell (its path is
        // the link's) and costs no disk; a copy across file systems.
        if std::fs::hard_link(env!("CARGO_BIN_EXE_protobench"), &exe).is_err() {
            std::fs::copy(env!("CARGO_BIN_EXE_protobench"), &exe).unwrap();
        }
        let cwd = tempfile::tempdir().unwrap();
        for dir in [bin_dir.path(), cwd.path()] {
            assert!(
                !dir.ancestors().any(|d| d.join("contract/workloads.json").is_file()),
                "{} is inside a checkout: the test would prove nothing",
                dir.display()
            );
        }
        Installed {
            _bin_dir: bin_dir,
            exe,
            cwd,
        }
    }

    /// The command with a clean environment: no CARGO_*, no PROTOBENCH_*.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.exe);
        c.env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", self.cwd.path())
            .current_dir(self.cwd.path())
            .args(args)
            .stdin(Stdio::null());
        c
    }

    /// Runs to the end within `limit` (killed after it).
    fn run(&self, args: &[&str], limit: Duration) -> Output {
        output_within(self.cmd(args), limit)
    }
}

fn output_within(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        out.read_to_end(&mut s).unwrap();
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        err.read_to_end(&mut s).unwrap();
        s
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{cmd:?} still running after {limit:?}; stderr:\n{}",
                text(&err_reader.join().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const SHORT: Duration = Duration::from_secs(30);

#[test]
fn every_preset_is_built_in_and_other_servers_name_the_repository() {
    let pb = Installed::new();
    let out = pb.run(&["run", "--list"], SHORT);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    let names: Vec<&str> = listed.lines().map(|l| l.split_whitespace().next().unwrap()).collect();
    assert_eq!(names, repo_presets(), "{listed}");
    for line in listed.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields[1..3], ["built", "in"], "{line}");
    }
    assert!(listed.contains("Berg & Mebrahtu Redi 2023"), "descriptions: {listed}");

    // An unknown name lists the built-in presets.
    let out = pb.run(&["run", "nosuch"], SHORT);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!("error: no preset `nosuch` (presets: {})\n", repo_presets().join(", "))
    );

    // A study on its own servers: only the built-in one is here.
    let out = pb.run(&["run", "berg2023", "--dry-run"], SHORT);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("error: invalid preset\npresets/berg2023.toml (built in):")
            && err.contains("unknown `java-spring` (accepted: rust)")
            && err.contains(
                "note: servers other than the built-in `rust` need a protobench checkout (their source and manifests): run inside one, set PROTOBENCH_HOME to it, or give --servers-dir (PROTOBENCH_SERVERS_DIR) its servers/ directory"
            ),
        "{err}"
    );
    // The same study on the built-in server resolves from the built-in text.
    let out = pb.run(&["run", "berg2023", "--servers", "rust", "--dry-run"], SHORT);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["preset"], "berg2023");
    assert_eq!(plan["preset_path"], "presets/berg2023.toml (built in)");

    // `servers`: the built-in one, and why the others are missing.
    let out = pb.run(&["servers"], SHORT);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(stdout.lines().nth(1).unwrap().starts_with("rust "), "{stdout}");
    assert!(
        text(&out.stderr).starts_with("note: no servers directory found: servers other than"),
        "{}",
        text(&out.stderr)
    );
    let out = pb.run(&["build", "go"], SHORT);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("set PROTOBENCH_HOME"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn protobench_home_points_at_a_checkout() {
    let pb = Installed::new();
    let out = output_within(
        {
            let mut c = pb.cmd(&["servers"]);
            c.env("PROTOBENCH_HOME", repo());
            c
        },
        SHORT,
    );
    let stdout = text(&out.stdout);
    assert!(stdout.lines().any(|l| l.starts_with("go ")), "{stdout}");
    assert!(text(&out.stderr).is_empty(), "{}", text(&out.stderr));
    let out = output_within(
        {
            let mut c = pb.cmd(&["run", "--list"]);
            c.env("PROTOBENCH_HOME", repo());
            c
        },
        SHORT,
    );
    let listed = text(&out.stdout);
    let quick = listed.lines().find(|l| l.starts_with("quick ")).unwrap();
    assert!(
        quick.contains(&repo().join("presets/quick.toml").display().to_string()),
        "a file on disk wins: {quick}"
    );
}

#[test]
fn the_quick_preset_runs_to_the_end_from_an_empty_directory() {
    let pb = Installed::new();
    let started = Instant::now();
    let out = pb.run(
        &[
            "run",
            "quick",
            "--protocols",
            "rest,grpc",
            "--workloads",
            "inventory.xs",
            "--repetitions",
            "1",
            "--duration",
            "1s",
            "--warmup",
            "0s",
        ],
        Duration::from_secs(120),
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    eprintln!("quick run outside the repository: {:?}", started.elapsed());
    assert!(stdout.contains("run 1 complete: 2 measurements"), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l == "report: protobench-report/run-1/report.html"),
        "{stdout}"
    );
    let cwd = pb.cwd.path();
    assert!(cwd.join("protobench-report/run-1/report.html").is_file());
    let rec = Store::open_read_only(&cwd.join("protobench-results.db"))
        .unwrap()
        .load_run(1)
        .unwrap();
    assert_eq!(rec.preset_path.as_deref(), Some("presets/quick.toml (built in)"));
    assert_eq!(rec.measurements.len(), 2);
    for m in &rec.measurements {
        let r = m.result.as_ref().unwrap();
        assert!(r.successes > 0 && r.error_count() == 0, "{m:?}");
    }
    // The commit recorded at build time, not looked up in the build directory.
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(repo())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| text(&o.stdout).trim().to_owned());
    assert_eq!(rec.environment.machine.commit, head);
    let version = text(&pb.run(&["--version"], SHORT).stdout);
    assert_eq!(
        version.trim(),
        format!(
            "protobench {} (commit {})",
            env!("CARGO_PKG_VERSION"),
            head.as_deref().unwrap_or("unknown")
        )
    );
}

/// `serve` on every protocol from the copied binary; the child and the
/// addresses by protocol.
fn serve_all(pb: &Installed) -> (Child, Vec<(String, String)>) {
    let mut child = pb
        .cmd(&["serve", "--workers", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut addrs = Vec::new();
    while addrs.len() < protobench_contract::Protocol::ALL.len() {
        let Ok(line) = rx.recv_timeout(SHORT) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve printed no listeners");
        };
        let field = |name: &str| line.split(' ').find_map(|kv| kv.strip_prefix(name)).map(str::to_owned);
        if line.starts_with("listening ") {
            addrs.push((field("protocol=").unwrap(), field("addr=").unwrap()));
        }
    }
    (child, addrs)
}

#[test]
fn verify_and_contract_check_work_without_the_repository() {
    let pb = Installed::new();
    let (mut child, addrs) = serve_all(&pb);
    let mut failures = Vec::new();
    for (protocol, addr) in &addrs {
        let out = pb.run(&["verify", "--protocol", protocol, "--target", addr], SHORT);
        let stdout = text(&out.stdout);
        if out.status.code() != Some(0) || stdout.contains("cannot read the vectors") {
            failures.push(format!("{protocol}: {stdout}{}", text(&out.stderr)));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(addrs.len(), protobench_contract::Protocol::ALL.len());

    // The repository's files equal what the binary generates.
    let contract = repo().join("contract");
    let out = pb.run(&["contract", "check", "--dir", contract.to_str().unwrap()], SHORT);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stdout).starts_with("contract files up to date ("));
    // With no directory given and none found, nothing is guessed.
    let out = pb.run(&["contract", "check"], SHORT);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with("error: no contract directory to check (contract does not exist)"),
        "{}",
        text(&out.stderr)
    );
}

/// The subcommands `protobench --help` lists.
fn subcommands(pb: &Installed) -> Vec<String> {
    let help = text(&pb.run(&["--help"], SHORT).stdout);
    let names: Vec<String> = help
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter(|l| !l.starts_with("   "))
        .map(|l| l.split_whitespace().next().unwrap().to_owned())
        .filter(|n| n != "help")
        .collect();
    assert!(names.len() >= 14 && names.iter().any(|n| n == "man"), "{help}");
    names
}

#[test]
fn completions_name_every_subcommand() {
    let pb = Installed::new();
    let out = pb.run(&["completions", "bash"], SHORT);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let script = text(&out.stdout);
    for name in subcommands(&pb) {
        assert!(
            script.contains(&format!("protobench__{name})")) || script.contains(&format!("protobench,{name})")),
            "bash completion lacks `{name}`"
        );
    }
    assert!(script.contains("--time-scale"), "run's options too");
    let path = pb.cwd.path().join("protobench.bash");
    std::fs::write(&path, &script).unwrap();
    let syntax = output_within(
        {
            let mut c = Command::new("bash");
            c.arg("-n").arg(&path);
            c
        },
        SHORT,
    );
    assert!(syntax.status.success(), "bash -n: {}", text(&syntax.stderr));
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = pb.run(&["completions", shell], SHORT);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let s = text(&out.stdout);
        assert!(s.contains("protobench") && s.contains("completions"), "{shell}: {s}");
    }
    let out = pb.run(&["completions", "tcsh"], SHORT);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn man_pages_have_every_command_and_the_options_of_load() {
    let pb = Installed::new();
    let out = pb.run(&["man"], SHORT);
    assert_eq!(out.status.code(), Some(0));
    let main = text(&out.stdout);
    assert!(
        main.starts_with(".ie \\n(.g .ds Aq \\(aq") || main.contains(".TH protobench 1"),
        "{main}"
    );
    assert!(main.contains(".TH protobench 1"), "{main}");

    let out = pb.run(&["man", "--dir", "man1"], SHORT);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let dir = pb.cwd.path().join("man1");
    assert!(dir.join("protobench.1").is_file());
    for name in subcommands(&pb) {
        assert!(dir.join(format!("protobench-{name}.1")).is_file(), "no page for {name}");
    }
    let page = std::fs::read_to_string(dir.join("protobench-load.1")).unwrap();
    let help = text(&pb.run(&["load", "--help"], SHORT).stdout);
    let mut options: Vec<String> = help
        .split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == ']' || c == '=')
        .filter_map(|w| w.strip_prefix("--"))
        .filter(|o| {
            !o.is_empty()
                && o.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        })
        .map(str::to_owned)
        .collect();
    options.sort();
    options.dedup();
    assert!(
        options.len() > 20 && options.iter().any(|o| o == "concurrency"),
        "{options:?}"
    );
    for o in &options {
        let roff = format!("\\-\\-{}", o.replace('-', "\\-"));
        assert!(page.contains(&roff), "protobench-load.1 lacks --{o}");
    }
}
