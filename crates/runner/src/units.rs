//! Parsing of the units presets are written in: durations (`500ms`, `2s`),
//! sizes (`512MiB`), CPU lists (`0`, `0-3`, `0,2-3`) and service times
//! (`sleep:1ms`, `spin:100us`).

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Parses a duration with a unit: `ns`, `us`, `ms`, `s`, `m`, `h` (e.g. `1.5s`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (e.g. 500ms, 2s, 1m)"))?;
    let factor = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "" => return Err(format!("`{s}` has no unit (accepted: ns, us, ms, s, m, h)")),
        other => {
            return Err(format!(
                "unknown duration unit `{other}` in `{s}` (accepted: ns, us, ms, s, m, h)"
            ));
        }
    };
    let secs = value * factor;
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("`{s}` is not a valid duration"));
    }
    // `from_secs_f64` panics past u64::MAX seconds; the caller range-checks
    // what it accepts, this only refuses what no `Duration` can hold.
    Duration::try_from_secs_f64(secs).map_err(|_| format!("`{s}` is too long a duration"))
}

/// Parses a size: a plain number of bytes, or with `KB`, `MB`, `GB` (powers of
/// 1000) or `KiB`, `MiB`, `GiB` (powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a size (e.g. 512MiB, 1GiB)"))?;
    let factor: f64 = match unit.trim() {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        other => {
            return Err(format!(
                "unknown size unit `{other}` in `{s}` (accepted: B, KB, MB, GB, KiB, MiB, GiB)"
            ));
        }
    };
    let bytes = (value * factor).round();
    // `as u64` saturates silently: refuse what does not fit instead.
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!("`{s}` is too large a size (at most 2^64 - 1 bytes)"));
    }
    Ok(bytes as u64)
}

/// Checks a service time: `sleep:<duration>` or `spin:<duration>`.
pub fn check_service_time(s: &str) -> Result<(), String> {
    let (mode, d) = s.split_once(':').ok_or_else(|| {
        format!("`{s}` is not a service time (accepted: sleep:<duration>, spin:<duration>, sleep:<from>..<to>/<over>)")
    })?;
    if mode != "sleep" && mode != "spin" {
        return Err(format!("unknown service time mode `{mode}` (accepted: sleep, spin)"));
    }
    // A ramp (the built-in server only): from..to/over.
    if let Some((from, rest)) = d.split_once("..") {
        let (to, over) = rest
            .split_once('/')
            .ok_or_else(|| format!("`{s}`: a ramped service time needs its length, e.g. sleep:5ms..200us/10s"))?;
        for part in [from, to, over] {
            parse_duration(part)?;
        }
        return Ok(());
    }
    parse_duration(d).map(|_| ())
}

/// A set of CPU numbers, written like `taskset -c`: `0`, `0-3`, `0,2-3`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct CpuSet(pub BTreeSet<usize>);

impl CpuSet {
    /// Parses a CPU list.
    pub fn parse(s: &str) -> Result<CpuSet, String> {
        let mut set = BTreeSet::new();
        for part in s.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(format!("`{s}` is not a CPU list (e.g. 0, 0-3, 0,2-3)"));
            }
            let bad = || format!("`{s}` is not a CPU list (e.g. 0, 0-3, 0,2-3)");
            match part.split_once('-') {
                Some((a, b)) => {
                    let a: usize = a.trim().parse().map_err(|_| bad())?;
                    let b: usize = b.trim().parse().map_err(|_| bad())?;
                    if a > b {
                        return Err(format!("CPU range `{part}` runs backwards"));
                    }
                    set.extend(a..=b);
                }
                None => {
                    set.insert(part.parse().map_err(|_| bad())?);
                }
            }
        }
        Ok(CpuSet(set))
    }

    /// The CPUs this process may run on (from `/proc/self/status`), or
    /// `0..available_parallelism` when unknown.
    pub fn available() -> CpuSet {
        if let Ok(status) = std::fs::read_to_string("/proc/self/status")
            && let Some(line) = status.lines().find(|l| l.starts_with("Cpus_allowed_list:"))
            && let Ok(set) = CpuSet::parse(line.trim_start_matches("Cpus_allowed_list:").trim())
        {
            return set;
        }
        let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        CpuSet((0..n).collect())
    }

    /// Number of CPUs.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// True when the two sets share a CPU.
    pub fn overlaps(&self, other: &CpuSet) -> bool {
        self.0.intersection(&other.0).next().is_some()
    }

    /// True when every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.0.is_subset(&other.0)
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Compress runs: 0,1,2,5 -> 0-2,5
        let v: Vec<usize> = self.0.iter().copied().collect();
        let mut parts = Vec::new();
        let mut i = 0;
        while i < v.len() {
            let mut j = i;
            while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
                j += 1;
            }
            parts.push(if i == j {
                v[i].to_string()
            } else {
                format!("{}-{}", v[i], v[j])
            });
            i = j + 1;
        }
        f.write_str(&parts.join(","))
    }
}

impl From<CpuSet> for String {
    fn from(c: CpuSet) -> String {
        c.to_string()
    }
}

impl TryFrom<String> for CpuSet {
    type Error = String;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        CpuSet::parse(&s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let ok = [
            ("500ms", Duration::from_millis(500)),
            ("2s", Duration::from_secs(2)),
            ("1.5s", Duration::from_millis(1500)),
            ("100us", Duration::from_micros(100)),
            ("1m", Duration::from_secs(60)),
            ("0s", Duration::ZERO),
        ];
        for (s, want) in ok {
            assert_eq!(parse_duration(s).unwrap(), want, "{s}");
        }
        assert!(parse_duration("5").unwrap_err().contains("no unit"));
        assert!(
            parse_duration("5d")
                .unwrap_err()
                .contains("accepted: ns, us, ms, s, m, h")
        );
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert!(parse_duration("fast").is_err());
    }

    #[test]
    fn durations_no_duration_can_hold_are_refused_not_panics() {
        assert_eq!(
            parse_duration("100000000000000000000000s").unwrap_err(),
            "`100000000000000000000000s` is too long a duration"
        );
        assert!(parse_duration("10000000000000000h").is_err());
        // Past 2^64 ns but within Duration: parsed exactly; callers range-check.
        assert_eq!(
            parse_duration("18446744074s").unwrap(),
            Duration::from_secs(18_446_744_074)
        );
    }

    #[test]
    fn sizes() {
        let ok = [
            ("1024", 1024),
            ("512MiB", 512 << 20),
            ("1GiB", 1 << 30),
            ("100MB", 100_000_000),
            ("4KiB", 4096),
        ];
        for (s, want) in ok {
            assert_eq!(parse_size(s).unwrap(), want, "{s}");
        }
        assert!(parse_size("12XB").unwrap_err().contains("accepted: B, KB"));
        assert_eq!(
            parse_size("20000000000GiB").unwrap_err(),
            "`20000000000GiB` is too large a size (at most 2^64 - 1 bytes)"
        );
        assert!(parse_size("18446744073709551616").is_err());
    }

    #[test]
    fn service_times() {
        assert!(check_service_time("sleep:1ms").is_ok());
        assert!(check_service_time("spin:100us").is_ok());
        assert!(
            check_service_time("nap:1ms")
                .unwrap_err()
                .contains("accepted: sleep, spin")
        );
        assert!(check_service_time("1ms").is_err());
        assert!(check_service_time("sleep:5ms..200us/10s").is_ok());
        assert!(
            check_service_time("sleep:5ms..200us")
                .unwrap_err()
                .contains("needs its length")
        );
        assert!(check_service_time("sleep:5ms..zz/1s").is_err());
    }

    #[test]
    fn cpu_sets() {
        let cases = [
            ("0", vec![0]),
            ("0-3", vec![0, 1, 2, 3]),
            ("0,2-3", vec![0, 2, 3]),
            (" 1 , 0 ", vec![0, 1]),
        ];
        for (s, want) in cases {
            assert_eq!(CpuSet::parse(s).unwrap().0.into_iter().collect::<Vec<_>>(), want, "{s}");
        }
        assert!(CpuSet::parse("3-1").is_err());
        assert!(CpuSet::parse("a").is_err());
        assert!(CpuSet::parse("").is_err());
        assert_eq!(CpuSet::parse("0,1,2,5").unwrap().to_string(), "0-2,5");
        let a = CpuSet::parse("0").unwrap();
        let b = CpuSet::parse("1").unwrap();
        assert!(!a.overlaps(&b) && a.overlaps(&a));
    }
}
