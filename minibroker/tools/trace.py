"""`--trace`: one line per request and one per response, decoded, for watching the protocol.

    -> ApiVersions v3 corr=1 client=rdkafka 45 B {client_software_name: 'librdkafka', ...}
    <- ApiVersions v3 corr=1 512 B 0.2 ms {error_code: 0, api_keys: [...]}

Record data is summarised as batches (base offset, count, codec, bytes) instead of being printed.
`--trace-format json` prints one JSON object per line for tools; `--trace-bytes` adds an annotated
hex view of the request frame. Tracing reads record data that would otherwise go out by sendfile,
so it costs speed: it is a teaching and debugging tool.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, TextIO

from protocol.records.batch import BatchView, InvalidBatch, iter_batches
from protocol.schema import Message

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_MAX_LIST = 8


def summarize_records(data: Any) -> Any:
    """Batches in a records field, without decoding records."""
    if data is None:
        return None
    if not isinstance(data, (bytes, bytearray, memoryview)):
        data = data.read_all()  # a FileRegion on its way to sendfile
    batches = []
    try:
        for view in iter_batches(data):
            batches.append(_batch(view))
    except InvalidBatch as e:
        batches.append({"invalid": str(e)})
    return {"bytes": len(data), "batches": batches}


def _batch(view: BatchView) -> dict[str, Any]:
    return {"base_offset": view.base_offset, "last_offset": view.last_offset, "count": view.records_count,
            "magic": view.magic, "codec": CODECS.get(view.compression, view.compression), "size": view.size}


def to_plain(value: Any, field_type: str | None = None) -> Any:
    if isinstance(value, Message):
        out = {}
        for f in value._fields:
            v = getattr(value, f.name)
            out[f.name] = summarize_records(v) if f.base == "records" else to_plain(v)
        return out
    if isinstance(value, list):
        return [to_plain(v) for v in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        b = bytes(value)
        return b.hex() if len(b) <= 32 else f"<{len(b)} bytes>"
    return value


def _short(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        items = [_short(v) for v in value[:_MAX_LIST]]
        if len(value) > _MAX_LIST:
            items.append(f"... {len(value) - _MAX_LIST} more")
        return "[" + ", ".join(items) + "]"
    return repr(value)


def hexdump(data: bytes, width: int = 16) -> str:
    lines = []
    for i in range(0, len(data), width):
        chunk = data[i:i + width]
        hx = " ".join(f"{b:02x}" for b in chunk)
        asc = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"    {i:08x}  {hx:<{width * 3}} {asc}")
    return "\n".join(lines)


class Tracer:
    def __init__(self, out: TextIO, *, fmt: str = "text", with_bytes: bool = False):
        self.out = out
        self.fmt = fmt
        self.with_bytes = with_bytes

    def request(self, ctx: Any, request: Any, response: Any, frame: bytes, started: float) -> None:
        h = ctx.header
        api = ctx.broker.handlers[h.api_key].api
        ms = (time.perf_counter() - started) * 1000
        req = to_plain(request)
        resp = to_plain(response) if response is not None else None
        if self.fmt == "json":
            self.out.write(json.dumps({
                "api": api.name, "version": h.api_version, "correlation_id": h.correlation_id,
                "client_id": h.client_id, "request_bytes": len(frame) + 4, "request": req,
                "response": resp, "latency_ms": round(ms, 3),
            }, default=str) + "\n")
        else:
            self.out.write(f"-> {api.name} v{h.api_version} corr={h.correlation_id} client={h.client_id} "
                           f"{len(frame) + 4} B {_short(req)}\n")
            if self.with_bytes:
                self.out.write(hexdump(len(frame).to_bytes(4, "big") + frame) + "\n")
            if resp is None:
                self.out.write(f"<- {api.name} v{h.api_version} corr={h.correlation_id} (no response: acks=0)\n")
            else:
                self.out.write(f"<- {api.name} v{h.api_version} corr={h.correlation_id} {ms:.1f} ms "
                               f"{_short(resp)}\n")
        self.out.flush()
