//! The four protocols every server speaks, named the same way everywhere
//! (flags, listening lines, results).

use std::fmt;
use std::str::FromStr;

/// An API protocol of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    /// JSON over HTTP/1.1 (`rest`).
    Rest,
    /// JSON over HTTP/2: h2c with prior knowledge in clear text, ALPN `h2`
    /// with TLS (`rest-h2`).
    RestH2,
    /// gRPC over HTTP/2 (`grpc`).
    Grpc,
    /// SOAP 1.1 over HTTP/1.1 (`soap`).
    Soap,
}

impl Protocol {
    /// Every protocol, in the contract's order.
    pub const ALL: [Protocol; 4] = [Protocol::Rest, Protocol::RestH2, Protocol::Grpc, Protocol::Soap];

    /// The name used in flags, listening lines and results: `rest`,
    /// `rest-h2`, `grpc`, `soap`.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Rest => "rest",
            Protocol::RestH2 => "rest-h2",
            Protocol::Grpc => "grpc",
            Protocol::Soap => "soap",
        }
    }

    /// The environment variable holding this protocol's listen address, e.g.
    /// `PROTOBENCH_REST_H2_ADDR`.
    pub fn addr_env(self) -> &'static str {
        match self {
            Protocol::Rest => "PROTOBENCH_REST_ADDR",
            Protocol::RestH2 => "PROTOBENCH_REST_H2_ADDR",
            Protocol::Grpc => "PROTOBENCH_GRPC_ADDR",
            Protocol::Soap => "PROTOBENCH_SOAP_ADDR",
        }
    }

    /// Whether the protocol runs over HTTP/2 (and so negotiates ALPN `h2`
    /// with TLS); otherwise HTTP/1.1 (ALPN `http/1.1`).
    pub fn is_http2(self) -> bool {
        matches!(self, Protocol::RestH2 | Protocol::Grpc)
    }

    /// The ALPN protocol id offered with TLS: `h2` or `http/1.1`.
    pub fn alpn(self) -> &'static [u8] {
        if self.is_http2() { b"h2" } else { b"http/1.1" }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A protocol name that is not one of the four.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown protocol {0:?}; valid protocols: rest, rest-h2, grpc, soap")]
pub struct UnknownProtocol(pub String);

impl FromStr for Protocol {
    type Err = UnknownProtocol;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Protocol::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownProtocol(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_valid_ones() {
        for p in Protocol::ALL {
            assert_eq!(p.name().parse::<Protocol>(), Ok(p));
        }
        let err = "http".parse::<Protocol>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown protocol \"http\"; valid protocols: rest, rest-h2, grpc, soap"
        );
    }
}
