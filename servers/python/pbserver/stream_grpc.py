"""`protobench.v1.Streams` on the grpc.aio server: the bidirectional echo,
the server-streaming subscription, the client-streaming upload and the unary
poll (contract/README.md, "Streaming").

Each call is admitted once, like a unary call: a subscription's or a poll's
request is validated first (INVALID_ARGUMENT), then the injected service time
and the failure draw run before the first message (UNAVAILABLE). Handlers are
async generators or read the request iterator one message at a time, so
grpc.aio holds at most one message per direction: the next inbound message
is read when the previous reply has been written, and the next event is built
when the previous one has been written. A message over
PROTOBENCH_MAX_REQUEST_BYTES is refused by grpcio itself
(`grpc.max_receive_message_length`: RESOURCE_EXHAUSTED); one past
1,000,000 messages on a stream is RESOURCE_EXHAUSTED too.

Only the grpc.aio server serves streams; the thread-pool variant
(PROTOBENCH_PYTHON_GRPC=sync) does not.
"""

from __future__ import annotations

import time

import grpc

from . import protos, streams
from .common import INJECTED_FAILURE, Gate, InvalidInput
from .grpc_server import UNDECODABLE, _deserializer

spb = protos.stream_pb2
UNDECODABLE_MESSAGE = "a stream message could not be decoded"


class StreamsService:
    def __init__(self, data: streams.FeedData, gate: Gate):
        self.data = data
        self.gate = gate

    async def _admit(self, context, headers: bool = False) -> None:
        """Service time and failure draw; then, for a stream of replies, the
        response headers at once (grpc.aio would send them with the first
        reply, and a client that waits for them before it sends its first
        echo message would wait forever)."""
        if not await self.gate.apass():
            await context.abort(grpc.StatusCode.UNAVAILABLE, INJECTED_FAILURE)
        if headers:
            await context.send_initial_metadata(())

    async def EchoStream(self, request_iterator, context):
        await self._admit(context, headers=True)
        n = 0
        async for message in request_iterator:
            if message is UNDECODABLE:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, UNDECODABLE_MESSAGE)
            if n >= streams.MAX_STREAM_MESSAGES:
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, streams.TOO_MANY)
            n += 1
            yield message

    async def Subscribe(self, request, context):
        await _validate(request, streams.validate_subscribe, context)
        await self._admit(context, headers=True)
        feed = streams.Feed(request.count, request.items, request.rate)
        while (event := await feed.next_event()) is not None:
            yield self.data.event_pb(event[0], request.items, event[1])

    async def Upload(self, request_iterator, context):
        await self._admit(context)
        tally = streams.Tally()
        async for message in request_iterator:
            if message is UNDECODABLE:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, UNDECODABLE_MESSAGE)
            if not tally.add(message.payload):
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, streams.TOO_MANY)
        return tally.summary_pb()

    async def Poll(self, request, context):
        await _validate(request, streams.validate_poll, context)
        await self._admit(context)
        return self.data.page_pb(request, time.time_ns())


async def _validate(request, validate, context) -> None:
    if request is UNDECODABLE:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the request message could not be decoded")
    try:
        validate(request)
    except InvalidInput as e:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))


_KINDS = {
    (False, False): grpc.unary_unary_rpc_method_handler,
    (False, True): grpc.unary_stream_rpc_method_handler,
    (True, False): grpc.stream_unary_rpc_method_handler,
    (True, True): grpc.stream_stream_rpc_method_handler,
}


def add_streams(server, data: streams.FeedData, gate: Gate) -> str:
    """Registers protobench.v1.Streams (each method by its descriptor's
    streaming kinds); returns the service's full name for reflection."""
    svc = protos.STREAMS
    impl = StreamsService(data, gate)
    handlers = {}
    for m in svc.methods:
        in_cls = getattr(spb, m.input_type.name)
        out_cls = getattr(spb, m.output_type.name)
        kind = _KINDS[(m.client_streaming, m.server_streaming)]
        handlers[m.name] = kind(getattr(impl, m.name), request_deserializer=_deserializer(in_cls),
                                response_serializer=out_cls.SerializeToString)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(svc.full_name, handlers),))
    if hasattr(server, "add_registered_method_handlers"):
        server.add_registered_method_handlers(svc.full_name, handlers)
    return svc.full_name
