//! gRPC server reflection: the descriptors of a method asked from the
//! server itself (as grpcurl and ghz do when no `.proto` is given).
//!
//! One HTTP/2 connection, one stream per question (the reflection service
//! is a bidirectional stream, but a stream of one question and one answer
//! is a valid use of it and keeps this client a plain request/response).
//! `grpc.reflection.v1` first; a server that does not implement it
//! (`UNIMPLEMENTED`) is asked through `grpc.reflection.v1alpha`, whose
//! messages are the same on the wire. The file holding the service comes
//! back with its dependencies; any the server left out (it may skip files
//! it sent earlier on the stream) are asked for by name.

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use http::{HeaderValue, Method, Request};
use prost::Message as _;
use prost_reflect::DescriptorPool;
use prost_reflect::prost_types::FileDescriptorProto;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
use tonic_reflection::pb::v1::{ServerReflectionRequest, ServerReflectionResponse};

use crate::driver::net::{Endpoint, Stream};

/// The reflection services tried, newest first.
const SERVICES: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// gRPC status `UNIMPLEMENTED`.
const UNIMPLEMENTED: u32 = 12;

/// The most files asked for by name (a bound against a server that keeps
/// naming dependencies it never sends).
const MAX_FILES: usize = 256;

/// The largest reflection answer read (bytes).
const MAX_ANSWER: usize = 16 * 1024 * 1024;

/// Why the server's reflection could not describe the method.
#[derive(Debug, thiserror::Error)]
pub enum ReflectionError {
    /// Neither reflection service is served.
    #[error(
        "the server at {0} does not serve gRPC reflection (grpc.reflection.v1 or v1alpha); give the method's .proto with --proto, or a descriptor set (protoc -o FILE) with --protoset"
    )]
    NotServed(String),
    /// The connection or a call failed.
    #[error("asking the server at {addr} for its descriptors: {message}")]
    Call {
        /// The server.
        addr: String,
        /// What went wrong.
        message: String,
    },
    /// The server answered with an error (e.g. an unknown service).
    #[error("the server's reflection does not know {symbol}: {message}")]
    Refused {
        /// What was asked for.
        symbol: String,
        /// The server's message.
        message: String,
    },
    /// The descriptors do not form a valid set.
    #[error("the server's descriptors are not valid")]
    Invalid(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// No answer in time.
    #[error("the server at {0} did not describe the method in time")]
    TimedOut(String),
}

/// The service named by `call` (`pkg.Svc/Method` or `pkg.Svc.Method`).
pub(crate) fn service_of(call: &str) -> &str {
    let call = call.trim_start_matches('/');
    match call.split_once('/') {
        Some((service, _)) => service,
        None => call.rsplit_once('.').map_or(call, |(service, _)| service),
    }
}

/// Asks the server at `endpoint` for the file defining `call`'s service and
/// every file it depends on, within `limit`.
pub(crate) async fn pool(endpoint: &Endpoint, call: &str, limit: Duration) -> Result<DescriptorPool, ReflectionError> {
    let addr = endpoint.addr.to_string();
    match tokio::time::timeout(limit, ask(endpoint, service_of(call))).await {
        Ok(r) => r,
        Err(_) => Err(ReflectionError::TimedOut(addr)),
    }
}

async fn ask(endpoint: &Endpoint, service: &str) -> Result<DescriptorPool, ReflectionError> {
    let addr = endpoint.addr.to_string();
    let fail = |message: String| ReflectionError::Call {
        addr: addr.clone(),
        message,
    };
    // Opened here rather than by `Endpoint::connect`, whose byte counters
    // belong to an engine thread: this future must stay `Send`.
    let tcp = tokio::net::TcpStream::connect(endpoint.addr)
        .await
        .map_err(|e| fail(format!("connecting: {e}")))?;
    let io = match &endpoint.tls {
        None => Stream::plain(tcp),
        Some((connector, name)) => {
            let tls = connector
                .connect(name.clone(), tcp)
                .await
                .map_err(|e| fail(format!("TLS handshake: {e}")))?;
            Stream::Tls(Box::new(tls))
        }
    };
    let (send, connection) = h2::client::handshake(io)
        .await
        .map_err(|e| fail(format!("HTTP/2 handshake: {e}")))?;
    // The connection is driven here, beside the questions, so nothing is
    // spawned; it ends when the questions do.
    let questions = questions(send, endpoint, service);
    tokio::pin!(questions);
    tokio::select! {
        r = &mut questions => r,
        r = connection => {
            let why = r.err().map_or_else(|| "connection closed".to_string(), |e| e.to_string());
            Err(fail(why))
        }
    }
}

async fn questions(
    send: h2::client::SendRequest<Bytes>,
    endpoint: &Endpoint,
    service: &str,
) -> Result<DescriptorPool, ReflectionError> {
    let addr = endpoint.addr.to_string();
    let mut path = None;
    let mut first = None;
    for p in SERVICES {
        let q = MessageRequest::FileContainingSymbol(service.to_owned());
        match one(send.clone(), endpoint, p, q).await? {
            Answer::Unimplemented => continue,
            Answer::Message(m) => {
                path = Some(p);
                first = Some(m);
                break;
            }
        }
    }
    let (Some(path), Some(first)) = (path, first) else {
        return Err(ReflectionError::NotServed(addr));
    };
    let mut files: Vec<FileDescriptorProto> = Vec::new();
    let mut pending: VecDeque<String> = VecDeque::new();
    let mut asked: BTreeSet<String> = BTreeSet::new();
    take(first, service, &mut files, &mut pending)?;
    while let Some(name) = pending.pop_front() {
        if files.iter().any(|f| f.name() == name) || !asked.insert(name.clone()) {
            continue;
        }
        if asked.len() > MAX_FILES {
            return Err(ReflectionError::Call {
                addr,
                message: format!("more than {MAX_FILES} files named as dependencies"),
            });
        }
        match one(
            send.clone(),
            endpoint,
            path,
            MessageRequest::FileByFilename(name.clone()),
        )
        .await?
        {
            Answer::Unimplemented => return Err(ReflectionError::NotServed(addr)),
            Answer::Message(m) => take(m, &name, &mut files, &mut pending)?,
        }
    }
    let mut pool = DescriptorPool::new();
    pool.add_file_descriptor_protos(files)
        .map_err(|e| ReflectionError::Invalid(Box::new(e)))?;
    Ok(pool)
}

/// Adds the files of an answer and queues the dependencies not yet held.
fn take(
    answer: ServerReflectionResponse,
    asked: &str,
    files: &mut Vec<FileDescriptorProto>,
    pending: &mut VecDeque<String>,
) -> Result<(), ReflectionError> {
    match answer.message_response {
        Some(MessageResponse::FileDescriptorResponse(r)) => {
            for bytes in r.file_descriptor_proto {
                let file =
                    FileDescriptorProto::decode(bytes.as_slice()).map_err(|e| ReflectionError::Invalid(Box::new(e)))?;
                if files.iter().all(|f| f.name() != file.name()) {
                    pending.extend(file.dependency.iter().cloned());
                    files.push(file);
                }
            }
            Ok(())
        }
        Some(MessageResponse::ErrorResponse(e)) => Err(ReflectionError::Refused {
            symbol: asked.to_owned(),
            message: e.error_message,
        }),
        _ => Err(ReflectionError::Refused {
            symbol: asked.to_owned(),
            message: "the answer holds no file descriptors".into(),
        }),
    }
}

enum Answer {
    Unimplemented,
    Message(ServerReflectionResponse),
}

/// One question on a stream of its own, and its one answer.
async fn one(
    mut send: h2::client::SendRequest<Bytes>,
    endpoint: &Endpoint,
    path: &str,
    question: MessageRequest,
) -> Result<Answer, ReflectionError> {
    let fail = |message: String| ReflectionError::Call {
        addr: endpoint.addr.to_string(),
        message,
    };
    let message = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(question),
    }
    .encode_to_vec();
    let mut framed = BytesMut::with_capacity(5 + message.len());
    framed.put_u8(0);
    framed.put_u32(message.len() as u32);
    framed.put_slice(&message);
    let uri = format!("{}://{}{}", endpoint.scheme(), endpoint.authority, path);
    let mut req = Request::new(());
    *req.method_mut() = Method::POST;
    *req.uri_mut() = uri.parse().map_err(|_| fail(format!("invalid URI {uri:?}")))?;
    let h = req.headers_mut();
    h.insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    h.insert(http::header::TE, HeaderValue::from_static("trailers"));
    h.insert(http::header::USER_AGENT, HeaderValue::from_static("protobench"));
    send = send.ready().await.map_err(|e| fail(e.to_string()))?;
    let (response, mut stream) = send.send_request(req, false).map_err(|e| fail(e.to_string()))?;
    stream
        .send_data(framed.freeze(), true)
        .map_err(|e| fail(e.to_string()))?;
    let response = response.await.map_err(|e| fail(e.to_string()))?;
    let (head, mut body) = response.into_parts();
    if head.status != http::StatusCode::OK {
        return Err(fail(format!("HTTP status {}", head.status)));
    }
    let status = |h: &http::HeaderMap| -> Option<(u32, String)> {
        let code = h.get("grpc-status")?.to_str().ok()?.trim().parse().ok()?;
        let message = h
            .get("grpc-message")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        Some((code, message))
    };
    // Trailers-only: the status is in the headers and there is no body.
    let mut grpc = status(&head.headers);
    let mut data = BytesMut::new();
    if grpc.is_none() {
        while let Some(chunk) = body.data().await {
            let chunk = chunk.map_err(|e| fail(e.to_string()))?;
            let _ = body.flow_control().release_capacity(chunk.len());
            if data.len() + chunk.len() > MAX_ANSWER {
                return Err(fail(format!("answer larger than {MAX_ANSWER} bytes")));
            }
            data.extend_from_slice(&chunk);
        }
        let trailers = body.trailers().await.map_err(|e| fail(e.to_string()))?;
        grpc = trailers.as_ref().and_then(status);
    }
    match grpc {
        Some((UNIMPLEMENTED, _)) => return Ok(Answer::Unimplemented),
        Some((0, _)) | None => {}
        Some((code, message)) => return Err(fail(format!("gRPC status {code}: {message}"))),
    }
    let mut data = data.freeze();
    if data.len() < 5 {
        return Err(fail("the answer holds no message".into()));
    }
    let compressed = data.get_u8();
    let len = data.get_u32() as usize;
    if compressed != 0 || len > data.len() {
        return Err(fail("the answer is compressed or cut short".into()));
    }
    let answer = ServerReflectionResponse::decode(data.split_to(len)).map_err(|e| fail(e.to_string()))?;
    Ok(Answer::Message(answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_service_is_the_call_without_its_method() {
        assert_eq!(service_of("pkg.Svc/Method"), "pkg.Svc");
        assert_eq!(service_of("/pkg.Svc/Method"), "pkg.Svc");
        assert_eq!(service_of("pkg.Svc.Method"), "pkg.Svc");
        assert_eq!(service_of("Svc/Method"), "Svc");
    }
}
