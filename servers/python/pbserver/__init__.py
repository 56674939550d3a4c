"""protobench reference server for Python: FastAPI/uvicorn (REST), hypercorn
(REST over HTTP/2), grpc.aio (gRPC) and spyne (SOAP).

The generated protobuf/gRPC stubs live in ../gen (built by tools/gen_stubs.py);
this package puts that directory on sys.path so the generated modules can
import each other by their proto package names.
"""

import pathlib
import sys

SERVER_DIR = pathlib.Path(__file__).resolve().parent.parent
GEN_DIR = SERVER_DIR / "gen"

if str(GEN_DIR) not in sys.path:
    sys.path.insert(0, str(GEN_DIR))
