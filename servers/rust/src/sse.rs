//! The feed over plain HTTP on the `rest` and `rest-h2` listeners:
//! Server-Sent Events ([`stream::SSE_PATH`]) and polling
//! ([`stream::POLL_PATH`]).
//!
//! Both read the feed's parameters from the query (`count`, `items`, `rate`;
//! polling adds `startNs`, `after`, `max`) and answer bad ones with the
//! contract's JSON error (400) before anything is sent. An SSE event is
//! `id: <seq>`, `event: feed`, `data: <the event's canonical JSON>`; after
//! the last one an `end` event (`data: {"count":N}`) and the end of the
//! response. A client that reconnects with `Last-Event-ID: s` gets the
//! events after `s`, the first of them at once and the rest on the feed's
//! schedule from there.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::unfold;
use protobench_contract::stream::{self, SSE_END_EVENT, SSE_EVENT};

use crate::core::Core;
use crate::feed::{Feed, now_ns};
use crate::json_error::{call_error, error};

/// The state of an SSE response: the feed, then one `end` event.
enum Phase {
    Events(Feed),
    Ended,
}

/// `GET` [`stream::SSE_PATH`]`?count=N&items=K&rate=R`.
pub(crate) async fn subscribe(
    State(core): State<Arc<Core>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let request = match stream::subscribe_from_query(query.as_deref().unwrap_or("")) {
        Ok(request) => request,
        Err(err) => return error(StatusCode::BAD_REQUEST, &err.to_string()),
    };
    let after = match headers.get("last-event-id") {
        None => 0,
        Some(value) => match value.to_str().ok().and_then(|v| v.trim().parse::<u32>().ok()) {
            Some(after) if after <= request.count => after,
            _ => {
                return error(
                    StatusCode::BAD_REQUEST,
                    &format!(
                        "Last-Event-ID is not an event of this feed; expected 0..={}",
                        request.count
                    ),
                );
            }
        },
    };
    if let Err(err) = core.admit().await {
        return call_error(err);
    }
    let feed = Feed::new(&core, request, after);
    let events = unfold(Phase::Events(feed), |phase| async move {
        match phase {
            Phase::Events(mut feed) => match feed.next().await {
                Some(event) => {
                    let data = String::from_utf8(stream::to_json(&event)).expect("JSON is UTF-8");
                    let sse = Event::default().id(event.seq.to_string()).event(SSE_EVENT).data(data);
                    Some((Ok::<_, Infallible>(sse), Phase::Events(feed)))
                }
                None => {
                    let count = feed.count();
                    let end = Event::default()
                        .event(SSE_END_EVENT)
                        .data(format!("{{\"count\":{count}}}"));
                    Some((Ok(end), Phase::Ended))
                }
            },
            Phase::Ended => None,
        }
    });
    let mut response = Sse::new(events).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// `GET` [`stream::POLL_PATH`]`?count=N&items=K&rate=R&startNs=T&after=S&max=M`.
pub(crate) async fn poll(State(core): State<Arc<Core>>, RawQuery(query): RawQuery) -> Response {
    let request = match stream::poll_from_query(query.as_deref().unwrap_or("")) {
        Ok(request) => request,
        Err(err) => return error(StatusCode::BAD_REQUEST, &err.to_string()),
    };
    if let Err(err) = core.admit().await {
        return call_error(err);
    }
    match stream::poll_page(&core.dataset, &request, now_ns()) {
        Ok(page) => (
            [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
            stream::to_json(&page),
        )
            .into_response(),
        Err(err) => error(StatusCode::BAD_REQUEST, &err.to_string()),
    }
}
