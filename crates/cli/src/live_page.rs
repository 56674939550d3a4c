//! `protobench run --web`: the live page of a running study (issue 33).
//!
//! [`Live`] keeps the state of the run as its events say it (the plan's
//! progress, the running point second by second, every finished
//! measurement, warnings, the decisions of `--until-decided`) and pushes
//! the whole state to every open page as a server-sent event after each
//! change. A page opened late, or reloaded, gets the state so far as its
//! first event. The run never waits for a page: each page has a bounded
//! queue, and a page that does not keep up loses intermediate states (the
//! next one it gets is complete anyway); a closed page is forgotten at the
//! next change.
//!
//! After the run the page links to the finished report, served at
//! `/report` by the same server until Ctrl-C.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde::Serialize;
use tokio::sync::mpsc;

use protobench_model::run::RunRecord;
use protobench_model::stats::Summary;
use protobench_runner::engine::Event;
use protobench_runner::orchestrate::RunEvent;

use anyhow::Context as _;
use tokio_util::sync::CancellationToken;

use crate::web::{Reply, Site};

/// How many seconds of the running point the state keeps.
const SECONDS_KEPT: usize = 120;
/// States queued for one page before it loses intermediate ones.
const PAGE_QUEUE: usize = 16;

/// The state of the run, as the page draws it.
#[derive(Debug, Default, Clone, Serialize)]
pub(crate) struct State {
    /// The preset's name.
    pub(crate) preset: String,
    /// The run's id.
    pub(crate) run: i64,
    /// Measurements taken (or failed) so far.
    pub(crate) done: u32,
    /// Measurements this invocation takes.
    pub(crate) todo: u32,
    /// The plan's rough estimate of the whole run, in seconds.
    pub(crate) estimate_s: f64,
    /// The measurement running now (after the end: the last one).
    pub(crate) current: Option<Current>,
    /// Every finished measurement, in the order taken.
    pub(crate) finished: Vec<Finished>,
    /// `--baseline`: the stored run compared with, e.g. `run 3 (quick)`.
    pub(crate) baseline: Option<String>,
    /// With a baseline: each point measured so far against the same point
    /// of the baseline, in the order first measured.
    pub(crate) versus: Vec<Versus>,
    /// Warnings and notes, in order.
    pub(crate) notes: Vec<String>,
    /// Set once the run has ended: its last line.
    pub(crate) ended: Option<String>,
    /// Whether `/report` serves the finished report.
    pub(crate) report: bool,
}

/// The running measurement.
#[derive(Debug, Default, Clone, Serialize)]
pub(crate) struct Current {
    /// `server protocol workload variant`.
    pub(crate) label: String,
    /// Repetition.
    pub(crate) repetition: u32,
    /// The baseline's median rate of the same point, drawn behind the curve.
    pub(crate) baseline_rate: Option<f64>,
    /// Its closed seconds so far (the last [`SECONDS_KEPT`]).
    pub(crate) seconds: Vec<Second>,
    /// A steady-state warm-up running (or done) before the measured window.
    pub(crate) warmup: Option<WarmingUp>,
}

/// The steady-state warm-up of the running measurement, as it goes.
#[derive(Debug, Default, Clone, Serialize)]
pub(crate) struct WarmingUp {
    /// Seconds warmed up so far.
    pub(crate) seconds: u32,
    /// Successful calls in the last of them.
    pub(crate) rate: f64,
    /// Whether the steady-state test has passed (the warm-up has ended).
    pub(crate) steady: bool,
}

/// CPU use over one second, in % of one CPU (100 = one CPU busy), from
/// `/proc`: the generator is this process, the server the sampled
/// process and its children. `None` when it could not be read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Cpu {
    pub(crate) generator: Option<f64>,
    pub(crate) server: Option<f64>,
}

/// One closed second of the running measurement, from the interval
/// histogram of that second (exact, not rounded).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Second {
    /// Seconds since the measured window (or the warm-up) started.
    pub(crate) t: f64,
    /// Successful calls in that second.
    pub(crate) rate: f64,
    /// Failed calls in that second.
    pub(crate) errors: u64,
    /// p50, p95 and p99 corrected latency of that second, ms.
    pub(crate) p50_ms: f64,
    pub(crate) p95_ms: f64,
    pub(crate) p99_ms: f64,
    /// Callers active at its end.
    pub(crate) users: u32,
    /// CPU use of the generator and the server in that second.
    pub(crate) cpu: Cpu,
}

/// A finished measurement.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Finished {
    /// `server protocol workload variant`.
    pub(crate) label: String,
    /// Repetition.
    pub(crate) repetition: u32,
    /// Its rate, when measured.
    pub(crate) rate: Option<f64>,
    /// Why it failed.
    pub(crate) failure: Option<String>,
    /// Its steady-state warm-up: `12 s, steady` or `30 s, not steady`.
    pub(crate) warmup: Option<String>,
    /// The drift flag of its window (`rate rose 35% within the window`).
    pub(crate) drift: Option<String>,
    /// Failed calls by kind, most first (`timeout 3, http_status 2`).
    pub(crate) errors: Option<String>,
    /// A ramp's knee (`knee at 48 users, 12,345/s`) or the concurrency a
    /// discovery chose.
    pub(crate) knee: Option<String>,
}

/// What the stored record of a measurement adds to its finished row (sent
/// just before its end).
#[derive(Debug, Default, Clone)]
struct Landed {
    warmup: Option<String>,
    drift: Option<String>,
    errors: Option<String>,
    knee: Option<String>,
}

impl Landed {
    /// What the stored record `m` adds to its finished row.
    fn of(m: &protobench_model::run::Measurement) -> Landed {
        let errors = m.result.as_ref().map(|r| {
            let mut kinds: Vec<_> = r.errors.iter().filter(|e| e.count > 0).collect();
            kinds.sort_by_key(|e| std::cmp::Reverse(e.count));
            kinds
                .iter()
                .map(|e| format!("{} {}", e.kind.name(), e.count))
                .collect::<Vec<_>>()
                .join(", ")
        });
        let knee = m.search.as_ref().map(|s| match s.knee_rate {
            Some(rate) => format!(
                "knee at {} users, {}/s",
                s.chosen_concurrency,
                protobench_model::format::fmt_rate(rate)
            ),
            None => format!("chose {} callers", s.chosen_concurrency),
        });
        Landed {
            warmup: m.warmup.as_ref().map(|w| {
                let s = w.duration_ns as f64 / 1e9;
                format!("{s:.0} s, {}", if w.steady { "steady" } else { "not steady" })
            }),
            drift: m.drift().map(|d| d.describe()),
            errors: errors.filter(|e| !e.is_empty()),
            knee,
        }
    }
}

/// The CPU counters at the previous second, to take differences from.
#[derive(Debug, Default)]
struct CpuProbe {
    server_pid: Option<u32>,
    last: Option<(std::time::Instant, Option<u64>, Option<u64>)>,
}

impl CpuProbe {
    /// Counters now: (generator, server) CPU time in ns.
    fn read(&self) -> (std::time::Instant, Option<u64>, Option<u64>) {
        let server = self.server_pid.map(|pid| protobench_runner::procfs::sample(pid).cpu_ns);
        (
            std::time::Instant::now(),
            protobench_runner::procfs::own_cpu_ns(),
            server,
        )
    }

    /// Starts over (a new measurement).
    fn reset(&mut self) {
        self.last = Some(self.read());
    }

    /// CPU use since the last call.
    fn second(&mut self) -> Cpu {
        let now = self.read();
        let Some(last) = self.last.replace(now) else {
            return Cpu::default();
        };
        let wall = now.0.duration_since(last.0).as_nanos() as f64;
        let pct = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) if wall > 0.0 && b >= a => Some(100.0 * (b - a) as f64 / wall),
            _ => None,
        };
        Cpu {
            generator: pct(last.1, now.1),
            server: pct(last.2, now.2),
        }
    }
}

/// One point of the run against the same point of the baseline.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Versus {
    /// `server protocol workload variant`.
    pub(crate) label: String,
    /// The rates measured so far, one per repetition.
    pub(crate) rates: Vec<f64>,
    /// The baseline's median rate.
    pub(crate) baseline_rate: f64,
    /// The verdict so far: `faster 1.12x [1.05, 1.20]`, `slower ...`,
    /// `within the noise 0.98x [0.90, 1.07]`, or the ratio alone while
    /// either side has one repetition.
    pub(crate) verdict: String,
}

/// A stored run to compare with: each point's rate summary by label.
pub(crate) struct Baseline {
    /// `run 3 (quick)`.
    pub(crate) name: String,
    /// Rate summaries by `PointConfig::label`.
    pub(crate) rates: std::collections::HashMap<String, Summary>,
}

impl Baseline {
    /// The points of `run` that have a rate.
    pub(crate) fn of(run: &RunRecord) -> Baseline {
        Baseline {
            name: format!("run {} ({})", run.id, run.preset),
            rates: run
                .aggregates()
                .into_iter()
                .filter_map(|a| Some((a.config.label(), a.rate?)))
                .collect(),
        }
    }
}

/// The running verdict of `rates` against `base` (two different runs: the
/// unpaired log-scale interval of `stats::ratio`).
fn verdict(base: &Summary, rates: &[f64]) -> String {
    let Some(now) = Summary::of(rates) else {
        return "-".into();
    };
    match protobench_model::stats::ratio(base, &now) {
        None => "-".into(),
        Some(r) => match r.interval() {
            None => format!("{:.2}x (one repetition: no verdict yet)", r.ratio),
            Some((lo, hi)) => {
                let word = if !r.significant {
                    "within the noise"
                } else if r.ratio > 1.0 {
                    "faster"
                } else {
                    "slower"
                };
                format!("{word} {:.2}x [{lo:.2}, {hi:.2}]", r.ratio)
            }
        },
    }
}

/// Renders the report of the measurements stored so far (`None` before
/// the first).
pub(crate) type SoFar = Box<dyn Fn() -> Option<String> + Send + Sync>;

/// The live state and the pages following it.
pub(crate) struct Live {
    baseline: Option<Baseline>,
    state: Mutex<State>,
    pages: Mutex<Vec<mpsc::Sender<Bytes>>>,
    report: Mutex<Option<String>>,
    so_far: Mutex<Option<SoFar>>,
    cpu: Mutex<CpuProbe>,
    landed: Mutex<Landed>,
}

impl Live {
    /// A run of `preset` with id `run` about to start, compared with
    /// `baseline` when given.
    pub(crate) fn new(preset: &str, run: i64, baseline: Option<Baseline>) -> Arc<Live> {
        Arc::new(Live {
            state: Mutex::new(State {
                preset: preset.to_string(),
                run,
                baseline: baseline.as_ref().map(|b| b.name.clone()),
                ..State::default()
            }),
            baseline,
            pages: Mutex::new(Vec::new()),
            report: Mutex::new(None),
            so_far: Mutex::new(None),
            cpu: Mutex::new(CpuProbe::default()),
            landed: Mutex::new(Landed::default()),
        })
    }

    /// While the run goes, `/report` is the report of what is stored so
    /// far, rendered by `render` when a page asks (never otherwise).
    pub(crate) fn report_so_far(&self, render: SoFar) {
        *self.so_far.lock().unwrap_or_else(|e| e.into_inner()) = Some(render);
    }

    /// The state now (a copy).
    pub(crate) fn state(&self) -> State {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Takes in one event of the run; pushes the new state when it changed.
    /// Samples the CPU counters at each closed second of a measurement.
    pub(crate) fn on(&self, e: &RunEvent) {
        let mut cpu = Cpu::default();
        {
            let mut probe = self.cpu.lock().unwrap_or_else(|e| e.into_inner());
            match e {
                RunEvent::ServerReady { pid, .. } => probe.server_pid = Some(*pid),
                RunEvent::PointStarted { .. } => probe.reset(),
                RunEvent::Engine(Event::Progress { .. }) => cpu = probe.second(),
                _ => {}
            }
        }
        if let RunEvent::Measured(m) = e {
            *self.landed.lock().unwrap_or_else(|e| e.into_inner()) = Landed::of(m);
            return;
        }
        let landed = match e {
            RunEvent::PointFinished { .. } => {
                std::mem::take(&mut *self.landed.lock().unwrap_or_else(|e| e.into_inner()))
            }
            _ => Landed::default(),
        };
        let changed = {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            apply(&mut s, e, self.baseline.as_ref(), cpu, landed)
        };
        if changed {
            self.push();
        }
    }

    /// The run ended with `line`; `report` is its HTML report.
    pub(crate) fn end(&self, line: &str, report: Option<String>) {
        {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            s.ended = Some(line.to_string());
            // `current` stays: the last point's seconds remain on the page.
            s.report = report.is_some();
        }
        *self.report.lock().unwrap_or_else(|e| e.into_inner()) = report;
        self.push();
    }

    /// Sends the state to every page that still listens; never waits.
    fn push(&self) {
        let frame = event_frame(&self.state());
        let mut pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        pages.retain(|p| match p.try_send(frame.clone()) {
            Ok(()) => true,
            // Behind: it skips this state and gets a later, complete one.
            Err(mpsc::error::TrySendError::Full(_)) => true,
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        });
    }

    /// How many pages follow the run now.
    #[cfg(test)]
    fn pages(&self) -> usize {
        self.pages.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// `data: {json}\n\n`: one server-sent event.
fn event_frame(s: &State) -> Bytes {
    let json = serde_json::to_string(s).expect("serializing plain data cannot fail");
    Bytes::from(format!("data: {json}\n\n"))
}

/// Applies `e` to `s` (with the baseline's figures when there is one);
/// whether the page would show something new.
///
/// `cpu` is the second's CPU use (for a closed second), `landed` what the
/// stored record adds to a finished measurement.
fn apply(s: &mut State, e: &RunEvent, baseline: Option<&Baseline>, cpu: Cpu, landed: Landed) -> bool {
    match e {
        RunEvent::Begin { todo, estimate_s, .. } => {
            s.todo = *todo;
            s.estimate_s = *estimate_s;
        }
        RunEvent::PointStarted {
            label,
            repetition,
            done,
            todo,
            ..
        } => {
            s.done = *done;
            s.todo = *todo;
            s.current = Some(Current {
                label: label.clone(),
                repetition: *repetition,
                baseline_rate: baseline.and_then(|b| b.rates.get(label)).map(|r| r.median),
                seconds: Vec::new(),
                warmup: None,
            });
        }
        RunEvent::WarmingUp { second, rate, steady } => {
            let Some(c) = s.current.as_mut() else { return false };
            c.warmup = Some(WarmingUp {
                seconds: *second,
                rate: *rate,
                steady: *steady,
            });
        }
        RunEvent::Engine(Event::Progress { elapsed_ns, second, .. }) => {
            let Some(c) = s.current.as_mut() else { return false };
            if c.seconds.len() == SECONDS_KEPT {
                c.seconds.remove(0);
            }
            c.seconds.push(Second {
                t: *elapsed_ns as f64 / 1e9,
                rate: second.successes as f64,
                errors: second.errors,
                p50_ms: second.p50_ns as f64 / 1e6,
                p95_ms: second.p95_ns as f64 / 1e6,
                p99_ms: second.p99_ns as f64 / 1e6,
                users: second.users,
                cpu,
            });
        }
        RunEvent::PointFinished {
            label,
            repetition,
            rate,
            failure,
            ..
        } => {
            s.done += 1;
            if let (Some(b), Some(rate)) = (baseline, rate)
                && let Some(base) = b.rates.get(label)
            {
                match s.versus.iter_mut().find(|v| &v.label == label) {
                    Some(v) => v.rates.push(*rate),
                    None => s.versus.push(Versus {
                        label: label.clone(),
                        rates: vec![*rate],
                        baseline_rate: base.median,
                        verdict: String::new(),
                    }),
                }
                if let Some(v) = s.versus.iter_mut().find(|v| &v.label == label) {
                    v.verdict = verdict(base, &v.rates);
                }
            }
            s.finished.push(Finished {
                label: label.clone(),
                repetition: *repetition,
                rate: *rate,
                failure: failure.clone(),
                warmup: landed.warmup,
                drift: landed.drift,
                errors: landed.errors,
                knee: landed.knee,
            });
        }
        RunEvent::ServerFailed { server, reason } => s.notes.push(format!("server {server} failed: {reason}")),
        RunEvent::Warning(w) | RunEvent::Notice(w) => s.notes.push(format!("warning: {w}")),
        RunEvent::Round(line) => s.notes.push(format!("note: {line}")),
        RunEvent::Link(link) => s.notes.push(format!("link {}", link.summary_line())),
        RunEvent::ServerStarting { .. }
        | RunEvent::ServerReady { .. }
        | RunEvent::Engine(Event::Started { .. } | Event::Interval { .. })
        | RunEvent::Measured(_) => {
            return false;
        }
    }
    true
}

impl Site for Live {
    fn get(&self, path: &str) -> Option<Reply> {
        match path {
            "/" | "/index.html" => {
                // The state so far goes into the page itself (a data block,
                // which no policy treats as a script), so the page is drawn
                // complete at load and the events only bring what follows.
                let json = serde_json::to_string(&self.state()).expect("serializing plain data cannot fail");
                Some(Reply::Body {
                    content_type: "text/html; charset=utf-8",
                    body: PAGE.replace("<!--STATE-->", &json.replace("</", "<\\/")),
                })
            }
            "/live.js" => Some(Reply::Body {
                content_type: "text/javascript; charset=utf-8",
                body: SCRIPT.to_string(),
            }),
            "/events" => {
                let (tx, rx) = mpsc::channel(PAGE_QUEUE);
                let first = String::from_utf8_lossy(&event_frame(&self.state())).into_owned();
                self.pages.lock().unwrap_or_else(|e| e.into_inner()).push(tx);
                Some(Reply::Events { first, rx })
            }
            // The finished report; while the run goes, the report of what
            // is stored so far (rendered now, for this page only).
            "/report" => {
                let finished = self.report.lock().unwrap_or_else(|e| e.into_inner()).clone();
                let body = finished.or_else(|| {
                    let so_far = self.so_far.lock().unwrap_or_else(|e| e.into_inner());
                    so_far.as_ref().and_then(|render| render())
                })?;
                Some(Reply::Body {
                    content_type: "text/html; charset=utf-8",
                    body,
                })
            }
            _ => None,
        }
    }
}

/// The page: no script of its own inline (the policy forbids it), styles
/// inline, everything else drawn by `live.js`.
const PAGE: &str = r##"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>protobench — live</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}h2{font-size:1.05em;margin-top:1.5em}
table{border-collapse:collapse}td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
#bar{width:30em;height:10px;background:#eee}#fill{height:10px;background:#3a6ea5;width:0}
.warn{color:#a33}svg{background:#fafafa;border:1px solid #ddd}iframe{border:1px solid #ddd}
</style></head><body>
<h1 id="title">protobench — connecting…</h1>
<p id="status"></p><div id="bar"><div id="fill"></div></div>
<h2>Running</h2><p id="current">—</p>
<svg id="chart" width="600" height="160" viewBox="0 0 600 160" role="img" aria-label="calls per second, last seconds"></svg>
<p id="warmup" hidden></p>
<table id="seconds"><thead><tr><th>s</th><th>calls/s</th><th>errors</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th><th>users</th><th>generator CPU %</th><th>server CPU %</th></tr></thead><tbody></tbody></table>
<h2 id="vs-title" hidden>Against the baseline</h2>
<table id="versus" hidden><thead><tr><th>point</th><th>repetitions</th><th>calls/s now</th><th>baseline</th><th>verdict (95%)</th></tr></thead><tbody></tbody></table>
<h2>Finished</h2>
<table id="finished"><thead><tr><th>point</th><th>repetition</th><th>calls/s</th><th>errors by kind</th><th>knee</th><th>warm-up</th><th>drift</th><th></th></tr></thead><tbody></tbody></table>
<h2 id="so-far-title" hidden>The report so far</h2>
<iframe id="so-far" title="the report of the measurements stored so far" hidden width="100%" height="900"></iframe>
<h2>Notes</h2><ul id="notes"></ul>
<script id="state" type="application/json"><!--STATE--></script>
<script src="live.js"></script>
</body></html>
"##;

/// The page's script: follows `/events` (with the page's own query, so a
/// token given in the address goes along) and redraws from each state.
const SCRIPT: &str = r##""use strict";
const $ = (id) => document.getElementById(id);
const fmt = (v) => v == null ? "-" : Math.round(v).toLocaleString("en");
const pct = (v) => v == null ? "-" : v.toFixed(0);
function row(cells, numeric) {
  const tr = document.createElement("tr");
  cells.forEach((c, i) => {
    const td = document.createElement("td");
    td.textContent = c;
    if (numeric[i]) td.className = "n";
    tr.appendChild(td);
  });
  return tr;
}
function chart(seconds, baseline) {
  const svg = $("chart");
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  if (seconds.length < 2) return;
  const max = Math.max(...seconds.map((s) => s.rate), baseline || 0) || 1;
  if (baseline) {
    const y = (150 - 140 * baseline / max).toFixed(1);
    const b = document.createElementNS("http://www.w3.org/2000/svg", "line");
    b.id = "baseline";
    [["x1", "10"], ["x2", "590"], ["y1", y], ["y2", y], ["stroke", "#999"], ["stroke-dasharray", "6 4"]]
      .forEach(([k, v]) => b.setAttribute(k, v));
    svg.appendChild(b);
  }
  const t0 = seconds[0].t, t1 = seconds[seconds.length - 1].t;
  const pts = seconds.map((s) =>
    (10 + 580 * (s.t - t0) / Math.max(t1 - t0, 1)).toFixed(1) + "," + (150 - 140 * s.rate / max).toFixed(1));
  const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
  line.setAttribute("points", pts.join(" "));
  line.setAttribute("fill", "none");
  line.setAttribute("stroke", "#3a6ea5");
  line.setAttribute("stroke-width", "2");
  line.id = "rate";
  svg.appendChild(line);
}
function draw(s) {
  $("title").textContent = "protobench run " + s.run + " — " + s.preset;
  $("status").textContent = s.ended ? s.ended : (s.done + " of " + s.todo + " measurements");
  $("fill").style.width = (s.todo ? 100 * s.done / s.todo : 0) + "%";
  const c = s.current;
  $("current").textContent = c
    ? (s.ended ? "the run has ended; the last: " : "") + c.label + " (repetition " + c.repetition + ")"
    : (s.ended ? "the run has ended" : "—");
  const body = $("seconds").tBodies[0];
  body.replaceChildren(...(c ? c.seconds.slice(-10).reverse() : []).map((x) =>
    row([x.t.toFixed(0), fmt(x.rate), x.errors, x.p50_ms.toFixed(2), x.p95_ms.toFixed(2), x.p99_ms.toFixed(2), x.users,
         pct(x.cpu.generator), pct(x.cpu.server)],
        [1, 1, 1, 1, 1, 1, 1, 1, 1])));
  const w = c && c.warmup;
  $("warmup").hidden = !w;
  if (w) $("warmup").textContent = "steady-state warm-up: " + w.seconds + " s, " + fmt(w.rate) + " calls/s in the last second, "
    + (w.steady ? "steady: measuring" : "still rising or not yet tested");
  chart(c ? c.seconds : [], c && c.baseline_rate);
  if (s.baseline) {
    $("vs-title").hidden = false;
    $("vs-title").textContent = "Against the baseline: " + s.baseline;
    $("versus").hidden = false;
    $("versus").tBodies[0].replaceChildren(...s.versus.map((v) =>
      row([v.label, v.rates.length, fmt(v.rates.reduce((a, b) => a + b, 0) / v.rates.length), fmt(v.baseline_rate), v.verdict],
          [0, 1, 1, 1, 0])));
  }
  $("finished").tBodies[0].replaceChildren(...s.finished.slice().reverse().map((f) =>
    row([f.label, f.repetition, fmt(f.rate), f.errors || "", f.knee || "", f.warmup || "", f.drift || "", f.failure || ""],
        [0, 1, 1, 0, 0, 0, 0, 0])));
  soFar(s);
  $("notes").replaceChildren(...s.notes.map((n) => {
    const li = document.createElement("li");
    li.textContent = n;
    if (n.startsWith("warning")) li.className = "warn";
    return li;
  }));
  if (s.report && !$("report")) {
    const a = document.createElement("a");
    a.id = "report";
    a.href = "report" + location.search;
    a.textContent = "the finished report";
    $("status").appendChild(document.createTextNode(" — "));
    $("status").appendChild(a);
  }
}
// The report of what is stored so far, reloaded when a measurement has
// landed (at most every 5 s), and the finished report at the end.
let shown = "", loaded = 0;
function soFar(s) {
  const n = s.finished.length, key = n + (s.ended ? " ended" : "");
  if (n === 0 || key === shown || (!s.ended && Date.now() - loaded < 5000)) return;
  shown = key;
  loaded = Date.now();
  $("so-far-title").hidden = false;
  $("so-far-title").textContent = s.ended ? "The report" : "The report so far (" + n + " measurements)";
  $("so-far").hidden = false;
  $("so-far").src = "report" + location.search + (location.search ? "&" : "?") + "n=" + n;
}
draw(JSON.parse($("state").textContent));
const events = new EventSource("events" + location.search);
events.onmessage = (m) => draw(JSON.parse(m.data));
"##;

/// `--web`: the live page's server, on a thread of its own so that the run
/// never waits for it.
pub(crate) struct WebView {
    /// The page's state, fed with the run's events.
    pub(crate) live: Arc<Live>,
    url: String,
    stop: CancellationToken,
    thread: std::thread::JoinHandle<()>,
}

impl WebView {
    /// Binds `addr` (refusing a non-loopback one without `public`) and
    /// starts serving the live page; prints its address.
    pub(crate) fn start(
        addr: std::net::SocketAddr,
        public: bool,
        title: &str,
        run: i64,
        baseline: Option<Baseline>,
    ) -> anyhow::Result<WebView> {
        let w = WebView::start_quiet(addr, public, title, run, baseline)?;
        println!("live view: {}", w.url);
        Ok(w)
    }

    /// [`WebView::start`] without printing the address ([`WebView::url`]).
    pub(crate) fn start_quiet(
        addr: std::net::SocketAddr,
        public: bool,
        title: &str,
        run: i64,
        baseline: Option<Baseline>,
    ) -> anyhow::Result<WebView> {
        let access = crate::web::Access::for_address(addr, public).map_err(anyhow::Error::msg)?;
        let listener = std::net::TcpListener::bind(addr).with_context(|| format!("--web {addr}: cannot listen"))?;
        listener.set_nonblocking(true).context("--web: a non-blocking socket")?;
        let url = crate::web::url(listener.local_addr().context("--web: the bound address")?, &access);
        let live = Live::new(title, run, baseline);
        let stop = CancellationToken::new();
        let site: std::sync::Arc<dyn crate::web::Site> = live.clone();
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("protobench-web".into())
                .spawn(move || {
                    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                        eprintln!("warning: the live page could not start its runtime");
                        return;
                    };
                    rt.block_on(async move {
                        match tokio::net::TcpListener::from_std(listener) {
                            Ok(l) => crate::web::serve(l, access, site, stop).await,
                            Err(e) => eprintln!("warning: the live page cannot serve: {e}"),
                        }
                    });
                })
                .context("starting the live page's thread")?
        };
        Ok(WebView {
            live,
            url,
            stop,
            thread,
        })
    }

    /// After the run: the page says how it ended (`line`) and links the
    /// finished report (`report`); served until Ctrl-C or SIGTERM.
    pub(crate) fn serve_report_until_stopped(self, line: &str, report: Option<String>) {
        let url = self.url.clone();
        self.serve_until_stopped(line, report, || {
            println!("live view: the run has ended; serving its report at {url} until Ctrl-C");
        });
    }

    /// The page's address (with its token when there is one).
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// [`WebView::serve_report_until_stopped`], saying so on stderr
    /// (`load`, whose stdout carries its result).
    pub(crate) fn serve_report_until_stopped_quiet(self, line: &str, report: Option<String>) {
        let url = self.url.clone();
        self.serve_until_stopped(line, report, || {
            eprintln!("live view: the run has ended; serving its result at {url} until Ctrl-C");
        });
    }

    /// Listens for Ctrl-C and SIGTERM **before** the page says the run has
    /// ended (`say`): a signal sent by whoever reads that (a person, a
    /// script, a test) is then never lost in between. Serves until one
    /// comes.
    fn serve_until_stopped(self, line: &str, report: Option<String>, say: impl FnOnce()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().ok();
        let signals = rt.as_ref().and_then(|rt| {
            let _entered = rt.enter();
            crate::cmd::common::ShutdownSignals::install().ok()
        });
        self.live.end(line, report);
        say();
        if let (Some(rt), Some(mut signals)) = (rt, signals) {
            rt.block_on(async {
                let _ = signals.recv().await;
            });
        }
        self.stop.cancel();
        let _ = self.thread.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protobench_model::load::TimelinePoint;

    fn progress(second: u32, successes: u64) -> RunEvent {
        RunEvent::Engine(Event::Progress {
            elapsed_ns: u64::from(second + 1) * 1_000_000_000,
            calls: 0,
            errors: 0,
            rate: successes as f64,
            p99_ns: 3_000_000,
            second: TimelinePoint {
                second,
                successes,
                errors: 0,
                p50_ns: 1_000_000,
                p95_ns: 2_000_000,
                p99_ns: 3_000_000,
                users: 4,
            },
        })
    }

    #[test]
    fn the_state_follows_the_run_and_every_page_gets_it() {
        let live = Live::new("quick", 7, None);
        let Some(Reply::Events { first, mut rx }) = live.get("/events") else {
            panic!("an event stream")
        };
        assert!(
            first.starts_with("data: {") && first.contains("\"preset\":\"quick\""),
            "{first}"
        );
        live.on(&RunEvent::Begin {
            todo: 2,
            total: 2,
            estimate_s: 5.0,
        });
        live.on(&RunEvent::PointStarted {
            point: 0,
            repetition: 1,
            label: "rust rest inventory.xs c=4".into(),
            done: 0,
            todo: 2,
        });
        live.on(&progress(0, 1000));
        live.on(&progress(1, 1100));
        live.on(&RunEvent::PointFinished {
            point: 0,
            label: "rust rest inventory.xs c=4".into(),
            repetition: 1,
            rate: Some(1050.0),
            failure: None,
        });
        let s = live.state();
        assert_eq!((s.done, s.todo, s.finished.len()), (1, 2, 1));
        let c = s.current.as_ref().unwrap();
        assert_eq!(c.seconds.iter().map(|x| x.rate).collect::<Vec<_>>(), [1000.0, 1100.0]);
        assert_eq!(c.seconds[1].p95_ms, 2.0);
        // the page got each state, the last complete
        let mut last = String::new();
        while let Ok(b) = rx.try_recv() {
            last = String::from_utf8_lossy(&b).into_owned();
        }
        assert!(last.contains("\"done\":1") && last.contains("1050"), "{last}");
        // a page opened late starts from the state so far
        let Some(Reply::Events { first, .. }) = live.get("/events") else {
            panic!()
        };
        assert!(
            first.contains("\"rate\":1100.0") && first.contains("\"done\":1"),
            "{first}"
        );
    }

    #[test]
    fn a_page_that_is_slow_or_gone_never_holds_the_run() {
        let live = Live::new("quick", 1, None);
        let Some(Reply::Events { rx: slow, .. }) = live.get("/events") else {
            panic!()
        };
        let Some(Reply::Events { rx: gone, .. }) = live.get("/events") else {
            panic!()
        };
        drop(gone);
        // far more states than a page queues: none of them waits
        for i in 0..(PAGE_QUEUE as u32 * 10) {
            live.on(&RunEvent::Warning(format!("w{i}")));
        }
        assert_eq!(live.pages(), 1, "the closed page is forgotten");
        assert_eq!(slow.len(), PAGE_QUEUE, "the slow page holds at most its queue");
        live.end("run 1 complete", Some("<html>report</html>".into()));
        let Some(Reply::Body { body, .. }) = live.get("/report") else {
            panic!("the report after the end")
        };
        assert_eq!(body, "<html>report</html>");
        assert!(live.state().report);
    }

    #[test]
    fn the_page_carries_the_state_so_far_and_no_markup_from_it() {
        let live = Live::new("quick", 1, None);
        live.on(&RunEvent::Warning("</script><script>alert(1)</script>".into()));
        let Some(Reply::Body { body, .. }) = live.get("/") else {
            panic!("the page")
        };
        let data = body
            .split("<script id=\"state\" type=\"application/json\">")
            .nth(1)
            .and_then(|b| b.split("</script>").next())
            .unwrap();
        let state: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(state["notes"][0], "warning: </script><script>alert(1)</script>");
        assert!(!data.contains("</"), "{data}");
    }

    #[test]
    fn the_warm_up_the_cpu_and_the_stored_record_reach_the_page() {
        let live = Live::new("quick", 7, None);
        // this test process stands in for the server: its CPU is sampled
        live.on(&RunEvent::ServerReady {
            server: "rust".into(),
            pid: std::process::id(),
        });
        live.on(&RunEvent::PointStarted {
            point: 0,
            repetition: 1,
            label: "rust rest inventory.xs c=4".into(),
            done: 0,
            todo: 1,
        });
        live.on(&RunEvent::WarmingUp {
            second: 3,
            rate: 900.0,
            steady: false,
        });
        let w = live.state().current.unwrap().warmup.unwrap();
        assert_eq!((w.seconds, w.rate, w.steady), (3, 900.0, false));
        // 50 ms of CPU (at most 10 s of a starved machine's wall time)
        // between two samples: both counters move
        let t0 = std::time::Instant::now();
        let cpu0 = protobench_runner::procfs::own_cpu_ns().unwrap();
        let mut x = 0u64;
        while protobench_runner::procfs::own_cpu_ns().unwrap() < cpu0 + 50_000_000
            && t0.elapsed() < std::time::Duration::from_secs(10)
        {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        }
        live.on(&progress(0, 1000));
        let cpu = live.state().current.unwrap().seconds[0].cpu;
        let (Some(g), Some(srv)) = (cpu.generator, cpu.server) else {
            panic!("both sampled: {cpu:?}")
        };
        assert!(g > 0.0 && g <= 100.0 * 64.0, "generator {g}%");
        assert!(srv >= g * 0.5, "the server tree holds this process too: {srv}% vs {g}%");
        // the stored record (warm-up, drift) lands on the finished row
        let point = protobench_model::testing::point(0, "rest", "inventory.xs");
        let mut m = protobench_model::testing::measurement(&point, 1, 1000.0);
        m.warmup = Some(protobench_model::run::Warmup {
            duration_ns: 12_400_000_000,
            steady: true,
        });
        let r = m.result.as_mut().unwrap();
        r.duration_ns = 10_000_000_000;
        r.timeline = (0..10)
            .map(|i| TimelinePoint {
                second: i,
                successes: 1000 + 100 * u64::from(i),
                errors: 0,
                p50_ns: 1,
                p95_ns: 1,
                p99_ns: 1,
                users: 4,
            })
            .collect();
        r.errors = vec![
            protobench_model::load::ErrorCount {
                kind: protobench_model::load::ErrorKind::Timeout,
                count: 2,
                sample: "t".into(),
            },
            protobench_model::load::ErrorCount {
                kind: protobench_model::load::ErrorKind::HttpStatus,
                count: 5,
                sample: "503".into(),
            },
        ];
        m.search = Some(protobench_model::run::Search {
            steps: Vec::new(),
            chosen_concurrency: 48,
            knee_rate: Some(12_345.0),
            stop_reason: "the rate stopped rising".into(),
            knee_second: Some(7),
            stopped_at_knee: false,
        });
        live.on(&RunEvent::Measured(Box::new(m)));
        live.on(&RunEvent::PointFinished {
            point: 0,
            label: "rust rest inventory.xs c=4".into(),
            repetition: 1,
            rate: Some(1450.0),
            failure: None,
        });
        let f = &live.state().finished[0];
        assert_eq!(f.warmup.as_deref(), Some("12 s, steady"));
        assert_eq!(f.errors.as_deref(), Some("http_status 5, timeout 2"), "most first");
        assert_eq!(f.knee.as_deref(), Some("knee at 48 users, 12,345/s"));
        assert!(
            f.drift.as_deref().is_some_and(|d| d.starts_with("rate rose")),
            "{:?}",
            f.drift
        );
    }

    #[test]
    fn the_report_so_far_then_the_finished_one() {
        let live = Live::new("quick", 1, None);
        live.report_so_far(Box::new(|| Some("<p>so far</p>".into())));
        let body = |r: Option<Reply>| match r {
            Some(Reply::Body { body, .. }) => body,
            _ => panic!("a body"),
        };
        assert_eq!(body(live.get("/report")), "<p>so far</p>");
        live.end("run 1 complete", Some("<p>final</p>".into()));
        assert_eq!(body(live.get("/report")), "<p>final</p>");
        // nothing stored yet: nothing to show
        let empty = Live::new("quick", 2, None);
        empty.report_so_far(Box::new(|| None));
        assert!(empty.get("/report").is_none());
    }

    #[test]
    fn no_report_before_the_end() {
        let live = Live::new("quick", 1, None);
        assert!(live.get("/report").is_none());
        assert!(
            matches!(live.get("/live.js"), Some(Reply::Body { content_type, .. }) if content_type.starts_with("text/javascript"))
        );
        assert!(live.get("/nope").is_none());
    }
}

#[cfg(test)]
mod baseline_tests {
    use super::*;

    fn finished(label: &str, rate: f64) -> RunEvent {
        RunEvent::PointFinished {
            point: 0,
            label: label.into(),
            repetition: 1,
            rate: Some(rate),
            failure: None,
        }
    }

    #[test]
    fn each_point_gets_a_running_verdict_against_the_baseline() {
        let label = "rust rest inventory.xs c=4";
        let base = Baseline {
            name: "run 3 (quick)".into(),
            rates: [(label.to_string(), Summary::of(&[1000.0, 1010.0, 990.0]).unwrap())].into(),
        };
        let live = Live::new("quick", 4, Some(base));
        live.on(&RunEvent::PointStarted {
            point: 0,
            repetition: 1,
            label: label.into(),
            done: 0,
            todo: 3,
        });
        assert_eq!(live.state().current.unwrap().baseline_rate, Some(1000.0));
        live.on(&finished(label, 1500.0));
        let s = live.state();
        assert_eq!(s.baseline.as_deref(), Some("run 3 (quick)"));
        assert!(s.versus[0].verdict.contains("one repetition"), "{:?}", s.versus);
        live.on(&finished(label, 1520.0));
        live.on(&finished(label, 1480.0));
        let v = &live.state().versus[0];
        assert_eq!(v.rates.len(), 3);
        assert!(v.verdict.starts_with("faster 1.50x ["), "{}", v.verdict);
        // a point the baseline does not have gets no verdict
        live.on(&finished("rust grpc inventory.xs c=4", 10.0));
        assert_eq!(live.state().versus.len(), 1);
    }

    #[test]
    fn the_same_rates_are_within_the_noise() {
        let base = Summary::of(&[1000.0, 1100.0, 900.0]).unwrap();
        let v = verdict(&base, &[1050.0, 950.0, 1000.0]);
        assert!(v.starts_with("within the noise"), "{v}");
        let v = verdict(&base, &[500.0, 520.0, 480.0]);
        assert!(v.starts_with("slower 0.50x"), "{v}");
    }
}
