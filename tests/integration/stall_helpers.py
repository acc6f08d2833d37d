"""A well-behaved client that keeps asking for Metadata while an attack runs (issue 30): the
stall tests and bench/memory_attack.py measure how long its answers took."""

from __future__ import annotations

import struct
import threading
import time

from minibroker_protocol.apis import metadata
from minibroker_protocol.records.batch import crc32c
from minibroker_protocol.records.compression import Codec, compress
from minibroker_protocol.records.v2 import MAGIC, build_batch
from tests.integration.helpers import RawClient


class MetadataProbe:
    """One connection sending Metadata v1 (no topics) back to back on a thread; `worst` is the
    longest wait for an answer (an unanswered request counts from when it was sent until `stop`)."""

    def __init__(self, bootstrap: str, timeout: float = 60.0):
        self.bootstrap = bootstrap
        self.timeout = timeout
        self.answers = 0
        self.latencies: list[float] = []
        self.error: BaseException | None = None
        self._sent_at: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="metadata-probe")

    def __enter__(self) -> MetadataProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            with RawClient(self.bootstrap, timeout=self.timeout) as raw:
                while not self._stop.is_set():
                    self._sent_at = time.monotonic()
                    resp = raw.call(metadata.API, 1, metadata.REQUEST(topics=[]))
                    assert resp.brokers, resp
                    self.latencies.append(time.monotonic() - self._sent_at)
                    self._sent_at = None
                    self.answers += 1
                    time.sleep(0.02)
        except (OSError, EOFError, AssertionError) as e:  # a socket timeout is an OSError
            self.error = e

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(self.timeout + 5)

    @property
    def worst(self) -> float:
        """The longest wait for an answer so far, counting the one still awaited."""
        pending = time.monotonic() - self._sent_at if self._sent_at is not None else 0.0
        return max([pending, *self.latencies])

    def summary(self) -> str:
        return f"{self.answers} Metadata answers, worst wait {self.worst * 1000:.0f} ms" + (
            f", failed: {self.error!r}" if self.error else "")


def _zigzag_varint(v: int) -> bytes:
    v = (v << 1) ^ (v >> 63)
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def tiny_records_batch(count: int, codec: int = 4) -> bytes:
    """A RecordBatch v2 of `count` empty records (null key, empty value, offsetDelta counting up
    as clients write it), compressed with `codec` (4: zstd): a few KB on the wire for millions of
    records, the compressed batch of issue 30's finding 3."""

    parts = []
    for i in range(count):
        body = b"\x00\x00" + _zigzag_varint(i) + b"\x01\x00\x00"
        parts.append(_zigzag_varint(len(body)) + body)
    records = compress(Codec(codec), b"".join(parts), magic=MAGIC)
    empty = build_batch([], base_timestamp=0, compression=0, last_offset_delta=count - 1)
    return _with_records(empty, records, count, codec)


def _with_records(empty: bytes, records: bytes, count: int, codec: int) -> bytes:

    out = bytearray(empty) + records
    struct.pack_into(">i", out, 8, len(out) - 12)  # batchLength
    struct.pack_into(">h", out, 21, codec)  # attributes: the compression codec
    struct.pack_into(">i", out, 57, count)  # recordsCount
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


def constant_records_batch(count: int, codec: int = 4) -> bytes:
    """A RecordBatch v2 of `count` identical empty records (offsetDelta 0 in each) compressed with
    `codec` (4: zstd, about 5 KB for 7.5 M records, just under the 64 MiB decompressed cap; issue 30, findings 3
    and 5)."""

    records = compress(Codec(codec), bytes.fromhex("0c000000010000") * count, magic=MAGIC)
    return _with_records(build_batch([], base_timestamp=0, last_offset_delta=count - 1), records, count, codec)
