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
from minibroker_protocol.apis import create_partitions, create_topics, metadata
from minibroker_protocol.errors import ErrorCode
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


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _metadata_ok(bootstrap: str, timeout: float = 10.0) -> bool:
    try:
        with RawClient(bootstrap, timeout=timeout) as c:
            c.call(metadata.API, 12, metadata.REQUEST(topics=[], allow_auto_topic_creation=False))
        return True
    except (OSError, EOFError):
        return False


def test_descriptor_headroom_and_a_broker_out_of_descriptors(tmp_path: Path) -> None:
    data = tmp_path / "data"
    b = BrokerProcess(data)
    b.start()
    try:
        assert b.proc is not None
        pid = b.proc.pid
        limit = _open_fds(pid) + 400
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (limit, limit))  # ulimit -n, on the running broker
        keeper = RawClient(b.bootstrap)  # a client connected before the descriptors run out
        keeper.call(metadata.API, 12, metadata.REQUEST(topics=[], allow_auto_topic_creation=False))
        # more partitions than the descriptors left: refused before any directory is made
        [(code, msg)] = _create(b.bootstrap, [("too-many-fds", 1_000, {})])
        assert code == ErrorCode.POLICY_VIOLATION and "RLIMIT_NOFILE" in msg, msg
        assert not [d for d in os.listdir(data) if d.startswith("too-many-fds")]
        assert _create(b.bootstrap, [("fits", 100, {})]) == [(0, None)]
        # a creation the headroom allows, then every descriptor taken by connections while it runs
        # (the broker cannot accept more): it completes, or fails and is undone, never half made
        racing = RawClient(b.bootstrap)
        racing.call(metadata.API, 12, metadata.REQUEST(topics=[], allow_auto_topic_creation=False))
        racing.send(create_topics.API, 7, CT(topics=[CT.CreatableTopic(
            name="racing", num_partitions=150, replication_factor=1, assignments=[], configs=[])], timeout_ms=60_000))
        hogs: list[socket.socket] = []
        for _ in range(limit):
            try:
                hogs.append(socket.create_connection(("127.0.0.1", b.port), timeout=5))
            except OSError:
                break
        deadline = time.monotonic() + 30
        while _open_fds(pid) < limit - 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _open_fds(pid) >= limit - 5, "the connections did not exhaust the broker's descriptors"
        _, raced = racing.recv(create_topics.API, 7)
        racing.close()
        raced_code = raced.topics[0].error_code
        assert raced_code in (0, ErrorCode.POLICY_VIOLATION), raced.topics[0]
        print(f"racing: {raced.topics[0].error_code} {raced.topics[0].error_message}")
        # ... and still answers the connection it has, refusing a creation with an error
        keeper.call(metadata.API, 12, metadata.REQUEST(topics=[], allow_auto_topic_creation=False))
        resp = keeper.call(create_topics.API, 7, CT(topics=[CT.CreatableTopic(
            name="no-fds-left", num_partitions=5, replication_factor=1, assignments=[], configs=[])], timeout_ms=10_000))
        assert resp.topics[0].error_code == ErrorCode.POLICY_VIOLATION
        for s in hogs:
            s.close()
        # connections close: new clients are served again
        deadline = time.monotonic() + 60
        while not _metadata_ok(b.bootstrap, 5.0) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _metadata_ok(b.bootstrap), "no new connection served after the descriptors came back"
        assert b.proc.poll() is None
        keeper.close()
        # the broker paused accepting while out of descriptors instead of spinning on accept()
        assert b.log_text().count("accept failed") < 2_000
    finally:
        rc = b.stop(60)
    assert rc == 0
    # a clean restart (the descriptors of a normal start): the topic that fit is there, whole
    b2 = BrokerProcess(data, port=b.port)
    b2.start(60)
    try:
        with RawClient(b2.bootstrap) as c:
            md = c.call(metadata.API, 12, metadata.REQUEST(topics=None, allow_auto_topic_creation=False))
        names = {t.name: len(t.partitions) for t in md.topics}
        assert names.get("fits") == 100 and "too-many-fds" not in names and "no-fds-left" not in names
        assert names.get("racing") == (150 if raced_code == 0 else None)
        assert not [d for d in os.listdir(data) if d.startswith("racing") and not raced_code == 0]
    finally:
        assert b2.stop(60) == 0


def test_metadata_auto_creation_is_bounded_like_one_create_topics(broker: BrokerThread) -> None:
    """Kafka's broker sends the missing topics of one Metadata to its controller as one CreateTopics:
    6,000 names of one partition each are 12,000 records, over the bound, and none is created."""
    prefix = unique("auto")
    names = [f"{prefix}-{i}" for i in range(6_000)]
    R = metadata.REQUEST
    with RawClient(broker.bootstrap, timeout=60) as c:
        resp = c.call(metadata.API, 12, R(topics=[R.MetadataRequestTopic(name=n) for n in names],
                                          allow_auto_topic_creation=True))
        assert {t.error_code for t in resp.topics} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert not [t for t in broker.topics() if t.startswith(prefix)]
        resp = c.call(metadata.API, 12, R(topics=[R.MetadataRequestTopic(name=n) for n in names[:10]],
                                          allow_auto_topic_creation=True))
        assert {t.error_code for t in resp.topics} == {0}  # within the bounds: created
