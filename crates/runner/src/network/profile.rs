//! Link profiles as data: what an emulated link should be, per direction.
//!
//! A preset names them (`network = ["loopback", "lan-1g"]`) or writes one
//! inline (`rate=100mbit,delay=20ms,jitter=2ms,loss=0.1%`, with `up.` and
//! `down.` prefixes for one direction, optionally after a named profile to
//! start from: `wan-100m-40ms,loss=1%`). "up" is the generator to the server
//! host (requests), "down" the server host to the generator (responses).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::units::{parse_duration, parse_size};

/// One direction of a link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Direction {
    /// Bottleneck rate in bits per second (on the wire, Ethernet header
    /// included); `None` leaves the direction unshaped.
    pub rate_bps: Option<u64>,
    /// Token-bucket burst in bytes; `None` derives it from the rate.
    pub burst_bytes: Option<u64>,
    /// One-way delay in nanoseconds.
    pub delay_ns: u64,
    /// Delay variation (+/-) in nanoseconds.
    pub jitter_ns: u64,
    /// Packets lost, in percent (0 to below 100).
    pub loss_percent: f64,
}

impl Direction {
    /// A direction that only adds `delay` and shapes to `rate_bps`.
    pub fn new(rate_bps: Option<u64>, delay: Duration) -> Direction {
        Direction {
            rate_bps,
            delay_ns: delay.as_nanos() as u64,
            ..Direction::default()
        }
    }

    /// The burst the token bucket uses: the profile's, else one millisecond
    /// of the rate, at least two full-size Ethernet frames.
    pub fn effective_burst_bytes(&self) -> Option<u64> {
        let rate = self.rate_bps?;
        Some(self.burst_bytes.unwrap_or((rate / 8 / 1000).max(2 * 1514)))
    }
}

/// A named or custom link profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkProfile {
    /// The name it was written as (`lan-1g`, or the custom text).
    pub name: String,
    /// Generator to server host.
    pub up: Direction,
    /// Server host to generator.
    pub down: Direction,
}

impl LinkProfile {
    /// The round trip the profile asks for: both one-way delays.
    pub fn rtt_ns(&self) -> u64 {
        self.up.delay_ns + self.down.delay_ns
    }

    /// The profile as `key=value` text that parses back to the same link
    /// (symmetric settings unprefixed).
    pub fn to_spec(&self) -> String {
        let mut parts = Vec::new();
        let get = |key: &str, d: &Direction| match key {
            "rate" => d.rate_bps.map(format_rate),
            "burst" => d.burst_bytes.map(|b| b.to_string()),
            "delay" => (d.delay_ns > 0).then(|| format_duration(d.delay_ns)),
            "jitter" => (d.jitter_ns > 0).then(|| format_duration(d.jitter_ns)),
            _ => (d.loss_percent > 0.0).then(|| format!("{}%", d.loss_percent)),
        };
        for key in ["rate", "burst", "delay", "jitter", "loss"] {
            let (u, d) = (get(key, &self.up), get(key, &self.down));
            if u == d {
                if let Some(v) = u {
                    parts.push(format!("{key}={v}"));
                }
            } else {
                if let Some(v) = u {
                    parts.push(format!("up.{key}={v}"));
                }
                if let Some(v) = d {
                    parts.push(format!("down.{key}={v}"));
                }
            }
        }
        parts.join(",")
    }

    /// Checks the values together (jitter within delay, loss below 100%, rate above 0).
    fn validate(&self) -> Result<(), String> {
        for (side, d) in [("up", &self.up), ("down", &self.down)] {
            if d.rate_bps == Some(0) {
                return Err(format!(
                    "{side}.rate must be above 0 (omit it to leave {side} unshaped)"
                ));
            }
            if d.jitter_ns > d.delay_ns {
                return Err(format!(
                    "{side}.jitter ({}) exceeds {side}.delay ({}): the delay would go negative",
                    format_duration(d.jitter_ns),
                    format_duration(d.delay_ns)
                ));
            }
            if !(0.0..100.0).contains(&d.loss_percent) {
                return Err(format!("{side}.loss must be at least 0% and below 100%"));
            }
            if d.burst_bytes.is_some() && d.rate_bps.is_none() {
                return Err(format!("{side}.burst needs {side}.rate (a burst only shapes a rate)"));
            }
        }
        Ok(())
    }
}

/// The named profiles, in the order the docs list them (see docs/network.md
/// for where each figure comes from).
pub const NAMED: [&str; 4] = ["loopback", "lan-1g", "wan-100m-40ms", "mobile-4g"];

/// An emulated named profile (`None` for `loopback` and unknown names).
pub fn named(name: &str) -> Option<LinkProfile> {
    let ms = Duration::from_millis;
    let (up, down) = match name {
        // Berg's two hosts on a 1 Gbit/s LAN; 0.1 ms round trip.
        "lan-1g" => (
            Direction::new(Some(1_000_000_000), Duration::from_micros(50)),
            Direction::new(Some(1_000_000_000), Duration::from_micros(50)),
        ),
        // Two cloud regions on one continent: 40 ms round trip, 100 Mbit/s.
        "wan-100m-40ms" => (
            Direction::new(Some(100_000_000), ms(20)),
            Direction::new(Some(100_000_000), ms(20)),
        ),
        // LTE medians (Huang et al. 2012): 6 Mbit/s up, 13 Mbit/s down;
        // 70 ms round trip with +/-5 ms jitter each way.
        "mobile-4g" => {
            let jitter = |mut d: Direction| {
                d.jitter_ns = 5_000_000;
                d
            };
            (
                jitter(Direction::new(Some(6_000_000), ms(35))),
                jitter(Direction::new(Some(13_000_000), ms(35))),
            )
        }
        _ => return None,
    };
    Some(LinkProfile {
        name: name.to_string(),
        up,
        down,
    })
}

/// The network a point runs on: the runner's own loopback, or an emulated link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Network {
    /// Server and generator share the runner's loopback (no emulation).
    Loopback,
    /// The server on its own emulated host behind a shaped link.
    Emulated(LinkProfile),
}

impl Network {
    /// The emulated profile, if any.
    pub fn profile(&self) -> Option<&LinkProfile> {
        match self {
            Network::Loopback => None,
            Network::Emulated(p) => Some(p),
        }
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Network::Loopback => f.write_str("loopback"),
            Network::Emulated(p) => f.write_str(&p.name),
        }
    }
}

impl From<Network> for String {
    fn from(n: Network) -> String {
        n.to_string()
    }
}

impl TryFrom<String> for Network {
    type Error = String;
    fn try_from(s: String) -> Result<Network, String> {
        s.parse()
    }
}

const KEYS: &str = "rate, burst, delay, jitter, loss (each optionally prefixed up. or down.)";

fn accepted_names() -> String {
    NAMED.join(", ")
}

impl FromStr for Network {
    type Err = String;

    /// Parses a profile name, `key=value` settings, or a name followed by
    /// settings that override it. Errors name the key and the accepted forms.
    fn from_str(text: &str) -> Result<Network, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err(format!(
                "empty network (accepted: {} or settings like rate=100mbit,delay=20ms,jitter=2ms,loss=0.1%)",
                accepted_names()
            ));
        }
        let mut items = text.split(',').map(str::trim).peekable();
        let first = *items.peek().expect("split yields at least one item");
        let mut profile = if first.contains('=') {
            LinkProfile {
                name: String::new(),
                up: Direction::default(),
                down: Direction::default(),
            }
        } else {
            items.next();
            if first == "loopback" {
                if items.peek().is_some() {
                    return Err(
                        "`loopback` takes no link settings: write the settings alone (rate=…,delay=…) or after an emulated profile"
                            .into(),
                    );
                }
                return Ok(Network::Loopback);
            }
            named(first).ok_or_else(|| {
                format!(
                    "unknown network profile `{first}` (accepted: {}, or settings like rate=100mbit,delay=20ms)",
                    accepted_names()
                )
            })?
        };
        let mut any = false;
        for item in items {
            let (key, value) = item.split_once('=').ok_or_else(|| {
                format!("`{item}` is not key=value (keys: {KEYS}; a profile name may only come first)")
            })?;
            let (key, value) = (key.trim(), value.trim());
            let (sides, bare): (&[&str], &str) = match key.split_once('.') {
                Some(("up", k)) => (&["up"], k),
                Some(("down", k)) => (&["down"], k),
                Some((prefix, _)) => {
                    return Err(format!(
                        "unknown direction `{prefix}` in `{key}` (accepted: up., down.)"
                    ));
                }
                None => (&["up", "down"], key),
            };
            for side in sides {
                let d = if *side == "up" {
                    &mut profile.up
                } else {
                    &mut profile.down
                };
                set(d, bare, value).map_err(|e| format!("{key}: {e}"))?;
            }
            any = true;
        }
        if !any && profile.name.is_empty() {
            return Err(format!("no link settings in `{text}` (keys: {KEYS})"));
        }
        profile.name = text.to_string();
        profile.validate()?;
        Ok(Network::Emulated(profile))
    }
}

fn set(d: &mut Direction, key: &str, value: &str) -> Result<(), String> {
    match key {
        "rate" => d.rate_bps = Some(parse_rate(value)?),
        "burst" => {
            d.burst_bytes = Some(
                parse_size(value)
                    .map_err(|_| format!("`{value}` is not a size (accepted: bytes, or with KB, MB, KiB, MiB)"))?,
            );
        }
        "delay" => d.delay_ns = parse_delay(value)?,
        "jitter" => d.jitter_ns = parse_delay(value)?,
        "loss" => d.loss_percent = parse_loss(value)?,
        other => return Err(format!("unknown key `{other}` (accepted: {KEYS})")),
    }
    Ok(())
}

fn parse_delay(value: &str) -> Result<u64, String> {
    parse_duration(value)
        .map(|d| d.as_nanos() as u64)
        .map_err(|_| format!("`{value}` is not a duration (accepted: a number with ns, us, ms or s, e.g. 20ms)"))
}

/// Parses a rate in tc's bit units: `bit`, `kbit`, `mbit`, `gbit` (powers of
/// 1000, case-insensitive).
pub fn parse_rate(value: &str) -> Result<u64, String> {
    let bad = || format!("`{value}` is not a rate (accepted: a number with bit, kbit, mbit or gbit, e.g. 100mbit)");
    let v = value.trim().to_ascii_lowercase();
    let split = v.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
    let (num, unit) = v.split_at(split);
    let num: f64 = num.parse().map_err(|_| bad())?;
    let factor = match unit {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        _ => return Err(bad()),
    };
    let bps = num * factor;
    if !bps.is_finite() || bps < 1.0 {
        return Err(bad());
    }
    Ok(bps.round() as u64)
}

fn parse_loss(value: &str) -> Result<f64, String> {
    let bad = || format!("`{value}` is not a loss (accepted: a percentage from 0% to below 100%, e.g. 0.1%)");
    let num = value.trim().strip_suffix('%').ok_or_else(bad)?;
    let p: f64 = num.trim().parse().map_err(|_| bad())?;
    if !(0.0..100.0).contains(&p) {
        return Err(bad());
    }
    Ok(p)
}

/// A rate in the largest whole tc unit (`100mbit`).
pub(crate) fn format_rate(bps: u64) -> String {
    match bps {
        b if b >= 1_000_000_000 && b % 1_000_000_000 == 0 => format!("{}gbit", b / 1_000_000_000),
        b if b >= 1_000_000 && b % 1_000_000 == 0 => format!("{}mbit", b / 1_000_000),
        b if b >= 1_000 && b % 1_000 == 0 => format!("{}kbit", b / 1_000),
        b => format!("{b}bit"),
    }
}

/// A duration in the largest whole unit (`20ms`, `50us`).
pub(crate) fn format_duration(ns: u64) -> String {
    match ns {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emulated(s: &str) -> LinkProfile {
        match s.parse::<Network>() {
            Ok(Network::Emulated(p)) => p,
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn named_profiles_parse_and_keep_their_name() {
        assert_eq!("loopback".parse::<Network>(), Ok(Network::Loopback));
        for name in &NAMED[1..] {
            let p = emulated(name);
            assert_eq!(&p.name, name);
            assert_eq!(Some(&p), named(name).as_ref());
        }
        let lan = emulated("lan-1g");
        assert_eq!((lan.up.rate_bps, lan.rtt_ns()), (Some(1_000_000_000), 100_000));
        let wan = emulated("wan-100m-40ms");
        assert_eq!((wan.down.rate_bps, wan.rtt_ns()), (Some(100_000_000), 40_000_000));
        let m = emulated("mobile-4g");
        assert_eq!((m.up.rate_bps, m.down.rate_bps), (Some(6_000_000), Some(13_000_000)));
    }

    #[test]
    fn custom_settings_apply_to_both_directions() {
        let p = emulated("rate=100mbit,delay=20ms,jitter=2ms,loss=0.1%");
        for d in [&p.up, &p.down] {
            assert_eq!(d.rate_bps, Some(100_000_000));
            assert_eq!(d.delay_ns, 20_000_000);
            assert_eq!(d.jitter_ns, 2_000_000);
            assert_eq!(d.loss_percent, 0.1);
        }
        assert_eq!(p.name, "rate=100mbit,delay=20ms,jitter=2ms,loss=0.1%");
    }

    #[test]
    fn per_direction_keys_and_overrides_of_a_named_profile() {
        let p = emulated("up.rate=10mbit, down.rate=1.5Gbit, delay=1ms, down.loss=1%");
        assert_eq!(p.up.rate_bps, Some(10_000_000));
        assert_eq!(p.down.rate_bps, Some(1_500_000_000));
        assert_eq!((p.up.loss_percent, p.down.loss_percent), (0.0, 1.0));
        // a named profile with one setting changed
        let p = emulated("wan-100m-40ms,loss=1%");
        assert_eq!((p.up.delay_ns, p.up.loss_percent), (20_000_000, 1.0));
        assert_eq!(p.name, "wan-100m-40ms,loss=1%");
    }

    #[test]
    fn spec_text_round_trips() {
        for s in [
            "rate=100mbit,delay=20ms",
            "up.rate=6mbit,down.rate=13mbit,delay=35ms,jitter=5ms",
            "rate=1gbit,burst=65536,delay=50us,loss=0.5%",
        ] {
            let p = emulated(s);
            assert_eq!(p.to_spec(), s);
            let again = emulated(&p.to_spec());
            assert_eq!((again.up, again.down), (p.up, p.down));
        }
        assert_eq!(
            emulated("mobile-4g").to_spec(),
            "up.rate=6mbit,down.rate=13mbit,delay=35ms,jitter=5ms"
        );
    }

    #[test]
    fn serde_uses_the_written_form() {
        #[derive(Deserialize)]
        struct Preset {
            network: Vec<Network>,
        }
        let p: Preset = toml::from_str(r#"network = ["loopback", "lan-1g", "rate=10mbit"]"#).unwrap();
        assert_eq!(p.network[0], Network::Loopback);
        assert_eq!(p.network[2].profile().unwrap().up.rate_bps, Some(10_000_000));
        assert_eq!(serde_json::to_string(&p.network[1]).unwrap(), "\"lan-1g\"");
        let err = toml::from_str::<Preset>(r#"network = ["lan-10g"]"#)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("unknown network profile `lan-10g`"), "{err}");
    }

    #[test]
    fn errors_name_the_key_and_the_accepted_forms() {
        let cases = [
            // (input, expected fragment)
            ("", "empty network (accepted: loopback, lan-1g"),
            (
                "lan-10g",
                "unknown network profile `lan-10g` (accepted: loopback, lan-1g, wan-100m-40ms, mobile-4g",
            ),
            (
                "rate=100mb",
                "rate: `100mb` is not a rate (accepted: a number with bit, kbit, mbit or gbit",
            ),
            ("rate=fast", "rate: `fast` is not a rate"),
            ("rate=0mbit", "rate: `0mbit` is not a rate"),
            (
                "delay=20",
                "delay: `20` is not a duration (accepted: a number with ns, us, ms or s",
            ),
            ("up.jitter=2x", "up.jitter: `2x` is not a duration"),
            (
                "loss=1",
                "loss: `1` is not a loss (accepted: a percentage from 0% to below 100%",
            ),
            ("loss=100%", "loss: `100%` is not a loss"),
            (
                "speed=1mbit",
                "speed: unknown key `speed` (accepted: rate, burst, delay, jitter, loss",
            ),
            (
                "left.rate=1mbit",
                "unknown direction `left` in `left.rate` (accepted: up., down.)",
            ),
            ("rate=1mbit,lan-1g", "`lan-1g` is not key=value"),
            ("delay=1ms,jitter=2ms", "up.jitter (2ms) exceeds up.delay (1ms)"),
            ("burst=64KiB", "up.burst needs up.rate"),
            ("loopback,rate=1mbit", "`loopback` takes no link settings"),
            ("burst=lots,rate=1mbit", "burst: `lots` is not a size"),
        ];
        for (input, want) in cases {
            let err = input.parse::<Network>().unwrap_err();
            assert!(err.contains(want), "{input:?}: got {err:?}, want {want:?}");
        }
    }

    #[test]
    fn rates_and_durations_format_in_whole_units() {
        assert_eq!(format_rate(100_000_000), "100mbit");
        assert_eq!(format_rate(1_500_000_000), "1500mbit");
        assert_eq!(format_rate(1_234), "1234bit");
        assert_eq!(format_duration(50_000), "50us");
        assert_eq!(format_duration(20_000_000), "20ms");
        assert_eq!(format_duration(1_500_000), "1500us");
    }

    #[test]
    fn burst_defaults_to_a_millisecond_of_rate_with_a_floor() {
        assert_eq!(
            Direction::new(Some(1_000_000_000), Duration::ZERO).effective_burst_bytes(),
            Some(125_000)
        );
        assert_eq!(
            Direction::new(Some(6_000_000), Duration::ZERO).effective_burst_bytes(),
            Some(3028)
        );
        assert_eq!(Direction::new(None, Duration::ZERO).effective_burst_bytes(), None);
    }
}
