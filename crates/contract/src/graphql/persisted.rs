//! GraphQL persisted queries over GET (`graphql-get`): Apollo's automatic
//! persisted queries, the form most GraphQL clients and CDNs use to make a
//! query a cacheable `GET` and to send a 64-digit hash instead of the
//! document.
//!
//! ```text
//! GET /graphql?operationName=Op&variables=<JSON>&extensions=<JSON>
//!     extensions = {"persistedQuery":{"version":1,"sha256Hash":"<hex>"}}
//! ```
//!
//! A server answers a known hash as it answers the document by POST; an
//! unknown hash without the document with [`not_found_body`] (HTTP 200);
//! the hash together with the document (a `query` parameter, or a POST body
//! with these `extensions`) registers the document after checking the hash
//! ([`MISMATCH`], HTTP 400 when it differs). The store holds at most
//! [`CAPACITY`] documents. Mutations are refused over GET (405, `Allow:
//! POST`). The whole rule set is in `contract/README.md`.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The message of a hash the server does not hold.
pub const NOT_FOUND: &str = "PersistedQueryNotFound";

/// `extensions.code` of [`NOT_FOUND`].
pub const NOT_FOUND_CODE: &str = "PERSISTED_QUERY_NOT_FOUND";

/// The message of a document whose hash is not the one given (HTTP 400).
pub const MISMATCH: &str = "provided sha does not match query";

/// The most documents a server keeps (an untrusted client must not grow
/// its memory without bound).
pub const CAPACITY: usize = 1000;

/// The hex SHA-256 of a document, lowercase: the key it is stored under.
pub fn hash(document: &str) -> String {
    let digest = Sha256::digest(document.as_bytes());
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from_digit(u32::from(b >> 4), 16).expect("a hex digit"));
        out.push(char::from_digit(u32::from(b & 0xf), 16).expect("a hex digit"));
    }
    out
}

/// `{"persistedQuery":{"version":1,"sha256Hash":"<hash>"}}`.
pub fn extensions(hash: &str) -> Value {
    serde_json::json!({"persistedQuery": {"version": 1, "sha256Hash": hash}})
}

/// The body of a hash the server does not hold:
/// `{"errors":[{"message":"PersistedQueryNotFound","extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}]}`.
pub fn not_found_body() -> Vec<u8> {
    error_body(NOT_FOUND, Some(NOT_FOUND_CODE))
}

/// A GraphQL error body, `{"errors":[{"message":...}]}`, with
/// `extensions.code` when given.
pub fn error_body(message: &str, code: Option<&str>) -> Vec<u8> {
    let mut error = serde_json::json!({"message": message});
    if let Some(code) = code {
        error["extensions"] = serde_json::json!({"code": code});
    }
    serde_json::to_vec(&serde_json::json!({"errors": [error]})).expect("JSON serializes")
}

/// A GraphQL request read from a POST body (`query`, `operationName`,
/// `variables`).
#[derive(Debug, Clone, PartialEq)]
pub struct Persisted {
    /// The document.
    pub query: String,
    /// `operationName`, when given.
    pub operation_name: Option<String>,
    /// `variables` (an object; `{}` when absent).
    pub variables: Value,
}

impl Persisted {
    /// Reads a POST body. Errors say what the body lacks.
    pub fn from_body(body: &[u8]) -> Result<Persisted, String> {
        let v: Value = serde_json::from_slice(body).map_err(|e| format!("the GraphQL request is not JSON: {e}"))?;
        let query = v
            .get("query")
            .and_then(Value::as_str)
            .ok_or("the GraphQL request has no \"query\" string")?
            .to_owned();
        let operation_name = v.get("operationName").and_then(Value::as_str).map(str::to_owned);
        let variables = match v.get("variables") {
            None | Some(Value::Null) => Value::Object(Default::default()),
            Some(o @ Value::Object(_)) => o.clone(),
            Some(_) => return Err("the GraphQL request's \"variables\" is not an object".into()),
        };
        Ok(Persisted {
            query,
            operation_name,
            variables,
        })
    }

    /// Whether the document's operation is a mutation (which GET may not
    /// carry). The contract's documents name one operation each.
    pub fn is_mutation(&self) -> bool {
        self.query.trim_start().starts_with("mutation")
    }

    /// The hash of the document.
    pub fn hash(&self) -> String {
        hash(&self.query)
    }

    /// The request target of the GET that names the document by its hash
    /// (no `query`): `/graphql?operationName=..&variables=..&extensions=..`,
    /// each value percent-encoded.
    pub fn get_target(&self) -> String {
        let mut out = String::from(super::PATH);
        let mut sep = '?';
        let mut param = |name: &str, value: &str| {
            out.push(sep);
            sep = '&';
            out.push_str(name);
            out.push('=');
            out.extend(utf8_percent_encode(value, COMPONENT));
        };
        if let Some(name) = &self.operation_name {
            param("operationName", name);
        }
        param("variables", &self.variables.to_string());
        param("extensions", &extensions(&self.hash()).to_string());
        out
    }

    /// The POST body that registers the document under its hash (and runs
    /// it): the request with `extensions`.
    pub fn registration_body(&self) -> Vec<u8> {
        let mut v = serde_json::json!({"query": self.query, "variables": self.variables});
        if let Some(name) = &self.operation_name {
            v["operationName"] = Value::String(name.clone());
        }
        v["extensions"] = extensions(&self.hash());
        serde_json::to_vec(&v).expect("JSON serializes")
    }
}

/// The parameters of a GraphQL GET, percent-decoded (`+` is a space).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GetParams {
    /// `query`: the document.
    pub query: Option<String>,
    /// `operationName`.
    pub operation_name: Option<String>,
    /// `variables`: JSON text.
    pub variables: Option<String>,
    /// `extensions`: JSON text.
    pub extensions: Option<String>,
}

/// Reads a GET's query string (without the `?`). Each parameter may come
/// once (a repeated one is refused, naming it); others are ignored; an
/// empty value counts as absent.
pub fn get_params(query_string: &str) -> Result<GetParams, String> {
    let mut out = GetParams::default();
    for (name, value) in form_urlencoded::parse(query_string.as_bytes()) {
        let slot = match name.as_ref() {
            "query" => &mut out.query,
            "operationName" => &mut out.operation_name,
            "variables" => &mut out.variables,
            "extensions" => &mut out.extensions,
            _ => continue,
        };
        if slot.is_some() {
            return Err(format!(
                "the query string gives `{name}` twice; expected it at most once"
            ));
        }
        if !value.is_empty() {
            *slot = Some(value.into_owned());
        }
    }
    Ok(out)
}

/// What a query-string value keeps unescaped: RFC 3986's unreserved
/// characters (so `+` and `&` inside JSON are escaped, and a space is `%20`).
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_sha256_in_lowercase_hex() {
        // SHA-256("abc"), FIPS 180-2 appendix B.1
        assert_eq!(
            hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_post_body_becomes_a_get_by_hash_and_a_registration() {
        let body = br#"{"query":"query Q($n: Int!) { a(n: $n) { b } }","operationName":"Q","variables":{"n":1}}"#;
        let p = Persisted::from_body(body).unwrap();
        assert!(!p.is_mutation());
        let h = hash("query Q($n: Int!) { a(n: $n) { b } }");
        assert_eq!(
            p.get_target(),
            format!(
                "/graphql?operationName=Q&variables=%7B%22n%22%3A1%7D&extensions=%7B%22persistedQuery%22%3A%7B%22sha256Hash%22%3A%22{h}%22%2C%22version%22%3A1%7D%7D"
            )
        );
        let reg: Value = serde_json::from_slice(&p.registration_body()).unwrap();
        assert_eq!(reg["extensions"]["persistedQuery"]["sha256Hash"], h.as_str());
        assert_eq!(reg["extensions"]["persistedQuery"]["version"], 1);
        assert_eq!(reg["query"], p.query.as_str());
        assert_eq!(reg["operationName"], "Q");
        assert_eq!(reg["variables"]["n"], 1);
    }

    #[test]
    fn bad_bodies_say_what_they_lack_and_mutations_are_told_apart() {
        assert!(Persisted::from_body(b"[").unwrap_err().contains("not JSON"));
        assert!(Persisted::from_body(b"{}").unwrap_err().contains("no \"query\""));
        let e = Persisted::from_body(br#"{"query":"q","variables":[1]}"#).unwrap_err();
        assert!(e.contains("not an object"), "{e}");
        let m = Persisted::from_body(br#"{"query":" mutation M { m }"}"#).unwrap();
        assert!(m.is_mutation());
        assert_eq!(m.variables, serde_json::json!({}));
    }

    #[test]
    fn a_get_target_reads_back_and_repeats_are_refused() {
        let p = Persisted::from_body(
            br#"{"query":"query Q { a(s: \"x+y & z\") }","operationName":"Q","variables":{"k":"a b"}}"#,
        )
        .unwrap();
        let target = p.get_target();
        let q = get_params(target.split_once('?').unwrap().1).unwrap();
        assert_eq!(q.query, None);
        assert_eq!(q.operation_name.as_deref(), Some("Q"));
        assert_eq!(q.variables.as_deref(), Some(r#"{"k":"a b"}"#));
        let ext: Value = serde_json::from_str(q.extensions.as_deref().unwrap()).unwrap();
        assert_eq!(ext, extensions(&p.hash()));
        // `+` is a space, `%2B` a plus; an empty value is absent
        let q = get_params("query=a+b%2Bc&operationName=&x=1").unwrap();
        assert_eq!(q.query.as_deref(), Some("a b+c"));
        assert_eq!(q.operation_name, None);
        let e = get_params("query=a&query=b").unwrap_err();
        assert_eq!(e, "the query string gives `query` twice; expected it at most once");
    }

    #[test]
    fn the_not_found_body_is_the_apollo_form() {
        assert_eq!(
            String::from_utf8(not_found_body()).unwrap(),
            r#"{"errors":[{"extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"},"message":"PersistedQueryNotFound"}]}"#
        );
    }
}
