"""A broker of the test's own, with its own config, for tests that change broker-wide state."""

import pytest
from confluent_kafka import Producer


@pytest.mark.minibroker(overrides={"num.partitions": 4})
def test_auto_created_topic_gets_the_broker_default(kafka_broker_isolated):
    b = kafka_broker_isolated
    producer = Producer({"bootstrap.servers": b.bootstrap})
    producer.produce("fresh", b"x", partition=3)
    assert producer.flush(10) == 0
    assert b.topics() == ["fresh"]
    assert b.end_offsets("fresh") == {0: 0, 1: 0, 2: 0, 3: 1}
