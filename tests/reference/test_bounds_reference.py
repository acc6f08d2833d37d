"""Issue 30's answers next to Apache Kafka 4.4's, the same raw requests to both brokers
(tests/reference/acl_helpers.py: StandardAuthorizer, PLAIN users over SASL_PLAINTEXT, ANONYMOUS
super user on PLAINTEXT):

- finding 7: Metadata v12 by topic id, as bob who may not DESCRIBE the topic: TOPIC_AUTHORIZATION_FAILED,
  the id echoed, a null name, no partitions;
- finding 11: Metadata auto-creation of `b_c` beside `b.c`: UNKNOWN_TOPIC_OR_PARTITION and nothing created;
- finding 6: CreateTopics and CreatePartitions over Kafka's per-request bounds: POLICY_VIOLATION with
  Kafka's messages, on the same side of each bound (validate_only: nothing is created on either).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker_protocol.apis import (
    create_partitions,
    create_topics,
    metadata,
    sasl_authenticate,
    sasl_handshake,
)
from tests.integration.helpers import RawClient
from tests.reference.acl_helpers import acl_brokers

M = metadata.REQUEST
CT = create_topics.REQUEST
CP = create_partitions.REQUEST
Brokers = dict[str, tuple[str, str]]


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Brokers]:
    data: Path = tmp_path_factory.mktemp("bounds-ref") / "data"
    data.mkdir()
    with acl_brokers(data) as b:
        yield b


def _create(boot: str, topics: list[tuple[str, int, int]], validate_only: bool = True) -> list[tuple[int, str | None]]:
    """(name, partitions, configs) each: the error code and message of every topic."""
    with RawClient(boot) as c:
        r = c.call(create_topics.API, 7, CT(topics=[CT.CreatableTopic(
            name=n, num_partitions=p, replication_factor=1, assignments=[],
            configs=[CT.CreatableTopicConfig(name=k, value=v) for k, v in
                     [("retention.ms", "1000"), ("segment.ms", "100000")][:cfgs]]) for n, p, cfgs in topics],
            timeout_ms=60_000, validate_only=validate_only))
    return [(t.error_code, t.error_message) for t in r.topics]


def _both(brokers: Brokers, fn: Any) -> tuple[Any, Any]:
    return fn(brokers["kafka"][0]), fn(brokers["minibroker"][0])


def test_per_request_bounds_as_kafka(brokers: Brokers) -> None:
    cases = [
        [("ref-a", 10_001, 0)], [("ref-a", 2_600, 0), ("ref-b", 2_600, 0), ("ref-c", 2_600, 0), ("ref-d", 2_600, 0)],
        [("ref-a", 10_000, 0)], [("ref-a", 9_999, 0)], [("ref-a", 9_998, 2)], [("ref-a", 9_998, 1)],
        [("ref-a", 5_000, 0), ("ref-b", 4_999, 0)], [("ref-a", 5_000, 0), ("ref-b", 4_998, 0)],
        [("ref-a", 9_999, 0), ("ref..", 2, 0)],
    ]
    for case in cases:
        kafka, mini = _both(brokers, lambda boot, case=case: _create(boot, case))
        assert mini == kafka, case
    kafka, mini = _both(brokers, lambda boot: _create(boot, [("ref-a", 10_001, 0)], validate_only=False))
    assert mini == kafka and kafka[0][0] == 44

    def grow(boot: str) -> list[Any]:
        _create(boot, [("ref-small", 1, 0)], validate_only=False)
        out = []
        with RawClient(boot) as c:
            for count in (10_002, 10_001):
                r = c.call(create_partitions.API, 3, CP(topics=[CP.CreatePartitionsTopic(
                    name="ref-small", count=count, assignments=None)], timeout_ms=60_000, validate_only=True))
                out.append([(t.error_code, t.error_message) for t in r.results])
        return out

    kafka, mini = _both(brokers, grow)
    assert mini == kafka


def test_auto_create_collision_as_kafka(brokers: Brokers) -> None:
    def ask(boot: str) -> list[Any]:
        _create(boot, [("ref.col", 1, 0)], validate_only=False)
        out = []
        with RawClient(boot) as c:
            for _ in range(2):
                r = c.call(metadata.API, 12, M(topics=[M.MetadataRequestTopic(name="ref_col")],
                                               allow_auto_topic_creation=True))
                out += [(t.error_code, t.name, len(t.partitions)) for t in r.topics]
            r = c.call(metadata.API, 12, M(topics=None, allow_auto_topic_creation=False))
            out.append("ref_col" in {t.name for t in r.topics})
        return out

    kafka, mini = _both(brokers, ask)
    assert mini == kafka == [(3, "ref_col", 0), (3, "ref_col", 0), False]


def test_metadata_by_topic_id_without_describe_as_kafka(brokers: Brokers) -> None:
    def ask(boot: str, sasl: str) -> Any:
        _create(boot, [("ref-hidden", 2, 0)], validate_only=False)
        with RawClient(boot) as c:
            [t] = c.call(metadata.API, 12, M(topics=[M.MetadataRequestTopic(name="ref-hidden")],
                                             allow_auto_topic_creation=False)).topics
        tid = t.topic_id
        with RawClient(sasl) as c:
            assert c.call(sasl_handshake.API, 1, sasl_handshake.REQUEST(mechanism="PLAIN")).error_code == 0
            assert c.call(sasl_authenticate.API, 2, sasl_authenticate.REQUEST(
                auth_bytes=b"\0bob\0bob-secret")).error_code == 0
            [t] = c.call(metadata.API, 12, M(topics=[M.MetadataRequestTopic(topic_id=tid, name=None)],
                                             allow_auto_topic_creation=False)).topics
        return (t.error_code, t.name, t.topic_id == tid, t.is_internal, t.partitions, t.topic_authorized_operations)

    kafka = ask(*brokers["kafka"])
    mini = ask(*brokers["minibroker"])
    assert mini == kafka == (29, None, True, False, [], -(1 << 31))


def test_auto_create_bound_as_kafka(brokers: Brokers) -> None:
    """6,000 missing names in one Metadata: one CreateTopics of 12,000 records for Kafka's controller,
    refused; every name answers UNKNOWN_TOPIC_OR_PARTITION and no topic appears, on both."""
    import time

    def ask(boot: str) -> tuple[set[int], int]:
        R = M
        with RawClient(boot, timeout=60) as c:
            r = c.call(metadata.API, 12, R(topics=[R.MetadataRequestTopic(name=f"ref-auto-{i}") for i in range(6_000)],
                                           allow_auto_topic_creation=True))
            codes = {t.error_code for t in r.topics}
            time.sleep(3)
            r = c.call(metadata.API, 12, R(topics=None, allow_auto_topic_creation=False))
        return codes, sum(1 for t in r.topics if t.name.startswith("ref-auto-"))

    kafka, mini = _both(brokers, ask)
    assert mini == kafka == ({3}, 0)
