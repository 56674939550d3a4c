//! Connect unary (the protocol of connect-go and connect-es) on axum:
//! `POST /<pkg.Service>/<Method>` with the bare message as the body,
//! `application/proto` or `application/json`, answered in the same
//! encoding with status 200; no frames, no trailers. Errors are Connect's
//! JSON `{"code": "<code>", "message": "..."}` with the HTTP status Connect
//! maps the code to.
//!
//! Not a library: the one Rust Connect implementation with conformance
//! results, the `connectrpc` crate (pre-1.0), generates its own message
//! types with its own protobuf runtime (buffa) rather than prost's, so the
//! server would carry a second copy of every contract message and a second
//! code generator; connectrpc.com lists no official Rust implementation.
//! Connect unary is plain HTTP, so this small handler maps it onto the same
//! operations as every other protocol ([`Core::respond`]). Not served: Connect's GET form of
//! idempotent calls, compression (`Content-Encoding` other than `identity`
//! is `unimplemented`) and `Connect-Timeout-Ms`. Server streaming (the
//! subscription) is in [`crate::connect_stream`]; the other streams are not
//! served.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use protobench_contract::stream::StreamOperation;
use protobench_contract::{Encoding, Message, Operation};

use crate::body;
use crate::connect_code::{Code, JSON, code_of, connect_error, connect_error_with_status, read_body};
use crate::core::Core;

/// `application/proto`: a protobuf body.
pub(crate) const PROTO: &str = "application/proto";

/// Every `/<service>/<method>` path; other methods than POST 405.
pub(crate) fn router(core: Arc<Core>) -> Router {
    Router::new()
        .route(
            "/{service}/{method}",
            post(handle).fallback(|method: Method| async move {
                let mut response = connect_error_with_status(
                    Code::Unimplemented,
                    StatusCode::METHOD_NOT_ALLOWED,
                    &format!("method {method} is not allowed; Connect unary calls are POST"),
                );
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("POST"));
                response
            }),
        )
        .fallback(|uri: axum::http::Uri| async move {
            connect_error(
                Code::Unimplemented,
                &format!("no method at {}; expected /<package.Service>/<Method>", uri.path()),
            )
        })
        .with_state(core)
}

async fn handle(
    State(core): State<Arc<Core>>,
    Path((service, method)): Path<(String, String)>,
    request: Request,
) -> Response {
    let _in_flight = core.enter();
    let path = format!("/{service}/{method}");
    if path == StreamOperation::Subscribe.grpc_path() {
        return crate::connect_stream::subscribe(core.clone(), request).await;
    }
    let Some(op) = Operation::from_grpc_path(&path) else {
        return connect_error(Code::Unimplemented, &format!("no method {path}"));
    };
    let headers = request.headers();
    let (encoding, media) = if body::has_content_type(headers, PROTO) {
        (Encoding::Protobuf, PROTO)
    } else if body::has_content_type(headers, JSON) {
        (Encoding::Json, JSON)
    } else {
        let found = body::content_type(headers);
        return connect_error_with_status(
            Code::Unknown,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &format!("content type {found} is not supported; expected {PROTO} or {JSON}"),
        );
    };
    if let Some(v) = headers.get("connect-protocol-version")
        && v.as_bytes() != b"1"
    {
        return connect_error(
            Code::InvalidArgument,
            &format!(
                "connect-protocol-version {:?} is not supported; expected 1",
                String::from_utf8_lossy(v.as_bytes())
            ),
        );
    }
    if let Some(v) = headers.get(header::CONTENT_ENCODING)
        && !v.as_bytes().eq_ignore_ascii_case(b"identity")
    {
        return connect_error(
            Code::Unimplemented,
            &format!(
                "content-encoding {:?} is not supported; send the body uncompressed",
                String::from_utf8_lossy(v.as_bytes())
            ),
        );
    }
    let bytes = match read_body(request, &core, connect_error).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let message = match Message::decode_request(op, encoding, &bytes) {
        Ok(m) => m,
        Err(e) => return connect_error(Code::InvalidArgument, &e.to_string()),
    };
    match core.respond(op, message).await {
        Ok(reply) => {
            let body = match encoding {
                Encoding::Protobuf => reply.to_protobuf(),
                _ => reply.to_json(),
            };
            ([(header::CONTENT_TYPE, HeaderValue::from_static(media))], body).into_response()
        }
        Err(err) => {
            let (code, message) = code_of(err);
            connect_error(code, &message)
        }
    }
}
