//! The coordinator: runs one plan on many agents and merges their results.
//!
//! In order: connect to every agent (HTTP/2), read each one's clock
//! [`CLOCK_SAMPLES`] times and keep the sample with the shortest round trip,
//! refuse when an offset is less certain than the bound, split the plan
//! ([`protobench_load::split`]), send each agent its share with an absolute
//! start ([`Coordinator::start_ahead`] from now, on that agent's clock), read
//! the seconds they stream, and add them ([`merge_lanes`]). An agent that
//! fails, stops answering or misses the start is named in its lane and the
//! result is marked incomplete; the others' data is kept. Cancelling drops
//! every agent's stream, which stops their runs.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use protobench_load::Event;
use protobench_model::format::error_chain;
use protobench_model::hdr::latency_histogram;
use protobench_model::load::{AgentFailure, AgentLane, Environment, Generator, LatencySummary, LoadPlan, LoadResult};
use protobench_model::merge::{Lane, add_encoded, merge_lanes};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{
    ClockOffset, ClockReading, ClockSample, Frame, MAX_FRAME_BYTES, Order, VERSION, VERSION_HEADER, best_offset,
};

/// Clock exchanges per agent before a run.
pub const CLOCK_SAMPLES: usize = 8;
/// How long an agent may take to accept a connection or answer a request.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);
/// Slack past a second's end (and the plan's call timeout) before an agent
/// that sent nothing counts as gone.
const STALL_SLACK: Duration = Duration::from_secs(5);

/// Where the agents are and how to drive them.
#[derive(Debug, Clone)]
pub struct Coordinator {
    /// The agents' `host:port`, in agent order.
    pub agents: Vec<String>,
    /// The shared token.
    pub token: String,
    /// The largest clock uncertainty (half the best round trip) accepted.
    pub max_clock_uncertainty: Duration,
    /// How far ahead of the orders the common start is set.
    pub start_ahead: Duration,
    /// How long to keep trying to reach an agent that refuses connections
    /// (or whose name does not resolve yet: pods still starting); zero =
    /// one attempt.
    pub agent_wait: Duration,
    /// Mutual TLS to the agents ([`super::tls::client_config`]); `None`:
    /// clear-text HTTP/2.
    pub tls: Option<super::tls::ClientTls>,
}

/// Why a distributed run could not start.
#[derive(Debug, thiserror::Error)]
pub enum CoordinatorError {
    /// The plan cannot be split.
    #[error("cannot split the plan over {agents} agents")]
    Split {
        /// Agents.
        agents: usize,
        /// Why.
        #[source]
        source: protobench_load::SplitError,
    },
    /// An agent could not be reached, refused, or answered wrongly.
    #[error("agent {agent}: {message}")]
    Agent {
        /// Its address.
        agent: String,
        /// What went wrong.
        message: String,
    },
    /// An agent's clock is not known well enough.
    #[error(
        "agent {agent}: clock offset known only to +-{} us (round trip {} us): over the bound of {} us \
         (--max-clock-uncertainty)",
        uncertainty_ns / 1000, round_trip_ns / 1000, bound_ns / 1000
    )]
    Clock {
        /// Its address.
        agent: String,
        /// Half its best round trip.
        uncertainty_ns: u64,
        /// Its best round trip.
        round_trip_ns: u64,
        /// The bound.
        bound_ns: u64,
    },
    /// The histograms could not be merged.
    #[error("cannot merge the agents' histograms")]
    Merge(#[from] protobench_model::merge::MergeError),
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Opens HTTP/2 over a connected stream; the connection runs on its own task.
async fn handshake<S>(stream: S) -> Result<SendRequest<Full<Bytes>>, String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP/2 handshake: {}", error_chain(&e)))?;
    tokio::spawn(conn);
    Ok(sender)
}

/// One agent, connected.
struct Link {
    addr: String,
    sender: SendRequest<Full<Bytes>>,
}

impl Coordinator {
    fn request(&self, method: Method, path: &str, body: Bytes) -> Request<Full<Bytes>> {
        Request::builder()
            .method(method)
            .uri(format!(
                "{}://agent{path}",
                if self.tls.is_some() { "https" } else { "http" }
            ))
            .header(hyper::header::AUTHORIZATION, format!("Bearer {}", self.token))
            .header(VERSION_HEADER, VERSION)
            .body(Full::new(body))
            .expect("valid request")
    }

    async fn connect(&self, addr: &str) -> Result<Link, CoordinatorError> {
        let fail = |message: String| CoordinatorError::Agent {
            agent: addr.to_owned(),
            message,
        };
        let give_up = Instant::now() + self.agent_wait;
        let stream = loop {
            let attempt = tokio::time::timeout(ANSWER_TIMEOUT, tokio::net::TcpStream::connect(addr))
                .await
                .map_err(|_| fail(format!("no connection within {} s", ANSWER_TIMEOUT.as_secs())))
                .and_then(|r| r.map_err(|e| fail(format!("cannot connect: {e}"))));
            match attempt {
                Ok(s) => break s,
                Err(e) if Instant::now() >= give_up => return Err(e),
                Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
            }
        };
        let _ = stream.set_nodelay(true);
        let sender = match &self.tls {
            None => handshake(stream).await.map_err(fail)?,
            Some(tls) => {
                let name = super::tls::server_name(addr).map_err(|e| fail(format!("TLS server name: {e}")))?;
                let connect = tokio_rustls::TlsConnector::from(tls.clone()).connect(name, stream);
                let stream = tokio::time::timeout(ANSWER_TIMEOUT, connect)
                    .await
                    .map_err(|_| fail(format!("no TLS handshake within {} s", ANSWER_TIMEOUT.as_secs())))?
                    .map_err(|e| fail(format!("TLS handshake: {}", error_chain(&e))))?;
                handshake(stream).await.map_err(fail)?
            }
        };
        Ok(Link {
            addr: addr.to_owned(),
            sender,
        })
    }

    /// Reads an agent's clock [`CLOCK_SAMPLES`] times; the best sample wins.
    async fn clock(&self, link: &mut Link) -> Result<ClockOffset, CoordinatorError> {
        let mut samples = Vec::with_capacity(CLOCK_SAMPLES);
        for _ in 0..CLOCK_SAMPLES {
            let sent_ns = now_ns();
            let body = self.call(link, Method::GET, "/v1/clock", Bytes::new()).await?;
            let received_ns = now_ns();
            let reading: ClockReading = serde_json::from_slice(&body).map_err(|e| CoordinatorError::Agent {
                agent: link.addr.clone(),
                message: format!("clock reading is not valid JSON: {e}"),
            })?;
            samples.push(ClockSample {
                sent_ns,
                agent_ns: reading.agent_ns,
                received_ns,
            });
        }
        Ok(best_offset(&samples).expect("samples taken"))
    }

    /// One request answered whole; a status other than 200 is an error with the agent's text.
    async fn call(&self, link: &mut Link, method: Method, path: &str, body: Bytes) -> Result<Bytes, CoordinatorError> {
        let fail = |message: String| CoordinatorError::Agent {
            agent: link.addr.clone(),
            message,
        };
        let req = self.request(method, path, body);
        let answer = async {
            let resp = link.sender.send_request(req).await.map_err(|e| error_chain(&e))?;
            let status = resp.status();
            let body = http_body_util::Limited::new(resp.into_body(), 1 << 20)
                .collect()
                .await
                .map_err(|e| error_chain(&*e))?
                .to_bytes();
            Ok::<_, String>((status, body))
        };
        let (status, body) = tokio::time::timeout(ANSWER_TIMEOUT, answer)
            .await
            .map_err(|_| fail(format!("no answer within {} s", ANSWER_TIMEOUT.as_secs())))?
            .map_err(|e| {
                // An agent that refuses ends the connection, with an alert
                // that may or may not arrive first: say what would fix it.
                fail(match self.tls {
                    None => format!("{e} (if the agent serves TLS, give --agent-ca)"),
                    Some(_) => format!(
                        "{e} (an agent started with --client-ca accepts only a coordinator whose --agent-cert \
                         that CA signed)"
                    ),
                })
            })?;
        if status != StatusCode::OK {
            return Err(fail(refusal(status, &body)));
        }
        Ok(body)
    }

    // Longer than the ~120-line guide: one sequence (connect, clock,
    // orders, the frames of every agent until each is done or lost) whose
    // lanes and channels live across its awaits; its parts (connect,
    // clock, drive, Progress) are functions already.
    /// Runs `plan` over the agents; see the module's documentation.
    pub async fn run(
        &self,
        plan: LoadPlan,
        events: Option<mpsc::UnboundedSender<Event>>,
        cancel: CancellationToken,
    ) -> Result<LoadResult, CoordinatorError> {
        let shares =
            protobench_load::split(&plan, self.agents.len() as u32).map_err(|source| CoordinatorError::Split {
                agents: self.agents.len(),
                source,
            })?;
        let mut links = Vec::with_capacity(self.agents.len());
        for a in &self.agents {
            links.push(self.connect(a).await?);
        }
        let mut clocks = Vec::with_capacity(links.len());
        for link in &mut links {
            let c = self.clock(link).await?;
            if c.uncertainty_ns > self.max_clock_uncertainty.as_nanos() as u64 {
                return Err(CoordinatorError::Clock {
                    agent: link.addr.clone(),
                    uncertainty_ns: c.uncertainty_ns,
                    round_trip_ns: c.round_trip_ns,
                    bound_ns: self.max_clock_uncertainty.as_nanos() as u64,
                });
            }
            clocks.push(c);
        }
        let start_ns = now_ns() + self.start_ahead.as_nanos() as u64;
        let start_instant = Instant::now() + self.start_ahead;
        let measure_start = start_instant + Duration::from_nanos(plan.warmup_ns);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut tasks = Vec::with_capacity(links.len());
        let mut lanes = Vec::with_capacity(links.len());
        for ((link, clock), share) in links.into_iter().zip(&clocks).zip(&shares) {
            let agent_start =
                (start_ns as i128 + i128::from(clock.offset_ns) + i128::from(share.start_offset_ns)) as u64;
            let order = Order {
                index: share.index,
                plan: share.plan.clone(),
                start_unix_ns: agent_start,
            };
            lanes.push(Lane {
                meta: lane_meta(&link.addr, share, clock),
                seconds: Vec::new(),
                done: None,
            });
            let req = self.request(
                Method::POST,
                "/v1/run",
                Bytes::from(serde_json::to_vec(&order).expect("serializable")),
            );
            let (tx, timeout) = (tx.clone(), Duration::from_nanos(plan.timeout_ns));
            tasks.push(tokio::spawn(drive(
                share.index as usize,
                link,
                req,
                measure_start,
                timeout,
                tx,
            )));
        }
        drop(tx);
        let mut progress = Progress::new(lanes.len(), events);
        progress.started(start_instant);
        let mut live = lanes.len();
        while live > 0 {
            let got = tokio::select! {
                () = cancel.cancelled() => break,
                g = rx.recv() => g,
            };
            let Some((i, got)) = got else { break };
            let lane = &mut lanes[i];
            match got {
                Got::Frame(Frame::Ready) => {}
                Got::Frame(Frame::Second { point, histogram, .. }) => {
                    progress.second(&point, &histogram, &lane.meta.agent);
                    lane.seconds.push((point, histogram));
                }
                Got::Frame(Frame::Done { result, histograms }) => {
                    lane.done = Some((*result, histograms));
                    live -= 1;
                    progress.lane_gone();
                }
                Got::Frame(Frame::Failed { message, late }) => {
                    let message = if late {
                        format!("refused for this point: {message}")
                    } else {
                        message
                    };
                    lane.meta.failure = Some(failure(start_instant, message));
                    live -= 1;
                    progress.lane_gone();
                }
                Got::Lost(message) => {
                    lane.meta.failure = Some(failure(start_instant, message));
                    live -= 1;
                    progress.lane_gone();
                }
            }
        }
        // Cancelled (or every lane answered): dropping the streams stops any
        // agent still running.
        for t in &tasks {
            t.abort();
        }
        if cancel.is_cancelled() {
            for lane in lanes
                .iter_mut()
                .filter(|l| l.done.is_none() && l.meta.failure.is_none())
            {
                lane.meta.failure = Some(failure(
                    start_instant,
                    "stopped: the coordinator was interrupted".into(),
                ));
            }
        }
        let started_at =
            protobench_model::time::rfc3339_millis(UNIX_EPOCH + Duration::from_nanos(start_ns + plan.warmup_ns));
        let environment = Environment::detect(VERSION, None);
        let mut merged = merge_lanes(&plan, lanes, started_at, environment)?;
        if cancel.is_cancelled() {
            merged.end_reason = protobench_model::load::EndReason::Interrupted;
        }
        Ok(merged)
    }
}

fn failure(start: Instant, message: String) -> AgentFailure {
    let now = Instant::now();
    let after_ns = if now >= start {
        (now - start).as_nanos() as i64
    } else {
        -((start - now).as_nanos() as i64)
    };
    AgentFailure { after_ns, message }
}

fn refusal(status: StatusCode, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(500)]).trim().to_owned();
    match status {
        StatusCode::UNAUTHORIZED => format!("refused the coordinator (401): {text}; check the agent token"),
        _ => format!("answered {status}: {text}"),
    }
}

fn lane_meta(addr: &str, share: &protobench_load::Share, clock: &ClockOffset) -> AgentLane {
    AgentLane {
        index: share.index,
        agent: addr.to_owned(),
        clock_offset_ns: clock.offset_ns,
        clock_uncertainty_ns: clock.uncertainty_ns,
        round_trip_ns: clock.round_trip_ns,
        concurrency: share.plan.concurrency,
        rate_share: share.plan.rate,
        start_offset_ns: share.start_offset_ns,
        calls: 0,
        successes: 0,
        rate: 0.0,
        latency: LatencySummary::default(),
        generator: Generator::default(),
        failure: None,
    }
}

/// What an agent's task reports.
enum Got {
    Frame(Frame),
    /// The agent stopped answering or its stream broke.
    Lost(String),
}

/// Sends one agent its order and forwards its frames until `Done`/`Failed`
/// or until it is lost (stream broken, or silent past the stall limit).
async fn drive(
    i: usize,
    mut link: Link,
    req: Request<Full<Bytes>>,
    measure_start: Instant,
    call_timeout: Duration,
    tx: mpsc::UnboundedSender<(usize, Got)>,
) {
    let lost = |m: String| (i, Got::Lost(m));
    let resp = match tokio::time::timeout(ANSWER_TIMEOUT, link.sender.send_request(req)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return drop(tx.send(lost(format!("order not delivered: {e}")))),
        Err(_) => return drop(tx.send(lost("order not answered within 5 s".into()))),
    };
    if resp.status() != StatusCode::OK {
        let status = resp.status();
        let body = http_body_util::Limited::new(resp.into_body(), 1 << 16)
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        return drop(tx.send(lost(refusal(status, &body))));
    }
    let mut body = resp.into_body();
    let mut buf: Vec<u8> = Vec::new();
    // Before the first second: until it should have closed; then one
    // second (plus a call's time limit and slack) after each frame.
    let mut deadline = measure_start.max(Instant::now()) + Duration::from_secs(1) + call_timeout + STALL_SLACK;
    loop {
        let frame = match tokio::time::timeout_at(deadline.into(), body.frame()).await {
            Err(_) => {
                let silent = Duration::from_secs(1) + call_timeout + STALL_SLACK;
                return drop(tx.send(lost(format!("stopped answering (nothing for {} s)", silent.as_secs()))));
            }
            Ok(None) => return drop(tx.send(lost("its stream ended before the result".into()))),
            Ok(Some(Err(e))) => return drop(tx.send(lost(format!("connection lost: {e}")))),
            Ok(Some(Ok(f))) => f,
        };
        let Ok(data) = frame.into_data() else { continue };
        buf.extend_from_slice(&data);
        if buf.len() > MAX_FRAME_BYTES {
            return drop(tx.send(lost(format!("a frame over {MAX_FRAME_BYTES} bytes"))));
        }
        while let Some(end) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=end).collect();
            let frame: Frame = match serde_json::from_slice(&line) {
                Ok(f) => f,
                Err(e) => return drop(tx.send(lost(format!("sent a frame that is not valid JSON: {e}")))),
            };
            let last = matches!(frame, Frame::Done { .. } | Frame::Failed { .. });
            if tx.send((i, Got::Frame(frame))).is_err() || last {
                return;
            }
            deadline = Instant::now().max(measure_start) + Duration::from_secs(1) + call_timeout + STALL_SLACK;
        }
    }
}

/// Merged progress for whoever renders it: a second is reported when
/// every agent still running has sent it.
struct Progress {
    events: Option<mpsc::UnboundedSender<Event>>,
    live: usize,
    seconds: std::collections::BTreeMap<
        u32,
        (
            usize,
            protobench_model::load::TimelinePoint,
            hdrhistogram::Histogram<u64>,
        ),
    >,
    calls: u64,
    errors: u64,
}

impl Progress {
    fn new(live: usize, events: Option<mpsc::UnboundedSender<Event>>) -> Progress {
        Progress {
            events,
            live,
            seconds: Default::default(),
            calls: 0,
            errors: 0,
        }
    }

    fn started(&self, at: Instant) {
        if let Some(ev) = &self.events {
            let _ = ev.send(Event::Started {
                at,
                connections: 0,
                threads: 0,
            });
        }
    }

    fn lane_gone(&mut self) {
        self.live = self.live.saturating_sub(1);
        self.flush();
    }

    fn second(
        &mut self,
        p: &protobench_model::load::TimelinePoint,
        h: &protobench_model::hdr::EncodedHistogram,
        agent: &str,
    ) {
        let e = self.seconds.entry(p.second).or_insert_with(|| {
            let mut z = *p;
            (z.successes, z.errors, z.users) = (0, 0, 0);
            (0, z, latency_histogram())
        });
        e.0 += 1;
        e.1.successes += p.successes;
        e.1.errors += p.errors;
        e.1.users += p.users;
        let _ = add_encoded(&mut e.2, h, agent);
        self.flush();
    }

    fn flush(&mut self) {
        while let Some(entry) = self.seconds.first_entry() {
            if entry.get().0 < self.live {
                return;
            }
            let (_, (_, mut p, h)) = entry.remove_entry();
            if !h.is_empty() {
                (p.p50_ns, p.p95_ns, p.p99_ns) = (
                    h.value_at_quantile(0.5),
                    h.value_at_quantile(0.95),
                    h.value_at_quantile(0.99),
                );
            }
            self.calls += p.successes + p.errors;
            self.errors += p.errors;
            if let Some(ev) = &self.events {
                let _ = ev.send(Event::Progress {
                    elapsed_ns: (u64::from(p.second) + 1) * 1_000_000_000,
                    calls: self.calls,
                    errors: self.errors,
                    rate: p.successes as f64,
                    p99_ns: p.p99_ns,
                    second: p,
                });
            }
        }
    }
}
