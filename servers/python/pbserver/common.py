"""What every protocol shares: the failure draw, the injected service time,
the dataset, the two files and the operations' semantics."""

from __future__ import annotations

import asyncio
import itertools
import json
import time

from .config import Config, ServiceTime

MASK64 = (1 << 64) - 1
TWO_64 = float(1 << 64)

MAX_CLONE_TIMES = 100_000
MAX_CLONE_BYTES = 64 * 1024 * 1024  # "a response over 64 MiB of text" (UTF-8 bytes)

FILE_SIZES = {"file-455k": 455_000, "file-3m4": 3_400_000}
INJECTED_FAILURE = "injected failure"


class InvalidInput(ValueError):
    """The request decoded but its values are not acceptable (400 /
    INVALID_ARGUMENT / soap:Client)."""


class NotFound(LookupError):
    """Unknown file (404 / NOT_FOUND / soap:Client)."""


def splitmix64(x: int) -> int:
    z = (x + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


class FailureDraw:
    """One counter per process. itertools.count's __next__ is a single C call,
    so it is atomic under the GIL even when several threads draw."""

    def __init__(self, rate: float, seed: int):
        self.rate = rate
        self.seed = seed
        self._counter = itertools.count()

    def fails(self) -> bool:
        k = next(self._counter)
        if self.rate <= 0.0:
            return False
        return splitmix64((self.seed + k) & MASK64) / TWO_64 < self.rate


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class Gate:
    """Service time, then the failure draw: run after a request is decoded and
    validated, before its operation is carried out."""

    def __init__(self, cfg: Config):
        self.draw = FailureDraw(cfg.failure_rate, cfg.failure_seed)
        self.service_time: ServiceTime | None = cfg.service_time

    async def apass(self) -> bool:
        """Async form (event-loop handlers). Returns False for an injected failure."""
        st = self.service_time
        if st is not None:
            if st.mode == "sleep":
                await asyncio.sleep(st.seconds)
            else:
                spin(st.seconds)
        return not self.draw.fails()

    def pass_blocking(self) -> bool:
        """Blocking form (WSGI threads/processes): `sleep` blocks this thread."""
        st = self.service_time
        if st is not None:
            if st.mode == "sleep":
                time.sleep(st.seconds)
            else:
                spin(st.seconds)
        return not self.draw.fails()


# ---------------------------------------------------------------- data

def load_dataset(path: str) -> dict:
    with open(path, "rb") as f:
        data = json.load(f)
    for key in ("inventoryStatus", "devices", "items", "people"):
        if key not in data:
            raise ValueError(f"{path}: no member {key!r}")
    return data


def build_files() -> dict[str, bytes]:
    # Byte i is (i * 131 + 7) mod 251: the sequence repeats every 251 bytes.
    period = bytes((i * 131 + 7) % 251 for i in range(251))
    files = {}
    for name, size in FILE_SIZES.items():
        files[name] = (period * (size // 251 + 1))[:size]
    return files


INTEGERS = list(range(10_000))
INTEGER_VALUE = 2147483647


# ---------------------------------------------------------------- semantics

def reverse_scalars(s: str) -> str:
    # Python strings are sequences of code points, so this reverses by Unicode
    # scalar values (the decoders refuse lone surrogates).
    return s[::-1]


def check_clone(text: str, times: int) -> None:
    if times < 0 or times > MAX_CLONE_TIMES:
        raise InvalidInput(f"times must be within 0..={MAX_CLONE_TIMES}")
    if times and len(text.encode("utf-8")) * times > MAX_CLONE_BYTES:
        raise InvalidInput("the response would hold more than 64 MiB of text")


def check_file(name: str) -> None:
    """An unknown file is refused before the service time and the failure draw
    (contract/README.md "Failure draw": it does not advance the counter)."""
    if name not in FILE_SIZES:
        raise NotFound(f"unknown file {name!r}")


def has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
