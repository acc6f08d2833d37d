"""A KIP-848 rebalance driven by raw ConsumerGroupHeartbeats, then commits at chosen member epochs.

Member A joins a group on a two-partition topic and owns both partitions; member B joins, A gives
up one partition (X) and keeps the other (Y), and both settle at the new group epoch. A's
previous epoch is then the one it had before the rebalance. The scenario commits with A (and B)
at the current epoch, the previous epoch for Y (still owned) and for X (revoked), both at once, an
epoch from the future and one older than Y's assignment; by OffsetCommit v9 (topic names) and
v10 (topic ids), and by TxnOffsetCommit v5 inside a transaction. It returns what each broker
answered, with the partitions named by role (X, Y), so that the two brokers compare line by line.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from minibroker_protocol.apis import (
    consumer_group_heartbeat,
    end_txn,
    find_coordinator,
    init_producer_id,
    offset_commit,
    txn_offset_commit,
)
from tests.integration.helpers import RawClient
from tests.integration.kip848_helpers import make_topic

HB = consumer_group_heartbeat.REQUEST
OC = offset_commit.REQUEST
TOC = txn_offset_commit.REQUEST
_RETRIABLE = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


@dataclass
class Member:
    member_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    epoch: int = 0
    owned: dict[uuid.UUID, set[int]] = field(default_factory=dict)
    joined: bool = False

    def partitions(self) -> set[int]:
        return {p for ps in self.owned.values() for p in ps}


def _beat(c: RawClient, group: str, topic: str, m: Member) -> None:
    """One full heartbeat reporting what the member owns; it takes its new epoch and assignment
    (a member gives a revoked partition up at once, as a client does once its commit is done)."""
    req = HB(group_id=group, member_id=m.member_id, member_epoch=m.epoch,
             rebalance_timeout_ms=-1 if m.joined else 30_000,
             subscribed_topic_names=None if m.joined else [topic],
             topic_partitions=[HB.TopicPartitions(topic_id=t, partitions=sorted(ps)) for t, ps in m.owned.items()])
    deadline = time.monotonic() + 30
    while True:
        r = c.call(consumer_group_heartbeat.API, 1, req)
        # Kafka creates __consumer_offsets on the first FindCoordinator, then loads it
        if r.error_code not in _RETRIABLE or time.monotonic() > deadline:
            break
        c.call(find_coordinator.API, 4, find_coordinator.REQUEST(key_type=0, coordinator_keys=[group]))
        time.sleep(0.2)
    assert r.error_code == 0, (r.error_code, r.error_message)
    m.joined, m.epoch = True, r.member_epoch
    if r.assignment is not None:
        m.owned = {tp.topic_id: set(tp.partitions) for tp in r.assignment.topic_partitions if tp.partitions}


def _settle(c: RawClient, group: str, topic: str, members: list[Member], done: Any, what: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        for m in members:
            _beat(c, group, topic, m)
        if done():
            return
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {members}"
        time.sleep(0.1)


def _commit(c: RawClient, version: int, group: str, topic: str, tid: uuid.UUID, m: Member, epoch: int,
            partitions: list[int]) -> list[int]:
    t = (OC.OffsetCommitRequestTopic(topic_id=tid, partitions=[]) if version >= 10
         else OC.OffsetCommitRequestTopic(name=topic, partitions=[]))
    t.partitions = [OC.OffsetCommitRequestPartition(partition_index=p, committed_offset=1, committed_metadata="")
                    for p in partitions]
    r = c.call(offset_commit.API, version, OC(group_id=group, generation_id_or_member_epoch=epoch,
                                              member_id=m.member_id, topics=[t]))
    return [p.error_code for rt in r.topics for p in sorted(rt.partitions, key=lambda p: partitions.index(
        p.partition_index))]


def _txn_commit(c: RawClient, group: str, topic: str, m: Member, epoch: int, partitions: list[int]) -> list[int]:
    """TxnOffsetCommit v5 of a fresh transactional producer (transactions v2: no AddOffsetsToTxn),
    aborted afterwards."""
    txn_id = f"ce-{uuid.uuid4().hex[:8]}"
    deadline = time.monotonic() + 30
    while True:
        fc = c.call(find_coordinator.API, 4, find_coordinator.REQUEST(key_type=1, coordinator_keys=[txn_id]))
        ip = c.call(init_producer_id.API, 5, init_producer_id.REQUEST(transactional_id=txn_id,
                                                                     transaction_timeout_ms=30_000))
        if (fc.coordinators[0].error_code, ip.error_code) == (0, 0) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert ip.error_code == 0, ip.error_code
    r = c.call(txn_offset_commit.API, 5, TOC(
        transactional_id=txn_id, group_id=group, producer_id=ip.producer_id, producer_epoch=ip.producer_epoch,
        generation_id_or_member_epoch=epoch, member_id=m.member_id, topics=[TOC.TxnOffsetCommitRequestTopic(name=topic, partitions=[
            TOC.TxnOffsetCommitRequestPartition(partition_index=p, committed_offset=1, committed_metadata="")
            for p in partitions])]))
    codes = [p.error_code for rt in r.topics for p in sorted(rt.partitions, key=lambda p: partitions.index(
        p.partition_index))]
    c.call(end_txn.API, 5, end_txn.REQUEST(transactional_id=txn_id, producer_id=ip.producer_id,
                                          producer_epoch=ip.producer_epoch, committed=False))
    return codes


def commits_at_member_epochs(bootstrap: str) -> list[tuple[object, ...]]:
    topic, group = f"ce-{uuid.uuid4().hex[:8]}", f"ce-g-{uuid.uuid4().hex[:8]}"
    make_topic(bootstrap, topic, 2)
    a, b = Member(), Member()
    out: list[tuple[object, ...]] = []
    with RawClient(bootstrap, timeout=30) as c:
        _settle(c, group, topic, [a], lambda: a.partitions() == {0, 1}, "A owning both partitions")
        # A's first epoch is 1 or, when Kafka's coordinator learnt of the new topic only after A
        # joined, 2: the epochs are compared relative to it
        before = a.epoch
        _settle(c, group, topic, [b, a], lambda: len(a.partitions()) == len(b.partitions()) == 1
                and a.epoch == b.epoch > before, "A and B settled with a partition each")
        [tid] = a.owned
        [y] = a.partitions()
        [x] = b.partitions()
        out.append(("settled: A's epoch moved by, B's is A's", a.epoch - before, b.epoch == a.epoch))
        cases: list[tuple[str, Member, int, list[int]]] = [
            ("A current Y", a, a.epoch, [y]),
            ("A previous Y (still owned)", a, before, [y]),
            ("A previous X (revoked)", a, before, [x]),
            ("A previous X and Y", a, before, [y, x]),
            ("A future Y", a, a.epoch + 1, [y]),
            ("A before Y's assignment", a, before - 1, [y]),
            ("B previous X (assigned at its current epoch)", b, b.epoch - 1, [x]),
        ]
        for version in (9, 10):
            for label, m, epoch, parts in cases:
                out.append(("OffsetCommit", version, label, _commit(c, version, group, topic, tid, m, epoch, parts)))
        for label, m, epoch, parts in cases[:3]:
            out.append(("TxnOffsetCommit", 5, label, _txn_commit(c, group, topic, m, epoch, parts)))
    return out
