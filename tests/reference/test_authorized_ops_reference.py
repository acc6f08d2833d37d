"""KIP-430 authorized operations without an authorizer: the same raw requests to Apache Kafka 4.4
and minibroker (tests/reference/differential.py) answer the same bit fields -- the full set of
the resource type's operations when asked for, Integer.MIN_VALUE when not, and nothing on an
entry in error -- in Metadata v8-v12, DescribeCluster, DescribeTopicPartitions, DescribeGroups
v3-v6, ConsumerGroupDescribe and ShareGroupDescribe.

The same with an authorizer (the sets computed from the ACLs) is in test_acl_clients_reference.py.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from minibroker_protocol.apis import (
    consumer_group_describe,
    consumer_group_heartbeat,
    create_topics,
    describe_cluster,
    describe_groups,
    describe_topic_partitions,
    find_coordinator,
    metadata,
    offset_commit,
    share_group_describe,
    share_group_heartbeat,
)
from minibroker_protocol.errors import ErrorCode
from tests.reference.differential import Differential

TOPIC = f"kip430-{uuid.uuid4().hex[:6]}"
TOPIC_OPS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))  # READ..ALTER_CONFIGS, not CLUSTER_ACTION
CLUSTER_OPS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
GROUP_OPS = sum(1 << op for op in (3, 6, 8, 10, 11))
OMITTED = -(1 << 31)


@pytest.fixture(scope="module")
def d(differential: Differential) -> Differential:
    """The session pair, with TOPIC (2 partitions) on both."""
    R = create_topics.API.request
    k, m = differential.call(create_topics.API, 7, R(
        topics=[R.CreatableTopic(name=TOPIC, num_partitions=2, replication_factor=1)], timeout_ms=10000))
    assert k["topics"][0]["error_code"] == m["topics"][0]["error_code"] == 0
    return differential


def _topic_ops(resp: dict[str, Any], names: set[str]) -> dict[str, tuple[int, int]]:
    return {t["name"]: (t["error_code"], t["topic_authorized_operations"]) for t in resp["topics"]
            if t["name"] in names}


@pytest.mark.parametrize("version", [8, 10, 12])
@pytest.mark.parametrize("asked", [(True, True), (False, False), (False, True)],
                         ids=["both", "neither", "topic-only"])
def test_metadata(d: Differential, version: int, asked: tuple[bool, bool]) -> None:
    cluster, topic = asked
    names = [TOPIC, f"missing-{uuid.uuid4().hex[:6]}", "bad name!"]
    R = metadata.API.request
    body = R(topics=[R.MetadataRequestTopic(name=n) for n in names], allow_auto_topic_creation=False,
             include_cluster_authorized_operations=cluster, include_topic_authorized_operations=topic)
    k, m = d.call(metadata.API, version, body)
    assert _topic_ops(m, set(names)) == _topic_ops(k, set(names))
    # a topic that cannot exist is still described (with its error): Kafka fills its operations too
    assert _topic_ops(m, {TOPIC})[TOPIC] == (0, TOPIC_OPS if topic else OMITTED)
    if version <= 10:
        assert m["cluster_authorized_operations"] == k["cluster_authorized_operations"]
        assert m["cluster_authorized_operations"] == (CLUSTER_OPS if cluster else OMITTED)
    # every topic (a null list) too
    k, m = d.call(metadata.API, version, R(topics=None, include_topic_authorized_operations=topic))
    assert _topic_ops(m, {TOPIC}) == _topic_ops(k, {TOPIC})


@pytest.mark.parametrize("version", [0, 2])
@pytest.mark.parametrize("asked", [True, False])
def test_describe_cluster(d: Differential, version: int, asked: bool) -> None:
    k, m = d.call(describe_cluster.API, version,
                  describe_cluster.API.request(include_cluster_authorized_operations=asked))
    assert m["cluster_authorized_operations"] == k["cluster_authorized_operations"]
    assert m["cluster_authorized_operations"] == (CLUSTER_OPS if asked else OMITTED)


def test_describe_topic_partitions(d: Differential) -> None:
    names = [TOPIC, f"missing-{uuid.uuid4().hex[:6]}"]
    R = describe_topic_partitions.API.request
    k, m = d.call(describe_topic_partitions.API, 0, R(topics=[R.TopicRequest(name=n) for n in names]))
    assert _topic_ops(m, set(names)) == _topic_ops(k, set(names))
    assert _topic_ops(m, {TOPIC})[TOPIC] == (0, TOPIC_OPS)


def _until_coordinated(d: Differential, gid: str, send: Callable[[str], int]) -> None:
    """`send(bootstrap)` on each broker until it answers NONE: FindCoordinator first (Kafka creates
    __consumer_offsets then, and answers NOT_COORDINATOR until it is loaded)."""
    fc = find_coordinator.API
    for bootstrap in (d.kafka, d.mini):
        d.call_one(bootstrap, fc, 4, fc.request(key_type=0, coordinator_keys=[gid]))
        deadline = time.monotonic() + 30
        while (code := send(bootstrap)) != 0:
            assert code in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                            ErrorCode.NOT_COORDINATOR) and time.monotonic() < deadline, code
            time.sleep(0.2)


def _classic_group(d: Differential) -> str:
    """An Empty classic group on both (a simple offset commit), once each coordinator is loaded."""
    gid = f"kip430-classic-{uuid.uuid4().hex[:6]}"
    R = offset_commit.API.request
    body = R(group_id=gid, generation_id_or_member_epoch=-1, member_id="", topics=[R.OffsetCommitRequestTopic(
        name=TOPIC, partitions=[R.OffsetCommitRequestPartition(partition_index=0, committed_offset=0,
                                                               committed_metadata="")])])
    _until_coordinated(d, gid, lambda bootstrap: d.call_one(bootstrap, offset_commit.API, 8, body)[
        "topics"][0]["partitions"][0]["error_code"])
    return gid


def _group_ops(resp: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {g["group_id"]: (g["error_code"], g["authorized_operations"]) for g in resp["groups"]}


@pytest.mark.parametrize("version", [3, 5, 6])
@pytest.mark.parametrize("asked", [True, False])
def test_describe_groups(d: Differential, version: int, asked: bool) -> None:
    gid = _classic_group(d)
    missing = f"kip430-none-{uuid.uuid4().hex[:6]}"
    k, m = d.call(describe_groups.API, version,
                  describe_groups.API.request(groups=[gid, missing], include_authorized_operations=asked))
    assert _group_ops(m) == _group_ops(k)
    assert _group_ops(m)[gid] == (0, GROUP_OPS if asked else OMITTED)


def test_consumer_group_describe(d: Differential) -> None:
    """A KIP-848 group with one member (a raw heartbeat), a classic group and a missing one."""
    gid = f"kip430-cg-{uuid.uuid4().hex[:6]}"
    hb = consumer_group_heartbeat.API.request(group_id=gid, member_id=uuid.uuid4().hex[:22], member_epoch=0,
                                              rebalance_timeout_ms=30000, subscribed_topic_names=[TOPIC],
                                              topic_partitions=[])
    _until_coordinated(d, gid, lambda bootstrap: d.call_one(bootstrap, consumer_group_heartbeat.API, 1, hb)[
        "error_code"])
    names = [gid, _classic_group(d), f"kip430-none-{uuid.uuid4().hex[:6]}"]
    for asked in (True, False):
        k, m = d.call(consumer_group_describe.API, 1, consumer_group_describe.API.request(
            group_ids=names, include_authorized_operations=asked))
        assert _group_ops(m) == _group_ops(k)
        assert _group_ops(m)[gid] == (0, GROUP_OPS if asked else OMITTED)


def test_share_group_describe(d: Differential) -> None:
    """A share group with one member (a raw heartbeat) and a missing one."""
    gid = f"kip430-sg-{uuid.uuid4().hex[:6]}"
    hb = share_group_heartbeat.API.request(group_id=gid, member_id=uuid.uuid4().hex[:22], member_epoch=0,
                                           subscribed_topic_names=[TOPIC])
    _until_coordinated(d, gid, lambda bootstrap: d.call_one(bootstrap, share_group_heartbeat.API, 1, hb)[
        "error_code"])
    names = [gid, f"kip430-none-{uuid.uuid4().hex[:6]}"]
    for asked in (True, False):
        k, m = d.call(share_group_describe.API, 1, share_group_describe.API.request(
            group_ids=names, include_authorized_operations=asked))
        assert _group_ops(m) == _group_ops(k)
        assert _group_ops(m)[gid] == (0, GROUP_OPS if asked else OMITTED)
