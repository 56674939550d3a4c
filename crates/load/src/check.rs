//! Judging responses: what counts as a success, and under which error kind a
//! failure is counted. Pure functions over a driver's [`Response`].

use std::cell::Cell;

use prost_reflect::MessageDescriptor;
use protobench_contract::{Encoding, Message, Operation, Protocol, soap};
use protobench_model::load::ErrorKind;

use crate::driver::{CallError, Keep, Response};

/// The wire family of a protocol, which decides how statuses are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// JSON over HTTP (`rest`, `rest-h2`).
    Rest,
    /// gRPC over HTTP/2.
    Grpc,
    /// SOAP 1.1 over HTTP/1.1.
    Soap,
    /// GraphQL over HTTP: HTTP 200, errors in the body's `errors`.
    Graphql,
    /// Connect unary (`connect`, `connect-json`): HTTP 200, errors as
    /// non-200 statuses with a JSON body.
    Connect,
    /// gRPC-Web (`grpc-web`, `grpc-web-text`): HTTP 200, the gRPC status
    /// in the trailer frame (the driver unwraps it like gRPC's).
    GrpcWeb,
}

impl Family {
    /// The family a protocol belongs to.
    pub(crate) fn of(protocol: Protocol) -> Family {
        match protocol {
            Protocol::Rest | Protocol::RestH2 => Family::Rest,
            Protocol::Grpc => Family::Grpc,
            Protocol::Soap => Family::Soap,
            Protocol::Graphql | Protocol::GraphqlGet => Family::Graphql,
            Protocol::Connect | Protocol::ConnectJson => Family::Connect,
            Protocol::GrpcWeb | Protocol::GrpcWebText => Family::GrpcWeb,
        }
    }

    /// Whether a call's body must be kept to judge its status: a GraphQL
    /// error comes with HTTP 200.
    pub(crate) fn needs_body(self) -> bool {
        self == Family::Graphql
    }
}

/// What a contract workload's response must be.
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    pub(crate) operation: Operation,
    pub(crate) encoding: Encoding,
    pub(crate) message: Message,
}

/// The response checks of one run.
#[derive(Debug, Clone)]
pub(crate) struct Check {
    pub(crate) family: Family,
    /// Contract workload: the expected message.
    pub(crate) expected: Option<Expected>,
    /// GraphQL-only workload: the expected response body as JSON, nulls
    /// dropped (compared as a value).
    pub(crate) expected_data: Option<serde_json::Value>,
    /// Custom gRPC call: the response type (decoded with `--validate full`).
    pub(crate) custom_response: Option<MessageDescriptor>,
    /// `--validate full`.
    pub(crate) full: bool,
}

/// Per-thread state of the checks: the body size of the first fully checked
/// response, which every later response must match (a server answers one
/// request with one body; its size is the cheap check of every call).
#[derive(Debug, Default)]
pub(crate) struct CheckState {
    reference_len: Cell<Option<usize>>,
}

impl Check {
    /// Which body the next call should keep: for a full check (every call
    /// under `--validate full`, the first of a workload whose response is
    /// known), and GraphQL's for its errors unless it is the size of the
    /// first fully checked response (counted as that response, as every
    /// protocol's unkept body is).
    pub(crate) fn keep(&self, state: &CheckState) -> Keep {
        let reference = state.reference_len.get();
        if self.full || (self.has_expectation() && reference.is_none()) {
            return Keep::All;
        }
        match (self.family.needs_body(), reference) {
            (false, _) => Keep::No,
            (true, Some(len)) => Keep::UnlessLen(len),
            (true, None) => Keep::All,
        }
    }

    /// Whether the run calls a workload whose response is known.
    fn has_expectation(&self) -> bool {
        self.expected.is_some() || self.expected_data.is_some()
    }

    /// Ok for a success, else the error it is counted as.
    pub(crate) fn judge(&self, resp: &Response, state: &CheckState) -> Result<(), CallError> {
        self.status(resp)?;
        if let Some(body) = &resp.body {
            // A GraphQL body is kept for its errors (looked for in
            // `status`); one of the first response's size is taken as that
            // response, as every protocol's unkept body is.
            let cheap = self.family.needs_body() && !self.full && state.reference_len.get() == Some(resp.body_len);
            if let Some(exp) = self.expected.as_ref().filter(|_| !cheap) {
                let found = Message::decode_response(exp.operation, exp.encoding, body).map_err(|e| {
                    CallError::new(
                        ErrorKind::WrongResponse,
                        format!("undecodable {} response: {e}", exp.operation),
                    )
                })?;
                if found != exp.message {
                    return Err(CallError::new(
                        ErrorKind::WrongResponse,
                        format!("{} response differs from the expected message", exp.operation),
                    ));
                }
                if state.reference_len.get().is_none() {
                    state.reference_len.set(Some(resp.body_len));
                }
            }
            if let Some(want) = self.expected_data.as_ref().filter(|_| !cheap) {
                let found: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
                    CallError::new(
                        ErrorKind::WrongResponse,
                        format!("a GraphQL response that is not JSON: {e}"),
                    )
                })?;
                let found = protobench_contract::graphql::drop_nulls(found);
                if let Some((path, f, e)) = crate::diff::first_difference(&found, want, String::new()) {
                    return Err(CallError::new(
                        ErrorKind::WrongResponse,
                        format!("GraphQL response differs at {path}: found {f}, expected {e}"),
                    ));
                }
                if state.reference_len.get().is_none() {
                    state.reference_len.set(Some(resp.body_len));
                }
            }
            if let Some(desc) = &self.custom_response {
                prost_reflect::DynamicMessage::decode(desc.clone(), body.as_ref()).map_err(|e| {
                    CallError::new(
                        ErrorKind::WrongResponse,
                        format!("undecodable {} response: {e}", desc.full_name()),
                    )
                })?;
            }
        }
        if let Some(len) = state.reference_len.get()
            && resp.body_len != len
        {
            return Err(CallError::new(
                ErrorKind::WrongResponse,
                format!("response body of {} bytes, expected {len}", resp.body_len),
            ));
        }
        Ok(())
    }

    /// The status checks alone (HTTP status, gRPC status, SOAP Fault).
    pub(crate) fn status(&self, resp: &Response) -> Result<(), CallError> {
        let contract = self.has_expectation();
        match self.family {
            Family::Grpc | Family::GrpcWeb => {
                if resp.status != 200 {
                    return Err(CallError::new(
                        ErrorKind::HttpStatus,
                        format!("http status {} (expected 200)", resp.status),
                    ));
                }
                // The driver sets the content type of every gRPC response it
                // did not read as gRPC (None: not kept, read as gRPC).
                let want = if self.family == Family::Grpc {
                    "application/grpc"
                } else {
                    "application/grpc-web"
                };
                if let Some(ct) = &resp.content_type
                    && !ct.starts_with(want)
                {
                    let ct = if ct.is_empty() { "none" } else { ct.as_str() };
                    return Err(CallError::new(
                        ErrorKind::HttpStatus,
                        format!("http status 200 with content-type {ct} (expected {want})"),
                    ));
                }
                let status = resp
                    .grpc
                    .as_ref()
                    .map(|g| (g.code, g.message.as_str()))
                    .unwrap_or((0, ""));
                if status.0 != 0 {
                    return Err(CallError::new(
                        ErrorKind::GrpcStatus,
                        format!("grpc status {} ({}): {}", status.0, grpc_code_name(status.0), status.1),
                    ));
                }
                if resp.grpc_messages != 1 {
                    return Err(CallError::new(
                        ErrorKind::WrongResponse,
                        format!("{} gRPC messages in a unary response", resp.grpc_messages),
                    ));
                }
            }
            Family::Soap => {
                if resp.status == 500
                    && let Some(fault) = resp
                        .body
                        .as_ref()
                        .and_then(|b| soap::parse_envelope(b).ok())
                        .and_then(|p| soap::as_fault(&p))
                {
                    return Err(CallError::new(
                        ErrorKind::SoapFault,
                        format!("soap fault {}: {}", fault.code, fault.message),
                    ));
                }
                if !ok_status(resp.status, contract) {
                    return Err(CallError::new(
                        ErrorKind::HttpStatus,
                        format!("http status {} (expected 200)", resp.status),
                    ));
                }
            }
            Family::Graphql => {
                if !ok_status(resp.status, contract) {
                    return Err(CallError::new(
                        ErrorKind::HttpStatus,
                        format!("http status {} (expected 200)", resp.status),
                    ));
                }
                if let Some(message) = resp.body.as_ref().and_then(|b| graphql_error(b)) {
                    return Err(CallError::new(
                        ErrorKind::GraphqlError,
                        format!("graphql error: {message}"),
                    ));
                }
            }
            Family::Rest | Family::Connect => {
                if !ok_status(resp.status, contract) {
                    let expected = if contract { "200" } else { "2xx" };
                    return Err(CallError::new(
                        ErrorKind::HttpStatus,
                        format!("http status {} (expected {expected})", resp.status),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The first error message of a GraphQL response that has `errors`. Only
/// a body that mentions `"errors"` is parsed.
pub(crate) fn graphql_error(body: &[u8]) -> Option<String> {
    memchr::memmem::find(body, b"\"errors\"")?;
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let errors = v.get("errors")?.as_array()?;
    let first = errors.first()?;
    Some(
        first
            .get("message")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("(no message)")
            .to_owned(),
    )
}

fn ok_status(status: u16, contract: bool) -> bool {
    if contract {
        status == 200
    } else {
        (200..300).contains(&status)
    }
}

/// The gRPC name of a status code, e.g. `UNAVAILABLE`.
pub(crate) use protobench_model::load::grpc_code_name;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_graphql_error_is_found_only_at_the_top_level() {
        let failed = br#"{"data":null,"errors":[{"message":"boom","extensions":{"code":"INJECTED_FAILURE"}}]}"#;
        assert_eq!(graphql_error(failed).as_deref(), Some("boom"));
        assert_eq!(graphql_error(br#"{"errors":[{}]}"#).as_deref(), Some("(no message)"));
        assert_eq!(graphql_error(br#"{"data":{"echo":{"payload":"x"}}}"#), None);
        // "errors" as a value inside the data is no error.
        assert_eq!(graphql_error(br#"{"data":{"echo":{"payload":""errors""}}}"#), None);
    }
    use crate::driver::GrpcStatus;

    fn grpc_check() -> Check {
        Check {
            family: Family::Grpc,
            expected: None,
            expected_data: None,
            custom_response: None,
            full: false,
        }
    }

    #[test]
    fn non_ok_grpc_status_inside_http_200_is_a_grpc_status_error() {
        let resp = Response {
            status: 200,
            grpc: Some(GrpcStatus {
                code: 14,
                message: "injected failure".into(),
            }),
            ..Response::default()
        };
        let err = grpc_check().judge(&resp, &CheckState::default()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::GrpcStatus);
        assert_eq!(err.message, "grpc status 14 (UNAVAILABLE): injected failure");
    }

    #[test]
    fn a_grpc_call_answered_without_grpc_is_an_http_status_error() {
        let cases = [
            (404, Some("text/plain"), "http status 404 (expected 200)"),
            (
                200,
                Some("application/json"),
                "http status 200 with content-type application/json (expected application/grpc)",
            ),
            (
                200,
                Some(""),
                "http status 200 with content-type none (expected application/grpc)",
            ),
        ];
        for (status, ct, want) in cases {
            let resp = Response {
                status,
                content_type: ct.map(str::to_owned),
                ..Response::default()
            };
            let err = grpc_check().judge(&resp, &CheckState::default()).unwrap_err();
            assert_eq!((err.kind, err.message.as_str()), (ErrorKind::HttpStatus, want));
        }
        for ct in [
            "application/grpc",
            "application/grpc+proto",
            "application/grpc; charset=x",
        ] {
            let resp = Response {
                status: 200,
                content_type: Some(ct.into()),
                grpc: Some(GrpcStatus {
                    code: 0,
                    message: String::new(),
                }),
                grpc_messages: 1,
                ..Response::default()
            };
            grpc_check().judge(&resp, &CheckState::default()).unwrap();
        }
        assert!(!crate::driver::grpc::is_grpc_content_type(b"application/grpcx"));
    }

    #[test]
    fn soap_fault_is_told_apart_from_a_plain_500() {
        let check = Check {
            family: Family::Soap,
            expected: None,
            expected_data: None,
            custom_response: None,
            full: false,
        };
        let fault = soap::fault(soap::FaultCode::Server, "injected failure");
        let resp = Response {
            status: 500,
            body: Some(fault.into_bytes().into()),
            ..Response::default()
        };
        let err = check.judge(&resp, &CheckState::default()).unwrap_err();
        assert_eq!(
            (err.kind, err.message.as_str()),
            (ErrorKind::SoapFault, "soap fault soap:Server: injected failure")
        );
        let plain = Response {
            status: 500,
            body: Some("oops".into()),
            ..Response::default()
        };
        assert_eq!(
            check.judge(&plain, &CheckState::default()).unwrap_err().kind,
            ErrorKind::HttpStatus
        );
    }

    #[test]
    fn later_responses_must_match_the_first_checked_size() {
        let w = protobench_contract::workload::find("tasks.int").unwrap();
        let msg = w
            .operation
            .respond(&w.request(), &protobench_contract::Dataset::generate())
            .unwrap();
        let body = msg.encode(Encoding::Json);
        let check = Check {
            family: Family::Rest,
            expected: Some(Expected {
                operation: w.operation,
                encoding: Encoding::Json,
                message: msg,
            }),
            expected_data: None,
            custom_response: None,
            full: false,
        };
        let state = CheckState::default();
        assert_eq!(check.keep(&state), Keep::All);
        let first = Response {
            status: 200,
            body_len: body.len(),
            body: Some(body.clone().into()),
            ..Response::default()
        };
        check.judge(&first, &state).unwrap();
        assert_eq!(check.keep(&state), Keep::No);
        let short = Response {
            status: 200,
            body_len: body.len() - 1,
            ..Response::default()
        };
        let err = check.judge(&short, &state).unwrap_err();
        assert_eq!(err.kind, ErrorKind::WrongResponse);
        assert_eq!(
            err.message,
            format!("response body of {} bytes, expected {}", body.len() - 1, body.len())
        );
    }

    #[test]
    fn graphql_keeps_every_body_but_one_announced_at_the_checked_size() {
        let want = br#"{"data":{"integer":{"value":1}}}"#;
        let check = Check {
            family: Family::Graphql,
            expected: None,
            expected_data: serde_json::from_slice(want).ok(),
            custom_response: None,
            full: false,
        };
        let state = CheckState::default();
        assert_eq!(check.keep(&state), Keep::All, "the first body is checked whole");
        let failed = Response {
            status: 200,
            body_len: 29,
            body: Some(br#"{"errors":[{"message":"x"}]}"#[..].into()),
            ..Response::default()
        };
        assert_eq!(check.judge(&failed, &state).unwrap_err().kind, ErrorKind::GraphqlError);
        assert_eq!(check.keep(&state), Keep::All, "no reference from a failed call");
        let first = Response {
            status: 200,
            body_len: want.len(),
            body: Some(want[..].into()),
            ..Response::default()
        };
        check.judge(&first, &state).unwrap();
        let keep = check.keep(&state);
        assert_eq!(keep, Keep::UnlessLen(want.len()));
        assert!(!keep.body_of(Some(want.len())));
        assert!(keep.body_of(Some(want.len() + 1)) && keep.body_of(None));
        let full = Check { full: true, ..check };
        assert_eq!(full.keep(&state), Keep::All);
    }
}
