"""CoordinatorRuntime: a coordinator's state follows the leadership of its internal-topic partition.

`on_resign(topic, p)` drops what partition p holds (groups, offsets, transactional ids, share
states) and only that; `on_become_leader(topic, p)` replays p from its log and brings it back as it
was. Other partitions' state is untouched either way.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from minibroker.coordinator.group.records import TOPIC as OFFSETS_TOPIC
from minibroker.coordinator.runtime.coordinator_runtime import CoordinatorRuntime
from minibroker.coordinator.runtime.coordinator_store import partition_for
from minibroker.coordinator.txn.transaction_log import TOPIC as TRANSACTION_TOPIC
from minibroker_protocol.errors import ErrorCode
from tests.coordinator.group_helpers import commit_req, stable_group
from tests.coordinator.stack import Stack


def two_keys_in_different_partitions(n: int) -> tuple[str, str]:
    a = "key-0"
    b = next(f"key-{i}" for i in range(1, 100) if partition_for(f"key-{i}", n) != partition_for(a, n))
    return a, b


async def test_groups_and_offsets_unload_and_reload_with_their_partition(tmp_path: Path) -> None:
    s = await Stack(tmp_path / "d").start()
    try:
        c = s.groups
        runtime = CoordinatorRuntime(s.topics, s.replica_manager)
        moving, staying = two_keys_in_different_partitions(7)
        (m,), gen = await stable_group(c, moving, session=6000)
        assert set(c.commit_offsets(commit_req(moving, gen, m, [("t", 0, 42, -1, "x")]), 8).values()) == {0}
        c.commit_offsets(commit_req(staying, offsets=[("t", 0, 7, -1, "")]), 8)
        runtime.register(OFFSETS_TOPIC, c, loaded=c.store.partitions())
        p = c.store.partition_for(moving)
        assert runtime.is_loaded(OFFSETS_TOPIC, p)

        runtime.on_resign(OFFSETS_TOPIC, p)
        assert not runtime.is_loaded(OFFSETS_TOPIC, p)
        assert moving not in c.groups and c.committed(moving, "t", 0) is None
        assert c.committed(staying, "t", 0).offset == 7
        assert not any(isinstance(k, tuple) and k[1] == moving for k in c.timer._handles)

        runtime.on_become_leader(OFFSETS_TOPIC, p)
        assert runtime.is_loaded(OFFSETS_TOPIC, p)
        assert c.committed(moving, "t", 0).offset == 42
        assert c.groups[moving].generation_id == gen and m in c.groups[moving].members
        assert c.committed(staying, "t", 0).offset == 7
    finally:
        await s.stop()


async def test_transactional_ids_unload_and_reload_with_their_partition(tmp_path: Path) -> None:
    s = await Stack(tmp_path / "d").start()
    try:
        t = s.txns
        runtime = CoordinatorRuntime(s.topics, s.replica_manager)
        moving, staying = two_keys_in_different_partitions(5)
        for tid in (moving, staying):
            code, _, _ = await t.init_producer_id(tid, 60_000, None)
            assert code == 0
        pid = t.txns[moving].producer_id
        runtime.register(TRANSACTION_TOPIC, t, loaded=t.store.partitions())
        p = t.store.partition_for(moving)

        runtime.on_resign(TRANSACTION_TOPIC, p)
        assert moving not in t.txns and staying in t.txns
        runtime.on_resign(TRANSACTION_TOPIC, p)  # not led here any more: nothing to do
        runtime.on_become_leader(TRANSACTION_TOPIC, p)
        assert t.txns[moving].producer_id == pid and staying in t.txns
    finally:
        await s.stop()


async def test_share_states_unload_and_reload_with_their_partition(tmp_path: Path) -> None:
    import uuid

    from minibroker.coordinator.share.share_coordinator_shard import (
        TOPIC,
        ShareCoordinatorShard,
        coordinator_key,
        topic_configs,
    )
    from minibroker.coordinator.share.share_partition import StateBatch

    s = await Stack(tmp_path / "d").start()
    try:
        runtime = CoordinatorRuntime(s.topics, s.replica_manager)
        shard = ShareCoordinatorShard(runtime.store(TOPIC, 3, topic_configs(1 << 20)))
        keys = [("g", uuid.UUID(int=i), 0) for i in range(12)]
        for i, key in enumerate(keys):
            shard.write(key, i, 0, [StateBatch(i, i, 2, 1)])
        runtime.register(TOPIC, shard, loaded=shard.store.partitions())
        p = shard.store.partition_for(coordinator_key(keys[0]))
        moving = {k for k in keys if shard.store.partition_for(coordinator_key(k)) == p}
        assert moving and moving != set(keys)

        runtime.on_resign(TOPIC, p)
        assert set(shard.states) == set(keys) - moving
        runtime.on_become_leader(TOPIC, p)
        assert set(shard.states) == set(keys)
        assert all(shard.states[k].start_offset == i for i, k in enumerate(keys))
    finally:
        await s.stop()


async def test_elections_load_on_the_next_turn_and_stale_epochs_are_ignored(tmp_path: Path) -> None:
    """on_election / on_resignation (minibroker.coordinator_elections calls them from
    ReplicaManager.apply_delta): the load runs on the next turn of the loop, its keys answered
    COORDINATOR_LOAD_IN_PROGRESS meanwhile; a resignation or election older than the election in
    force changes nothing (Kafka: CoordinatorRuntime's epoch checks)."""
    s = await Stack(tmp_path / "d").start()
    try:
        c = s.groups
        runtime = CoordinatorRuntime(s.topics, s.replica_manager)
        key = "key-0"
        c.commit_offsets(commit_req(key, offsets=[("t", 0, 9, -1, "")]), 8)
        store = runtime.store(OFFSETS_TOPIC, 7, {})
        runtime.register(OFFSETS_TOPIC, c, loaded=c.store.partitions())
        p = c.store.partition_for(key)
        assert store.coordinator_error(key) == ErrorCode.NONE
        runtime.on_resignation(OFFSETS_TOPIC, p, 3)
        assert c.committed(key, "t", 0) is None
        runtime.on_election(OFFSETS_TOPIC, p, 2)  # older than the resignation's epoch: ignored
        await asyncio.sleep(0)
        assert not runtime.is_loaded(OFFSETS_TOPIC, p)
        runtime.on_election(OFFSETS_TOPIC, p, 4)
        assert store.coordinator_error(key) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        await asyncio.sleep(0)
        assert runtime.is_loaded(OFFSETS_TOPIC, p) and store.coordinator_error(key) == ErrorCode.NONE
        assert c.committed(key, "t", 0).offset == 9
        runtime.on_resignation(OFFSETS_TOPIC, p, 3)  # a delayed resignation of an older epoch
        assert runtime.is_loaded(OFFSETS_TOPIC, p) and c.committed(key, "t", 0).offset == 9
    finally:
        await s.stop()
