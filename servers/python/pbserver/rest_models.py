"""Pydantic models for the REST form, derived from the .proto descriptors.

The canonical JSON form (contract/README.md) is proto3's JSON mapping with
unpopulated fields emitted: lowerCamelCase names, every non-optional field
present, unset optional/oneof/message fields omitted (routes serialize with
exclude_none), enums by name, 64-bit integers as strings, bytes as standard
base64. Requests are parsed by the same rules: unknown members are an error,
`null` means absent, integers may be given as numbers or strings.
"""

from __future__ import annotations

import base64
import enum
import math
from typing import Annotated, Any, Optional

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StrictBool,
    create_model,
    model_validator,
)

from . import protos
from .common import has_surrogate

FD = protos.FD

_CONFIG = ConfigDict(
    extra="forbid",
    ser_json_inf_nan="strings",  # "NaN", "Infinity", "-Infinity" as proto3 JSON
    ser_json_bytes="base64",
    val_json_bytes="base64",
    revalidate_instances="never",
)

# The smallest magnitude a float32 cannot hold: halfway between the largest
# float32 and 2**128 (round-to-nearest-even sends it to infinity). Values below
# it, such as 3.4028235e38 (the largest float32's shortest form), are in range.
_FLOAT32_OVERFLOW = 2.0**128 - 2.0**103


def _int_value(lo: int, hi: int):
    def parse(v: Any) -> int:
        if isinstance(v, bool):
            raise ValueError("expected an integer")
        if isinstance(v, int):
            n = v
        elif isinstance(v, float):
            if not v.is_integer():
                raise ValueError("expected an integer")
            n = int(v)
        elif isinstance(v, str):
            try:
                n = int(v, 10)
            except ValueError:
                f = float(v)  # "1e3" is a valid proto3 JSON integer
                if not f.is_integer():
                    raise ValueError("expected an integer") from None
                n = int(f)
        else:
            raise ValueError("expected an integer")
        if not lo <= n <= hi:
            raise ValueError("integer out of range")
        return n
    return parse


def _float_value(single: bool):
    def parse(v: Any) -> float:
        if isinstance(v, bool):
            raise ValueError("expected a number")
        if isinstance(v, (int, float)):
            x = float(v)
        elif isinstance(v, str):
            x = float(v)
        else:
            raise ValueError("expected a number")
        # the contract's JSON form: finite numbers only (not proto3's "NaN" /
        # "Infinity" strings, nor the NaN/Infinity literals json.loads takes)
        if not math.isfinite(x):
            raise ValueError("expected a finite number")
        if single and abs(x) >= _FLOAT32_OVERFLOW:
            raise ValueError("float out of range")
        return x
    return parse


def _text(v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError("expected a string")
    if has_surrogate(v):
        raise ValueError("string is not valid Unicode")
    return v


def _bytes_value(v: Any) -> bytes:
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    if not isinstance(v, str):
        raise ValueError("expected base64 text")
    s = v.replace("-", "+").replace("_", "/")
    s += "=" * (-len(s) % 4)
    return base64.b64decode(s, validate=True)


Text = Annotated[str, BeforeValidator(_text)]
Bytes = Annotated[
    bytes,
    BeforeValidator(_bytes_value),
    PlainSerializer(lambda b: base64.b64encode(b).decode("ascii"), return_type=str, when_used="json"),
]

_ENUMS: dict[str, type] = {}
_MODELS: dict[str, type] = {}


def enum_type(ed) -> type:
    e = _ENUMS.get(ed.full_name)
    if e is None:
        e = enum.Enum(ed.name, {v.name: v.name for v in ed.values}, type=str)
        by_number = {v.number: v.name for v in ed.values}

        def parse(v: Any, _by_number=by_number):
            if isinstance(v, int) and not isinstance(v, bool):
                if v in _by_number:
                    return _by_number[v]
                raise ValueError("unknown enum number")
            return v

        e = Annotated[e, BeforeValidator(parse)]
        _ENUMS[ed.full_name] = e
    return e


def _scalar(f):
    t = f.type
    if t == FD.TYPE_STRING:
        return Text
    if t == FD.TYPE_BOOL:
        return StrictBool
    if t == FD.TYPE_DOUBLE:
        return Annotated[float, BeforeValidator(_float_value(False))]
    if t == FD.TYPE_FLOAT:
        return Annotated[float, BeforeValidator(_float_value(True))]
    if t == FD.TYPE_BYTES:
        return Bytes
    if t == FD.TYPE_ENUM:
        return enum_type(f.enum_type)
    if t == FD.TYPE_MESSAGE:
        return model(f.message_type)
    lo, hi = protos.INT_RANGES[t]
    if t in protos.INT64_TYPES:
        return Annotated[
            int,
            BeforeValidator(_int_value(lo, hi)),
            PlainSerializer(str, return_type=str, when_used="json"),
        ]
    return Annotated[int, BeforeValidator(_int_value(lo, hi))]


def _default(f):
    t = f.type
    if t == FD.TYPE_STRING:
        return ""
    if t == FD.TYPE_BOOL:
        return False
    if t in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
        return 0.0
    if t == FD.TYPE_BYTES:
        return b""
    if t == FD.TYPE_ENUM:
        return f.enum_type.values[0].name
    return 0


def model(d) -> type[BaseModel]:
    """The Pydantic model of message descriptor d (memoized)."""
    m = _MODELS.get(d.full_name)
    if m is not None:
        return m
    fields: dict[str, Any] = {}
    for f in sorted(d.fields, key=lambda f: f.number):
        tp = _scalar(f)
        if protos.is_repeated(f):
            fields[f.json_name] = (list[tp], Field(default_factory=list))
        elif protos.has_explicit_presence(f):
            fields[f.json_name] = (Optional[tp], None)
        else:
            fields[f.json_name] = (tp, _default(f))
    oneofs = [[f.json_name for f in o.fields] for o in protos.real_oneofs(d)]

    def _nulls_are_absent(cls, data: Any) -> Any:
        # proto3 JSON: null is the field's default; a oneof holds one member.
        if isinstance(data, dict):
            if None in data.values():
                data = {k: v for k, v in data.items() if v is not None}
            for members in oneofs:
                if sum(1 for n in members if n in data) > 1:
                    raise ValueError("more than one member of a oneof is set")
        return data

    validators = {"nulls_are_absent": model_validator(mode="before")(classmethod(_nulls_are_absent))}
    name = d.full_name.replace(".", "_")
    m = create_model(name, __config__=_CONFIG, __validators__=validators, **fields)
    _MODELS[d.full_name] = m
    return m
