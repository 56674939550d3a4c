//! The server environment contract of `contract/README.md`, parsed once into
//! a [`ServerConfig`].

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use protobench_contract::{DEFAULT_MAX_REQUEST_BYTES, Protocol};

/// Everything a server is configured with (exactly the env contract).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// `PROTOBENCH_REST_ADDR`: JSON over HTTP/1.1.
    pub rest: Option<SocketAddr>,
    /// `PROTOBENCH_REST_H2_ADDR`: JSON over HTTP/2.
    pub rest_h2: Option<SocketAddr>,
    /// `PROTOBENCH_GRPC_ADDR`.
    pub grpc: Option<SocketAddr>,
    /// `PROTOBENCH_SOAP_ADDR`.
    pub soap: Option<SocketAddr>,
    /// `PROTOBENCH_GRAPHQL_ADDR`: GraphQL over HTTP/1.1.
    pub graphql: Option<SocketAddr>,
    /// `PROTOBENCH_GRAPHQL_GET_ADDR`: GraphQL over HTTP/1.1, the same
    /// handler (the client of `graphql-get` sends persisted queries by GET).
    pub graphql_get: Option<SocketAddr>,
    /// `PROTOBENCH_CONNECT_ADDR`: Connect unary (either body; the client
    /// of `connect` sends protobuf).
    pub connect: Option<SocketAddr>,
    /// `PROTOBENCH_CONNECT_JSON_ADDR`: Connect unary (either body; the
    /// client of `connect-json` sends JSON).
    pub connect_json: Option<SocketAddr>,
    /// `PROTOBENCH_GRPC_WEB_ADDR`: gRPC-Web over HTTP/1.1 (binary or text).
    pub grpc_web: Option<SocketAddr>,
    /// `PROTOBENCH_GRPC_WEB_TEXT_ADDR`: gRPC-Web over HTTP/1.1 (binary or
    /// text; the client of `grpc-web-text` sends text).
    pub grpc_web_text: Option<SocketAddr>,
    /// `PROTOBENCH_WORKERS`: tokio worker threads. [`crate::start`] runs on
    /// whatever runtime it is called from; the `protobench serve` command
    /// builds that runtime with this many workers.
    pub workers: usize,
    /// `PROTOBENCH_TLS_CERT` and `PROTOBENCH_TLS_KEY`: TLS on every listener.
    pub tls: Option<TlsFiles>,
    /// `PROTOBENCH_FAILURE_RATE`: fraction 0..=1 of calls answered with the
    /// injected failure.
    pub failure_rate: f64,
    /// `PROTOBENCH_FAILURE_SEED`: seed of the failure draw.
    pub failure_seed: u64,
    /// `PROTOBENCH_SERVICE_TIME`: added to every call before it is answered.
    pub service_time: Option<ServiceTime>,
    /// `PROTOBENCH_MAX_REQUEST_BYTES`: largest accepted request body
    /// (protobuf message for gRPC).
    pub max_request_bytes: usize,
    /// `PROTOBENCH_IDLE_TIMEOUT`: a connection with no request in progress
    /// (HTTP/1.1 before its first request and between requests; HTTP/2 with
    /// no open stream, also one that never sent the preface or never
    /// finished its TLS handshake) is closed after this long.
    pub idle_timeout: Duration,
    /// `PROTOBENCH_READ_TIMEOUT`: an HTTP/1.1 request body that has not all
    /// arrived this long after its headers is answered 408 and its
    /// connection closed.
    pub read_timeout: Duration,
    /// `PROTOBENCH_MAX_STREAMS`: SETTINGS_MAX_CONCURRENT_STREAMS of every
    /// HTTP/2 listener (rest-h2 and grpc).
    pub max_streams: u32,
    /// A test hook, off by default and read from no environment variable:
    /// every subscription's feed (gRPC, WebSocket, SSE) misbehaves so, to
    /// check that a client sees it (the engine's stall test, `verify`
    /// catching a wrong server).
    pub feed_fault: Option<FeedFault>,
}

/// How a feed misbehaves (a test hook: [`ServerConfig::feed_fault`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedFault {
    /// The server pauses for `pause` before it sends event `after + 1`
    /// (then sends the late events at once, stamped with their scheduled
    /// times, as a server that fell behind does).
    Stall {
        /// Events sent before the pause.
        after: u32,
        /// How long the pause lasts.
        pause: Duration,
    },
    /// Event `seq` is never sent.
    Drop {
        /// The event left out.
        seq: u32,
    },
    /// Events `seq` and `seq + 1` are sent in each other's place.
    Swap {
        /// The first of the two.
        seq: u32,
    },
}

/// `PROTOBENCH_IDLE_TIMEOUT`'s default.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// `PROTOBENCH_READ_TIMEOUT`'s default.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// `PROTOBENCH_MAX_STREAMS`'s default.
pub const DEFAULT_MAX_STREAMS: u32 = 1000;

/// PEM files of the certificate chain and its private key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain (PEM).
    pub cert: PathBuf,
    /// The private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// Injected service time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceTime {
    /// `sleep:<duration>`: an async sleep; other calls go on meanwhile.
    Sleep(Duration),
    /// `spin:<duration>`: a busy loop on the thread handling the call.
    Spin(Duration),
    /// `sleep:<from>..<to>/<over>` or `spin:...`: a service time that moves
    /// linearly from `from` to `to` over the first `over` after start-up,
    /// then stays at `to` — a server that warms up (or degrades) on purpose,
    /// for testing warm-up and drift detection.
    Ramp {
        /// Busy loop instead of sleep.
        spin: bool,
        /// At start-up.
        from: Duration,
        /// From `over` on.
        to: Duration,
        /// How long the change takes.
        over: Duration,
    },
}

impl ServiceTime {
    /// The service time `since_start` after start-up, and whether to spin.
    pub fn at(&self, since_start: Duration) -> (Duration, bool) {
        match *self {
            ServiceTime::Sleep(d) => (d, false),
            ServiceTime::Spin(d) => (d, true),
            ServiceTime::Ramp { spin, from, to, over } => {
                let f = if over.is_zero() {
                    1.0
                } else {
                    (since_start.as_secs_f64() / over.as_secs_f64()).min(1.0)
                };
                let ns = from.as_nanos() as f64 + (to.as_nanos() as f64 - from.as_nanos() as f64) * f;
                (Duration::from_nanos(ns.max(0.0) as u64), spin)
            }
        }
    }
}

/// An environment variable with a value the server cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}={value:?}: {reason}")]
pub struct ConfigError {
    /// The variable, e.g. `PROTOBENCH_WORKERS`.
    pub var: &'static str,
    /// Its value.
    pub value: String,
    /// What is wrong with it and what is accepted.
    pub reason: String,
}

impl ConfigError {
    fn new(var: &'static str, value: &str, reason: impl fmt::Display) -> Self {
        ConfigError {
            var,
            value: value.to_owned(),
            reason: reason.to_string(),
        }
    }
}

impl Default for ServerConfig {
    /// No listeners, the env contract's defaults for everything else.
    fn default() -> Self {
        ServerConfig {
            rest: None,
            rest_h2: None,
            grpc: None,
            soap: None,
            graphql: None,
            graphql_get: None,
            connect: None,
            connect_json: None,
            grpc_web: None,
            grpc_web_text: None,
            workers: available_cpus(),
            tls: None,
            failure_rate: 0.0,
            failure_seed: 1,
            service_time: None,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            read_timeout: DEFAULT_READ_TIMEOUT,
            max_streams: DEFAULT_MAX_STREAMS,
            feed_fault: None,
        }
    }
}

impl ServerConfig {
    /// Reads the `PROTOBENCH_*` variables of the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|var| std::env::var(var).ok())
    }

    /// Reads the `PROTOBENCH_*` variables through `lookup` (an unset or empty
    /// variable takes its default).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |var: &str| lookup(var).filter(|v| !v.trim().is_empty());
        let mut config = ServerConfig::default();
        for protocol in Protocol::ALL {
            let var = protocol.addr_env();
            if let Some(value) = get(var) {
                let addr = parse_addr(&value).map_err(|reason| ConfigError::new(var, &value, reason))?;
                config.set_addr(protocol, Some(addr));
            }
        }
        if let Some(value) = get("PROTOBENCH_WORKERS") {
            config.workers = match value.trim().parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(ConfigError::new(
                        "PROTOBENCH_WORKERS",
                        &value,
                        "expected a whole number above 0",
                    ));
                }
            };
        }
        match (get("PROTOBENCH_TLS_CERT"), get("PROTOBENCH_TLS_KEY")) {
            (Some(cert), Some(key)) => {
                config.tls = Some(TlsFiles {
                    cert: cert.into(),
                    key: key.into(),
                })
            }
            (None, None) => {}
            (Some(cert), None) => {
                return Err(ConfigError::new(
                    "PROTOBENCH_TLS_CERT",
                    &cert,
                    "PROTOBENCH_TLS_KEY must be set too",
                ));
            }
            (None, Some(key)) => {
                return Err(ConfigError::new(
                    "PROTOBENCH_TLS_KEY",
                    &key,
                    "PROTOBENCH_TLS_CERT must be set too",
                ));
            }
        }
        if let Some(value) = get("PROTOBENCH_FAILURE_RATE") {
            config.failure_rate = match value.trim().parse::<f64>() {
                Ok(rate) if (0.0..=1.0).contains(&rate) => rate,
                _ => {
                    return Err(ConfigError::new(
                        "PROTOBENCH_FAILURE_RATE",
                        &value,
                        "expected a number in 0..=1",
                    ));
                }
            };
        }
        if let Some(value) = get("PROTOBENCH_FAILURE_SEED") {
            config.failure_seed = value.trim().parse::<u64>().map_err(|_| {
                ConfigError::new("PROTOBENCH_FAILURE_SEED", &value, "expected an unsigned 64-bit integer")
            })?;
        }
        if let Some(value) = get("PROTOBENCH_SERVICE_TIME") {
            config.service_time = Some(
                value
                    .parse()
                    .map_err(|reason| ConfigError::new("PROTOBENCH_SERVICE_TIME", &value, reason))?,
            );
        }
        if let Some(value) = get("PROTOBENCH_MAX_REQUEST_BYTES") {
            config.max_request_bytes = match value.trim().parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(ConfigError::new(
                        "PROTOBENCH_MAX_REQUEST_BYTES",
                        &value,
                        "expected a whole number of bytes above 0",
                    ));
                }
            };
        }
        for (var, slot) in [
            ("PROTOBENCH_IDLE_TIMEOUT", &mut config.idle_timeout),
            ("PROTOBENCH_READ_TIMEOUT", &mut config.read_timeout),
        ] {
            if let Some(value) = get(var) {
                *slot = match parse_duration(value.trim()) {
                    Some(d) if !d.is_zero() => d,
                    _ => {
                        return Err(ConfigError::new(
                            var,
                            &value,
                            "expected a duration above 0 with a unit ns, us, ms or s, e.g. 60s or 500ms",
                        ));
                    }
                };
            }
        }
        if let Some(value) = get("PROTOBENCH_MAX_STREAMS") {
            config.max_streams = match value.trim().parse::<u32>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(ConfigError::new(
                        "PROTOBENCH_MAX_STREAMS",
                        &value,
                        "expected a whole number of streams from 1 to 4294967295",
                    ));
                }
            };
        }
        Ok(config)
    }

    /// The listen address of `protocol`, if it is served.
    pub fn addr(&self, protocol: Protocol) -> Option<SocketAddr> {
        match protocol {
            Protocol::Rest => self.rest,
            Protocol::RestH2 => self.rest_h2,
            Protocol::Grpc => self.grpc,
            Protocol::Soap => self.soap,
            Protocol::Graphql => self.graphql,
            Protocol::GraphqlGet => self.graphql_get,
            Protocol::Connect => self.connect,
            Protocol::ConnectJson => self.connect_json,
            Protocol::GrpcWeb => self.grpc_web,
            Protocol::GrpcWebText => self.grpc_web_text,
        }
    }

    /// Sets (or clears) the listen address of `protocol`.
    pub fn set_addr(&mut self, protocol: Protocol, addr: Option<SocketAddr>) {
        let slot = match protocol {
            Protocol::Rest => &mut self.rest,
            Protocol::RestH2 => &mut self.rest_h2,
            Protocol::Grpc => &mut self.grpc,
            Protocol::Soap => &mut self.soap,
            Protocol::Graphql => &mut self.graphql,
            Protocol::GraphqlGet => &mut self.graphql_get,
            Protocol::Connect => &mut self.connect,
            Protocol::ConnectJson => &mut self.connect_json,
            Protocol::GrpcWeb => &mut self.grpc_web,
            Protocol::GrpcWebText => &mut self.grpc_web_text,
        };
        *slot = addr;
    }
}

/// The CPUs this process may run on (affinity mask and cgroup quota).
pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Parses `ip:port` (`[v6]:port` for IPv6). Host names are refused so that
/// a server binds exactly the address it is given.
pub fn parse_addr(value: &str) -> Result<SocketAddr, String> {
    value
        .trim()
        .parse()
        .map_err(|_| "expected ip:port, e.g. 127.0.0.1:8080 or [::1]:8080".to_owned())
}

impl FromStr for ServiceTime {
    type Err = String;

    /// `sleep:<duration>` or `spin:<duration>`, the duration a decimal number
    /// with a unit `ns`, `us`, `ms` or `s` (`sleep:50ms`, `spin:1.5ms`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        const EXPECTED: &str = "expected sleep:<duration> or spin:<duration> with a unit ns, us, ms or s, \
             e.g. sleep:50ms, or a ramp sleep:<from>..<to>/<over>, e.g. sleep:5ms..200us/10s";
        let (kind, duration) = s.trim().split_once(':').ok_or(EXPECTED)?;
        let spin = match kind {
            "sleep" => false,
            "spin" => true,
            _ => return Err(EXPECTED.to_owned()),
        };
        if let Some((from, rest)) = duration.split_once("..") {
            let (to, over) = rest.split_once('/').ok_or(EXPECTED)?;
            return Ok(ServiceTime::Ramp {
                spin,
                from: parse_duration(from).ok_or(EXPECTED)?,
                to: parse_duration(to).ok_or(EXPECTED)?,
                over: parse_duration(over).ok_or(EXPECTED)?,
            });
        }
        let duration = parse_duration(duration).ok_or(EXPECTED)?;
        Ok(if spin {
            ServiceTime::Spin(duration)
        } else {
            ServiceTime::Sleep(duration)
        })
    }
}

impl fmt::Display for ServiceTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServiceTime::Sleep(d) => write!(f, "sleep:{}ns", d.as_nanos()),
            ServiceTime::Spin(d) => write!(f, "spin:{}ns", d.as_nanos()),
            ServiceTime::Ramp { spin, from, to, over } => write!(
                f,
                "{}:{}ns..{}ns/{}ns",
                if *spin { "spin" } else { "sleep" },
                from.as_nanos(),
                to.as_nanos(),
                over.as_nanos()
            ),
        }
    }
}

/// `50ms`, `1.5s`, `200us`, `10ns`.
fn parse_duration(text: &str) -> Option<Duration> {
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(split);
    let nanos_per_unit = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    if number.is_empty() || number.starts_with('.') {
        return None;
    }
    let nanos = number.parse::<f64>().ok()? * nanos_per_unit;
    (nanos.is_finite() && nanos < 1e18).then(|| Duration::from_nanos(nanos.round() as u64))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<ServerConfig, ConfigError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        ServerConfig::from_lookup(|var| map.get(var).cloned())
    }

    #[test]
    fn an_empty_environment_serves_nothing_with_contract_defaults() {
        let c = config(&[]).unwrap();
        assert_eq!(c, ServerConfig::default());
        assert_eq!(
            (c.failure_rate, c.failure_seed, c.max_request_bytes),
            (0.0, 1, 8_388_608)
        );
        assert_eq!(
            (c.idle_timeout, c.read_timeout, c.max_streams),
            (Duration::from_secs(60), Duration::from_secs(30), 1000)
        );
    }

    #[test]
    fn every_variable_is_read() {
        let c = config(&[
            ("PROTOBENCH_REST_ADDR", "127.0.0.1:0"),
            ("PROTOBENCH_REST_H2_ADDR", "127.0.0.1:8081"),
            ("PROTOBENCH_GRPC_ADDR", "[::1]:50051"),
            ("PROTOBENCH_SOAP_ADDR", "0.0.0.0:8082"),
            ("PROTOBENCH_WORKERS", "3"),
            ("PROTOBENCH_TLS_CERT", "c.pem"),
            ("PROTOBENCH_TLS_KEY", "k.pem"),
            ("PROTOBENCH_FAILURE_RATE", "0.2"),
            ("PROTOBENCH_FAILURE_SEED", "18446744073709551615"),
            ("PROTOBENCH_SERVICE_TIME", "spin:250us"),
            ("PROTOBENCH_MAX_REQUEST_BYTES", "1024"),
            ("PROTOBENCH_IDLE_TIMEOUT", "2s"),
            ("PROTOBENCH_READ_TIMEOUT", "500ms"),
            ("PROTOBENCH_MAX_STREAMS", "100"),
        ])
        .unwrap();
        assert_eq!(c.rest, Some("127.0.0.1:0".parse().unwrap()));
        assert_eq!(c.grpc, Some("[::1]:50051".parse().unwrap()));
        assert_eq!(c.workers, 3);
        assert_eq!(
            c.tls,
            Some(TlsFiles {
                cert: "c.pem".into(),
                key: "k.pem".into()
            })
        );
        assert_eq!(c.failure_rate, 0.2);
        assert_eq!(c.failure_seed, u64::MAX);
        assert_eq!(c.service_time, Some(ServiceTime::Spin(Duration::from_micros(250))));
        assert_eq!(c.max_request_bytes, 1024);
        assert_eq!(c.idle_timeout, Duration::from_secs(2));
        assert_eq!(c.read_timeout, Duration::from_millis(500));
        assert_eq!(c.max_streams, 100);
    }

    #[test]
    fn bad_timeouts_and_stream_limits_are_refused_by_name() {
        for var in ["PROTOBENCH_IDLE_TIMEOUT", "PROTOBENCH_READ_TIMEOUT"] {
            for value in ["60", "0s", "-1s", "1m", "s", "sleep:1s", "ten seconds"] {
                let err = config(&[(var, value)]).unwrap_err();
                assert_eq!(err.var, var, "{value}");
                assert_eq!(
                    err.reason, "expected a duration above 0 with a unit ns, us, ms or s, e.g. 60s or 500ms",
                    "{var}={value}"
                );
            }
        }
        for value in ["0", "-1", "1.5", "4294967296", "many"] {
            let err = config(&[("PROTOBENCH_MAX_STREAMS", value)]).unwrap_err();
            assert_eq!(err.var, "PROTOBENCH_MAX_STREAMS", "{value}");
        }
        assert_eq!(
            config(&[("PROTOBENCH_MAX_STREAMS", "4294967295")]).unwrap().max_streams,
            u32::MAX
        );
    }

    #[test]
    fn bad_values_name_the_variable_and_what_is_accepted() {
        let err = config(&[("PROTOBENCH_FAILURE_RATE", "1.5")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "PROTOBENCH_FAILURE_RATE=\"1.5\": expected a number in 0..=1"
        );
        let err = config(&[("PROTOBENCH_GRPC_ADDR", "localhost:50051")]).unwrap_err();
        assert_eq!(err.var, "PROTOBENCH_GRPC_ADDR");
        let err = config(&[("PROTOBENCH_TLS_CERT", "c.pem")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "PROTOBENCH_TLS_CERT=\"c.pem\": PROTOBENCH_TLS_KEY must be set too"
        );
        assert!(config(&[("PROTOBENCH_WORKERS", "0")]).is_err());
        assert!(config(&[("PROTOBENCH_MAX_REQUEST_BYTES", "-1")]).is_err());
    }

    #[test]
    fn a_ramped_service_time_moves_linearly_then_stays() {
        let ramp: ServiceTime = "spin:5ms..1ms/4s".parse().unwrap();
        let ms = |s: f64| ramp.at(Duration::from_secs_f64(s)).0.as_secs_f64() * 1e3;
        assert_eq!(ramp.at(Duration::ZERO), (Duration::from_millis(5), true));
        assert!((ms(2.0) - 3.0).abs() < 1e-6, "halfway: {}", ms(2.0));
        assert!((ms(4.0) - 1.0).abs() < 1e-6);
        assert!((ms(60.0) - 1.0).abs() < 1e-6, "stays at the end value");
        let fixed: ServiceTime = "sleep:2ms".parse().unwrap();
        assert_eq!(fixed.at(Duration::from_secs(9)), (Duration::from_millis(2), false));
    }

    #[test]
    fn service_times_parse_with_every_unit() {
        let cases = [
            ("sleep:50ms", Some(ServiceTime::Sleep(Duration::from_millis(50)))),
            ("spin:1.5ms", Some(ServiceTime::Spin(Duration::from_micros(1500)))),
            ("sleep:2s", Some(ServiceTime::Sleep(Duration::from_secs(2)))),
            ("sleep:10ns", Some(ServiceTime::Sleep(Duration::from_nanos(10)))),
            ("spin:200us", Some(ServiceTime::Spin(Duration::from_micros(200)))),
            (
                "sleep:5ms..200us/10s",
                Some(ServiceTime::Ramp {
                    spin: false,
                    from: Duration::from_millis(5),
                    to: Duration::from_micros(200),
                    over: Duration::from_secs(10),
                }),
            ),
            ("sleep:5ms..200us", None), // a ramp needs its length
            ("sleep:50", None),         // no unit
            ("nap:50ms", None),         // unknown kind
            ("sleep:ms", None),         // no number
            ("sleep:-5ms", None),       // negative
            ("50ms", None),             // no kind
            ("sleep:1e3ms", None),      // no exponents
        ];
        for (text, expected) in cases {
            assert_eq!(text.parse::<ServiceTime>().ok(), expected, "{text}");
        }
    }
}
