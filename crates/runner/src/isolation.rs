//! Keeping the server and the load generator apart: CPU pinning with
//! `sched_setaffinity`, and CPU / memory limits through cgroups (v2 where its
//! controllers are usable, else v1, else a recorded warning).
//!
//! Pinning without races: a child inherits the affinity and (in v1) the
//! cgroups of the thread that spawns it. So the server is spawned from a
//! short-lived thread that first pins itself to the server CPUs and joins
//! the server's cgroups; every thread and process the server ever creates
//! is then born inside them. The generator is pinned by setting the
//! affinity of every thread of this process.

use std::fs;
use std::path::{Path, PathBuf};

use nix::sched::{CpuSet as NixCpuSet, sched_setaffinity};
use nix::unistd::Pid;

use crate::units::CpuSet;

/// Why isolation could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum IsolationError {
    /// `sched_setaffinity` failed.
    #[error("cannot pin to CPUs {cpus}")]
    Affinity {
        /// The CPU set.
        cpus: String,
        /// The cause.
        #[source]
        source: nix::Error,
    },
    /// A cgroup file could not be written.
    #[error("cannot write {path}")]
    Cgroup {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// No usable cgroup hierarchy for a requested limit.
    #[error("{0}")]
    Unsupported(String),
}

fn nix_set(cpus: &CpuSet) -> Result<NixCpuSet, IsolationError> {
    let mut set = NixCpuSet::new();
    for &c in &cpus.0 {
        set.set(c).map_err(|source| IsolationError::Affinity {
            cpus: cpus.to_string(),
            source,
        })?;
    }
    Ok(set)
}

/// Pins the calling thread to `cpus`.
pub fn pin_current_thread(cpus: &CpuSet) -> Result<(), IsolationError> {
    sched_setaffinity(Pid::from_raw(0), &nix_set(cpus)?).map_err(|source| IsolationError::Affinity {
        cpus: cpus.to_string(),
        source,
    })
}

/// Pins every thread of this process to `cpus` (threads created later
/// inherit the mask of their creator, so call it before starting runtimes).
pub fn pin_process(cpus: &CpuSet) -> Result<(), IsolationError> {
    let set = nix_set(cpus)?;
    let tids: Vec<i32> = fs::read_dir("/proc/self/task")
        .map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default();
    if tids.is_empty() {
        return pin_current_thread(cpus);
    }
    for tid in tids {
        // A thread may exit between listing and pinning: ignore ESRCH.
        match sched_setaffinity(Pid::from_raw(tid), &set) {
            Ok(()) | Err(nix::Error::ESRCH) => {}
            Err(source) => {
                return Err(IsolationError::Affinity {
                    cpus: cpus.to_string(),
                    source,
                });
            }
        }
    }
    Ok(())
}

/// Which cgroup hierarchy can limit a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupSupport {
    /// cgroup v2 with the `cpu` and `memory` controllers: the directory of
    /// this process's cgroup.
    V2 {
        /// This process's cgroup directory.
        own: PathBuf,
    },
    /// cgroup v1: this process's directory in each controller's hierarchy.
    V1 {
        /// `cpu` controller directory.
        cpu: Option<PathBuf>,
        /// `cpuset` controller directory.
        cpuset: Option<PathBuf>,
        /// `memory` controller directory.
        memory: Option<PathBuf>,
    },
    /// Neither is usable.
    None {
        /// Why, one line.
        reason: String,
    },
}

impl CgroupSupport {
    /// Looks at `/proc/self/mounts` and `/proc/self/cgroup`.
    pub fn detect() -> CgroupSupport {
        let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        let cgroup = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        CgroupSupport::from_proc(&mounts, &cgroup, |p| p.is_dir(), |p| fs::read_to_string(p).ok())
    }

    /// The detection logic over the text of `/proc/self/mounts` and
    /// `/proc/self/cgroup` (pure, for tests).
    pub fn from_proc(
        mounts: &str,
        cgroup: &str,
        is_dir: impl Fn(&Path) -> bool,
        read: impl Fn(&Path) -> Option<String>,
    ) -> CgroupSupport {
        // Own paths: "0::/path" (v2) and "N:ctrl,ctrl:/path" (v1).
        let mut v2_path = None;
        let mut v1_paths: Vec<(Vec<String>, String)> = Vec::new();
        for line in cgroup.lines() {
            let mut parts = line.splitn(3, ':');
            let (Some(_), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
                continue;
            };
            if ctrls.is_empty() {
                v2_path = Some(path.to_string());
            } else {
                v1_paths.push((ctrls.split(',').map(String::from).collect(), path.to_string()));
            }
        }
        let mut v2_mount = None;
        let mut v1_mounts: Vec<(Vec<String>, PathBuf)> = Vec::new();
        for line in mounts.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 4 {
                continue;
            }
            match f[2] {
                "cgroup2" => v2_mount = Some(PathBuf::from(f[1])),
                "cgroup" => v1_mounts.push((f[3].split(',').map(String::from).collect(), PathBuf::from(f[1]))),
                _ => {}
            }
        }
        if let (Some(mount), Some(path)) = (&v2_mount, &v2_path) {
            let own = mount.join(path.trim_start_matches('/'));
            let controllers = read(&own.join("cgroup.controllers")).unwrap_or_default();
            let has = |c: &str| controllers.split_whitespace().any(|x| x == c);
            if has("cpu") && has("memory") && is_dir(&own) {
                return CgroupSupport::V2 { own };
            }
        }
        let dir_of = |ctrl: &str| -> Option<PathBuf> {
            let (_, mount) = v1_mounts.iter().find(|(opts, _)| opts.iter().any(|o| o == ctrl))?;
            let (_, path) = v1_paths.iter().find(|(ctrls, _)| ctrls.iter().any(|c| c == ctrl))?;
            let dir = mount.join(path.trim_start_matches('/'));
            is_dir(&dir).then_some(dir)
        };
        let (cpu, cpuset, memory) = (dir_of("cpu"), dir_of("cpuset"), dir_of("memory"));
        if cpu.is_some() || memory.is_some() {
            return CgroupSupport::V1 { cpu, cpuset, memory };
        }
        CgroupSupport::None {
            reason: if v2_mount.is_some() {
                "cgroup v2 is mounted without usable cpu and memory controllers, and no cgroup v1 cpu or memory hierarchy".into()
            } else {
                "no cgroup hierarchy is mounted".into()
            },
        }
    }

    /// One line for the run's environment.
    pub fn describe(&self) -> String {
        match self {
            CgroupSupport::V2 { own } => format!("cgroup v2 at {}", own.display()),
            CgroupSupport::V1 { cpu, memory, .. } => format!(
                "cgroup v1 (cpu: {}, memory: {})",
                cpu.as_ref().map_or("absent".into(), |p| p.display().to_string()),
                memory.as_ref().map_or("absent".into(), |p| p.display().to_string())
            ),
            CgroupSupport::None { reason } => format!("no cgroups: {reason}"),
        }
    }
}

/// The limits of one server.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Limits {
    /// CPU quota in cores.
    pub cpu_limit: Option<f64>,
    /// Memory limit in bytes.
    pub memory_limit_bytes: Option<u64>,
}

/// Child cgroups created for one server; removed on drop.
#[derive(Debug)]
pub struct Cgroup {
    /// v1: one directory per controller; v2: one.
    dirs: Vec<PathBuf>,
    v2: bool,
    memory_dir: Option<PathBuf>,
}

fn write(path: &Path, value: &str) -> Result<(), IsolationError> {
    fs::write(path, value).map_err(|source| IsolationError::Cgroup {
        path: path.to_owned(),
        source,
    })
}

impl Cgroup {
    /// Creates child cgroups named `name` below this process's own and writes
    /// the limits. Only the controllers a limit needs are used.
    pub fn create(support: &CgroupSupport, name: &str, limits: &Limits) -> Result<Cgroup, IsolationError> {
        let mkdir = |p: &Path| {
            fs::create_dir_all(p).map_err(|source| IsolationError::Cgroup {
                path: p.to_owned(),
                source,
            })
        };
        match support {
            CgroupSupport::V2 { own } => {
                // Controllers must be enabled for children in the parent.
                let ctrl = own.join("cgroup.subtree_control");
                write(&ctrl, "+cpu +memory")?;
                let dir = own.join(name);
                mkdir(&dir)?;
                let group = Cgroup {
                    dirs: vec![dir.clone()],
                    v2: true,
                    memory_dir: Some(dir.clone()),
                };
                if let Some(c) = limits.cpu_limit {
                    write(
                        &dir.join("cpu.max"),
                        &format!("{} 100000", (c * 100_000.0).round() as u64),
                    )?;
                }
                if let Some(m) = limits.memory_limit_bytes {
                    write(&dir.join("memory.max"), &m.to_string())?;
                    let _ = write(&dir.join("memory.swap.max"), "0");
                }
                Ok(group)
            }
            CgroupSupport::V1 { cpu, memory, .. } => {
                let mut group = Cgroup {
                    dirs: vec![],
                    v2: false,
                    memory_dir: None,
                };
                if let Some(c) = limits.cpu_limit {
                    let base = cpu.as_ref().ok_or_else(|| {
                        IsolationError::Unsupported(
                            "cgroup v1 has no cpu controller: cannot apply server.cpu_limit".into(),
                        )
                    })?;
                    let dir = base.join(name);
                    mkdir(&dir)?;
                    group.dirs.push(dir.clone());
                    write(&dir.join("cpu.cfs_period_us"), "100000")?;
                    write(
                        &dir.join("cpu.cfs_quota_us"),
                        &((c * 100_000.0).round() as u64).to_string(),
                    )?;
                }
                if let Some(m) = limits.memory_limit_bytes {
                    let base = memory.as_ref().ok_or_else(|| {
                        IsolationError::Unsupported(
                            "cgroup v1 has no memory controller: cannot apply server.memory_limit".into(),
                        )
                    })?;
                    let dir = base.join(name);
                    mkdir(&dir)?;
                    group.dirs.push(dir.clone());
                    write(&dir.join("memory.limit_in_bytes"), &m.to_string())?;
                    group.memory_dir = Some(dir);
                }
                Ok(group)
            }
            CgroupSupport::None { reason } => Err(IsolationError::Unsupported(format!(
                "cannot apply CPU or memory limits: {reason}"
            ))),
        }
    }

    /// Moves the calling thread into the groups (v1 `tasks`), so a process it
    /// spawns starts inside them. v2 cannot move single threads: use [`Cgroup::add_process`].
    pub fn enter_current_thread(&self) -> Result<(), IsolationError> {
        if self.v2 {
            return Ok(());
        }
        let tid = nix::unistd::gettid().as_raw().to_string();
        for d in &self.dirs {
            write(&d.join("tasks"), &tid)?;
        }
        Ok(())
    }

    /// Moves a process (all its threads) into the groups.
    pub fn add_process(&self, pid: u32) -> Result<(), IsolationError> {
        for d in &self.dirs {
            write(&d.join("cgroup.procs"), &pid.to_string())?;
        }
        Ok(())
    }

    /// Peak memory of the group, if the controller reports it.
    pub fn memory_peak_bytes(&self) -> Option<u64> {
        let d = self.memory_dir.as_ref()?;
        let file = if self.v2 {
            "memory.peak"
        } else {
            "memory.max_usage_in_bytes"
        };
        fs::read_to_string(d.join(file)).ok()?.trim().parse().ok()
    }

    /// Times the memory limit was hit (v1 `memory.failcnt`, v2 `memory.events` max).
    pub fn memory_limit_hits(&self) -> Option<u64> {
        let d = self.memory_dir.as_ref()?;
        if self.v2 {
            let events = fs::read_to_string(d.join("memory.events")).ok()?;
            events.lines().find_map(|l| l.strip_prefix("max ")?.trim().parse().ok())
        } else {
            fs::read_to_string(d.join("memory.failcnt")).ok()?.trim().parse().ok()
        }
    }

    /// The group directories.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // Directories of empty groups are removed with rmdir (never recursively).
        for d in &self.dirs {
            let _ = fs::remove_dir(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS_V1: &str = "tmpfs /sys/fs/cgroup tmpfs rw 0 0
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0
cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
";
    const CGROUP_V1: &str = "4:memory:/process_api/abc\n3:cpuset:/\n2:cpuacct:/\n1:cpu:/\n0::/\n";

    #[test]
    fn hybrid_without_v2_controllers_uses_v1() {
        let s = CgroupSupport::from_proc(MOUNTS_V1, CGROUP_V1, |_| true, |_| Some(String::new()));
        assert_eq!(
            s,
            CgroupSupport::V1 {
                cpu: Some("/sys/fs/cgroup/cpu".into()),
                cpuset: Some("/sys/fs/cgroup/cpuset".into()),
                memory: Some("/sys/fs/cgroup/memory/process_api/abc".into()),
            }
        );
    }

    #[test]
    fn v2_with_controllers_wins() {
        let mounts = "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n";
        let s = CgroupSupport::from_proc(
            mounts,
            "0::/user.slice/x\n",
            |_| true,
            |_| Some("cpuset cpu io memory pids".into()),
        );
        assert_eq!(
            s,
            CgroupSupport::V2 {
                own: "/sys/fs/cgroup/user.slice/x".into()
            }
        );
    }

    #[test]
    fn v2_without_memory_and_no_v1_is_none() {
        let mounts = "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n";
        let s = CgroupSupport::from_proc(mounts, "0::/\n", |_| true, |_| Some("cpu io".into()));
        assert!(matches!(s, CgroupSupport::None { .. }), "{s:?}");
    }

    #[test]
    fn nothing_mounted_is_none() {
        let s = CgroupSupport::from_proc("", "", |_| true, |_| None);
        assert_eq!(
            s,
            CgroupSupport::None {
                reason: "no cgroup hierarchy is mounted".into()
            }
        );
    }

    #[test]
    fn pinning_this_thread_to_the_available_cpus_works() {
        pin_current_thread(&CpuSet::available()).unwrap();
    }
}
