"""Online migration between classic and consumer groups (group.consumer.migration.policy): scenarios
that take a bootstrap address and return what the clients saw, so a test can run them against
minibroker and Apache Kafka alike and compare.

- `upgrade_then_downgrade`: confluent-kafka classic consumers, then a `group.protocol=consumer`
  member joins (the group becomes a consumer group), then it leaves (the group is classic again);
  records are produced at every step and each is read exactly once.
- `policy_probe`: the same steps on the wire (JoinGroup / SyncGroup / ConsumerGroupHeartbeat), short
  and deterministic, answering what each policy allows or refuses.
"""

from __future__ import annotations

import struct
import time
import uuid
from typing import Any

from minibroker_protocol.apis import (
    consumer_group_describe,
    consumer_group_heartbeat,
    find_coordinator,
    join_group,
    list_groups,
    sync_group,
)
from tests.integration import kip848_helpers as k848
from tests.integration.helpers import RawClient

# Kafka's retriable answers while a coordinator (re)loads
_RETRY = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def classic_consumer(bootstrap: str, group: str, name: str) -> Any:
    # heartbeats every 0.5 s so that a rebalance asked for in a heartbeat is seen at once
    return k848.consumer(bootstrap, group, name, **{"group.protocol": "classic", "heartbeat.interval.ms": 500,
                                                    "session.timeout.ms": 6000})


def group_listing(bootstrap: str, group: str) -> list[tuple[str, str, str]]:
    """(type, protocol type, state) of `group` in ListGroups v5."""
    with RawClient(bootstrap) as c:
        r = c.call(list_groups.API, 5, list_groups.REQUEST(states_filter=[], types_filter=[]))
    return [(g.group_type, g.protocol_type, g.group_state) for g in r.groups if g.group_id == group]


def describe(bootstrap: str, group: str) -> dict[str, Any]:
    """ConsumerGroupDescribe v1: the group's error and state, and each member's type and partition count."""
    with RawClient(bootstrap) as c:
        r = c.call(consumer_group_describe.API, 1, consumer_group_describe.REQUEST(
            group_ids=[group], include_authorized_operations=False))
    g = r.groups[0]
    return {"error": g.error_code, "state": g.group_state,
            "members": sorted((m.client_id, m.member_type, sum(len(tp.partitions) for tp in
                                                                 m.assignment.topic_partitions))
                              for m in g.members)}


def _settle(ms: k848.Members, what: str, cond: Any, timeout: float = 45.0) -> None:
    ms.spin_until(cond, what, timeout)


def _produce(bootstrap: str, topic: str, tag: str, n: int, partitions: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, value=f"{tag}-{i}".encode(), partition=i % partitions)
    assert p.flush(15) == 0


def upgrade_then_downgrade(bootstrap: str) -> dict[str, Any]:
    topic, group = f"mig-{uuid.uuid4().hex[:8]}", f"mig-g-{uuid.uuid4().hex[:8]}"
    k848.make_topic(bootstrap, topic, 6, 30)
    ms = k848.Members()
    out: dict[str, Any] = {}
    try:
        for name in ("classic-1", "classic-2"):
            c = classic_consumer(bootstrap, group, name)
            c.subscribe([topic])
            ms.members.append(c)
        _settle(ms, "two classic members", lambda: ms.settled(6) and len(ms.seen) == 30)
        out["classic"] = (group_listing(bootstrap, group), ms.sizes())
        new = k848.consumer(bootstrap, group, "consumer-1")
        new.subscribe([topic])
        ms.members.append(new)
        _settle(ms, "a consumer-protocol member among classic ones",
                lambda: ms.settled(6) and describe(bootstrap, group)["state"] == "Stable")
        _produce(bootstrap, topic, "mixed", 30, 6)
        _settle(ms, "records read by the mixed group", lambda: len(ms.seen) == 60)
        out["mixed"] = (group_listing(bootstrap, group), describe(bootstrap, group), ms.sizes())
        ms.members.pop().close()
        _settle(ms, "the classic members after the downgrade",
                lambda: ms.settled(6) and group_listing(bootstrap, group) == [("classic", "consumer", "Stable")])
        _produce(bootstrap, topic, "after", 30, 6)
        _settle(ms, "records read after the downgrade", lambda: len(ms.seen) == 90)
        out["downgraded"] = (group_listing(bootstrap, group), describe(bootstrap, group)["error"], ms.sizes())
        out["read"] = (len(ms.seen), len(set(ms.seen)))
    finally:
        ms.close()
    return out


# -- the wire-level probe ------------------------------------------------------------------------

def subscription(topics: list[str]) -> bytes:
    """A ConsumerProtocolSubscription v0 naming `topics` (no user data)."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


def assignment_bytes(topic: str, partitions: list[int]) -> bytes:
    return struct.pack(">hih", 0, 1, len(topic)) + topic.encode() + struct.pack(
        f">i{len(partitions)}i", len(partitions), *partitions) + struct.pack(">i", -1)


def _types(bootstrap: str, group: str) -> list[tuple[str, str]]:
    return [(t, p) for t, p, _ in group_listing(bootstrap, group)]


def _retrying(fn: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        r = fn()
        if getattr(r, "error_code", 0) not in _RETRY or time.monotonic() > deadline:
            return r
        time.sleep(0.2)


def _classic_join(c: RawClient, group: str, topic: str, member_id: str = "", instance_id: str | None = None) -> Any:
    def join(member_id: str) -> Any:
        return c.call(join_group.API, 5, join_group.REQUEST(
            group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id=member_id,
            group_instance_id=instance_id, protocol_type="consumer",
            protocols=[join_group.REQUEST.JoinGroupRequestProtocol(name="range", metadata=subscription([topic]))]))

    first = _retrying(lambda: join(member_id))
    if first.error_code != 79:  # MEMBER_ID_REQUIRED
        return first
    return join(first.member_id)


def _sync(c: RawClient, group: str, join: Any, topic: str, partitions: list[int]) -> Any:
    leader = join.leader == join.member_id
    assignments = [sync_group.REQUEST.SyncGroupRequestAssignment(
        member_id=join.member_id, assignment=assignment_bytes(topic, partitions))] if leader else []
    return c.call(sync_group.API, 3, sync_group.REQUEST(
        group_id=group, generation_id=join.generation_id, member_id=join.member_id, group_instance_id=None,
        assignments=assignments))


def _cghb(c: RawClient, group: str, member_id: str, epoch: int, topic: str, instance_id: str | None = None) -> Any:
    return c.call(consumer_group_heartbeat.API, 1, consumer_group_heartbeat.REQUEST(
        group_id=group, member_id=member_id, member_epoch=epoch, rebalance_timeout_ms=10000, instance_id=instance_id,
        subscribed_topic_names=[topic] if epoch == 0 else None, topic_partitions=[] if epoch == 0 else None))


def policy_probe(bootstrap: str, tag: str) -> dict[str, Any]:
    """What a policy lets happen, on the wire:
    - `upgrade`: a ConsumerGroupHeartbeat joins a classic group with a member;
    - `classic_join`: a classic JoinGroup + SyncGroup on a consumer group with a member;
    - `downgrade`: the group type once the consumer-protocol member of that group left;
    - `static_replace`: a classic JoinGroup under the instance id of a group's only (static,
      consumer-protocol) member: the classic member takes its place, maybe downgrading the group."""
    topic = f"migp-{tag}-{uuid.uuid4().hex[:6]}"
    k848.make_topic(bootstrap, topic, 2)
    g1, g2, g3 = f"{topic}-g1", f"{topic}-g2", f"{topic}-g3"
    out: dict[str, Any] = {}
    with RawClient(bootstrap) as c:
        _retrying(lambda: c.call(find_coordinator.API, 3, find_coordinator.REQUEST(key=g1, key_type=0)))
        j = _classic_join(c, g1, topic)
        s = _sync(c, g1, j, topic, [0, 1])
        out["classic_group"] = (j.error_code, s.error_code, group_listing(bootstrap, g1))
        r = _cghb(c, g1, str(uuid.uuid4()), 0, topic)
        # type and protocol type only where the group is mid-rebalance: Kafka 4.4 computes a target
        # assignment at most every group.consumer.assignment.interval.ms (Assigning for a while),
        # minibroker at once (Reconciling)
        out["upgrade"] = (r.error_code, r.error_message and r.error_message.replace(g1, "G"),
                          _types(bootstrap, g1))
        member = str(uuid.uuid4())
        r = _retrying(lambda: _cghb(c, g2, member, 0, topic))
        epoch = r.member_epoch
        j = _classic_join(c, g2, topic)
        s = _sync(c, g2, j, topic, []) if j.error_code == 0 else None
        out["classic_join"] = (j.error_code, j.protocol_name if j.error_code == 0 else None,
                               j.leader if j.error_code == 0 else None,
                               None if s is None else s.error_code, _types(bootstrap, g2))
        r = _cghb(c, g2, member, -1, topic)
        out["leave"] = (r.error_code, r.member_epoch, epoch > 0)
        out["downgrade"] = group_listing(bootstrap, g2)
        r = _cghb(c, g3, str(uuid.uuid4()), 0, topic, instance_id="i1")
        j = _classic_join(c, g3, topic, instance_id="i1")
        out["static_replace"] = (r.error_code, j.error_code, j.protocol_name if j.error_code == 0 else None,
                                 group_listing(bootstrap, g3))
    return out
