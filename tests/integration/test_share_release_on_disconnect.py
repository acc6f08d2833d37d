"""A share consumer's acquired records go back when the connection that opened its share session
closes (Kafka 4.4: ShareSessionCache's connection-disconnect listener -> releaseSession), with
their delivery counts kept, long before their 30 s acquisition locks expire. Raw ShareGroupHeartbeat
and ShareFetch over RawClient connections to the in-process broker; the Java and confluent
consumers killed with SIGKILL are compared with Kafka in tests/reference/test_share_groups.py."""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import Producer

from minibroker.testing import BrokerThread
from minibroker_protocol.apis import share_fetch, share_group_heartbeat
from minibroker_protocol.errors import ErrorCode
from tests.integration.helpers import RawClient, create_topic, unique, wait_until

LOCK_S = 30  # group.share.record.lock.duration.ms, the default


def _heartbeat(raw: RawClient, group: str, member: str, epoch: int, topic: str | None) -> Any:
    return raw.call(share_group_heartbeat.API, 1, share_group_heartbeat.REQUEST(
        group_id=group, member_id=member, member_epoch=epoch, rack_id=None,
        subscribed_topic_names=[topic] if topic else None))


def _join(raw: RawClient, group: str, member: str, topic: str) -> int:
    """The member's epoch."""
    resp = _heartbeat(raw, group, member, 0, topic)
    assert resp.error_code == 0, resp
    epoch: int = resp.member_epoch
    return epoch


def _fetch(raw: RawClient, group: str, member: str, epoch: int, topic_id: uuid.UUID,
           wait_ms: int) -> list[tuple[int, int, int]]:
    """One ShareFetch of partition 0: the (first, last, delivery count) ranges acquired."""
    resp = _fetch_response(raw, group, member, epoch, topic_id, wait_ms)
    assert resp.error_code == 0, resp
    return [(a.first_offset, a.last_offset, a.delivery_count)
            for t in resp.responses for p in t.partitions for a in p.acquired_records]


def _fetch_response(raw: RawClient, group: str, member: str, epoch: int, topic_id: uuid.UUID, wait_ms: int) -> Any:
    R = share_fetch.REQUEST
    return raw.call(share_fetch.API, 1, R(
        group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=wait_ms, min_bytes=1,
        max_bytes=1 << 20, max_records=10, batch_size=10,
        topics=[R.FetchTopic(topic_id=topic_id, partitions=[R.FetchPartition(partition_index=0,
                                                                             acknowledgement_batches=[])])],
        forgotten_topics_data=[]))


def _setup(b: BrokerThread, raw: RawClient, group: str, member: str) -> tuple[uuid.UUID, int]:
    """A topic, `member` joined (the share partition starts at the end: latest), 5 records:
    (the topic's id, the member's epoch)."""
    topic = unique("share-dc")
    create_topic(b, topic)
    epoch = _join(raw, group, member, topic)
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
    for i in range(5):
        p.produce(topic, value=f"v{i}".encode())
    assert p.flush(10) == 0
    topic_id: uuid.UUID = b.call(lambda broker: broker.topics.get(topic).topic_id)
    return topic_id, epoch


def _member() -> str:
    return str(uuid.uuid4())


def test_closing_the_connection_releases_the_sessions_records(kafka_broker: Any) -> None:
    b: BrokerThread = kafka_broker
    group, holder, other = unique("share-dc-g"), _member(), _member()
    with RawClient(b.bootstrap) as raw1, RawClient(b.bootstrap) as raw2:
        topic_id, _ = _setup(b, raw1, group, holder)
        assert _fetch(raw1, group, holder, 0, topic_id, 5000) == [(0, 4, 1)]
        # the other member's topic is the same: it joins and finds everything locked
        _join(raw2, group, other, b.call(lambda broker: broker.topics.by_id(topic_id).name))
        assert _fetch(raw2, group, other, 0, topic_id, 0) == []
        raw1.close()  # no final ShareFetch: as if the consumer were killed
        started = time.monotonic()
        got = _fetch(raw2, group, other, 1, topic_id, 10_000)
        waited = time.monotonic() - started
    assert got == [(0, 4, 2)], "released with their delivery counts kept, and acquired again"
    assert waited < LOCK_S / 3, f"took {waited:.1f} s: the lock expired, the close released nothing"


def test_the_member_outlives_its_sessions_connection(kafka_broker: Any) -> None:
    """Only the share session ends with the connection (Kafka's group coordinator hears nothing of
    it): the member still heartbeats at its epoch, from another connection; its old session epoch
    is SHARE_SESSION_NOT_FOUND there, and a new session (epoch 0) fetches again."""
    b: BrokerThread = kafka_broker
    group, holder = unique("share-dc-g"), _member()
    raw1 = RawClient(b.bootstrap)
    topic_id, epoch = _setup(b, raw1, group, holder)
    topic = b.call(lambda broker: broker.topics.by_id(topic_id).name)
    assert _fetch(raw1, group, holder, 0, topic_id, 5000) == [(0, 4, 1)]
    raw1.close()
    with RawClient(b.bootstrap) as raw2:
        hb = _heartbeat(raw2, group, holder, epoch, topic)
        assert (hb.error_code, hb.member_epoch) == (0, epoch)
        # the close is noticed on the broker's loop, maybe after this connection's first request
        wait_until(lambda: b.call(lambda broker: (group, holder) not in broker.share_groups.sessions), 5,
                   "the session to end with its connection")
        assert _fetch_response(raw2, group, holder, 1, topic_id, 0).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        assert _fetch(raw2, group, holder, 0, topic_id, 5000) == [(0, 4, 2)]


def test_a_session_reopened_elsewhere_outlives_the_old_connection(kafka_broker: Any) -> None:
    """The connection's session was replaced (epoch 0 on another connection): closing the old
    connection releases nothing (Kafka marks the old connection's entry stale), and the member
    still holds its records in the new session; closing the new connection releases them."""
    b: BrokerThread = kafka_broker
    group, holder, other = unique("share-dc-g"), _member(), _member()
    with RawClient(b.bootstrap) as raw1, RawClient(b.bootstrap) as raw1b, RawClient(b.bootstrap) as raw2:
        topic_id, _ = _setup(b, raw1, group, holder)
        assert _fetch(raw1, group, holder, 0, topic_id, 5000) == [(0, 4, 1)]
        assert _fetch(raw1b, group, holder, 0, topic_id, 0) == []  # a new session; 0-4 are still its
        _join(raw2, group, other, b.call(lambda broker: broker.topics.by_id(topic_id).name))
        raw1.close()
        assert _fetch(raw2, group, other, 0, topic_id, 1000) == [], "the old connection's close released"
        raw1b.close()
        assert _fetch(raw2, group, other, 1, topic_id, 10_000) == [(0, 4, 2)]
