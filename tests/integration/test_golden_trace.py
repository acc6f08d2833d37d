"""Golden traces: the bytes real clients and the broker exchange, captured on the wire.

A small TCP proxy on 127.0.0.1 sits between client and broker (the broker advertises the proxy's
port, so every connection after bootstrap goes through it too) and records each frame in each
direction. The test then decodes every request and response with minibroker_protocol.codec and checks:
- decode -> encode reproduces the frame byte for byte (header and body), for every API and
  version the client chose: our schemas agree with what librdkafka / kafka-python / aiokafka
  write, and what the broker writes is what our codec reads;
- the Produce request carries what the application sent (acks, topic, partition, keys, values,
  headers, timestamps in a RecordBatch v2) and the response the offsets the client reported.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import struct
import subprocess
import threading
from dataclasses import dataclass
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTopicPartition

from minibroker.testing import BrokerThread
from minibroker_protocol.apis import APIS, api_versions, fetch, produce
from minibroker_protocol.codec import decode_from, encode
from minibroker_protocol.headers import decode_request_header, encode_request_header, response_header_version
from minibroker_protocol.records.v2 import decode_batches
from tests.helpers import TEST_OVERRIDES
from tests.integration.helpers import TIMEOUT, Rec, confluent_consume, create_topic, unique


@dataclass
class Exchange:
    """One request frame and its response frame (None for acks=0), without size prefixes."""

    conn: int
    request: bytes
    response: bytes | None = None

    @property
    def api_key(self) -> int:
        return struct.unpack_from(">h", self.request, 0)[0]

    @property
    def version(self) -> int:
        return struct.unpack_from(">h", self.request, 2)[0]

    @property
    def correlation_id(self) -> int:
        return struct.unpack_from(">i", self.request, 4)[0]


class FrameProxy:
    """Forwards bytes both ways unchanged and records the frames it sees."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.target: tuple[str, int] | None = None
        self._lock = threading.Lock()
        self._frames: list[tuple[int, str, bytes]] = []
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="frame-proxy").start()

    def _accept(self) -> None:
        conn_id = 0
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            assert self.target is not None
            upstream = socket.create_connection(self.target, timeout=TIMEOUT)
            upstream.settimeout(None)
            with self._lock:
                self._sockets += [client, upstream]
            conn_id += 1
            for src, dst, direction in ((client, upstream, "request"), (upstream, client, "response")):
                threading.Thread(target=self._pump, args=(src, dst, conn_id, direction), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, conn_id: int, direction: str) -> None:
        buf = bytearray()
        try:
            while data := src.recv(1 << 16):
                # Record before forwarding, so a request is always recorded before its response.
                buf += data
                while len(buf) >= 4 and len(buf) >= 4 + (size := struct.unpack_from(">i", buf)[0]):
                    with self._lock:
                        self._frames.append((conn_id, direction, bytes(buf[4:4 + size])))
                    del buf[:4 + size]
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def exchanges(self) -> list[Exchange]:
        """Requests paired with their responses by connection and correlation id."""
        with self._lock:
            frames = list(self._frames)
        out: list[Exchange] = []
        pending: dict[tuple[int, int], Exchange] = {}
        for conn, direction, frame in frames:
            cid = struct.unpack_from(">i", frame, 4 if direction == "request" else 0)[0]
            if direction == "request":
                ex = Exchange(conn, frame)
                out.append(ex)
                pending[(conn, cid)] = ex
            else:
                pending.pop((conn, cid)).response = frame
        return out

    def clear(self) -> None:
        with self._lock:
            self._frames.clear()

    def close(self) -> None:
        self._closed = True
        self.listener.close()
        with self._lock:
            for s in self._sockets:
                s.close()


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """(broker, proxy): a broker whose advertised address is the proxy."""
    proxy = FrameProxy()
    overrides = {**TEST_OVERRIDES, "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"}
    with BrokerThread(tmp_path_factory.mktemp("golden") / "data", overrides=overrides) as b:
        proxy.target = ("127.0.0.1", b._inner.server.port)
        yield b, proxy
    proxy.close()


@pytest.fixture
def proxy(traced):
    b, p = traced
    p.clear()
    return p


def bootstrap(traced) -> str:
    return f"127.0.0.1:{traced[1].port}"


# -- round trips -------------------------------------------------------------------------------


def assert_request_round_trips(ex: Exchange) -> Any:
    """Decode the request frame and encode it again: the same bytes. Returns the body."""
    api = APIS[ex.api_key]
    header, pos = decode_request_header(ex.request)
    body, end = decode_from(api.request, header.api_version, ex.request, pos)
    again = bytearray()
    encode_request_header(again, header)
    again += encode(api.request, header.api_version, body).to_bytes()
    # Kafka ignores bytes after a body; librdkafka 2.16 appends 3 to an all-topics Metadata v12
    # (see KafkaApis.handle). Anything else trailing is a schema mismatch.
    trailing = ex.request[end:]
    if trailing:
        assert (api.name, header.api_version, len(trailing)) == ("Metadata", 12, 3), (api.name, trailing)
    assert bytes(again) == ex.request[:end], f"{api.name} v{header.api_version} request does not round-trip"
    return body


def assert_response_round_trips(ex: Exchange) -> Any:
    api = APIS[ex.api_key]
    assert ex.response is not None, f"{api.name} got no response"
    hv = response_header_version(ex.api_key, ex.version)
    pos = 4 + (1 if hv >= 1 else 0)
    assert struct.unpack_from(">i", ex.response)[0] == ex.correlation_id
    if hv >= 1:
        assert ex.response[4] == 0  # no tagged fields in our response headers
    body, end = decode_from(api.response, ex.version, ex.response, pos)
    assert end == len(ex.response), f"{api.name} v{ex.version}: {len(ex.response) - end} bytes after the body"
    again = ex.response[:pos] + encode(api.response, ex.version, body).to_bytes()
    assert again == ex.response, f"{api.name} v{ex.version} response does not round-trip"
    return body


def check_all(exchanges: list[Exchange]) -> list[tuple[Exchange, Any, Any]]:
    out = []
    for ex in exchanges:
        req = assert_request_round_trips(ex)
        resp = assert_response_round_trips(ex) if ex.response is not None else None
        out.append((ex, req, resp))
    return out


def names(exchanges: list[Exchange]) -> set[str]:
    return {APIS[ex.api_key].name for ex in exchanges}


# -- tests -------------------------------------------------------------------------------------

SENT = [
    Rec(b"k1", b"first", (("h", b"1"),), 1_000),
    Rec(None, b"null key", (), 2_000),
    Rec(b"tomb", None, (("why", b"deleted"), ("none", None)), 3_000),
]


def test_confluent_produce_request_and_response(traced, proxy):
    b, _ = traced
    topic = unique("golden")
    create_topic(b, topic, 2)
    p = Producer({"bootstrap.servers": bootstrap(traced), "acks": "all", "linger.ms": 50})
    delivered: list = []
    for r in SENT:
        p.produce(topic, key=r.key, value=r.value, headers=list(r.headers), timestamp=r.timestamp, partition=1,
                  on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
    assert p.flush(TIMEOUT) == 0
    assert [err for err, _ in delivered] == [None] * 3

    checked = check_all(proxy.exchanges())
    assert {"ApiVersions", "Metadata", "Produce"} <= names([ex for ex, _, _ in checked])
    # ApiVersions: the response header is v0 even for a flexible request version (KIP-511).
    for ex, _, resp in checked:
        if ex.api_key == api_versions.API.key:
            assert ex.version >= 3 and resp.error_code == 0
    [(ex, req, resp)] = [c for c in checked if c[0].api_key == produce.API.key]

    assert (req.acks, req.transactional_id) == (-1, None)
    [td] = req.topic_data
    [pd] = td.partition_data
    assert (td.name, pd.index) == (topic, 1)
    [batch] = decode_batches(bytes(pd.records))
    assert (batch.magic, batch.base_offset, batch.producer_id, batch.records_count) == (2, 0, -1, 3)
    assert [Rec(r.key, r.value, tuple(r.headers), r.timestamp) for r in batch.records] == SENT

    [tr] = resp.responses
    [pr] = tr.partition_responses
    assert (tr.name, pr.index, pr.error_code, pr.base_offset, pr.log_start_offset) == (topic, 1, 0, 0, 0)
    assert [off for _, off in delivered] == [0, 1, 2]


def test_confluent_consume_fetch_frames(traced, proxy):
    b, _ = traced
    topic = unique("golden-fetch")
    create_topic(b, topic, 1)
    p = Producer({"bootstrap.servers": bootstrap(traced), "linger.ms": 20, "compression.type": "lz4"})
    for i in range(10):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, timestamp=10_000 + i)
    assert p.flush(TIMEOUT) == 0
    c = Consumer({"bootstrap.servers": bootstrap(traced), "group.id": unique("g"), "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100})
    try:
        c.assign([TopicPartition(topic, 0, 4)])
        msgs = confluent_consume(c, 6)
    finally:
        c.close()
    assert [m.offset() for m in msgs] == list(range(4, 10))

    checked = check_all(proxy.exchanges())
    # (The consumer's last long poll may still be open when it closes: no response for it.)
    fetches = [(ex, req, resp) for ex, req, resp in checked if ex.api_key == fetch.API.key and resp is not None]
    assert fetches
    with_data = [(req, resp) for _, req, resp in fetches
                 if any(len(pd.records or b"") for t in resp.responses for pd in t.partitions)]
    req, resp = with_data[0]
    [pd] = [pd for t in resp.responses for pd in t.partitions]
    assert (pd.error_code, pd.high_watermark, pd.log_start_offset) == (0, 10, 0)
    batches = list(decode_batches(bytes(pd.records)))
    # The batch holding offset 4 is sent whole, from its base offset.
    assert batches[0].base_offset <= 4 <= batches[0].last_offset
    assert [r.value for bt in batches for r in bt.records if r.offset >= 4] == [b"v%d" % i for i in range(4, 10)]


def test_kafka_python_frames_round_trip(traced, proxy):
    b, _ = traced
    topic = unique("golden-kp")
    create_topic(b, topic, 1)
    # enable_idempotence=False until InitProducerId exists (issue 6).
    p = KafkaProducer(bootstrap_servers=bootstrap(traced), enable_idempotence=False, compression_type="gzip")
    try:
        metas = [p.send(topic, key=b"k", value=b"v%d" % i, headers=[("h", b"x")], timestamp_ms=5_000 + i)
                 for i in range(5)]
        p.flush(TIMEOUT)
        assert [m.get(TIMEOUT).offset for m in metas] == list(range(5))
    finally:
        p.close(TIMEOUT)
    c = KafkaConsumer(bootstrap_servers=bootstrap(traced), enable_auto_commit=False, group_id=None)
    try:
        tp = KpTopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 0)
        got: list = []
        for _ in range(50):
            for recs in c.poll(timeout_ms=200).values():
                got += recs
            if len(got) >= 5:
                break
        assert [r.value for r in got] == [b"v%d" % i for i in range(5)]
        assert c.offsets_for_times({tp: 5_002})[tp].offset == 2
    finally:
        c.close()
    checked = check_all(proxy.exchanges())
    assert {"ApiVersions", "Metadata", "Produce", "Fetch", "ListOffsets"} <= names([ex for ex, _, _ in checked])


def test_aiokafka_frames_round_trip(traced, proxy):
    b, _ = traced
    topic = unique("golden-aio")
    create_topic(b, topic, 1)

    async def run() -> list[int]:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap(traced), compression_type="snappy")
        await asyncio.wait_for(p.start(), TIMEOUT)
        try:
            metas = [await asyncio.wait_for(p.send_and_wait(topic, b"v%d" % i, key=b"k"), TIMEOUT)
                     for i in range(3)]
        finally:
            await p.stop()
        return [m.offset for m in metas]

    assert asyncio.run(run()) == [0, 1, 2]
    checked = check_all(proxy.exchanges())
    assert {"ApiVersions", "Metadata", "Produce"} <= names([ex for ex, _, _ in checked])


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_frames_round_trip(traced, proxy):
    """kcat bundles an older librdkafka (2.0), which picks other versions than confluent-kafka's."""
    b, _ = traced
    topic = unique("golden-kcat")
    create_topic(b, topic, 1)

    def kcat(*args: str, stdin: bytes | None = None) -> str:
        r = subprocess.run(["kcat", "-b", bootstrap(traced), *args], input=stdin, capture_output=True,
                           timeout=TIMEOUT)
        assert r.returncode == 0, r.stderr
        return r.stdout.decode()

    # Values long enough that compressing pays (librdkafka sends a batch plain otherwise).
    kcat("-P", "-t", topic, "-K:", "-z", "snappy", stdin=b"a:%s\nb:%s\n" % (b"1" * 100, b"2" * 100))
    assert kcat("-C", "-t", topic, "-e", "-f", "%k=%s\\n").split() == ["a=" + "1" * 100, "b=" + "2" * 100]
    assert f'topic "{topic}"' in kcat("-L", "-t", topic)
    assert kcat("-Q", "-t", f"{topic}:0:-1").split()[-1] == "2"
    checked = check_all(proxy.exchanges())
    assert {"ApiVersions", "Metadata", "Produce", "Fetch", "ListOffsets"} <= names([ex for ex, _, _ in checked])
    # librdkafka sends both records in one Produce, or in two when its linger expires between them
    # (seen on a loaded machine); every batch must be snappy either way
    produces = [req for ex, req, _ in checked if ex.api_key == produce.API.key]
    batches = [b for req in produces for b in decode_batches(bytes(req.topic_data[0].partition_data[0].records))]
    assert 1 <= len(produces) <= 2 and sum(len(b.records) for b in batches) == 2
    assert {b.compression for b in batches} == {2}  # snappy on the wire, now that Produce v0 is advertised (KAFKA-18659)
