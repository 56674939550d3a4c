//! `[stream]`: how a `kind = "stream"` preset carries its streaming
//! workloads (docs/streaming.md, "The `streaming` preset"): the transports
//! (each on its listener: gRPC's streams on `grpc`, WebSocket, SSE and
//! polling on `rest`), WebSocket's frames, the messages per stream and the
//! per-stream message rates. `[load] concurrency` is the streams open at
//! once.

use protobench_contract::stream::StreamTransport;
use protobench_model::load::Protocol;
use protobench_model::run::PointKind;
use protobench_model::stream::{Frames, StreamPoint};
use toml::Spanned;

use super::check::Checker;
use super::raw::RawStream;

/// `[stream]`, checked.
pub(super) struct StreamSpec {
    pub(super) transports: Vec<StreamTransport>,
    pub(super) frames: Vec<Frames>,
    pub(super) messages: Option<u32>,
    pub(super) rates: Vec<Option<f64>>,
}

/// The listener a transport runs on in a `stream` preset: HTTP/1.1 for
/// WebSocket (the engine drives no RFC 8441 yet), SSE and polling.
pub(super) fn listener(t: StreamTransport) -> Protocol {
    match t {
        StreamTransport::Grpc => Protocol::Grpc,
        StreamTransport::WebSocket | StreamTransport::Sse | StreamTransport::Poll => Protocol::Rest,
        StreamTransport::Connect => Protocol::Connect,
    }
}

/// Whether `transport` carries `workload`'s operation.
pub(super) fn carries(transport: StreamTransport, workload: &str) -> bool {
    let plan = protobench_load::stream_plan_defaults(listener(transport), transport, "", workload);
    protobench_load::validate_stream(&plan).is_ok()
}

/// Checks `[stream]` against the kind: required by `stream`, refused by the others.
pub(super) fn stream_spec(
    raw: Option<&Spanned<RawStream>>,
    kind: PointKind,
    c: &mut Checker<'_>,
) -> Option<StreamSpec> {
    if kind != PointKind::Stream {
        if let Some(r) = raw {
            c.issue(r.span(), "stream", "only goes with kind = \"stream\"");
        }
        return None;
    }
    let empty = RawStream::default();
    let r = raw.map_or(&empty, |r| r.get_ref());
    let transport_names: Vec<&str> = StreamTransport::ALL.iter().map(|t| t.name()).collect();
    let transports = match &r.transports {
        None => StreamTransport::ALL.to_vec(),
        Some(_) => c
            .names(r.transports.as_ref(), "stream.transports", &transport_names)
            .iter()
            .filter_map(|n| StreamTransport::ALL.iter().copied().find(|t| t.name() == n))
            .collect(),
    };
    let frames = match &r.frames {
        None => vec![Frames::Binary],
        Some(_) => c
            .names(r.frames.as_ref(), "stream.frames", &["binary", "text"])
            .iter()
            .filter_map(|n| Frames::parse(n).ok())
            .collect(),
    };
    let messages = r
        .messages
        .as_ref()
        .map(|_| c.positive(r.messages.as_ref(), "stream.messages", 1, 1));
    let rates = match &r.rate {
        None => vec![None],
        Some(v) => {
            let rates = v.get_ref().to_vec();
            for x in &rates {
                if !(x.is_finite() && *x > 0.0 && *x <= protobench_load::MAX_STREAM_RATE) {
                    c.issue(
                        v.span(),
                        "stream.rate",
                        format!(
                            "{x} is no message rate (expected above 0, at most {} per second per stream)",
                            protobench_load::MAX_STREAM_RATE
                        ),
                    );
                }
            }
            rates.into_iter().map(Some).collect()
        }
    };
    Some(StreamSpec {
        transports,
        frames,
        messages,
        rates,
    })
}

impl StreamSpec {
    /// How `workload` is carried on a server serving `served` transports:
    /// every transport of the spec that carries it and the server serves,
    /// WebSocket once per frame type, times each rate.
    pub(super) fn points_for(&self, workload: &str, served: &[StreamTransport]) -> Vec<StreamPoint> {
        let mut out = Vec::new();
        for &transport in self.transports.iter().filter(|t| served.contains(t)) {
            if !carries(transport, workload) {
                continue;
            }
            let frames: &[Frames] = if transport == StreamTransport::WebSocket {
                &self.frames
            } else {
                &[Frames::Text]
            };
            for &frames in frames {
                for &rate in &self.rates {
                    out.push(StreamPoint {
                        transport,
                        frames,
                        messages: self.messages,
                        rate,
                    });
                }
            }
        }
        out
    }
}
