"""A share group (KIP-932) survives a restart of its broker: the group coordinator writes the
group's records to __consumer_offsets (ShareGroupMetadata, ShareGroupMemberMetadata, the target
and current assignments, ShareGroupStatePartitionMetadata; Kafka 4.4's GroupCoordinatorRecordHelpers)
and replays them on load, so ShareGroupDescribe right after the restart shows the group with its
epochs, members and assignments, and the members' next heartbeats are accepted as they are.
Leaving members and a deleted group leave tombstones: after another restart the group is Empty
at its last epoch, then gone.

The broker runs as a subprocess and is killed with SIGKILL; the clients are confluent-kafka's
ShareConsumer (librdkafka).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.reference import share_clients as sc

pytest.importorskip("confluent_kafka", minversion="2.16")

TOPIC, GROUP = "share-restart", "share-restart-group"


def describe(boot: str) -> tuple[int, str, int, int, dict[str, tuple[int, list[int], list[str]]]]:
    """(error, state, group epoch, assignment epoch, {member id: (epoch, partitions, subscription)})."""
    from minibroker_protocol.apis import share_group_describe
    from tests.integration.helpers import RawClient

    with RawClient(boot) as raw:
        resp = raw.call(share_group_describe.API, 1, share_group_describe.REQUEST(
            group_ids=[GROUP], include_authorized_operations=False))
    g = resp.groups[0]
    members = {m.member_id: (m.member_epoch, sorted(p for tp in m.assignment.topic_partitions for p in tp.partitions),
                             sorted(m.subscribed_topic_names)) for m in g.members}
    return g.error_code, g.group_state, g.group_epoch, g.assignment_epoch, members


def settle(boot: str, consumers: list[Any], members: int, timeout: float = 40.0) -> None:
    """Poll until `members` members hold partitions of the group epoch's target, both covered."""
    deadline = time.monotonic() + timeout
    while True:
        for c in consumers:
            c.poll(0.3)
        d = describe(boot)
        got = sorted(m[1] for m in d[4].values())
        if len(got) == members and all(got) and {p for ps in got for p in ps} == {0, 1} and d[2] == d[3] and all(m[0] == d[3] for m in d[4].values()):
            return  # the target assignment of the group epoch, taken by every member
        assert time.monotonic() < deadline, f"not settled: {d}"


def test_share_group_survives_a_restart(kafka_broker_process: Any) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    bp = kafka_broker_process(overrides={"group.initial.rebalance.delay.ms": 0})
    bs = bp.start()
    consumers: list[Any] = []
    try:
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(30)
        consumers = [sc.consumer(bs, GROUP, TOPIC, 10) for _ in range(2)]
        settle(bs, consumers, 2)
        # a third member joins and leaves: the group epoch is then past what two members
        # rejoining a group the broker forgot would reach
        third = sc.consumer(bs, GROUP, TOPIC, 10)
        settle(bs, [*consumers, third], 3)
        third.close()
        settle(bs, consumers, 2)
        before = describe(bs)
        assert before[0] == 0 and before[1] == "Stable" and before[2] >= 4 and len(before[4]) == 2, before

        bp.kill()
        bp.start()
        # before the members heartbeat again: the coordinator knows them from __consumer_offsets
        after = describe(bs)
        assert after == before, (before, after)
        # their heartbeats (same member ids, same epochs) are accepted: nothing moves
        t_end = time.monotonic() + 7  # more than the 5 s heartbeat interval
        while time.monotonic() < t_end:
            for c in consumers:
                c.poll(0.3)
        assert describe(bs) == before

        for c in consumers:
            c.close()
        consumers = []
        left = describe(bs)
        assert left[:2] == (0, "Empty") and left[2] > before[2] and not left[4], left
        assert bp.stop() == 0
        bp.start()
        assert describe(bs) == left  # the leaves' tombstones replayed

        admin = AdminClient({"bootstrap.servers": bs})
        admin.delete_consumer_groups([GROUP])[GROUP].result(30)  # DeleteGroups
        bp.kill()
        bp.start()
        assert describe(bs)[0] == 69  # GROUP_ID_NOT_FOUND: the group's tombstones replayed
    except Exception:
        print(bp.log_text()[-5000:])
        raise
    finally:
        for c in consumers:
            c.close()
