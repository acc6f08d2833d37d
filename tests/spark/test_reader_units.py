"""The reader and writer pieces without a SparkSession, against a live broker.

Spark calls these methods itself; here they are called the way Spark does, so data loss, the
availableNow target and Spark 4.0/4.1's no-argument latestOffset() are checked quickly.
"""

from __future__ import annotations

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from minibroker.spark.consume import DataLossError, read_range
from minibroker.spark.offsets import OffsetRange
from minibroker.spark.options import sink_config, source_config
from minibroker.spark.produce import produce_all, records_from_columns
from minibroker.spark.source import KafkaBatchReader, KafkaStreamReader, _arrow_schema, kafka_schema
from tests.spark.helpers import create_topic


def fill(bootstrap: str, topic: str, n: int, first: int = 0) -> None:
    cfg = sink_config({"kafka.bootstrap.servers": bootstrap})
    cols = {"topic": [topic] * n, "key": [f"k{i}" for i in range(first, first + n)],
            "value": [f"v{i}".encode() for i in range(first, first + n)], "partition": [i % 2 for i in range(n)]}
    assert produce_all(cfg, records_from_columns(cols, n, None)) == n


def rows(cfg, r: OffsetRange) -> list[tuple]:
    out = []
    for batch in read_range(cfg, r, _arrow_schema(kafka_schema(cfg.include_headers))):
        d = batch.to_pydict()
        out += list(zip(d["partition"], d["offset"], d["key"], d["value"], strict=True))
    return out


def test_read_range_is_exact_and_data_loss_follows_the_option(kafka_broker_isolated):
    create_topic(kafka_broker_isolated.bootstrap, "t")
    fill(kafka_broker_isolated.bootstrap, "t", 40)  # 20 per partition
    cfg = source_config({"kafka.bootstrap.servers": kafka_broker_isolated.bootstrap, "subscribe": "t"}, streaming=False)
    assert rows(cfg, OffsetRange("t", 0, 5, 12)) == [(0, o, f"k{2 * o}".encode(), f"v{2 * o}".encode())
                                                      for o in range(5, 12)]
    assert rows(cfg, OffsetRange("t", 1, 19, 20)) == [(1, 19, b"k39", b"v39")]
    # Offsets past the log end: the records are not there (a recreated topic, say).
    with pytest.raises(DataLossError, match="failOnDataLoss"):
        rows(cfg, OffsetRange("t", 0, 30, 35))
    lenient = source_config({"kafka.bootstrap.servers": kafka_broker_isolated.bootstrap, "subscribe": "t",
                             "failOnDataLoss": "false"}, streaming=False)
    assert rows(lenient, OffsetRange("t", 0, 30, 35)) == []


def test_stream_reader_offsets_limits_and_available_now(kafka_broker_isolated):
    create_topic(kafka_broker_isolated.bootstrap, "s")
    fill(kafka_broker_isolated.bootstrap, "s", 20)
    opts = {"kafka.bootstrap.servers": kafka_broker_isolated.bootstrap, "subscribe": "s", "startingOffsets": "earliest",
            "maxOffsetsPerTrigger": "8"}
    reader = KafkaStreamReader(source_config(opts, streaming=True), kafka_schema(False))
    start = reader.initialOffset()
    assert start == {"s": {"0": 0, "1": 0}}
    assert reader.getDefaultReadLimit() == ReadMaxRows(8)
    end = reader.latestOffset(start, ReadMaxRows(8))
    assert end == {"s": {"0": 4, "1": 4}}
    parts = reader.partitions(start, end)
    got = [r for p in parts for r in rows(reader.cfg, p.range)]
    assert sorted((p, o) for p, o, _, _ in got) == [(0, o) for o in range(4)] + [(1, o) for o in range(4)]
    assert reader.latestOffset(end, ReadAllAvailable()) == {"s": {"0": 10, "1": 10}}

    # availableNow: the target is fixed when the trigger is prepared; later records wait.
    reader.prepareForTriggerAvailableNow()
    fill(kafka_broker_isolated.bootstrap, "s", 6, first=20)
    assert reader.latestOffset(end, ReadAllAvailable()) == {"s": {"0": 10, "1": 10}}
    assert reader.partitions(end, end) == []

    # Spark 4.0/4.1 call latestOffset() without arguments (and before initialOffset()): the cap
    # applies from the end of the last batch Spark planned; before one, nothing is capped.
    old = KafkaStreamReader(source_config(opts, streaming=True), kafka_schema(False))
    assert old.latestOffset() == {"s": {"0": 13, "1": 13}}
    old.partitions({"s": {"0": 0, "1": 0}}, {"s": {"0": 4, "1": 4}})
    assert old.latestOffset() == {"s": {"0": 8, "1": 8}}
    old.partitions({"s": {"0": 4, "1": 4}}, {"s": {"0": 8, "1": 8}})
    old.commit({"s": {"0": 4, "1": 4}})  # commits trail planning; the base does not move back
    assert old.latestOffset() == {"s": {"0": 12, "1": 12}}
    # The reader travels to workers without its AdminClient.
    assert old.__getstate__()["_lookup"] is None


def test_batch_reader_on_an_empty_topic_plans_one_empty_task(kafka_broker_isolated):
    create_topic(kafka_broker_isolated.bootstrap, "empty")
    cfg = source_config({"kafka.bootstrap.servers": kafka_broker_isolated.bootstrap, "subscribe": "empty"}, streaming=False)
    parts = KafkaBatchReader(cfg, kafka_schema(False)).partitions()
    assert [p.range.size for p in parts] == [0]
    assert rows(cfg, parts[0].range) == []


def test_null_topic_without_topic_option_is_an_error():
    with pytest.raises(ValueError, match="null topic present in the data"):
        list(records_from_columns({"topic": [None], "value": [b"x"]}, 1, None))
    # The topic option overrides the column.
    assert list(records_from_columns({"topic": [None], "value": [b"x"]}, 1, "t")) == [("t", None, b"x", None, None)]
