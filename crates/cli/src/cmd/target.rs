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

    /// `--protocol`, TARGET, `--call` given, and what they resolve to.
    type Case<'a> = (Option<&'a str>, &'a str, bool, (Protocol, &'a str, bool));

    #[test]
    fn inference_table() {
        let cases: &[Case<'_>] = &[
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

/// A hint when the TLS setting likely does not match the target: a TLS
/// handshake answered in plain text (`tls`, and the engine saw no TLS
/// record: `LoadError::tls_answered_in_plain_text`).
pub(crate) fn tls_hint_for_error(tls: bool, e: &protobench_load::LoadError) -> Option<&'static str> {
    (tls && e.tls_answered_in_plain_text()).then_some(
        "hint: the target answered the TLS handshake in plain text: it does not speak TLS there; \
drop --tls/--insecure/--cacert, or use http:// or grpc:// instead of https:// or grpcs://",
    )
}

/// A hint when a clear-text run got no success and only replies that were
/// not HTTP (or connections closed at once): what a TLS server does with
/// clear text.
pub(crate) fn tls_hint_for_result(r: &protobench_load::LoadResult) -> Option<&'static str> {
    use protobench_model::load::ErrorKind;
    // By kind only (a connection that an HTTP/2 target answered with
    // something else fails the run before any result: the error's hint).
    let garbled = !r.errors.is_empty()
        && r.errors
            .iter()
            .all(|e| matches!(e.kind, ErrorKind::Reset | ErrorKind::Other));
    (r.plan.tls.is_none() && r.successes == 0 && garbled).then_some(
        "hint: no call succeeded and the replies were not plain HTTP: if the target speaks TLS, add --tls \
(--insecure for a self-signed certificate) or use https:// or grpcs://",
    )
}

#[cfg(test)]
mod hint_tests {
    use protobench_model::load::{ErrorCount, ErrorKind, TlsPlan};

    use super::*;

    #[test]
    fn a_plain_text_answer_to_tls_gets_the_hint() {
        let connect = |cause| protobench_load::LoadError::Connect {
            target: "127.0.0.1:1".into(),
            message: "TLS handshake with 127.0.0.1:1: received corrupt message of type InvalidContentType".into(),
            cause,
        };
        let plain = connect(Some(protobench_load::ConnectCause::PlainTextToTls));
        assert!(tls_hint_for_error(true, &plain).is_some());
        assert!(
            tls_hint_for_error(false, &plain).is_none(),
            "no TLS asked: not this mistake"
        );
        assert!(
            tls_hint_for_error(true, &connect(None)).is_none(),
            "decided on the cause, not the text"
        );
    }

    #[test]
    fn clear_text_to_a_tls_server_gets_the_hint_only_when_nothing_worked() {
        let mut r = protobench_model::testing::result("rest", "inventory.xs", 0.0, 5, 1);
        r.errors = vec![ErrorCount {
            kind: ErrorKind::Other,
            count: 5,
            sample: "invalid HTTP/1.1 response: invalid HTTP version".into(),
        }];
        assert!(tls_hint_for_result(&r).is_some());
        r.plan.tls = Some(TlsPlan::default());
        assert!(tls_hint_for_result(&r).is_none(), "TLS was on");
        r.plan.tls = None;
        r.errors[0].kind = ErrorKind::HttpStatus;
        assert!(tls_hint_for_result(&r).is_none(), "an HTTP status is plain HTTP");
        r.errors[0].kind = ErrorKind::Reset;
        r.successes = 3;
        assert!(tls_hint_for_result(&r).is_none(), "some calls worked");
    }
}
