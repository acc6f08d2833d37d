"""Differential tests for the versions Kafka 4.4 added to APIs minibroker already served (issue 35):
ApiVersions v5 (KIP-1242: cluster and node id checking, REBOOTSTRAP_REQUIRED), TxnOffsetCommit v6
(KIP-1319: topics by id), DeleteGroups v3 (an error message per group) and DescribeLogDirs v5
(is_cordoned): the same raw requests to Kafka 4.4 and minibroker, compared field by field.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from minibroker_protocol.apis import (
    api_versions,
    create_topics,
    delete_groups,
    describe_log_dirs,
    find_coordinator,
    metadata,
    offset_commit,
    txn_offset_commit,
)
from minibroker_protocol.errors import ErrorCode
from tests.reference.differential import Differential, differences, drop, normalise

AV = api_versions.API


def _identity(d: Differential, bootstrap: str) -> tuple[str, int]:
    """(cluster id, node id) of the one-node broker at `bootstrap`."""
    m = d.call_one(bootstrap, metadata.API, 12, metadata.REQUEST(topics=[], allow_auto_topic_creation=False))
    return m["cluster_id"], m["brokers"][0]["node_id"]


def _av(cluster_id: str | None, node_id: int) -> Any:
    return api_versions.REQUEST(client_software_name="kip-1242", client_software_version="1",
                                cluster_id=cluster_id, node_id=node_id)


def test_api_versions_v5_without_identity(differential: Differential) -> None:
    k, m = differential.call(AV, 5, _av(None, -1))
    assert k["error_code"] == m["error_code"] == 0
    assert {a["api_key"] for a in m["api_keys"]} <= {a["api_key"] for a in k["api_keys"]}


@pytest.mark.parametrize("half", ["cluster-only", "node-only"])
def test_api_versions_v5_half_an_identity_is_invalid(differential: Differential, half: str) -> None:
    body = _av("some-cluster", -1) if half == "cluster-only" else _av(None, 1)
    k, m = differential.call(AV, 5, body)
    assert k == m
    assert m["error_code"] == ErrorCode.INVALID_REQUEST and m["api_keys"] == []


@pytest.mark.parametrize("wrong", ["cluster", "node", "none"])
def test_api_versions_v5_identity_checked(differential: Differential, wrong: str) -> None:
    answers = []
    for bootstrap in (differential.kafka, differential.mini):
        cluster, node = _identity(differential, bootstrap)
        if wrong == "cluster":
            cluster = "AAAAAAAAAAAAAAAAAAAAAA"
        elif wrong == "node":
            node += 7
        answers.append(differential.call_one(bootstrap, AV, 5, _av(cluster, node)))
    k, m = answers
    want = 0 if wrong == "none" else ErrorCode.REBOOTSTRAP_REQUIRED
    assert k["error_code"] == m["error_code"] == want
    if want:
        assert k == m  # no keys, no features: the bare error
    else:
        assert len(m["api_keys"]) > 40


def test_txn_offset_commit_v6_unknown_topic_id(differential: Differential) -> None:
    R = txn_offset_commit.REQUEST
    body = R(transactional_id="k44-txn", group_id="k44-group", producer_id=4242, producer_epoch=0,
             generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
             topics=[R.TxnOffsetCommitRequestTopic(topic_id=uuid.uuid4(), partitions=[
                 R.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=5,
                                                   committed_leader_epoch=-1, committed_metadata=None)])])
    k, m = differential.call(txn_offset_commit.API, 6, body)
    diff = differences(normalise(k), normalise(m))
    assert not diff, diff
    assert m["topics"][0]["partitions"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID


def test_txn_offset_commit_v6_known_topic_without_transaction(differential: Differential) -> None:
    """A real topic by id but a producer id no coordinator knows: both brokers refuse it the same way,
    and name the topic by its id in the answer."""
    _create(differential, "k44-txn-topic")
    for bootstrap in (differential.kafka, differential.mini):  # __consumer_offsets made and loaded
        _coordinator_ready(differential, bootstrap, "k44-group2")
        _coordinator_ready(differential, bootstrap, "k44-txn2", key_type=1)
    answers = []
    for bootstrap in (differential.kafka, differential.mini):
        m = differential.call_one(bootstrap, metadata.API, 12, metadata.REQUEST(
            topics=[metadata.REQUEST.MetadataRequestTopic(name="k44-txn-topic")], allow_auto_topic_creation=False))
        tid = m["topics"][0]["topic_id"]
        R = txn_offset_commit.REQUEST
        body = R(transactional_id="k44-txn2", group_id="k44-group2", producer_id=4243, producer_epoch=0,
                 generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                 topics=[R.TxnOffsetCommitRequestTopic(topic_id=tid, partitions=[
                     R.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1,
                                                       committed_leader_epoch=-1, committed_metadata=None)])])
        r = differential.call_one(bootstrap, txn_offset_commit.API, 6, body)
        assert r["topics"][0]["topic_id"] == tid
        answers.append(r)
    k, m = answers
    assert not differences(normalise(k), normalise(m)), (k, m)


def _coordinator_ready(d: Differential, bootstrap: str, key: str, key_type: int = 0) -> None:
    FC = find_coordinator.REQUEST
    deadline = time.monotonic() + 60
    while True:
        r = d.call_one(bootstrap, find_coordinator.API, 4, FC(key_type=key_type, coordinator_keys=[key]))
        if r["coordinators"][0]["error_code"] == 0:
            return
        assert time.monotonic() < deadline, r
        time.sleep(0.2)


def _create(differential: Differential, name: str) -> None:
    CT = create_topics.REQUEST
    differential.call(create_topics.API, 7, CT(topics=[CT.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=10_000, validate_only=False))


@pytest.mark.parametrize("version", [2, 3])
def test_delete_groups_v3(differential: Differential, version: int) -> None:
    """A group with committed offsets and no members is deleted; an unknown one is GROUP_ID_NOT_FOUND."""
    _create(differential, "k44-dg-topic")
    OC = offset_commit.REQUEST
    group = f"k44-dg-{version}"
    body = OC(group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
              topics=[OC.OffsetCommitRequestTopic(name="k44-dg-topic", partitions=[
                  OC.OffsetCommitRequestPartition(partition_index=0, committed_offset=1,
                                                  committed_leader_epoch=-1, committed_metadata=None)])])
    k, m = differential.call(offset_commit.API, 8, body)
    assert k["topics"][0]["partitions"][0]["error_code"] == m["topics"][0]["partitions"][0]["error_code"] == 0
    diff = differential.compare(delete_groups.API, version,
                                delete_groups.REQUEST(groups_names=[group, f"k44-dg-none-{version}"]))
    assert not diff, diff


def test_describe_log_dirs_v5(differential: Differential) -> None:
    body = describe_log_dirs.REQUEST(topics=[])
    k, m = differential.call(describe_log_dirs.API, 5, body)
    assert k["error_code"] == m["error_code"] == 0
    ignore = ["log_dir", "total_bytes", "usable_bytes", "topics"]
    assert drop(normalise(k), ignore) == drop(normalise(m), ignore)
    assert [r["is_cordoned"] for r in m["results"]] == [False]
