"""Generates the protobuf/gRPC Python stubs from ../../contract/proto into gen/.

Run by the manifest's build with the virtualenv's interpreter (grpcio-tools
provides protoc as a library). gen/ is build output and git-ignored.
"""

import pathlib
import shutil
import sys

from grpc_tools import protoc

HERE = pathlib.Path(__file__).resolve().parent.parent
PROTO_ROOT = (HERE / ".." / ".." / "contract" / "proto").resolve()
OUT = HERE / "gen"


def main() -> int:
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_ROOT.rglob("*.proto"))
    if not protos:
        print(f"no .proto files under {PROTO_ROOT}", file=sys.stderr)
        return 1
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir()
    include = pathlib.Path(protoc.__file__).parent / "_proto"
    rc = protoc.main([
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"--python_out={OUT}",
        f"--grpc_python_out={OUT}",
        *protos,
    ])
    if rc != 0:
        print(f"protoc failed with {rc}", file=sys.stderr)
        return rc
    print(f"generated stubs for {', '.join(protos)} in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
