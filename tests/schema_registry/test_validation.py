"""Broker-side schema validation with Confluent Server's topic keys (issue 36):
confluent.value.schema.validation / confluent.key.schema.validation refuse records not framed with
a schema id of the topic's subject, with INVALID_RECORD and a message naming the record and why."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from minibroker.testing import BrokerThread
from minibroker_protocol.apis import produce
from minibroker_protocol.errors import ErrorCode
from tests.integration.helpers import RawClient, create_topic, module_broker, offsets, records_batch, unique
from tests.schema_registry.helpers import REGISTRY_OVERRIDES, record, registry_url

SCHEMA = record("Event", {"name": "n", "type": "int"})


@pytest.fixture(scope="module")
def broker(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    with module_broker(tmp_path_factory, REGISTRY_OVERRIDES) as b:
        yield b


def validated_topic(b: BrokerThread, **configs: str) -> str:
    """A topic created through CreateTopics (AdminClient), so the keys are accepted as Kafka configs."""
    topic = unique("valid")
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    futures = admin.create_topics([NewTopic(topic, 1, 1, config=configs or
                                            {"confluent.value.schema.validation": "true"})])
    futures[topic].result(30)
    return topic


def produce_raw(b: BrokerThread, topic: str, values: list[bytes | None], keys: list[bytes | None] | None = None,
                compression: int = 0) -> Any:
    R = produce.REQUEST
    req = R(transactional_id=None, acks=-1, timeout_ms=5_000, topic_data=[R.TopicProduceData(
        name=topic, partition_data=[R.PartitionProduceData(
            index=0, records=records_batch(values, keys=keys, compression=compression))])])
    with RawClient(b.bootstrap) as raw:
        return raw.call(produce.API, 9, req).responses[0].partition_responses[0]


def framed(schema_id: int, payload: bytes = b"\x02") -> bytes:
    return b"\x00" + struct.pack(">I", schema_id) + payload


def test_records_of_the_subject_pass_others_are_refused(broker: BrokerThread) -> None:
    topic = validated_topic(broker)
    client = SchemaRegistryClient({"url": registry_url(broker)})
    ser = AvroSerializer(client, SCHEMA)
    good = ser({"n": 1}, SerializationContext(topic, MessageField.VALUE))
    schema_id = struct.unpack(">I", good[1:5])[0]
    # confluent-kafka's producer, serializer and all: accepted
    p = Producer({"bootstrap.servers": broker.bootstrap})
    p.produce(topic, good)
    assert p.flush(30) == 0
    assert offsets(broker, topic) == (0, 1)
    # not framed: INVALID_RECORD, each refused record named with its reason, nothing appended
    other_id = client.register_schema(unique("elsewhere-value"), Schema(record("Other", {"name": "s", "type": "string"}),
                                                                      "AVRO"))
    resp = produce_raw(broker, topic, [good, b"plain text", framed(9999), framed(other_id), None])
    assert resp.error_code == ErrorCode.INVALID_RECORD
    errors = {e.batch_index: e.batch_index_error_message for e in resp.record_errors}
    assert set(errors) == {1, 2, 3}, errors  # the good one and the tombstone pass
    assert "does not start with the magic byte 0" in errors[1] and f"Record 1 of {topic}-0" in errors[1]
    assert "schema id 9999" in errors[2] and f"'{topic}-value'" in errors[2]
    assert f"schema id {other_id}" in errors[3]
    assert "confluent.value.schema.validation" in resp.error_message
    assert offsets(broker, topic) == (0, 1)
    # the same good record in a compressed batch (lz4) passes
    assert produce_raw(broker, topic, [good, good], compression=3).error_code == 0
    assert offsets(broker, topic) == (0, 3)
    assert schema_id in client.get_versions(f"{topic}-value") or client.get_latest_version(f"{topic}-value")


def test_confluent_producer_sees_invalid_record(broker: BrokerThread) -> None:
    topic = validated_topic(broker)
    errors: list[KafkaError] = []
    p = Producer({"bootstrap.servers": broker.bootstrap, "retries": 0})
    p.produce(topic, b"not avro", on_delivery=lambda err, msg: errors.append(err))
    p.flush(30)
    assert len(errors) == 1 and errors[0] is not None and errors[0].code() == KafkaError.INVALID_RECORD


def test_key_validation(broker: BrokerThread) -> None:
    topic = validated_topic(broker, **{"confluent.key.schema.validation": "true"})
    client = SchemaRegistryClient({"url": registry_url(broker)})
    key = AvroSerializer(client, SCHEMA)({"n": 7}, SerializationContext(topic, MessageField.KEY))
    assert produce_raw(broker, topic, [b"any value"], keys=[key]).error_code == 0
    resp = produce_raw(broker, topic, [b"any value", b"v"], keys=[b"plain key", None])
    assert resp.error_code == ErrorCode.INVALID_RECORD
    assert [(e.batch_index, "the key does not start" in e.batch_index_error_message) for e in resp.record_errors] == [
        (0, True)]


def test_topics_without_the_keys_take_anything(broker: BrokerThread) -> None:
    topic = unique("free")
    create_topic(broker, topic)
    assert produce_raw(broker, topic, [b"plain", b"\x00\x00\x00\x00\x63"]).error_code == 0


def test_validation_without_a_registry_is_refused_with_a_reason(tmp_path_factory: Any) -> None:
    with module_broker(tmp_path_factory) as b:
        topic = validated_topic(b)
        resp = produce_raw(b, topic, [framed(1)])
        assert resp.error_code == ErrorCode.INVALID_RECORD
        assert "schema.registry.port" in resp.error_message
