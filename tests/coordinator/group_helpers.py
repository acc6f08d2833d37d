"""Drive a `GroupCoordinator` directly: a `MemoryLog` store, request builders, and the join/sync
dance that makes a stable group. Shared by test_group_coordinator.py and test_coordinator_store.py.
"""

from __future__ import annotations

import asyncio
import struct

from minibroker.coordinator.group.classic_group import GroupState
from minibroker.coordinator.group.group_coordinator import ClientInfo, GroupConfig, GroupCoordinator
from minibroker.coordinator.group.records import decode_record
from minibroker_protocol.apis import heartbeat, join_group, offset_commit, sync_group
from minibroker_protocol.errors import ErrorCode, KafkaError

E = ErrorCode
TIMEOUT = 5.0


class MemoryLog:
    """Stands in for the runtime's CoordinatorStore of __consumer_offsets: the same append /
    partitions / load_partition / open_transactions surface, one partition."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None]] = []
        self.fail_with: int | None = None
        self.open_transactions: dict[int, list[tuple[bytes, bytes | None]]] = {}

    def append(self, group_id: str, records: list[tuple[bytes, bytes | None]]) -> int:
        if self.fail_with is not None:
            raise KafkaError(self.fail_with)
        first = len(self.records)
        self.records.extend(records)
        return first

    def partitions(self) -> list[int]:
        return [0]  # one partition holds every group

    def partition_for(self, key: str) -> int:
        return 0

    def load_partition(self, partition: int, open_transactions=None):
        if open_transactions is not None:
            for pid, held in self.open_transactions.items():
                open_transactions.setdefault(pid, []).extend(held)
        return list(self.records)

    def decoded(self):
        return [decode_record(k, v) for k, v in self.records]


def config(**kw) -> GroupConfig:
    base = dict(initial_rebalance_delay_ms=0, min_session_timeout_ms=10, max_session_timeout_ms=60_000)
    base.update(kw)
    return GroupConfig(**base)


async def started(store: MemoryLog | None = None, **kw) -> GroupCoordinator:
    clock = kw.pop("clock", None)
    c = GroupCoordinator(config(**kw), store or MemoryLog(), **({"now_ms": clock} if clock else {}))
    await c.start()
    return c


def sub(*topics: str) -> bytes:
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


def join_req(group: str, member_id: str = "", *, instance: str | None = None, session: int = 5000,
             rebalance: int = 5000, protocols=None, ptype: str = "consumer"):
    P = join_group.REQUEST.JoinGroupRequestProtocol
    protocols = protocols or (("range", sub("t")),)
    return join_group.REQUEST(group_id=group, session_timeout_ms=session, rebalance_timeout_ms=rebalance,
                              member_id=member_id, group_instance_id=instance, protocol_type=ptype,
                              protocols=[P(name=n, metadata=m) for n, m in protocols])


def client(version: int = 5, cid: str = "c") -> ClientInfo:
    return ClientInfo(client_id=cid, client_host="/127.0.0.1", api_version=version)


async def join(c: GroupCoordinator, group: str, member_id: str = "", version: int = 5, **kw):
    """Join like a v4+ client: get a member id first if needed, then join with it (parks)."""
    if not member_id and kw.get("instance") is None and version >= 4:
        first = await c.join_group(join_req(group, **kw), client(version))
        assert first.error_code == E.MEMBER_ID_REQUIRED
        member_id = first.member_id
    return c.join_group(join_req(group, member_id, **kw), client(version))


async def done(fut):
    return await asyncio.wait_for(fut, TIMEOUT)


def sync_req(group, member_id, generation, assignments=None, instance=None):
    A = sync_group.REQUEST.SyncGroupRequestAssignment
    return sync_group.REQUEST(group_id=group, generation_id=generation, member_id=member_id,
                              group_instance_id=instance,
                              assignments=[A(member_id=m, assignment=a) for m, a in (assignments or {}).items()])


def hb(c, group, member_id, generation, instance=None) -> int:
    return c.heartbeat(heartbeat.REQUEST(group_id=group, generation_id=generation, member_id=member_id,
                                         group_instance_id=instance))


def commit_req(group, generation=-1, member_id="", offsets=(), retention=-1):
    T = offset_commit.REQUEST.OffsetCommitRequestTopic
    P = offset_commit.REQUEST.OffsetCommitRequestPartition
    by_topic: dict[str, list] = {}
    for topic, partition, offset, epoch, metadata in offsets:
        by_topic.setdefault(topic, []).append(P(partition_index=partition, committed_offset=offset,
                                                committed_leader_epoch=epoch, committed_metadata=metadata))
    return offset_commit.REQUEST(group_id=group, generation_id_or_member_epoch=generation, member_id=member_id,
                                 retention_time_ms=retention,
                                 topics=[T(name=t, partitions=ps) for t, ps in by_topic.items()])


async def stable_group(c, group="g", n=1, **kw):
    """n dynamic members joined and synced; returns (member ids, generation)."""
    futs = [await join(c, group, **kw) for _ in range(n)]
    resps = [await done(f) for f in futs]
    gen = resps[0].generation_id
    leader = resps[0].leader
    ids = [r.member_id for r in resps]
    syncs = [c.sync_group(sync_req(group, m, gen, {x: x.encode() for x in ids} if m == leader else None))
             for m in ids]
    for s in syncs:
        assert (await done(s)).error_code == 0
    assert c.groups[group].state is GroupState.STABLE
    return ids, gen
