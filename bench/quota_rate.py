"""The long run behind the ±10 % claim of issue 24: a confluent-kafka producer held to
producer_byte_rate (1 MB/s by default) produces as fast as it is let for 60 s, against Apache
Kafka (the reference broker, reference/) and minibroker at the same time.

    .venv/bin/python bench/quota_rate.py [--seconds 60] [--rate 1000000] [--steady-from 20]

Prints the bytes delivered each 5 s and the steady-state rate: what was delivered from
--steady-from seconds on (after the initial burst of about quota.window.num - 1 windows' worth,
which Kafka lets through at once) divided by the time. Not part of `make test` (a minute long).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Producer  # noqa: E402

from minibroker.testing import BrokerThread  # noqa: E402
from reference import kafka_reference as kr  # noqa: E402

VALUE = b"x" * 10_000


def produce(bootstrap: str, client_id: str, topic: str, seconds: float, out: list[tuple[float, int]],
            throttles: list[int]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5,
                  "queue.buffering.max.messages": 200,
                  "throttle_cb": lambda ev: throttles.append(int(ev.throttle_time * 1000))})
    start = time.monotonic()

    def delivered(err, msg) -> None:
        if err is None:
            out.append((time.monotonic() - start, len(msg.value())))

    while time.monotonic() - start < seconds:
        try:
            p.produce(topic, VALUE, on_delivery=delivered)
        except BufferError:
            p.poll(0.02)
        p.poll(0)
    p.flush(30)


def configs(bootstrap: str, *args: str) -> None:
    r = kr.run_tool("kafka-configs", ["--bootstrap-server", bootstrap, *args])
    if r.returncode != 0:
        raise SystemExit(f"kafka-configs {' '.join(args)} against {bootstrap}: {r.stderr}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--rate", type=int, default=1_000_000)
    ap.add_argument("--steady-from", type=float, default=20)
    args = ap.parse_args()
    why = kr.missing_prerequisites()
    if why is not None:
        raise SystemExit(f"reference broker unavailable: {why}")
    cid, topic = f"rate-{uuid.uuid4().hex[:6]}", f"rate-{uuid.uuid4().hex[:6]}"
    with tempfile.TemporaryDirectory() as tmp, kr.KafkaReference() as kafka, \
            BrokerThread(Path(tmp) / "data") as mini:
        sides = {"kafka": kafka.bootstrap, "minibroker": mini.bootstrap}
        for bootstrap in sides.values():
            configs(bootstrap, "--alter", "--add-config", f"producer_byte_rate={args.rate}",
                    "--entity-type", "clients", "--entity-name", cid)
        got: dict[str, list[tuple[float, int]]] = {name: [] for name in sides}
        throttles: dict[str, list[int]] = {name: [] for name in sides}
        threads = [threading.Thread(target=produce, args=(b, cid, topic, args.seconds, got[n], throttles[n]))
                   for n, b in sides.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for name, recs in got.items():
            buckets = [0] * (int(args.seconds // 5) + 2)
            for t, n in recs:
                buckets[min(int(t // 5), len(buckets) - 1)] += n
            steady = sum(n for t, n in recs if args.steady_from <= t < args.seconds)
            rate = steady / (args.seconds - args.steady_from)
            print(f"{name}: MB per 5 s: {[round(b / 1e6, 2) for b in buckets]}")
            print(f"{name}: steady rate {rate / 1e6:.3f} MB/s ({(rate / args.rate - 1) * 100:+.1f} % of the quota), "
                  f"whole run {sum(n for _, n in recs) / args.seconds / 1e6:.3f} MB/s, "
                  f"{len(throttles[name])} throttle callbacks, median {sorted(throttles[name] or [0])[len(throttles[name]) // 2]} ms")


if __name__ == "__main__":
    main()
