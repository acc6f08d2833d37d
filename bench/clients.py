"""Benchmark client: one scenario with confluent-kafka, printed as JSON (run by bench/run.py).

    python bench/clients.py produce BOOTSTRAP TOPIC COUNT SIZE [--acks 1] [--compression none]
    python bench/clients.py consume BOOTSTRAP TOPIC COUNT
    python bench/clients.py latency BOOTSTRAP TOPIC COUNT SIZE
    (any mode: --config key=value, repeatable, adds librdkafka settings, e.g. security.protocol=SSL)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def produce(a: argparse.Namespace) -> dict:
    p = Producer({
        "bootstrap.servers": a.bootstrap, "acks": a.acks, "compression.type": a.compression,
        "linger.ms": 5, "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
        "queue.buffering.max.kbytes": 1_048_576,
    })
    payload = os.urandom(a.size)
    errors = []

    def cb(err, _msg):
        if err is not None:
            errors.append(str(err))

    # Warm up the connection and metadata so the clock measures data, not bootstrap.
    p.produce(a.topic, payload, callback=cb)
    p.flush(30)
    t0 = time.perf_counter()
    for _ in range(a.count):
        while True:
            try:
                p.produce(a.topic, payload, callback=cb)
                break
            except BufferError:
                p.poll(0.01)
    left = p.flush(120)
    dt = time.perf_counter() - t0
    if left or errors:
        raise SystemExit(f"produce failed: {left} unflushed, errors {errors[:3]}")
    return {"seconds": dt, "records": a.count, "bytes": a.count * a.size}


def consume(a: argparse.Namespace) -> dict:
    c = Consumer({**dict(kv.split("=", 1) for kv in a.config),
                  "bootstrap.servers": a.bootstrap, "group.id": f"bench-{time.time_ns()}",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                  # When its local queue passes queued.min.messages (100,000) librdkafka stops
                  # fetching for fetch.queue.backoff.ms, 1 s by default: with 100 B records a
                  # broker that fetches faster than the Python loop consumes hits that every
                  # few hundred ms and the run measures the back-off (debug=fetch: "Fetch
                  # backoff for 1000ms: Local: Queue full"). 10 ms keeps the client's pace.
                  "fetch.queue.backoff.ms": 10})
    # librdkafka's defaults for fetch sizes (1 MiB a partition): with 10 MiB it runs 3x slower
    # against any broker that fills the fetch (bench/README.md), which measures the client.
    # Connect to the bootstrap and to the partition leader before the clock starts.
    c.list_topics(a.topic, timeout=30)
    c.get_watermark_offsets(TopicPartition(a.topic, 0), timeout=30)
    c.assign([TopicPartition(a.topic, 0, 0)])
    got = 0
    nbytes = 0
    t0 = time.perf_counter()
    deadline = time.monotonic() + 300
    while got < a.count and time.monotonic() < deadline:
        # consume(n, timeout) returns when n messages are there or the timeout passes. librdkafka
        # stops fetching at queued.max.messages.kbytes (64 MiB: 6,400 records of 10 KiB), so asking
        # for 10,000 at once could wait out the whole timeout while the queue sat full: a 1 s stall
        # in some rounds against any broker. Ask for fewer than the queue holds, and never for more
        # than remains.
        batch = c.consume(min(1000, a.count - got), 1.0)
        for m in batch:
            if m.error():
                raise KafkaException(m.error())
            got += 1
            nbytes += len(m.value() or b"")
    dt = time.perf_counter() - t0
    c.close()
    if got < a.count:
        raise SystemExit(f"consumed only {got} of {a.count}")
    return {"seconds": dt, "records": got, "bytes": nbytes}


def kcat_consume(a: argparse.Namespace) -> dict:
    """The same consume with kcat (librdkafka in C): the client is no longer the bottleneck."""
    import subprocess

    args = ["kcat", "-C", "-b", a.bootstrap, "-t", a.topic, "-p", "0", "-o", "beginning", "-e", "-q",
            "-f", "%S\\n"]
    t0 = time.perf_counter()
    out = subprocess.run(args, capture_output=True, timeout=300, check=True)
    dt = time.perf_counter() - t0
    lines = out.stdout.split()
    if len(lines) < a.count:
        raise SystemExit(f"kcat consumed only {len(lines)} of {a.count}")
    return {"seconds": dt, "records": len(lines), "bytes": sum(int(x) for x in lines if x != b"-1")}


def latency(a: argparse.Namespace) -> dict:
    p = Producer({"bootstrap.servers": a.bootstrap, "acks": "all", "linger.ms": 0})
    payload = os.urandom(a.size)
    p.produce(a.topic, payload)
    p.flush(30)

    def one() -> float:
        done: list = []
        t0 = time.perf_counter()
        p.produce(a.topic, payload, callback=lambda err, m, done=done: done.append(err))
        while not done:
            p.poll(0.0005)
        if done[0] is not None:
            raise SystemExit(f"produce failed: {done[0]}")
        return (time.perf_counter() - t0) * 1000

    # The first second or so of a new producer is slow against any broker (2-5 ms per produce,
    # measured against minibroker and Tansu alike: librdkafka and the kernel warming up), which
    # would make p99 a measure of start-up. Warm up for 2 s, then measure.
    warm_until = time.monotonic() + 2.0
    while time.monotonic() < warm_until:
        one()
    samples = sorted(one() for _ in range(a.count))
    return {"p50_ms": samples[len(samples) // 2], "p99_ms": samples[int(len(samples) * 0.99) - 1],
            "records": a.count}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["produce", "consume", "kcat-consume", "latency"])
    ap.add_argument("bootstrap")
    ap.add_argument("topic")
    ap.add_argument("count", type=int)
    ap.add_argument("size", type=int, nargs="?", default=100)
    ap.add_argument("--acks", default="1")
    ap.add_argument("--compression", default="none")
    ap.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    a = ap.parse_args()
    modes = {"produce": produce, "consume": consume, "kcat-consume": kcat_consume, "latency": latency}
    result = modes[a.mode](a)
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
