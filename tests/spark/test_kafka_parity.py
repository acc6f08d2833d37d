"""The same Spark jobs against Apache Kafka (the reference broker) and minibroker: the rows, the
micro-batches and the consumer groups each broker shows afterwards must be the same.

Spark's connector reads with `assign` and seeks: its consumers carry a group id (`kafka.group.id`,
or `groupIdPrefix` + a query id) but never join a group and never commit, since Spark keeps its
offsets in the checkpoint. So neither broker lists those groups; the test holds minibroker to what
Kafka answers for them (ListGroups, DescribeGroups, OffsetFetch).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest

from reference import kafka_reference as kr
from tests.spark.helpers import create_topic, produce_events

T = TypeVar("T")
TOPIC = "parity"
N = 300


@pytest.fixture(scope="module")
def kafka_reference_module() -> Iterator[kr.KafkaReference]:
    why = kr.missing_prerequisites()
    if why is not None:
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
    with kr.KafkaReference() as k:
        yield k


def commit_as_plain_group(bootstrap: str) -> None:
    """A plain consumer group that commits: listed by both brokers, unlike Spark's group ids."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "plain-group", "enable.auto.commit": False})
    try:
        settled(lambda: c.commit(offsets=[TopicPartition(TOPIC, 0, 7)], asynchronous=False))
    finally:
        c.close()


def spark_jobs(spark, bootstrap: str, group: str, checkpoint: str, base_ms: int) -> dict:
    create_topic(bootstrap, TOPIC)
    produce_events(bootstrap, TOPIC, 0, N, base_ms)
    commit_as_plain_group(bootstrap)

    def read(**options: str):
        r = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", TOPIC)
        for k, v in options.items():
            r = r.option(k, v)
        return r.load()

    def rows(df) -> list[tuple]:
        return sorted((r.partition, r.offset, bytes(r.key), bytes(r.value), r.ts, r.timestampType,
                       [(h.key, bytes(h.value)) for h in r.headers])
                      for r in df.selectExpr("*", "unix_millis(timestamp) AS ts").collect())

    out: dict = {}
    out["batch"] = rows(read(includeHeaders="true", **{"kafka.group.id": group}))
    out["by_time"] = rows(read(includeHeaders="true", startingTimestamp=str(base_ms + 2000),
                               endingOffsetsByTimestamp=json.dumps({TOPIC: {"0": base_ms + 2500,
                                                                            "1": base_ms + 2600}})))
    batches: list[list[tuple]] = []

    def collect(df, _batch_id: int) -> None:
        batches.append(sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect()))

    q = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", TOPIC)
         .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "120")
         .option("groupIdPrefix", "spark-stream").load()
         .writeStream.foreachBatch(collect).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None
    out["stream"] = batches
    out["stream_end"] = json.loads(q.lastProgress["sources"][0]["endOffset"])
    return out


def settled(call: Callable[[], T]) -> T:
    """call() again while it fails with a retriable error: a fresh Kafka answers NOT_COORDINATOR
    until its group coordinator has created and loaded __consumer_offsets."""
    from confluent_kafka import KafkaError, KafkaException

    deadline = time.monotonic() + 30
    while True:
        try:
            return call()
        except KafkaException as e:
            err = e.args[0]
            if not (err.retriable() or err.code() == KafkaError.NOT_COORDINATOR) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def groups(bootstrap: str, group: str) -> dict:
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = sorted(g.group_id for g in admin.list_consumer_groups().result(30).valid)
    described = settled(lambda: admin.describe_consumer_groups([group])[group].result(30))
    offsets = settled(lambda: admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)])[group].result(30))
    committed = [(tp.topic, tp.partition, tp.offset) for tp in offsets.topic_partitions]
    return {"listed": listed, "kafka.group.id state": str(described.state), "members": len(described.members),
            "committed": committed}


def test_spark_jobs_same_on_kafka_and_minibroker(spark, kafka_broker_module, kafka_reference_module, tmp_path):
    base_ms = (int(time.time() * 1000) // 1000) * 1000 - 600_000
    got = {}
    for name, bootstrap in (("kafka", kafka_reference_module.bootstrap), ("minibroker", kafka_broker_module.bootstrap)):
        # Spark pools its consumers by group id and refuses the same id with other settings (here
        # the bootstrap servers), so each broker gets its own.
        group = f"spark-batch-{name}"
        got[name] = spark_jobs(spark, bootstrap, group, str(tmp_path / name), base_ms)
        got[name]["groups"] = groups(bootstrap, group)
    print("groups after the Spark jobs, on Kafka:", got["kafka"]["groups"])
    assert got["minibroker"] == got["kafka"]
    mini = got["minibroker"]
    assert len(mini["batch"]) == N and [len(b) for b in mini["stream"]] == [120, 120, 60]
    assert mini["stream_end"] == {TOPIC: {"0": N // 2, "1": N // 2}}
    # Spark's consumers never join nor commit: only the plain client's group is listed.
    assert mini["groups"]["listed"] == ["plain-group"]
