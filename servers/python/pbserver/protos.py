"""The generated protobuf modules and their descriptors: the single source the
REST (Pydantic) and SOAP (spyne) models are derived from, so every protocol
follows the same .proto files (field names, numbers, order, labels)."""

from __future__ import annotations

from google.protobuf import descriptor as _d

from helloworld import helloworld_pb2, helloworld_pb2_grpc  # noqa: F401  (generated)
from protobench.v1 import protobench_pb2, protobench_pb2_grpc  # noqa: F401  (generated)
from protobench.v1 import stream_pb2  # noqa: F401  (generated)

FD = _d.FieldDescriptor

BENCH = protobench_pb2.DESCRIPTOR.services_by_name["Bench"]
GREETER = helloworld_pb2.DESCRIPTOR.services_by_name["Greeter"]
# The unary services; protobench.v1.Streams is served by stream_grpc.py.
STREAMS = stream_pb2.DESCRIPTOR.services_by_name["Streams"]
SERVICES = (BENCH, GREETER)


def methods():
    """(service descriptor, method descriptor) for every operation."""
    for svc in SERVICES:
        for m in svc.methods:
            yield svc, m


def method(name: str):
    for _, m in methods():
        if m.name == name:
            return m
    raise KeyError(name)


def is_repeated(f) -> bool:
    # protobuf >= 5 has is_repeated; older releases only the label
    rep = getattr(f, "is_repeated", None)
    if rep is not None:
        return rep if isinstance(rep, bool) else rep()
    return f.label == FD.LABEL_REPEATED


def has_explicit_presence(f) -> bool:
    """proto3 `optional` fields, oneof members and singular message fields."""
    if is_repeated(f):
        return False
    return f.has_presence


def is_optional_scalar(f) -> bool:
    """A field that is omitted when unset: proto3 `optional` or a oneof member
    (singular message fields are handled separately)."""
    return has_explicit_presence(f) and f.type != FD.TYPE_MESSAGE


def real_oneofs(d):
    return [o for o in d.oneofs if not getattr(o, "is_synthetic", False)
            and not (len(o.fields) == 1 and o.name == "_" + o.fields[0].name)]


INT_RANGES = {
    FD.TYPE_INT32: (-(2**31), 2**31 - 1),
    FD.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FD.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FD.TYPE_UINT32: (0, 2**32 - 1),
    FD.TYPE_FIXED32: (0, 2**32 - 1),
    FD.TYPE_INT64: (-(2**63), 2**63 - 1),
    FD.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FD.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FD.TYPE_UINT64: (0, 2**64 - 1),
    FD.TYPE_FIXED64: (0, 2**64 - 1),
}
INT64_TYPES = {FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64, FD.TYPE_UINT64, FD.TYPE_FIXED64}
