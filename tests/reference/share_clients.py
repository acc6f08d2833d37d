"""confluent-kafka's ShareConsumer (librdkafka, KIP-932) driven the same way against any broker:
what the share-group reference tests share, and a child-process entry for a consumer that is
killed (or outlives its broker) while it holds records.

Every topic's records are produced one batch per record, so `max.poll.records` bounds what one
ShareFetch acquires on both brokers (Kafka acquires whole log batches).

    python -m tests.reference.share_clients hold BOOTSTRAP TOPIC GROUP MAX_RECORDS [PLAN]

polls with explicit acknowledgement: a record delivered for the first time whose offset PLAN
names (`0-3:accept,4:reject,5-7:release`) is acknowledged so (and committed); every other record
is held, unacknowledged. After the first poll that held something it prints
`HELD offset:count,...` and sleeps until it is killed.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

# confluent_kafka's objects are untyped C extension types
Consumer = Any
Message = Any


def create_topic(boot: str, topic: str, group_configs: dict[str, dict[str, str]]) -> None:
    """A one-partition topic, and each group's configs set (IncrementalAlterConfigs on GROUP)."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    resources = [ConfigResource(ConfigResource.Type.GROUP, g, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in cfg.items()])
        for g, cfg in group_configs.items()]
    for f in admin.incremental_alter_configs(resources).values():
        f.result(30)


def produce(boot: str, topic: str, values: Iterable[str]) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": boot, "linger.ms": 0})
    for v in values:
        p.produce(topic, value=v.encode())
        assert p.flush(30) == 0  # one batch per record


def consumer(boot: str, group: str, topic: str, max_records: int) -> Consumer:
    from confluent_kafka import ShareConsumer

    c = ShareConsumer({"bootstrap.servers": boot, "group.id": group, "share.acknowledgement.mode": "explicit",
                       "max.poll.records": max_records})
    c.subscribe([topic])
    return c


def ack_type(name: str) -> int:
    from confluent_kafka import AcknowledgeType

    return int(getattr(AcknowledgeType, name.upper()))


def poll(c: Consumer, ack: Callable[[Message], int], timeout: float = 0.5) -> list[Message]:
    """One poll of `c`: each record acknowledged with `ack(msg)`, then committed."""
    msgs = c.poll(timeout)
    for m in msgs:
        assert m.error() is None, m.error()
        c.acknowledge(m, ack(m))
    if msgs:
        c.commit_sync(30)
    return list(msgs)


def poll_until(c: Consumer, want: Callable[[list[Message]], bool], ack: Callable[[Message], int],
               timeout: float = 30.0) -> list[Message]:
    """Poll `c` until `want(every record so far)`."""
    got: list[Message] = []
    deadline = time.monotonic() + timeout
    while not want(got):
        assert time.monotonic() < deadline, f"timed out with {[(m.offset(), m.delivery_count()) for m in got]}"
        got += poll(c, ack)
    return got


def accept(_m: Message) -> int:
    return ack_type("accept")


def parse_plan(plan: str) -> dict[int, str]:
    """`0-3:accept,4:reject` -> {0: "accept", 1: "accept", 2: "accept", 3: "accept", 4: "reject"}."""
    out: dict[int, str] = {}
    for part in filter(None, plan.split(",")):
        span, kind = part.split(":")
        first, _, last = span.partition("-")
        for off in range(int(first), int(last or first) + 1):
            out[off] = kind
    return out


def hold(boot: str, topic: str, group: str, max_records: int, plan: str = "") -> None:
    """The child: acknowledge what the plan says, hold the rest, report, wait to be killed."""
    todo = parse_plan(plan)
    c = consumer(boot, group, topic, max_records)
    started = time.monotonic()
    while True:
        msgs = c.poll(0.5)
        held = []
        if msgs:  # the steps are printed: when the parent gives up waiting, it shows them
            print(f"{time.monotonic() - started:.1f} s polled "
                  + ",".join(f"{m.offset()}:{m.delivery_count()}" for m in msgs), flush=True)
        for m in msgs:
            assert m.error() is None, m.error()
            kind = todo.get(m.offset()) if m.delivery_count() == 1 else None
            if kind is None:
                held.append(f"{m.offset()}:{m.delivery_count()}")
            else:
                c.acknowledge(m, ack_type(kind))
        if len(held) < len(msgs):
            c.commit_sync(30)
            print(f"{time.monotonic() - started:.1f} s committed", flush=True)
        if held:
            print("HELD " + ",".join(held), flush=True)
            time.sleep(600)


if __name__ == "__main__":
    if sys.argv[1:2] != ["hold"] or len(sys.argv) not in (6, 7):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    hold(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), *sys.argv[6:])
