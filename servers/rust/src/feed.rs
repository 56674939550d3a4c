//! A subscription's feed as the server sends it: events built one at a
//! time from the shared dataset (never a prepared list), each sent no
//! earlier than its scheduled time and stamped with that time.
//!
//! The schedule is anchored once, when the stream starts (a monotonic
//! instant for waiting, the wall clock for the stamp); a server that falls
//! behind sends the late events at once, still stamped with their scheduled
//! time, so a client's latency counts the server's lag (no coordinated
//! omission). At rate 0 each event is stamped when it is built.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use protobench_contract::Dataset;
use protobench_contract::pb::bench::{FeedEvent, SubscribeRequest};
use protobench_contract::stream::{feed_event, offset_ns};
use tokio::time::Instant;

/// Now, in ns since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// The events of one subscription still to send.
pub(crate) struct Feed {
    dataset: Arc<Dataset>,
    request: SubscribeRequest,
    base: Instant,
    base_ns: i64,
    /// The schedule offset of the first event sent (non-zero when an SSE
    /// client resumes after `Last-Event-ID`): it is due at once.
    skew: i64,
    next: u32,
    /// The test fault ([`crate::FeedFault`]); a stall is taken once.
    fault: Option<crate::FeedFault>,
}

impl Feed {
    /// A feed of `request` (already validated) that starts now with the
    /// event after `after`.
    pub(crate) fn new(core: &crate::core::Core, request: SubscribeRequest, after: u32) -> Feed {
        Feed {
            dataset: core.dataset.clone(),
            fault: core.feed_fault,
            base: Instant::now(),
            base_ns: now_ns(),
            skew: offset_ns(after.saturating_add(1), request.rate),
            next: after.saturating_add(1),
            request,
        }
    }

    /// The next event, once it is due; `None` after the last. Cancel-safe:
    /// a call dropped while waiting leaves the event to the next call.
    pub(crate) async fn next(&mut self) -> Option<FeedEvent> {
        if self.next > self.request.count {
            return None;
        }
        let mut seq = self.next;
        match self.fault {
            Some(crate::FeedFault::Stall { after, pause }) if seq == after.saturating_add(1) => {
                self.fault = None;
                tokio::time::sleep(pause).await;
            }
            Some(crate::FeedFault::Drop { seq: dropped }) if seq == dropped && seq < self.request.count => {
                self.next += 1;
                seq += 1;
            }
            _ => {}
        }
        let scheduled_ns = if self.request.rate == 0 {
            now_ns()
        } else {
            let offset = offset_ns(seq, self.request.rate) - self.skew;
            tokio::time::sleep_until(self.base + Duration::from_nanos(offset.max(0) as u64)).await;
            self.base_ns.saturating_add(offset)
        };
        self.next += 1;
        let sent = match self.fault {
            Some(crate::FeedFault::Swap { seq: first }) if seq == first && seq < self.request.count => seq + 1,
            Some(crate::FeedFault::Swap { seq: first }) if seq == first.saturating_add(1) => first,
            _ => seq,
        };
        Some(feed_event(&self.dataset, sent, self.request.items, scheduled_ns))
    }

    /// The number of events this feed ends with (the request's `count`).
    pub(crate) fn count(&self) -> u32 {
        self.request.count
    }
}
