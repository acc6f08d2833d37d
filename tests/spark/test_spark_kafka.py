"""Spark pipelines through the "minikafka" data source against a live broker.

Batch read (exact rows and columns), availableNow streaming in rate-limited micro-batches with a
restart from the checkpoint, batch write read back with confluent-kafka, and by-timestamp starts.
"""

from __future__ import annotations

import json
import time

import pytest

from minibroker.spark import FORMAT, kafka_schema
from tests.spark.helpers import EVENTS, N_EVENTS, create_topic, event, produce_events


def read(spark, bootstrap: str, **options: str):
    r = spark.read.format(FORMAT).option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def expected_row(i: int, base_ms: int) -> tuple:
    return (f"k{i}".encode(), json.dumps(event(i)).encode(), EVENTS, i % 2, i // 2, base_ms + i * 10, 0,
            [("n", str(i).encode())])


def test_batch_read_exact_rows_and_columns(spark, events):
    started = time.monotonic()
    df = read(spark, events.bootstrap, subscribe=EVENTS, includeHeaders="true")
    assert df.schema == kafka_schema(True)
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
    # One Spark partition per Kafka partition.
    assert df.rdd.getNumPartitions() == 2
    rows = df.selectExpr("key", "value", "topic", "partition", "offset", "unix_millis(timestamp) AS ts",
                         "timestampType", "headers").collect()
    got = sorted((bytes(r.key), bytes(r.value), r.topic, r.partition, r.offset, r.ts, r.timestampType,
                  [(h.key, bytes(h.value)) for h in r.headers]) for r in rows)
    want = sorted(expected_row(i, events.base_ms) for i in range(N_EVENTS))
    assert len(got) == N_EVENTS
    assert got == want
    print(f"batch read of {N_EVENTS} rows: {time.monotonic() - started:.1f} s")


def test_batch_read_ranges_min_partitions_and_assign(spark, events):
    df = read(spark, events.bootstrap, subscribe=EVENTS, minPartitions="6",
              startingOffsets=json.dumps({EVENTS: {"0": 100, "1": -2}}),
              endingOffsets=json.dumps({EVENTS: {"0": 400, "1": -1}}))
    assert df.rdd.getNumPartitions() >= 6
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == sorted([(0, o) for o in range(100, 400)] + [(1, o) for o in range(500)])
    only_p1 = read(spark, events.bootstrap, assign=json.dumps({EVENTS: [1]}))
    assert only_p1.count() == N_EVENTS // 2
    assert {r.partition for r in only_p1.select("partition").distinct().collect()} == {1}
    by_pattern = read(spark, events.bootstrap, subscribePattern="ev.*s")
    assert by_pattern.count() == N_EVENTS


def test_starting_offsets_by_timestamp(spark, events):
    # 5 ms before event 600 (partition 0) and 5 ms before event 601 (partition 1): the first row of
    # each partition is the first record at or after the time, found through the .timeindex.
    stamps = {EVENTS: {"0": events.ts(600) - 5, "1": events.ts(601) - 5}}
    df = read(spark, events.bootstrap, subscribe=EVENTS, startingOffsetsByTimestamp=json.dumps(stamps))
    rows = sorted((r.partition, r.offset, bytes(r.key)) for r in df.select("partition", "offset", "key").collect())
    first = {p: (off, key) for p, off, key in reversed(rows)}
    assert first == {0: (300, b"k600"), 1: (300, b"k601")}
    assert len(rows) == N_EVENTS - 600
    # startingTimestamp: one time for every partition.
    df2 = read(spark, events.bootstrap, subscribe=EVENTS, startingTimestamp=str(events.ts(900)))
    assert sorted(bytes(r.key) for r in df2.select("key").collect()) == sorted(f"k{i}".encode() for i in range(900, 1000))
    # No record that late: strategy "error" fails the query, "latest" reads nothing.
    late = str(events.ts(N_EVENTS) + 60_000)
    with pytest.raises(Exception, match="No offset matched"):
        read(spark, events.bootstrap, subscribe=EVENTS, startingTimestamp=late).count()
    assert read(spark, events.bootstrap, subscribe=EVENTS, startingTimestamp=late,
                startingOffsetsByTimestampStrategy="latest").count() == 0


def test_available_now_micro_batches_and_restart(spark, kafka_broker_module, tmp_path):
    topic = "stream-events"
    create_topic(kafka_broker_module.bootstrap, topic)
    base_ms = int(time.time() * 1000) - 600_000
    produce_events(kafka_broker_module.bootstrap, topic, 0, N_EVENTS, base_ms)
    checkpoint = str(tmp_path / "checkpoint")
    batches: list[tuple[int, list[tuple[int, int, bytes]]]] = []

    def collect(df, batch_id: int) -> None:
        batches.append((batch_id, [(r.partition, r.offset, bytes(r.key)) for r in
                                   df.select("partition", "offset", "key").collect()]))

    def run() -> dict:
        q = (spark.readStream.format(FORMAT).option("kafka.bootstrap.servers", kafka_broker_module.bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", "400").load()
             .writeStream.foreachBatch(collect).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
        assert q.awaitTermination(120)
        assert q.exception() is None
        return json.loads(q.lastProgress["sources"][0]["endOffset"]) if q.lastProgress else {}

    started = time.monotonic()
    end = run()
    first_run = time.monotonic() - started
    # 1 000 records in two equal partitions, at most 400 per trigger: 400, 400, 200.
    assert [len(rows) for _, rows in batches] == [400, 400, 200]
    assert end == {topic: {"0": 500, "1": 500}}
    assert [b for b, _ in batches] == [0, 1, 2]
    seen = [row for _, rows in batches for row in rows]
    assert sorted(seen) == sorted((i % 2, i // 2, f"k{i}".encode()) for i in range(N_EVENTS))

    produce_events(kafka_broker_module.bootstrap, topic, N_EVENTS, 100, base_ms)
    batches.clear()
    started = time.monotonic()
    end = run()
    second_run = time.monotonic() - started
    # The restarted query reads exactly the 100 new records, in one batch numbered after the first run's.
    assert [(b, len(rows)) for b, rows in batches] == [(3, 100)]
    assert sorted(batches[0][1]) == sorted((i % 2, i // 2, f"k{i}".encode()) for i in range(N_EVENTS, N_EVENTS + 100))
    assert end == {topic: {"0": 550, "1": 550}}
    print(f"availableNow: first run (3 batches) {first_run:.1f} s, restart {second_run:.1f} s")


def test_batch_write_read_back(spark, kafka_broker_module):
    from confluent_kafka import Consumer, TopicPartition

    topic = "written"
    create_topic(kafka_broker_module.bootstrap, topic)
    df = spark.range(500).selectExpr(
        "concat('w', CAST(id AS STRING)) AS key",
        "CAST(to_json(named_struct('id', id, 'sq', id * id)) AS BINARY) AS value",
        "CAST(id % 2 AS INT) AS partition",
        "array(named_struct('key', 'src', 'value', CAST('spark' AS BINARY))) AS headers",
        "id AS ignored_column",
    )
    started = time.monotonic()
    df.write.format(FORMAT).option("kafka.bootstrap.servers", kafka_broker_module.bootstrap).option("topic", topic) \
        .mode("append").save()
    print(f"batch write of 500 rows: {time.monotonic() - started:.1f} s")

    c = Consumer({"bootstrap.servers": kafka_broker_module.bootstrap, "group.id": "read-back", "enable.auto.commit": False,
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
    got, eof, deadline = [], set(), time.monotonic() + 30
    while len(eof) < 2 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            eof.add(m.partition())
            continue
        got.append((m.partition(), m.key(), m.value(), m.headers()))
    c.close()
    want = [(i % 2, f"w{i}".encode(), json.dumps({"id": i, "sq": i * i}, separators=(",", ":")).encode(),
             [("src", b"spark")]) for i in range(500)]
    assert sorted(got) == sorted(want)


def test_schema_and_column_checks_like_spark(spark, kafka_broker_module):
    no_value = spark.range(1).selectExpr("CAST(id AS STRING) AS key")
    with pytest.raises(Exception, match="Required attribute 'value' not found"):
        no_value.write.format(FORMAT).option("kafka.bootstrap.servers", kafka_broker_module.bootstrap) \
            .option("topic", "x").mode("append").save()
    with pytest.raises(Exception, match="fixed schema"):
        spark.read.format(FORMAT).schema("value STRING").option("kafka.bootstrap.servers", kafka_broker_module.bootstrap) \
            .option("subscribe", "x").load().collect()
    no_topic = spark.range(1).selectExpr("CAST(id AS STRING) AS value")
    with pytest.raises(Exception, match="topic option required"):
        no_topic.write.format(FORMAT).option("kafka.bootstrap.servers", kafka_broker_module.bootstrap).mode("append").save()
