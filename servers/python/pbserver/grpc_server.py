"""The gRPC form: a grpc.aio server (or, with PROTOBENCH_PYTHON_GRPC=sync,
grpcio's thread-pool server) with protobench.v1.Bench and helloworld.Greeter
(handlers over the generated message classes) and server reflection."""

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
    NotFound,
    build_files,
    check_clone,
    check_file,
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
    """protobench.v1.Bench and helloworld.Greeter: each operation takes the
    decoded, admitted request and returns the response message (or raises
    NotFound). The same objects serve the asyncio server and the thread-pool
    one; only admission (service time, failure draw) and aborting differ."""

    def __init__(self, cfg: Config):
        data = load_dataset(cfg.dataset)
        self.status = json_format.ParseDict(data["inventoryStatus"], pb.InventoryStatus())
        self.devices = json_format.ParseDict({"devices": data["devices"]}, pb.DeviceList())
        self.items = json_format.ParseDict({"items": data["items"]}, pb.ItemList())
        self.people = json_format.ParseDict({"people": data["people"]}, pb.ObjectList())
        self.files = build_files()
        self.gate = Gate(cfg)

    def GetInventoryXs(self, request):
        return pb.Empty()

    def GetInventoryS(self, request):
        return self.status

    def GetInventoryM(self, request):
        return self.devices

    def GetInventoryL(self, request):
        return self.items

    def EchoProduct(self, request):
        return request

    def ModifyProduct(self, request):
        request.description = reverse_scalars(request.description)
        return request

    def CloneText(self, request):
        return pb.CloneResponse(texts=[request.text] * request.times)

    def GetInteger(self, request):
        return pb.IntegerValue(value=INTEGER_VALUE)

    def GetIntegers(self, request):
        return pb.IntegerList(values=INTEGERS)

    def GetObjects(self, request):
        return self.people

    def GetFile(self, request):
        content = self.files.get(request.name)
        if content is None:
            raise NotFound(f"unknown file {request.name!r}")
        return pb.FileContent(name=request.name, content=content)

    def Echo(self, request):
        return request

    def SayHello(self, request):
        return hw.HelloReply(response=request.request) if request.HasField("request") else hw.HelloReply()


# Checks of a decoded request before its service time and failure draw.
VALIDATE = {"CloneText": lambda r: check_clone(r.text, r.times), "GetFile": lambda r: check_file(r.name)}


def _refusal(request, validate) -> tuple[grpc.StatusCode, str] | None:
    """Decoded? valid? None, or the status to abort with."""
    if request is UNDECODABLE:
        return grpc.StatusCode.INVALID_ARGUMENT, "the request message could not be decoded"
    if validate is not None:
        try:
            validate(request)
        except InvalidInput as e:
            return grpc.StatusCode.INVALID_ARGUMENT, str(e)
        except NotFound as e:
            return grpc.StatusCode.NOT_FOUND, str(e)
    return None


def aio_handler(impl: Bench, name: str):
    """The grpc.aio form of one operation (a coroutine on the event loop)."""
    op, validate = getattr(impl, name), VALIDATE.get(name)

    async def handle(request, context):
        refused = _refusal(request, validate)
        if refused is not None:
            await context.abort(*refused)
        if not await impl.gate.apass():
            await context.abort(grpc.StatusCode.UNAVAILABLE, INJECTED_FAILURE)
        try:
            return op(request)
        except NotFound as e:
            await context.abort(grpc.StatusCode.NOT_FOUND, str(e))

    return handle


def sync_handler(impl: Bench, name: str):
    """The thread-pool form of one operation (grpc.server runs it on one of
    its executor's threads; `context.abort` raises)."""
    op, validate = getattr(impl, name), VALIDATE.get(name)

    def handle(request, context):
        refused = _refusal(request, validate)
        if refused is not None:
            context.abort(*refused)
        if not impl.gate.pass_blocking():
            context.abort(grpc.StatusCode.UNAVAILABLE, INJECTED_FAILURE)
        try:
            return op(request)
        except NotFound as e:
            context.abort(grpc.StatusCode.NOT_FOUND, str(e))

    return handle


def add_services(server, impl: Bench, handler) -> list[str]:
    """Registers every operation of the generated service descriptors, each as
    `handler(impl, name)`; the request deserializer is the generated class's
    FromString, wrapped so that undecodable bytes become INVALID_ARGUMENT."""
    names = []
    for svc in protos.SERVICES:
        handlers = {}
        for m in svc.methods:
            in_cls = getattr(_module(m.input_type), m.input_type.name)
            out_cls = getattr(_module(m.output_type), m.output_type.name)
            handlers[m.name] = grpc.unary_unary_rpc_method_handler(
                handler(impl, m.name),
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


# Threads of the thread-pool server's executor, in each worker process: the
# figure of grpcio's own examples (`futures.ThreadPoolExecutor(max_workers=10)`).
SYNC_THREADS = 10


def _options(cfg: Config) -> list[tuple[str, int]]:
    return [
        ("grpc.max_receive_message_length", cfg.max_request_bytes),
        ("grpc.max_send_message_length", -1),
        ("grpc.so_reuseport", 1),
        # PROTOBENCH_IDLE_TIMEOUT: a connection with no call for this long gets
        # GOAWAY and is closed; one that has not finished its TLS handshake and
        # sent the HTTP/2 preface and SETTINGS by then is dropped.
        ("grpc.max_connection_idle_ms", _ms(cfg.idle_timeout)),
        ("grpc.server_handshake_timeout_ms", _ms(cfg.idle_timeout)),
        ("grpc.max_concurrent_streams", cfg.max_streams),
    ]


def create_server(cfg: Config) -> grpc.aio.Server:
    """The default: a grpc.aio server (handlers are coroutines), with the
    streaming operations (stream_grpc.py) besides the unary ones."""
    from . import streams
    from .stream_grpc import add_streams

    server = grpc.aio.server(options=_options(cfg))
    bench = Bench(cfg)
    names = add_services(server, bench, aio_handler)
    data = streams.FeedData(cfg.dataset)
    data.pb_items  # noqa: B018  (loaded now, not on the first subscription)
    names.append(add_streams(server, data, bench.gate))
    reflection.enable_server_reflection((*names, reflection.SERVICE_NAME), server)
    return server


def create_sync_server(cfg: Config) -> grpc.Server:
    """PROTOBENCH_PYTHON_GRPC=sync: grpcio's thread-pool server (grpc.server
    with a ThreadPoolExecutor of SYNC_THREADS threads), the API of grpcio's
    examples and of Berg & Mebrahtu Redi's server."""
    from concurrent import futures

    executor = futures.ThreadPoolExecutor(max_workers=SYNC_THREADS, thread_name_prefix="grpc")
    server = grpc.server(executor, options=_options(cfg))
    names = add_services(server, Bench(cfg), sync_handler)
    reflection.enable_server_reflection((*names, reflection.SERVICE_NAME), server)
    return server
