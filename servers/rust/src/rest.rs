//! `rest` and `rest-h2`: the contract's JSON form on axum, one route per
//! operation, and the streaming operations' WebSocket, SSE and polling
//! paths ([`crate::ws`], [`crate::sse`]).
//!
//! Errors are `{"code": <status>, "message": "..."}`: 400 for a body that
//! does not decode or a value the operation refuses, 404 for unknown paths and
//! files, 405 (with `Allow`) for a known path with another method, 413 for a
//! body over the size limit, 415 for a body that is not JSON, 500 for an
//! injected failure; 408 (and, on HTTP/1.1, the connection closed) for a body
//! that has not all arrived within `PROTOBENCH_READ_TIMEOUT`.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use protobench_contract::pb::bench;
use protobench_contract::{Encoding, HttpMethod, Message, Operation};

use crate::body::{self, BodyError};
use crate::core::Core;
use crate::json_error::{call_error, error};
use crate::{sse, ws};

/// The router serving every operation at its REST path.
pub(crate) fn router(core: Arc<Core>) -> Router {
    let mut router = Router::new();
    for &op in Operation::ALL {
        let route: MethodRouter<Arc<Core>> = match (op, op.http_method()) {
            (Operation::GetFile, _) => get(get_file),
            (_, HttpMethod::Get) => {
                get(move |State(core): State<Arc<Core>>| call(core, op, Message::Empty(bench::Empty {})))
            }
            (_, HttpMethod::Post) => {
                post(move |State(core): State<Arc<Core>>, request: Request| post_call(core, op, request))
            }
        };
        let allow = match op.http_method() {
            HttpMethod::Get => "GET, HEAD",
            HttpMethod::Post => "POST",
        };
        router = router.route(
            op.rest_path_template(),
            route.fallback(move |method: Method| method_not_allowed(method, op, allow)),
        );
    }
    streaming_routes(router).fallback(not_found).with_state(core)
}

/// The streaming operations' WebSocket, SSE and polling paths
/// (`crate::ws`, `crate::sse`). WebSocket takes `GET` (HTTP/1.1) and
/// `CONNECT` (HTTP/2, RFC 8441).
fn streaming_routes(router: Router<Arc<Core>>) -> Router<Arc<Core>> {
    use protobench_contract::stream;
    let only = |path: &'static str, allow: &'static str| {
        move |method: Method| async move {
            let mut response = error(
                StatusCode::METHOD_NOT_ALLOWED,
                &format!("method {method} is not allowed on {path}; allowed: {allow}"),
            );
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static(allow));
            response
        }
    };
    const WS: &str = "GET, CONNECT";
    router
        .route(
            stream::WS_ECHO_PATH,
            get(ws::echo).connect(ws::echo).fallback(only(stream::WS_ECHO_PATH, WS)),
        )
        .route(
            stream::WS_SUBSCRIBE_PATH,
            get(ws::subscribe)
                .connect(ws::subscribe)
                .fallback(only(stream::WS_SUBSCRIBE_PATH, WS)),
        )
        .route(
            stream::WS_UPLOAD_PATH,
            get(ws::upload)
                .connect(ws::upload)
                .fallback(only(stream::WS_UPLOAD_PATH, WS)),
        )
        .route(
            stream::SSE_PATH,
            get(sse::subscribe).fallback(only(stream::SSE_PATH, "GET, HEAD")),
        )
        .route(
            stream::POLL_PATH,
            get(sse::poll).fallback(only(stream::POLL_PATH, "GET, HEAD")),
        )
}

async fn get_file(
    State(core): State<Arc<Core>>,
    name: Result<Path<String>, axum::extract::rejection::PathRejection>,
) -> Response {
    match name {
        Ok(Path(name)) => {
            call(
                core,
                Operation::GetFile,
                Message::FileRequest(bench::FileRequest { name }),
            )
            .await
        }
        Err(rejection) => error(
            StatusCode::BAD_REQUEST,
            &format!("invalid file name in the path: {}", rejection.body_text()),
        ),
    }
}

async fn post_call(core: Arc<Core>, op: Operation, request: Request) -> Response {
    let _in_flight = core.enter();
    if !body::has_content_type(request.headers(), "application/json") {
        let found = body::content_type(request.headers());
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &format!("content type {found} is not supported; expected application/json"),
        );
    }
    let version = request.version();
    let bytes = match body::read(request, core.max_request_bytes, core.read_timeout).await {
        Ok(bytes) => bytes,
        Err(err @ BodyError::TooLarge { .. }) => {
            return error(StatusCode::PAYLOAD_TOO_LARGE, &err.to_string());
        }
        Err(err @ BodyError::Timeout { .. }) => {
            let mut response = error(StatusCode::REQUEST_TIMEOUT, &err.to_string());
            body::close_connection(version, &mut response);
            return response;
        }
        Err(err) => return error(StatusCode::BAD_REQUEST, &err.to_string()),
    };
    match Message::decode_request(op, Encoding::Json, &bytes) {
        Ok(message) => respond(&core, op, message).await,
        Err(err) => error(StatusCode::BAD_REQUEST, &err.to_string()),
    }
}

async fn call(core: Arc<Core>, op: Operation, message: Message) -> Response {
    let _in_flight = core.enter();
    respond(&core, op, message).await
}

async fn respond(core: &Core, op: Operation, message: Message) -> Response {
    match core.respond(op, message).await {
        Ok(reply) => (
            [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
            reply.to_json(),
        )
            .into_response(),
        Err(err) => call_error(err),
    }
}

async fn method_not_allowed(method: Method, op: Operation, allow: &'static str) -> Response {
    let message = format!(
        "method {method} is not allowed on {}; allowed: {allow}",
        op.rest_path_template()
    );
    let mut response = error(StatusCode::METHOD_NOT_ALLOWED, &message);
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

async fn not_found(method: Method, uri: axum::http::Uri) -> Response {
    error(
        StatusCode::NOT_FOUND,
        &format!("no operation at {method} {}", uri.path()),
    )
}
