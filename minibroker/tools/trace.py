"""`--trace`: one line per request and one per response, decoded, for watching the protocol.

    -> ApiVersions v3 corr=1 client=rdkafka 40 B {client_software_name: 'librdkafka', ...}
    <- ApiVersions v3 corr=1 client=rdkafka 446 B 0.2 ms {error_code: 0, api_keys: [...]}

Only the fields that exist in the version on the wire are shown. Record data is summarised as
batches (base offset, count, codec, bytes) instead of being printed. `--trace-format json` prints
one JSON object per request/response pair for tools; `--trace-bytes` adds an annotated hex view of
the request frame: the size prefix, each header field, the body, and inside it every RecordBatch
v2 header field and every record's fields (length, attributes, timestamp and offset deltas, key,
value, headers), which is how seed 002's 76-byte record adds up (61 bytes of batch header + 15).

Theory of operation: the dispatcher (minibroker.kafka_apis.KafkaApis) calls its one tracer hook
once the handler has answered and before the response is encoded. Several listeners share that hook through `TraceListeners` (the
stderr `Tracer` and the web console's live trace, minibroker.console): the broker's hook is set
while at least one listener is attached and cleared when the last one goes, so a broker nobody
watches pays nothing. `trace_entry` is the one decoded form (a JSON-ready dict) both print; it
encodes the response once more to learn its size, so tracing costs time (and reads record data
that would otherwise go out by sendfile). It is a teaching and debugging tool; a listener's error
is logged, never passed to the client.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator
from enum import IntEnum
from typing import NotRequired, Protocol, TextIO, TypedDict, cast

from minibroker.tools.trace_redact import Redaction
from minibroker_protocol.apis import APIS
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.headers import RequestHeader, decode_request_header, encode_response_frame
from minibroker_protocol.records.batch import BatchView, InvalidBatch, iter_batches
from minibroker_protocol.schema import BaseRecords, Message

log = logging.getLogger("minibroker.trace")

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_MAX_LIST = 8


class TracedBatch(TypedDict):
    base_offset: int
    count: int
    codec: str | int  # the codec's name, or its id when unknown
    bytes: int


class InvalidBatchNote(TypedDict):
    invalid: str  # why the rest of the records field does not parse


class RecordsSummary(TypedDict):
    bytes: int
    batches: list[TracedBatch | InvalidBatchNote]


# a message as the trace shows it: fields by name, records fields summarised, bytes as hex
PlainValue = (None | bool | int | float | str | RecordsSummary | list["PlainValue"]
              | dict[str, "PlainValue"])


class TraceEntry(TypedDict):
    """One request and its response, decoded (the `--trace-format json` line, a live-trace event)."""

    api: str
    api_key: int
    version: int
    correlation_id: int
    client_id: str | None
    request_bytes: int
    request: PlainValue
    response_bytes: int | None  # None: no response (acks=0)
    response: PlainValue
    latency_ms: float
    request_hex: NotRequired[str]  # --trace-bytes with the json format
    redacted: NotRequired[bool]  # the request's secrets were masked (and request_hex withheld)
    seq: NotRequired[int]  # the console's live trace numbers its entries


def summarize_records(data: BaseRecords | None) -> RecordsSummary | None:
    """Batches in a records field, without decoding records."""
    if data is None:
        return None
    if not isinstance(data, (bytes, bytearray, memoryview)):
        data = data.read_all()  # a FileRegion on its way to sendfile
    batches: list[TracedBatch | InvalidBatchNote] = []
    try:
        for view in iter_batches(data):
            batches.append(_batch(view))
    except InvalidBatch as e:
        batches.append({"invalid": str(e)})
    return {"bytes": len(data), "batches": batches}


def _batch(view: BatchView) -> TracedBatch:
    return {"base_offset": view.base_offset, "count": view.records_count,
            "codec": CODECS.get(view.compression, view.compression), "bytes": view.size}


def to_plain(value: object, version: int | None = None) -> PlainValue:
    """A message as dicts and lists, keeping the fields of `version` (all fields if None)."""
    if isinstance(value, Message):
        out: dict[str, PlainValue] = {}
        for f in value._fields:
            if version is not None and version not in f.versions:
                continue
            v = getattr(value, f.name)
            out[f.name] = summarize_records(v) if f.base == "records" else to_plain(v, version)
        return out
    if isinstance(value, (list, tuple)):  # an array field (a handler may answer with a tuple)
        return [to_plain(v, version) for v in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, IntEnum):
        return int(value)  # handlers answer with ErrorCode members or plain ints: print them alike
    if isinstance(value, (bytes, bytearray, memoryview)):
        b = bytes(value)
        return b.hex() if len(b) <= 32 else f"<{len(b)} bytes>"
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)  # no message field holds anything else; json.dumps(default=str) printed it so


def _error_name(code: int | None) -> str:
    try:
        return f"{code} ({ErrorCode(code).name})" if code else repr(code)
    except ValueError:
        return repr(code)


def _short(value: object) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_error_name(v) if k == 'error_code' else _short(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, list):
        items = [_short(v) for v in value[:_MAX_LIST]]
        if len(value) > _MAX_LIST:
            items.append(f"... {len(value) - _MAX_LIST} more")
        return "[" + ", ".join(items) + "]"
    return repr(value)


# -- annotated hex ----------------------------------------------------------------------------------
_BATCH_FIELDS = [("baseOffset", 8), ("batchLength", 4), ("partitionLeaderEpoch", 4), ("magic", 1), ("crc", 4),
                 ("attributes", 2), ("lastOffsetDelta", 4), ("baseTimestamp", 8), ("maxTimestamp", 8),
                 ("producerId", 8), ("producerEpoch", 2), ("baseSequence", 4), ("recordsCount", 4)]
_SPAN_BYTES = 12  # bytes shown per line; longer spans continue on the next lines
_SPAN_LINES = 2  # lines shown of a long span, then how many bytes were left out
_FULL_RECORDS = 2  # records of a batch annotated field by field


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise IndexError("varint runs past the end")
        b = buf[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, pos
        shift += 7


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    v, pos = _uvarint(buf, pos)
    return (v >> 1) ^ -(v & 1), pos


def _record_spans(buf: bytes, pos: int, end: int, count: int) -> Iterator[tuple[int, int, str]]:
    """Field spans of the `count` uncompressed records in buf[pos:end] (RecordBatch v2 records);
    the first `_FULL_RECORDS` field by field, the rest as one span."""
    for i in range(count):
        if pos >= end:
            return
        if i == _FULL_RECORDS and count > i:
            yield pos, end, f"records {i}-{count - 1}"
            return
        start = pos
        length, p = _varint(buf, pos)
        yield pos, p, f"record {i}: length = {length}"
        rec_end = p + length
        yield p, p + 1, f"  attributes = {buf[p]}"
        p += 1
        for name in ("timestampDelta", "offsetDelta"):
            v, q = _varint(buf, p)
            yield p, q, f"  {name} = {v}"
            p = q
        for name in ("key", "value"):
            n, q = _varint(buf, p)
            yield p, q, f"  {name}Length = {n}"
            p = q
            if n > 0:
                shown = bytes(buf[p:p + min(n, 16)])
                yield p, p + n, f"  {name} = {shown!r}" + ("..." if n > 16 else "")
                p += n
        nh, q = _varint(buf, p)
        yield p, q, f"  headers count = {nh}"
        p = q
        if p < rec_end:
            yield p, rec_end, "  headers"
        pos = rec_end if rec_end > start else end


def _batch_spans(frame: bytes, start: int, data: bytes) -> Iterator[tuple[int, int, str]]:
    try:
        views = list(iter_batches(data))
    except InvalidBatch:
        return
    for n, view in enumerate(views):
        base = start + view.pos
        if view.magic != 2:
            yield base, base + view.size, f"batch {n}: magic {view.magic} message set ({view.size} bytes)"
            continue
        p = base
        for name, size in _BATCH_FIELDS:
            v = int.from_bytes(frame[p:p + size], "big", signed=name not in ("crc",))
            label = f"batch {n}: {name} = {v}" if name == "baseOffset" else f"  {name} = {v}"
            if name == "attributes":
                label += f" (codec {CODECS.get(v & 7, v & 7)})"
            yield p, p + size, label
            p += size
        end = base + view.size
        if view.compression == 0:
            try:
                yield from _record_spans(frame, p, end, view.records_count)
                continue
            except IndexError:
                pass
        yield p, end, f"  records ({CODECS.get(view.compression, '?')}, {end - p} bytes)"


def batch_field_spans(data: bytes) -> list[tuple[int, int, str]]:
    """(start, end, label) of every header field of the batches in `data` and of the first records'
    fields (the web console's byte view of a stored batch)."""
    return list(_batch_spans(data, 0, data))


def _records_fields(msg: object) -> Iterator[bytes]:
    if isinstance(msg, Message):
        for f in msg._fields:
            v = getattr(msg, f.name)
            if f.base == "records" and isinstance(v, (bytes, bytearray, memoryview)) and len(v):
                yield bytes(v)
            elif isinstance(v, (list, Message)):
                yield from _records_fields(v)
    elif isinstance(msg, list):
        for m in msg:
            yield from _records_fields(m)


def _length_prefix(full: bytes, at: int, size: int) -> tuple[int, int] | None:
    """The span of the length that precedes a records field: int32, or an unsigned varint of
    size + 1 in flexible versions (compact bytes)."""
    if at >= 4 and int.from_bytes(full[at - 4:at], "big", signed=True) == size:
        return at - 4, at
    for start in range(at - 1, max(at - 6, -1), -1):
        try:
            v, end = _uvarint(full, start)
        except IndexError:
            continue
        if end == at and v == size + 1:
            return start, at
    return None


def annotated_hex(frame: bytes, header: RequestHeader, header_end: int, request: Message | None = None,
                  api_name: str = "") -> str:
    """The request frame (with its size prefix) as labelled byte spans; bytes no label covers are
    shown as plain body bytes."""
    full = len(frame).to_bytes(4, "big") + bytes(frame)
    spans: list[tuple[int, int, str]] = [(0, 4, f"size = {len(frame)}"), (4, 6, f"api_key = {header.api_key}" + (f" ({api_name})" if api_name else "")),
                                         (6, 8, f"api_version = {header.api_version}"),
                                         (8, 12, f"correlation_id = {header.correlation_id}")]
    cid_len = -1 if header.client_id is None else len(header.client_id.encode())
    cid_end = 14 + max(cid_len, 0)
    spans.append((12, cid_end, f"client_id = {header.client_id!r}"))
    if header_end + 4 > cid_end:
        spans.append((cid_end, header_end + 4, "header tagged fields"))
    search_from = header_end + 4
    for data in _records_fields(request):
        at = full.find(data, search_from)
        if at < 0:
            continue
        prefix = _length_prefix(full, at, len(data))
        if prefix is not None:
            spans.append((*prefix, f"records: {len(data)} bytes follow"))
        spans.extend(_batch_spans(full, at, data))
        search_from = at + len(data)
    spans.sort()
    lines = []
    pos = 0
    for s, e, label in spans + [(len(full), len(full), "")]:
        if s < pos:
            continue  # overlapping span (should not happen): keep the first
        while pos < s:  # unlabelled body bytes
            n = min(_SPAN_BYTES, s - pos)
            lines.append(_hex_line(full, pos, pos + n, "body" if pos >= header_end + 4 else ""))
            pos += n
        if e > s:
            shown = 0
            while pos < e:
                if shown == _SPAN_LINES and e - pos > _SPAN_BYTES:
                    lines.append(f"    {pos:04x}  ... {e - pos} more bytes")
                    pos = e
                    break
                n = min(_SPAN_BYTES, e - pos)
                lines.append(_hex_line(full, pos, pos + n, "" if shown else label))
                shown += 1
                pos += n
    return "\n".join(lines)


def _hex_line(buf: bytes, s: int, e: int, label: str) -> str:
    hx = " ".join(f"{b:02x}" for b in buf[s:e])
    return f"    {s:04x}  {hx:<{_SPAN_BYTES * 3}} {label}".rstrip()


# -- listeners ----------------------------------------------------------------------------------------
class Traced(Protocol):
    """What a trace reads of a request's context (minibroker.handlers.registry.RequestContext)."""

    @property
    def header(self) -> RequestHeader: ...


class TraceListener(Protocol):
    """Called for each answered request (acks=0 produces: `response` is None)."""

    def request(self, ctx: Traced, request: Message, response: Message | None, frame: bytes | bytearray, started: float) -> None: ...


class TraceHook(Protocol):
    """Where the dispatcher looks for its tracer (minibroker.kafka_apis.KafkaApis.tracer)."""

    @property
    def tracer(self) -> object: ...  # only compared with the listeners attached

    @tracer.setter
    def tracer(self, value: TraceListeners | None) -> None: ...


class TraceListeners:
    """The listeners attached to one broker's trace hook; the hook is set only while there are any."""

    def __init__(self, hook: TraceHook) -> None:
        self._hook = hook
        self._listeners: list[TraceListener] = []

    def __len__(self) -> int:
        return len(self._listeners)

    def add(self, listener: TraceListener) -> None:
        self._listeners.append(listener)
        self._hook.tracer = self

    def remove(self, listener: TraceListener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)
        if not self._listeners and self._hook.tracer is self:
            self._hook.tracer = None

    def request(self, ctx: Traced, request: Message, response: Message | None, frame: bytes | bytearray, started: float) -> None:
        for listener in list(self._listeners):
            try:
                listener.request(ctx, request, response, frame, started)
            except Exception:  # noqa: BLE001 - tracing must never fail a request
                log.exception("trace listener failed")


def fired_faults(ctx: Traced) -> tuple[str, ...]:
    """The faults that fired on a request (RequestContext.faults; minibroker.faults)."""
    faults: tuple[str, ...] = getattr(ctx, "faults", ())
    return faults


def trace_entry(ctx: Traced, request: Message, response: Message | None, frame: bytes | bytearray, started: float,
                *, with_hex: bool = False) -> TraceEntry:
    """One request and its response, decoded to the fields of the version on the wire."""
    h = ctx.header
    api = APIS[h.api_key]
    ms = (time.perf_counter() - started) * 1000
    v = h.api_version
    resp_bytes = None
    if response is not None:
        resp_bytes = sum(len(c) for c in encode_response_frame(api, v, h.correlation_id, response))
    # secrets masked as Kafka's request logger does, and more (minibroker.tools.trace_redact)
    redaction = Redaction()
    req = to_plain(request, v)
    redaction.request(h.api_key, req)
    request_masked = redaction.masked  # the request's own bytes hold a secret
    resp = redaction.response(h.api_key, to_plain(response, v)) if response is not None else None
    entry: TraceEntry = {
        "api": api.name, "api_key": h.api_key, "version": v, "correlation_id": h.correlation_id,
        "client_id": h.client_id, "request_bytes": len(frame) + 4, "request": req,
        "response_bytes": resp_bytes, "response": resp,  # type: ignore[typeddict-item]
        "latency_ms": round(ms, 3),
    }
    faults = fired_faults(ctx)
    if faults:  # the faults that changed this request's answer (minibroker.faults)
        cast("dict[str, object]", entry)["faults"] = list(faults)
    if request_masked:
        entry["redacted"] = True  # the request's bytes hold a secret: no hex view of them
    elif with_hex:
        entry["request_hex"] = (len(frame).to_bytes(4, "big") + bytes(frame)).hex()
    return entry


# -- the tracer -------------------------------------------------------------------------------------
class Tracer:
    def __init__(self, out: TextIO, *, fmt: str = "text", with_bytes: bool = False):
        self.out = out
        self.fmt = fmt
        self.with_bytes = with_bytes

    def request(self, ctx: Traced, request: Message, response: Message | None, frame: bytes | bytearray, started: float) -> None:
        try:
            self._request(ctx, request, response, frame, started)
        except Exception:  # noqa: BLE001 - tracing must never fail a request
            log.exception("trace failed")

    def _request(self, ctx: Traced, request: Message, response: Message | None, frame: bytes | bytearray, started: float) -> None:
        h = ctx.header
        entry = trace_entry(ctx, request, response, frame, started, with_hex=self.with_bytes and self.fmt == "json")
        req, resp, resp_bytes, ms = entry["request"], entry["response"], entry["response_bytes"], entry["latency_ms"]
        api_name = entry["api"]
        v = h.api_version
        if self.fmt == "json":
            self.out.write(json.dumps(entry, default=str) + "\n")
        else:
            who = f"{api_name} v{v} corr={h.correlation_id} client={h.client_id}"
            self.out.write(f"-> {who} {len(frame) + 4} B {_short(req)}\n")
            if self.with_bytes and entry.get("redacted"):
                self.out.write("    (bytes withheld: the request carries secrets)\n")
            elif self.with_bytes:
                _, header_end = decode_request_header(frame)
                self.out.write(annotated_hex(bytes(frame), h, header_end, request, api_name) + "\n")
            faults = fired_faults(ctx)
            for fault in faults:
                self.out.write(f"!! {who} {fault}\n")
            if resp is None:
                why = "a fault" if faults else "acks=0"
                self.out.write(f"<- {who} (no response: {why})\n")
            else:
                self.out.write(f"<- {who} {resp_bytes} B {ms:.1f} ms {_short(resp)}\n")
        self.out.flush()
