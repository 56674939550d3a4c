//! The protocols of the contract, named the same way everywhere (flags,
//! listening lines, results): the four every stack serves, and GraphQL,
//! Connect and gRPC-Web, which a stack serves where its libraries do.

use std::fmt;
use std::str::FromStr;

use crate::Encoding;

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
    /// GraphQL over HTTP/1.1: `POST /graphql` with a JSON body (`graphql`).
    Graphql,
    /// GraphQL persisted queries over HTTP/1.1: `GET /graphql` naming the
    /// document by its SHA-256 (Apollo's automatic persisted queries;
    /// `graphql-get`). Queries only.
    GraphqlGet,
    /// Connect unary with protobuf bodies (`application/proto`) over
    /// HTTP/1.1 (`connect`).
    Connect,
    /// Connect unary with JSON bodies (`application/json`) over HTTP/1.1
    /// (`connect-json`).
    ConnectJson,
    /// gRPC-Web, binary (`application/grpc-web+proto`), over HTTP/1.1
    /// (`grpc-web`).
    GrpcWeb,
    /// gRPC-Web, base64 text (`application/grpc-web-text`), over HTTP/1.1
    /// (`grpc-web-text`).
    GrpcWebText,
}

impl Protocol {
    /// Every protocol, in the contract's order.
    pub const ALL: [Protocol; 10] = [
        Protocol::Rest,
        Protocol::RestH2,
        Protocol::Grpc,
        Protocol::Soap,
        Protocol::Graphql,
        Protocol::GraphqlGet,
        Protocol::Connect,
        Protocol::ConnectJson,
        Protocol::GrpcWeb,
        Protocol::GrpcWebText,
    ];

    /// The four protocols every stack serves (the others: where the
    /// stack's libraries serve them, as its manifest says).
    pub const CORE: [Protocol; 4] = [Protocol::Rest, Protocol::RestH2, Protocol::Grpc, Protocol::Soap];

    /// The name used in flags, listening lines and results: `rest`,
    /// `rest-h2`, `grpc`, `soap`, `graphql`, `graphql-get`, `connect`, `connect-json`,
    /// `grpc-web`, `grpc-web-text`.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Rest => "rest",
            Protocol::RestH2 => "rest-h2",
            Protocol::Grpc => "grpc",
            Protocol::Soap => "soap",
            Protocol::Graphql => "graphql",
            Protocol::GraphqlGet => "graphql-get",
            Protocol::Connect => "connect",
            Protocol::ConnectJson => "connect-json",
            Protocol::GrpcWeb => "grpc-web",
            Protocol::GrpcWebText => "grpc-web-text",
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
            Protocol::Graphql => "PROTOBENCH_GRAPHQL_ADDR",
            Protocol::GraphqlGet => "PROTOBENCH_GRAPHQL_GET_ADDR",
            Protocol::Connect => "PROTOBENCH_CONNECT_ADDR",
            Protocol::ConnectJson => "PROTOBENCH_CONNECT_JSON_ADDR",
            Protocol::GrpcWeb => "PROTOBENCH_GRPC_WEB_ADDR",
            Protocol::GrpcWebText => "PROTOBENCH_GRPC_WEB_TEXT_ADDR",
        }
    }

    /// Whether the protocol runs over HTTP/2 (and so negotiates ALPN `h2`
    /// with TLS); otherwise HTTP/1.1 (ALPN `http/1.1`).
    pub fn is_http2(self) -> bool {
        matches!(self, Protocol::RestH2 | Protocol::Grpc)
    }

    /// Whether the protocol runs over HTTP/1.1, one call at a time per
    /// connection (`rest`, `soap`, `graphql`, `connect`, `connect-json`,
    /// `grpc-web`, `grpc-web-text`).
    pub fn is_http1(self) -> bool {
        !self.is_http2()
    }

    /// The ALPN protocol id offered with TLS: `h2` or `http/1.1`.
    pub fn alpn(self) -> &'static [u8] {
        self.alpn_ids()[0]
    }

    /// The ALPN ids a client offers (rustls' form): `[h2]` or `[http/1.1]`.
    pub fn alpn_ids(self) -> &'static [&'static [u8]] {
        if self.is_http2() { &[b"h2"] } else { &[b"http/1.1"] }
    }

    /// The encoding of the messages it carries (the vectors it is verified
    /// against): JSON for `rest`, `rest-h2` and `connect-json`, protobuf for
    /// `grpc`, `connect`, `grpc-web` and `grpc-web-text` (in their own
    /// envelopes: see [`Protocol::content_type`]), XML for `soap`, GraphQL
    /// for `graphql`.
    pub fn encoding(self) -> Encoding {
        match self {
            Protocol::Rest | Protocol::RestH2 | Protocol::ConnectJson => Encoding::Json,
            Protocol::Grpc | Protocol::Connect | Protocol::GrpcWeb | Protocol::GrpcWebText => Encoding::Protobuf,
            Protocol::Soap => Encoding::Xml,
            Protocol::Graphql | Protocol::GraphqlGet => Encoding::Graphql,
        }
    }

    /// The request's `Content-Type` (and a success response's media type).
    pub fn content_type(self) -> &'static str {
        match self {
            Protocol::Rest | Protocol::RestH2 | Protocol::Graphql | Protocol::GraphqlGet | Protocol::ConnectJson => {
                "application/json"
            }
            Protocol::Grpc => "application/grpc",
            Protocol::Soap => "text/xml; charset=utf-8",
            Protocol::Connect => "application/proto",
            Protocol::GrpcWeb => "application/grpc-web+proto",
            Protocol::GrpcWebText => "application/grpc-web-text",
        }
    }
}

impl serde::Serialize for Protocol {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Protocol {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// Protocol names joined by `sep`, e.g. `rest, grpc` (for messages).
pub fn names(protocols: &[Protocol], sep: &str) -> String {
    protocols.iter().map(|p| p.name()).collect::<Vec<_>>().join(sep)
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A protocol name that is not one of the four.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown protocol {0:?}; valid protocols: rest, rest-h2, grpc, soap, graphql, graphql-get, connect, connect-json, grpc-web, grpc-web-text"
)]
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
    #[test]
    fn each_fact_about_a_protocol_has_one_home() {
        use crate::Encoding;
        let rows = [
            // protocol, HTTP/2, ALPN, encoding
            (Protocol::Rest, false, &b"http/1.1"[..], Encoding::Json),
            (Protocol::RestH2, true, b"h2", Encoding::Json),
            (Protocol::Grpc, true, b"h2", Encoding::Protobuf),
            (Protocol::Soap, false, b"http/1.1", Encoding::Xml),
            (Protocol::Graphql, false, b"http/1.1", Encoding::Graphql),
            (Protocol::GraphqlGet, false, b"http/1.1", Encoding::Graphql),
            (Protocol::Connect, false, b"http/1.1", Encoding::Protobuf),
            (Protocol::ConnectJson, false, b"http/1.1", Encoding::Json),
            (Protocol::GrpcWeb, false, b"http/1.1", Encoding::Protobuf),
            (Protocol::GrpcWebText, false, b"http/1.1", Encoding::Protobuf),
        ];
        assert_eq!(rows.len(), Protocol::ALL.len());
        for (p, h2, alpn, encoding) in rows {
            assert_eq!((p.is_http2(), p.is_http1()), (h2, !h2), "{p}");
            assert_eq!((p.alpn(), p.encoding()), (alpn, encoding), "{p}");
        }
    }

    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_valid_ones() {
        for p in Protocol::ALL {
            assert_eq!(p.name().parse::<Protocol>(), Ok(p));
        }
        let json: Protocol = serde_json::from_str("\"rest-h2\"").unwrap();
        assert_eq!(json, Protocol::RestH2);
        assert_eq!(serde_json::to_string(&Protocol::Grpc).unwrap(), "\"grpc\"");
        let bad = serde_json::from_str::<Protocol>("\"http\"").unwrap_err().to_string();
        assert!(bad.starts_with("unknown protocol \"http\"; valid protocols"), "{bad}");
        let err = "http".parse::<Protocol>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown protocol \"http\"; valid protocols: rest, rest-h2, grpc, soap, graphql, graphql-get, connect, connect-json, grpc-web, grpc-web-text"
        );
        let envs: std::collections::BTreeSet<_> = Protocol::ALL.iter().map(|p| p.addr_env()).collect();
        assert_eq!(envs.len(), Protocol::ALL.len(), "one listener variable per protocol");
    }
}
