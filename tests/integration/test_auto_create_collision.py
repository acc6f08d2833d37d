"""Metadata's auto-creation applies the '.'/'_' collision rule CreateTopics applies (issue 30,
finding 11): with `b.c` there, a Metadata that would auto-create `b_c` creates nothing; the client
gets UNKNOWN_TOPIC_OR_PARTITION and the broker logs Kafka's WARN line, as Kafka 4.4 answers
(its controller refuses the creation with INVALID_TOPIC_EXCEPTION, which only its log shows;
tests/reference/test_bounds_reference.py compares)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer

from minibroker.testing import BrokerThread
from minibroker_protocol.apis import metadata
from minibroker_protocol.errors import ErrorCode
from tests.integration.helpers import RawClient, module_broker, unique


@pytest.fixture(scope="module")
def broker(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    with module_broker(tmp_path_factory, {"auto.create.topics.enable": True}) as b:
        yield b


def test_auto_create_refuses_a_colliding_name(broker: BrokerThread, caplog: pytest.LogCaptureFixture) -> None:
    base = unique("col")
    dotted, underscored = f"{base}.x", f"{base}_x"
    broker.create_topic(dotted)
    R = metadata.REQUEST
    with caplog.at_level(logging.WARNING, logger="minibroker.topics"), RawClient(broker.bootstrap) as c:
        for _ in range(2):  # asked again, refused again
            [t] = c.call(metadata.API, 12, R(topics=[R.MetadataRequestTopic(name=underscored)],
                                             allow_auto_topic_creation=True)).topics
            assert (t.error_code, t.name, t.partitions) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, underscored, [])
    assert f"Topic '{underscored}' collides with existing topic: {dotted}" in caplog.text
    # a real producer asking for the topic's metadata (librdkafka allows auto-creation) is refused alike
    p = Producer({"bootstrap.servers": broker.bootstrap})
    md = p.list_topics(underscored, timeout=10)
    assert md.topics[underscored].error is not None
    assert md.topics[underscored].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert underscored not in broker.topics() and dotted in broker.topics()
    # a name colliding with nothing is still created
    fresh = unique("col_fresh")
    with RawClient(broker.bootstrap) as c:
        [t] = c.call(metadata.API, 12, R(topics=[R.MetadataRequestTopic(name=fresh)],
                                         allow_auto_topic_creation=True)).topics
    assert t.error_code == 0 and fresh in broker.topics()
