//! Polling, the REST baseline: the subscription's feed read by repeated
//! `GET /v1/stream/poll?...` on one keep-alive connection (HTTP/1.1, hyper's
//! client) or HTTP/2 streams (`h2`). Each page's events come out one by one
//! as a subscription's would, so the same receipt (`session::feed`) times
//! them against their stamps: at rate > 0 an event's latency includes the
//! wait for the poll that picks it up, which is what polling costs.
//!
//! A full page is followed by the next poll at once (more may be due);
//! otherwise the next poll waits the poll interval.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt as _, Empty};
use protobench_contract::pb::bench::{FeedEvent, FeedPage, PollRequest};
use protobench_contract::stream::{POLL_PATH, poll_query};
use protobench_model::stream::StreamEndKind;

use super::grpc::{self, Kind};
use super::record::Outcome;
use super::session::MessageSource;
use crate::driver::ByteCounters;
use crate::driver::net::Endpoint;
use crate::timer::PreciseTimer;

/// The largest page the engine reads (16,384 items of about 360 B of JSON
/// are under 6 MB).
const MAX_PAGE_BYTES: usize = 16 << 20;

fn broken(what: &str, e: impl std::fmt::Display) -> Outcome {
    Outcome::new(StreamEndKind::Broken, format!("{what}: {e}"))
}

/// The connection polls go over.
pub(crate) enum Poller {
    H1(hyper::client::conn::http1::SendRequest<Empty<Bytes>>),
    H2(h2::client::SendRequest<Bytes>),
}

/// Opens a keep-alive HTTP/1.1 connection for polling.
pub(crate) async fn open_h1(endpoint: &Endpoint, counters: &Rc<ByteCounters>) -> Result<Poller, Outcome> {
    let io = endpoint.connect(counters).await.map_err(Outcome::from)?;
    let (send, connection) = hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(hyper_util::rt::TokioIo::new(io))
        .await
        .map_err(|e| broken("HTTP/1.1 connection", e))?;
    tokio::task::spawn_local(async move {
        let _ = connection.await;
    });
    Ok(Poller::H1(send))
}

/// The feed's events, polled page by page.
pub(crate) struct PollSource {
    poller: Poller,
    endpoint: Endpoint,
    request: PollRequest,
    interval: Duration,
    timer: PreciseTimer,
    pending: VecDeque<FeedEvent>,
    done: bool,
    /// Whether the last page was full (the next poll goes at once).
    full: bool,
    /// Polls made (each a sent message).
    pub(crate) polls: Rc<Cell<u64>>,
    /// Every page as received, for `verify` (`None` under load).
    pub(crate) pages: Option<Rc<RefCell<Vec<FeedPage>>>>,
}

impl PollSource {
    pub(crate) fn new(poller: Poller, endpoint: &Endpoint, request: PollRequest, interval: Duration) -> PollSource {
        PollSource {
            poller,
            endpoint: endpoint.clone(),
            request,
            interval,
            timer: PreciseTimer::new(),
            pending: VecDeque::new(),
            done: false,
            full: true,
            polls: Rc::new(Cell::new(0)),
            pages: None,
        }
    }

    async fn poll(&mut self) -> Result<FeedPage, Outcome> {
        let path = format!("{POLL_PATH}?{}", poll_query(&self.request));
        let body = match &mut self.poller {
            Poller::H1(send) => {
                send.ready().await.map_err(|e| broken("the HTTP/1.1 connection", e))?;
                let request = http::Request::get(&path)
                    .header("host", &self.endpoint.authority)
                    .header("accept", Kind::Json.content_type())
                    .body(Empty::new())
                    .map_err(|e| broken("building the request", e))?;
                let response = send
                    .send_request(request)
                    .await
                    .map_err(|e| broken("waiting for the response head", e))?;
                status(response.status().as_u16())?;
                grpc::content_type(response.headers(), Kind::Json)?;
                let body = http_body_util::Limited::new(response.into_body(), MAX_PAGE_BYTES);
                body.collect()
                    .await
                    .map_err(|e| broken("reading a page", e))?
                    .to_bytes()
            }
            Poller::H2(conn) => {
                let (response, _send) = grpc::open(conn, &self.endpoint, &path, Kind::Json, true).await?;
                let mut body = grpc::H2Body(grpc::head(response, Kind::Json).await?);
                let mut buf = BytesMut::new();
                while let Some(chunk) = body.chunk().await? {
                    if buf.len() + chunk.len() > MAX_PAGE_BYTES {
                        return Err(Outcome::new(
                            StreamEndKind::WrongMessage,
                            format!("a page over {MAX_PAGE_BYTES} bytes"),
                        ));
                    }
                    buf.extend_from_slice(&chunk);
                }
                buf.freeze()
            }
        };
        self.polls.set(self.polls.get() + 1);
        protobench_contract::stream::from_json::<FeedPage>(&body)
            .map_err(|e| Outcome::new(StreamEndKind::WrongMessage, format!("undecodable page: {e}")))
    }
}

fn status(code: u16) -> Result<(), Outcome> {
    if code == 200 {
        return Ok(());
    }
    Err(Outcome::coded(
        StreamEndKind::HttpStatus,
        i64::from(code),
        format!("http status {code} (expected 200)"),
    ))
}

impl MessageSource<FeedEvent> for PollSource {
    async fn next(&mut self) -> Result<Option<FeedEvent>, Outcome> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Ok(Some(event));
            }
            if self.done {
                return Ok(None);
            }
            if !self.full {
                self.timer.sleep_until(Instant::now() + self.interval).await;
            }
            let page = self.poll().await?;
            self.full = page.events.len() as u32 >= self.request.max;
            self.done = page.done;
            if let Some(last) = page.events.last() {
                self.request.after = last.seq;
            }
            self.pending.extend(page.events.iter().cloned());
            if let Some(pages) = &self.pages {
                pages.borrow_mut().push(page);
            }
        }
    }
}
