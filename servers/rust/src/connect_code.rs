//! Connect's error codes and error answers, shared by unary calls
//! ([`crate::connect`]) and server streaming ([`crate::connect_stream`]).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::body::{self, BodyError};
use crate::core::{CallError, Core, INJECTED_FAILURE};

/// `application/json`: a canonical JSON body (unary calls' and errors').
pub(crate) const JSON: &str = "application/json";

/// Connect's error codes used here, with the HTTP status each maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Code {
    InvalidArgument,
    NotFound,
    ResourceExhausted,
    Unimplemented,
    Unavailable,
    DeadlineExceeded,
    Unknown,
}

impl Code {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Code::InvalidArgument => "invalid_argument",
            Code::NotFound => "not_found",
            Code::ResourceExhausted => "resource_exhausted",
            Code::Unimplemented => "unimplemented",
            Code::Unavailable => "unavailable",
            Code::DeadlineExceeded => "deadline_exceeded",
            Code::Unknown => "unknown",
        }
    }

    fn status(self) -> StatusCode {
        match self {
            Code::InvalidArgument => StatusCode::BAD_REQUEST,
            Code::NotFound => StatusCode::NOT_FOUND,
            Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
            Code::Unimplemented => StatusCode::NOT_IMPLEMENTED,
            Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
            Code::Unknown => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// A Connect error response.
pub(crate) fn connect_error(code: Code, message: &str) -> Response {
    connect_error_with_status(code, code.status(), message)
}

pub(crate) fn connect_error_with_status(code: Code, status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "code": code.name(), "message": message });
    (
        status,
        [(header::CONTENT_TYPE, HeaderValue::from_static(JSON))],
        body.to_string(),
    )
        .into_response()
}

/// The Connect code and message of a call's error.
pub(crate) fn code_of(err: CallError) -> (Code, String) {
    match err {
        CallError::Invalid(m) => (Code::InvalidArgument, m),
        CallError::NotFound(m) => (Code::NotFound, m),
        CallError::Injected => (Code::Unavailable, INJECTED_FAILURE.to_owned()),
    }
}

/// Reads a Connect request's body within the server's limits; a body that
/// cannot be read is answered by `answer` with its Connect code (too large:
/// `resource_exhausted`; too slow: `deadline_exceeded`, the connection then
/// closed; otherwise `invalid_argument`), for unary calls and streams alike.
pub(crate) async fn read_body(
    request: axum::extract::Request,
    core: &Core,
    answer: impl Fn(Code, &str) -> Response,
) -> Result<bytes::Bytes, Response> {
    let version = request.version();
    body::read(request, core.max_request_bytes, core.read_timeout)
        .await
        .map_err(|err| match err {
            BodyError::TooLarge { .. } => answer(Code::ResourceExhausted, &err.to_string()),
            BodyError::Timeout { .. } => {
                let mut response = answer(Code::DeadlineExceeded, &err.to_string());
                body::close_connection(version, &mut response);
                response
            }
            _ => answer(Code::InvalidArgument, &err.to_string()),
        })
}
