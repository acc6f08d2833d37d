"""What the Spark tests share: the SparkSession's settings, the events topic's shape and how to
create, fill and read back topics with a plain client (confluent-kafka)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

EVENTS = "events"
N_EVENTS = 1000
STEP_MS = 10  # event i has timestamp base_ms + i * STEP_MS and goes to partition i % 2

# Spark's Ivy cache for spark.jars.packages: outside the repo, next to the reference Kafka's jars.
IVY_DIR = Path.home() / ".cache" / "minibroker" / "ivy"


def connector_package() -> str:
    """Spark's Kafka connector built for the installed pyspark (Scala 2.13, as pyspark 4 ships)."""
    import pyspark

    return f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"


def avro_package() -> str:
    """spark-avro (from_avro, to_avro) for the installed pyspark: the Avro pipeline (issue 36)."""
    import pyspark

    return f"org.apache.spark:spark-avro_2.13:{pyspark.__version__}"


def spark_builder(app: str):
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master("local[2]").appName(app)
            .config("spark.jars.packages", f"{connector_package()},{avro_package()}")
            .config("spark.jars.ivy", str(IVY_DIR))
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.streaming.stopTimeout", "30s"))


@dataclass
class EventTopic:
    bootstrap: str
    topic: str
    base_ms: int

    def ts(self, i: int) -> int:
        return self.base_ms + i * STEP_MS


def event(i: int) -> dict:
    return {"i": i, "user": f"u{i % 7}", "amount": i % 13}


def produce_events(bootstrap: str, topic: str, first: int, count: int, base_ms: int) -> None:
    """Events first..first+count-1: key k<i>, JSON value, header n=<i>, partition i % 2."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    failures: list = []
    for i in range(first, first + count):
        p.produce(topic, key=f"k{i}", value=json.dumps(event(i)), partition=i % 2,
                  timestamp=base_ms + i * STEP_MS, headers=[("n", str(i).encode())],
                  on_delivery=lambda err, _m: err and failures.append(err))
    assert p.flush(30) == 0
    assert not failures, failures


def create_topic(bootstrap: str, topic: str, partitions: int = 2) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)


def consume_all(bootstrap: str, topic: str, partitions: int = 2, *,
                isolation: str = "read_uncommitted") -> list[tuple]:
    """Every record of the topic as (partition, offset, key, value, headers, timestamp ms), read by
    confluent-kafka from offset 0 to the end of each partition."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "plain-reader", "enable.auto.commit": False,
                  "enable.partition.eof": True, "isolation.level": isolation})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list[tuple] = []
    eof: set[int] = set()
    deadline = time.monotonic() + 30
    try:
        while len(eof) < partitions:
            assert time.monotonic() < deadline, f"reading {topic}: EOF on {sorted(eof)} only"
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                eof.add(m.partition())
                continue
            got.append((m.partition(), m.offset(), m.key(), m.value(), m.headers() or [], m.timestamp()[1]))
    finally:
        c.close()
    return sorted(got)
