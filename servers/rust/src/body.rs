//! Request bodies of the HTTP protocols: content type checks and reading
//! under the size limit.

use axum::extract::Request;
use axum::http::{HeaderMap, header};
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
/// `limit` bytes (a `Content-Length` over the limit is refused unread).
pub(crate) async fn read(request: Request, limit: usize) -> Result<Bytes, BodyError> {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(BodyError::TooLarge { limit });
    }
    match Limited::new(request.into_body(), limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err) if err.is::<LengthLimitError>() => Err(BodyError::TooLarge { limit }),
        Err(_) => Err(BodyError::Read),
    }
}
