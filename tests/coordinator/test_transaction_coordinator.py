"""The transaction coordinator built from its dependencies (no broker): markers through the
replica manager, the group coordinator told about __consumer_offsets markers, the produce check."""

from __future__ import annotations

import asyncio

import pytest

from minibroker.coordinator.group.records import TOPIC as OFFSETS_TOPIC
from minibroker.coordinator.txn.transaction_coordinator import check_transactional_produce
from minibroker_protocol.apis import txn_offset_commit
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records.batch import iter_batches
from minibroker_protocol.records.v2 import Record, build_batch, decode_batches
from minibroker_storage.config import LogConfig
from minibroker_storage.log import Log
from tests.coordinator.stack import Stack

E = ErrorCode


@pytest.fixture
async def stack(tmp_path):
    s = await Stack(tmp_path / "d").start()
    yield s
    await s.stop()


def txn_batch(pid: int, epoch: int) -> bytes:
    return build_batch([Record(key=b"k", value=b"v")], base_timestamp=1, producer_id=pid, producer_epoch=epoch,
                       base_sequence=0, is_transactional=True)


async def begin(s: Stack, txn_id: str = "tx") -> tuple[int, int]:
    code, pid, epoch = await s.txns.init_producer_id(txn_id, 60_000, None)
    assert code == E.NONE
    return pid, epoch


async def test_commit_writes_markers_through_the_replica_manager(stack):
    s = stack
    s.topics.create("t", 1)
    pid, epoch = await begin(s)
    assert s.txns.add_partitions("tx", pid, epoch, [("t", 0)]) == E.NONE
    lg = s.topics.get_log("t", 0)
    s.replica_manager.append(lg, txn_batch(pid, epoch))
    waiting = asyncio.ensure_future(s.replica_manager.wait_for_data([("t", 0)], 30.0))
    await asyncio.sleep(0)
    assert s.txns.end_transaction("tx", pid, epoch, True) == E.NONE
    await asyncio.wait_for(waiting, 5.0)  # the marker woke the parked fetch (it moves the LSO)
    assert lg.log_end_offset == 2
    (marker,) = decode_batches(lg.read(1, 1 << 20).region.read_all())
    assert marker.is_control and marker.producer_id == pid
    assert not lg.has_ongoing_transaction(pid)
    assert s.txns.txns["tx"].state.display_name == "CompleteCommit"


async def test_offsets_of_a_committed_transaction_reach_the_group_coordinator(tmp_path):
    s = await Stack(tmp_path / "d").start()
    pid, epoch = await begin(s)
    s.offsets.ensure_topic()
    assert s.txns.add_partitions("tx", pid, epoch, [s.txns.offsets_partition("g")]) == E.NONE
    T = txn_offset_commit.REQUEST.TxnOffsetCommitRequestTopic
    P = txn_offset_commit.REQUEST.TxnOffsetCommitRequestPartition
    req = txn_offset_commit.REQUEST(transactional_id="tx", group_id="g", producer_id=pid, producer_epoch=epoch,
                                    generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                                    topics=[T(name="t", partitions=[P(partition_index=0, committed_offset=7,
                                                                      committed_leader_epoch=-1,
                                                                      committed_metadata="")])])
    assert s.groups.commit_transactional_offsets(req) == {("t", 0): E.NONE}
    assert s.groups.committed("g", "t", 0) is None  # not before the marker
    assert s.groups.has_pending_transactional_offsets("g", "t", 0)
    assert s.txns.end_transaction("tx", pid, epoch, True) == E.NONE
    assert s.groups.committed("g", "t", 0).offset == 7
    s = await s.reopen()
    try:
        assert s.groups.committed("g", "t", 0).offset == 7
        assert s.txns.txns["tx"].producer_id == pid
    finally:
        await s.stop()


def s_log(tmp_path) -> Log:
    return Log.open(tmp_path / "t-0", LogConfig())


def test_produce_check_without_a_coordinator_asks_the_client_to_retry(tmp_path):
    records = txn_batch(5, 0)

    class NoTxn:
        def has_ongoing_transaction(self, pid: int, epoch: int | None = None) -> bool:
            return False

    with pytest.raises(KafkaError) as e:
        check_transactional_produce(None, "tx", list(iter_batches(records)), "t", 0, NoTxn(), 11)  # type: ignore[arg-type]
    assert e.value.code == E.NOT_ENOUGH_REPLICAS
    # a plain produce: the validator finds no transactional batch and calls no verification
    verified = []
    lg = s_log(tmp_path)
    lg.validate(build_batch([Record(key=b"k", value=b"v")], base_timestamp=1), request_version=11,
                verify=verified.append)
    assert verified == []
    lg.validate(records, request_version=11, verify=verified.append)
    assert [(v.producer_id, v.producer_epoch) for v in verified[0]] == [(5, 0)]
    lg.close()


async def test_producer_id_expiration_reaches_every_partition_log(stack):
    s = stack
    s.topics.create("t", 2)
    assert OFFSETS_TOPIC not in s.topics
    s.txns.expire_producers()
    for p in (0, 1):
        assert s.topics.get_log("t", p).producer_state.producer_id_expiration_ms == \
            s.txns.config.producer_id_expiration_ms


async def test_v2_end_bumps_the_epoch_and_an_exhausted_epoch_moves_to_a_new_producer_id(stack):
    """Transactions v2 (EndTxn v5): the markers carry epoch + 1, which the client goes on with;
    the bump that reaches Short.MAX_VALUE writes the markers with it and hands out the next
    producer id at epoch 0 (TransactionMetadata.prepareComplete); the old epoch's retry is answered
    with the new id (Kafka's retryOnOverflow), and the state survives a reload."""
    s = stack
    s.topics.create("t", 1)
    pid, epoch = await begin(s)
    lg = s.topics.get_log("t", 0)
    assert s.txns.add_partitions("tx", pid, epoch, [("t", 0)], tv=2) == E.NONE
    s.replica_manager.append(lg, txn_batch(pid, epoch))
    assert s.txns.end_transaction_and_epoch("tx", pid, epoch, True, tv=2) == (E.NONE, pid, epoch + 1)
    (marker,) = decode_batches(lg.read(1, 1 << 20).region.read_all())
    assert (marker.producer_id, marker.producer_epoch) == (pid, epoch + 1)
    # a late write of the ended transaction: fenced by the coordinator and by the partition
    assert s.txns.add_partitions("tx", pid, epoch, [("t", 0)], tv=2) == E.PRODUCER_FENCED
    # the epoch about to run out
    md = s.txns.txns["tx"]
    md.producer_epoch = 32766
    assert s.txns.add_partitions("tx", pid, 32766, [("t", 0)], tv=2) == E.NONE
    s.replica_manager.append(lg, txn_batch(pid, 32766))
    code, new_pid, new_epoch = s.txns.end_transaction_and_epoch("tx", pid, 32766, False, tv=2)
    assert (code, new_epoch) == (E.NONE, 0) and new_pid != pid
    marker = list(decode_batches(lg.read(3, 1 << 20).region.read_all()))[-1]
    assert marker.is_control and (marker.producer_id, marker.producer_epoch) == (pid, 32767)
    assert (md.producer_id, md.producer_epoch, md.previous_producer_id) == (new_pid, 0, pid)
    assert s.txns.end_transaction_and_epoch("tx", pid, 32766, False, tv=2) == (E.NONE, new_pid, 0)
    s.txns.txns.clear()
    s.txns.load()
    loaded = s.txns.txns["tx"]
    assert (loaded.producer_id, loaded.producer_epoch, loaded.state.display_name,
            loaded.client_transaction_version) == (new_pid, 0, "CompleteAbort", 2)
