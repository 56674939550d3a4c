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

use protobench_model::load::{CustomCall, Header, Protocol, TlsPlan};
use toml::Spanned;

use super::Context;
use super::check::Checker;
use super::raw::{OneOrMany, RawPreset, RawTarget};
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

/// Checks one entry.
fn target(entry: &Spanned<RawTarget>, key: &str, base: &Path, ctx: &Context, c: &mut Checker<'_>) -> Option<Target> {
    let t = entry.get_ref();
    let k = |name: &str| format!("{key}.{name}");
    let before = c.issues.len();
    let name = required(
        &t.name,
        entry.span(),
        &k("name"),
        "the target's name, e.g. \"my-api\"",
        c,
    );
    if let Some(n) = name {
        let text = n.get_ref();
        if text.is_empty() || text.chars().any(|ch| ch.is_whitespace() || ch.is_control()) {
            c.issue(n.span(), &k("name"), "must be a non-empty name without spaces");
        } else if ctx.catalog.servers.contains_key(text) {
            c.issue(
                n.span(),
                &k("name"),
                format!("`{text}` is a server protobench starts; give the target another name"),
            );
        }
    }
    let protocol_names: Vec<&str> = Protocol::ALL.iter().map(|p| p.name()).collect();
    let protocol = match required(&t.protocol, entry.span(), &k("protocol"), &protocol_names.join(", "), c) {
        None => None,
        Some(p) => match p.get_ref().parse::<Protocol>() {
            Ok(p) => Some(p),
            Err(_) => {
                c.issue(
                    p.span(),
                    &k("protocol"),
                    format!("unknown `{}` (accepted: {})", p.get_ref(), protocol_names.join(", ")),
                );
                None
            }
        },
    };
    let address = match (&t.address, &t.url) {
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
                entry.span(),
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
    };
    let file = |v: &Option<Spanned<String>>, name: &str, c: &mut Checker<'_>| -> Option<PathBuf> {
        let v = v.as_ref()?;
        let path = base.join(v.get_ref());
        if !path.is_file() {
            c.issue(
                v.span(),
                &k(name),
                format!(
                    "no file {} (relative paths start at the preset's directory)",
                    path.display()
                ),
            );
        }
        Some(std::path::absolute(&path).unwrap_or(path))
    };
    let files = |v: &Option<Spanned<OneOrMany<String>>>, name: &str, dirs: bool, c: &mut Checker<'_>| {
        let Some(v) = v else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for f in v.get_ref().to_vec() {
            let path = base.join(&f);
            let found = if dirs { path.is_dir() } else { path.is_file() };
            if !found {
                let what = if dirs { "directory" } else { "file" };
                c.issue(
                    v.span(),
                    &k(name),
                    format!(
                        "no {what} {} (relative paths start at the preset's directory)",
                        path.display()
                    ),
                );
            }
            out.push(std::path::absolute(&path).unwrap_or(path));
        }
        out
    };
    let mut headers = Vec::new();
    for (j, h) in t.headers.iter().flat_map(|h| h.get_ref()).enumerate() {
        match h.get_ref().split_once(':') {
            Some((name, value)) => headers.push(Header {
                name: name.trim().to_owned(),
                value: value.trim().to_owned(),
            }),
            None => c.issue(
                h.span(),
                &format!("{key}.headers[{j}]"),
                format!("`{}` is not \"Name: value\"", h.get_ref()),
            ),
        }
    }
    // Keys that apply to some protocols only.
    let only = |v: Option<Range<usize>>, name: &str, applies: &str, c: &mut Checker<'_>| {
        if let (Some(span), Some(p)) = (v, protocol) {
            c.issue(span, &k(name), format!("applies only to protocol {applies}, not {p}"));
        }
    };
    let grpc = protocol == Some(Protocol::Grpc);
    let mut data = t.data.as_ref().map(|d| d.get_ref().clone());
    let mut body_file = None;
    if let (Some(_), Some(f)) = (&t.data, &t.data_file) {
        c.issue(
            f.span(),
            &k("data_file"),
            format!("and {} cannot be used together", k("data")),
        );
    }
    if grpc {
        for (v, name) in [(&t.method, "method"), (&t.path, "path")] {
            only(v.as_ref().map(|v| v.span()), name, "rest, rest-h2 or soap", c);
        }
        if t.call.is_none() {
            c.issue(
                entry.span(),
                &k("call"),
                "missing: the gRPC method, e.g. call = \"package.Service/Method\"",
            );
        }
        if let (Some(_), Some(s)) = (&t.proto, &t.protoset) {
            c.issue(
                s.span(),
                &k("protoset"),
                format!("and {} cannot be used together", k("proto")),
            );
        }
        if let (Some(i), None) = (&t.import_path, &t.proto) {
            c.issue(i.span(), &k("import_path"), format!("requires {}", k("proto")));
        }
        // The JSON request from a file is read now, as `load -D` does.
        if let Some(f) = &t.data_file
            && let Some(path) = file(&t.data_file, "data_file", c)
            && path.is_file()
        {
            match std::fs::read_to_string(&path) {
                Ok(text) => data = Some(text),
                Err(e) => c.issue(
                    f.span(),
                    &k("data_file"),
                    format!("cannot read {}: {e}", path.display()),
                ),
            }
        }
    } else {
        for (v, name) in [(&t.call, "call"), (&t.protoset, "protoset")] {
            only(v.as_ref().map(|v| v.span()), name, "grpc", c);
        }
        for (v, name) in [(&t.proto, "proto"), (&t.import_path, "import_path")] {
            only(v.as_ref().map(|v| v.span()), name, "grpc", c);
        }
        body_file = file(&t.data_file, "data_file", c);
        if protocol == Some(Protocol::Soap) && t.data.is_none() && t.data_file.is_none() {
            c.issue(
                entry.span(),
                &k("data"),
                "missing: a SOAP target needs its envelope in data or data_file",
            );
        }
    }
    if protocol != Some(Protocol::Soap) {
        only(t.soap_action.as_ref().map(|v| v.span()), "soap_action", "soap", c);
    }
    if let Some(p) = &t.path
        && !p.get_ref().starts_with('/')
    {
        c.issue(p.span(), &k("path"), format!("`{}` does not start with /", p.get_ref()));
    }
    let proto_files = if grpc {
        files(&t.proto, "proto", false, c)
    } else {
        vec![]
    };
    let import_paths = if grpc {
        files(&t.import_path, "import_path", true, c)
    } else {
        vec![]
    };
    let protoset = if grpc { file(&t.protoset, "protoset", c) } else { None };
    // TLS, as `load`'s flags: any of them turns it on.
    let cacert = file(&t.cacert, "cacert", c);
    let client_cert = file(&t.cert, "cert", c);
    let client_key = file(&t.key, "key", c);
    let insecure = t.insecure.as_ref().is_some_and(|i| *i.get_ref());
    if let (Some(i), Some(_)) = (&t.insecure, &t.cacert)
        && *i.get_ref()
    {
        c.issue(
            i.span(),
            &k("insecure"),
            format!("and {} cannot be used together", k("cacert")),
        );
    }
    match (&t.cert, &t.key) {
        (Some(s), None) => c.issue(s.span(), &k("cert"), format!("requires {}", k("key"))),
        (None, Some(s)) => c.issue(s.span(), &k("key"), format!("requires {}", k("cert"))),
        _ => {}
    }
    let tls_on = t.tls.as_ref().is_some_and(|v| *v.get_ref())
        || cacert.is_some()
        || insecure
        || client_cert.is_some()
        || t.server_name.is_some();
    if let Some(v) = &t.tls
        && !*v.get_ref()
        && tls_on
    {
        c.issue(v.span(), &k("tls"), "is false, but TLS settings are given");
    }
    let tls = tls_on.then(|| TlsPlan {
        cacert,
        insecure,
        client_cert,
        client_key,
        server_name: t.server_name.as_ref().map(|s| s.get_ref().clone()),
    });
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
    let custom = CustomCall {
        method: t.method.as_ref().map(|m| m.get_ref().clone()),
        path: t.path.as_ref().map(|p| p.get_ref().clone()),
        headers,
        body_file,
        soap_action: t.soap_action.as_ref().map(|s| s.get_ref().clone()),
        proto_files,
        protoset,
        import_paths,
        call: t.call.as_ref().map(|s| s.get_ref().clone()),
        data,
    };
    let target = Target {
        name: name?.get_ref().clone(),
        protocol: protocol?,
        address: address?,
        custom,
        tls,
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
