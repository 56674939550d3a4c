//! Every input of a [`LoadPlan`] checked together before anything opens a
//! socket; each error names the flags involved.

use protobench_model::load::{CustomCall, LoadPlan, Protocol};

use crate::error::PlanError;

/// The longest `--duration`, `--warmup`, `--timeout` and `--connect-timeout`:
/// 10^6 s (11.6 days). Longer is a typo, and past 2^64 ns it would wrap.
pub const MAX_DURATION_NS: u64 = 1_000_000 * 1_000_000_000;
/// How [`MAX_DURATION_NS`] is written in messages.
pub const MAX_DURATION_TEXT: &str = "at most 1000000s (11.6 days)";
/// The lowest `--rate`, calls per second (one call in 1000 s).
pub const MIN_RATE: f64 = 0.001;
/// The highest `--rate`, calls per second (100x what one engine thread makes).
pub const MAX_RATE: f64 = 10_000_000.0;

pub(crate) fn seconds(ns: u64) -> String {
    format!("{}s", ns as f64 / 1e9)
}

fn at_most_max_duration(flag: &'static str, ns: u64) -> Result<(), PlanError> {
    if ns > MAX_DURATION_NS {
        return Err(PlanError::OutOfRange {
            flag,
            rule: MAX_DURATION_TEXT,
            value: seconds(ns),
        });
    }
    Ok(())
}

/// Checks every input together; errors name the flags involved.
pub fn validate(plan: &LoadPlan) -> Result<(), PlanError> {
    validate_call(plan)?;
    validate_http(plan)?;
    validate_load(plan)?;
    validate_times(plan)?;
    validate_stages(plan)?;
    validate_tls(plan)
}

/// A concurrency schedule: closed loop, stop by time, targets that never
/// fall, and `--concurrency` equal to its peak.
fn validate_stages(plan: &LoadPlan) -> Result<(), PlanError> {
    let bad = |m: String| Err(PlanError::Schedule(m));
    if plan.stages.is_empty() {
        if plan.start_users > 0 {
            return bad(format!(
                "--start-users ({}) requires --stage (a concurrency schedule)",
                plan.start_users
            ));
        }
        return Ok(());
    }
    if plan.rate.is_some() {
        return bad(
            "--stage and --rate cannot be used together: a concurrency schedule is closed loop only (open loop sets a rate, not users)"
                .into(),
        );
    }
    if plan.requests.is_some() {
        return Err(PlanError::Conflict("--stage", "--requests"));
    }
    let total: u64 = plan.stages.iter().fold(0u64, |a, s| a.saturating_add(s.duration_ns));
    if let Some(d) = plan.duration_ns
        && d != total
    {
        return bad(format!(
            "--duration ({}) must be left out with --stage, or equal the stages' total ({})",
            seconds(d),
            seconds(total)
        ));
    }
    if total == 0 {
        return bad("--stage: the stages must last longer than 0s in total".into());
    }
    if total > MAX_DURATION_NS {
        return bad(format!(
            "--stage: the stages' total must be {MAX_DURATION_TEXT}, got {}",
            seconds(total)
        ));
    }
    let mut previous = plan.start_users;
    for (i, s) in plan.stages.iter().enumerate() {
        if s.target < previous {
            return bad(format!(
                "--stage {} ({}:{}) lowers the target from {previous} to {}: ramp-down is not supported (callers stay to the end)",
                i + 1,
                seconds(s.duration_ns),
                s.target,
                s.target
            ));
        }
        previous = s.target;
    }
    let peak = crate::stages::peak(plan.start_users, &plan.stages);
    if peak == 0 {
        return bad("--stage: every target is 0; expected at least one stage with 1 or more users".into());
    }
    if plan.concurrency != peak {
        return bad(format!(
            "--concurrency ({}) must equal the schedule's peak ({peak} users, the highest --stage target)",
            plan.concurrency
        ));
    }
    Ok(())
}

/// What is called: a contract workload, or a custom call fit for the protocol.
fn validate_call(plan: &LoadPlan) -> Result<(), PlanError> {
    let p = plan.protocol;
    if let Some(w) = &plan.workload
        && protobench_contract::workload::find(w).is_none()
    {
        // A GraphQL-only workload (contract/graphql/workloads.json) asks for
        // part of a message, which only GraphQL can.
        if protobench_contract::graphql::find(w).is_some() {
            if !matches!(p, Protocol::Graphql | Protocol::GraphqlGet) {
                return Err(PlanError::UnknownWorkload(format!(
                    "workload {w:?} is GraphQL-only (it selects part of a message); use --protocol graphql or graphql-get"
                )));
            }
        } else {
            return Err(PlanError::UnknownWorkload(protobench_contract::workload::unknown(w)));
        }
    }
    if p == Protocol::GraphqlGet
        && let Some(w) = plan.workload.as_deref().and_then(protobench_contract::workload::find)
        && protobench_contract::graphql::root(w.operation).mutation
    {
        return Err(PlanError::UnknownWorkload(format!(
            "workload {:?} is a GraphQL mutation; graphql-get sends queries only (GET): use --protocol graphql",
            w.name
        )));
    }
    let custom = plan.custom.as_ref();
    if plan.workload.is_some() {
        if let Some(c) = custom {
            let flag = if c.body_file.is_some() {
                "--data-file"
            } else if !c.proto_files.is_empty() {
                "--proto"
            } else if c.protoset.is_some() {
                "--protoset"
            } else if c.call.is_some() {
                "--call"
            } else if c.method.is_some() {
                "--method"
            } else if c.soap_action.is_some() {
                "--soap-action"
            } else if c.data.is_some() {
                "--data"
            } else {
                "a custom call"
            };
            if !only_headers(c) {
                return Err(PlanError::WorkloadAndCustom(flag));
            }
        }
    } else {
        match custom {
            None => return Err(PlanError::NothingToCall),
            Some(c) => validate_custom(p, c)?,
        }
    }
    Ok(())
}

/// The most calls in flight one engine run takes: ten times the largest
/// a shipped preset asks for (Hedelin's ramp, 10,000 users), and more than
/// one machine's descriptors allow with a connection per caller. Above it
/// the per-caller state alone would take gigabytes.
pub const MAX_CONCURRENCY: u32 = 100_000;

/// The most engine threads: far above any machine's cores, which is all
/// the engine can use.
pub(crate) const MAX_THREADS: u32 = 1024;

/// Concurrency, connections, threads and rate.
fn validate_load(plan: &LoadPlan) -> Result<(), PlanError> {
    let p = plan.protocol;
    if plan.concurrency == 0 {
        return Err(PlanError::OutOfRange {
            flag: "--concurrency",
            rule: "at least 1",
            value: "0".into(),
        });
    }
    if plan.concurrency > MAX_CONCURRENCY {
        return Err(PlanError::OutOfRange {
            flag: "--concurrency",
            rule: "at most 100,000 (calls in flight in one engine run)",
            value: plan.concurrency.to_string(),
        });
    }
    if plan.threads > MAX_THREADS {
        return Err(PlanError::OutOfRange {
            flag: "--threads",
            rule: "at most 1024",
            value: plan.threads.to_string(),
        });
    }
    if plan.connections == 0 {
        return Err(PlanError::OutOfRange {
            flag: "--connections",
            rule: "at least 1",
            value: "0".into(),
        });
    }
    if plan.connections > plan.concurrency {
        return Err(PlanError::MoreConnectionsThanConcurrency {
            connections: plan.connections,
            concurrency: plan.concurrency,
        });
    }
    if plan.per_call && plan.connections != plan.concurrency {
        return Err(PlanError::OutOfRange {
            flag: "--connections",
            rule: "equal to --concurrency with per-call (the most connections open at once)",
            value: plan.connections.to_string(),
        });
    }
    if p.is_http1() && plan.connections != plan.concurrency {
        return Err(PlanError::Http1Connections {
            connections: plan.connections,
            concurrency: plan.concurrency,
            protocol: p,
        });
    }
    if plan.threads > plan.connections {
        return Err(PlanError::MoreThreadsThanConnections {
            threads: plan.threads,
            connections: plan.connections,
        });
    }
    if let Some(rate) = plan.rate
        && !(rate.is_finite() && rate > 0.0)
    {
        return Err(PlanError::OutOfRange {
            flag: "--rate",
            rule: "a positive number",
            value: rate.to_string(),
        });
    }
    if let Some(rate) = plan.rate
        && !(MIN_RATE..=MAX_RATE).contains(&rate)
    {
        return Err(PlanError::OutOfRange {
            flag: "--rate",
            rule: "between 0.001 and 10000000 calls/s",
            value: rate.to_string(),
        });
    }
    Ok(())
}

/// Durations and the stop rule.
fn validate_times(plan: &LoadPlan) -> Result<(), PlanError> {
    if let Some(d) = plan.duration_ns {
        at_most_max_duration("--duration", d)?;
    }
    at_most_max_duration("--warmup", plan.warmup_ns)?;
    at_most_max_duration("--timeout", plan.timeout_ns)?;
    at_most_max_duration("--connect-timeout", plan.connect_timeout_ns)?;
    if plan.duration_ns.is_some() && plan.requests.is_some() {
        return Err(PlanError::Conflict("--duration", "--requests"));
    }
    if plan.duration_ns == Some(0) {
        return Err(PlanError::OutOfRange {
            flag: "--duration",
            rule: "positive",
            value: "0s".into(),
        });
    }
    if plan.requests == Some(0) {
        return Err(PlanError::OutOfRange {
            flag: "--requests",
            rule: "at least 1",
            value: "0".into(),
        });
    }
    if plan.timeout_ns == 0 {
        return Err(PlanError::OutOfRange {
            flag: "--timeout",
            rule: "positive",
            value: "0s".into(),
        });
    }
    if plan.connect_timeout_ns == 0 {
        return Err(PlanError::OutOfRange {
            flag: "--connect-timeout",
            rule: "positive",
            value: "0s".into(),
        });
    }
    Ok(())
}

/// TLS options that exclude or need each other.
fn validate_tls(plan: &LoadPlan) -> Result<(), PlanError> {
    if let Some(tls) = &plan.tls {
        if tls.insecure && tls.cacert.is_some() {
            return Err(PlanError::Conflict("--insecure", "--cacert"));
        }
        match (&tls.client_cert, &tls.client_key) {
            (Some(_), None) => return Err(PlanError::Requires("--cert", "--key")),
            (None, Some(_)) => return Err(PlanError::Requires("--key", "--cert")),
            _ => {}
        }
    }
    Ok(())
}

/// Headers, method and target as HTTP allows them, for every protocol: the
/// HTTP/1.1 driver writes them to the wire as they are.
fn validate_http(plan: &LoadPlan) -> Result<(), PlanError> {
    if plan.target.chars().any(char::is_control) {
        return Err(PlanError::NotHttp {
            flag: "--target",
            value: plan.target.clone(),
            why: "contains a control character",
        });
    }
    let Some(c) = &plan.custom else { return Ok(()) };
    for h in &c.headers {
        if http::HeaderName::from_bytes(h.name.as_bytes()).is_err() {
            return Err(PlanError::NotHttp {
                flag: "-H",
                value: h.name.clone(),
                why: "not a valid header name",
            });
        }
        if http::HeaderValue::from_bytes(h.value.as_bytes()).is_err() {
            return Err(PlanError::NotHttp {
                flag: "-H",
                value: h.name.clone(),
                why: "the value contains CR, LF or another control character",
            });
        }
    }
    if let Some(a) = &c.soap_action
        && http::HeaderValue::from_bytes(a.as_bytes()).is_err()
    {
        return Err(PlanError::NotHttp {
            flag: "--soap-action",
            value: a.clone(),
            why: "contains CR, LF or another control character",
        });
    }
    if let Some(m) = &c.method
        && http::Method::from_bytes(m.as_bytes()).is_err()
    {
        return Err(PlanError::NotHttp {
            flag: "--method",
            value: m.clone(),
            why: "not a valid HTTP method",
        });
    }
    Ok(())
}

fn only_headers(c: &CustomCall) -> bool {
    CustomCall {
        headers: Vec::new(),
        ..c.clone()
    } == CustomCall::default()
}

fn validate_custom(protocol: Protocol, c: &CustomCall) -> Result<(), PlanError> {
    let not_for = |flag, applies| PlanError::NotForProtocol {
        flag,
        applies,
        protocol,
    };
    if protocol == Protocol::Grpc {
        if c.method.is_some() {
            return Err(not_for("--method", "rest, rest-h2 or soap"));
        }
        if c.body_file.is_some() {
            return Err(not_for("--data-file", "rest, rest-h2 or soap"));
        }
        if c.soap_action.is_some() {
            return Err(not_for("--soap-action", "soap"));
        }
        if !c.proto_files.is_empty() && c.protoset.is_some() {
            return Err(PlanError::Conflict("--proto", "--protoset"));
        }
        if c.protoset.is_some() && !c.import_paths.is_empty() {
            return Err(PlanError::Conflict("--protoset", "--import-path"));
        }
        // Without --proto or --protoset the server's reflection describes the method.
        if c.call.is_none() {
            let given = if c.protoset.is_some() {
                "--protoset"
            } else if !c.proto_files.is_empty() {
                "--proto"
            } else {
                "a custom gRPC call"
            };
            return Err(PlanError::Requires(given, "--call"));
        }
        return Ok(());
    }
    if !c.proto_files.is_empty() {
        return Err(not_for("--proto", "grpc"));
    }
    if c.protoset.is_some() {
        return Err(not_for("--protoset", "grpc"));
    }
    if c.call.is_some() {
        return Err(not_for("--call", "grpc"));
    }
    // rest/soap: `data` is the body inline (`-d`), `body_file` from a file (`-D`).
    if c.data.is_some() && c.body_file.is_some() {
        return Err(PlanError::Conflict("--data", "--data-file"));
    }
    if !c.import_paths.is_empty() {
        return Err(not_for("--import-path", "grpc"));
    }
    if c.soap_action.is_some() && protocol != Protocol::Soap {
        return Err(not_for("--soap-action", "soap"));
    }
    if protocol == Protocol::Soap && c.body_file.is_none() && c.data.is_none() {
        return Err(PlanError::Requires(
            "--protocol soap with a custom call",
            "--data or --data-file",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan_defaults;
    use protobench_model::load::{Header, TlsPlan};

    fn plan() -> LoadPlan {
        let mut p = plan_defaults(Protocol::Rest, "127.0.0.1:1");
        p.workload = Some("tasks.int".into());
        p
    }

    #[test]
    fn validation_names_both_conflicting_flags() {
        type Change = Box<dyn Fn(&mut LoadPlan)>;
        let cases: Vec<(Change, &str)> = vec![
            (
                Box::new(|p| {
                    p.concurrency = 10;
                    p.connections = 2;
                }),
                "--connections (2) must equal --concurrency (10) for --protocol rest: HTTP/1.1 carries one call at a time per connection",
            ),
            (
                Box::new(|p| {
                    p.protocol = Protocol::Grpc;
                    p.concurrency = 2;
                    p.connections = 4;
                }),
                "--connections (4) cannot be greater than --concurrency (2)",
            ),
            (
                Box::new(|p| {
                    p.protocol = Protocol::Grpc;
                    p.concurrency = 8;
                    p.connections = 2;
                    p.per_call = true;
                }),
                "--connections must be equal to --concurrency with per-call (the most connections open at once), got 2",
            ),
            (
                Box::new(|p| p.requests = Some(5)),
                "--duration and --requests cannot be used together",
            ),
            (
                Box::new(|p| {
                    p.tls = Some(TlsPlan {
                        insecure: true,
                        cacert: Some("a.pem".into()),
                        ..TlsPlan::default()
                    })
                }),
                "--insecure and --cacert cannot be used together",
            ),
            (
                Box::new(|p| p.workload = Some("nope".into())),
                "unknown workload \"nope\"; valid workloads: ",
            ),
            (
                Box::new(|p| p.rate = Some(0.0)),
                "--rate must be a positive number, got 0",
            ),
            (
                Box::new(|p| {
                    p.concurrency = 4_000_000_000;
                    p.connections = 4_000_000_000;
                }),
                "--concurrency must be at most 100,000 (calls in flight in one engine run), got 4000000000",
            ),
            (
                Box::new(|p| {
                    p.protocol = Protocol::Grpc;
                    p.concurrency = 5000;
                    p.connections = 5000;
                    p.threads = 2000;
                }),
                "--threads must be at most 1024, got 2000",
            ),
            (
                Box::new(|p| {
                    p.custom = Some(CustomCall {
                        headers: vec![Header {
                            name: "X-A".into(),
                            value: "1\r\nX-Injected: 2".into(),
                        }],
                        ..CustomCall::default()
                    })
                }),
                "-H \"X-A\": the value contains CR, LF or another control character",
            ),
            (
                Box::new(|p| {
                    p.custom = Some(CustomCall {
                        headers: vec![Header {
                            name: "X A".into(),
                            value: "1".into(),
                        }],
                        ..CustomCall::default()
                    })
                }),
                "-H \"X A\": not a valid header name",
            ),
            (
                Box::new(|p| {
                    p.protocol = Protocol::Grpc;
                    p.workload = None;
                    p.custom = Some(CustomCall {
                        proto_files: vec!["a.proto".into()],
                        protoset: Some("a.protoset".into()),
                        call: Some("a.B/C".into()),
                        ..CustomCall::default()
                    })
                }),
                "--proto and --protoset cannot be used together",
            ),
            (
                Box::new(|p| {
                    p.protocol = Protocol::Grpc;
                    p.workload = None;
                    p.custom = Some(CustomCall {
                        protoset: Some("a.protoset".into()),
                        ..CustomCall::default()
                    })
                }),
                "--protoset requires --call",
            ),
            (
                Box::new(|p| {
                    p.workload = None;
                    p.custom = Some(CustomCall {
                        protoset: Some("a.protoset".into()),
                        ..CustomCall::default()
                    })
                }),
                "--protoset applies only to --protocol grpc, not rest",
            ),
            (
                Box::new(|p| {
                    p.workload = None;
                    p.custom = Some(CustomCall {
                        method: Some("GET / HTTP/1.1\r\nX: y".into()),
                        ..CustomCall::default()
                    })
                }),
                "--method \"GET / HTTP/1.1\\r\\nX: y\": not a valid HTTP method",
            ),
            (
                Box::new(|p| p.target = "http://127.0.0.1:1/a\r\nX: y".into()),
                "--target \"http://127.0.0.1:1/a\\r\\nX: y\": contains a control character",
            ),
            (
                Box::new(|p| p.rate = Some(1e30)),
                "--rate must be between 0.001 and 10000000 calls/s, got 1000000000000000000000000000000",
            ),
            (
                Box::new(|p| p.rate = Some(1e-9)),
                "--rate must be between 0.001 and 10000000 calls/s, got 0.000000001",
            ),
            (
                Box::new(|p| p.duration_ns = Some(u64::MAX)),
                "--duration must be at most 1000000s (11.6 days), got 18446744073.709553s",
            ),
            (
                Box::new(|p| p.warmup_ns = MAX_DURATION_NS + 1),
                "--warmup must be at most 1000000s (11.6 days), got 1000000.000000001s",
            ),
            (
                Box::new(|p| p.timeout_ns = 2 * MAX_DURATION_NS),
                "--timeout must be at most 1000000s (11.6 days), got 2000000s",
            ),
            (
                Box::new(|p| p.connect_timeout_ns = 2 * MAX_DURATION_NS),
                "--connect-timeout must be at most 1000000s (11.6 days), got 2000000s",
            ),
        ];
        for (change, want) in cases {
            let mut p = plan();
            change(&mut p);
            let msg = validate(&p).unwrap_err().to_string();
            assert!(msg.starts_with(want), "{msg}");
        }
        validate(&plan()).unwrap();
        let mut edge = plan();
        edge.duration_ns = Some(MAX_DURATION_NS);
        edge.warmup_ns = MAX_DURATION_NS;
        edge.rate = Some(MAX_RATE);
        validate(&edge).unwrap();
        edge.rate = Some(MIN_RATE);
        validate(&edge).unwrap();
    }

    /// A ramp plan: 1 user, then 10 s to 20 users (HTTP/1.1: one connection each).
    fn ramp() -> LoadPlan {
        let mut p = plan();
        p.duration_ns = None;
        p.start_users = 1;
        p.stages = vec![
            protobench_model::load::Stage {
                duration_ns: 10_000_000_000,
                target: 20,
            },
            protobench_model::load::Stage {
                duration_ns: 5_000_000_000,
                target: 20,
            },
        ];
        p.concurrency = 20;
        p.connections = 20;
        p
    }

    #[test]
    fn schedule_validation_names_the_flag_and_what_was_expected() {
        type Change = Box<dyn Fn(&mut LoadPlan)>;
        let cases: Vec<(Change, &str)> = vec![
            (
                Box::new(|p| p.rate = Some(100.0)),
                "--stage and --rate cannot be used together: a concurrency schedule is closed loop only",
            ),
            (
                Box::new(|p| p.requests = Some(100)),
                "--stage and --requests cannot be used together",
            ),
            (
                Box::new(|p| p.duration_ns = Some(3_000_000_000)),
                "--duration (3s) must be left out with --stage, or equal the stages' total (15s)",
            ),
            (
                Box::new(|p| p.stages[1].target = 5),
                "--stage 2 (5s:5) lowers the target from 20 to 5: ramp-down is not supported",
            ),
            (
                Box::new(|p| p.start_users = 30),
                "--stage 1 (10s:20) lowers the target from 30 to 20: ramp-down is not supported",
            ),
            (
                Box::new(|p| {
                    p.stages[1].target = 40;
                }),
                "--concurrency (20) must equal the schedule's peak (40 users, the highest --stage target)",
            ),
            (
                Box::new(|p| {
                    for s in &mut p.stages {
                        s.duration_ns = 0;
                    }
                }),
                "--stage: the stages must last longer than 0s in total",
            ),
            (
                Box::new(|p| {
                    p.start_users = 0;
                    for s in &mut p.stages {
                        s.target = 0;
                    }
                }),
                "--stage: every target is 0",
            ),
            (Box::new(|p| p.stages.clear()), "--start-users (1) requires --stage"),
        ];
        for (change, want) in cases {
            let mut p = ramp();
            change(&mut p);
            let msg = validate(&p).unwrap_err().to_string();
            assert!(msg.starts_with(want), "want {want:?}, got {msg:?}");
        }
        validate(&ramp()).unwrap();
        let mut same = ramp();
        same.duration_ns = Some(15_000_000_000);
        validate(&same).unwrap();
    }
}
