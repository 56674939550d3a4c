"""The gRPC form: a grpc.aio server with protobench.v1.Bench and
helloworld.Greeter (handlers over the generated message classes) and server
reflection."""

from __future__ import annotations

import grpc
from google.protobuf import json_format
from grpc_reflection.v1alpha import reflection

from . import protos
from .common import (
    INJECTED_FAILURE,
    INTEGER_VALUE,
    INTEGERS,
    Gate,
    InvalidInput,
    build_files,
    check_clone,
    load_dataset,
    reverse_scalars,
)
from .config import Config

pb = protos.protobench_pb2
hw = protos.helloworld_pb2


class _Undecodable:
    """What the request deserializer hands over for bytes that are not a valid
    message, so the handler can answer INVALID_ARGUMENT (grpcio itself would
    answer INTERNAL for a deserializer exception)."""

    __slots__ = ()


UNDECODABLE = _Undecodable()


def _deserializer(cls):
    from_string = cls.FromString

    def deserialize(data: bytes):
        try:
            return from_string(data)
        except Exception:
            return UNDECODABLE

    return deserialize


class Bench:
    """protobench.v1.Bench and helloworld.Greeter."""

    def __init__(self, cfg: Config):
        data = load_dataset(cfg.dataset)
        self.status = json_format.ParseDict(data["inventoryStatus"], pb.InventoryStatus())
        self.devices = json_format.ParseDict({"devices": data["devices"]}, pb.DeviceList())
        self.items = json_format.ParseDict({"items": data["items"]}, pb.ItemList())
        self.people = json_format.ParseDict({"people": data["people"]}, pb.ObjectList())
        self.files = build_files()
        self.gate = Gate(cfg)

    async def _admit(self, request, context, validate=None) -> None:
        """Decoded? valid? then service time and the failure draw."""
        if request is UNDECODABLE:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the request message could not be decoded")
        if validate is not None:
            try:
                validate(request)
            except InvalidInput as e:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        if not await self.gate.apass():
            await context.abort(grpc.StatusCode.UNAVAILABLE, INJECTED_FAILURE)

    async def GetInventoryXs(self, request, context):
        await self._admit(request, context)
        return pb.Empty()

    async def GetInventoryS(self, request, context):
        await self._admit(request, context)
        return self.status

    async def GetInventoryM(self, request, context):
        await self._admit(request, context)
        return self.devices

    async def GetInventoryL(self, request, context):
        await self._admit(request, context)
        return self.items

    async def EchoProduct(self, request, context):
        await self._admit(request, context)
        return request

    async def ModifyProduct(self, request, context):
        await self._admit(request, context)
        request.description = reverse_scalars(request.description)
        return request

    async def CloneText(self, request, context):
        await self._admit(request, context, lambda r: check_clone(r.text, r.times))
        return pb.CloneResponse(texts=[request.text] * request.times)

    async def GetInteger(self, request, context):
        await self._admit(request, context)
        return pb.IntegerValue(value=INTEGER_VALUE)

    async def GetIntegers(self, request, context):
        await self._admit(request, context)
        return pb.IntegerList(values=INTEGERS)

    async def GetObjects(self, request, context):
        await self._admit(request, context)
        return self.people

    async def GetFile(self, request, context):
        await self._admit(request, context)
        content = self.files.get(request.name)
        if content is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"unknown file {request.name!r}")
        return pb.FileContent(name=request.name, content=content)

    async def Echo(self, request, context):
        await self._admit(request, context)
        return request

    async def SayHello(self, request, context):
        await self._admit(request, context)
        return hw.HelloReply(response=request.request) if request.HasField("request") else hw.HelloReply()


def add_services(server: grpc.aio.Server, impl: Bench) -> list[str]:
    """Registers every operation of the generated service descriptors; the
    request deserializer is the generated class's FromString, wrapped so that
    undecodable bytes become INVALID_ARGUMENT."""
    names = []
    for svc in protos.SERVICES:
        handlers = {}
        for m in svc.methods:
            in_cls = getattr(_module(m.input_type), m.input_type.name)
            out_cls = getattr(_module(m.output_type), m.output_type.name)
            handlers[m.name] = grpc.unary_unary_rpc_method_handler(
                getattr(impl, m.name),
                request_deserializer=_deserializer(in_cls),
                response_serializer=out_cls.SerializeToString,
            )
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(svc.full_name, handlers),))
        if hasattr(server, "add_registered_method_handlers"):
            server.add_registered_method_handlers(svc.full_name, handlers)
        names.append(svc.full_name)
    return names


def _module(d):
    return pb if d.file.package == "protobench.v1" else hw


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def create_server(cfg: Config) -> grpc.aio.Server:
    server = grpc.aio.server(options=[
        ("grpc.max_receive_message_length", cfg.max_request_bytes),
        ("grpc.max_send_message_length", -1),
        ("grpc.so_reuseport", 1),
        # PROTOBENCH_IDLE_TIMEOUT: a connection with no call for this long gets
        # GOAWAY and is closed; one that has not finished its TLS handshake and
        # sent the HTTP/2 preface and SETTINGS by then is dropped.
        ("grpc.max_connection_idle_ms", _ms(cfg.idle_timeout)),
        ("grpc.server_handshake_timeout_ms", _ms(cfg.idle_timeout)),
        ("grpc.max_concurrent_streams", cfg.max_streams),
    ])
    names = add_services(server, Bench(cfg))
    reflection.enable_server_reflection((*names, reflection.SERVICE_NAME), server)
    return server
