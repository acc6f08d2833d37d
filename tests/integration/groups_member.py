"""One consumer-group member in its own process, for the group tests (so it can be killed -9).

    python groups_member.py LIB BOOTSTRAP TOPIC GROUP [ASSIGNOR]

LIB is kafka-python, confluent or aiokafka. The member subscribes, and after each poll commits
synchronously what it read; only after the commit succeeded does it print the records, one line
each: `R <partition> <offset> <value>`. A record whose commit failed (the group rebalanced
meanwhile) is not printed: it will be read again, by whoever owns the partition next. Whenever
its assignment changes it prints `A <partitions, comma separated>`. SIGTERM makes it close the
consumer (a clean LeaveGroup) and exit 0.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

SESSION_MS = 6000
HEARTBEAT_MS = 500

stopping = False


def on_term(*_: object) -> None:
    global stopping
    stopping = True


def out(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Tracker:
    def __init__(self) -> None:
        self.last: list[int] | None = None

    def assignment(self, partitions: list[int]) -> None:
        partitions = sorted(partitions)
        if partitions != self.last:
            self.last = partitions
            out("A " + ",".join(map(str, partitions)))


def run_kafka_python(bootstrap: str, topic: str, group: str, assignor: str) -> None:
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.errors import KafkaError

    strategies = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                      partition_assignment_strategy=[strategies[assignor]], client_id=f"member-{group}")
    # Learn the topic's partitions before joining: kafka-python 3.0.x can lose the assignment of
    # the immediate second rebalance it starts when the metadata arrives just after its first join.
    c.partitions_for_topic(topic)
    c.subscribe([topic])
    t = Tracker()
    while not stopping:
        batches = c.poll(timeout_ms=100)
        t.assignment([tp.partition for tp in c.assignment()])
        records = [r for rs in batches.values() for r in rs]
        if not records:
            continue
        try:
            c.commit()
        except KafkaError as e:
            logging.warning("commit failed: %r", e)
            continue
        for r in records:
            out(f"R {r.partition} {r.offset} {r.value.decode()}")
    c.close()


def run_confluent(bootstrap: str, topic: str, group: str, assignor: str) -> None:
    from confluent_kafka import Consumer, KafkaException

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": SESSION_MS,
                  "heartbeat.interval.ms": HEARTBEAT_MS, "partition.assignment.strategy": assignor,
                  "client.id": f"member-{group}"})
    c.subscribe([topic])
    t = Tracker()
    while not stopping:
        msgs = c.consume(num_messages=500, timeout=0.1)
        t.assignment([tp.partition for tp in c.assignment()])
        records = [m for m in msgs if m.error() is None]
        if not records:
            continue
        try:
            c.commit(asynchronous=False)
        except KafkaException as e:
            logging.warning("commit failed: %r", e)
            continue
        for m in records:
            out(f"R {m.partition()} {m.offset()} {m.value().decode()}")
    c.close()


async def run_aiokafka(bootstrap: str, topic: str, group: str, assignor: str) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.errors import KafkaError

    strategies = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                         enable_auto_commit=False, session_timeout_ms=SESSION_MS,
                         heartbeat_interval_ms=HEARTBEAT_MS, partition_assignment_strategy=[strategies[assignor]],
                         client_id=f"member-{group}")
    await c.start()
    t = Tracker()
    while not stopping:
        batches = await c.getmany(timeout_ms=100)
        t.assignment([tp.partition for tp in c.assignment()])
        records = [r for rs in batches.values() for r in rs]
        if not records:
            continue
        try:
            await c.commit()
        except KafkaError as e:
            logging.warning("commit failed: %r", e)
            continue
        for r in records:
            out(f"R {r.partition} {r.offset} {r.value.decode()}")
    await c.stop()


def main() -> None:
    lib, bootstrap, topic, group = sys.argv[1:5]
    assignor = sys.argv[5] if len(sys.argv) > 5 else "range"
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    signal.signal(signal.SIGTERM, on_term)
    if lib == "kafka-python":
        run_kafka_python(bootstrap, topic, group, assignor)
    elif lib == "confluent":
        run_confluent(bootstrap, topic, group, assignor)
    elif lib == "aiokafka":
        asyncio.run(run_aiokafka(bootstrap, topic, group, assignor))
    else:
        raise SystemExit(f"unknown client library {lib}")


if __name__ == "__main__":
    main()
