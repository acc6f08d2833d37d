"""Option parsing with Spark's names, defaults and errors (minibroker/spark/options.py)."""

from __future__ import annotations

import pytest

from minibroker.spark.options import (
    Assign,
    CaseInsensitiveOptions,
    EarliestLimit,
    GlobalTimestamp,
    LatestLimit,
    SpecificOffsets,
    SpecificTimestamps,
    Subscribe,
    SubscribePattern,
    sink_config,
    source_config,
)

B = {"kafka.bootstrap.servers": "h:1"}


def batch(**opts):
    return source_config({**B, **opts}, streaming=False)


def stream(**opts):
    return source_config({**B, **opts}, streaming=True)


def test_strategies():
    assert batch(subscribe=" a, b ,,").strategy == Subscribe(("a", "b"))
    assert batch(subscribePattern="ev.*").strategy == SubscribePattern("ev.*")
    assert batch(assign='{"a":[0,2]}').strategy == Assign((("a", 0), ("a", 2)))
    assert Subscribe(("a", "zz")).select({"a": 2, "b": 1}) == [("a", 0), ("a", 1)]
    assert SubscribePattern("e.*").select({"ev": 1, "x": 1, "__consumer_offsets": 50, "sev": 1}) == [("ev", 0)]
    with pytest.raises(ValueError, match="One of the following options must be specified"):
        batch()
    with pytest.raises(ValueError, match="Only one of the following options"):
        batch(subscribe="a", assign='{"a":[0]}')
    with pytest.raises(ValueError, match="No topics to subscribe to"):
        batch(subscribe=" , ")
    with pytest.raises(ValueError, match="No topicpartitions to assign"):
        batch(assign="a:0")
    with pytest.raises(ValueError, match="Expected e.g."):
        batch(assign='{"a": "0"}')


def test_keys_are_case_insensitive_values_are_not():
    opts = CaseInsensitiveOptions({"Kafka.Bootstrap.Servers": "h:1", "SUBSCRIBE": "Topic",
                                   "STARTINGOFFSETS": "Latest", "failondataloss": "FALSE"})
    cfg = source_config(opts, streaming=True)
    assert cfg.strategy == Subscribe(("Topic",))
    assert cfg.starting == LatestLimit()
    assert cfg.fail_on_data_loss is False
    assert cfg.consumer["bootstrap.servers"] == "h:1"
    assert "startingOffsets" in opts and opts["startingoffsets"] == "Latest"


def test_offset_limits_and_defaults():
    assert batch(subscribe="t").starting == EarliestLimit()
    assert batch(subscribe="t").ending == LatestLimit()
    assert stream(subscribe="t").starting == LatestLimit()
    assert stream(subscribe="t").ending is None
    assert batch(subscribe="t", startingOffsets='{"t":{"0":5,"1":-2}}').starting == SpecificOffsets(
        {("t", 0): 5, ("t", 1): -2})
    # Spark's preference: startingTimestamp, then startingOffsetsByTimestamp, then startingOffsets.
    both = {"subscribe": "t", "startingOffsets": "earliest", "startingOffsetsByTimestamp": '{"t":{"0":100}}'}
    assert batch(**both).starting == SpecificTimestamps({("t", 0): 100}, False)
    assert batch(**both, startingTimestamp="7").starting == GlobalTimestamp(7, False)
    assert batch(**both, startingOffsetsByTimestampStrategy="LATEST").starting == SpecificTimestamps(
        {("t", 0): 100}, True)


@pytest.mark.parametrize("opts, message", [
    ({"startingOffsets": "latest"}, "starting offset can't be latest for batch queries"),
    ({"startingOffsets": '{"t":{"0":-1}}'}, "startingOffsets for t-0 can't be latest"),
    ({"endingOffsets": "earliest"}, "ending offset can't be earliest for batch queries"),
    ({"endingOffsets": '{"t":{"0":-2}}'}, "ending offset for t-0 can't be earliest"),
    ({"startingOffsets": '{"t":{"0":9}}', "endingOffsets": '{"t":{"0":3}}'}, "greater than the end offset"),
    ({"startingOffsets": '{"t":{"0":1}}', "endingOffsets": '{"t":{"1":3}}'}, "Different topic partitions"),
    ({"startingTimestamp": "soon"}, "Expected a single long value"),
    ({"minPartitions": "0"}, "minPartitions must be positive"),
    ({"kafka.auto.offset.reset": "earliest"}, "'auto.offset.reset' is not supported"),
    ({"kafka.value.deserializer": "x"}, "'value.deserializer' is not supported"),
    ({"kafka.enable.auto.commit": "true"}, "'enable.auto.commit' is not supported"),
    ({"failOnDataLoss": "maybe"}, "must be 'true' or 'false'"),
])
def test_batch_option_errors(opts, message):
    with pytest.raises(ValueError, match=message):
        batch(subscribe="t", **opts)


def test_stream_option_errors():
    with pytest.raises(ValueError, match="ending offset not valid in streaming queries"):
        stream(subscribe="t", endingOffsets="latest")
    with pytest.raises(ValueError, match="ending timestamp not valid in streaming queries"):
        stream(subscribe="t", endingOffsetsByTimestamp='{"t":{"0":1}}')
    with pytest.raises(ValueError, match="maxOffsetsPerTrigger must be positive"):
        stream(subscribe="t", maxOffsetsPerTrigger="0")
    with pytest.raises(ValueError, match="'kafka.bootstrap.servers' must be specified"):
        source_config({"subscribe": "t"}, streaming=True)


def test_consumer_settings():
    cfg = stream(subscribe="t", maxOffsetsPerTrigger="10", **{"kafka.fetch.min.bytes": "1"})
    c = cfg.consumer
    assert c["fetch.min.bytes"] == "1"
    assert c["group.id"].startswith("spark-kafka-source-") and c["group.id"].endswith("-executor")
    # Spark reads uncommitted by default (Java's default); librdkafka's default differs.
    assert c["isolation.level"] == "read_uncommitted"
    assert c["enable.auto.commit"] == "false" and c["auto.offset.reset"] == "error"
    assert cfg.max_offsets_per_trigger == 10
    assert "fetch.min.bytes" not in cfg.admin and cfg.admin["bootstrap.servers"] == "h:1"
    assert batch(subscribe="t").consumer["group.id"].startswith("spark-kafka-relation-")
    assert batch(subscribe="t", groupIdPrefix="mine").consumer["group.id"].startswith("mine-")
    assert batch(subscribe="t", **{"kafka.group.id": "g"}).consumer["group.id"] == "g"
    assert batch(subscribe="t", **{"kafka.isolation.level": "read_committed"}).consumer["isolation.level"] == \
        "read_committed"
    # maxOffsetsPerTrigger is a streaming option; batch queries ignore it, as Spark does.
    assert batch(subscribe="t", maxOffsetsPerTrigger="10").max_offsets_per_trigger is None


def test_sink_settings():
    cfg = sink_config({**B, "topic": " out ", "kafka.acks": "1"})
    assert cfg.topic == "out"
    # acks=1 conflicts with idempotence, so it stays off, as with the Java producer.
    assert cfg.producer == {"bootstrap.servers": "h:1", "acks": "1", "partitioner": "murmur2_random"}
    assert sink_config(B).producer["enable.idempotence"] == "true"
    assert sink_config({**B, "kafka.enable.idempotence": "false"}).producer["enable.idempotence"] == "false"
    assert sink_config({**B, "kafka.partitioner": "random"}).producer["partitioner"] == "random"
    assert sink_config(B).topic is None
    with pytest.raises(ValueError, match="'key.serializer' is not supported"):
        sink_config({**B, "kafka.key.serializer": "x"})
