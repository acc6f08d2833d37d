"""KIP-848 groups through the classic group APIs, Apache Kafka 4.4 next to minibroker.

A confluent-kafka consumer with `group.protocol=consumer` joins, reads and commits; then raw
requests ask about its group: DescribeGroups v0/v5/v6 (a consumer group is not a classic group:
Dead, and from v6 GROUP_ID_NOT_FOUND with Kafka's message) and OffsetFetch v9 with and without the
member's id and epoch (KIP-848: UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH). The answers must match.
"""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from minibroker_protocol.apis import consumer_group_describe, describe_groups, offset_fetch
from tests.integration.helpers import RawClient
from tests.reference.helpers import POOL, Pair


def _scenario(bootstrap: str) -> list[tuple[object, ...]]:
    topic, group = f"k848f-{uuid.uuid4().hex[:6]}", f"g848f-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the future is done
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(4):
        p.produce(topic, b"x", partition=i % 2)
    p.flush(30)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    out: list[tuple[object, ...]] = []
    try:
        c.subscribe([topic])
        n, end = 0, time.monotonic() + 60
        while n < 4 and time.monotonic() < end:
            m = c.poll(0.5)
            if m is not None and not m.error():
                n += 1
        out.append(("read", n))
        c.commit(asynchronous=False)
        with RawClient(bootstrap) as r:
            d = r.call(consumer_group_describe.API, 0, consumer_group_describe.REQUEST(
                group_ids=[group], include_authorized_operations=False))
            [member] = d.groups[0].members
            out.append(("state", d.groups[0].group_state))
            for v in (0, 5, 6):
                g = r.call(describe_groups.API, v, describe_groups.REQUEST(
                    groups=[group], include_authorized_operations=False)).groups[0]
                message = g.error_message.replace(group, "<group>") if v >= 6 and g.error_message else None
                out.append(("DescribeGroups", v, g.error_code, message,
                            g.group_state, g.protocol_type, len(g.members)))
            R = offset_fetch.REQUEST
            me, epoch = member.member_id, member.member_epoch
            for label, mid, ep in (("no member", None, -1), ("member", me, epoch), ("newer epoch", me, epoch + 5),
                                   ("older epoch", me, epoch - 1), ("unknown member", "bogus", epoch),
                                   ("empty member id", "", -1)):
                g = r.call(offset_fetch.API, 9, R(groups=[R.OffsetFetchRequestGroup(
                    group_id=group, member_id=mid, member_epoch=ep,
                    topics=[R.OffsetFetchRequestTopics(name=topic, partition_indexes=[0, 1])])],
                    require_stable=False)).groups[0]
                out.append(("OffsetFetch v9", label, g.error_code,
                            [(p.error_code, p.committed_offset) for t in g.topics for p in t.partitions]))
    finally:
        c.close()
    return out


def test_classic_group_apis_on_a_consumer_group_match_kafka(pair: Pair) -> None:
    kafka, mini = (f.result(timeout=120) for f in [POOL.submit(_scenario, s.bootstrap)
                                                   for s in (pair.kafka, pair.mini)])
    assert mini == kafka
    rows = {r[:2]: r[2:] for r in mini}
    assert rows[("read", 4)] == ()
    assert rows[("DescribeGroups", 6)][:1] == (69,)  # GROUP_ID_NOT_FOUND
    assert rows[("OffsetFetch v9", "member")] == (0, [(0, 2), (0, 2)])
    assert rows[("OffsetFetch v9", "newer epoch")] == (113, [])  # STALE_MEMBER_EPOCH
    assert rows[("OffsetFetch v9", "unknown member")] == (25, [])  # UNKNOWN_MEMBER_ID
