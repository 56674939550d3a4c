//! The streaming operations' untrusted input, as the Rust server reads it
//! (protobench-contract's `stream` module): the SSE and polling query forms,
//! and the messages a client sends (`StreamMessage`, `SubscribeRequest`) in
//! JSON text frames and protobuf binary frames.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use protobench_contract::Dataset;
use protobench_contract::pb::bench::{StreamMessage, SubscribeRequest};
use protobench_contract::stream::{self, MAX_PAGE_EVENTS, MAX_PAGE_ITEMS};

/// A clock far enough on that paced feeds are partly due.
const NOW_NS: i64 = 1_000_000_000_000_000_000;

fn dataset() -> &'static Dataset {
    static DATASET: OnceLock<Dataset> = OnceLock::new();
    DATASET.get_or_init(Dataset::generate)
}

/// A message that decodes in one form encodes and decodes back to itself
/// (a macro: the concrete types need no prost bound named here).
macro_rules! round_trip {
    ($ty:ty, $data:expr) => {
        if let Ok(m) = stream::from_json::<$ty>($data) {
            assert_eq!(stream::from_json::<$ty>(&stream::to_json(&m)).unwrap(), m);
            let bytes = stream::encode_delimited(std::slice::from_ref(&m));
            assert_eq!(stream::decode_delimited::<$ty>(&bytes).unwrap(), [m]);
        }
        if let Ok(m) = stream::from_protobuf::<$ty>($data) {
            assert_eq!(stream::from_json::<$ty>(&stream::to_json(&m)).unwrap(), m);
        }
    };
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(r) = stream::subscribe_from_query(text) {
            assert!(stream::validate_subscribe(&r).is_ok());
            assert_eq!(stream::subscribe_from_query(&stream::subscribe_query(&r)).unwrap(), r);
        }
        if let Ok(p) = stream::poll_from_query(text) {
            assert_eq!(stream::poll_from_query(&stream::poll_query(&p)).unwrap(), p);
            // A page keeps to its bounds: at most max events, and at most the
            // item budget (or one event, when one alone is over it).
            let page = stream::poll_page(dataset(), &p, NOW_NS).expect("a valid poll has a page");
            assert!(page.events.len() <= p.max.min(MAX_PAGE_EVENTS) as usize);
            let items: usize = page.events.iter().map(|e| e.items.len()).sum();
            assert!(items <= (MAX_PAGE_ITEMS as usize).max(p.items as usize));
            assert!(page.events.iter().enumerate().all(|(i, e)| e.seq == p.after + 1 + i as u32));
        }
    }
    round_trip!(StreamMessage, data);
    round_trip!(SubscribeRequest, data);
    if let Ok(r) = stream::from_protobuf::<SubscribeRequest>(data) {
        let _ = stream::validate_subscribe(&r);
    }
});
