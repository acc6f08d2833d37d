"""The example pipeline (examples/spark_pipeline.py) end to end, twice, against the test broker."""

from __future__ import annotations

import importlib.util
import json
from collections import defaultdict

from tests.helpers import ROOT


def load_example():
    spec = importlib.util.spec_from_file_location("spark_pipeline", ROOT / "examples" / "spark_pipeline.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def totals_by_consuming(bootstrap: str, topic: str) -> dict[str, dict]:
    """The expected per-user totals, computed from the input topic without Spark."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient

    parts = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics[topic].partitions
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "expected", "enable.partition.eof": True})
    c.assign([TopicPartition(topic, p, 0) for p in parts])
    acc: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    eof: set[int] = set()
    for _ in range(10_000):
        if len(eof) == len(parts):
            break
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            eof.add(m.partition())
            continue
        ev = json.loads(m.value())
        acc[ev["user"]][0] += 1
        acc[ev["user"]][1] += ev["amount"]
    c.close()
    return {u: {"user": u, "events": n, "total": s} for u, (n, s) in sorted(acc.items())}


def test_example_pipeline_batch_and_available_now(spark, kafka_broker_module, tmp_path, capsys):
    example = load_example()
    args = ["--bootstrap", kafka_broker_module.bootstrap, "--input", "ex-events", "--output", "ex-totals",
            "--checkpoint", str(tmp_path / "ckpt"), "--max-per-trigger", "200"]
    first = example.main([*args, "--events", "300"], spark=spark)
    expected = totals_by_consuming(kafka_broker_module.bootstrap, "ex-events")
    assert sum(t["events"] for t in expected.values()) == 300
    assert first == {"batch": expected, "stream": expected}
    out = capsys.readouterr().out
    assert "'micro-batches': 2, 'rows read': 300" in out

    # Run again with 200 more events: the streaming query resumes from its checkpoint, reads only
    # the new events, and its totals (state kept in the checkpoint) cover all 500.
    second = example.main([*args, "--events", "200"], spark=spark)
    expected = totals_by_consuming(kafka_broker_module.bootstrap, "ex-events")
    assert sum(t["events"] for t in expected.values()) == 500
    assert second == {"batch": expected, "stream": expected}
    out = capsys.readouterr().out
    assert "'micro-batches': 1, 'rows read': 200" in out
    print(out)
