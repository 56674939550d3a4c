//! From a validated plan to a ready driver and its checks: resolve the
//! target, encode the request once, compile custom `.proto` files.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use prost::Message as _;
use protobench_contract::graphql::persisted::Persisted;
use protobench_contract::{Dataset, HttpMethod, Operation, Protocol, workload};
use protobench_model::load::{CustomCall, LoadPlan, TlsPlan, Validation};

use crate::LoadError;
use crate::check::{Check, Expected, Family};
use crate::driver::http1::Http1;
use crate::driver::http2::Http2;
use crate::driver::net::Endpoint;

/// A driver of either wire.
pub(crate) enum AnyDriver {
    Http1(Http1),
    Http2(Box<Http2>),
}

impl AnyDriver {
    /// One call on a new connection, its body kept ([`crate::driver::one`]).
    pub(crate) async fn one(&self, timeout: Duration) -> Result<crate::driver::Response, String> {
        match self {
            AnyDriver::Http1(d) => crate::driver::one(d, timeout).await,
            AnyDriver::Http2(d) => crate::driver::one(d.as_ref(), timeout).await,
        }
    }
}

/// What a run needs before it opens a socket.
pub(crate) struct Prepared {
    pub(crate) driver: AnyDriver,
    pub(crate) check: Check,
    pub(crate) addr: SocketAddr,
}

/// A target split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) authority: String,
    pub(crate) path: Option<String>,
    pub(crate) https: bool,
}

/// Splits `host:port`, `http://host:port/path` or `https://...`.
pub(crate) fn parse_target(target: &str) -> Target {
    let (https, rest) = if let Some(r) = target.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = target.strip_prefix("http://") {
        (false, r)
    } else {
        (false, target)
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], Some(rest[i..].to_owned())),
        None => (rest, None),
    };
    let authority = if authority.contains(':') && !authority.ends_with(']') {
        authority.to_owned()
    } else {
        format!("{authority}:{}", if https { 443 } else { 80 })
    };
    Target { authority, path, https }
}

/// Resolves `authority` within `limit`.
pub(crate) async fn resolve(authority: &str, limit: Duration) -> Result<SocketAddr, LoadError> {
    let lookup = tokio::time::timeout(limit, tokio::net::lookup_host(authority.to_owned())).await;
    let err = |source| LoadError::Resolve {
        target: authority.to_owned(),
        source,
    };
    match lookup {
        Err(_) => Err(err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "name lookup timed out",
        ))),
        Ok(Err(e)) => Err(err(e)),
        Ok(Ok(mut addrs)) => addrs
            .next()
            .ok_or_else(|| err(std::io::Error::new(std::io::ErrorKind::NotFound, "no address found"))),
    }
}

/// The TLS settings in force: the plan's, or defaults for an `https://` target.
pub(crate) fn tls_of(plan: &LoadPlan, target: &Target) -> Option<TlsPlan> {
    plan.tls.clone().or_else(|| target.https.then(TlsPlan::default))
}

/// Builds the driver for a contract workload's request in `encoding`-specific form.
pub(crate) fn contract_driver(
    protocol: Protocol,
    endpoint: Endpoint,
    operation: Operation,
    request_body: &[u8],
    request_path: &str,
    extra: &[(String, String)],
) -> Result<AnyDriver, LoadError> {
    let (family, h2) = (Family::of(protocol), protocol.is_http2());
    Ok(match family {
        Family::Rest => {
            let method = match operation.http_method() {
                HttpMethod::Get => "GET",
                HttpMethod::Post => "POST",
            };
            let body: &[u8] = if method == "GET" { &[] } else { request_body };
            let mut headers: Vec<(String, String)> = vec![("Accept".into(), "application/json".into())];
            if !body.is_empty() || method != "GET" {
                headers.push(("Content-Type".into(), "application/json".into()));
            }
            headers.extend_from_slice(extra);
            if h2 {
                AnyDriver::Http2(Box::new(Http2::new(
                    endpoint,
                    method,
                    request_path,
                    &headers,
                    body,
                    false,
                )?))
            } else {
                AnyDriver::Http1(Http1::new(endpoint, method, request_path, &headers, body))
            }
        }
        Family::Grpc => AnyDriver::Http2(Box::new(Http2::new(
            endpoint,
            "POST",
            operation.grpc_path(),
            extra,
            request_body,
            true,
        )?)),
        Family::Soap => {
            let mut headers = vec![
                ("Content-Type".into(), protobench_contract::soap::CONTENT_TYPE.into()),
                ("SOAPAction".into(), format!("\"{}\"", operation.soap_action())),
            ];
            headers.extend_from_slice(extra);
            AnyDriver::Http1(Http1::new(endpoint, "POST", "/soap", &headers, request_body))
        }
        Family::Graphql | Family::Connect | Family::GrpcWeb => {
            web_driver(protocol, endpoint, operation.grpc_path(), request_body, extra)?
        }
    })
}

/// A GraphQL-only workload's run (validated: the protocol is graphql): its
/// document, and its expected data to compare as a value.
async fn graphql_only(
    plan: &LoadPlan,
    g: &protobench_contract::graphql::GraphqlWorkload,
    endpoint: Endpoint,
    addr: SocketAddr,
) -> Result<Prepared, LoadError> {
    let extra: Vec<(String, String)> = plan
        .custom
        .iter()
        .flat_map(|c| c.headers.iter().map(|h| (h.name.clone(), h.value.clone())))
        .collect();
    let message = g.request();
    if plan.protocol == Protocol::GraphqlGet {
        register(endpoint.clone(), &message, &extra, register_timeout(plan)).await?;
    }
    let driver = web_driver(plan.protocol, endpoint, "", &message, &extra)?;
    let expected: serde_json::Value =
        serde_json::from_slice(&g.response(&Dataset::generate())).expect("our own JSON parses");
    let check = Check {
        family: Family::of(plan.protocol),
        expected: None,
        expected_data: Some(protobench_contract::graphql::drop_nulls(expected)),
        custom_response: None,
        full: plan.validate == Validation::Full,
    };
    Ok(Prepared { driver, check, addr })
}

/// Registers a `graphql-get` document with the server before any measured
/// call: one POST of the document with its hash (Apollo's registration),
/// so each GET names it by the hash alone. The answer must be HTTP 200
/// without GraphQL errors. Runs on a thread of its own, as drivers run on
/// a single-threaded event loop (like `verify`).
pub(crate) async fn register(
    endpoint: Endpoint,
    message: &[u8],
    extra: &[(String, String)],
    timeout: Duration,
) -> Result<(), LoadError> {
    let target = endpoint.addr.to_string();
    let driver = registration_driver(endpoint, message, extra)?;
    let answer = crate::driver::on_own_thread("protobench-register", move || async move {
        registered(&driver, timeout).await
    })
    .await?;
    answer.map_err(|message| LoadError::Register { target, message })
}

/// How long the registration may take: a connection and a call.
fn register_timeout(plan: &LoadPlan) -> Duration {
    Duration::from_nanos(plan.connect_timeout_ns.saturating_add(plan.timeout_ns))
}

/// The POST that registers `message`'s document (a GraphQL request body).
pub(crate) fn registration_driver(
    endpoint: Endpoint,
    message: &[u8],
    extra: &[(String, String)],
) -> Result<AnyDriver, LoadError> {
    let persisted = persisted(message)?;
    web_driver(Protocol::Graphql, endpoint, "", &persisted.registration_body(), extra)
}

/// The persisted form (hash and parameters) of a GraphQL request body.
fn persisted(message: &[u8]) -> Result<Persisted, LoadError> {
    Persisted::from_body(message).map_err(|e| LoadError::Input {
        what: "the GraphQL request".into(),
        source: e.into(),
    })
}

/// Makes the registering call; `Err` says what the server answered.
pub(crate) async fn registered(driver: &AnyDriver, timeout: Duration) -> Result<(), String> {
    let resp = driver.one(timeout).await?;
    let body = resp.body.as_deref().unwrap_or_default();
    if let Some(message) = crate::check::graphql_error(body) {
        // The document is stored before it runs: an injected failure of
        // the run does not undo the registration.
        if message == protobench_contract::INJECTED_FAILURE {
            return Ok(());
        }
        return Err(format!("HTTP {}, GraphQL error: {message}", resp.status));
    }
    if resp.status != 200 {
        return Err(format!(
            "HTTP {}: {}",
            resp.status,
            String::from_utf8_lossy(&body[..body.len().min(200)])
        ));
    }
    Ok(())
}

/// The driver of a `graphql`, `connect`, `connect-json`, `grpc-web` or
/// `grpc-web-text` call: a POST of `message` (the GraphQL request, the bare
/// Connect message, the gRPC-Web message to frame) with the protocol's
/// headers; `grpc_path` is the method's path (not used by GraphQL).
pub(crate) fn web_driver(
    protocol: Protocol,
    endpoint: Endpoint,
    grpc_path: &str,
    message: &[u8],
    extra: &[(String, String)],
) -> Result<AnyDriver, LoadError> {
    let ct = protocol.content_type();
    if protocol == Protocol::GraphqlGet {
        // The document by its hash, registered before the run (`register`).
        let persisted = persisted(message)?;
        let mut headers: Vec<(String, String)> = vec![("Accept".into(), ct.into())];
        headers.extend_from_slice(extra);
        return Ok(AnyDriver::Http1(Http1::new(
            endpoint,
            "GET",
            &persisted.get_target(),
            &headers,
            &[],
        )));
    }
    let mut headers: Vec<(String, String)> = vec![("Content-Type".into(), ct.into())];
    let (path, body) = match protocol {
        Protocol::Graphql => {
            headers.push(("Accept".into(), ct.into()));
            (protobench_contract::graphql::PATH, message.to_vec())
        }
        Protocol::Connect | Protocol::ConnectJson => {
            headers.push(("Connect-Protocol-Version".into(), "1".into()));
            (grpc_path, message.to_vec())
        }
        Protocol::GrpcWebText => {
            headers.push(("Accept".into(), ct.into()));
            let frame = protobench_contract::grpc_web::frame(message);
            (grpc_path, protobench_contract::grpc_web::to_text(&frame))
        }
        _ => {
            headers.push(("Accept".into(), ct.into()));
            (grpc_path, protobench_contract::grpc_web::frame(message))
        }
    };
    headers.extend_from_slice(extra);
    let grpc_web = match protocol {
        Protocol::GrpcWeb => Some(false),
        Protocol::GrpcWebText => Some(true),
        _ => None,
    };
    if protocol.is_http2() {
        return Ok(AnyDriver::Http2(Box::new(Http2::new(
            endpoint, "POST", path, &headers, &body, false,
        )?)));
    }
    let driver = Http1::new(endpoint, "POST", path, &headers, &body);
    Ok(AnyDriver::Http1(match grpc_web {
        Some(text) => driver.grpc_web(text),
        None => driver,
    }))
}

/// Prepares a run: resolves, builds the request and the checks.
// Longer than the ~120-line guide: one branch per kind of call (a
// GraphQL-only workload, a contract workload, a custom gRPC or HTTP call),
// each short, sharing the resolved endpoint and the plan's headers.
pub(crate) async fn prepare(plan: &LoadPlan) -> Result<Prepared, LoadError> {
    let target = parse_target(&plan.target);
    let addr = resolve(&target.authority, Duration::from_nanos(plan.connect_timeout_ns)).await?;
    let tls = tls_of(plan, &target);
    let endpoint = Endpoint::new(addr, target.authority.clone(), tls.as_ref(), plan.protocol.alpn_ids())?;
    let (family, h2) = (Family::of(plan.protocol), plan.protocol.is_http2());
    let full = plan.validate == Validation::Full;
    if let Some(name) = &plan.workload
        && let Some(g) = protobench_contract::graphql::find(name)
    {
        return graphql_only(plan, g, endpoint, addr).await;
    }
    if let Some(name) = &plan.workload {
        let w = workload::find(name)
            .ok_or_else(|| LoadError::Plan(crate::PlanError::UnknownWorkload(workload::unknown(name))))?;
        let request = w.request();
        let encoding = plan.protocol.encoding();
        let body = request.encode_request(w.operation, encoding);
        let path = w.operation.rest_path(&request);
        let extra: Vec<(String, String)> = plan
            .custom
            .iter()
            .flat_map(|c| c.headers.iter().map(|h| (h.name.clone(), h.value.clone())))
            .collect();
        if plan.protocol == Protocol::GraphqlGet {
            register(endpoint.clone(), &body, &extra, register_timeout(plan)).await?;
        }
        let driver = contract_driver(plan.protocol, endpoint, w.operation, &body, &path, &extra)?;
        let message = w
            .operation
            .respond(&request, &Dataset::generate())
            .map_err(|e| LoadError::Input {
                what: format!("the expected response of workload {name}"),
                source: Box::new(e),
            })?;
        let check = Check {
            family,
            expected: Some(Expected {
                operation: w.operation,
                encoding,
                message,
            }),
            expected_data: None,
            custom_response: None,
            full,
        };
        return Ok(Prepared { driver, check, addr });
    }
    let custom = plan.custom.clone().unwrap_or_default();
    let headers: Vec<(String, String)> = custom
        .headers
        .iter()
        .map(|h| (h.name.clone(), h.value.clone()))
        .collect();
    let body = match &custom.body_file {
        Some(path) => std::fs::read(path).map_err(|e| LoadError::Input {
            what: format!("body file {}", path.display()),
            source: Box::new(e),
        })?,
        // `-d`: the body inline.
        None => custom.data.clone().map(String::into_bytes).unwrap_or_default(),
    };
    let path = custom
        .path
        .clone()
        .or(target.path.clone())
        .unwrap_or_else(|| "/".into());
    let (driver, custom_response) = match family {
        Family::Grpc => {
            let pool = if custom.proto_files.is_empty() && custom.protoset.is_none() {
                let call = custom.call.clone().unwrap_or_default();
                let limit = Duration::from_nanos(plan.connect_timeout_ns.saturating_add(plan.timeout_ns));
                crate::reflect::pool(&endpoint, &call, limit)
                    .await
                    .map_err(|source| LoadError::Reflection { call, source })?
            } else {
                local_pool(&custom)?
            };
            let (method_path, request, response) = custom_grpc(&pool, &custom)?;
            (
                AnyDriver::Http2(Box::new(Http2::new(
                    endpoint,
                    "POST",
                    &method_path,
                    &headers,
                    &request,
                    true,
                )?)),
                Some(response),
            )
        }
        Family::Rest | Family::Soap | Family::Graphql | Family::Connect | Family::GrpcWeb => {
            let method = custom
                .method
                .clone()
                .unwrap_or_else(|| if body.is_empty() { "GET" } else { "POST" }.into());
            let mut headers = headers;
            if family == Family::Soap {
                let has = |n: &str| headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(n));
                if !has("content-type") {
                    headers.push(("Content-Type".into(), protobench_contract::soap::CONTENT_TYPE.into()));
                }
                if let Some(action) = &custom.soap_action {
                    headers.push(("SOAPAction".into(), format!("\"{}\"", action.trim_matches('"'))));
                }
            }
            let driver = if h2 {
                AnyDriver::Http2(Box::new(Http2::new(endpoint, &method, &path, &headers, &body, false)?))
            } else {
                // A custom gRPC-Web body goes as given (framed by the user);
                // the response is unwrapped to judge its status.
                let driver = Http1::new(endpoint, &method, &path, &headers, &body);
                AnyDriver::Http1(match plan.protocol {
                    Protocol::GrpcWeb => driver.grpc_web(false),
                    Protocol::GrpcWebText => driver.grpc_web(true),
                    _ => driver,
                })
            };
            (driver, None)
        }
    };
    let check = Check {
        family,
        expected: None,
        expected_data: None,
        custom_response: if full { custom_response } else { None },
        full,
    };
    Ok(Prepared { driver, check, addr })
}

/// The descriptors of a custom gRPC call from local files: the
/// `--protoset` file (a `FileDescriptorSet`) as it is, or the `.proto`
/// files compiled.
pub(crate) fn local_pool(custom: &CustomCall) -> Result<prost_reflect::DescriptorPool, LoadError> {
    let input = |what: String, source: Box<dyn std::error::Error + Send + Sync>| LoadError::Input { what, source };
    if let Some(set) = &custom.protoset {
        let what = || format!("descriptor set {}", set.display());
        let bytes = std::fs::read(set).map_err(|e| input(what(), Box::new(e)))?;
        return prost_reflect::DescriptorPool::decode(bytes.as_slice()).map_err(|e| input(what(), Box::new(e)));
    }
    let mut includes: Vec<PathBuf> = custom.import_paths.clone();
    for f in &custom.proto_files {
        let dir = f.parent().map(|p| {
            if p.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                p.to_owned()
            }
        });
        if let Some(dir) = dir
            && !includes.contains(&dir)
        {
            includes.push(dir);
        }
    }
    let files: Vec<PathBuf> = custom
        .proto_files
        .iter()
        .map(|f| {
            includes
                .iter()
                .find_map(|inc| f.strip_prefix(inc).ok().map(PathBuf::from))
                .unwrap_or_else(|| f.file_name().map(PathBuf::from).unwrap_or_else(|| f.clone()))
        })
        .collect();
    let names: Vec<String> = custom.proto_files.iter().map(|p| p.display().to_string()).collect();
    let pool = protox::Compiler::new(&includes)
        .and_then(|mut c| {
            c.include_imports(true);
            c.open_files(&files)?;
            Ok(c.descriptor_pool())
        })
        .map_err(|e| input(format!("compiling {}", names.join(", ")), Box::new(e)))?;
    Ok(pool)
}

/// Finds the method in `pool` and encodes the JSON data as its input:
/// returns the gRPC path, the request bytes and the response type.
pub(crate) fn custom_grpc(
    pool: &prost_reflect::DescriptorPool,
    custom: &CustomCall,
) -> Result<(String, Vec<u8>, prost_reflect::MessageDescriptor), LoadError> {
    let input = |what: String, source: Box<dyn std::error::Error + Send + Sync>| LoadError::Input { what, source };
    let call = custom.call.clone().unwrap_or_default();
    let wanted = call.trim_start_matches('/').to_owned();
    let mut all = Vec::new();
    let mut found = None;
    for service in pool.services() {
        for method in service.methods() {
            let slash = format!("{}/{}", service.full_name(), method.name());
            let dot = format!("{}.{}", service.full_name(), method.name());
            if wanted == slash || wanted == dot {
                found = Some(method.clone());
            }
            all.push(slash);
        }
    }
    let method = found.ok_or_else(|| LoadError::UnknownMethod {
        method: call.clone(),
        methods: if all.is_empty() { "none".into() } else { all.join(", ") },
    })?;
    if method.is_client_streaming() || method.is_server_streaming() {
        return Err(LoadError::Input {
            what: format!("gRPC method {wanted}"),
            source: "only unary methods can be called".into(),
        });
    }
    let data = custom.data.clone().unwrap_or_else(|| "{}".into());
    let mut de = serde_json::Deserializer::from_str(&data);
    let message = prost_reflect::DynamicMessage::deserialize(method.input(), &mut de)
        .and_then(|m| de.end().map(|_| m))
        .map_err(|e| input(format!("--data as {}", method.input().full_name()), Box::new(e)))?;
    let path = format!("/{}/{}", method.parent_service().full_name(), method.name());
    Ok((path, message.encode_to_vec(), method.output()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_split_into_authority_path_and_scheme() {
        let t = |s: &str| parse_target(s);
        assert_eq!(
            t("127.0.0.1:8080"),
            Target {
                authority: "127.0.0.1:8080".into(),
                path: None,
                https: false
            }
        );
        assert_eq!(
            t("https://example.com/a/b?c=1"),
            Target {
                authority: "example.com:443".into(),
                path: Some("/a/b?c=1".into()),
                https: true
            }
        );
        assert_eq!(
            t("http://[::1]:9/x"),
            Target {
                authority: "[::1]:9".into(),
                path: Some("/x".into()),
                https: false
            }
        );
    }
}
