//! One load result as OpenMetrics text (which Prometheus also reads), for a
//! push gateway, a textfile collector or a CI dashboard. The encoding is the
//! `prometheus-client` crate's, so names, units, `# EOF` and escaping follow
//! the specification.
//!
//! Every metric carries the labels `protocol`, `target` and `workload`
//! (`custom` for a custom call). Latencies are in seconds as OpenMetrics
//! asks; the percentiles are one gauge family with a `quantile` label.

use std::borrow::Cow;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use protobench_model::load::LoadResult;

type Labels = Vec<(String, String)>;

fn gauge(v: f64) -> Gauge<f64, AtomicU64> {
    let g = Gauge::<f64, AtomicU64>::default();
    g.set(v);
    g
}

fn counter(v: u64) -> Counter {
    let c = Counter::default();
    c.inc_by(v);
    c
}

/// The result as OpenMetrics text, ending with `# EOF`.
pub fn openmetrics(r: &LoadResult) -> String {
    let labels: Vec<(Cow<'static, str>, Cow<'static, str>)> = vec![
        ("protocol".into(), r.plan.protocol.name().to_owned().into()),
        ("target".into(), r.plan.target.clone().into()),
        (
            "workload".into(),
            r.plan.workload.clone().unwrap_or_else(|| "custom".into()).into(),
        ),
    ];
    let mut reg = Registry::with_prefix_and_labels("protobench", labels.into_iter());
    reg.register("calls", "Calls completed in the measured window", counter(r.calls));
    reg.register("successes", "Calls that succeeded", counter(r.successes));
    let errors = Family::<Labels, Counter>::default();
    for e in &r.errors {
        errors
            .get_or_create(&vec![("kind".into(), e.kind.name().into())])
            .inc_by(e.count);
    }
    reg.register("errors", "Failed calls by kind", errors);
    reg.register_with_unit(
        "duration",
        "Length of the measured window",
        Unit::Seconds,
        gauge(r.duration_ns as f64 / 1e9),
    );
    reg.register(
        "rate_calls_per_second",
        "Successful calls per second of the measured window",
        gauge(r.rate),
    );
    let l = &r.latency;
    let quantiles = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    if l.count > 0 {
        for (q, v) in [
            ("0.5", l.p50_ns),
            ("0.9", l.p90_ns),
            ("0.95", l.p95_ns),
            ("0.99", l.p99_ns),
            ("0.999", l.p999_ns),
            ("1", l.max_ns),
        ] {
            quantiles
                .get_or_create(&vec![("quantile".into(), q.into())])
                .set(v as f64 / 1e9);
        }
    }
    reg.register_with_unit(
        "latency",
        "Corrected latency of successful calls at a quantile",
        Unit::Seconds,
        quantiles,
    );
    if l.count > 0 {
        reg.register_with_unit(
            "latency_mean",
            "Mean corrected latency of successful calls",
            Unit::Seconds,
            gauge(l.mean_ns as f64 / 1e9),
        );
    }
    reg.register_with_unit(
        "sent",
        "Bytes written to the connections",
        Unit::Bytes,
        counter(r.bytes_sent),
    );
    reg.register_with_unit(
        "received",
        "Bytes read from the connections",
        Unit::Bytes,
        counter(r.bytes_received),
    );
    reg.register_with_unit(
        "generator_cpu",
        "CPU time of the load generator in the measured window",
        Unit::Seconds,
        counter_f64(r.generator.cpu_ns as f64 / 1e9),
    );
    reg.register(
        "generator_bound",
        "1 when the load generator, not the server, limited the run",
        gauge(if r.generator.generator_bound { 1.0 } else { 0.0 }),
    );
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = encode(&mut out, &reg);
    out
}

fn counter_f64(v: f64) -> Counter<f64, AtomicU64> {
    let c = Counter::<f64, AtomicU64>::default();
    c.inc_by(v);
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_units_labels_and_eof_follow_openmetrics() {
        let r = protobench_model::testing::result("grpc", "inventory.xs", 1000.0, 7, 2);
        let text = openmetrics(&r);
        let labels = r#"protocol="grpc",target="127.0.0.1:1",workload="inventory.xs""#;
        for line in [
            "# TYPE protobench_calls counter".to_string(),
            format!("protobench_calls_total{{{labels}}} 2007"),
            format!("protobench_errors_total{{{labels},kind=\"http_status\"}} 7"),
            "# UNIT protobench_latency_seconds seconds".to_string(),
            format!("protobench_latency_seconds{{{labels},quantile=\"0.99\"}} 0.005"),
            format!("protobench_rate_calls_per_second{{{labels}}} 1000.0"),
            format!("protobench_sent_bytes_total{{{labels}}} 200700"),
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
