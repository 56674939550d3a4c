//! `verify`: send each workload's vector request through the protocol's
//! driver and compare status, content type and the decoded body with the
//! vector's expected response, reporting the first difference by path
//! (`items[3].unitPrice`), never whole bodies.

use std::path::Path;
use std::time::Duration;

use protobench_contract::graphql::{GraphqlWorkload, drop_nulls};
use protobench_contract::{Encoding, Message, Protocol, Workload, vectors};
use protobench_model::load::TlsPlan;
use serde_json::Value;

use crate::LoadError;
use crate::check::Family;
use crate::diff::{first_difference, short};
use crate::driver::Response;
use crate::driver::net::Endpoint;
use crate::prepare::{self, AnyDriver};

/// What verify found for one workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The response matched.
    Ok,
    /// The response differed; `found` and `expected` are short.
    Fail {
        /// What the server sent (the first difference).
        found: String,
        /// What the vector says.
        expected: String,
    },
    /// The server answered with the contract's injected failure
    /// ([`protobench_contract::INJECTED_FAILURE`]): correct when failures
    /// are injected, a difference otherwise.
    Injected {
        /// What the server sent.
        found: String,
        /// What the vector says.
        expected: String,
    },
    /// The call could not be made (connection, timeout, missing vector).
    Error(String),
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Ok => f.write_str("ok"),
            Outcome::Fail { found, expected } | Outcome::Injected { found, expected } => {
                write!(f, "FAIL: found {found}, expected {expected}")
            }
            Outcome::Error(e) => write!(f, "FAIL: {e}"),
        }
    }
}

/// One workload's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadVerdict {
    /// The workload's name.
    pub workload: String,
    /// What was found.
    pub outcome: Outcome,
}

/// Every workload's verdict, in the order asked.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VerifyReport {
    /// Per workload.
    pub verdicts: Vec<WorkloadVerdict>,
}

impl VerifyReport {
    /// Whether every workload passed.
    pub fn passed(&self) -> bool {
        self.verdicts.iter().all(|v| v.outcome == Outcome::Ok)
    }
}

/// Verifies `workloads` of a server at `target` speaking `protocol` against
/// the vectors in `contract_dir`. Fails only when the target cannot be
/// resolved or the TLS settings are unusable; a server that cannot be reached
/// gets an error verdict per workload.
pub async fn verify(
    protocol: Protocol,
    target: &str,
    tls: Option<&TlsPlan>,
    workloads: &[&'static Workload],
    contract_dir: &Path,
    timeout: Duration,
) -> Result<VerifyReport, LoadError> {
    let endpoint = endpoint_of(protocol, target, tls, timeout).await?;
    let workloads: Vec<&'static Workload> = workloads.to_vec();
    let dir = contract_dir.to_owned();
    // Drivers run on a single-threaded event loop of their own.
    crate::driver::on_own_thread("protobench-verify", move || async move {
        verify_all(protocol, endpoint, &workloads, &dir, timeout).await
    })
    .await?
}

/// The endpoint of `target` (resolved; TLS when asked or `https://`).
async fn endpoint_of(
    protocol: Protocol,
    target: &str,
    tls: Option<&TlsPlan>,
    timeout: Duration,
) -> Result<Endpoint, LoadError> {
    let parsed = prepare::parse_target(target);
    let addr = prepare::resolve(&parsed.authority, timeout).await?;
    let tls = tls.cloned().or_else(|| parsed.https.then(TlsPlan::default));
    Ok(Endpoint::new(
        addr,
        parsed.authority.clone(),
        tls.as_ref(),
        protocol.alpn_ids(),
    )?)
}

/// Verifies GraphQL-only workloads (`contract/graphql`) of a `graphql` or
/// `graphql-get` server: each vector's document sent (registered first on
/// `graphql-get`), the answer's JSON compared as a value with the vector's,
/// nulls dropped (as a run checks them). Fails as [`verify`] does.
pub async fn verify_graphql(
    protocol: Protocol,
    target: &str,
    tls: Option<&TlsPlan>,
    workloads: &[&'static GraphqlWorkload],
    contract_dir: &Path,
    timeout: Duration,
) -> Result<VerifyReport, LoadError> {
    let endpoint = endpoint_of(protocol, target, tls, timeout).await?;
    let workloads = workloads.to_vec();
    let dir = contract_dir.to_owned();
    crate::driver::on_own_thread("protobench-verify-graphql", move || async move {
        let mut report = VerifyReport::default();
        for w in workloads {
            let outcome = match vectors::load_graphql(&dir, w.name) {
                Err(e) => Outcome::Error(format!(
                    "cannot read the vectors of {} in {}: {e}",
                    w.name,
                    dir.display()
                )),
                Ok((request, response)) => match prepare::web_driver(protocol, endpoint.clone(), "", &request, &[]) {
                    Err(e) => Outcome::Error(protobench_model::format::error_chain(&e)),
                    Ok(driver) => match call(protocol, &endpoint, &driver, &request, timeout).await {
                        Err(e) => Outcome::Error(e),
                        Ok(resp) => injected_or(Family::Graphql, &resp, judge_graphql(&response, &resp)),
                    },
                },
            };
            report.verdicts.push(WorkloadVerdict {
                workload: w.name.to_owned(),
                outcome,
            });
        }
        report
    })
    .await
}

/// One verify call: on `graphql-get` the document is registered first.
async fn call(
    protocol: Protocol,
    endpoint: &Endpoint,
    driver: &AnyDriver,
    request: &[u8],
    timeout: Duration,
) -> Result<Response, String> {
    if protocol == Protocol::GraphqlGet {
        let register = prepare::registration_driver(endpoint.clone(), request, &[])
            .map_err(|e| protobench_model::format::error_chain(&e))?;
        prepare::registered(&register, timeout)
            .await
            .map_err(|e| format!("registering the persisted query: {e}"))?;
    }
    driver.one(timeout).await
}

/// A GraphQL-only workload's answer against its vector: HTTP 200, no
/// errors, JSON, and the same value once nulls are dropped (as
/// [`judge`] compares a GraphQL answer).
fn judge_graphql(expected: &[u8], resp: &Response) -> Outcome {
    if resp.status != 200 {
        return fail(format!("http status {}", resp.status), "http status 200");
    }
    let body = resp.body.as_deref().unwrap_or_default();
    if let Some(message) = crate::check::graphql_error(body) {
        return fail(format!("graphql error: {message}"), "data without errors");
    }
    if let Some(differs) = content_type_differs(Family::Graphql, Encoding::Graphql, resp) {
        return differs;
    }
    json_differs(body, expected)
}

/// `judged`, or the injected failure when a differing answer is the
/// contract's injected failure.
fn injected_or(family: Family, resp: &Response, judged: Outcome) -> Outcome {
    match judged {
        Outcome::Fail { found, expected } if is_injected(family, resp) => Outcome::Injected { found, expected },
        other => other,
    }
}

async fn verify_all(
    protocol: Protocol,
    endpoint: Endpoint,
    workloads: &[&'static Workload],
    dir: &Path,
    timeout: Duration,
) -> Result<VerifyReport, LoadError> {
    let encoding = protocol.encoding();
    let family = crate::check::Family::of(protocol);
    let mut report = VerifyReport::default();
    for w in workloads {
        let outcome = match vectors::load(dir, w.name, encoding) {
            Err(e) => Outcome::Error(format!(
                "cannot read the vectors of {} in {}: {e}",
                w.name,
                dir.display()
            )),
            Ok(vector) => {
                let request = w.request();
                let path = w.operation.rest_path(&request);
                let driver =
                    prepare::contract_driver(protocol, endpoint.clone(), w.operation, &vector.request, &path, &[])?;
                match call(protocol, &endpoint, &driver, &vector.request, timeout).await {
                    Err(e) => Outcome::Error(e),
                    Ok(resp) => injected_or(family, &resp, judge(family, encoding, w, &vector.response, &resp)),
                }
            }
        };
        report.verdicts.push(WorkloadVerdict {
            workload: w.name.to_owned(),
            outcome,
        });
    }
    Ok(report)
}

fn fail(found: impl Into<String>, expected: impl Into<String>) -> Outcome {
    Outcome::Fail {
        found: found.into(),
        expected: expected.into(),
    }
}

/// Whether a response is the contract's injected failure: HTTP 500 with the
/// JSON error message, gRPC (and gRPC-Web) UNAVAILABLE, a SOAP fault, a
/// GraphQL error, Connect's `unavailable` (503), each carrying
/// [`protobench_contract::INJECTED_FAILURE`].
fn is_injected(family: Family, resp: &Response) -> bool {
    let message = protobench_contract::INJECTED_FAILURE;
    match family {
        Family::Grpc | Family::GrpcWeb => resp.grpc.as_ref().is_some_and(|g| g.code == 14 && g.message == message),
        Family::Graphql => resp.body.as_deref().and_then(crate::check::graphql_error).as_deref() == Some(message),
        Family::Connect => {
            resp.status == 503
                && resp
                    .body
                    .as_ref()
                    .and_then(|b| serde_json::from_slice::<Value>(b).ok())
                    .is_some_and(|v| {
                        v.get("code").and_then(Value::as_str) == Some("unavailable")
                            && v.get("message").and_then(Value::as_str) == Some(message)
                    })
        }
        Family::Soap => {
            resp.status == 500
                && resp
                    .body
                    .as_ref()
                    .and_then(|b| protobench_contract::soap::parse_envelope(b).ok())
                    .and_then(|p| protobench_contract::soap::as_fault(&p))
                    .is_some_and(|f| f.message == message)
        }
        Family::Rest => {
            resp.status == 500
                && resp
                    .body
                    .as_ref()
                    .and_then(|b| serde_json::from_slice::<Value>(b).ok())
                    .is_some_and(|v| v.get("message").and_then(Value::as_str) == Some(message))
        }
    }
}

fn judge(family: Family, encoding: Encoding, w: &Workload, expected_bytes: &[u8], resp: &Response) -> Outcome {
    let op = w.operation;
    // Status.
    if family == Family::Soap
        && resp.status == 500
        && let Some(f) = resp
            .body
            .as_ref()
            .and_then(|b| protobench_contract::soap::parse_envelope(b).ok())
            .and_then(|p| protobench_contract::soap::as_fault(&p))
    {
        return fail(
            format!("soap fault {}: {}", f.code, f.message),
            op.soap_response_element().to_string(),
        );
    }
    if resp.status != 200 {
        return fail(format!("http status {}", resp.status), "http status 200");
    }
    if family == Family::Graphql
        && let Some(message) = resp.body.as_deref().and_then(crate::check::graphql_error)
    {
        return fail(format!("graphql error: {message}"), "data without errors");
    }
    if matches!(family, Family::Grpc | Family::GrpcWeb) {
        match &resp.grpc {
            Some(g) if g.code != 0 => {
                return fail(
                    format!(
                        "grpc status {} ({}): {}",
                        g.code,
                        crate::check::grpc_code_name(g.code),
                        g.message
                    ),
                    "grpc status 0 (OK)",
                );
            }
            None => return fail("no grpc-status", "grpc status 0 (OK)"),
            _ => {}
        }
        if resp.grpc_messages != 1 {
            return fail(format!("{} gRPC messages", resp.grpc_messages), "1 gRPC message");
        }
    }
    if let Some(differs) = content_type_differs(family, encoding, resp) {
        return differs;
    }
    // Body.
    let body = resp.body.clone().unwrap_or_default();
    // A Connect server may leave unpopulated fields out of its JSON
    // (protojson's default): compared as messages, not JSON values.
    let by_value = family != Family::Connect;
    match encoding {
        Encoding::Json | Encoding::Graphql if by_value => json_differs(&body, expected_bytes),
        _ => {
            let expected = vectors::expected_response(op, encoding, expected_bytes);
            let found = match Message::decode_response(op, encoding, &body) {
                Ok(m) => m,
                Err(e) => {
                    return fail(short(&e.to_string()), format!("a {} message", op.response_kind_name()));
                }
            };
            if found == expected {
                return Outcome::Ok;
            }
            let f: Value = serde_json::from_slice(&found.to_json()).unwrap_or(Value::Null);
            let e: Value = serde_json::from_slice(&expected.to_json()).unwrap_or(Value::Null);
            match compare_values(&f, &e) {
                Outcome::Ok => fail("a different message", "the vector's message"),
                other => other,
            }
        }
    }
}

/// The difference in content type from what `family` answers, if any.
fn content_type_differs(family: Family, encoding: Encoding, resp: &Response) -> Option<Outcome> {
    let ct = resp.content_type.clone().unwrap_or_default();
    let media = ct.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let (ok, want) = match family {
        Family::Rest | Family::Graphql => (media == "application/json", "application/json"),
        Family::Soap => (media == "text/xml", "text/xml"),
        Family::Grpc => (
            media == "application/grpc" || media == "application/grpc+proto",
            "application/grpc",
        ),
        Family::Connect if encoding == Encoding::Json => (media == "application/json", "application/json"),
        Family::Connect => (media == "application/proto", "application/proto"),
        // The driver read the frames (the content type was checked there).
        Family::GrpcWeb => (true, "application/grpc-web"),
    };
    if ok {
        return None;
    }
    let shown = if ct.is_empty() {
        "no content type".to_owned()
    } else {
        format!("content type {ct}")
    };
    Some(fail(shown, format!("content type {want}")))
}

/// A JSON body against the vector's, as values with nulls dropped.
fn json_differs(body: &[u8], expected_bytes: &[u8]) -> Outcome {
    let found: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return fail(format!("invalid JSON ({e})"), "a JSON body"),
    };
    let expected: Value = serde_json::from_slice(expected_bytes).unwrap_or(Value::Null);
    compare_values(&drop_nulls(found), &drop_nulls(expected))
}

trait KindName {
    fn response_kind_name(self) -> String;
}

impl KindName for protobench_contract::Operation {
    fn response_kind_name(self) -> String {
        format!("{:?}", self.response_kind())
    }
}

fn compare_values(found: &Value, expected: &Value) -> Outcome {
    match first_difference(found, expected, String::new()) {
        None => Outcome::Ok,
        Some((path, f, e)) => {
            if path.is_empty() {
                fail(f, e)
            } else {
                fail(format!("{f} at {path}"), e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_graphql_only_answer_is_compared_as_a_value_with_nulls_dropped() {
        let resp = |status: u16, ct: &str, body: &str| Response {
            status,
            content_type: Some(ct.into()),
            body: Some(bytes::Bytes::from(body.to_owned())),
            ..Response::default()
        };
        let want = br#"{"data":{"items":[{"id":"a","stock":3}]}}"#;
        let json = "application/json; charset=utf-8";
        let same = resp(200, json, r#"{"data":{"items":[{"stock":3,"id":"a","note":null}]}}"#);
        assert_eq!(judge_graphql(want, &same), Outcome::Ok);
        let differs = resp(200, json, r#"{"data":{"items":[{"id":"a","stock":4}]}}"#);
        assert_eq!(judge_graphql(want, &differs), fail("4 at data.items[0].stock", "3"));
        let error = resp(200, json, r#"{"errors":[{"message":"boom"}]}"#);
        assert_eq!(
            judge_graphql(want, &error),
            fail("graphql error: boom", "data without errors")
        );
        assert_eq!(
            judge_graphql(want, &resp(404, json, "{}")),
            fail("http status 404", "http status 200")
        );
        assert_eq!(
            judge_graphql(want, &resp(200, "text/html", "{}")),
            fail("content type text/html", "content type application/json")
        );
    }

    #[test]
    fn first_difference_has_a_path() {
        let e = json!({"items": [{"id": 1, "unitPrice": 3.5}, {"id": 2, "unitPrice": 4.0}]});
        let f = json!({"items": [{"id": 1, "unitPrice": 3.5}, {"id": 2, "unitPrice": 4.25}]});
        assert_eq!(
            first_difference(&f, &e, String::new()),
            Some(("items[1].unitPrice".into(), "4.25".into(), "4.0".into()))
        );
    }

    #[test]
    fn numbers_compare_by_value_and_nulls_are_absent() {
        let e = json!({"a": 3.0, "b": [1, 2]});
        let f = drop_nulls(json!({"a": 3, "b": [1, 2], "c": null}));
        assert_eq!(compare_values(&f, &e), Outcome::Ok);
    }

    #[test]
    fn missing_and_extra_members_and_lengths_are_reported() {
        assert_eq!(
            compare_values(&json!({"a": 1}), &json!({"a": 1, "b": "x"})),
            fail("nothing at b", "\"x\"")
        );
        assert_eq!(
            compare_values(&json!({"a": 1, "z": true}), &json!({"a": 1})),
            fail("true at z", "nothing")
        );
        assert_eq!(
            compare_values(&json!({"v": [1]}), &json!({"v": [1, 2]})),
            fail("1 elements at v", "2 elements")
        );
    }
}
