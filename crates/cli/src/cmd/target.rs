//! The target of `load` as ghz, oha and hey users write it: a URL whose
//! scheme names the protocol (`http://`, `https://` -> rest; `grpc://`,
//! `grpcs://` -> grpc), or `host:port` with `--protocol` (or `--call`, which
//! means gRPC). `--protocol` always wins over the inference.

use protobench_load::Protocol;

/// A target resolved: the protocol, the address as the engine takes it, and
/// whether its scheme asks for TLS (`grpcs://`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    pub(crate) protocol: Protocol,
    pub(crate) target: String,
    pub(crate) tls: bool,
}

/// Resolves `target` with an explicit `--protocol` (if any) and whether
/// `--call` was given.
pub(crate) fn resolve(protocol: Option<&str>, target: &str, call: bool) -> Result<Resolved, String> {
    let explicit: Option<Protocol> = protocol
        .map(|p| {
            p.parse()
                .map_err(|e: protobench_contract::protocol::UnknownProtocol| e.to_string())
        })
        .transpose()?;
    let lower = target.to_ascii_lowercase();
    let grpc_scheme = [("grpc://", false), ("grpcs://", true)]
        .into_iter()
        .find(|(s, _)| lower.starts_with(s));
    if let Some((scheme, tls)) = grpc_scheme {
        if let Some(p) = explicit.filter(|p| *p != Protocol::Grpc) {
            return Err(format!(
                "--protocol {p} does not match the target {target}: a {scheme} target is gRPC (use host:port or an http:// URL for {p})"
            ));
        }
        let address = target[scheme.len()..].trim_end_matches('/');
        if address.is_empty() || address.contains('/') {
            return Err(format!(
                "invalid target {target}: a {scheme} target is {scheme}host:port (the method goes in --call)"
            ));
        }
        return Ok(Resolved {
            protocol: Protocol::Grpc,
            target: address.to_owned(),
            tls,
        });
    }
    let http = lower.starts_with("http://") || lower.starts_with("https://");
    let protocol = match (explicit, http, call) {
        (Some(p), _, _) => p,
        (None, _, true) => Protocol::Grpc,
        (None, true, false) => Protocol::Rest,
        (None, false, false) => {
            return Err(format!(
                "cannot tell the protocol of {target}: give --protocol rest|rest-h2|grpc|soap, a URL (http://, https://, grpc://, grpcs://) or --call for gRPC"
            ));
        }
    };
    Ok(Resolved {
        protocol,
        target: target.to_owned(),
        tls: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(protocol: Option<&str>, target: &str, call: bool) -> (Protocol, String, bool) {
        let r = resolve(protocol, target, call).unwrap_or_else(|e| panic!("{target}: {e}"));
        (r.protocol, r.target, r.tls)
    }

    #[test]
    fn inference_table() {
        let cases: &[(Option<&str>, &str, bool, (Protocol, &str, bool))] = &[
            (
                None,
                "http://127.0.0.1:8080/items",
                false,
                (Protocol::Rest, "http://127.0.0.1:8080/items", false),
            ), // http -> rest
            (
                None,
                "https://api.example/x",
                false,
                (Protocol::Rest, "https://api.example/x", false),
            ), // https -> rest (TLS from the URL)
            (None, "HTTP://h:1/", false, (Protocol::Rest, "HTTP://h:1/", false)), // schemes ignore case
            (
                None,
                "grpc://127.0.0.1:50051",
                false,
                (Protocol::Grpc, "127.0.0.1:50051", false),
            ), // grpc:// -> grpc, bare address
            (None, "grpcs://h:443/", false, (Protocol::Grpc, "h:443", true)),     // grpcs:// -> grpc over TLS
            (
                None,
                "127.0.0.1:50051",
                true,
                (Protocol::Grpc, "127.0.0.1:50051", false),
            ), // --call means gRPC
            (
                Some("rest-h2"),
                "http://h:1/",
                false,
                (Protocol::RestH2, "http://h:1/", false),
            ), // --protocol overrides http
            (
                Some("soap"),
                "127.0.0.1:8084",
                false,
                (Protocol::Soap, "127.0.0.1:8084", false),
            ), // host:port needs --protocol
            (Some("grpc"), "grpc://h:1", false, (Protocol::Grpc, "h:1", false)),  // agreeing is fine
        ];
        for (p, target, call, (proto, addr, tls)) in cases {
            assert_eq!(
                ok(*p, target, *call),
                (*proto, addr.to_string(), *tls),
                "{p:?} {target}"
            );
        }
    }

    #[test]
    fn refusals_name_the_inputs() {
        let cases: &[(Option<&str>, &str, &str)] = &[
            (
                None,
                "127.0.0.1:8080",
                "cannot tell the protocol of 127.0.0.1:8080: give --protocol",
            ), // no scheme, no --call
            (
                Some("rest"),
                "grpc://h:1",
                "--protocol rest does not match the target grpc://h:1",
            ), // conflicting
            (None, "grpc://h:1/pkg.Svc/M", "the method goes in --call"), // a path on a gRPC URL
            (Some("smtp"), "h:1", "smtp"),                               // unknown protocol
        ];
        for (p, target, want) in cases {
            let e = resolve(*p, target, false).unwrap_err();
            assert!(e.contains(want), "{target}: {e}");
        }
    }
}
