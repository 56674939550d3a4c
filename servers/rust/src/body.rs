//! Request bodies of the HTTP protocols: content type checks and reading
//! under the size limit.

use axum::extract::Request;
use axum::http::{HeaderMap, header};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, LengthLimitError, Limited};

/// Why a request body could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    /// Over the size limit (413).
    #[error("request body over the limit of {limit} bytes")]
    TooLarge { limit: usize },
    /// The client stopped sending or the stream broke.
    #[error("cannot read the request body")]
    Read,
    /// The body did not arrive within the read timeout (408).
    #[error("the request body did not arrive within {}", humantime(*.timeout))]
    Timeout { timeout: Duration },
}

/// `30s`, `500ms`: the timeout as the env contract writes it.
fn humantime(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.as_nanos().is_multiple_of(1_000_000) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}us", d.as_micros())
    }
}

/// Whether the `Content-Type` is `media_type` (any parameters, any case).
pub(crate) fn has_content_type(headers: &HeaderMap, media_type: &str) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(media_type))
}

/// The `Content-Type` for messages: the value, or `(none)`.
pub(crate) fn content_type(headers: &HeaderMap) -> String {
    match headers.get(header::CONTENT_TYPE) {
        None => "(none)".to_owned(),
        Some(v) => format!("{:?}", String::from_utf8_lossy(v.as_bytes())),
    }
}

/// Reads the whole body, refusing it as soon as it is known to be over
/// `limit` bytes (a `Content-Length` over the limit is refused unread), and
/// giving up when it has not all arrived within `timeout`.
pub(crate) async fn read(request: Request, limit: usize, timeout: Duration) -> Result<Bytes, BodyError> {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(BodyError::TooLarge { limit });
    }
    match tokio::time::timeout(timeout, Limited::new(request.into_body(), limit).collect()).await {
        Err(_elapsed) => Err(BodyError::Timeout { timeout }),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(err)) if err.is::<LengthLimitError>() => Err(BodyError::TooLarge { limit }),
        Ok(Err(_)) => Err(BodyError::Read),
    }
}

/// Marks an HTTP/1.1 response as the connection's last (`Connection:
/// close`): after a body timeout the rest of the body may still be on its
/// way, so the connection cannot carry another request. HTTP/2 has no such
/// header (the stream alone ends).
pub(crate) fn close_connection(version: http::Version, response: &mut axum::response::Response) {
    if version < http::Version::HTTP_2 {
        response
            .headers_mut()
            .insert(header::CONNECTION, http::HeaderValue::from_static("close"));
    }
}
