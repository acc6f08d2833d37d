"""Structured streaming with Spark's own Kafka connector against minibroker, with a checkpoint.

Each query writes its micro-batches through foreachBatch into a list on the driver, so a test sees
every batch's rows as (partition, offset, key) and compares them with what the plain client wrote.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable

from pyspark.errors import StreamingQueryException

from tests.spark.helpers import N_EVENTS, create_topic, produce_events

Row = tuple[str, int, int, bytes]  # topic, partition, offset, key


def wait_until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class Batches:
    """foreachBatch's sink: every micro-batch's rows, and when each arrived."""

    def __init__(self) -> None:
        self.items: list[tuple[int, list[Row], float]] = []

    def __call__(self, df, batch_id: int) -> None:
        rows = [(r.topic, r.partition, r.offset, bytes(r.key))
                for r in df.select("topic", "partition", "offset", "key").collect()]
        self.items.append((batch_id, sorted(rows), time.monotonic()))

    def sizes(self) -> list[int]:
        return [len(rows) for _, rows, _ in self.items if rows]

    def rows(self) -> list[Row]:
        return sorted(r for _, rows, _ in self.items for r in rows)


def stream(spark, bootstrap: str, **options: str):
    r = spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def events_rows(topic: str, first: int, count: int) -> list[Row]:
    return sorted((topic, i % 2, i // 2, f"k{i}".encode()) for i in range(first, first + count))


def run_available_now(spark, bootstrap: str, checkpoint: str, sink: Batches, **options: str):
    q = (stream(spark, bootstrap, **options).writeStream.foreachBatch(sink)
         .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    try:
        q.awaitTermination(120)
    except StreamingQueryException:
        pass  # the caller looks at q.exception()
    return q


def test_available_now_max_offsets_per_trigger_and_restart(spark, kafka_broker_module, tmp_path):
    bootstrap = kafka_broker_module.bootstrap
    topic = "avail"
    create_topic(bootstrap, topic)
    base_ms = int(time.time() * 1000) - 600_000
    produce_events(bootstrap, topic, 0, N_EVENTS, base_ms)
    checkpoint = str(tmp_path / "checkpoint")
    options = {"subscribe": topic, "startingOffsets": "earliest", "maxOffsetsPerTrigger": "400"}

    first = Batches()
    q = run_available_now(spark, bootstrap, checkpoint, first, **options)
    assert q.exception() is None
    # 1 000 records in two equal partitions, at most 400 per trigger (shared by lag): 400, 400, 200.
    assert first.sizes() == [400, 400, 200]
    assert [b for b, _, _ in first.items] == [0, 1, 2]
    assert first.rows() == events_rows(topic, 0, N_EVENTS)
    assert json.loads(q.lastProgress["sources"][0]["endOffset"]) == {topic: {"0": 500, "1": 500}}

    # A restart from the checkpoint reads exactly the records produced since, in a batch numbered
    # after the first run's; startingOffsets no longer applies.
    produce_events(bootstrap, topic, N_EVENTS, 100, base_ms)
    second = Batches()
    q = run_available_now(spark, bootstrap, checkpoint, second, **options)
    assert q.exception() is None
    assert [(b, len(rows)) for b, rows, _ in second.items] == [(3, 100)]
    assert second.rows() == events_rows(topic, N_EVENTS, 100)
    assert json.loads(q.lastProgress["sources"][0]["endOffset"]) == {topic: {"0": 550, "1": 550}}


def test_min_offsets_per_trigger_and_max_trigger_delay(spark, kafka_broker_module, tmp_path):
    bootstrap = kafka_broker_module.bootstrap
    topic = "min-offsets"
    create_topic(bootstrap, topic)
    base_ms = int(time.time() * 1000)
    sink = Batches()
    delay_s = 4
    q = (stream(spark, bootstrap, subscribe=topic, startingOffsets="earliest", minOffsetsPerTrigger="100",
                maxTriggerDelay=f"{delay_s}s")
         .writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "ckpt"))
         .trigger(processingTime="200 milliseconds").start())
    try:
        # Spark never delays a query's first trigger (the delay counts from the last trigger that
        # ran): wait for it, on the empty topic, before producing.
        wait_until(lambda: q.lastProgress is not None, 60, "the query's first trigger")
        started = time.monotonic()
        produce_events(bootstrap, topic, 0, 50, base_ms)
        time.sleep(1.0)
        # 50 < minOffsetsPerTrigger and maxTriggerDelay has not passed: no batch yet.
        assert sink.sizes() == []
        produce_events(bootstrap, topic, 50, 60, base_ms)
        sixty_in = time.monotonic()  # the first batch is planned after this
        wait_until(lambda: sink.sizes() != [], 30, "the first batch")
        assert time.monotonic() - started < delay_s, "the 110 records waited for maxTriggerDelay"
        assert sink.sizes() == [110]
        # 10 more: below the minimum, so they wait for maxTriggerDelay, then come as one batch.
        produce_events(bootstrap, topic, 110, 10, base_ms)
        wait_until(lambda: len(sink.sizes()) == 2, 30, "the delayed batch")
        assert sink.sizes() == [110, 10]
        # maxTriggerDelay counts from when the previous batch was planned, after sixty_in.
        assert sink.items[-1][2] - sixty_in >= delay_s
        assert sink.rows() == events_rows(topic, 0, 120)
    finally:
        q.stop()
    assert q.exception() is None


def test_fail_on_data_loss_after_delete_records(spark, kafka_broker_module, tmp_path):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    bootstrap = kafka_broker_module.bootstrap
    topic = "lossy"
    create_topic(bootstrap, topic)
    base_ms = int(time.time() * 1000)
    produce_events(bootstrap, topic, 0, 100, base_ms)
    checkpoint = tmp_path / "strict"
    first = Batches()
    q = run_available_now(spark, bootstrap, str(checkpoint), first, subscribe=topic, startingOffsets="earliest")
    assert q.exception() is None and first.rows() == events_rows(topic, 0, 100)
    shutil.copytree(checkpoint, tmp_path / "lenient")

    # 100 more (offsets 50..99 of each partition), then DeleteRecords below offset 75: the 25 records
    # of each partition the query would read next are gone.
    produce_events(bootstrap, topic, 100, 100, base_ms)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.delete_records([TopicPartition(topic, p, 75) for p in (0, 1)]).values():
        assert f.result(30).low_watermark == 75

    strict = Batches()
    q = run_available_now(spark, bootstrap, str(checkpoint), strict, subscribe=topic, failOnDataLoss="true")
    assert q.exception() is not None
    # Spark's executor saw the broker's OFFSET_OUT_OF_RANGE for offset 50 and stopped the query.
    assert "Some data may have been lost" in str(q.exception())
    assert "OffsetOutOfRangeException" in str(q.exception())
    assert strict.rows() == []

    lenient = Batches()
    q = run_available_now(spark, bootstrap, str(tmp_path / "lenient"), lenient, subscribe=topic,
                          failOnDataLoss="false")
    assert q.exception() is None
    # Read on from the new log start offset: exactly the records that were not deleted.
    assert lenient.rows() == sorted(r for r in events_rows(topic, 100, 100) if r[2] >= 75)


def test_subscribe_pattern_stream_picks_up_a_new_topic(spark, kafka_broker_module, tmp_path):
    bootstrap = kafka_broker_module.bootstrap
    base_ms = int(time.time() * 1000)
    create_topic(bootstrap, "metrics-a")
    produce_events(bootstrap, "metrics-a", 0, 20, base_ms)
    sink = Batches()
    q = (stream(spark, bootstrap, subscribePattern="^metrics-.*", startingOffsets="latest")
         .writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "ckpt"))
         .trigger(processingTime="200 milliseconds").start())
    try:
        # "latest" is fixed when the query first plans; wait for that before producing more.
        wait_until(lambda: q.lastProgress is not None, 60, "the query's first offsets")
        produce_events(bootstrap, "metrics-a", 20, 10, base_ms)
        create_topic(bootstrap, "metrics-b")
        produce_events(bootstrap, "metrics-b", 0, 6, base_ms)
        want = events_rows("metrics-a", 20, 10) + events_rows("metrics-b", 0, 6)
        wait_until(lambda: len(sink.rows()) >= len(want), 60, "rows of both topics")
        # The records before the start stay unread ("latest"); a topic that appears later is read
        # from its beginning, as Spark does for partitions discovered by a running query.
        assert sink.rows() == sorted(want)
    finally:
        q.stop()
    assert q.exception() is None
