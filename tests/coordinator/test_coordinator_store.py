"""__consumer_offsets through the real storage engine: placement, files, transactional loading.

The coordinators run in a BrokerServer (built, no sockets) over a LogManager in tmp_path (tests/coordinator/stack.py),
as `BrokerServer.build` wires them.
"""

from __future__ import annotations

from minibroker.coordinator.group.records import (
    TOPIC,
    OffsetAndMetadata,
    OffsetCommitRecord,
    decode_record,
    offset_commit_record,
)
from minibroker.coordinator.runtime.coordinator_loader import CoordinatorLoader
from minibroker.coordinator.runtime.coordinator_store import partition_for
from minibroker_protocol.records.v2 import ControlType, Record, build_batch, build_control_batch
from minibroker_storage.log import AppendOrigin
from tests.coordinator.stack import Stack


def commit_batch(records, *, pid=-1, epoch=-1, txn=False) -> bytes:
    return build_batch([Record(offset_delta=i, key=k, value=v) for i, (k, v) in enumerate(records)],
                       base_timestamp=1, producer_id=pid, producer_epoch=epoch, base_sequence=0 if txn else -1,
                       is_transactional=txn)


async def test_records_land_in_the_groups_partition_as_compacted_internal_topic(tmp_path):
    s = await Stack(tmp_path / "d").start()
    try:
        store = s.groups.store
        store.append("my-group", [offset_commit_record("my-group", "t", 2, OffsetAndMetadata(9, 1, "m", 5))])
        topic = s.topics[TOPIC]
        assert topic.is_internal and len(topic.partitions) == 7
        assert topic.config["cleanup.policy"] == ["compact"]
        p = partition_for("my-group", 7)
        lg = topic.partitions[p]
        assert lg.log_end_offset == 1
        assert [decode_record(k, v) for k, v in CoordinatorLoader(s.topics).read(TOPIC, p)] == [
            OffsetCommitRecord("my-group", "t", 2, OffsetAndMetadata(9, 1, "m", 5))]
        assert all(topic.partitions[q].log_end_offset == 0 for q in topic.partitions if q != p)
        seg = tmp_path / "d" / f"{TOPIC}-{p}" / "00000000000000000000.log"
        assert seg.exists() and seg.stat().st_size > 61
    finally:
        await s.stop()


async def test_loading_keeps_committed_transactions_and_drops_aborted_ones(tmp_path):
    s = await Stack(tmp_path / "d").start()
    try:
        topic = s.offsets.ensure_topic()
        p = partition_for("g", 7)
        lg = topic.partitions[p]
        rec = lambda off: offset_commit_record("g", "t", 0, OffsetAndMetadata(off, -1, "", 1))  # noqa: E731
        lg.append_as_leader(commit_batch([rec(1)]), origin=AppendOrigin.COORDINATOR)
        lg.append_as_leader(commit_batch([rec(2)], pid=10, epoch=0, txn=True), origin=AppendOrigin.COORDINATOR)
        lg.append_as_leader(commit_batch([rec(3)], pid=11, epoch=0, txn=True), origin=AppendOrigin.COORDINATOR)
        lg.append_as_leader(build_control_batch(ControlType.ABORT, producer_id=10, producer_epoch=0,
                                                coordinator_epoch=0, timestamp=1), origin=AppendOrigin.COORDINATOR)
        lg.append_as_leader(build_control_batch(ControlType.COMMIT, producer_id=11, producer_epoch=0,
                                                coordinator_epoch=0, timestamp=1), origin=AppendOrigin.COORDINATOR)
        offsets = [decode_record(k, v).value.offset for k, v in CoordinatorLoader(s.topics).read(TOPIC, p)]
        assert offsets == [1, 3]
    finally:
        await s.stop()


async def test_restart_restores_groups_and_offsets_from_disk(tmp_path):
    from tests.coordinator.group_helpers import commit_req, stable_group

    s = await Stack(tmp_path / "d").start()
    c = s.groups
    (a,), gen = await stable_group(c, "grp", session=6000)
    assert set(c.commit_offsets(commit_req("grp", gen, a, [("t", 1, 42, 3, "meta")]), 8).values()) == {0}
    s = await s.reopen()
    try:
        c = s.groups
        om = c.committed("grp", "t", 1)
        assert (om.offset, om.leader_epoch, om.metadata) == (42, 3, "meta")
        assert c.groups["grp"].generation_id == gen and a in c.groups["grp"].members
    finally:
        await s.stop()


async def test_an_append_wakes_fetches_parked_on_the_partition(tmp_path):
    """Records go through ReplicaManager.append: a long-polling fetch on the group's partition
    wakes at once rather than at its timeout."""
    import asyncio

    s = await Stack(tmp_path / "d").start()
    try:
        s.offsets.ensure_topic()
        p = partition_for("g", 7)
        waiting = asyncio.ensure_future(s.replica_manager.wait_for_data([(TOPIC, p)], 30.0))
        await asyncio.sleep(0)
        s.offsets.append("g", [offset_commit_record("g", "t", 0, OffsetAndMetadata(1, -1, "", 1))])
        await asyncio.wait_for(waiting, 5.0)
    finally:
        await s.stop()


async def test_deleting_a_topic_drops_its_committed_offsets(tmp_path):
    from tests.coordinator.group_helpers import commit_req

    s = await Stack(tmp_path / "d").start()
    try:
        s.topics.create("t", 2)
        assert set(s.groups.commit_offsets(commit_req("g", -1, "", [("t", 0, 5, -1, ""), ("t", 1, 6, -1, "")]),
                                           8).values()) == {0}
        s.topics.delete("t")
        assert s.groups.committed("g", "t", 0) is None and s.groups.committed("g", "t", 1) is None
        s = await s.reopen()
        assert s.groups.committed("g", "t", 0) is None  # the tombstones are in the log
    finally:
        await s.stop()
