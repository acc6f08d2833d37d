"""The broker's own produce-ack round trip: one Produce (one 100 B record, acks=-1) at a time over
a plain socket, no client library in the way.

    .venv/bin/python bench/produce_rtt.py [--count 5000] [--rounds 3] [--brokers minibroker,tansu]
                                          [--baseline <another checkout>]

librdkafka's own queues and threads add about 0.1 ms to each produce in bench/run.py's latency
scenario, the same for every broker; this measures only what the broker adds. The request is
encoded once and its correlation id patched per send.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import Minibroker, Tansu, cpu_seconds, create_topic  # noqa: E402

from minibroker_protocol.apis import produce  # noqa: E402
from minibroker_protocol.codec import encode  # noqa: E402
from minibroker_protocol.headers import RequestHeader, encode_request_header  # noqa: E402
from minibroker_protocol.records.v2 import Record, build_batch  # noqa: E402

VERSION = 9


def request_frame(topic: str, size: int) -> bytearray:
    batch = build_batch([Record(offset_delta=0, key=None, value=b"x" * size)], base_timestamp=int(time.time() * 1000))
    R = produce.REQUEST
    body = R(transactional_id=None, acks=-1, timeout_ms=5_000, topic_data=[R.TopicProduceData(
        name=topic, partition_data=[R.PartitionProduceData(index=0, records=batch)])])
    out = bytearray()
    encode_request_header(out, RequestHeader(produce.API.key, VERSION, 0, "rtt"))
    out += encode(produce.REQUEST, VERSION, body).to_bytes()
    return bytearray(struct.pack(">i", len(out))) + out


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("broker closed the connection")
        buf += chunk
    return bytes(buf)


def measure(bootstrap: str, count: int, size: int, pid: int) -> tuple[list[float], float]:
    """Round-trip times in ms, sorted, and the broker's CPU microseconds per request."""
    topic = f"rtt-{time.time_ns()}"
    create_topic(bootstrap, topic)
    host, port = bootstrap.rsplit(":", 1)
    frame = request_frame(topic, size)
    samples = []
    cpu0 = 0.0
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(count + 100):
            if i == 100:
                cpu0 = cpu_seconds(pid)
            struct.pack_into(">i", frame, 8, i)  # correlation id: after size, api key, api version
            t0 = time.perf_counter()
            sock.sendall(frame)
            resp = recv_exactly(sock, struct.unpack(">i", recv_exactly(sock, 4))[0])
            dt = time.perf_counter() - t0
            if struct.unpack_from(">i", resp)[0] != i:
                raise RuntimeError("response out of order")
            if i >= 100:  # the first ones warm up both sides
                samples.append(dt * 1000)
    cpu_us = (cpu_seconds(pid) - cpu0) / count * 1e6
    samples.sort()
    return samples, cpu_us


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--brokers", default="minibroker,tansu")
    ap.add_argument("--loop", default="uvloop", choices=["uvloop", "asyncio"])
    ap.add_argument("--baseline", type=Path, default=None,
                    help="also run the minibroker of another checkout as 'baseline' (before/after, same run)")
    a = ap.parse_args()
    makers = {"minibroker": lambda: Minibroker(a.loop), "tansu": Tansu,
              "baseline": lambda: Minibroker(a.loop, cwd=a.baseline, name="baseline")}
    names = a.brokers.split(",") + (["baseline"] if a.baseline else [])
    started = {}
    samples: dict[str, tuple[list[float], list[float], list[float]]] = {n: ([], [], []) for n in names}
    try:
        for name in names:
            b = makers[name]()
            started[name] = (b, b.start())
        for _ in range(a.rounds):  # the brokers alternate round by round
            for name, (b, bootstrap) in started.items():
                p50s, p99s, cpus = samples[name]
                s, cpu_us = measure(bootstrap, a.count, a.size, b.pid)
                p50s.append(s[len(s) // 2])
                p99s.append(s[int(len(s) * 0.99) - 1])
                cpus.append(cpu_us)
                print(f"  {name}: p50 {p50s[-1]:.3f} ms, p99 {p99s[-1]:.3f} ms, broker cpu {cpu_us:.0f} us/request",
                      file=sys.stderr)
    finally:
        for b, _ in started.values():
            b.stop()
    rows = {n: (statistics.median(v[0]), statistics.median(v[1]), statistics.median(v[2])) for n, v in samples.items()}
    print("| broker | p50 ms | p99 ms | broker CPU per request |\n|---|---|---|---|")
    for name, (p50, p99, cpu) in rows.items():
        print(f"| {name} | {p50:.3f} | {p99:.3f} | {cpu:.0f} us |")
    mine = rows.get("minibroker")
    for name, (b50, b99, _) in rows.items():
        if mine is not None and name != "minibroker":
            print(f"\n{name} p50 / minibroker p50 = {b50 / mine[0]:.2f}x, p99 {b99 / mine[1]:.2f}x")


if __name__ == "__main__":
    main()
