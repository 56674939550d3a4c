//! `[server]` and `[generator]`: CPU sets, workers and threads, the
//! server's limits, failure injection and service time.

use std::ops::Range;

use toml::Spanned;

use super::check::Checker;
use super::raw::{RawGenerator, RawServer, SizeValue};
use super::{Context, default_cpu_split};
use crate::units::{CpuSet, check_service_time, parse_size};

/// The smallest memory limit a server may get.
const MIN_MEMORY_LIMIT: u64 = 16 * 1024 * 1024;

/// `[server]` and `[generator]`, checked. The lists are matrix dimensions.
pub(super) struct Machine {
    pub(super) server_cpus: Option<CpuSet>,
    pub(super) generator_cpus: Option<CpuSet>,
    pub(super) generator_threads: u32,
    pub(super) workers: Option<u32>,
    pub(super) cpu_limits: Vec<Option<f64>>,
    pub(super) memory_limits: Vec<Option<u64>>,
    pub(super) failure_rates: Vec<f64>,
    pub(super) failure_seed: u64,
    pub(super) service_times: Vec<Option<String>>,
}

/// Checks `[server]` and `[generator]`; what the preset leaves to this
/// machine (CPU splits, limits above its CPUs) goes to `notes`.
pub(super) fn machine(
    server: Option<&Spanned<RawServer>>,
    generator: Option<&Spanned<RawGenerator>>,
    ctx: &Context,
    c: &mut Checker<'_>,
    notes: &mut Vec<String>,
) -> Machine {
    let (empty_server, empty_generator) = (RawServer::default(), RawGenerator::default());
    let server = server.map_or(&empty_server, |s| s.get_ref());
    let generator = generator.map_or(&empty_generator, |g| g.get_ref());
    let (server_cpus, generator_cpus) = cpu_sets(server, generator, ctx, c, notes);
    Machine {
        server_cpus,
        generator_cpus,
        workers: server
            .workers
            .as_ref()
            .map(|w| c.positive(Some(w), "server.workers", 1, 1)),
        generator_threads: c.positive(generator.threads.as_ref(), "generator.threads", 0, 0),
        cpu_limits: cpu_limits(server, ctx, c, notes),
        memory_limits: memory_limits(server, c),
        failure_rates: failure_rates(server, c),
        failure_seed: failure_seed(server, c),
        service_times: service_times(server, c),
    }
}

/// `server.cpus` or `generator.cpus` with its span, when valid and available.
fn cpu_set(
    v: Option<&Spanned<String>>,
    key: &str,
    ctx: &Context,
    c: &mut Checker<'_>,
) -> Option<(CpuSet, Range<usize>)> {
    let v = v?;
    match CpuSet::parse(v.get_ref()) {
        Ok(set) if !set.is_subset(&ctx.cpus) => {
            c.issue(
                v.span(),
                key,
                format!("CPUs `{}` are not all available (available: {})", v.get_ref(), ctx.cpus),
            );
            None
        }
        Ok(set) => Some((set, v.span())),
        Err(e) => {
            c.issue(v.span(), key, e);
            None
        }
    }
}

/// The server's and the generator's CPUs: disjoint; one set given, the
/// other gets the rest; none given, [`default_cpu_split`].
fn cpu_sets(
    server: &RawServer,
    generator: &RawGenerator,
    ctx: &Context,
    c: &mut Checker<'_>,
    notes: &mut Vec<String>,
) -> (Option<CpuSet>, Option<CpuSet>) {
    let server_cpus = cpu_set(server.cpus.as_ref(), "server.cpus", ctx, c);
    let generator_cpus = cpu_set(generator.cpus.as_ref(), "generator.cpus", ctx, c);
    let rest = |taken: &CpuSet| CpuSet(ctx.cpus.0.difference(&taken.0).copied().collect());
    match (server_cpus, generator_cpus) {
        (Some((s, _)), Some((g, span))) => {
            if s.overlaps(&g) {
                c.issue(
                    span,
                    "generator.cpus",
                    format!("CPUs `{g}` overlap server.cpus `{s}`: server and generator must run on disjoint CPU sets"),
                );
            }
            (Some(s), Some(g))
        }
        (Some((s, _)), None) => {
            let rest = rest(&s);
            if rest.is_empty() {
                notes.push(format!(
                    "server.cpus `{s}` leaves no CPU for the generator: the generator is not pinned"
                ));
                (Some(s), None)
            } else {
                (Some(s), Some(rest))
            }
        }
        (None, Some((g, _))) => {
            let rest = rest(&g);
            if rest.is_empty() {
                notes.push(format!(
                    "generator.cpus `{g}` leaves no CPU for the server: the server is not pinned"
                ));
                (None, Some(g))
            } else {
                (Some(rest), Some(g))
            }
        }
        (None, None) => default_cpu_split(&ctx.cpus, notes),
    }
}

/// `server.cpu_limit`: cores above 0 (a note when above this machine's).
fn cpu_limits(server: &RawServer, ctx: &Context, c: &mut Checker<'_>, notes: &mut Vec<String>) -> Vec<Option<f64>> {
    let Some(v) = &server.cpu_limit else {
        return vec![None];
    };
    v.get_ref()
        .to_vec()
        .into_iter()
        .filter_map(|x| {
            if !(x.is_finite() && x > 0.0) {
                c.issue(
                    v.span(),
                    "server.cpu_limit",
                    format!("must be a number of cores above 0, found {x}"),
                );
                return None;
            }
            if x > ctx.cpus.len() as f64 {
                notes.push(format!(
                    "server.cpu_limit {x} is more than the {} CPUs available",
                    ctx.cpus.len()
                ));
            }
            Some(Some(x))
        })
        .collect()
}

/// `server.memory_limit`: sizes of at least 16 MiB.
fn memory_limits(server: &RawServer, c: &mut Checker<'_>) -> Vec<Option<u64>> {
    let Some(v) = &server.memory_limit else {
        return vec![None];
    };
    v.get_ref()
        .to_vec()
        .into_iter()
        .filter_map(|x| {
            let bytes = match x {
                SizeValue::Bytes(b) => Ok(b),
                SizeValue::Text(t) => parse_size(&t),
            };
            match bytes {
                Ok(b) if b >= MIN_MEMORY_LIMIT => Some(Some(b)),
                Ok(b) => {
                    c.issue(
                        v.span(),
                        "server.memory_limit",
                        format!("{b} bytes is below the 16MiB minimum"),
                    );
                    None
                }
                Err(e) => {
                    c.issue(v.span(), "server.memory_limit", e);
                    None
                }
            }
        })
        .collect()
}

/// `server.failure_rate`: fractions of calls the server fails on purpose.
fn failure_rates(server: &RawServer, c: &mut Checker<'_>) -> Vec<f64> {
    let Some(v) = &server.failure_rate else {
        return vec![0.0];
    };
    v.get_ref()
        .to_vec()
        .into_iter()
        .filter(|x| {
            let ok = (0.0..=1.0).contains(x);
            if !ok {
                c.issue(
                    v.span(),
                    "server.failure_rate",
                    format!("must be a fraction between 0 and 1, found {x}"),
                );
            }
            ok
        })
        .collect()
}

/// `server.failure_seed`: an unsigned integer, 1 by default.
fn failure_seed(server: &RawServer, c: &mut Checker<'_>) -> u64 {
    match &server.failure_seed {
        None => 1,
        Some(v) if *v.get_ref() < 0 => {
            c.issue(
                v.span(),
                "server.failure_seed",
                format!("must be an unsigned integer, found {}", v.get_ref()),
            );
            1
        }
        Some(v) => *v.get_ref() as u64,
    }
}

/// `server.service_time`: `sleep:<duration>` or `spin:<duration>`.
fn service_times(server: &RawServer, c: &mut Checker<'_>) -> Vec<Option<String>> {
    let Some(v) = &server.service_time else {
        return vec![None];
    };
    v.get_ref()
        .to_vec()
        .into_iter()
        .filter_map(|s| match check_service_time(&s) {
            Ok(()) => Some(Some(s)),
            Err(e) => {
                c.issue(v.span(), "server.service_time", e);
                None
            }
        })
        .collect()
}
