//! The named streaming workloads: each is one streaming operation plus what
//! the client sends (`stream.echo.1k`, `stream.sub.8k`, ...). Sizes in the
//! names are the protobuf size of one message, roughly.

use crate::data;
use crate::pb::bench::{PollRequest, StreamMessage, SubscribeRequest};

use super::StreamOperation;

/// What a streaming workload's client sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// An echo stream of `messages` messages with `payload`-byte payloads.
    Echo {
        /// Messages sent.
        messages: u32,
        /// ASCII bytes per payload.
        payload: usize,
    },
    /// A subscription.
    Subscribe {
        /// Events asked for.
        count: u32,
        /// Items per event.
        items: u32,
        /// Events per second (0: as fast as possible).
        rate: u32,
    },
    /// An upload of `messages` messages with `payload`-byte payloads.
    Upload {
        /// Messages sent.
        messages: u32,
        /// ASCII bytes per payload.
        payload: usize,
    },
    /// The subscription's feed read by polling, `max` events a page.
    Poll {
        /// Events in the feed.
        count: u32,
        /// Items per event.
        items: u32,
        /// Events per poll.
        max: u32,
    },
}

/// A named streaming workload.
#[derive(Debug, Clone, Copy)]
pub struct StreamWorkload {
    /// The name, e.g. `stream.sub.1k`.
    pub name: &'static str,
    /// What it carries, in one line.
    pub description: &'static str,
    /// What the client sends.
    pub plan: Plan,
}

impl StreamWorkload {
    /// The streaming operation it calls.
    pub fn operation(&self) -> StreamOperation {
        match self.plan {
            Plan::Echo { .. } => StreamOperation::EchoStream,
            Plan::Subscribe { .. } => StreamOperation::Subscribe,
            Plan::Upload { .. } => StreamOperation::Upload,
            Plan::Poll { .. } => StreamOperation::Poll,
        }
    }

    /// The messages an echo or upload client sends, in order (empty for
    /// the others): seq 1, 2, ...; payload `i` is ASCII from its own seed.
    pub fn messages(&self) -> Vec<StreamMessage> {
        let (n, len, seed) = match self.plan {
            Plan::Echo { messages, payload } => (messages, payload, 0x5EC0_0000_u64),
            Plan::Upload { messages, payload } => (messages, payload, 0x5A10_0000_u64),
            _ => return Vec::new(),
        };
        (1..=n)
            .map(|seq| StreamMessage {
                seq,
                payload: data::ascii(seed + u64::from(seq) * 0x1_0000 + len as u64, len),
            })
            .collect()
    }

    /// The request of a subscription, or the feed a poll reads.
    pub fn subscribe_request(&self) -> Option<SubscribeRequest> {
        match self.plan {
            Plan::Subscribe { count, items, rate } => Some(SubscribeRequest { count, items, rate }),
            Plan::Poll { count, items, .. } => Some(SubscribeRequest { count, items, rate: 0 }),
            _ => None,
        }
    }

    /// The polls a polling client makes, each after the last page's last
    /// event (the feed is at rate 0, so every page is full).
    pub fn polls(&self) -> Vec<PollRequest> {
        let Plan::Poll { count, items, max } = self.plan else {
            return Vec::new();
        };
        (0..count.div_ceil(max))
            .map(|page| PollRequest {
                count,
                items,
                rate: 0,
                start_ns: 0,
                after: page * max,
                max,
            })
            .collect()
    }
}

macro_rules! w {
    ($name:literal, $desc:literal, $plan:expr) => {
        StreamWorkload {
            name: $name,
            description: $desc,
            plan: $plan,
        }
    };
}

/// Every streaming workload, in a stable order.
pub static ALL: &[StreamWorkload] = &[
    w!(
        "stream.echo.64b",
        "echo stream: 100 messages of 64 bytes, each echoed in order",
        Plan::Echo {
            messages: 100,
            payload: 64
        }
    ),
    w!(
        "stream.echo.1k",
        "echo stream: 100 messages of 1,024 bytes",
        Plan::Echo {
            messages: 100,
            payload: 1024
        }
    ),
    w!(
        "stream.echo.64k",
        "echo stream: 16 messages of 65,536 bytes",
        Plan::Echo {
            messages: 16,
            payload: 65_536
        }
    ),
    w!(
        "stream.sub.tiny",
        "subscription: 100 events with no items (seq and time only, ~10 B)",
        Plan::Subscribe {
            count: 100,
            items: 0,
            rate: 0
        }
    ),
    w!(
        "stream.sub.1k",
        "subscription: 100 events of 6 inventory items (~1 KB protobuf, ~2.3 KB JSON)",
        Plan::Subscribe {
            count: 100,
            items: 6,
            rate: 0
        }
    ),
    w!(
        "stream.sub.8k",
        "subscription: 100 events of 52 items (~8 KB protobuf, ~19 KB JSON)",
        Plan::Subscribe {
            count: 100,
            items: 52,
            rate: 0
        }
    ),
    w!(
        "stream.sub.64k",
        "subscription: 16 events of 415 items (~64 KB protobuf, ~150 KB JSON)",
        Plan::Subscribe {
            count: 16,
            items: 415,
            rate: 0
        }
    ),
    w!(
        "stream.sub.1k.r1000",
        "subscription: 100 events of 6 items at 1,000 events/s (latency from the scheduled send time)",
        Plan::Subscribe {
            count: 100,
            items: 6,
            rate: 1000
        }
    ),
    w!(
        "stream.upload.1k",
        "upload: 100 messages of 1,024 bytes, one summary back",
        Plan::Upload {
            messages: 100,
            payload: 1024
        }
    ),
    w!(
        "stream.upload.64k",
        "upload: 16 messages of 65,536 bytes, one summary back",
        Plan::Upload {
            messages: 16,
            payload: 65_536
        }
    ),
    w!(
        "stream.poll.1k",
        "polling: stream.sub.1k's feed read 10 events a poll (the REST baseline)",
        Plan::Poll {
            count: 100,
            items: 6,
            max: 10
        }
    ),
];

/// The streaming workload called `name`.
pub fn find(name: &str) -> Option<&'static StreamWorkload> {
    ALL.iter().find(|w| w.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Dataset;
    use crate::stream::{feed_event, protobuf_len};

    #[test]
    fn names_are_unique_and_apart_from_the_unary_ones() {
        let mut names: Vec<_> = ALL.iter().map(|w| w.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        assert!(names.iter().all(|n| crate::workload::find(n).is_none()));
    }

    #[test]
    fn subscription_sizes_match_their_names() {
        let d = Dataset::generate();
        // Mean protobuf size of an event, and the bounds its name promises.
        for (name, lo, hi) in [
            ("stream.sub.tiny", 2, 20),
            ("stream.sub.1k", 900, 1100),
            ("stream.sub.8k", 7800, 8600),
            ("stream.sub.64k", 62_000, 68_000),
        ] {
            let r = find(name).unwrap().subscribe_request().unwrap();
            let total: usize = (1..=r.count)
                .map(|seq| protobuf_len(&feed_event(&d, seq, r.items, 1_764_000_000_000_000_000)))
                .sum();
            let mean = total / r.count as usize;
            assert!((lo..=hi).contains(&mean), "{name}: {mean} B");
        }
    }

    #[test]
    fn echo_messages_differ_and_polls_cover_the_feed() {
        let ms = find("stream.echo.1k").unwrap().messages();
        assert_eq!(ms.len(), 100);
        assert_ne!(ms[0].payload, ms[1].payload);
        assert!(ms.iter().all(|m| m.payload.len() == 1024));
        let polls = find("stream.poll.1k").unwrap().polls();
        assert_eq!(
            polls.iter().map(|p| p.after).collect::<Vec<_>>(),
            (0..10).map(|i| i * 10).collect::<Vec<_>>()
        );
    }
}
