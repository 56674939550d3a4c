//! Writing and reading `contract/vectors`, `contract/data` and
//! `contract/workloads.json`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::{Dataset, Encoding, Message, Operation, Workload, workload};

/// The generated files: relative path and content.
pub fn generate(dataset: &Dataset) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = vec![(PathBuf::from("data/dataset.json"), dataset.to_json())];
    let registry: Vec<serde_json::Value> = workload::ALL
        .iter()
        .map(|w| {
            serde_json::json!({
                "name": w.name,
                "operation": w.operation.name(),
                "description": w.description,
                "grpcPath": w.operation.grpc_path(),
                "restMethod": format!("{:?}", w.operation.http_method()).to_uppercase(),
                "restPath": w.operation.rest_path(&w.request()),
                "soapAction": w.operation.soap_action(),
                "graphqlField": crate::graphql::root(w.operation).field,
            })
        })
        .collect();
    let mut json = serde_json::to_vec_pretty(&registry).expect("registry serializes");
    json.push(b'\n');
    files.push((PathBuf::from("workloads.json"), json));
    for w in workload::ALL {
        let request = w.request();
        let response = w
            .operation
            .respond(&request, dataset)
            .expect("every workload has a valid request");
        let dir = PathBuf::from("vectors").join(w.name);
        for enc in Encoding::ALL {
            let ext = enc.extension();
            files.push((
                dir.join(format!("request.{ext}")),
                request.encode_request(w.operation, enc),
            ));
            files.push((
                dir.join(format!("response.{ext}")),
                response.encode_response(w.operation, enc),
            ));
        }
    }
    files.extend(stream_files(dataset));
    files.extend(graphql_files(dataset));
    files
}

/// `graphql/workloads.json` and `graphql/vectors/<workload>/{request,response}.json`:
/// the GraphQL-only workloads ([`crate::graphql::WORKLOADS`]), apart from
/// `vectors/` since no other protocol serves them.
fn graphql_files(dataset: &Dataset) -> Vec<(PathBuf, Vec<u8>)> {
    let registry: Vec<serde_json::Value> = crate::graphql::WORKLOADS
        .iter()
        .map(|w| {
            serde_json::json!({
                "name": w.name,
                "description": w.description,
                "operationName": w.operation_name,
                "fields": w.roots.iter().map(|(op, _)| crate::graphql::root(*op).field).collect::<Vec<_>>(),
                "restEquivalent": w.rest_equivalent,
            })
        })
        .collect();
    let mut json = serde_json::to_vec_pretty(&registry).expect("registry serializes");
    json.push(b'\n');
    let mut files = vec![(PathBuf::from("graphql/workloads.json"), json)];
    for w in crate::graphql::WORKLOADS {
        let dir = PathBuf::from("graphql/vectors").join(w.name);
        files.push((dir.join("request.json"), w.request()));
        files.push((dir.join("response.json"), w.response(dataset)));
    }
    files
}

/// A GraphQL-only workload's request and expected response bodies:
/// `graphql/vectors/<workload>/` under `contract_dir`, or built in when
/// `contract_dir` has no `graphql/vectors/` (as [`load`]).
pub fn load_graphql(contract_dir: &Path, workload: &str) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let w = crate::graphql::find(workload).ok_or_else(|| {
        let names: Vec<&str> = crate::graphql::WORKLOADS.iter().map(|w| w.name).collect();
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("unknown GraphQL workload {workload:?}; valid: {}", names.join(", ")),
        )
    })?;
    let dir = contract_dir.join("graphql/vectors");
    if !dir.is_dir() {
        static DATASET: OnceLock<Dataset> = OnceLock::new();
        return Ok((w.request(), w.response(DATASET.get_or_init(Dataset::generate))));
    }
    let dir = dir.join(workload);
    Ok((
        std::fs::read(dir.join("request.json"))?,
        std::fs::read(dir.join("response.json"))?,
    ))
}

/// `stream-workloads.json` and `stream-vectors/<workload>/` (apart from
/// `vectors/`, whose every directory is a unary workload to the other
/// stacks' checkers): per streaming workload,
/// what the client sends (`request.jsonl`, `request.pb`) and what it must
/// receive (`response.jsonl`, `response.pb`), one message per line or
/// length-delimited. Feed events are stamped with their offset from the
/// stream's start (`scheduledNs` of event 1 is 0): a checker compares stamps
/// by their differences ([`crate::stream::check`]).
fn stream_files(dataset: &Dataset) -> Vec<(PathBuf, Vec<u8>)> {
    use crate::stream::{self, Tally, encode_delimited, encode_json_lines, workload::Plan};
    let registry: Vec<serde_json::Value> = stream::workload::ALL
        .iter()
        .map(|w| {
            let op = w.operation();
            let mut entry = serde_json::json!({
                "name": w.name,
                "operation": op.name(),
                "description": w.description,
                "grpcPath": op.grpc_path(),
            });
            let paths: &[(&str, &str)] = match w.plan {
                Plan::Echo { .. } => &[("websocketPath", stream::WS_ECHO_PATH)],
                Plan::Subscribe { .. } => &[
                    ("websocketPath", stream::WS_SUBSCRIBE_PATH),
                    ("ssePath", stream::SSE_PATH),
                ],
                Plan::Upload { .. } => &[("websocketPath", stream::WS_UPLOAD_PATH)],
                Plan::Poll { .. } => &[("restPath", stream::POLL_PATH)],
            };
            for (key, path) in paths {
                entry[*key] = serde_json::Value::from(*path);
            }
            entry
        })
        .collect();
    let mut json = serde_json::to_vec_pretty(&registry).expect("registry serializes");
    json.push(b'\n');
    let mut files = vec![(PathBuf::from("stream-workloads.json"), json)];
    for w in stream::workload::ALL {
        let dir = PathBuf::from("stream-vectors").join(w.name);
        let mut put = |name: &str, bytes: Vec<u8>| files.push((dir.join(name), bytes));
        match w.plan {
            Plan::Echo { .. } | Plan::Upload { .. } => {
                let sent = w.messages();
                put("request.jsonl", encode_json_lines(&sent));
                put("request.pb", encode_delimited(&sent));
                if let Plan::Echo { .. } = w.plan {
                    put("response.jsonl", encode_json_lines(&sent));
                    put("response.pb", encode_delimited(&sent));
                } else {
                    let summary = [Tally::of(&sent)];
                    put("response.jsonl", encode_json_lines(&summary));
                    put("response.pb", encode_delimited(&summary));
                }
            }
            Plan::Subscribe { .. } => {
                let request = w.subscribe_request().expect("a subscription");
                let events: Vec<_> = (1..=request.count)
                    .map(|seq| stream::feed_event(dataset, seq, request.items, stream::offset_ns(seq, request.rate)))
                    .collect();
                put("request.jsonl", encode_json_lines(&[request]));
                put("request.pb", encode_delimited(&[request]));
                put("response.jsonl", encode_json_lines(&events));
                put("response.pb", encode_delimited(&events));
            }
            Plan::Poll { .. } => {
                let polls = w.polls();
                let pages: Vec<_> = polls
                    .iter()
                    .map(|p| stream::poll_page(dataset, p, 0).expect("a workload's polls are valid"))
                    .collect();
                put("request.jsonl", encode_json_lines(&polls));
                put("request.pb", encode_delimited(&polls));
                put("response.jsonl", encode_json_lines(&pages));
                put("response.pb", encode_delimited(&pages));
            }
        }
    }
    files
}

/// One workload's vectors loaded from disk.
#[derive(Debug, Clone)]
pub struct Vector {
    /// The operation.
    pub operation: Operation,
    /// The request body for `encoding`.
    pub request: Vec<u8>,
    /// The expected response body for `encoding`.
    pub response: Vec<u8>,
}

/// Reads `vectors/<workload>/{request,response}.<ext>` under `contract_dir`;
/// when `contract_dir` has no `vectors/` at all (the binary runs outside the
/// repository), the vector built in: generated in memory by the code that
/// writes those files ([`built_in`]).
pub fn load(contract_dir: &Path, workload: &str, encoding: Encoding) -> std::io::Result<Vector> {
    let w = workload::find(workload)
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, workload::unknown(workload)))?;
    if !contract_dir.join("vectors").is_dir() {
        return Ok(built_in(w, encoding));
    }
    let dir = contract_dir.join("vectors").join(workload);
    let ext = encoding.extension();
    Ok(Vector {
        operation: w.operation,
        request: std::fs::read(dir.join(format!("request.{ext}")))?,
        response: std::fs::read(dir.join(format!("response.{ext}")))?,
    })
}

/// One workload's vector as [`generate`] writes it (the data set is
/// generated once per process).
pub fn built_in(w: &Workload, encoding: Encoding) -> Vector {
    static DATASET: OnceLock<Dataset> = OnceLock::new();
    let dataset = DATASET.get_or_init(Dataset::generate);
    let request = w.request();
    let response = w
        .operation
        .respond(&request, dataset)
        .expect("every workload has a valid request");
    Vector {
        operation: w.operation,
        request: request.encode_request(w.operation, encoding),
        response: response.encode_response(w.operation, encoding),
    }
}

/// Decodes an expected response vector.
pub fn expected_response(op: Operation, encoding: Encoding, bytes: &[u8]) -> Message {
    Message::decode_response(op, encoding, bytes).expect("vectors decode")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_workload_round_trips_in_every_encoding() {
        let dataset = Dataset::generate();
        for w in workload::ALL {
            let request = w.request();
            let response = w.operation.respond(&request, &dataset).unwrap();
            for enc in Encoding::ALL {
                let req_bytes = request.encode_request(w.operation, enc);
                let decoded = Message::decode_request(w.operation, enc, &req_bytes)
                    .unwrap_or_else(|e| panic!("{} request {enc:?}: {e}", w.name));
                assert_eq!(decoded, request, "{} request {enc:?}", w.name);
                let resp_bytes = response.encode_response(w.operation, enc);
                let decoded = Message::decode_response(w.operation, enc, &resp_bytes)
                    .unwrap_or_else(|e| panic!("{} response {enc:?}: {e}", w.name));
                assert_eq!(decoded, response, "{} response {enc:?}", w.name);
            }
        }
    }

    #[test]
    fn without_vectors_on_disk_the_built_in_ones_are_the_files_bytes() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contract");
        let nowhere = Path::new(env!("CARGO_MANIFEST_DIR")).join("no-such-contract-dir");
        for name in ["inventory.xs", "echo.8k", "grpcbench.complex", "tasks.file-455k"] {
            for enc in Encoding::ALL {
                let on_disk = load(&repo, name, enc).unwrap();
                let built_in = load(&nowhere, name, enc).unwrap();
                assert_eq!(on_disk.request, built_in.request, "{name} {enc:?}");
                assert_eq!(on_disk.response, built_in.response, "{name} {enc:?}");
                assert_eq!(on_disk.operation, built_in.operation);
            }
        }
        // A contract directory with vectors/ but not this workload's is an error.
        let partial = std::env::temp_dir().join(format!("pb-vectors-partial-{}", std::process::id()));
        std::fs::create_dir_all(partial.join("vectors")).unwrap();
        let err = load(&partial, "tasks.int", Encoding::Json).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
        std::fs::remove_dir_all(&partial).unwrap();
        assert!(load(&nowhere, "no.such", Encoding::Json).is_err());
    }

    #[test]
    fn graphql_only_vectors_load_from_disk_or_built_in_alike() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contract");
        let nowhere = Path::new(env!("CARGO_MANIFEST_DIR")).join("no-such-contract-dir");
        for w in crate::graphql::WORKLOADS {
            let on_disk = load_graphql(&repo, w.name).unwrap();
            assert_eq!(on_disk, load_graphql(&nowhere, w.name).unwrap(), "{}", w.name);
        }
        let err = load_graphql(&repo, "inventory.l").unwrap_err().to_string();
        assert!(
            err.starts_with("unknown GraphQL workload \"inventory.l\"; valid: graphql."),
            "{err}"
        );
    }

    #[test]
    fn the_stream_vectors_on_disk_are_the_generated_ones() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contract");
        let files = stream_files(&Dataset::generate());
        assert!(files.len() > 40, "{} files", files.len());
        for (path, bytes) in files {
            let on_disk = std::fs::read(repo.join(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(
                on_disk == bytes,
                "{} differs: run `protobench contract generate`",
                path.display()
            );
        }
        // The stream vectors stay out of vectors/, where every directory is a
        // unary workload of workloads.json to the other stacks' checkers.
        for entry in std::fs::read_dir(repo.join("vectors")).unwrap() {
            let name = entry.unwrap().file_name();
            assert!(workload::find(&name.to_string_lossy()).is_some(), "vectors/{name:?}");
        }
    }

    #[test]
    fn xml_fields_follow_field_number_order_even_with_a_oneof() {
        let w = workload::find("grpcbench.complex").unwrap();
        let xml = String::from_utf8(w.request().encode_request(w.operation, Encoding::Xml)).unwrap();
        let c1 = xml.find("<c1>").unwrap();
        let pets = xml.find("<pets>").unwrap();
        let l = xml.find("<l>444325235223</l>").unwrap();
        assert!(l < c1 && c1 < pets, "{xml}");
    }

    #[test]
    fn xml_rejects_a_wrong_body_element_naming_both() {
        let w = workload::find("tasks.int").unwrap();
        let body = w.request().encode_request(w.operation, Encoding::Xml);
        let err = Message::decode_request(Operation::GetInventoryXs, Encoding::Xml, &body).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unexpected SOAP body element {urn:protobench:v1}GetIntegerRequest, expected {urn:protobench:v1}GetInventoryXsRequest"
        );
    }

    #[test]
    fn json_rejects_unknown_members() {
        let err = Message::decode_request(Operation::Echo, Encoding::Json, br#"{"payload":"x","extra":1}"#);
        assert!(err.is_err());
    }

    #[test]
    fn xml_accepts_prefixed_elements_from_other_clients() {
        let body = br#"<?xml version="1.0"?><S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Header/><S:Body><ns2:EchoRequest xmlns:ns2="urn:protobench:v1"><ns2:payload>hi &amp; bye</ns2:payload></ns2:EchoRequest></S:Body></S:Envelope>"#;
        let m = Message::decode_request(Operation::Echo, Encoding::Xml, body).unwrap();
        assert_eq!(
            m,
            Message::EchoMessage(crate::pb::bench::EchoMessage {
                payload: "hi & bye".into()
            })
        );
    }
}
