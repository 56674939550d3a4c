//! The readable summary of one streaming load run (`protobench load` with
//! a streaming workload): streams, messages each way, per-message latency
//! from the intended send time, set-up and first message, deferred sends,
//! how the streams ended, and the latency histogram.

use protobench_model::format::{fmt_bytes, fmt_ns, fmt_rate};
use protobench_model::stream::{StreamEndKind, StreamResult, StreamTransport};

use crate::load_summary::{BUCKETS, buckets, histogram_text, latency_line, plural};

/// The summary as text.
pub fn text(r: &StreamResult) -> String {
    let p = &r.plan;
    let carried = match p.transport {
        StreamTransport::WebSocket => format!("websocket ({} frames) over {}", p.frames.name(), p.protocol),
        t => format!("{t} over {}", p.protocol),
    };
    let schedule = match p.rate {
        Some(rate) => format!("{} messages/s per stream", fmt_rate(rate)),
        None => "no --rate (echo: ping-pong; subscription: the workload's rate)".into(),
    };
    let mut s = format!(
        "{} {carried} {}: {} stream{} on {} connection{}, {schedule}\n",
        p.workload,
        p.target,
        p.streams,
        plural(u64::from(p.streams)),
        p.connections,
        plural(u64::from(p.connections)),
    );
    s += &format!("ran {} ({})\n", fmt_ns(r.duration_ns as f64), r.end_reason.name());
    let c = &r.streams;
    s += &format!(
        "streams    opened {}  clean {}  failed {}  cut {}  open at once {}\n",
        c.opened, c.clean, c.failed, c.cut, c.max_open
    );
    s += &format!(
        "messages   sent {} ({}/s)  received {} ({}/s)\n",
        r.messages_sent,
        fmt_rate(r.sent_per_second),
        r.messages_received,
        fmt_rate(r.received_per_second)
    );
    s += &format!(
        "bytes      {}/message sent  {}/message received\n",
        fmt_bytes(r.bytes_sent_per_message),
        fmt_bytes(r.bytes_received_per_message)
    );
    s += &format!(
        "deferred   {} send{} (back-pressure)\n",
        r.deferred_sends,
        plural(r.deferred_sends)
    );
    s += &latency_line("latency", &r.latency);
    s += &latency_line("set-up", &r.setup);
    s += &latency_line("first msg", &r.first_message);
    s += &latency_line("send lag", &r.send_lag);
    s += &format!(
        "generator  {} thread{}, CPU {}/message, {:.0}% busy{}\n",
        r.threads,
        plural(u64::from(r.threads)),
        fmt_ns(r.cpu_ns_per_message),
        r.cpu_utilization * 100.0,
        if r.generator_bound {
            " (generator-bound: the engine, not the server, may have set the pace)"
        } else {
            ""
        }
    );
    s += "ends\n";
    for e in &r.ends {
        let code = e.code.map(|c| format!(" {c}")).unwrap_or_default();
        let sample = if e.kind == StreamEndKind::Clean || e.sample.is_empty() {
            String::new()
        } else {
            format!(": {}", e.sample)
        };
        s += &format!(
            "  [{}{code}] {} stream{}{sample}\n",
            e.kind.name(),
            e.count,
            plural(e.count)
        );
    }
    if let Ok(h) = r.histogram.decode()
        && !h.is_empty()
    {
        s += "latency histogram (per message)\n";
        s += &histogram_text(&buckets(&h, BUCKETS));
    }
    s
}
