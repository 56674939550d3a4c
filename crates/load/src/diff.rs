//! The first difference between two JSON values, by path
//! (`items[3].unitPrice`), with numbers compared by value: what `verify`
//! reports and what the run's checks of GraphQL-only workloads count.

use serde_json::Value;

/// The first difference: its path, the found and the expected value, short.
pub(crate) fn first_difference(found: &Value, expected: &Value, path: String) -> Option<(String, String, String)> {
    let join = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    match (found, expected) {
        (Value::Object(f), Value::Object(e)) => {
            for (k, ev) in e {
                match f.get(k) {
                    None => return Some((join(k), "nothing".into(), render(ev))),
                    Some(fv) => {
                        if let Some(d) = first_difference(fv, ev, join(k)) {
                            return Some(d);
                        }
                    }
                }
            }
            f.iter()
                .find(|(k, _)| !e.contains_key(*k))
                .map(|(k, fv)| (join(k), render(fv), "nothing".into()))
        }
        (Value::Array(f), Value::Array(e)) => {
            for (i, (fv, ev)) in f.iter().zip(e).enumerate() {
                if let Some(d) = first_difference(fv, ev, format!("{path}[{i}]")) {
                    return Some(d);
                }
            }
            if f.len() != e.len() {
                return Some((path, format!("{} elements", f.len()), format!("{} elements", e.len())));
            }
            None
        }
        (Value::Number(f), Value::Number(e)) => {
            if f.as_f64() == e.as_f64() {
                None
            } else {
                Some((path, render(found), render(expected)))
            }
        }
        _ => (found != expected).then(|| (path, render(found), render(expected))),
    }
}

pub(crate) fn short(s: &str) -> String {
    const MAX: usize = 60;
    if s.chars().count() <= MAX {
        s.to_owned()
    } else {
        let head: String = s.chars().take(MAX).collect();
        format!("{head}... ({} characters)", s.chars().count())
    }
}

pub(crate) fn render(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{:?}", short(s)).replace("\\\"", "\""),
        Value::Array(a) => format!("[{} elements]", a.len()),
        Value::Object(_) => "{...}".into(),
        other => other.to_string(),
    }
}
