//! One call specification for a service protobench calls but did not start:
//! `protobench load`'s flags and a preset's `[[targets]]` entry are two
//! spellings of it. Both front-ends fill a [`CallSpec`] and build through
//! [`CallSpec::build`], which checks every combination once and names each
//! problem by a typed [`Field`]; each front-end spells the field its own way
//! (`--cacert`, `targets[0].cacert`) and places it (a flag, a line).

use std::path::PathBuf;

use protobench_model::load::{CustomCall, Header, Protocol, TlsPlan};

/// A field of a call specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The HTTP method.
    Method,
    /// The HTTP path.
    Path,
    /// The header at this position.
    Header(usize),
    /// The request inline.
    Data,
    /// The request from a file.
    DataFile,
    /// The SOAPAction header.
    SoapAction,
    /// The gRPC method.
    Call,
    /// `.proto` files.
    Proto,
    /// Import paths of the `.proto` files.
    ImportPath,
    /// A descriptor set.
    Protoset,
    /// TLS on or off.
    Tls,
    /// Extra trusted CA certificates.
    Cacert,
    /// Accept any certificate.
    Insecure,
    /// Client certificate.
    Cert,
    /// Client key.
    Key,
    /// SNI name.
    ServerName,
}

/// What is wrong with a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// It is required here.
    Missing(Needed),
    /// It cannot be used with this other field.
    ConflictsWith(Field),
    /// It needs this other field.
    Requires(Field),
    /// It applies to these protocols only, not to the call's.
    OnlyFor(&'static str, Protocol),
    /// A file or directory that does not exist.
    NoSuch {
        /// `file` or `directory`.
        what: &'static str,
        /// The path looked for.
        path: PathBuf,
    },
    /// Anything else, in words.
    Invalid(String),
}

/// What a call lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needed {
    /// A gRPC call's method.
    GrpcMethod,
    /// A SOAP call's envelope.
    SoapEnvelope,
}

/// How a front-end spells the fields: `--cacert` or `targets[0].cacert`.
pub trait Spelling {
    /// The field's name.
    fn name(&self, field: Field) -> String;
    /// The field set to `value`, as the user would write it.
    fn example(&self, field: Field, value: &str) -> String;
}

/// One problem of a call specification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallIssue {
    /// The field it is about.
    pub field: Field,
    /// What is wrong.
    pub problem: Problem,
}

impl CallIssue {
    /// The message, with other fields spelled the front-end's way; the
    /// field itself is named by the caller.
    pub fn message(&self, spell: &dyn Spelling) -> String {
        match &self.problem {
            Problem::Missing(Needed::GrpcMethod) => format!(
                "missing: the gRPC method, e.g. {}",
                spell.example(Field::Call, "package.Service/Method")
            ),
            Problem::Missing(Needed::SoapEnvelope) => format!(
                "missing: a SOAP call needs its envelope in {} or {}",
                spell.name(Field::Data),
                spell.name(Field::DataFile)
            ),
            Problem::ConflictsWith(other) => format!("and {} cannot be used together", spell.name(*other)),
            Problem::Requires(other) => format!("requires {}", spell.name(*other)),
            Problem::OnlyFor(applies, p) => format!("applies only to protocol {applies}, not {p}"),
            Problem::NoSuch { what, path } => format!("no {what} {}", path.display()),
            Problem::Invalid(text) => text.clone(),
        }
    }
}

/// A call as a front-end wrote it (paths already resolved against the
/// front-end's base directory).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallSpec {
    /// The method (HTTP).
    pub method: Option<String>,
    /// The path (HTTP; a URL's own path is the front-end's).
    pub path: Option<String>,
    /// "Name: value" headers (gRPC: metadata).
    pub headers: Vec<String>,
    /// The request inline (rest/soap: the body; grpc: JSON).
    pub data: Option<String>,
    /// The request from a file (rest/soap: streamed as the body; grpc: the
    /// JSON, read now).
    pub data_file: Option<PathBuf>,
    /// SOAPAction.
    pub soap_action: Option<String>,
    /// gRPC `package.Service/Method`.
    pub call: Option<String>,
    /// `.proto` files.
    pub proto: Vec<PathBuf>,
    /// Their import paths.
    pub import_path: Vec<PathBuf>,
    /// A descriptor set.
    pub protoset: Option<PathBuf>,
    /// TLS asked for (`Some(false)`: explicitly off).
    pub tls: Option<bool>,
    /// Extra CA certificates.
    pub cacert: Option<PathBuf>,
    /// Accept any certificate.
    pub insecure: bool,
    /// Client certificate chain.
    pub cert: Option<PathBuf>,
    /// Client key.
    pub key: Option<PathBuf>,
    /// SNI and certificate name.
    pub server_name: Option<String>,
}

/// A checked call: the engine's custom call and TLS settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The call (`None` fields where the spec left them out).
    pub custom: CustomCall,
    /// TLS, when any TLS setting turned it on.
    pub tls: Option<TlsPlan>,
}

impl CallSpec {
    /// Checks the spec for `protocol` (`gRPC needs a method`, a SOAP call
    /// its envelope, keys that apply to other protocols, files that do not
    /// exist, TLS settings that contradict each other) and builds the call.
    /// `whole`: the spec is the whole call (a target; `load` without a
    /// contract workload), so a gRPC call needs its method and a SOAP call
    /// its envelope. Every problem is returned at once. Without a protocol (the
    /// front-end could not tell it) only what holds for every protocol is
    /// checked.
    pub fn build(&self, protocol: Option<Protocol>, whole: bool) -> Result<Call, Vec<CallIssue>> {
        let mut issues = Vec::new();
        let mut issue = |field, problem| issues.push(CallIssue { field, problem });
        let grpc = protocol == Some(Protocol::Grpc);
        let mut headers = Vec::new();
        for (j, h) in self.headers.iter().enumerate() {
            match h.split_once(':') {
                Some((name, value)) => headers.push(Header {
                    name: name.trim().to_owned(),
                    value: value.trim().to_owned(),
                }),
                None => issue(
                    Field::Header(j),
                    Problem::Invalid(format!("`{h}` is not \"Name: value\"")),
                ),
            }
        }
        if self.data.is_some() && self.data_file.is_some() {
            issue(Field::DataFile, Problem::ConflictsWith(Field::Data));
        }
        let (data, body_file, protocol_issues) = self.by_protocol(protocol, whole);
        issues.extend(protocol_issues);
        let mut issue = |field, problem| issues.push(CallIssue { field, problem });
        if let Some(p) = &self.path
            && !p.starts_with('/')
        {
            issue(Field::Path, Problem::Invalid(format!("`{p}` does not start with /")));
        }
        for (field, path) in [
            (Field::DataFile, body_file.as_ref()),
            (Field::Protoset, self.protoset.as_ref().filter(|_| grpc)),
            (Field::Cacert, self.cacert.as_ref()),
            (Field::Cert, self.cert.as_ref()),
            (Field::Key, self.key.as_ref()),
        ] {
            if let Some(path) = path
                && !path.is_file()
            {
                issue(field, no_file(path));
            }
        }
        if grpc {
            for path in self.proto.iter().filter(|p| !p.is_file()) {
                issue(Field::Proto, no_file(path));
            }
            for path in self.import_path.iter().filter(|p| !p.is_dir()) {
                issue(
                    Field::ImportPath,
                    Problem::NoSuch {
                        what: "directory",
                        path: path.clone(),
                    },
                );
            }
        }
        let tls = self.tls_plan(&mut issue);
        if !issues.is_empty() {
            return Err(issues);
        }
        let custom = CustomCall {
            method: self.method.clone(),
            path: self.path.clone(),
            headers,
            body_file,
            soap_action: self.soap_action.clone(),
            proto_files: if grpc { self.proto.clone() } else { vec![] },
            protoset: self.protoset.clone().filter(|_| grpc),
            import_paths: if grpc { self.import_path.clone() } else { vec![] },
            call: self.call.clone(),
            data,
        };
        Ok(Call { custom, tls })
    }

    /// The rules that depend on the protocol: keys that apply to others,
    /// what a whole gRPC or SOAP call needs, and where the request comes
    /// from (gRPC reads its JSON request file now). Returns the request
    /// inline, the body file, and the problems.
    fn by_protocol(
        &self,
        protocol: Option<Protocol>,
        whole: bool,
    ) -> (Option<String>, Option<PathBuf>, Vec<CallIssue>) {
        let mut issues = Vec::new();
        let mut issue = |field, problem| issues.push(CallIssue { field, problem });
        let grpc = protocol == Some(Protocol::Grpc);
        let only = |set: bool, field: Field, applies: &'static str| {
            let protocol = protocol.filter(|_| set)?;
            Some(CallIssue {
                field,
                problem: Problem::OnlyFor(applies, protocol),
            })
        };
        let mut misplaced: Vec<CallIssue> = Vec::new();
        let mut data = self.data.clone();
        let mut body_file = None;
        if grpc {
            misplaced.extend(only(self.method.is_some(), Field::Method, "rest, rest-h2 or soap"));
            misplaced.extend(only(self.path.is_some(), Field::Path, "rest, rest-h2 or soap"));
            if whole && self.call.is_none() {
                issue(Field::Call, Problem::Missing(Needed::GrpcMethod));
            }
            if !self.proto.is_empty() && self.protoset.is_some() {
                issue(Field::Protoset, Problem::ConflictsWith(Field::Proto));
            }
            if !self.import_path.is_empty() && self.proto.is_empty() {
                issue(Field::ImportPath, Problem::Requires(Field::Proto));
            }
            // The JSON request from a file is read now, as ghz's -D does.
            if let Some(path) = &self.data_file
                && data.is_none()
            {
                match std::fs::read_to_string(path) {
                    Ok(text) => data = Some(text),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => issue(Field::DataFile, no_file(path)),
                    Err(e) => issue(
                        Field::DataFile,
                        Problem::Invalid(format!("cannot read {}: {e}", path.display())),
                    ),
                }
            }
        } else {
            misplaced.extend(only(self.call.is_some(), Field::Call, "grpc"));
            misplaced.extend(only(self.protoset.is_some(), Field::Protoset, "grpc"));
            misplaced.extend(only(!self.proto.is_empty(), Field::Proto, "grpc"));
            misplaced.extend(only(!self.import_path.is_empty(), Field::ImportPath, "grpc"));
            body_file = self.data_file.clone();
            if whole && protocol == Some(Protocol::Soap) && self.data.is_none() && self.data_file.is_none() {
                issue(Field::Data, Problem::Missing(Needed::SoapEnvelope));
            }
        }
        misplaced.extend(only(
            protocol != Some(Protocol::Soap) && self.soap_action.is_some(),
            Field::SoapAction,
            "soap",
        ));
        issues.extend(misplaced);
        (data, body_file, issues)
    }

    /// TLS as `load`'s flags have it: any setting turns it on; `tls =
    /// false` with settings, `insecure` with a CA and half a client pair
    /// are refused.
    fn tls_plan(&self, issue: &mut impl FnMut(Field, Problem)) -> Option<TlsPlan> {
        if self.insecure && self.cacert.is_some() {
            issue(Field::Insecure, Problem::ConflictsWith(Field::Cacert));
        }
        match (&self.cert, &self.key) {
            (Some(_), None) => issue(Field::Cert, Problem::Requires(Field::Key)),
            (None, Some(_)) => issue(Field::Key, Problem::Requires(Field::Cert)),
            _ => {}
        }
        let settings = self.cacert.is_some()
            || self.insecure
            || self.cert.is_some()
            || self.key.is_some()
            || self.server_name.is_some();
        if self.tls == Some(false) && settings {
            issue(
                Field::Tls,
                Problem::Invalid("is false, but TLS settings are given".into()),
            );
        }
        (self.tls == Some(true) || settings).then(|| TlsPlan {
            cacert: self.cacert.clone(),
            insecure: self.insecure,
            client_cert: self.cert.clone(),
            client_key: self.key.clone(),
            server_name: self.server_name.clone(),
        })
    }
}

fn no_file(path: &std::path::Path) -> Problem {
    Problem::NoSuch {
        what: "file",
        path: path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Debug;

    impl Spelling for Debug {
        fn name(&self, f: Field) -> String {
            format!("{f:?}")
        }

        fn example(&self, f: Field, value: &str) -> String {
            format!("{f:?}={value}")
        }
    }

    #[test]
    fn a_grpc_call_needs_its_method_and_refuses_http_keys() {
        let spec = CallSpec {
            method: Some("POST".into()),
            soap_action: Some("x".into()),
            ..Default::default()
        };
        let issues = spec.build(Some(Protocol::Grpc), true).unwrap_err();
        let fields: Vec<Field> = issues.iter().map(|i| i.field).collect();
        assert_eq!(fields, vec![Field::Call, Field::Method, Field::SoapAction]);
        assert_eq!(
            issues[1].message(&Debug),
            "applies only to protocol rest, rest-h2 or soap, not grpc"
        );
    }

    #[test]
    fn tls_turns_on_with_any_setting_and_contradictions_name_both_fields() {
        let on = CallSpec {
            server_name: Some("h".into()),
            ..Default::default()
        };
        assert!(on.build(Some(Protocol::Rest), false).unwrap().tls.is_some());
        assert!(
            CallSpec::default()
                .build(Some(Protocol::Rest), false)
                .unwrap()
                .tls
                .is_none()
        );
        let bad = CallSpec {
            tls: Some(false),
            insecure: true,
            cert: Some("/nonexistent/c.pem".into()),
            ..Default::default()
        };
        let issues = bad.build(Some(Protocol::Rest), false).unwrap_err();
        let text: Vec<String> = issues
            .iter()
            .map(|i| format!("{:?}: {}", i.field, i.message(&Debug)))
            .collect();
        assert_eq!(
            text,
            vec![
                "Cert: no file /nonexistent/c.pem",
                "Cert: requires Key",
                "Tls: is false, but TLS settings are given"
            ]
        );
    }

    #[test]
    fn a_soap_call_without_an_envelope_is_refused_only_when_nothing_else_would_be_sent() {
        let issues = CallSpec::default().build(Some(Protocol::Soap), true).unwrap_err();
        assert_eq!(issues[0].field, Field::Data);
        assert!(CallSpec::default().build(Some(Protocol::Soap), false).is_ok());
    }
}
