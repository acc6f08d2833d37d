"""Kafka 4.x versions that name topics by id (KIP-516), field by field over a raw socket.

- Produce v12 is v11 on the wire; its one change (KIP-890 part 2: a transaction's produce adds the
  partition itself) applies while the broker finalizes transaction.version >= 2, which it does: an
  unadded partition is refused at v11 and added at v12.
- Produce v13 sends TopicId instead of the name: a known id appends to that topic, an unknown one is
  UNKNOWN_TOPIC_ID, and each response topic echoes the id it was asked for.
- OffsetCommit v10 / OffsetFetch v10 (Kafka 4.2, KIP-848 era) likewise: ids in, ids out, an unknown
  id is UNKNOWN_TOPIC_ID per partition; the offsets are the same ones v9 reads by name.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.testing import BrokerThread
from minibroker_protocol.apis import api_versions, init_producer_id, offset_commit, offset_fetch, produce
from minibroker_protocol.errors import ErrorCode as E
from minibroker_protocol.records.v2 import Record, build_batch
from minibroker_protocol.schema import ZERO_UUID
from tests.integration.helpers import (
    RawClient,
    create_topic,
    module_broker,
    records_batch,
    stored_records,
    unique,
)

PR = produce.REQUEST
CR = offset_commit.REQUEST
FR = offset_fetch.REQUEST


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    with module_broker(tmp_path_factory) as broker:
        yield broker


def topic_id(b: BrokerThread, name: str) -> uuid.UUID:
    return b.call(lambda broker: broker.topics[name].topic_id)


def produce_by_id(c: RawClient, topics: list[tuple[uuid.UUID, list[int]]], value: bytes) -> Any:
    return c.call(produce.API, 13, PR(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
        PR.TopicProduceData(topic_id=tid, partition_data=[
            PR.PartitionProduceData(index=p, records=records_batch([value])) for p in parts])
        for tid, parts in topics]))


def test_produce_12_and_13_are_advertised(kafka_broker_module):
    with RawClient(kafka_broker_module.bootstrap) as c:
        body = c.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="it", client_software_version="1"))
    [entry] = [k for k in body.api_keys if k.api_key == produce.API.key]
    assert entry.max_version == 13


def test_produce_v12_appends_like_v11(kafka_broker_module):
    topic = unique("p12")
    create_topic(kafka_broker_module, topic, 1)
    with RawClient(kafka_broker_module.bootstrap) as c:
        for v, value in ((11, b"eleven"), (12, b"twelve")):
            r = c.call(produce.API, v, PR(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
                PR.TopicProduceData(name=topic, partition_data=[
                    PR.PartitionProduceData(index=0, records=records_batch([value]))])]))
            [t] = r.responses
            [p] = t.partition_responses
            assert (t.name, p.index, p.error_code, p.base_offset, p.log_start_offset) == (
                topic, 0, 0, v - 11, 0)
    assert [r.value for r in stored_records(kafka_broker_module, topic)] == [b"eleven", b"twelve"]


def test_produce_v12_adds_partitions_to_the_transaction(kafka_broker_module):
    """With transaction.version 2 finalized, v11 verifies a transactional write (a partition no
    AddPartitionsToTxn added is TRANSACTION_ABORTABLE, nothing appended) and v12 adds the partition."""
    topic, txn_id = unique("p12txn"), unique("tid")
    create_topic(kafka_broker_module, topic, 1)
    with RawClient(kafka_broker_module.bootstrap) as c:
        init = c.call(init_producer_id.API, 4, init_producer_id.REQUEST(
            transactional_id=txn_id, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1))
        assert init.error_code == 0
        codes = []
        for v in (11, 12):
            data = build_batch([Record(value=b"x")], base_timestamp=int(time.time() * 1000),
                               producer_id=init.producer_id, producer_epoch=init.producer_epoch, base_sequence=0,
                               is_transactional=True)
            r = c.call(produce.API, v, PR(transactional_id=txn_id, acks=-1, timeout_ms=5000, topic_data=[
                PR.TopicProduceData(name=topic, partition_data=[PR.PartitionProduceData(index=0, records=data)])]))
            codes.append(r.responses[0].partition_responses[0].error_code)
    assert codes == [E.TRANSACTION_ABORTABLE, E.NONE]
    assert [r.value for r in stored_records(kafka_broker_module, topic)] == [b"x"]


def test_produce_v13_by_topic_id(kafka_broker_module):
    topic = unique("p13")
    create_topic(kafka_broker_module, topic, 2)
    tid = topic_id(kafka_broker_module, topic)
    with RawClient(kafka_broker_module.bootstrap) as c:
        r = produce_by_id(c, [(tid, [0, 1])], b"by-id")
        [t] = r.responses
        assert t.topic_id == tid and t.name == ""  # v13 carries no name on the wire
        assert [(p.index, p.error_code, p.base_offset) for p in t.partition_responses] == [(0, 0, 0), (1, 0, 0)]
        again = produce_by_id(c, [(tid, [1])], b"again")
        assert again.responses[0].partition_responses[0].base_offset == 1
    assert [r.value for r in stored_records(kafka_broker_module, topic, 0)] == [b"by-id"]
    assert [r.value for r in stored_records(kafka_broker_module, topic, 1)] == [b"by-id", b"again"]


def test_produce_v13_unknown_topic_id(kafka_broker_module):
    unknown = uuid.uuid4()
    with RawClient(kafka_broker_module.bootstrap) as c:
        r = produce_by_id(c, [(unknown, [0, 3])], b"lost")
    [t] = r.responses
    assert t.topic_id == unknown
    assert [(p.index, p.error_code, p.base_offset) for p in t.partition_responses] == [
        (0, E.UNKNOWN_TOPIC_ID, -1), (3, E.UNKNOWN_TOPIC_ID, -1)]


def test_produce_v13_mixed_ids(kafka_broker_module):
    topic = unique("p13mix")
    create_topic(kafka_broker_module, topic, 1)
    tid, unknown = topic_id(kafka_broker_module, topic), uuid.uuid4()
    with RawClient(kafka_broker_module.bootstrap) as c:
        r = produce_by_id(c, [(unknown, [0]), (tid, [0, 7]), (ZERO_UUID, [0])], b"mixed")
    got = [(t.topic_id, [(p.index, p.error_code) for p in t.partition_responses]) for t in r.responses]
    assert got == [(unknown, [(0, E.UNKNOWN_TOPIC_ID)]),
                   (tid, [(0, 0), (7, E.UNKNOWN_TOPIC_OR_PARTITION)]),
                   (ZERO_UUID, [(0, E.UNKNOWN_TOPIC_ID)])]
    assert [r.value for r in stored_records(kafka_broker_module, topic)] == [b"mixed"]


# ------------------------------------------------------------------ OffsetCommit / OffsetFetch v10
def commit_v10(c: RawClient, group: str, topics: list[tuple[uuid.UUID, list[tuple[int, int]]]]) -> Any:
    return c.call(offset_commit.API, 10, CR(group_id=group, generation_id_or_member_epoch=-1, member_id="",
                                            group_instance_id=None, topics=[
        CR.OffsetCommitRequestTopic(topic_id=tid, partitions=[
            CR.OffsetCommitRequestPartition(partition_index=p, committed_offset=o, committed_leader_epoch=3,
                                            committed_metadata=f"m{o}") for p, o in parts])
        for tid, parts in topics]))


def fetch_v10(c: RawClient, group: str, topics: list[tuple[uuid.UUID, list[int]]] | None) -> Any:
    wanted = None if topics is None else [FR.OffsetFetchRequestTopics(topic_id=tid, partition_indexes=ps)
                                          for tid, ps in topics]
    r = c.call(offset_fetch.API, 10, FR(groups=[FR.OffsetFetchRequestGroup(group_id=group, topics=wanted)],
                                        require_stable=False))
    [g] = r.groups
    assert (g.group_id, g.error_code) == (group, 0)
    return g.topics


def test_offset_commit_and_fetch_v10_by_topic_id(kafka_broker_module):
    topic, group = unique("oc10"), unique("g10")
    create_topic(kafka_broker_module, topic, 2)
    tid = topic_id(kafka_broker_module, topic)
    with RawClient(kafka_broker_module.bootstrap) as c:
        r = commit_v10(c, group, [(tid, [(0, 5), (1, 9)])])
        assert [(t.topic_id, t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics] == [
            (tid, "", [(0, 0), (1, 0)])]
        [t] = fetch_v10(c, group, [(tid, [1, 0])])
        assert t.topic_id == tid and t.name == ""
        assert [(p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata, p.error_code)
                for p in t.partitions] == [(1, 9, 3, "m9", 0), (0, 5, 3, "m5", 0)]
        # null topics: every committed partition, each topic named by its id
        [t] = fetch_v10(c, group, None)
        assert t.topic_id == tid and sorted((p.partition_index, p.committed_offset) for p in t.partitions) == [
            (0, 5), (1, 9)]
        # the same offsets, read by name at v9
        v9 = c.call(offset_fetch.API, 9, FR(groups=[FR.OffsetFetchRequestGroup(
            group_id=group, topics=[FR.OffsetFetchRequestTopics(name=topic, partition_indexes=[0])])]))
        assert [(p.committed_offset, p.metadata) for p in v9.groups[0].topics[0].partitions] == [(5, "m5")]


def test_offset_commit_v10_unknown_and_mixed_ids(kafka_broker_module):
    topic, group = unique("oc10mix"), unique("g10mix")
    create_topic(kafka_broker_module, topic, 1)
    tid, unknown = topic_id(kafka_broker_module, topic), uuid.uuid4()
    with RawClient(kafka_broker_module.bootstrap) as c:
        r = commit_v10(c, group, [(unknown, [(0, 1), (1, 2)])])
        assert [(t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics] == [
            (unknown, [(0, E.UNKNOWN_TOPIC_ID), (1, E.UNKNOWN_TOPIC_ID)])]
        r = commit_v10(c, group, [(tid, [(0, 4), (2, 4)]), (unknown, [(0, 1)])])
        assert [(t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics] == [
            (tid, [(0, 0), (2, E.UNKNOWN_TOPIC_OR_PARTITION)]), (unknown, [(0, E.UNKNOWN_TOPIC_ID)])]
        got = fetch_v10(c, group, [(unknown, [0]), (tid, [0, 2])])
        assert [(t.topic_id, [(p.partition_index, p.committed_offset, p.error_code) for p in t.partitions])
                for t in got] == [(unknown, [(0, -1, E.UNKNOWN_TOPIC_ID)]), (tid, [(0, 4, 0), (2, -1, 0)])]
    assert kafka_broker_module.call(lambda broker: broker.group_coordinator.committed(group, topic, 0).offset) == 4


# -------------------------------------------------- the same requests through another codec
def kp_call(c: RawClient, request: Any, response_class: Any, version: int) -> Any:
    """Encode with kafka-python's codec (generated from its own copy of Kafka 4.x's message JSON),
    decode our answer with it: our wire layout checked against an implementation that is not ours."""
    request.with_header(correlation_id=c.next_correlation_id(), client_id="kafka-python-codec")
    c.send_raw(request.encode(version=version, header=True, framed=True))
    return response_class.decode(c.recv_frame(), version=version, header=True)


def test_kafka_python_codec_speaks_produce_13_and_offsets_10(kafka_broker_module):
    from kafka.protocol.consumer.group import (
        OffsetCommitRequest,
        OffsetCommitResponse,
        OffsetFetchRequest,
        OffsetFetchResponse,
    )
    from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

    topic, group = unique("kp13"), unique("gkp")
    create_topic(kafka_broker_module, topic, 1)
    tid, unknown = topic_id(kafka_broker_module, topic), uuid.uuid4()
    T, P = ProduceRequest.TopicProduceData, ProduceRequest.TopicProduceData.PartitionProduceData
    with RawClient(kafka_broker_module.bootstrap) as c:
        r = kp_call(c, ProduceRequest(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
            T(topic_id=tid, partition_data=[P(index=0, records=records_batch([b"kp"]))]),
            T(topic_id=unknown, partition_data=[P(index=0, records=records_batch([b"no"]))])]), ProduceResponse, 13)
        assert [(t.topic_id, [(p.index, p.error_code, p.base_offset) for p in t.partition_responses])
                for t in r.responses] == [(tid, [(0, 0, 0)]), (unknown, [(0, E.UNKNOWN_TOPIC_ID, -1)])]

        CT = OffsetCommitRequest.OffsetCommitRequestTopic
        CP = CT.OffsetCommitRequestPartition
        r = kp_call(c, OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="",
                                           group_instance_id=None, topics=[
            CT(topic_id=tid, partitions=[CP(partition_index=0, committed_offset=1, committed_leader_epoch=-1,
                                            committed_metadata="kp")]),
            CT(topic_id=unknown, partitions=[CP(partition_index=0, committed_offset=1, committed_leader_epoch=-1,
                                                committed_metadata=None)])]), OffsetCommitResponse, 10)
        assert [(t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics] == [
            (tid, [(0, 0)]), (unknown, [(0, E.UNKNOWN_TOPIC_ID)])]

        G = OffsetFetchRequest.OffsetFetchRequestGroup
        FT = G.OffsetFetchRequestTopics
        r = kp_call(c, OffsetFetchRequest(groups=[G(group_id=group, member_id=None, member_epoch=-1, topics=[
            FT(topic_id=tid, partition_indexes=[0]), FT(topic_id=unknown, partition_indexes=[0])])],
            require_stable=True), OffsetFetchResponse, 10)
        [g] = r.groups
        assert [(t.topic_id, [(p.partition_index, p.committed_offset, p.metadata, p.error_code) for p in t.partitions])
                for t in g.topics] == [(tid, [(0, 1, "kp", 0)]), (unknown, [(0, -1, "", E.UNKNOWN_TOPIC_ID)])]
