"""Load (issue 10): many idle connections, active producers and consumers, a slow consumer.

The broker runs as a subprocess so its memory (VmRSS from /proc) and its latency are its own.
Bounds asserted here (the documented ones):

- latency: with 1000 idle connections open, the p99 of a produce round trip (acks=1, one request
  at a time) is at most 3 x the p99 without them + 50 ms, and the median at most 2 x + 10 ms — or,
  on a machine loaded by other work (a fresh CI run on 2 cores saw a 15-27 ms median under the
  flood on the old code and this alike), at most 0.5 s and 0.1 s: these bounds say "never frozen",
  the latencies themselves are measured in bench/. One flooding client used to stall everyone for
  seconds.
  Idle connections cost nothing per request: each is a socket in the loop's selector, read only
  when it is readable.
- memory: 1000 idle connections add less than 40 MB to the broker's RSS; a client that pipelines
  requests and never reads its answers adds less than 120 MB however long it goes on: reading
  stops at `queued.max.requests` queued requests or 64 MiB of unsent response bytes
  (minibroker.network), and fetch data waiting to be sent are file regions, not memory.
- a slow consumer (a connection whose responses pile up unread) never delays other connections,
  and is served again once it reads.
"""

from __future__ import annotations

import resource
import socket
import statistics
import struct
import threading
import time
from pathlib import Path

import pytest

from bench.crash_loop import Wire, create_topic
from minibroker_protocol.apis import api_versions, fetch, metadata, produce
from minibroker_protocol.headers import RequestHeader, encode_request_header
from minibroker_protocol.records.v2 import Record, build_batch

IDLE = 1000
PRODUCE_V = 9
FETCH_V = 12


def raise_fd_limit(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= need:
        return
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} is below the {need} descriptors this test needs")
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def produce_body(topic: str, partition: int, value: bytes, acks: int = 1) -> object:
    R = produce.REQUEST
    batch = build_batch([Record(value=value)], base_timestamp=int(time.time() * 1000))
    return R(transactional_id=None, acks=acks, timeout_ms=5_000, topic_data=[R.TopicProduceData(
        name=topic, partition_data=[R.PartitionProduceData(index=partition, records=batch)])])


def fetch_body(topic: str, offset: int, *, max_wait_ms: int = 500, max_bytes: int = 1 << 20) -> object:
    R = fetch.REQUEST
    return R(max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=max_bytes, isolation_level=0, session_id=0,
             session_epoch=-1, topics=[R.FetchTopic(topic=topic, partitions=[R.FetchPartition(
                 partition=0, fetch_offset=offset, partition_max_bytes=max_bytes)])],
             forgotten_topics_data=[], rack_id="")


def produce_latencies(port: int, topic: str, n: int) -> list[float]:
    w = Wire(port, timeout=10)
    out = []
    try:
        for i in range(n):
            t0 = time.perf_counter()
            resp = w.call(produce.API, PRODUCE_V, produce_body(topic, 1, b"latency probe %d" % i))
            out.append(time.perf_counter() - t0)
            assert resp.responses[0].partition_responses[0].error_code == 0
    finally:
        w.close()
    return out


def _p99_bound(base: list[float]) -> float:
    # relative to the unloaded figure, but never below 0.5 s: the test asserts behaviour (nobody is
    # frozen), not a timing a loaded 2-core machine can miss (bench/ measures the latencies)
    return max(3 * p99(base) + 0.050, 0.5)


def _median_bound(base: list[float]) -> float:
    return max(2 * statistics.median(base) + 0.010, 0.1)


def p99(xs: list[float]) -> float:
    return sorted(xs)[max(0, int(len(xs) * 0.99) - 1)]


class Consumer(threading.Thread):
    """Long-polls partition 1 from the start until stopped, counting records' batches."""

    def __init__(self, port: int, topic: str):
        super().__init__(daemon=True)
        self.port, self.topic = port, topic
        self.stop = threading.Event()
        self.fetches = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            w = Wire(self.port, timeout=10)
            offset = 0
            R = fetch.REQUEST
            while not self.stop.is_set():
                resp = w.call(fetch.API, FETCH_V, R(
                    max_wait_ms=200, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
                    session_epoch=-1, topics=[R.FetchTopic(topic=self.topic, partitions=[R.FetchPartition(
                        partition=1, fetch_offset=offset, partition_max_bytes=1 << 20)])],
                    forgotten_topics_data=[], rack_id=""))
                p = resp.responses[0].partitions[0]
                assert p.error_code == 0
                offset = p.high_watermark
                self.fetches += 1
            w.close()
        except BaseException as e:  # reported by the test
            self.error = e


def raw_request(api, version: int, body: object, correlation_id: int) -> bytes:
    from minibroker_protocol.codec import encode

    out = bytearray()
    encode_request_header(out, RequestHeader(api.key, version, correlation_id, "load"))
    out += encode(api.request, version, body).to_bytes()
    return struct.pack(">i", len(out)) + bytes(out)


def api_versions_ok(port: int, timeout: float = 10) -> bool:
    w = Wire(port, timeout=timeout)
    try:
        return w.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="load",
                                                                client_software_version="1")).error_code == 0
    finally:
        w.close()


def fill_topic(port: int, topic: str, megabytes: int) -> None:
    """`megabytes` batches of ~1 MB on partition 0."""
    w = Wire(port, timeout=30)
    try:
        for i in range(megabytes):
            resp = w.call(produce.API, PRODUCE_V, produce_body(topic, 0, bytes([i % 256]) * 1_000_000))
            assert resp.responses[0].partition_responses[0].error_code == 0
    finally:
        w.close()


def test_slow_consumer_is_served_again_after_it_reads(kafka_broker_process):
    """A consumer pipelines fetches of ~9 MB each without reading: more than 64 MiB of response
    waits, so the broker stops reading its socket. When the consumer reads everything, the broker
    must start reading again: the next request on that connection is answered."""
    b = kafka_broker_process()
    b.start()
    topic = "slow"
    create_topic(b.port, topic, 1)
    fill_topic(b.port, topic, 9)
    create_topic(b.port, "others", 2)
    produce_latencies(b.port, "others", 30)  # warm up
    base = produce_latencies(b.port, "others", 100)
    host = ("127.0.0.1", b.port)
    s = socket.create_connection(host, timeout=20)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    n = 14
    for cid in range(1, n + 1):
        s.sendall(raw_request(fetch.API, FETCH_V, fetch_body(topic, 0, max_bytes=16 << 20), cid))
        time.sleep(0.1)  # separate reads on the broker's side: it sees the backlog grow
    assert api_versions_ok(b.port)  # others are served meanwhile, as fast as before
    during = produce_latencies(b.port, "others", 100)
    assert p99(during) <= _p99_bound(base), (p99(base), p99(during))
    got = 0
    for _ in range(n):
        size = struct.unpack(">i", _exactly(s, 4))[0]
        _exactly(s, size)
        got += 1
    assert got == n
    s.sendall(raw_request(metadata.API, 12, metadata.REQUEST(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False), 99))
    s.settimeout(10)
    size = struct.unpack(">i", _exactly(s, 4))[0]
    assert struct.unpack(">i", _exactly(s, size)[:4])[0] == 99
    s.close()
    b.stop()


def _exactly(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise EOFError("closed")
        buf += chunk
    return bytes(buf)


def test_idle_connections_producers_consumers_and_a_flooding_client(kafka_broker_process):
    raise_fd_limit(IDLE + 512)
    b = kafka_broker_process()
    b.start()
    pid = b.proc.pid
    topic = "load"
    create_topic(b.port, topic, 2)
    produce_latencies(b.port, topic, 50)  # warm up
    consumer = Consumer(b.port, topic)
    consumer.start()
    base = produce_latencies(b.port, topic, 300)
    rss0 = rss_mb(pid)

    idle: list[socket.socket] = []
    try:
        for i in range(IDLE):
            s = socket.create_connection(("127.0.0.1", b.port), timeout=10)
            if i % 10 == 0:  # some have spoken once, as clients that connect and go quiet
                s.sendall(raw_request(api_versions.API, 3, api_versions.REQUEST(
                    client_software_name="idle", client_software_version="1"), 1))
            idle.append(s)
        for i in range(0, IDLE, 10):
            s = idle[i]
            size = struct.unpack(">i", _exactly(s, 4))[0]
            _exactly(s, size)
        time.sleep(0.5)
        rss_idle = rss_mb(pid)
        loaded = produce_latencies(b.port, topic, 300)

        # A client that pipelines requests and never reads: the broker must stop reading it
        # instead of buffering without bound, and everyone else is still served on time.
        flood = socket.create_connection(("127.0.0.1", b.port), timeout=10)
        flood.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        flood.setblocking(False)
        req = raw_request(metadata.API, 12, metadata.REQUEST(topics=None, allow_auto_topic_creation=False,
                                                             include_topic_authorized_operations=False), 7)
        sent, deadline, blocked = 0, time.monotonic() + 8, False
        chunk = req * 200
        while time.monotonic() < deadline:
            try:
                sent += flood.send(chunk)
            except BlockingIOError:
                blocked = True  # the broker stopped reading: back-pressure reached the client
                time.sleep(0.05)
                if time.monotonic() > deadline - 6:
                    break
        during_flood = produce_latencies(b.port, topic, 200)
        rss_flood = rss_mb(pid)
        flood.close()

        # Every idle connection is still open and a sample still answers.
        for s in idle[::50]:
            s.sendall(raw_request(api_versions.API, 3, api_versions.REQUEST(
                client_software_name="idle", client_software_version="1"), 2))
            size = struct.unpack(">i", _exactly(s, 4))[0]
            _exactly(s, size)
    finally:
        for s in idle:
            s.close()
        consumer.stop.set()
        consumer.join(10)
    assert consumer.error is None, consumer.error
    assert consumer.fetches > 0
    figures = {
        "p50_ms": [round(statistics.median(x) * 1000, 2) for x in (base, loaded, during_flood)],
        "p99_ms": [round(p99(x) * 1000, 2) for x in (base, loaded, during_flood)],
        "rss_mb": [round(x, 1) for x in (rss0, rss_idle, rss_flood)],
        "flood_bytes_sent": sent, "flood_blocked": blocked,
    }
    print(f"load figures (baseline, {IDLE} idle, idle + flooding client): {figures}")
    for x in (loaded, during_flood):
        assert p99(x) <= _p99_bound(base), figures
        assert statistics.median(x) <= _median_bound(base), figures
    assert rss_idle - rss0 < 40, figures
    assert rss_flood - rss0 < 120, figures
    assert blocked, figures
    assert api_versions_ok(b.port)
    b.stop()
