//! `protobench kube manifests`: what a user applies to run a distributed
//! load on Kubernetes (docs/distributed.md, "Kubernetes"): the token as a
//! Secret, a headless Service, an Indexed Job of N agents, the coordinator
//! as a Job (`protobench load ... --agents`), and a volume for the results
//! database. Validated against the Kubernetes API types by
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
    let text = manifests(&m, &token);
    match &m.output {
        None => std::io::stdout()
            .write_all(text.as_bytes())
            .context("writing the manifests")?,
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?,
    }
    Ok(ExitCode::SUCCESS)
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
fn coordinator_args(m: &ManifestArgs) -> String {
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
fn manifests(m: &ManifestArgs, token: &str) -> String {
    let (name, ns) = (&m.name, &m.namespace);
    let (agents_job, service) = (format!("{name}-agents"), format!("{name}-agents"));
    let coordinator_args = coordinator_args(m);
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
apiVersion: v1
kind: Secret
metadata:
  name: {name}-token
  namespace: {ns}
type: Opaque
stringData:
  token: {token}
---
# Headless: each agent pod gets a DNS name <job>-<index>.{service}.{ns}.svc
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
          args: [\"agent\", \"--listen\", \"$(POD_IP):{port}\"]
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
              memory: {memory}
          {hardened}
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
              mountPath: /results
          {hardened}
      volumes:
        - name: results
          persistentVolumeClaim:
            claimName: {name}-results
",
        version = protobench_runner::agents::VERSION,
        n = m.agents,
        port = AGENT_PORT,
        token = q(token),
    )
}
