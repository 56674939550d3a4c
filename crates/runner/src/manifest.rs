//! Server manifests (`servers/<name>/manifest.toml`, format in
//! `docs/dev/server-brief.md`) and the catalog of servers a run can use.
//!
//! The built-in Rust server is always in the catalog, even without a
//! `servers/` directory: its start command is `{protobench} serve`, where
//! `{protobench}` is this executable, so the tool works with nothing else
//! installed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use protobench_contract::stream::StreamTransport;
use protobench_model::load::Protocol;
use protobench_model::run::ServerInfo;

/// The placeholder for this executable in a manifest's `start`.
pub const PROTOBENCH_PLACEHOLDER: &str = "{protobench}";

/// The name of the built-in server.
pub const BUILTIN: &str = "rust";

/// A server manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Server name, the directory's name.
    pub name: String,
    /// Language, e.g. `Go`.
    pub language: String,
    /// The stack, one line.
    pub stack: String,
    /// Protocols served.
    #[serde(deserialize_with = "protocol_list")]
    pub protocols: Vec<Protocol>,
    /// Streaming transports served (`grpc`, `websocket`, `sse`, `poll`;
    /// contract/README.md, "Streaming"); none when absent.
    #[serde(default, deserialize_with = "streaming_list", skip_serializing_if = "Vec::is_empty")]
    pub streaming: Vec<StreamTransport>,
    /// Executables that must be on PATH to build.
    #[serde(default)]
    pub toolchain: Vec<String>,
    /// Build commands (argv lists), run in order in the server's directory.
    #[serde(default)]
    pub build: Vec<Vec<String>>,
    /// Start command (argv), run in the server's directory.
    pub start: Vec<String>,
    /// Seconds until every listening line must have appeared.
    #[serde(default = "default_start_timeout")]
    pub start_timeout_s: u64,
    /// Shortest steady-state warm-up of this stack, in seconds, whatever
    /// the preset's `warmup_min` (0: none of its own). A JIT runtime speeds
    /// up in steps as it compiles, so a few flat seconds can precede a
    /// jump; the steady-state test alone would stop there.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup_min_s: u64,
    /// Library versions the server pins.
    #[serde(default)]
    pub versions: BTreeMap<String, String>,
    /// Other implementations in the same stack, selectable as
    /// `NAME:VARIANT` (e.g. `python:flask`): same build and directory,
    /// their own protocols, environment and, if given, start command.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variants: BTreeMap<String, Variant>,
    /// Settings of the hardening probe (`contract/tests/probe.sh`).
    #[serde(default, skip_serializing_if = "Probe::is_empty")]
    pub probe: Probe,
    /// Environment the start command needs beyond the contract's variables
    /// (set for a variant; empty for a plain server).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The directory holding the manifest (not in the file).
    #[serde(skip)]
    pub dir: PathBuf,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// A variant of a server: another implementation of some of its protocols.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// What differs, one line.
    pub description: String,
    /// The protocols the variant serves.
    #[serde(deserialize_with = "protocol_list")]
    pub protocols: Vec<Protocol>,
    /// Environment that selects it.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A start command of its own (e.g. other JVM heap settings); the
    /// server's when absent.
    #[serde(default)]
    pub start: Option<Vec<String>>,
}

/// `[probe]`: what the hardening probe should know about a stack.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    /// Probe checks (`category check`) the stack's libraries are known to
    /// fail, with why; documented in the server's README.
    #[serde(default)]
    pub deviations: BTreeMap<String, String>,
}

impl Probe {
    fn is_empty(&self) -> bool {
        self.deviations.is_empty()
    }
}

/// The `protocols` list; an unknown name lists the accepted ones.
fn protocol_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Protocol>, D::Error> {
    let names = Vec::<String>::deserialize(d)?;
    names
        .iter()
        .map(|p| {
            p.parse().map_err(|_| {
                let accepted: Vec<&str> = Protocol::ALL.iter().map(|p| p.name()).collect();
                serde::de::Error::custom(format!(
                    "protocols: unknown protocol `{p}` (accepted: {})",
                    accepted.join(", ")
                ))
            })
        })
        .collect()
}

/// The `streaming` list; an unknown name lists the accepted ones.
fn streaming_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<StreamTransport>, D::Error> {
    let names = Vec::<String>::deserialize(d)?;
    names
        .iter()
        .map(|t| {
            t.parse()
                .map_err(|e| serde::de::Error::custom(format!("streaming: {e}")))
        })
        .collect()
}

fn default_start_timeout() -> u64 {
    30
}

/// Why a manifest could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid manifest.
    #[error("{path}:{line}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

impl Manifest {
    /// Reads and checks `dir/manifest.toml`.
    pub fn load(dir: &Path) -> Result<Manifest, ManifestError> {
        let path = dir.join("manifest.toml");
        let text = std::fs::read_to_string(&path).map_err(|source| ManifestError::Read {
            path: path.clone(),
            source,
        })?;
        Manifest::parse(&text, &path)
    }

    /// Parses and checks a manifest's text; `path` names it in errors and gives its directory.
    pub fn parse(text: &str, path: &Path) -> Result<Manifest, ManifestError> {
        let invalid = |line: usize, message: String| ManifestError::Invalid {
            path: path.to_owned(),
            line,
            message,
        };
        let mut m: Manifest = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |s| crate::location::line_col(text, s.start).0);
            invalid(line, e.message().to_string())
        })?;
        let line_of = |key: &str| {
            text.lines()
                .position(|l| l.trim_start().starts_with(key))
                .map_or(1, |i| i + 1)
        };
        if m.start.is_empty() {
            return Err(invalid(line_of("start"), "start: the start command is empty".into()));
        }
        if m.build.iter().any(|b| b.is_empty()) {
            return Err(invalid(line_of("build"), "build: a build command is empty".into()));
        }
        if let Some((v, _)) = m
            .variants
            .iter()
            .find(|(_, v)| v.start.as_ref().is_some_and(Vec::is_empty))
        {
            return Err(invalid(
                line_of(&format!("[variants.{v}]")),
                format!("variants.{v}.start: the start command is empty"),
            ));
        }
        if m.start_timeout_s == 0 {
            return Err(invalid(
                line_of("start_timeout_s"),
                "start_timeout_s: must be at least 1".into(),
            ));
        }
        m.dir = path.parent().map(Path::to_owned).unwrap_or_default();
        Ok(m)
    }

    /// The built-in Rust server's manifest (used when `servers/rust/manifest.toml` is absent).
    pub fn builtin() -> Manifest {
        Manifest {
            name: BUILTIN.into(),
            language: "Rust".into(),
            stack: "axum/hyper (REST, HTTP/2, Connect), tonic (gRPC), tonic-web (gRPC-Web), async-graphql (GraphQL), quick-xml (SOAP); embedded in protobench".into(),
            protocols: Protocol::ALL.to_vec(),
            streaming: StreamTransport::ALL.to_vec(),
            toolchain: vec![],
            build: vec![],
            start: vec![PROTOBENCH_PLACEHOLDER.into(), "serve".into()],
            start_timeout_s: 30,
            warmup_min_s: 0,
            versions: BTreeMap::from([("protobench".to_string(), env!("CARGO_PKG_VERSION").to_string())]),
            variants: BTreeMap::new(),
            probe: Probe::default(),
            env: BTreeMap::new(),
            dir: std::env::temp_dir(),
        }
    }

    /// The start command with `{protobench}` replaced by `exe`.
    pub fn start_command(&self, exe: &Path) -> Vec<String> {
        self.start
            .iter()
            .map(|a| a.replace(PROTOBENCH_PLACEHOLDER, &exe.to_string_lossy()))
            .collect()
    }

    /// True when the server is started through this executable (needs no build).
    pub fn is_embedded(&self) -> bool {
        self.start.first().is_some_and(|s| s == PROTOBENCH_PLACEHOLDER)
    }

    /// Toolchain executables missing from PATH (none for an embedded server:
    /// it is already built into this executable).
    pub fn missing_toolchain(&self) -> Vec<String> {
        if self.is_embedded() {
            return vec![];
        }
        self.toolchain.iter().filter(|t| which(t).is_none()).cloned().collect()
    }

    /// The start executable when it is a path inside the server's directory
    /// that does not exist yet (the server has not been built).
    pub fn missing_start_binary(&self) -> Option<PathBuf> {
        let first = self.start.first()?;
        if self.is_embedded() || !first.contains('/') {
            return None;
        }
        let p = self.dir.join(first);
        (!p.exists()).then_some(p)
    }

    /// The manifest of each variant, named `NAME:VARIANT`: this manifest with
    /// the variant's protocols, environment, description and start command.
    pub fn variant_manifests(&self) -> Vec<Manifest> {
        self.variants
            .iter()
            .map(|(v, variant)| Manifest {
                name: format!("{}:{v}", self.name),
                stack: format!("{} ({})", self.stack, variant.description),
                protocols: variant.protocols.clone(),
                env: variant.env.clone(),
                start: variant.start.clone().unwrap_or_else(|| self.start.clone()),
                variants: BTreeMap::new(),
                ..self.clone()
            })
            .collect()
    }

    /// The server as recorded with a run.
    pub fn info(&self) -> ServerInfo {
        ServerInfo {
            name: self.name.clone(),
            language: self.language.clone(),
            stack: self.stack.clone(),
            versions: self.versions.clone(),
        }
    }
}

/// Finds an executable on PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return p.is_file().then_some(p);
    }
    std::env::var_os("PATH").and_then(|path| std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file()))
}

/// The servers a run can use, by name.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Manifests by name.
    pub servers: BTreeMap<String, Manifest>,
    /// Manifests that could not be read (listed by `protobench servers`).
    pub broken: Vec<String>,
}

impl Catalog {
    /// Reads every `servers_dir/*/manifest.toml`; always includes the built-in
    /// server. A missing directory yields just the built-in server.
    pub fn load(servers_dir: Option<&Path>) -> Catalog {
        let mut catalog = Catalog::default();
        if let Some(dir) = servers_dir
            && let Ok(entries) = std::fs::read_dir(dir)
        {
            let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
            dirs.sort();
            for d in dirs {
                if !d.join("manifest.toml").is_file() {
                    continue;
                }
                match Manifest::load(&d) {
                    Ok(m) => {
                        for v in m.variant_manifests() {
                            catalog.servers.insert(v.name.clone(), v);
                        }
                        catalog.servers.insert(m.name.clone(), m);
                    }
                    Err(e) => catalog.broken.push(e.to_string()),
                }
            }
        }
        catalog.servers.entry(BUILTIN.into()).or_insert_with(Manifest::builtin);
        catalog
    }

    /// Server names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.servers.keys().map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_are_servers_of_their_own_with_their_environment() {
        let dir = std::env::temp_dir().join(format!("pb-manifest-variants-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("py")).unwrap();
        let text = r#"
name = "py"
language = "Python"
stack = "FastAPI"
protocols = ["rest", "grpc"]
start = ["python3", "-m", "srv"]

[variants.flask]
description = "Flask on gunicorn"
protocols = ["rest"]
env = { PROTOBENCH_PYTHON_REST = "flask" }

[variants.small]
description = "another start command"
protocols = ["rest", "grpc"]
start = ["python3", "-X", "small", "-m", "srv"]

[probe]
deviations = { "grpc no content-type" = "library has no hook" }
"#;
        std::fs::write(dir.join("py/manifest.toml"), text).unwrap();
        let catalog = Catalog::load(Some(&dir));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(catalog.names(), ["py", "py:flask", "py:small", "rust"]);
        let flask = &catalog.servers["py:flask"];
        assert_eq!(flask.protocols, [Protocol::Rest]);
        assert_eq!(flask.env["PROTOBENCH_PYTHON_REST"], "flask");
        assert_eq!(flask.start, catalog.servers["py"].start);
        assert_eq!(flask.stack, "FastAPI (Flask on gunicorn)");
        assert!(catalog.servers["py"].env.is_empty());
        assert_eq!(
            catalog.servers["py:small"].start,
            ["python3", "-X", "small", "-m", "srv"]
        );
        assert_eq!(catalog.servers["py"].start, ["python3", "-m", "srv"]);
        assert_eq!(catalog.servers["py"].probe.deviations.len(), 1);
    }

    const GO: &str = r#"
name = "go"
language = "Go"
stack = "net/http, grpc-go"
protocols = ["rest", "grpc"]
toolchain = ["go"]
build = [["go", "build", "-o", "bin/server", "./cmd/server"]]
start = ["bin/server"]
start_timeout_s = 20

[versions]
go = "1.22"
"#;

    #[test]
    fn a_variant_with_an_empty_start_is_refused_at_its_line() {
        let text = format!("{GO}\n[variants.x]\ndescription = \"d\"\nprotocols = [\"rest\"]\nstart = []\n");
        let e = Manifest::parse(&text, Path::new("/x/servers/go/manifest.toml"))
            .unwrap_err()
            .to_string();
        let line = text.lines().position(|l| l == "[variants.x]").unwrap() + 1;
        assert!(
            e.contains(&format!(":{line}")) && e.contains("variants.x.start: the start command is empty"),
            "{e}"
        );
    }

    #[test]
    fn parses_the_briefs_shape() {
        let m = Manifest::parse(GO, Path::new("/x/servers/go/manifest.toml")).unwrap();
        assert_eq!(m.name, "go");
        assert_eq!(m.protocols, [Protocol::Rest, Protocol::Grpc]);
        assert_eq!(m.build[0][0], "go");
        assert_eq!(m.start_timeout_s, 20);
        assert_eq!(m.dir, Path::new("/x/servers/go"));
        assert_eq!(m.versions["go"], "1.22");
        assert!(!m.is_embedded());
        assert_eq!(
            m.missing_start_binary(),
            Some(PathBuf::from("/x/servers/go/bin/server"))
        );
    }

    #[test]
    fn rejects_unknown_protocol_with_line() {
        let text = GO.replace(r#"["rest", "grpc"]"#, r#"["rest", "odata"]"#);
        let e = Manifest::parse(&text, Path::new("m.toml")).unwrap_err().to_string();
        assert_eq!(
            e,
            "m.toml:5: protocols: unknown protocol `odata` (accepted: rest, rest-h2, grpc, soap, graphql, graphql-get, connect, connect-json, grpc-web, grpc-web-text)"
        );
    }

    #[test]
    fn reads_the_streaming_transports_and_names_an_unknown_one() {
        assert!(Manifest::parse(GO, Path::new("m.toml")).unwrap().streaming.is_empty());
        let text = GO.replace(
            "start_timeout_s = 20",
            "start_timeout_s = 20\nstreaming = [\"grpc\", \"sse\"]",
        );
        let m = Manifest::parse(&text, Path::new("m.toml")).unwrap();
        assert_eq!(m.streaming, [StreamTransport::Grpc, StreamTransport::Sse]);
        let text = GO.replace("start_timeout_s = 20", "start_timeout_s = 20\nstreaming = [\"quic\"]");
        let e = Manifest::parse(&text, Path::new("m.toml")).unwrap_err().to_string();
        assert!(
            e.ends_with(
                "streaming: unknown streaming transport `quic` (accepted: grpc, websocket, sse, poll, connect)"
            ),
            "{e}"
        );
        assert_eq!(Manifest::builtin().streaming, StreamTransport::ALL);
    }

    #[test]
    fn rejects_unknown_key_with_line() {
        let text = GO.replace("start_timeout_s = 20", "start_timeout = 20");
        let e = Manifest::parse(&text, Path::new("m.toml")).unwrap_err().to_string();
        assert!(e.starts_with("m.toml:9: unknown field `start_timeout`"), "{e}");
    }

    #[test]
    fn an_embedded_server_needs_no_toolchain() {
        let mut m = Manifest::builtin();
        m.toolchain = vec!["no-such-tool-protobench".into()];
        assert!(m.missing_toolchain().is_empty());
    }

    #[test]
    fn builtin_starts_this_executable() {
        let m = Manifest::builtin();
        assert!(m.is_embedded());
        assert_eq!(
            m.start_command(Path::new("/usr/bin/protobench")),
            ["/usr/bin/protobench", "serve"]
        );
        assert_eq!(m.protocols, Protocol::ALL);
    }

    #[test]
    fn catalog_always_has_the_builtin_server() {
        let c = Catalog::load(Some(Path::new("/nonexistent")));
        assert_eq!(c.names(), ["rust"]);
    }

    #[test]
    fn missing_toolchain_is_listed() {
        let mut m = Manifest::parse(GO, Path::new("m.toml")).unwrap();
        m.toolchain = vec!["sh".into(), "no-such-tool-protobench".into()];
        assert_eq!(m.missing_toolchain(), ["no-such-tool-protobench"]);
    }
}
