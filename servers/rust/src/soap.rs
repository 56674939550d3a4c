//! `soap`: SOAP 1.1 document/literal at `POST /soap` with the contract's XML
//! codec, and the WSDL at `GET /soap?wsdl`.
//!
//! Dispatch is on the body element (`<Op>Request`); `SOAPAction` is not
//! needed. Bad input is a `soap:Client` fault with HTTP 500, an injected
//! failure a `soap:Server` fault; a body over the limit gets 413, a content
//! type other than `text/xml` 415, other paths 404, other methods 405, each
//! with a `soap:Client` fault explaining it.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::Response;
use axum::routing::any;
use protobench_contract::soap::{self as contract_soap, FaultCode};
use protobench_contract::{Message, Operation, SOAP_NAMESPACE};

use crate::body::{self, BodyError};
use crate::core::{CallError, Core, INJECTED_FAILURE, Reply};

/// The contract's WSDL (with the XSD inlined).
const WSDL: &str = include_str!("../../../contract/wsdl/protobench.wsdl");
/// The attribute whose value is rewritten to the address the client used.
const LOCATION: &str = "<soap:address location=\"";

use protobench_contract::soap::{ENVELOPE_HEAD as HEAD, ENVELOPE_TAIL as TAIL};

/// The most XML elements a request envelope may hold (the contract's largest
/// legitimate request has fewer than 40). The element tree the codec builds
/// costs far more than the bytes (about 60 bytes per `<a/>`), so a request
/// over this is refused before it is parsed.
pub(crate) const MAX_ELEMENTS: usize = 10_000;

#[derive(Clone)]
struct Soap {
    core: Arc<Core>,
    scheme: &'static str,
}

/// The router serving `/soap`; `tls` picks the scheme of the WSDL's address.
pub(crate) fn router(core: Arc<Core>, tls: bool) -> Router {
    let state = Soap {
        core,
        scheme: if tls { "https" } else { "http" },
    };
    Router::new()
        .route("/soap", any(endpoint))
        .fallback(not_found)
        .with_state(state)
}

async fn endpoint(State(soap): State<Soap>, request: Request) -> Response {
    let method = request.method().clone();
    if method == Method::POST {
        return call(&soap.core, request).await;
    }
    let wants_wsdl = request.uri().query().is_some_and(|q| q.eq_ignore_ascii_case("wsdl"));
    if wants_wsdl && (method == Method::GET || method == Method::HEAD) {
        return wsdl(soap.scheme, request.uri(), request.headers());
    }
    let mut response = fault(
        StatusCode::METHOD_NOT_ALLOWED,
        FaultCode::Client,
        &format!("method {method} is not allowed on /soap; POST a SOAP envelope, or GET /soap?wsdl for the WSDL"),
    );
    let allow = if wants_wsdl { "GET, HEAD, POST" } else { "POST" };
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

async fn call(core: &Core, request: Request) -> Response {
    let _in_flight = core.enter();
    if !body::has_content_type(request.headers(), "text/xml") {
        let found = body::content_type(request.headers());
        let message = format!("content type {found} is not supported; expected text/xml; charset=utf-8");
        return fault(StatusCode::UNSUPPORTED_MEDIA_TYPE, FaultCode::Client, &message);
    }
    let version = request.version();
    let bytes = match body::read(request, core.max_request_bytes, core.read_timeout).await {
        Ok(bytes) => bytes,
        Err(err @ BodyError::TooLarge { .. }) => {
            return fault(StatusCode::PAYLOAD_TOO_LARGE, FaultCode::Client, &err.to_string());
        }
        Err(err @ BodyError::Timeout { .. }) => {
            let mut response = fault(StatusCode::REQUEST_TIMEOUT, FaultCode::Client, &err.to_string());
            body::close_connection(version, &mut response);
            return response;
        }
        Err(err) => return client_fault(&err.to_string()),
    };
    if more_elements_than(&bytes, MAX_ELEMENTS) {
        return client_fault(&format!("too many XML elements: more than {MAX_ELEMENTS}"));
    }
    let payload = match contract_soap::parse_envelope(&bytes) {
        Ok(payload) => payload,
        Err(err) => return client_fault(&format!("invalid SOAP envelope: {err}")),
    };
    let op = match Operation::from_soap_request_element(&payload.name) {
        Some(op) if payload.namespace.as_deref() == Some(SOAP_NAMESPACE) => op,
        _ => {
            return client_fault(&format!(
                "unknown body element {}; expected an operation's request element in {SOAP_NAMESPACE}",
                payload.qualified_name()
            ));
        }
    };
    let message = match Message::from_xml_element(op.request_kind(), &payload) {
        Ok(message) => message,
        Err(err) => return client_fault(&format!("invalid {}: {err}", op.soap_request_element())),
    };
    drop(payload);
    match core.respond(op, message).await {
        Ok(reply) => xml_response(StatusCode::OK, envelope(op.soap_response_element(), &reply)),
        Err(CallError::Invalid(m) | CallError::NotFound(m)) => client_fault(&m),
        Err(CallError::Injected) => fault(StatusCode::INTERNAL_SERVER_ERROR, FaultCode::Server, INJECTED_FAILURE),
    }
}

/// Whether `xml` holds more than `max` elements: a byte scan counting start
/// and empty-element tags (`<` followed by anything but `/`, `!` or `?`),
/// skipping comments and CDATA sections, where `<` may appear unescaped. In
/// well-formed XML `<` appears nowhere else, so the count is exact; for
/// anything else the parser that runs next says what is wrong.
fn more_elements_than(xml: &[u8], max: usize) -> bool {
    let mut count = 0usize;
    let mut rest = xml;
    while let Some(at) = rest.iter().position(|&b| b == b'<') {
        rest = &rest[at + 1..];
        let skip_past = |rest: &[u8], end: &[u8]| -> usize {
            rest.windows(end.len())
                .position(|w| w == end)
                .map_or(rest.len(), |i| i + end.len())
        };
        if rest.starts_with(b"!--") {
            rest = &rest[skip_past(rest, b"-->")..];
        } else if rest.starts_with(b"![CDATA[") {
            rest = &rest[skip_past(rest, b"]]>")..];
        } else if !matches!(rest.first(), None | Some(b'/' | b'!' | b'?')) {
            count += 1;
            if count > max {
                return true;
            }
        }
    }
    false
}

fn envelope(element: &str, reply: &Reply) -> String {
    let mut out = String::with_capacity(256);
    out.push_str(HEAD);
    reply.write_xml(&mut out, element);
    out.push_str(TAIL);
    out
}

/// The WSDL with its `soap:address` pointing at the address the client used.
fn wsdl(scheme: &str, uri: &Uri, headers: &HeaderMap) -> Response {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| uri.authority().map(|a| a.as_str()))
        .unwrap_or("localhost");
    let mut out = String::with_capacity(WSDL.len() + host.len());
    match split_wsdl() {
        Some((head, tail)) => {
            out.push_str(head);
            out.push_str(scheme);
            out.push_str("://");
            escape_attribute(&mut out, host);
            out.push_str("/soap");
            out.push_str(tail);
        }
        None => out.push_str(WSDL),
    }
    xml_response(StatusCode::OK, out)
}

/// Escapes text for a double-quoted attribute value.
fn escape_attribute(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

/// The WSDL before and after the address location's value.
fn split_wsdl() -> Option<(&'static str, &'static str)> {
    let start = WSDL.find(LOCATION)? + LOCATION.len();
    let end = start + WSDL[start..].find('"')?;
    Some((&WSDL[..start], &WSDL[end..]))
}

async fn not_found(uri: Uri) -> Response {
    let message = format!("no SOAP endpoint at {}; POST to /soap", uri.path());
    fault(StatusCode::NOT_FOUND, FaultCode::Client, &message)
}

fn client_fault(message: &str) -> Response {
    fault(StatusCode::INTERNAL_SERVER_ERROR, FaultCode::Client, message)
}

fn fault(status: StatusCode, code: FaultCode, message: &str) -> Response {
    xml_response(status, contract_soap::fault(code, message))
}

fn xml_response(status: StatusCode, body: String) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(contract_soap::CONTENT_TYPE),
    );
    response
}

#[cfg(test)]
mod tests {
    use protobench_contract::{Dataset, workload};

    use super::*;

    #[test]
    fn the_envelope_is_the_contract_envelope() {
        let dataset = Dataset::generate();
        for w in workload::ALL {
            let response = w.operation.respond(&w.request(), &dataset).unwrap();
            let expected = contract_soap::envelope(w.operation.soap_response_element(), &response);
            let ours = envelope(w.operation.soap_response_element(), &Reply::Owned(response));
            assert_eq!(ours, expected, "{}", w.name);
        }
    }

    #[test]
    fn elements_are_counted_outside_comments_and_cdata() {
        let cases: [(&[u8], usize); 9] = [
            (b"", 0),
            (b"<a/>", 1),
            (b"<a></a>", 1),
            (b"<?xml version='1.0'?><a><b/><c x='1'>t</c></a>", 3),
            (b"<a><!-- <b/><c/> --></a>", 1),   // tags in a comment
            (b"<a><![CDATA[<b/><c>]]></a>", 1), // tags in CDATA
            (b"<a><!-- unterminated <b/>", 1),  // the rest is the comment
            (b"<!DOCTYPE a><a/>", 1),           // declarations are not elements
            (b"<a>&lt;b/&gt;</a>", 1),          // escaped text
        ];
        for (xml, elements) in cases {
            let text = String::from_utf8_lossy(xml);
            assert!(!more_elements_than(xml, elements), "{text}");
            assert_eq!(
                more_elements_than(xml, elements.saturating_sub(1)),
                elements > 0,
                "{text}"
            );
        }
        let every_vector = workload::ALL.iter().map(|w| {
            let xml = contract_soap::envelope(w.operation.soap_request_element(), &w.request());
            (w.name, xml)
        });
        for (name, xml) in every_vector {
            assert!(
                !more_elements_than(xml.as_bytes(), 40),
                "{name} has fewer than 40 elements"
            );
        }
    }

    #[test]
    fn the_wsdl_has_one_address_to_rewrite() {
        let (head, tail) = split_wsdl().expect("the WSDL has a soap:address location");
        assert!(head.ends_with(LOCATION) && tail.starts_with('"'));
        assert_eq!(WSDL.matches(LOCATION).count(), 1);
    }
}
