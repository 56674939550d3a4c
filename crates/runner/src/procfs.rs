//! What a server costs, read from `/proc`: CPU time (user + system) and
//! resident memory of its whole process tree (multi-process servers fork
//! workers), sampled every 100 ms by a background thread.
//!
//! The samples carry timestamps, so the cost over the engine's measured
//! window (which starts after a warm-up inside the same engine call) is
//! read by interpolating the CPU counter at the window's start and end.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use protobench_model::run::ServerCost;

/// The sampling period.
pub const PERIOD: Duration = Duration::from_millis(100);

/// Clock ticks per second for `/proc/PID/stat` times.
fn ticks_per_second() -> u64 {
    use std::sync::OnceLock;
    static TICKS: OnceLock<u64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .map_or(100, |v| v.max(1) as u64)
    })
}

/// Page size for `/proc/PID/statm`.
fn page_size() -> u64 {
    use std::sync::OnceLock;
    static PAGE: OnceLock<u64> = OnceLock::new();
    *PAGE.get_or_init(|| {
        nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
            .ok()
            .flatten()
            .map_or(4096, |v| v.max(1) as u64)
    })
}

/// Fields of `/proc/PID/stat` after the command name: (ppid, utime + stime +
/// cutime + cstime in ticks). The command may contain spaces and parentheses,
/// so parsing starts after the last `)`.
pub fn parse_stat(stat: &str) -> Option<(u32, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] = state (field 3), ppid = field 4, utime = 14 ... cstime = 17.
    let ppid = f.get(1)?.parse().ok()?;
    let sum = (11..=14)
        .map(|i| f.get(i).and_then(|v| v.parse::<u64>().ok()))
        .sum::<Option<u64>>()?;
    Some((ppid, sum))
}

/// Every process's parent, from `/proc/*/stat`.
fn parents() -> BTreeMap<u32, (u32, u64)> {
    let mut out = BTreeMap::new();
    let Ok(dir) = fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat"))
            && let Some(v) = parse_stat(&stat)
        {
            out.insert(pid, v);
        }
    }
    out
}

/// This process's own CPU time (user + system, not its children's), ns:
/// what the generator spends (the live page's per-second CPU).
pub fn own_cpu_ns() -> Option<u64> {
    let ticks = own_ticks(&fs::read_to_string("/proc/self/stat").ok()?)?;
    Some(ticks * 1_000_000_000 / ticks_per_second())
}

/// utime + stime of a `stat` line (without cutime and cstime, which
/// [`parse_stat`] adds for a tree's reaped children).
fn own_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// `root` and all its descendants, with their CPU ticks.
pub fn tree(root: u32) -> Vec<(u32, u64)> {
    let all = parents();
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (&pid, &(ppid, _)) in &all {
        children.entry(ppid).or_default().push(pid);
    }
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        if !seen.insert(pid) {
            continue;
        }
        if let Some(&(_, ticks)) = all.get(&pid) {
            out.push((pid, ticks));
        }
        if let Some(c) = children.get(&pid) {
            stack.extend(c);
        }
    }
    out
}

/// Resident set size of one process in bytes (`/proc/PID/statm`).
fn rss_bytes(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/statm"))
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * page_size())
}

/// One sample of the tree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// When.
    pub at: Instant,
    /// CPU time of the tree so far (ns).
    pub cpu_ns: u64,
    /// Resident memory of the tree (bytes).
    pub rss_bytes: u64,
}

/// Takes one sample of `root`'s process tree.
pub fn sample(root: u32) -> Sample {
    let t = tree(root);
    let ticks: u64 = t.iter().map(|(_, ticks)| ticks).sum();
    let rss: u64 = t.iter().map(|(pid, _)| rss_bytes(*pid)).sum();
    Sample {
        at: Instant::now(),
        cpu_ns: ticks * 1_000_000_000 / ticks_per_second(),
        rss_bytes: rss,
    }
}

/// Samples a process tree every [`PERIOD`] on a background thread.
#[derive(Debug)]
pub struct Sampler {
    samples: Arc<Mutex<Vec<Sample>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Starts sampling `root`.
    pub fn start(root: u32) -> Sampler {
        let samples = Arc::new(Mutex::new(vec![sample(root)]));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (samples.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("protobench-sampler".into())
            .spawn(move || {
                while !st.load(Ordering::Relaxed) {
                    std::thread::sleep(PERIOD);
                    let v = sample(root);
                    let mut guard = s.lock().unwrap_or_else(|e| e.into_inner());
                    // Keep at most ~1 hour of samples.
                    if guard.len() > 36_000 {
                        guard.drain(..18_000);
                    }
                    guard.push(v);
                }
            })
            .ok();
        Sampler { samples, stop, thread }
    }

    /// Takes a sample now (window edges) and returns a copy of all samples.
    pub fn snapshot(&self, root: u32) -> Vec<Sample> {
        let mut guard = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        guard.push(sample(root));
        guard.clone()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The CPU counter at `at`, linearly interpolated between samples.
pub fn cpu_at(samples: &[Sample], at: Instant) -> Option<u64> {
    let first = samples.first()?;
    if at <= first.at {
        return Some(first.cpu_ns);
    }
    for w in samples.windows(2) {
        let (a, b) = (w[0], w[1]);
        if at >= a.at && at <= b.at {
            let span = b.at.duration_since(a.at).as_nanos() as f64;
            if span == 0.0 {
                return Some(b.cpu_ns);
            }
            let f = at.duration_since(a.at).as_nanos() as f64 / span;
            return Some(a.cpu_ns + ((b.cpu_ns.saturating_sub(a.cpu_ns)) as f64 * f) as u64);
        }
    }
    samples.last().map(|s| s.cpu_ns)
}

/// The CPU time of the tree in each whole second of the `window` that
/// starts at `start` (ns), from the interpolated counter; seconds that end
/// after the last sample are left out (the counter is not known there).
pub fn cpu_per_second(samples: &[Sample], start: Instant, window: Duration) -> Vec<u64> {
    let Some(last) = samples.last().map(|s| s.at) else {
        return Vec::new();
    };
    (0..window.as_secs())
        .map(|i| (start + Duration::from_secs(i), start + Duration::from_secs(i + 1)))
        .take_while(|(_, end)| *end <= last)
        .map(|(a, b)| {
            let (a, b) = (cpu_at(samples, a).unwrap_or(0), cpu_at(samples, b).unwrap_or(0));
            b.saturating_sub(a)
        })
        .collect()
}

/// The server's cost over `[start, end]` for `calls` calls, and its RSS per
/// second of the window.
pub fn cost(samples: &[Sample], start: Instant, end: Instant, calls: u64) -> (ServerCost, Vec<u64>) {
    let cpu_ns = match (cpu_at(samples, start), cpu_at(samples, end)) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => 0,
    };
    let inside: Vec<&Sample> = samples.iter().filter(|s| s.at >= start && s.at <= end).collect();
    let peak = inside.iter().map(|s| s.rss_bytes).max().unwrap_or(0);
    let mean = if inside.is_empty() {
        0
    } else {
        inside.iter().map(|s| s.rss_bytes).sum::<u64>() / inside.len() as u64
    };
    let mut per_second: Vec<u64> = Vec::new();
    for s in &inside {
        let sec = s.at.duration_since(start).as_secs() as usize;
        if per_second.len() <= sec {
            per_second.resize(sec + 1, 0);
        }
        per_second[sec] = per_second[sec].max(s.rss_bytes);
    }
    let cost = ServerCost {
        cpu_ns,
        cpu_ns_per_call: if calls > 0 { cpu_ns as f64 / calls as f64 } else { 0.0 },
        calls_per_cpu_second: if cpu_ns > 0 {
            calls as f64 / (cpu_ns as f64 / 1e9)
        } else {
            0.0
        },
        rss_peak_bytes: peak,
        rss_mean_bytes: mean,
    };
    (cost, per_second)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_stat_handles_spaces_and_parens_in_the_name() {
        let stat = "1234 (my (odd) server) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 4 0 100 1000 200";
        assert_eq!(parse_stat(stat), Some((1, 250 + 50 + 7 + 3)));
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(own_ticks(stat), Some(250 + 50), "its own time, not its children's");
        assert_eq!(own_ticks("garbage"), None);
    }

    #[test]
    fn this_process_is_in_its_own_tree() {
        let me = std::process::id();
        let t = tree(me);
        assert!(t.iter().any(|(pid, _)| *pid == me));
        let s = sample(me);
        assert!(s.rss_bytes > 0);
    }

    #[test]
    fn child_processes_are_in_the_tree() {
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let t = tree(std::process::id());
        assert!(t.iter().any(|(pid, _)| *pid == child.id()));
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn cost_interpolates_the_window() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let samples = vec![
            Sample {
                at: at(0),
                cpu_ns: 0,
                rss_bytes: 10,
            },
            Sample {
                at: at(1000),
                cpu_ns: 1_000_000_000,
                rss_bytes: 30,
            },
            Sample {
                at: at(2000),
                cpu_ns: 1_500_000_000,
                rss_bytes: 20,
            },
        ];
        // window 500 ms .. 1500 ms: 0.5 s of CPU + 0.25 s of CPU
        let (c, per_second) = cost(&samples, at(500), at(1500), 100);
        assert_eq!(c.cpu_ns, 750_000_000);
        assert_eq!(c.cpu_ns_per_call, 7_500_000.0);
        assert!((c.calls_per_cpu_second - 133.333).abs() < 0.01);
        assert_eq!((c.rss_peak_bytes, c.rss_mean_bytes), (30, 30));
        assert_eq!(per_second, vec![30]);
        // empty window: no calls, no cost
        let (c, _) = cost(&samples, at(2500), at(2600), 0);
        assert_eq!((c.cpu_ns, c.cpu_ns_per_call, c.rss_peak_bytes), (0, 0.0, 0));
    }

    /// Burns 300 ms of this thread's CPU, not of the wall clock: on a
    /// loaded machine 300 ms of wall time may hold far less CPU (at most
    /// 10 s of wall time, so a starved test still ends). Returns the CPU
    /// time burned.
    fn burn_300ms_of_cpu() -> Duration {
        let start = Instant::now();
        let cpu = || nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID).map(Duration::from);
        let cpu0 = cpu().unwrap();
        let mut x = 0u64;
        while cpu().unwrap() - cpu0 < Duration::from_millis(300) && start.elapsed() < Duration::from_secs(10) {
            for _ in 0..10_000 {
                x = x.wrapping_mul(31).wrapping_add(7);
            }
        }
        std::hint::black_box(x);
        cpu().unwrap() - cpu0
    }

    #[test]
    fn cpu_per_second_interpolates_and_stops_at_the_last_sample() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        // 0.5 CPU-seconds per second until 2.5 s, then idle until 3.2 s
        let samples: Vec<Sample> = [(0, 0), (1000, 500), (2500, 1250), (3200, 1250)]
            .into_iter()
            .map(|(ms, cpu_ms)| Sample {
                at: at(ms),
                cpu_ns: cpu_ms * 1_000_000,
                rss_bytes: 1,
            })
            .collect();
        let per = cpu_per_second(&samples, at(0), Duration::from_millis(4500));
        // seconds 0, 1, 2 end by 3.2 s; second 3 ends at 4 s: left out
        assert_eq!(per, vec![500_000_000, 500_000_000, 250_000_000]);
        assert!(cpu_per_second(&[], at(0), Duration::from_secs(3)).is_empty());
    }

    #[test]
    fn own_cpu_counts_this_process_only() {
        let before = own_cpu_ns().expect("/proc/self/stat");
        let burned = burn_300ms_of_cpu();
        let counted = own_cpu_ns().unwrap() - before;
        // clock ticks are 10 ms; the other test threads may add their own
        assert!(
            counted + 20_000_000 >= burned.as_nanos() as u64,
            "burned {burned:?}, counted {counted} ns"
        );
    }

    #[test]
    fn sampler_sees_cpu_burned() {
        let me = std::process::id();
        let sampler = Sampler::start(me);
        let start = Instant::now();
        burn_300ms_of_cpu();
        // The sampler reads every PERIOD: let it take one more after the burn.
        std::thread::sleep(PERIOD * 2);
        let samples = sampler.snapshot(me);
        let (c, _) = cost(&samples, start, Instant::now(), 1);
        assert!(c.cpu_ns >= 100_000_000, "cpu {}", c.cpu_ns);
    }
}
