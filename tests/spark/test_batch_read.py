"""Batch reads with Spark's own Kafka connector (format "kafka") against minibroker, row by row.

Every expected row is what the plain client (confluent-kafka, tests/spark/helpers.py) wrote.
"""

from __future__ import annotations

import json

import pytest

from tests.spark.helpers import EVENTS, N_EVENTS, create_topic, event, produce_events

COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]


def read(spark, bootstrap: str, **options: str):
    r = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def expected_row(i: int, base_ms: int) -> tuple:
    return (f"k{i}".encode(), json.dumps(event(i)).encode(), EVENTS, i % 2, i // 2, base_ms + i * 10, 0,
            [("n", str(i).encode())])


def rows_of(df) -> list[tuple]:
    rows = df.selectExpr("key", "value", "topic", "partition", "offset", "unix_millis(timestamp) AS ts",
                         "timestampType", "headers").collect()
    return sorted((bytes(r.key), bytes(r.value), r.topic, r.partition, r.offset, r.ts, r.timestampType,
                   [(h.key, bytes(h.value)) for h in r.headers]) for r in rows)


def test_subscribe_columns_types_and_headers(spark, events):
    df = read(spark, events.bootstrap, subscribe=EVENTS, includeHeaders="true")
    # Spark's fixed schema: the seven columns, then headers with includeHeaders.
    assert [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema.fields] == [
        ("key", "binary", True), ("value", "binary", True), ("topic", "string", True),
        ("partition", "int", True), ("offset", "bigint", True), ("timestamp", "timestamp", True),
        ("timestampType", "int", True), ("headers", "array<struct<key:string,value:binary>>", True)]
    assert df.rdd.getNumPartitions() == 2  # one Spark partition per Kafka partition
    assert rows_of(df) == sorted(expected_row(i, events.base_ms) for i in range(N_EVENTS))
    plain = read(spark, events.bootstrap, subscribe=EVENTS)
    assert plain.columns == COLUMNS


def test_subscribe_pattern_assign_and_offset_ranges(spark, events):
    want = {(i % 2, i // 2): expected_row(i, events.base_ms) for i in range(N_EVENTS)}
    # Spark's admin path finds the pattern anywhere in a name (Regex.findFirstIn, unlike the Java
    # consumer's whole-name match): anchored, it leaves this topic out.
    other = "evenTs-other"
    create_topic(events.bootstrap, other)
    produce_events(events.bootstrap, other, 0, 3, events.base_ms)
    by_pattern = read(spark, events.bootstrap, subscribePattern="^ev.*s$", includeHeaders="true",
                      startingOffsets="earliest", endingOffsets="latest")
    assert rows_of(by_pattern) == sorted(want.values())

    only_p1 = read(spark, events.bootstrap, assign=json.dumps({EVENTS: [1]}), includeHeaders="true")
    assert rows_of(only_p1) == sorted(v for (p, _), v in want.items() if p == 1)

    # JSON offsets: -2 is earliest, -1 latest; endingOffsets is exclusive.
    ranged = read(spark, events.bootstrap, subscribe=EVENTS, includeHeaders="true", minPartitions="6",
                  startingOffsets=json.dumps({EVENTS: {"0": 100, "1": -2}}),
                  endingOffsets=json.dumps({EVENTS: {"0": 400, "1": -1}}))
    assert ranged.rdd.getNumPartitions() >= 6
    assert rows_of(ranged) == sorted(v for (p, o), v in want.items() if (p == 0 and 100 <= o < 400) or p == 1)

    # Spark's own checks of the option values, before any request.
    with pytest.raises(Exception, match="latest"):
        read(spark, events.bootstrap, subscribe=EVENTS, startingOffsets="latest").count()
    with pytest.raises(Exception, match="earliest"):
        read(spark, events.bootstrap, subscribe=EVENTS, endingOffsets="earliest").count()


def test_offsets_by_timestamp(spark, events):
    # 5 ms before event 600 (partition 0) and before event 601 (partition 1): each partition starts
    # at the first record at or after the time (ListOffsets by time, found through the .timeindex).
    stamps = {EVENTS: {"0": events.ts(600) - 5, "1": events.ts(601) - 5}}
    df = read(spark, events.bootstrap, subscribe=EVENTS, includeHeaders="true",
              startingOffsetsByTimestamp=json.dumps(stamps))
    assert rows_of(df) == sorted(expected_row(i, events.base_ms) for i in range(600, N_EVENTS))

    # startingTimestamp for every partition, endingTimestamp / endingOffsetsByTimestamp for the end.
    df = read(spark, events.bootstrap, subscribe=EVENTS, includeHeaders="true",
              startingTimestamp=str(events.ts(900)), endingTimestamp=str(events.ts(950)))
    assert rows_of(df) == sorted(expected_row(i, events.base_ms) for i in range(900, 950))
    ends = {EVENTS: {"0": events.ts(20), "1": events.ts(11)}}
    df = read(spark, events.bootstrap, subscribe=EVENTS, includeHeaders="true",
              endingOffsetsByTimestamp=json.dumps(ends))
    # The end is exclusive: partition 0 stops before event 20, partition 1 before event 11.
    assert rows_of(df) == sorted(expected_row(i, events.base_ms) for i in [*range(0, 20, 2), *range(1, 11, 2)])

    # No record that late: the "error" strategy (default) fails the query, "latest" reads nothing.
    late = str(events.ts(N_EVENTS) + 60_000)
    with pytest.raises(Exception, match="[Tt]imestamp"):
        read(spark, events.bootstrap, subscribe=EVENTS, startingTimestamp=late).count()
    assert read(spark, events.bootstrap, subscribe=EVENTS, startingTimestamp=late,
                startingOffsetsByTimestampStrategy="latest").count() == 0


def produce_transactions(bootstrap: str, topic: str) -> list[bytes]:
    """Three transactions of 10 records each on partition 0, the middle one aborted; returns the
    committed values in order."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-txn"})
    p.init_transactions(30)
    committed: list[bytes] = []
    for t, commit in enumerate((True, False, True)):
        p.begin_transaction()
        values = [f"t{t}-{j}".encode() for j in range(10)]
        for v in values:
            p.produce(topic, value=v, partition=0)
        if commit:
            p.commit_transaction(30)
            committed += values
        else:
            p.flush(30)
            p.abort_transaction(30)
    return committed


def test_read_committed_skips_aborted_transactions(spark, kafka_broker_module):
    from tests.spark.helpers import consume_all

    topic = "txn"
    bootstrap = kafka_broker_module.bootstrap
    create_topic(bootstrap, topic, 1)
    committed = produce_transactions(bootstrap, topic)

    def values(**options: str) -> list[tuple[int, bytes]]:
        df = read(spark, bootstrap, subscribe=topic, **options)
        return sorted((r.offset, bytes(r.value)) for r in df.select("offset", "value").collect())

    got = values(**{"kafka.isolation.level": "read_committed"})
    plain = consume_all(bootstrap, topic, 1, isolation="read_committed")
    assert [v for _, v in got] == committed
    assert got == [(o, v) for _, o, _, v, _, _ in plain]
    # Spark's default is read_uncommitted: the aborted records too (never the control records).
    uncommitted = values()
    assert len(uncommitted) == 30
    assert uncommitted == [(o, v) for _, o, _, v, _, _ in consume_all(bootstrap, topic, 1)]

