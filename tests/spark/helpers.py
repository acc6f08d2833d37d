"""What the Spark tests share: the events topic's shape and how to create and fill it."""

from __future__ import annotations

import json
from dataclasses import dataclass

EVENTS = "events"
N_EVENTS = 1000
STEP_MS = 10  # event i has timestamp base_ms + i * STEP_MS and goes to partition i % 2


@dataclass
class EventTopic:
    bootstrap: str
    topic: str
    base_ms: int

    def ts(self, i: int) -> int:
        return self.base_ms + i * STEP_MS


def event(i: int) -> dict:
    return {"i": i, "user": f"u{i % 7}", "amount": i % 13}


def produce_events(bootstrap: str, topic: str, first: int, count: int, base_ms: int) -> None:
    """Events first..first+count-1: key k<i>, JSON value, header n=<i>, partition i % 2."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    failures: list = []
    for i in range(first, first + count):
        p.produce(topic, key=f"k{i}", value=json.dumps(event(i)), partition=i % 2,
                  timestamp=base_ms + i * STEP_MS, headers=[("n", str(i).encode())],
                  on_delivery=lambda err, _m: err and failures.append(err))
    assert p.flush(30) == 0
    assert not failures, failures


def create_topic(bootstrap: str, topic: str, partitions: int = 2) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)
