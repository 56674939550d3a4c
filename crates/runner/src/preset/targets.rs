//! `[[targets]]`: running services that protobench calls but does not
//! start, each with its own call. The keys are `protobench load`'s flags in
//! snake case (`data`, `data_file`, `soap_action`, `proto`, `protoset`,
//! `cacert`, ...), so a command line that works becomes a preset entry.
//!
//! Every combination `load` refuses is refused here too, naming the key
//! (`targets[0].call`) and its line; files are looked for relative to the
//! preset's directory, before anything starts.

use std::ops::Range;
use std::path::{Path, PathBuf};

use protobench_model::load::Protocol;
use toml::Spanned;

use super::Context;
use super::check::Checker;
use super::raw::{OneOrMany, RawPreset, RawTarget};
use crate::call::{CallSpec, Field, Problem};
use crate::plan::Target;

/// The checked targets, in file order; each one's note goes to `notes`.
pub(super) fn targets(
    raw: &RawPreset,
    file: &str,
    ctx: &Context,
    c: &mut Checker<'_>,
    notes: &mut Vec<String>,
) -> Vec<Target> {
    let Some(list) = &raw.targets else {
        return vec![];
    };
    let base = Path::new(file)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut out: Vec<Target> = Vec::new();
    for (i, entry) in list.get_ref().iter().enumerate() {
        let key = format!("targets[{i}]");
        if let Some(t) = target(entry, &key, base, ctx, c) {
            if out.iter().any(|o| o.name == t.name) {
                let span = entry.get_ref().name.as_ref().map_or(entry.span(), |n| n.span());
                c.issue(span, &format!("{key}.name"), format!("`{}` names two targets", t.name));
                continue;
            }
            notes.push(t.note());
            out.push(t);
        }
    }
    if !list.get_ref().is_empty()
        && let Some(n) = &raw.network
    {
        c.issue(
            n.span(),
            "network",
            "puts a server protobench starts behind an emulated link; a target is a service protobench does not start: run the targets in a preset without `network`",
        );
    }
    out
}

/// A required key, or an issue at the entry.
fn required<'a>(
    v: &'a Option<Spanned<String>>,
    entry: Range<usize>,
    key: &str,
    what: &str,
    c: &mut Checker<'_>,
) -> Option<&'a Spanned<String>> {
    if v.is_none() {
        c.issue(entry, key, format!("missing: {what}"));
    }
    v.as_ref()
}

/// Checks one entry: its name, protocol and address here, its call and TLS
/// through the call specification `load` builds through too
/// ([`crate::call::CallSpec`]), its PID, then whatever else the engine
/// refuses.
fn target(entry: &Spanned<RawTarget>, key: &str, base: &Path, ctx: &Context, c: &mut Checker<'_>) -> Option<Target> {
    let t = entry.get_ref();
    let k = |name: &str| format!("{key}.{name}");
    let before = c.issues.len();
    let name = name(t, entry.span(), key, ctx, c);
    let protocol = protocol(t, entry.span(), key, c);
    let address = address(t, entry.span(), key, c);
    let call = match spec(t, base).build(protocol, true) {
        Ok(mut call) => {
            absolute_paths(&mut call);
            Some(call)
        }
        Err(issues) => {
            let spelling = Entry {
                t,
                entry: entry.span(),
                key,
            };
            for i in issues {
                let (span, field) = place(t, entry.span(), key, i.field);
                let mut message = i.message(&spelling);
                if matches!(i.problem, Problem::NoSuch { .. }) {
                    message.push_str(" (relative paths start at the preset's directory)");
                }
                c.issue(span, &field, message);
            }
            None
        }
    };
    let pid = t.pid.as_ref().and_then(|p| {
        let v = *p.get_ref();
        match u32::try_from(v) {
            Ok(pid) if pid > 0 && Path::new(&format!("/proc/{pid}")).is_dir() => Some(pid),
            Ok(pid) if pid > 0 => {
                c.issue(
                    p.span(),
                    &k("pid"),
                    format!("no process with PID {pid} on this machine"),
                );
                None
            }
            _ => {
                c.issue(
                    p.span(),
                    &k("pid"),
                    format!("must be a process ID (1 or more), found {v}"),
                );
                None
            }
        }
    });
    if c.issues.len() > before {
        return None;
    }
    let call = call?;
    let target = Target {
        name: name?,
        protocol: protocol?,
        address: address?,
        custom: call.custom,
        tls: call.tls,
        pid,
    };
    // Whatever else the engine refuses (control characters in a header, a
    // method that is not HTTP), in its words, at the entry.
    let mut plan = protobench_model::load::LoadPlan {
        custom: Some(target.custom.clone()),
        tls: target.tls.clone(),
        workload: None,
        ..protobench_load::plan_defaults(target.protocol, &target.address)
    };
    plan.requests = None;
    if let Err(e) = protobench_load::validate(&plan) {
        c.issue(entry.span(), key, e.to_string());
        return None;
    }
    Some(target)
}

/// `name`: required, one word, not a server protobench starts.
fn name(t: &RawTarget, entry: Range<usize>, key: &str, ctx: &Context, c: &mut Checker<'_>) -> Option<String> {
    let field = format!("{key}.name");
    let n = required(&t.name, entry, &field, "the target's name, e.g. \"my-api\"", c)?;
    let text = n.get_ref();
    if text.is_empty() || text.chars().any(|ch| ch.is_whitespace() || ch.is_control()) {
        c.issue(n.span(), &field, "must be a non-empty name without spaces");
    } else if ctx.catalog.servers.contains_key(text) {
        c.issue(
            n.span(),
            &field,
            format!("`{text}` is a server protobench starts; give the target another name"),
        );
    }
    Some(text.clone())
}

/// `protocol`: required, one of the contract's.
fn protocol(t: &RawTarget, entry: Range<usize>, key: &str, c: &mut Checker<'_>) -> Option<Protocol> {
    let field = format!("{key}.protocol");
    let names: Vec<&str> = Protocol::ALL.iter().map(|p| p.name()).collect();
    let p = required(&t.protocol, entry, &field, &names.join(", "), c)?;
    match p.get_ref().parse::<Protocol>() {
        Ok(p) => Some(p),
        Err(_) => {
            c.issue(
                p.span(),
                &field,
                format!("unknown `{}` (accepted: {})", p.get_ref(), names.join(", ")),
            );
            None
        }
    }
}

/// `address` (host:port) or `url` (http:// or https://), one of them; a
/// path in the URL and `path` cannot both be given.
fn address(t: &RawTarget, entry: Range<usize>, key: &str, c: &mut Checker<'_>) -> Option<String> {
    let k = |name: &str| format!("{key}.{name}");
    match (&t.address, &t.url) {
        (Some(a), Some(u)) => {
            c.issue(
                u.span(),
                &k("url"),
                format!("and {} cannot be used together", k("address")),
            );
            Some(a.get_ref().clone())
        }
        (None, None) => {
            c.issue(
                entry,
                &k("address"),
                "missing: address = \"host:port\" or url = \"http://host:port/path\"",
            );
            None
        }
        (Some(a), None) => {
            let text = a.get_ref();
            if text.contains("://") || text.contains('/') || !text.contains(':') {
                c.issue(
                    a.span(),
                    &k("address"),
                    format!("`{text}` is not host:port (a URL goes in `url`)"),
                );
            }
            Some(text.clone())
        }
        (None, Some(u)) => {
            let text = u.get_ref();
            if !(text.starts_with("http://") || text.starts_with("https://")) {
                c.issue(
                    u.span(),
                    &k("url"),
                    format!("`{text}` is not an http:// or https:// URL (host:port goes in `address`)"),
                );
            } else if let Some(p) = &t.path
                && text.splitn(4, '/').nth(3).is_some_and(|rest| !rest.is_empty())
            {
                c.issue(
                    p.span(),
                    &k("path"),
                    format!("and a path in {} cannot be used together", k("url")),
                );
            }
            Some(text.clone())
        }
    }
}

/// The entry's call as the shared specification, files relative to `base`
/// (the preset's directory).
fn spec(t: &RawTarget, base: &Path) -> CallSpec {
    let text = |v: &Option<Spanned<String>>| v.as_ref().map(|v| v.get_ref().clone());
    let path = |v: &Option<Spanned<String>>| v.as_ref().map(|v| absolute(base, v.get_ref()));
    let paths = |v: &Option<Spanned<OneOrMany<String>>>| {
        v.as_ref().map_or_else(Vec::new, |v| {
            v.get_ref().to_vec().iter().map(|f| absolute(base, f)).collect()
        })
    };
    CallSpec {
        method: text(&t.method),
        path: text(&t.path),
        headers: t
            .headers
            .iter()
            .flat_map(|h| h.get_ref())
            .map(|h| h.get_ref().clone())
            .collect(),
        data: text(&t.data),
        data_file: path(&t.data_file),
        soap_action: text(&t.soap_action),
        call: text(&t.call),
        proto: paths(&t.proto),
        import_path: paths(&t.import_path),
        protoset: path(&t.protoset),
        tls: t.tls.as_ref().map(|v| *v.get_ref()),
        cacert: path(&t.cacert),
        insecure: t.insecure.as_ref().is_some_and(|i| *i.get_ref()),
        cert: path(&t.cert),
        key: path(&t.key),
        server_name: text(&t.server_name),
    }
}

/// `base/file`, as the messages name it (made absolute once checked:
/// [`absolute_paths`]).
fn absolute(base: &Path, file: &str) -> PathBuf {
    base.join(file)
}

/// The call's files made absolute, so that the plan does not depend on the
/// directory it is run from.
fn absolute_paths(call: &mut crate::call::Call) {
    let abs = |p: &mut PathBuf| {
        if let Ok(a) = std::path::absolute(&*p) {
            *p = a;
        }
    };
    let c = &mut call.custom;
    c.body_file.iter_mut().for_each(abs);
    c.protoset.iter_mut().for_each(abs);
    c.proto_files.iter_mut().for_each(abs);
    c.import_paths.iter_mut().for_each(abs);
    if let Some(tls) = &mut call.tls {
        tls.cacert.iter_mut().for_each(abs);
        tls.client_cert.iter_mut().for_each(abs);
        tls.client_key.iter_mut().for_each(abs);
    }
}

/// A target entry's spelling of the call's fields.
struct Entry<'a> {
    t: &'a RawTarget,
    entry: Range<usize>,
    key: &'a str,
}

impl crate::call::Spelling for Entry<'_> {
    fn name(&self, field: Field) -> String {
        place(self.t, self.entry.clone(), self.key, field).1
    }

    fn example(&self, field: Field, value: &str) -> String {
        let name = self.name(field);
        let bare = name.rsplit('.').next().unwrap_or(&name);
        format!("{bare} = \"{value}\"")
    }
}

/// Where a field of the entry is written and how the preset spells it
/// (`targets[0].cacert`); a missing key is placed at the entry.
fn place(t: &RawTarget, entry: Range<usize>, key: &str, field: Field) -> (Range<usize>, String) {
    fn at<T>(v: &Option<Spanned<T>>) -> Option<Range<usize>> {
        v.as_ref().map(Spanned::span)
    }
    let (name, span) = match field {
        Field::Method => ("method".to_string(), at(&t.method)),
        Field::Path => ("path".into(), at(&t.path)),
        Field::Header(j) => (
            format!("headers[{j}]"),
            t.headers.as_ref().and_then(|h| h.get_ref().get(j)).map(Spanned::span),
        ),
        Field::Data => ("data".into(), at(&t.data)),
        Field::DataFile => ("data_file".into(), at(&t.data_file)),
        Field::SoapAction => ("soap_action".into(), at(&t.soap_action)),
        Field::Call => ("call".into(), at(&t.call)),
        Field::Proto => ("proto".into(), at(&t.proto)),
        Field::ImportPath => ("import_path".into(), at(&t.import_path)),
        Field::Protoset => ("protoset".into(), at(&t.protoset)),
        Field::Tls => ("tls".into(), at(&t.tls)),
        Field::Cacert => ("cacert".into(), at(&t.cacert)),
        Field::Insecure => ("insecure".into(), at(&t.insecure)),
        Field::Cert => ("cert".into(), at(&t.cert)),
        Field::Key => ("key".into(), at(&t.key)),
        Field::ServerName => ("server_name".into(), at(&t.server_name)),
    };
    (span.unwrap_or(entry), format!("{key}.{name}"))
}
