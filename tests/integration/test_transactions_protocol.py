"""The transaction coordinator over raw requests: __transaction_state record bytes, the state
machine's answers (KIP-360 epoch bumps, fencing, invalid transitions), verification of a
transaction's first write to a partition, and the version-dependent error codes."""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.coordinator.txn import transaction_log
from minibroker.coordinator.txn.transaction_log import key_bytes, read_value, value_bytes
from minibroker.coordinator.txn.transaction_metadata import (
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
)
from minibroker.testing import BrokerThread
from minibroker_protocol.apis import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    end_txn,
    init_producer_id,
    produce,
)
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.records.v2 import Record, build_batch
from tests.integration.helpers import RawClient, create_topic, stored_records, unique
from tests.integration.txn_helpers import TXN_OVERRIDES

# -- __transaction_state records -------------------------------------------------------------------


def _s(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def test_transaction_log_key_and_value_bytes_are_kafkas_v0():
    assert key_bytes("tx-1") == b"\x00\x00" + _s("tx-1")
    t = TxnTransitMetadata(producer_id=7, prev_producer_id=-1, next_producer_id=-1, producer_epoch=3,
                           last_producer_epoch=-1, txn_timeout_ms=60000, txn_state=TransactionState.ONGOING,
                           topic_partitions=frozenset({("b", 1), ("a", 2), ("a", 0)}),
                           txn_start_timestamp=1000, txn_last_update_timestamp=2000)
    expected = (struct.pack(">hqhib", 0, 7, 3, 60000, 1)
                + struct.pack(">i", 2) + _s("a") + struct.pack(">iii", 2, 0, 2) + _s("b") + struct.pack(">ii", 1, 1)
                + struct.pack(">qq", 2000, 1000))
    assert value_bytes(t) == expected
    md = read_value("tx-1", expected)
    assert (md.producer_id, md.producer_epoch, md.state, md.topic_partitions) == (
        7, 3, TransactionState.ONGOING, {("a", 0), ("a", 2), ("b", 1)})
    empty = TxnTransitMetadata(7, -1, -1, 4, 3, 60000, TransactionState.EMPTY, frozenset(), -1, 3000)
    assert value_bytes(empty) == struct.pack(">hqhibiqq", 0, 7, 4, 60000, 0, -1, 3000, -1)  # null partitions
    assert read_value("tx-1", None) is None  # tombstone


def test_transaction_log_value_v1_is_kafkas_flexible_value():
    """transaction.version >= 1 (this broker finalizes 2): the flexible value, with the previous and
    next producer ids and the client's transaction version as tagged fields 0, 1 and 2."""
    t = TxnTransitMetadata(producer_id=7, prev_producer_id=7, next_producer_id=-1, producer_epoch=4,
                           last_producer_epoch=3, txn_timeout_ms=60000, txn_state=TransactionState.PREPARE_COMMIT,
                           topic_partitions=frozenset({("a", 0)}), txn_start_timestamp=1000,
                           txn_last_update_timestamp=2000, client_transaction_version=2)
    compact = bytes([2]) + b"a"  # compact string: length + 1
    expected = (struct.pack(">hqhib", 1, 7, 4, 60000, 2) + bytes([2]) + compact + bytes([2]) + struct.pack(">i", 0)
                + b"\x00" + struct.pack(">qq", 2000, 1000)
                # tagged fields: 2 of them; tag 0 (8 bytes) previous producer id, tag 2 (2 bytes) version
                + bytes([2, 0, 8]) + struct.pack(">q", 7) + bytes([2, 2]) + struct.pack(">h", 2))
    assert value_bytes(t, 1) == expected
    md = read_value("tx-1", expected)
    assert (md.producer_id, md.previous_producer_id, md.producer_epoch, md.state, md.client_transaction_version) == (
        7, 7, 4, TransactionState.PREPARE_COMMIT, 2)


def test_state_machine_refuses_illegal_transitions():
    md = TransactionMetadata("t", 1, producer_epoch=0, state=TransactionState.EMPTY)
    with pytest.raises(RuntimeError):
        md.prepare_abort_or_commit(TransactionState.PREPARE_COMMIT, 5)  # Empty -> PrepareCommit
    t = md.prepare_add_partitions({("x", 0)}, 5)
    with pytest.raises(RuntimeError):
        md.prepare_add_partitions({("x", 1)}, 6)  # a transition is already pending
    md.complete_transition(t)
    assert (md.state, md.txn_start_timestamp, md.topic_partitions) == (TransactionState.ONGOING, 5, {("x", 0)})
    fence = md.prepare_fence_producer_epoch()
    assert (fence.producer_epoch, md.pending_state) == (1, TransactionState.PREPARE_EPOCH_FENCE)


# -- over the wire ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory) -> Iterator[BrokerThread]:
    with BrokerThread(tmp_path_factory.mktemp("txnp") / "data", overrides=TXN_OVERRIDES) as broker:
        yield broker


def init(c: RawClient, tid: str | None, version: int = 4, pid: int = -1, epoch: int = -1,
         timeout: int = 60000) -> Any:
    return c.call(init_producer_id.API, version, init_producer_id.REQUEST(
        transactional_id=tid, transaction_timeout_ms=timeout, producer_id=pid, producer_epoch=epoch))


def add_partitions(c: RawClient, tid: str, pid: int, epoch: int, parts: list[tuple[str, int]],
                   version: int = 3) -> dict[tuple[str, int], int]:
    R = add_partitions_to_txn.REQUEST
    by_topic: dict[str, list[int]] = {}
    for t, p in parts:
        by_topic.setdefault(t, []).append(p)
    topics = [R.AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in by_topic.items()]
    if version >= 4:
        resp = c.call(add_partitions_to_txn.API, version, R(transactions=[R.AddPartitionsToTxnTransaction(
            transactional_id=tid, producer_id=pid, producer_epoch=epoch, verify_only=False, topics=topics)]))
        topic_results = resp.results_by_transaction[0].topic_results
    else:
        resp = c.call(add_partitions_to_txn.API, version, R(
            v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=topics))
        topic_results = resp.results_by_topic_v3_and_below
    return {(t.name, r.partition_index): r.partition_error_code for t in topic_results for r in t.results_by_partition}


def end(c: RawClient, tid: str, pid: int, epoch: int, commit: bool, version: int = 3) -> int:
    return c.call(end_txn.API, version, end_txn.REQUEST(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                                       committed=commit)).error_code


def send(c: RawClient, topic: str, tid: str | None, pid: int, epoch: int, seq: int, *, txn: bool = True,
         version: int = 9) -> Any:
    R = produce.REQUEST
    data = build_batch([Record(value=b"v%d" % seq)], base_timestamp=int(time.time() * 1000), producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq, is_transactional=txn)
    resp = c.call(produce.API, version, R(transactional_id=tid, acks=-1, timeout_ms=5000, topic_data=[
        R.TopicProduceData(name=topic, partition_data=[R.PartitionProduceData(index=0, records=data)])]))
    return resp.responses[0].partition_responses[0]


def test_init_producer_id_bumps_epochs_and_fences_by_kip_360(kafka_broker_module):
    tid = unique("tid")
    with RawClient(kafka_broker_module.bootstrap) as c:
        assert init(c, tid, timeout=10**9).error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
        assert init(c, "").error_code == ErrorCode.INVALID_REQUEST
        assert init(c, tid, pid=5).error_code == ErrorCode.INVALID_REQUEST  # id without epoch
        first = init(c, tid)
        assert first.producer_epoch == 0
        again = init(c, tid)  # a new instance: same id, epoch + 1
        assert (again.producer_id, again.producer_epoch) == (first.producer_id, 1)
        # KIP-360: the current producer recovering names its id and epoch: bumped again
        bumped = init(c, tid, pid=again.producer_id, epoch=1)
        assert (bumped.producer_id, bumped.producer_epoch) == (first.producer_id, 2)
        retry = init(c, tid, pid=again.producer_id, epoch=1)  # the same call retried: no second bump
        assert retry.producer_epoch == 2
        assert init(c, tid, pid=again.producer_id, epoch=0).error_code == ErrorCode.PRODUCER_FENCED
        assert init(c, tid, version=3, pid=again.producer_id, epoch=0).error_code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_partitions_must_be_added_before_transactional_writes(kafka_broker_module):
    topic, tid = unique("tv"), unique("tid")
    create_topic(kafka_broker_module, topic, 1)
    with RawClient(kafka_broker_module.bootstrap) as c:
        r = init(c, tid)
        pid, epoch = r.producer_id, r.producer_epoch
        # not added yet: INVALID_TXN_STATE before Produce v11, TRANSACTION_ABORTABLE from v11
        assert send(c, topic, tid, pid, epoch, 0, version=9).error_code == ErrorCode.INVALID_TXN_STATE
        assert send(c, topic, tid, pid, epoch, 0, version=11).error_code == ErrorCode.TRANSACTION_ABORTABLE
        assert add_partitions(c, tid, pid, epoch, [(topic, 0), ("nope", 0)]) == {
            (topic, 0): ErrorCode.OPERATION_NOT_ATTEMPTED, ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert add_partitions(c, tid, pid, epoch, [("__consumer_offsets", 0)]) == {
            ("__consumer_offsets", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED}
        assert end(c, tid, pid, epoch, True) == ErrorCode.INVALID_TXN_STATE  # Empty: nothing to end
        assert add_partitions(c, tid, pid, epoch, [(topic, 0)]) == {(topic, 0): 0}
        assert send(c, topic, None, pid, epoch, 0).error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert send(c, topic, tid, pid, epoch, 0).error_code == 0
        # another epoch than the open transaction's is a new transaction, verified with the coordinator
        # first (Kafka 4.4's UnifiedLog.hasOngoingTransaction(producerId, producerEpoch)), which has
        # never heard of epoch + 1: PRODUCER_FENCED, answered to a Produce as INVALID_PRODUCER_EPOCH
        assert send(c, topic, tid, pid, epoch + 1, 1).error_code == ErrorCode.INVALID_PRODUCER_EPOCH
        assert add_partitions(c, tid, pid, epoch + 1, [(topic, 0)]) == {(topic, 0): ErrorCode.PRODUCER_FENCED}
        assert add_partitions(c, tid, pid, epoch + 1, [(topic, 0)], version=1) == {
            (topic, 0): ErrorCode.INVALID_PRODUCER_EPOCH}
        assert end(c, tid, pid, epoch, False, version=1) == 0
        assert end(c, tid, pid, epoch, False) == 0  # a retried abort of a completed abort
        assert end(c, tid, pid, epoch, True) == ErrorCode.INVALID_TXN_STATE
        assert end(c, tid, pid + 1000, epoch, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        # the transaction is over: a non-transactional write of the same producer is fine again
        assert send(c, topic, None, pid, epoch, 1, txn=False).error_code == 0
        # another instance takes over: the old epoch's next transactional write is refused as a
        # fenced producer expects it (PRODUCER_FENCED from the verification, INVALID_PRODUCER_EPOCH on the wire)
        assert init(c, tid).producer_epoch == epoch + 1
        assert send(c, topic, tid, pid, epoch, 2).error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert [bytes(r.value) for r in stored_records(kafka_broker_module, topic) if r.value != b"\0\0\0\0\0\0"] == [b"v0", b"v1"]


def test_verify_only_batched_form_v4(kafka_broker_module):
    topic, tid = unique("t4"), unique("tid")
    create_topic(kafka_broker_module, topic, 2)
    with RawClient(kafka_broker_module.bootstrap) as c:
        r = init(c, tid)
        assert add_partitions(c, tid, r.producer_id, r.producer_epoch, [(topic, 0)], version=4) == {(topic, 0): 0}
        R = add_partitions_to_txn.REQUEST
        resp = c.call(add_partitions_to_txn.API, 5, R(transactions=[
            R.AddPartitionsToTxnTransaction(transactional_id=tid, producer_id=r.producer_id,
                                            producer_epoch=r.producer_epoch, verify_only=True,
                                            topics=[R.AddPartitionsToTxnTopic(name=topic, partitions=[0, 1])]),
            R.AddPartitionsToTxnTransaction(transactional_id=unique("unknown"), producer_id=1, producer_epoch=0,
                                            verify_only=True,
                                            topics=[R.AddPartitionsToTxnTopic(name=topic, partitions=[0])])]))
        assert resp.error_code == 0
        mine, other = resp.results_by_transaction
        assert {p.partition_index: p.partition_error_code for p in mine.topic_results[0].results_by_partition} == {
            0: 0, 1: ErrorCode.TRANSACTION_ABORTABLE}
        assert other.topic_results[0].results_by_partition[0].partition_error_code == \
            ErrorCode.INVALID_PRODUCER_ID_MAPPING
        offsets = c.call(add_offsets_to_txn.API, 3, add_offsets_to_txn.REQUEST(
            transactional_id=tid, producer_id=r.producer_id, producer_epoch=r.producer_epoch, group_id="g"))
        assert offsets.error_code == 0
        assert end(c, tid, r.producer_id, r.producer_epoch, True) == 0
        assert end(c, tid, r.producer_id, r.producer_epoch, True) == 0  # retried commit: NONE
        assert end(c, tid, r.producer_id, r.producer_epoch, False) == ErrorCode.INVALID_TXN_STATE


def test_txn_offset_commit_is_pending_until_the_commit(kafka_broker_module):
    from minibroker_protocol.apis import offset_fetch, txn_offset_commit

    topic, tid, group = unique("to"), unique("tid"), unique("g")
    create_topic(kafka_broker_module, topic, 1)
    T = txn_offset_commit.REQUEST

    def commit_offsets(c: RawClient, pid: int, epoch: int, offset: int) -> int:
        resp = c.call(txn_offset_commit.API, 3, T(
            transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch, generation_id_or_member_epoch=-1,
            member_id="", group_instance_id=None, topics=[T.TxnOffsetCommitRequestTopic(name=topic, partitions=[
                T.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset,
                                                  committed_leader_epoch=-1, committed_metadata="m")])]))
        return resp.topics[0].partitions[0].error_code

    def fetch(c: RawClient, stable: bool) -> tuple[int, int]:
        F = offset_fetch.REQUEST
        resp = c.call(offset_fetch.API, 7, F(group_id=group, require_stable=stable, topics=[
            F.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])]))
        part = resp.topics[0].partitions[0]
        return part.error_code, part.committed_offset

    with RawClient(kafka_broker_module.bootstrap) as c:
        r = init(c, tid)
        pid, epoch = r.producer_id, r.producer_epoch
        # the group's partition is not in the transaction yet (INVALID_TXN_STATE before v5)
        assert commit_offsets(c, pid, epoch, 5) == ErrorCode.INVALID_TXN_STATE
        assert c.call(add_offsets_to_txn.API, 3, add_offsets_to_txn.REQUEST(
            transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group)).error_code == 0
        assert commit_offsets(c, pid, epoch, 5) == 0
        assert fetch(c, stable=True) == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
        assert fetch(c, stable=False) == (0, -1)  # nothing committed yet
        assert end(c, tid, pid, epoch, True) == 0
        assert fetch(c, stable=True) == (0, 5)
        # an aborted transaction's offsets never count
        assert add_partitions(c, tid, pid, epoch, [(topic, 0)]) == {(topic, 0): 0}
        assert c.call(add_offsets_to_txn.API, 3, add_offsets_to_txn.REQUEST(
            transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group)).error_code == 0
        assert commit_offsets(c, pid, epoch, 9) == 0
        assert end(c, tid, pid, epoch, False) == 0
        assert fetch(c, stable=True) == (0, 5)


def test_idle_transactional_ids_expire_with_a_tombstone(kafka_broker_module):
    tid = unique("tid")
    with RawClient(kafka_broker_module.bootstrap) as c:
        first = init(c, tid)

    def expire(broker: Any) -> list[bool]:
        coord = broker.txn_coordinator
        real = coord.now_ms
        coord.now_ms = lambda: real() + coord.config.transactional_id_expiration_ms + 1
        try:
            coord.remove_expired_transactional_ids()
        finally:
            coord.now_ms = real
        # what a reload would replay for this id: its records, the last one a tombstone
        return [md is None for _, txn_id, md in transaction_log.read_records(coord.store) if txn_id == tid]

    assert kafka_broker_module.call(expire) == [False, True]
    with RawClient(kafka_broker_module.bootstrap) as c:
        again = init(c, tid)  # a new life: a new producer id
        assert again.producer_id != first.producer_id and again.producer_epoch == 0
