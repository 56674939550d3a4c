"""The PROTOBENCH_* environment variables (contract/README.md), parsed once."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from . import SERVER_DIR

PROTOCOLS = ("rest", "rest-h2", "grpc", "soap", "graphql", "graphql-get")
_ADDR_VARS = {
    "rest": "PROTOBENCH_REST_ADDR",
    "rest-h2": "PROTOBENCH_REST_H2_ADDR",
    "grpc": "PROTOBENCH_GRPC_ADDR",
    "soap": "PROTOBENCH_SOAP_ADDR",
    "graphql": "PROTOBENCH_GRAPHQL_ADDR",
    "graphql-get": "PROTOBENCH_GRAPHQL_GET_ADDR",
}
_UNITS_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class ServiceTime:
    mode: str  # "sleep" or "spin"
    seconds: float


@dataclass(frozen=True)
class Config:
    addrs: dict  # protocol -> (host, port)
    workers: int
    tls_cert: str | None
    tls_key: str | None
    failure_rate: float
    failure_seed: int
    service_time: ServiceTime | None
    max_request_bytes: int
    dataset: str
    idle_timeout: float = 60.0  # seconds
    read_timeout: float = 30.0  # seconds
    max_streams: int = 1000
    rest_impl: str = "fastapi"  # PROTOBENCH_PYTHON_REST
    rest_workers: int | None = None  # PROTOBENCH_PYTHON_REST_WORKERS (None: `workers`)
    rest_json: str = "pydantic"  # PROTOBENCH_PYTHON_REST_JSON
    grpc_impl: str = "aio"  # PROTOBENCH_PYTHON_GRPC
    # not a variable: the persisted queries' file shared by the GraphQL
    # workers, set by the supervisor (apq.py)
    apq_store: str | None = None

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    def processes(self, proto: str) -> int:
        """Worker processes serving `proto`: PROTOBENCH_WORKERS, except for
        `rest` when PROTOBENCH_PYTHON_REST_WORKERS sets its own count."""
        if proto == "rest" and self.rest_workers is not None:
            return self.rest_workers
        return self.workers


def parse_addr(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host:
        raise ConfigError(f"address {value!r} is not host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        p = int(port)
    except ValueError:
        raise ConfigError(f"address {value!r} has a bad port") from None
    if not 0 <= p <= 65535:
        raise ConfigError(f"address {value!r} has a bad port")
    return host, p


def parse_service_time(value: str) -> ServiceTime | None:
    value = value.strip()
    if not value or value == "none":
        return None
    m = re.fullmatch(r"(sleep|spin):([0-9]+(?:\.[0-9]+)?)(ns|us|ms|s)", value)
    if not m:
        raise ConfigError(
            f"PROTOBENCH_SERVICE_TIME {value!r} is not sleep:<duration> or spin:<duration>"
        )
    return ServiceTime(m.group(1), float(m.group(2)) * _UNITS_NS[m.group(3)] / 1e9)


REST_IMPLS = ("fastapi", "flask")
REST_JSONS = ("pydantic", "orjson")
GRPC_IMPLS = ("aio", "sync")


def parse_duration(var: str, value: str) -> float:
    """An integer followed by ns, us, ms or s (the syntax of
    PROTOBENCH_SERVICE_TIME's durations), in seconds; must be positive."""
    m = re.fullmatch(r"([0-9]+)(ns|us|ms|s)", value.strip())
    if not m or int(m.group(1)) == 0:
        raise ConfigError(
            f"{var} {value!r} is not a positive duration: an integer followed by ns, us, ms or s (e.g. 60s, 500ms)"
        )
    return int(m.group(1)) * _UNITS_NS[m.group(2)] / 1e9


def _choice(env, var: str, accepted: tuple[str, ...]) -> str:
    """The variable's value, one of `accepted` (unset or empty: the first)."""
    value = env.get(var, "").strip() or accepted[0]
    if value not in accepted:
        raise ConfigError(f"{var} {value!r} is not one of: {', '.join(accepted)}")
    return value


def _positive_int(env, var: str) -> int | None:
    value = env.get(var, "").strip()
    if not value:
        return None
    try:
        n = int(value)
    except ValueError:
        raise ConfigError(f"{var} {value!r} is not an integer") from None
    if n < 1:
        raise ConfigError(f"{var} must be at least 1")
    return n


def _cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def load(env=os.environ) -> Config:
    addrs = {}
    for proto, var in _ADDR_VARS.items():
        v = env.get(var, "").strip()
        if v:
            addrs[proto] = parse_addr(v)

    workers_s = env.get("PROTOBENCH_WORKERS", "").strip()
    if workers_s:
        try:
            workers = int(workers_s)
        except ValueError:
            raise ConfigError(f"PROTOBENCH_WORKERS {workers_s!r} is not an integer") from None
        if workers < 1:
            raise ConfigError("PROTOBENCH_WORKERS must be at least 1")
    else:
        workers = _cpus()

    cert = env.get("PROTOBENCH_TLS_CERT") or None
    key = env.get("PROTOBENCH_TLS_KEY") or None
    if (cert is None) != (key is None):
        raise ConfigError("set both PROTOBENCH_TLS_CERT and PROTOBENCH_TLS_KEY, or neither")

    try:
        rate = float(env.get("PROTOBENCH_FAILURE_RATE", "0") or "0")
    except ValueError:
        raise ConfigError("PROTOBENCH_FAILURE_RATE is not a number") from None
    if not 0.0 <= rate <= 1.0:
        raise ConfigError("PROTOBENCH_FAILURE_RATE must be within 0..1")
    try:
        seed = int(env.get("PROTOBENCH_FAILURE_SEED", "1") or "1")
    except ValueError:
        raise ConfigError("PROTOBENCH_FAILURE_SEED is not an integer") from None
    if not 0 <= seed < 2**64:
        raise ConfigError("PROTOBENCH_FAILURE_SEED must be an unsigned 64-bit integer")

    service_time = parse_service_time(env.get("PROTOBENCH_SERVICE_TIME", ""))

    try:
        max_bytes = int(env.get("PROTOBENCH_MAX_REQUEST_BYTES", "8388608") or "8388608")
    except ValueError:
        raise ConfigError("PROTOBENCH_MAX_REQUEST_BYTES is not an integer") from None
    if max_bytes < 0:
        raise ConfigError("PROTOBENCH_MAX_REQUEST_BYTES must not be negative")

    dataset = env.get("PROTOBENCH_DATASET") or str(
        (SERVER_DIR / ".." / ".." / "contract" / "data" / "dataset.json").resolve()
    )

    idle = parse_duration("PROTOBENCH_IDLE_TIMEOUT", env.get("PROTOBENCH_IDLE_TIMEOUT", "") or "60s")
    read = parse_duration("PROTOBENCH_READ_TIMEOUT", env.get("PROTOBENCH_READ_TIMEOUT", "") or "30s")
    streams_s = env.get("PROTOBENCH_MAX_STREAMS", "").strip() or "1000"
    try:
        streams = int(streams_s)
    except ValueError:
        raise ConfigError(f"PROTOBENCH_MAX_STREAMS {streams_s!r} is not an integer") from None
    if not 1 <= streams <= 2**31 - 1:
        raise ConfigError("PROTOBENCH_MAX_STREAMS must be within 1..2147483647")

    rest_impl = _choice(env, "PROTOBENCH_PYTHON_REST", REST_IMPLS)
    rest_workers = _positive_int(env, "PROTOBENCH_PYTHON_REST_WORKERS")
    rest_json = _choice(env, "PROTOBENCH_PYTHON_REST_JSON", REST_JSONS)
    if rest_json == "orjson" and rest_impl != "fastapi":
        raise ConfigError("PROTOBENCH_PYTHON_REST_JSON=orjson needs PROTOBENCH_PYTHON_REST=fastapi "
                          "(ORJSONResponse is FastAPI's)")
    grpc_impl = _choice(env, "PROTOBENCH_PYTHON_GRPC", GRPC_IMPLS)
    return Config(addrs, workers, cert, key, rate, seed, service_time, max_bytes, dataset,
                  idle, read, streams, rest_impl, rest_workers, rest_json, grpc_impl)
