//! What the runner's integration tests share: a fake server that only says
//! it listens (one line per protocol asked for), then sleeps until SIGTERM.

use std::path::Path;

use protobench_runner::manifest::Catalog;

/// The fake server's script.
const FAKE_SERVER: &str = r#"#!/bin/sh
port=40000
for p in REST REST_H2 GRPC SOAP; do
  eval addr=\$PROTOBENCH_${p}_ADDR
  if [ -n "$addr" ]; then
    name=$(echo $p | tr 'A-Z_' 'a-z-')
    port=$((port+1))
    echo "listening protocol=$name addr=127.0.0.1:$port tls=false"
  fi
done
trap 'exit 0' TERM
while true; do sleep 0.05; done
"#;

/// Writes the server `fake` (rest and grpc) under `root/servers` and
/// returns the catalog that holds it.
pub(crate) fn fake_catalog(root: &Path) -> Catalog {
    let dir = root.join("servers/fake");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("server.sh"), FAKE_SERVER).unwrap();
    std::fs::write(
        dir.join("manifest.toml"),
        "name = \"fake\"\nlanguage = \"sh\"\nstack = \"a shell script\"\nprotocols = [\"rest\", \"grpc\"]\ntoolchain = []\nstart = [\"sh\", \"server.sh\"]\nstart_timeout_s = 10\n",
    )
    .unwrap();
    Catalog::load(Some(&root.join("servers")))
}
