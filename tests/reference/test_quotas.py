"""Client quotas against Apache Kafka and minibroker side by side (issue 24): Kafka's
kafka-configs sets and describes them, and a confluent-kafka producer held to
producer_byte_rate=1 MB/s runs at that rate and sees throttle times on both, while an
unthrottled producer next to it is not slowed. The quotas are removed again afterwards."""

from __future__ import annotations

import threading
import time
import uuid

from confluent_kafka import Producer

from tests.reference.helpers import BOOT

RATE = 1_000_000  # producer_byte_rate, bytes/s
RUN_S = 12.0  # Kafka measures over 11 one-second windows: the first ~10 s worth go through at once
STEADY_FROM_S = 6.0
VALUE = b"x" * 10_000


def _configs(pair, *args: str) -> tuple[str, str]:
    return pair.stdout("kafka-configs", ["--bootstrap-server", BOOT, *args])


def _run_producer(bootstrap: str, client_id: str, topic: str, out: dict) -> None:
    throttles: list[int] = []
    delivered: list[tuple[float, int]] = []
    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5,
                  "queue.buffering.max.messages": 200,
                  "throttle_cb": lambda ev: throttles.append(int(ev.throttle_time * 1000))})

    def on_delivery(err, msg) -> None:
        if err is None:
            delivered.append((time.monotonic(), len(msg.value())))

    start = time.monotonic()
    while time.monotonic() - start < RUN_S:
        try:
            p.produce(topic, VALUE, on_delivery=on_delivery)
        except BufferError:
            p.poll(0.02)
        p.poll(0)
    p.flush(30)
    steady = [n for t, n in delivered if start + STEADY_FROM_S <= t < start + RUN_S]
    out["steady_rate"] = sum(steady) / (RUN_S - STEADY_FROM_S)
    out["total_rate"] = sum(n for _, n in delivered) / RUN_S
    out["throttles"] = throttles


def test_kafka_configs_sets_and_describes_client_quotas(pair):
    name = f"cfg-{uuid.uuid4().hex[:6]}"
    try:
        k, m = _configs(pair, "--alter", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152",
                        "--entity-type", "clients", "--entity-name", name)
        assert k == m
        k, m = _configs(pair, "--describe", "--entity-type", "clients", "--entity-name", name)
        assert k == m and "producer_byte_rate=1048576.0" in m
        k, m = _configs(pair, "--alter", "--add-config", "request_percentage=50", "--entity-type", "users",
                        "--entity-default", "--entity-type", "clients", "--entity-name", name)
        assert k == m
        k, m = _configs(pair, "--describe", "--entity-type", "users", "--entity-default",
                        "--entity-type", "clients", "--entity-name", name)
        assert k == m and "request_percentage=50.0" in m
    finally:
        _configs(pair, "--alter", "--delete-config", "producer_byte_rate,consumer_byte_rate",
                 "--entity-type", "clients", "--entity-name", name)
        _configs(pair, "--alter", "--delete-config", "request_percentage", "--entity-type", "users",
                 "--entity-default", "--entity-type", "clients", "--entity-name", name)
    k, m = _configs(pair, "--describe", "--entity-type", "clients", "--entity-name", name)
    assert k == m


def test_producer_byte_rate_throttles_as_kafka(pair):
    throttled, free = f"slow-{uuid.uuid4().hex[:6]}", f"fast-{uuid.uuid4().hex[:6]}"
    topic = f"quota-{uuid.uuid4().hex[:6]}"
    _configs(pair, "--alter", "--add-config", f"producer_byte_rate={RATE}", "--entity-type", "clients",
             "--entity-name", throttled)
    results: dict[str, dict] = {}
    try:
        threads = []
        for side in (pair.kafka, pair.mini):
            for cid in (throttled, free):
                out = results.setdefault(f"{side.name}/{cid}", {})
                threads.append(threading.Thread(target=_run_producer, args=(side.bootstrap, cid, topic, out)))
        for t in threads:
            t.start()
        for t in threads:
            t.join(RUN_S + 60)
    finally:
        _configs(pair, "--alter", "--delete-config", "producer_byte_rate", "--entity-type", "clients",
                 "--entity-name", throttled)
    summary = {k: (round(v["steady_rate"] / 1e6, 3), round(v["total_rate"] / 1e6, 3), len(v["throttles"]))
               for k, v in results.items()}
    print("steady MB/s, whole-run MB/s, throttle callbacks:", summary)
    # Kafka lets a client start with about (quota.window.num - 1) windows' worth at once, then
    # throttles it: over RUN_S the throttled producer gets more than RATE but at most
    # RATE * (RUN_S + 10) / RUN_S, and minibroker's figure is Kafka's within 15 %.
    burst_bound = RATE * (RUN_S + 10) / RUN_S
    for side in ("kafka", "minibroker"):
        slow, fast = results[f"{side}/{throttled}"], results[f"{side}/{free}"]
        assert RATE <= slow["total_rate"] <= burst_bound, (side, summary)
        assert slow["throttles"], (side, "no throttle_cb")
        assert not fast["throttles"] and fast["total_rate"] > 3 * slow["total_rate"], (side, summary)
    kafka_rate = results[f"kafka/{throttled}"]["total_rate"]
    assert abs(results[f"minibroker/{throttled}"]["total_rate"] - kafka_rate) <= 0.15 * kafka_rate, summary
