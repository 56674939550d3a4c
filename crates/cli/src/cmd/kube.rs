//! `protobench kube manifests`: what a user applies to run a distributed
//! load on Kubernetes (docs/distributed.md, "Kubernetes"): the token as a
//! Secret, a headless Service, an Indexed Job of N agents, the coordinator
//! as a Job (`protobench load ... --agents`), a volume for the results
//! database, and with `--tls-dir` the certificates of mutual TLS as a
//! Secret mounted in both pods. Validated against the Kubernetes API types by
//! `deploy/kube/validate` (a strict decode with `k8s.io/api`).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser as _;

use crate::exit::Exit;

/// Flags of `protobench kube`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    protobench kube manifests --agents 3 -- --protocol rest --target my-server:8080 \\\n    \
    --workload inventory.s -c 48 -z 60s > bench.yaml")]
pub(crate) struct Args {
    #[command(subcommand)]
    command: KubeCommand,
}

#[derive(Debug, clap::Subcommand)]
enum KubeCommand {
    /// Write the manifests of a distributed load (apply them with kubectl apply -f).
    Manifests(ManifestArgs),
}

/// Flags of `protobench kube manifests`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    protobench kube manifests --agents 4 --image registry.example/protobench:0.1.0 -- \\\n    \
    --protocol grpc --target my-server.bench.svc:50051 --workload inventory.s -c 400 -z 60s > bench.yaml\n  \
    kubectl apply -f bench.yaml")]
struct ManifestArgs {
    /// Agents (pods of the Indexed Job), at least 1.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    agents: u32,
    /// The container image holding the static protobench binary (deploy/kube/Containerfile).
    #[arg(long, default_value = "protobench:latest")]
    image: String,
    /// Prefix of every object's name (a DNS label).
    #[arg(long, default_value = "protobench")]
    name: String,
    /// The namespace of every object.
    #[arg(long, default_value = "default")]
    namespace: String,
    /// CPU each agent requests and is limited to (Kubernetes quantity).
    #[arg(long, default_value = "2")]
    agent_cpu: String,
    /// Memory each agent requests and is limited to.
    #[arg(long, default_value = "1Gi")]
    agent_memory: String,
    /// The shared token's file (default: a new random token).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Mutual TLS between the coordinator and the agents, from the files
    /// ca.pem, agent.pem, agent.key, coordinator.pem and coordinator.key in
    /// DIR (kept in a Secret <name>-tls). agent.pem must name
    /// *.<name>-agents.<namespace>.svc (docs/distributed.md).
    #[arg(long, value_name = "DIR")]
    tls_dir: Option<PathBuf>,
    /// Write the manifests here instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// `protobench load` arguments of the coordinator: the target and the
    /// load (everything but --agents, which this command sets).
    #[arg(last = true, required = true, value_name = "LOAD_ARGS")]
    load: Vec<String>,
}

/// The port agents listen on inside their pods.
const AGENT_PORT: u16 = 7070;

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let KubeCommand::Manifests(m) = args.command;
    let usage = |e: String| {
        eprintln!("error: {e}");
        Ok(ExitCode::from(Exit::Usage))
    };
    if let Err(e) = check_name(&m.name, "--name").and(check_name(&m.namespace, "--namespace")) {
        return usage(e);
    }
    if m.load.iter().any(|a| a == "--agents" || a.starts_with("--agents=")) {
        return usage("LOAD_ARGS must not hold --agents: `kube manifests` sets it from --agents N".into());
    }
    let tls_set = ["--agent-ca", "--agent-cert", "--agent-key"];
    if m.tls_dir.is_some()
        && let Some(a) = m
            .load
            .iter()
            .find(|a| tls_set.iter().any(|f| *a == f || a.starts_with(&format!("{f}="))))
    {
        return usage(format!(
            "LOAD_ARGS must not hold {a} with --tls-dir: `kube manifests` sets the coordinator's TLS files"
        ));
    }
    // The coordinator's arguments are checked here, not in the cluster.
    #[derive(clap::Parser)]
    struct Load {
        #[command(flatten)]
        args: super::load::Args,
    }
    if let Err(e) = Load::try_parse_from(std::iter::once("protobench load".to_owned()).chain(m.load.clone())) {
        return usage(format!("LOAD_ARGS are not valid `protobench load` arguments:\n{e}"));
    }
    let token = match &m.token_file {
        Some(f) => super::agent::token(Some(f), "--token-file"),
        None => random_token(),
    };
    let token = match token {
        Ok(t) => t,
        Err(e) => return usage(e),
    };
    let tls = match m.tls_dir.as_deref().map(tls_files).transpose() {
        Ok(t) => t,
        Err(e) => return usage(e),
    };
    let text = manifests(&m, &token, tls.as_ref());
    match &m.output {
        None => std::io::stdout()
            .write_all(text.as_bytes())
            .context("writing the manifests")?,
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The TLS files of `--tls-dir`, by name in the Secret; checked as the
/// agent and the coordinator will load them.
fn tls_files(dir: &std::path::Path) -> Result<Vec<(&'static str, String)>, String> {
    use protobench_runner::agents::tls;
    let f = |n: &str| dir.join(n);
    let agent = tls::AgentTlsFiles {
        cert: f("agent.pem"),
        key: f("agent.key"),
        client_ca: Some(f("ca.pem")),
    };
    let coordinator = tls::CoordinatorTlsFiles {
        agent_ca: f("ca.pem"),
        client: Some((f("coordinator.pem"), f("coordinator.key"))),
    };
    let check = tls::server_config(&agent)
        .map(drop)
        .and_then(|()| tls::client_config(&coordinator).map(drop));
    if let Err(e) = check {
        // Named by its file: the agent's and coordinator's flags are set here.
        let why = protobench_model::format::error_chain(&*e.source);
        return Err(format!("--tls-dir {}: {}: {why}", dir.display(), e.path.display()));
    }
    TLS_FILES
        .iter()
        .map(|&n| {
            std::fs::read_to_string(f(n))
                .map(|text| (n, text))
                .map_err(|e| format!("--tls-dir {}: cannot read {n}: {e}", dir.display()))
        })
        .collect()
}

/// The files of `--tls-dir`, the keys of the TLS Secret.
const TLS_FILES: [&str; 5] = ["ca.pem", "agent.pem", "agent.key", "coordinator.pem", "coordinator.key"];
/// Where the TLS Secret is mounted in both pods.
const TLS_MOUNT: &str = "/tls";

/// The pieces `--tls-dir` adds to the manifests (all empty without it).
#[derive(Default)]
struct TlsParts {
    /// The Secret document, ending in `---`.
    secret: String,
    /// The agent's extra arguments (JSON list items, each after a comma).
    agent_args: String,
    /// A pod's `volumeMounts` item (the coordinator's list) / whole list (the agent's).
    mount_item: String,
    agent_mounts: String,
    /// A pod's `volumes` item / the agent pod's whole list (with fsGroup).
    volume_item: String,
    agent_volumes: String,
}

/// A Secret document holding `data` (key, text), ending in `---`.
fn secret(name: &str, ns: &str, data: &[(&str, String)]) -> String {
    let data: String = data.iter().map(|(k, v)| format!("\n  {k}: {}", q(v))).collect();
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {ns}\ntype: Opaque\nstringData:{data}\n---\n"
    )
}

fn tls_parts(name: &str, ns: &str, files: &[(&str, String)]) -> TlsParts {
    let mount_item =
        format!("\n            - name: tls\n              mountPath: {TLS_MOUNT}\n              readOnly: true");
    // Readable by the containers' group (fsGroup 65532) only.
    let volume_item = format!(
        "\n        - name: tls\n          secret:\n            secretName: {name}-tls\n            defaultMode: 0440"
    );
    let agent_args = [
        ("--tls-cert", "agent.pem"),
        ("--tls-key", "agent.key"),
        ("--client-ca", "ca.pem"),
    ]
    .iter()
    .map(|(flag, file)| format!(", \"{flag}\", \"{TLS_MOUNT}/{file}\""))
    .collect();
    TlsParts {
        secret: secret(&format!("{name}-tls"), ns, files),
        agent_args,
        agent_mounts: format!("\n          volumeMounts:{mount_item}"),
        agent_volumes: format!("\n      securityContext:\n        fsGroup: 65532\n      volumes:{volume_item}"),
        mount_item,
        volume_item,
    }
}

fn check_name(name: &str, flag: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{flag} {name:?}: expected a DNS label of at most 40 characters (a-z, 0-9, '-')"
        ))
    }
}

fn random_token() -> Result<String, String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 24];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("cannot read /dev/urandom for a token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A YAML scalar: JSON's string quoting is valid YAML.
fn q(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// The coordinator's `protobench load` arguments, one YAML list item a line.
fn coordinator_args(m: &ManifestArgs, tls: bool) -> String {
    let (name, ns) = (&m.name, &m.namespace);
    let (agents_job, service) = (format!("{name}-agents"), format!("{name}-agents"));
    let addresses: Vec<String> = (0..m.agents)
        .map(|i| format!("{agents_job}-{i}.{service}.{ns}.svc:{AGENT_PORT}"))
        .collect();
    let mut load: Vec<String> = vec!["load".into()];
    load.extend(m.load.iter().cloned());
    load.extend([
        "--agents".into(),
        addresses.join(","),
        "--agent-wait".into(),
        "5m".into(),
        "--db".into(),
        "/results/results.db".into(),
    ]);
    if tls {
        for (flag, file) in [
            ("--agent-ca", "ca.pem"),
            ("--agent-cert", "coordinator.pem"),
            ("--agent-key", "coordinator.key"),
        ] {
            load.extend([flag.into(), format!("{TLS_MOUNT}/{file}")]);
        }
    }
    // The result as JSON in the pod's log too, unless a form was chosen.
    let form_given = m.load.iter().any(|a| {
        ["-O", "--format", "--output"]
            .iter()
            .any(|f| a == f || a.starts_with(&format!("{f}=")))
    });
    if !form_given {
        load.extend(["--format".into(), "json".into()]);
    }
    load.iter().map(|a| format!("\n            - {}", q(a))).collect()
}

// Longer than the ~120-line guide: the manifests are one YAML document
// per object, written out whole so that they read as what gets applied.
fn manifests(m: &ManifestArgs, token: &str, tls: Option<&Vec<(&str, String)>>) -> String {
    let (name, ns) = (&m.name, &m.namespace);
    let (agents_job, service) = (format!("{name}-agents"), format!("{name}-agents"));
    let coordinator_args = coordinator_args(m, tls.is_some());
    let t = tls.map(|f| tls_parts(name, ns, f)).unwrap_or_default();
    let image = q(&m.image);
    let (cpu, memory) = (q(&m.agent_cpu), q(&m.agent_memory));
    let hardened = "securityContext:
            runAsNonRoot: true
            runAsUser: 65532
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true";
    let token_env = format!(
        "- name: PROTOBENCH_AGENT_TOKEN
              valueFrom:
                secretKeyRef:
                  name: {name}-token
                  key: token"
    );
    format!(
        "# protobench {version}: a distributed load of {n} agents; kubectl apply -f this file (docs/distributed.md).
---
{token_secret}{tls_secret}# Headless: each agent pod gets a DNS name <job>-<index>.{service}.{ns}.svc
apiVersion: v1
kind: Service
metadata:
  name: {service}
  namespace: {ns}
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector:
    app.kubernetes.io/name: protobench
    app.kubernetes.io/instance: {name}
    app.kubernetes.io/component: agent
  ports:
    - name: agent
      port: {port}
      targetPort: {port}
      protocol: TCP
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {agents_job}
  namespace: {ns}
spec:
  completionMode: Indexed
  completions: {n}
  parallelism: {n}
  backoffLimit: 0
  activeDeadlineSeconds: 86400
  template:
    metadata:
      labels:
        app.kubernetes.io/name: protobench
        app.kubernetes.io/instance: {name}
        app.kubernetes.io/component: agent
    spec:
      subdomain: {service}
      restartPolicy: Never
      containers:
        - name: agent
          image: {image}
          args: [\"agent\", \"--listen\", \"$(POD_IP):{port}\"{agent_tls_args}]
          env:
            - name: POD_IP
              valueFrom:
                fieldRef:
                  fieldPath: status.podIP
            {token_env}
          ports:
            - name: agent
              containerPort: {port}
              protocol: TCP
          resources:
            requests:
              cpu: {cpu}
              memory: {memory}
            limits:
              cpu: {cpu}
              memory: {memory}{agent_mounts}
          {hardened}{agent_volumes}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: {name}-results
  namespace: {ns}
spec:
  accessModes: [\"ReadWriteOnce\"]
  resources:
    requests:
      storage: 1Gi
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}-coordinator
  namespace: {ns}
spec:
  completions: 1
  backoffLimit: 0
  activeDeadlineSeconds: 86400
  template:
    metadata:
      labels:
        app.kubernetes.io/name: protobench
        app.kubernetes.io/instance: {name}
        app.kubernetes.io/component: coordinator
    spec:
      restartPolicy: Never
      securityContext:
        fsGroup: 65532
      containers:
        - name: coordinator
          image: {image}
          args:{coordinator_args}
          env:
            {token_env}
          resources:
            requests:
              cpu: \"500m\"
              memory: \"256Mi\"
            limits:
              cpu: \"1\"
              memory: \"512Mi\"
          volumeMounts:
            - name: results
              mountPath: /results{mount_item}
          {hardened}
      volumes:
        - name: results
          persistentVolumeClaim:
            claimName: {name}-results{volume_item}
",
        version = protobench_runner::agents::VERSION,
        n = m.agents,
        port = AGENT_PORT,
        token_secret = secret(&format!("{name}-token"), ns, &[("token", token.to_owned())]),
        tls_secret = t.secret,
        agent_tls_args = t.agent_args,
        agent_mounts = t.agent_mounts,
        agent_volumes = t.agent_volumes,
        mount_item = t.mount_item,
        volume_item = t.volume_item,
    )
}
