"""Shared helpers for the real-client integration tests (issue 12).

- `module_broker`: one in-process broker for all tests of a module (tests use unique topic names).
- `create_topic`, `stored_records`: set up and inspect the broker directly through `BrokerThread.call`,
  so a client test checks what the client saw against what the broker stored, not against itself.
- `RawClient`: a blocking socket speaking the wire protocol with `minibroker_protocol.codec`, for what no
  client lets us do (acks=0 ordering, bad frames, unsupported versions).
- `Deadline` / `poll_*`: every wait in these tests is bounded.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from minibroker.testing import BrokerThread
from minibroker_protocol.codec import decode, encode
from minibroker_protocol.headers import RequestHeader, encode_request_header, response_header_version
from minibroker_protocol.records.v2 import DecodedRecord, Record, build_batch, decode_batches
from tests.helpers import TEST_OVERRIDES

TIMEOUT = 20.0  # seconds any single wait in these tests may take before it fails


def unique(prefix: str) -> str:
    """A topic name no other test of the shared broker uses."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@contextlib.contextmanager
def module_broker(tmp_path_factory: Any, overrides: dict[str, Any] | None = None) -> Iterator[BrokerThread]:
    data = tmp_path_factory.mktemp("broker") / "data"
    with BrokerThread(data, overrides={**TEST_OVERRIDES, **(overrides or {})}) as b:
        yield b


def create_topic(b: BrokerThread, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
    """Create a topic on the broker's loop, validated as CreateTopics would."""

    def make(broker: Any) -> None:
        overrides = broker.topics.check_new_topic(name, partitions, 1, dict(configs or {}))
        broker.create_topic(name, partitions, overrides)

    b.call(make)


def topic_names(b: BrokerThread) -> set[str]:
    return b.call(lambda broker: set(broker.topics))


def stored_records(b: BrokerThread, topic: str, partition: int = 0) -> list[DecodedRecord]:
    """Every record of a partition up to its high watermark, decoded from the segment bytes."""

    def read(broker: Any) -> bytes:
        lg = broker.get_log(topic, partition)
        out, offset = bytearray(), lg.log_start_offset
        while offset < lg.high_watermark:
            info = lg.read(offset, 1 << 20)
            if info.region is None or not info.region.size:
                break
            data = info.region.read_all()
            out += data
            last = None
            for batch in decode_batches(data):
                last = batch
            assert last is not None
            offset = last.next_offset
        return bytes(out)

    return [r for batch in decode_batches(b.call(read)) for r in batch.records]


def stored_batches(b: BrokerThread, topic: str, partition: int = 0) -> list[Any]:
    def read(broker: Any) -> bytes:
        lg = broker.get_log(topic, partition)
        info = lg.read(lg.log_start_offset, 64 << 20)
        return info.region.read_all() if info.region is not None else b""

    return list(decode_batches(b.call(read)))


def offsets(b: BrokerThread, topic: str, partition: int = 0) -> tuple[int, int]:
    """(log start offset, high watermark)."""
    return b.call(lambda broker: (broker.get_log(topic, partition).log_start_offset,
                                  broker.get_log(topic, partition).high_watermark))


class Deadline:
    def __init__(self, seconds: float = TIMEOUT):
        self.end = time.monotonic() + seconds

    @property
    def left(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def __bool__(self) -> bool:
        return time.monotonic() < self.end


def wait_until(pred: Any, timeout: float = TIMEOUT, what: str = "condition") -> None:
    d = Deadline(timeout)
    while d:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


# -- records -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rec:
    """What a test expects to read back: one record as the clients see it."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int | None = None


CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
PARTITIONS = 8


def sample_records(partition: int, *, null_header_value: bool = True) -> list[Rec]:
    """The records every client test writes to one partition: keys, null key, tombstone, empty
    key and value, repeated and null-valued headers, a large compressible value, and explicit
    timestamps (distinct per partition so a mix-up shows). kafka-python refuses a header whose
    value is None, hence `null_header_value`."""
    ts = 1_600_000_000_000 + partition * 1_000
    null_header = (("null", None),) if null_header_value else ()
    return [
        Rec(b"key-%d" % partition, b"value-%d" % partition, (("trace", b"abc"),), ts),
        Rec(None, b"null key on %d" % partition, (), ts + 1),
        Rec(b"tombstone-%d" % partition, None, (), ts + 2),
        Rec(b"", b"", (("dup", b"1"), ("dup", b"2"), ("empty", b""), ("utf8-\u00e9", b"\xff\x00"))
            + null_header, ts + 3),
        Rec(b"big", b"0123456789abcdef" * 4096, (), ts + 4),
    ]


def as_stored(r: DecodedRecord) -> Rec:
    return Rec(r.key, r.value, tuple(r.headers), r.timestamp)


def records_batch(values: list[bytes | None], *, base_timestamp: int = 1_000, keys: list[bytes | None] | None = None,
                  compression: int = 0) -> bytes:
    """A RecordBatch v2 holding `values` (offset deltas 0..n-1, timestamps base+i)."""
    keys = keys or [None] * len(values)
    recs = [Record(timestamp_delta=i, offset_delta=i, key=k, value=v) for i, (k, v) in enumerate(zip(keys, values, strict=True))]
    return build_batch(recs, base_timestamp=base_timestamp, compression=compression)


# -- confluent-kafka ---------------------------------------------------------------------------


def confluent_consume(consumer: Any, n: int, timeout: float = TIMEOUT) -> list[Any]:
    """Poll until `n` messages arrived (fails on an error or the deadline)."""
    got: list[Any] = []
    d = Deadline(timeout)
    while len(got) < n and d:
        msg = consumer.poll(min(0.5, d.left))
        if msg is None:
            continue
        if msg.error():
            raise AssertionError(f"consumer error: {msg.error()}")
        got.append(msg)
    assert len(got) == n, f"consumed {len(got)} of {n} messages in {timeout}s"
    return got


# -- raw protocol ------------------------------------------------------------------------------


class RawClient:
    """One blocking TCP connection speaking Kafka's framing with our codec."""

    def __init__(self, bootstrap: str, timeout: float = 10.0, client_id: str | None = "it-raw"):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.client_id = client_id
        self._correlation = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def next_correlation_id(self) -> int:
        self._correlation += 1
        return self._correlation

    def request_bytes(self, api: Any, version: int, body: Any, correlation_id: int) -> bytes:
        """The whole frame (size prefix included) for a request."""
        out = bytearray()
        encode_request_header(out, RequestHeader(api.key, version, correlation_id, self.client_id))
        out += encode(api.request, version, body).to_bytes()
        return struct.pack(">i", len(out)) + bytes(out)

    def send(self, api: Any, version: int, body: Any) -> int:
        cid = self.next_correlation_id()
        self.sock.sendall(self.request_bytes(api, version, body, cid))
        return cid

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_frame(self) -> bytes:
        """One response frame without its size prefix; EOFError when the broker closed."""
        size = struct.unpack(">i", self._recv_exactly(4))[0]
        return self._recv_exactly(size)

    def _recv_exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise EOFError(f"connection closed after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)

    def recv(self, api: Any, version: int) -> tuple[int, Any]:
        """(correlation id, decoded response body) of the next response."""
        frame = self.recv_frame()
        cid = struct.unpack_from(">i", frame, 0)[0]
        pos = 4 + (1 if response_header_version(api.key, version) >= 1 else 0)
        return cid, decode(api.response, version, frame, pos)

    def call(self, api: Any, version: int, body: Any) -> Any:
        cid = self.send(api, version, body)
        got, resp = self.recv(api, version)
        assert got == cid, f"correlation id {got}, expected {cid}"
        return resp

    def closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True if the broker closes the connection within `timeout` (reading nothing else)."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1 << 16)
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        return data == b""
