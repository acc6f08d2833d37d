"""When the slowest produce acknowledgements happen: is the tail periodic (a broker timer) or noise?

    .venv/bin/python bench/ack_tail.py --bootstrap 127.0.0.1:9092 [--count 30000] [--topic tail]

One confluent-kafka producer (acks=all, linger.ms=0) sends one 100 B record at a time, as
bench/run.py's produce-ack scenario does, after 2 s of warm-up, and times each acknowledgement.
The slowest 1% (at or above p99) are folded by period: for each of 50, 100, 250, 500 ms and 1 s,
the phase of each slow produce within the period goes into one of ten bins. A timer on the broker
that stalls the loop fills one bin of its period; noise leaves the bins about even (issue 33).
"""

from __future__ import annotations

import argparse
import os
import time

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

PERIODS_S = (0.05, 0.1, 0.25, 0.5, 1.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--count", type=int, default=30_000)
    ap.add_argument("--topic", default="ack-tail")
    a = ap.parse_args()
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    try:
        admin.create_topics([NewTopic(a.topic, 1, 1)])[a.topic].result(30)
    except KafkaException:
        pass  # already there
    p = Producer({"bootstrap.servers": a.bootstrap, "acks": "all", "linger.ms": 0})
    payload = os.urandom(100)

    def one() -> tuple[float, float]:
        done: list[object] = []
        t0 = time.perf_counter()
        p.produce(a.topic, payload, callback=lambda err, _m: done.append(err))
        while not done:
            p.poll(0.0005)
        if done[0] is not None:
            raise SystemExit(f"produce failed: {done[0]}")
        return t0, (time.perf_counter() - t0) * 1000

    warm_until = time.monotonic() + 2.0
    while time.monotonic() < warm_until:
        one()
    samples = [one() for _ in range(a.count)]
    ordered = sorted(ms for _, ms in samples)
    n = len(ordered)
    p50, p99 = ordered[n // 2], ordered[int(n * 0.99)]
    start = samples[0][0]
    slow = [t - start for t, ms in samples if ms >= p99]
    print(f"{n} produces over {samples[-1][0] - start:.1f} s: p50 {p50:.3f} ms, p99 {p99:.3f} ms; "
          f"{len(slow)} at or above p99")
    for period in PERIODS_S:
        bins = [0] * 10
        for t in slow:
            bins[min(9, int((t % period) / period * 10))] += 1
        print(f"period {period * 1000:6.0f} ms: {bins}")


if __name__ == "__main__":
    main()
