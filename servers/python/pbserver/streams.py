"""The streaming operations' rules, whatever carries them (contract/README.md,
"Streaming"): the limits and their error texts, the query parameters of the
SSE and polling forms, the feed's schedule, a poll's page, the upload's
summary, and each message in its two encodings (canonical JSON through the
Pydantic models of rest_models.py, protobuf through the generated classes).

Events are built one at a time when they are due: `Feed` hands out the next
event's `(seq, scheduledNs)` no earlier than its scheduled time, and the
transport builds that event's message (items from the dataset) right before
sending it.
"""

from __future__ import annotations

import asyncio
import functools
import time
from typing import NamedTuple

from google.protobuf import json_format
from pydantic import TypeAdapter, ValidationError

from . import protos
from .common import InvalidInput, load_dataset
from .rest_models import model

pb = protos.protobench_pb2
spb = protos.stream_pb2

MAX_COUNT = 1_000_000
MAX_ITEMS = 1395  # the dataset's items (GetInventoryL)
MAX_RATE = 1_000_000
MAX_PAGE_EVENTS = 1000
MAX_PAGE_ITEMS = 16_384
MAX_STREAM_MESSAGES = 1_000_000
TOO_MANY = f"more than {MAX_STREAM_MESSAGES} messages on one stream"

WS_ECHO_PATH = "/v1/stream/ws/echo"
WS_SUBSCRIBE_PATH = "/v1/stream/ws/subscribe"
WS_UPLOAD_PATH = "/v1/stream/ws/upload"
SSE_PATH = "/v1/stream/sse"
POLL_PATH = "/v1/stream/poll"

CLOSE_NORMAL = 1000
CLOSE_INVALID = 1007
CLOSE_POLICY = 1008
CLOSE_TOO_BIG = 1009

FNV_OFFSET = 0x811C9DC5
FNV_PRIME = 0x01000193

StreamMessageModel = model(spb.StreamMessage.DESCRIPTOR)
SubscribeRequestModel = model(spb.SubscribeRequest.DESCRIPTOR)
FeedEventModel = model(spb.FeedEvent.DESCRIPTOR)
UploadSummaryModel = model(spb.UploadSummary.DESCRIPTOR)
FeedPageModel = model(spb.FeedPage.DESCRIPTOR)
ItemModel = model(pb.Item.DESCRIPTOR)


# ---------------------------------------------------------------- limits

def validate_feed(count: int, items: int, rate: int) -> None:
    """Raises InvalidInput naming the value and the accepted range."""
    if not 1 <= count <= MAX_COUNT:
        raise InvalidInput(f"count is {count}, expected 1..={MAX_COUNT}")
    if items > MAX_ITEMS:
        raise InvalidInput(f"items is {items}, expected 0..={MAX_ITEMS}")
    if rate > MAX_RATE:
        raise InvalidInput(f"rate is {rate}, expected 0 (as fast as possible) ..={MAX_RATE}")


def validate_subscribe(r) -> None:
    validate_feed(r.count, r.items, r.rate)


def validate_poll(r) -> None:
    validate_feed(r.count, r.items, r.rate)
    if not 1 <= r.max <= MAX_PAGE_EVENTS:
        raise InvalidInput(f"max is {r.max}, expected 1..={MAX_PAGE_EVENTS}")
    if r.after > r.count:
        raise InvalidInput(f"after is {r.after}, beyond the feed's count {r.count}")
    if r.start_ns < 0 or (r.rate > 0 and r.start_ns == 0):
        raise InvalidInput(f"startNs is {r.start_ns}, expected the feed's start in ns since the "
                           "Unix epoch (> 0 when rate > 0)")


# ---------------------------------------------------------------- query strings

def _parse_query(query: str, names: tuple[str, ...]) -> list[int | None]:
    """The raw query (not percent-decoded: every accepted name and value is
    plain ASCII) as one value per name; unknown, repeated and non-integer
    parameters are refused naming them."""
    values: list[int | None] = [None] * len(names)
    for pair in query.split("&"):
        if not pair:
            continue
        name, _, value = pair.partition("=")
        if name not in names:
            raise InvalidInput(f"unknown query parameter {name[:40]!r}; expected {', '.join(names)}")
        i = names.index(name)
        if values[i] is not None:
            raise InvalidInput(f"query parameter {name} is given twice")
        if not (value and len(value) <= 20 and value.isascii() and value.isdigit()) or int(value) >= 2**64:
            raise InvalidInput(f"query parameter {name} is {value[:40]!r}, "
                               "expected a non-negative decimal integer")
        values[i] = int(value)
    return values


def _u32(name: str, value: int | None) -> int:
    v = value or 0
    if v >= 2**32:
        raise InvalidInput(f"{name} is {v}, too large")
    return v


def subscribe_from_query(query: str):
    v = _parse_query(query, ("count", "items", "rate"))
    r = spb.SubscribeRequest(count=_u32("count", v[0]), items=_u32("items", v[1]), rate=_u32("rate", v[2]))
    validate_subscribe(r)
    return r


def poll_from_query(query: str):
    v = _parse_query(query, ("count", "items", "rate", "startNs", "after", "max"))
    start_ns = v[3] or 0
    if start_ns >= 2**63:
        raise InvalidInput(f"startNs is {start_ns}, too large")
    r = spb.PollRequest(count=_u32("count", v[0]), items=_u32("items", v[1]), rate=_u32("rate", v[2]),
                        start_ns=start_ns, after=_u32("after", v[4]), max=_u32("max", v[5]))
    validate_poll(r)
    return r


# ---------------------------------------------------------------- the feed

def offset_ns(seq: int, rate: int) -> int:
    """Event `seq`'s offset from the feed's start: floor((seq - 1) * 1e9 / rate)."""
    if rate == 0 or seq == 0:
        return 0
    return (seq - 1) * 1_000_000_000 // rate


async def sleep_ns(ns: int) -> None:
    """At least `ns` nanoseconds (the loop's timers have millisecond
    resolution: rounded up, never short)."""
    end = time.monotonic_ns() + ns
    while (left := end - time.monotonic_ns()) > 0:
        await asyncio.sleep(-(-left // 1_000_000) / 1000)


class Feed:
    """The events of one subscription still to send, from the event after
    `after` (an SSE client's Last-Event-ID; that first one is due at once).
    The schedule is anchored when the feed is made (after admission)."""

    def __init__(self, count: int, items: int, rate: int, after: int = 0):
        self.count, self.items, self.rate = count, items, rate
        self.base = time.monotonic_ns()
        self.base_ns = time.time_ns()
        self.skew = offset_ns(after + 1, rate)
        self.next = after + 1

    def wait_ns(self) -> int:
        """How long until the next event is due (<= 0: now; 0 after the last)."""
        if self.rate == 0 or self.next > self.count:
            return 0
        return self.base + offset_ns(self.next, self.rate) - self.skew - time.monotonic_ns()

    def take(self) -> tuple[int, int] | None:
        """The next event's (seq, scheduledNs), to be called once it is due;
        None after the last. A late event keeps its scheduled stamp."""
        seq = self.next
        if seq > self.count:
            return None
        self.next += 1
        if self.rate == 0:
            return seq, time.time_ns()
        return seq, self.base_ns + offset_ns(seq, self.rate) - self.skew

    async def next_event(self) -> tuple[int, int] | None:
        """take(), once due. Cancel-safe: a cancelled wait takes nothing."""
        wait = self.wait_ns()
        if wait > 0:
            await sleep_ns(wait)
        return self.take()


def page(r, now_ns: int) -> tuple[list[tuple[int, int]], bool]:
    """A poll's page of `r` (validated) at `now_ns`: the due events after
    `r.after` as (seq, scheduledNs), at most `r.max` and 16,384 items (but at
    least one), and whether it holds the feed's last event."""
    by_items = max(1, MAX_PAGE_ITEMS // r.items) if r.items else 2**32
    last = min(r.count, r.after + min(r.max, by_items))
    events = []
    for seq in range(r.after + 1, last + 1):
        if r.rate == 0:
            stamp = now_ns
        else:
            stamp = r.start_ns + offset_ns(seq, r.rate)
            if stamp > now_ns:
                break
        events.append((seq, stamp))
    done = (bool(events) and events[-1][0] == r.count) or r.after == r.count
    return events, done


class FeedData:
    """The dataset's items, in the two forms an event is built from (each
    made on first use: the REST process needs both, gRPC only protobuf)."""

    def __init__(self, dataset_path: str):
        self._path = dataset_path

    @functools.cached_property
    def _items_json(self) -> list:
        return load_dataset(self._path)["items"]

    @functools.cached_property
    def pb_items(self) -> list:
        lst = json_format.ParseDict({"items": self._items_json}, pb.ItemList())
        return list(lst.items)

    @functools.cached_property
    def model_items(self) -> list:
        return [ItemModel.model_validate(i) for i in self._items_json]

    @staticmethod
    def select(all_items: list, seq: int, items: int) -> list:
        """Items ((seq - 1) * items + j) mod 1395 for j = 0..items."""
        n = len(all_items)
        start = (seq - 1) * items % n
        end = start + items
        if end <= n:
            return all_items[start:end]
        return all_items[start:] + all_items[:end - n]

    def event_pb(self, seq: int, items: int, stamp: int):
        return spb.FeedEvent(seq=seq, scheduled_ns=stamp, items=self.select(self.pb_items, seq, items))

    def event_model(self, seq: int, items: int, stamp: int):
        return FeedEventModel.model_construct(
            seq=seq, scheduledNs=stamp, items=self.select(self.model_items, seq, items))

    def event_json(self, seq: int, items: int, stamp: int) -> bytes:
        return to_json(self.event_model(seq, items, stamp))

    def page_pb(self, r, now_ns: int):
        events, done = page(r, now_ns)
        return spb.FeedPage(events=[self.event_pb(s, r.items, t) for s, t in events], done=done)

    def page_json(self, r, now_ns: int) -> bytes:
        events, done = page(r, now_ns)
        return to_json(FeedPageModel.model_construct(
            events=[self.event_model(s, r.items, t) for s, t in events], done=done))


# ---------------------------------------------------------------- upload

class Tally:
    """An upload's summary so far: count, payload bytes, FNV-1a checksum."""

    __slots__ = ("count", "bytes", "checksum")

    def __init__(self):
        self.count = 0
        self.bytes = 0
        self.checksum = FNV_OFFSET

    def add(self, payload: str) -> bool:
        """False (nothing added) past MAX_STREAM_MESSAGES messages."""
        if self.count >= MAX_STREAM_MESSAGES:
            return False
        data = payload.encode("utf-8")
        self.count += 1
        self.bytes += len(data)
        h = self.checksum
        for b in data:
            h = ((h ^ b) * FNV_PRIME) & 0xFFFFFFFF
        self.checksum = h
        return True

    def summary_pb(self):
        return spb.UploadSummary(count=self.count, bytes=self.bytes, checksum=self.checksum)

    def summary_json(self) -> bytes:
        return to_json(UploadSummaryModel.model_construct(
            count=self.count, bytes=self.bytes, checksum=self.checksum))


# ---------------------------------------------------------------- encodings

_ADAPTERS: dict[type, TypeAdapter] = {}


def to_json(value) -> bytes:
    """A message's canonical JSON (as the REST responses are written)."""
    cls = type(value)
    adapter = _ADAPTERS.get(cls)
    if adapter is None:
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter.dump_json(value, by_alias=True, exclude_none=True)


class Decoded(NamedTuple):
    """A StreamMessage or SubscribeRequest's fields, from either encoding."""

    seq: int = 0
    payload: str = ""
    count: int = 0
    items: int = 0
    rate: int = 0


def decode(kind: str, data: bytes | str, binary: bool) -> Decoded:
    """`kind` ("StreamMessage" or "SubscribeRequest") from a binary frame's
    protobuf or a text frame's JSON; raises InvalidInput saying what is wrong."""
    if binary:
        cls = spb.StreamMessage if kind == "StreamMessage" else spb.SubscribeRequest
        try:
            m = cls.FromString(data)
        except Exception:
            raise InvalidInput(f"the binary frame is not a protobuf {kind}") from None
        if kind == "StreamMessage":
            return Decoded(seq=m.seq, payload=m.payload)
        return Decoded(count=m.count, items=m.items, rate=m.rate)
    from .rest_ops import validation_message
    import json

    try:
        obj = json.loads(data)
    except ValueError:
        raise InvalidInput(f"the text frame is not JSON (a {kind} was expected)") from None
    mdl = StreamMessageModel if kind == "StreamMessage" else SubscribeRequestModel
    try:
        m = mdl.model_validate(obj, from_attributes=True)
    except ValidationError as e:
        raise InvalidInput(f"the text frame is not a {kind}: "
                           f"{validation_message(e.errors(include_url=False))}") from None
    if kind == "StreamMessage":
        return Decoded(seq=m.seq, payload=m.payload)
    return Decoded(count=m.count, items=m.items, rate=m.rate)


def message_json(seq: int, payload: str) -> bytes:
    return to_json(StreamMessageModel.model_construct(seq=seq, payload=payload))


def message_pb(seq: int, payload: str) -> bytes:
    return spb.StreamMessage(seq=seq, payload=payload).SerializeToString()
