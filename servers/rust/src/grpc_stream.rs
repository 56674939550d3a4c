//! `grpc` streams: `protobench.v1.Streams` on tonic (bidirectional echo,
//! server-streaming subscription, client-streaming upload, unary poll).
//!
//! Each call is admitted once, like a unary call: the request (for a
//! subscription or a poll) is validated first, then the injected service
//! time and the failure draw run before the first message, so an injected
//! failure is `UNAVAILABLE` with no message sent. Replies are produced one
//! at a time as the client reads them (tonic's back-pressure), so no call
//! holds more than one message per direction. An inbound message over the
//! size limit ends the call with `RESOURCE_EXHAUSTED` (tonic reports it as
//! `OUT_OF_RANGE`, rewritten here as for unary calls); one past
//! [`MAX_STREAM_MESSAGES`] too.

use std::pin::Pin;
use std::sync::Arc;

use futures_util::Stream;
use futures_util::stream::unfold;
use protobench_contract::pb::bench::{
    FeedEvent, FeedPage, PollRequest, StreamMessage, SubscribeRequest, UploadSummary,
};
use protobench_contract::stream::{self, MAX_STREAM_MESSAGES, Tally};
use tonic::{Code, Request, Response, Status, Streaming};

use crate::core::{CallError, Core};
use crate::feed::{Feed, now_ns};
use crate::grpc_status::status;

#[allow(missing_docs, unreachable_pub, clippy::all, reason = "generated code")]
pub(crate) mod generated {
    include!(concat!(env!("OUT_DIR"), "/streams/protobench.v1.rs"));
}

use generated::streams_server::Streams;
pub(crate) use generated::streams_server::StreamsServer;

/// A boxed stream of replies.
type Replies<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// The service; one per server.
pub(crate) struct StreamsService(pub(crate) Arc<Core>);

/// What ends a call because of an inbound message: over the size limit is
/// `RESOURCE_EXHAUSTED` (tonic says `OUT_OF_RANGE`); the rest as tonic
/// reported it (an undecodable message is already `INVALID_ARGUMENT`).
fn inbound(status: Status) -> Status {
    if status.code() == Code::OutOfRange {
        Status::resource_exhausted(status.message().to_owned())
    } else {
        status
    }
}

fn too_many() -> Status {
    Status::resource_exhausted(stream::TooManyMessages.to_string())
}

fn invalid(err: protobench_contract::ContractError) -> Status {
    status(CallError::from(err))
}

#[tonic::async_trait]
impl Streams for StreamsService {
    type EchoStreamStream = Replies<StreamMessage>;
    type SubscribeStream = Replies<FeedEvent>;

    async fn echo_stream(
        &self,
        request: Request<Streaming<StreamMessage>>,
    ) -> Result<Response<Self::EchoStreamStream>, Status> {
        self.0.admit().await.map_err(status)?;
        let replies = unfold(Some((request.into_inner(), 0u32)), |state| async move {
            let (mut messages, n) = state?;
            match messages.message().await {
                Ok(Some(_)) if n >= MAX_STREAM_MESSAGES => Some((Err(too_many()), None)),
                Ok(Some(message)) => Some((Ok(message), Some((messages, n + 1)))),
                Ok(None) => None,
                Err(err) => Some((Err(inbound(err)), None)),
            }
        });
        Ok(Response::new(Box::pin(replies)))
    }

    async fn subscribe(&self, request: Request<SubscribeRequest>) -> Result<Response<Self::SubscribeStream>, Status> {
        let request = request.into_inner();
        stream::validate_subscribe(&request).map_err(invalid)?;
        self.0.admit().await.map_err(status)?;
        let feed = Feed::new(&self.0, request, 0);
        let events = unfold(feed, |mut feed| async move { feed.next().await.map(|e| (Ok(e), feed)) });
        Ok(Response::new(Box::pin(events)))
    }

    async fn upload(&self, request: Request<Streaming<StreamMessage>>) -> Result<Response<UploadSummary>, Status> {
        self.0.admit().await.map_err(status)?;
        let mut messages = request.into_inner();
        let mut tally = Tally::default();
        while let Some(message) = messages.message().await.map_err(inbound)? {
            tally.add(&message).map_err(|_| too_many())?;
        }
        Ok(Response::new(tally.summary()))
    }

    async fn poll(&self, request: Request<PollRequest>) -> Result<Response<FeedPage>, Status> {
        let request = request.into_inner();
        stream::validate_poll(&request).map_err(invalid)?;
        self.0.admit().await.map_err(status)?;
        let page = stream::poll_page(&self.0.dataset, &request, now_ns()).map_err(invalid)?;
        Ok(Response::new(page))
    }
}
