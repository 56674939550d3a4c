//! The contract's JSON error body, `{"code": <status>, "message": "..."}`,
//! shared by the REST routes ([`crate::rest`]) and the streaming paths on the
//! same listeners ([`crate::ws`], [`crate::sse`]).

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

use crate::core::{CallError, INJECTED_FAILURE};

/// The contract's JSON error body.
pub(crate) fn error(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "code": status.as_u16(), "message": message });
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The contract's JSON error for a call error.
pub(crate) fn call_error(err: CallError) -> Response {
    match err {
        CallError::Invalid(m) => error(StatusCode::BAD_REQUEST, &m),
        CallError::NotFound(m) => error(StatusCode::NOT_FOUND, &m),
        CallError::Injected => error(StatusCode::INTERNAL_SERVER_ERROR, INJECTED_FAILURE),
    }
}
