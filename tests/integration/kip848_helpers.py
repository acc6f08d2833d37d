"""KIP-848 scenarios with real clients, run against minibroker and against Apache Kafka alike.

Each scenario takes a bootstrap address and returns what the clients saw, so that a test can run
it on both brokers and compare: assignment sizes, stickiness, records read (each exactly once).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

TIMEOUT = 30.0


def consumer(bootstrap: str, group: str, name: str, **extra: Any) -> Any:
    from confluent_kafka import Consumer

    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                     "client.id": name, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                     **extra})


def make_topic(bootstrap: str, name: str, partitions: int, records: int = 0) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})  # held: a collected client cancels its futures
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    if records:
        p = Producer({"bootstrap.servers": bootstrap})
        for i in range(records):
            p.produce(name, value=f"{name}-{i}".encode(), partition=i % partitions)
        assert p.flush(15) == 0


def assignment(c: Any) -> list[tuple[str, int]]:
    return sorted((tp.topic, tp.partition) for tp in c.assignment())


@dataclass
class Members:
    """Consumers of one group, polled round-robin; every record read is committed at once."""

    members: list[Any] = field(default_factory=list)
    seen: list[bytes] = field(default_factory=list)

    def spin_until(self, cond: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not cond():
            assert time.monotonic() < deadline, f"timed out waiting for {what}: " \
                f"{[assignment(c) for c in self.members]}"
            self.spin(0.05)

    def spin(self, poll: float = 0.05) -> None:
        for c in self.members:
            m = c.poll(poll)
            if m is not None and m.error() is None:
                self.seen.append(m.value())
                c.commit(m, asynchronous=False)

    def sizes(self) -> list[int]:
        return [len(assignment(c)) for c in self.members]

    def settled(self, total: int) -> bool:
        parts = [tp for c in self.members for tp in assignment(c)]
        sizes = self.sizes()
        return len(parts) == total == len(set(parts)) and max(sizes) - min(sizes) <= 1

    def close(self) -> None:
        for c in self.members:
            c.close()


def three_members_join_and_leave(bootstrap: str) -> dict[str, Any]:
    """One member, then three, then one leaves; 60 records read across them exactly once."""
    topic, group = f"k848-{uuid.uuid4().hex[:8]}", f"k848-g-{uuid.uuid4().hex[:8]}"
    make_topic(bootstrap, topic, 6, 60)
    ms = Members()
    out: dict[str, Any] = {}
    try:
        ms.members.append(consumer(bootstrap, group, "c1"))
        ms.members[0].subscribe([topic])
        ms.spin_until(lambda: ms.settled(6), "one member with six partitions")
        out["one"] = ms.sizes()
        for name in ("c2", "c3"):
            c = consumer(bootstrap, group, name)
            c.subscribe([topic])
            ms.members.append(c)
        ms.spin_until(lambda: ms.settled(6) and len(ms.seen) == 60, "three members sharing six partitions")
        out["three"] = ms.sizes()
        before = [set(assignment(c)) for c in ms.members[:2]]
        ms.members.pop().close()
        ms.spin_until(lambda: ms.settled(6), "two members after a leave")
        out["two"] = ms.sizes()
        # sticky: the remaining members kept what they had (revoke-then-assign moved only the leaver's)
        out["sticky"] = all(b <= set(assignment(c)) for b, c in zip(before, ms.members, strict=True))
        out["read"] = (len(ms.seen), len(set(ms.seen)))
    finally:
        ms.close()
    return out


def regex_picks_up_new_topic(bootstrap: str) -> dict[str, Any]:
    """A member subscribed by regex (server-side, KIP-848) gets a topic created after it joined."""
    prefix = f"k848rx-{uuid.uuid4().hex[:8]}"
    group = f"{prefix}-g"
    make_topic(bootstrap, f"{prefix}-a", 2, 4)
    ms = Members()
    try:
        c = consumer(bootstrap, group, "rx", **{"topic.metadata.refresh.interval.ms": 1000})
        c.subscribe([f"^{prefix}-.*"])
        ms.members.append(c)
        ms.spin_until(lambda: len(assignment(c)) == 2 and len(ms.seen) == 4, "the regex's first topic")
        first = assignment(c)
        make_topic(bootstrap, f"{prefix}-b", 3, 6)
        ms.spin_until(lambda: len(assignment(c)) == 5 and len(ms.seen) == 10, "the topic created later", 45)
        return {"first": [p for _, p in first], "then": sorted({t.rsplit("-", 1)[1] for t, _ in assignment(c)}),
                "read": len(ms.seen)}
    finally:
        ms.close()
