"""Consumer groups with real clients over loopback: join, split, kill -9, clean leave.

Each member is a separate process (groups_member.py) so that it can be killed without a
LeaveGroup. Members commit after every poll and print only what they committed, so across
all members every record must be printed exactly once: none lost, none read twice.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

MEMBER = Path(__file__).with_name("groups_member.py")
ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 4
SESSION_S = 6.0


class Member:
    def __init__(self, lib: str, bootstrap: str, topic: str, group: str, assignor: str, log_path: Path):
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, str(MEMBER), lib, bootstrap, topic, group, assignor],
                                     cwd=ROOT, stdout=subprocess.PIPE, stderr=self.log)
        self.values: list[str] = []
        self.assignment: list[int] = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            kind, _, rest = raw.decode().strip().partition(" ")
            with self.lock:
                if kind == "R":
                    self.values.append(rest.split(" ", 2)[2])
                elif kind == "A":
                    self.assignment = [int(p) for p in rest.split(",") if p]

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def leave(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(20) == 0

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.log.close()


def wait_until(cond, timeout: float, what: str) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return time.monotonic()
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def produce(bootstrap: str, topic: str, start: int, count: int) -> set[str]:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    values = {f"v{i}" for i in range(start, start + count)}
    for i in range(start, start + count):
        p.produce(topic, value=f"v{i}".encode(), partition=i % PARTITIONS)
    assert p.flush(15) == 0
    return values


def split_between(*members: Member) -> bool:
    parts = [m.assignment for m in members]
    flat = [p for ps in parts for p in ps]
    return all(parts) and sorted(flat) == list(range(PARTITIONS))


@pytest.mark.parametrize("lib,assignor", [
    ("kafka-python", "range"),
    ("confluent", "cooperative-sticky"),  # KIP-429 runs client-side over the classic protocol
    ("aiokafka", "roundrobin"),
])
def test_members_join_split_die_and_leave(kafka_broker_isolated, tmp_path, lib, assignor):
    topic, group = f"orders-{lib}", f"group-{lib}"
    kafka_broker_isolated.call(lambda br: br.create_topic(topic, PARTITIONS))
    bs = kafka_broker_isolated.bootstrap
    members: list[Member] = []

    def member(name: str) -> Member:
        m = Member(lib, bs, topic, group, assignor, tmp_path / f"{name}.log")
        members.append(m)
        return m

    def everyone() -> list[str]:
        return [v for m in members for v in m.values]

    try:
        expected = produce(bs, topic, 0, 100)
        a = member("a")
        wait_until(lambda: set(a.values) == expected, 30, "member a to read everything")

        b = member("b")
        wait_until(lambda: split_between(a, b), 30, "the partitions to split between a and b")
        expected |= produce(bs, topic, 100, 100)
        wait_until(lambda: set(everyone()) == expected, 30, "a and b to read the new records")
        assert b.values, "b read nothing after the split"

        b.kill()
        killed_at = time.monotonic()
        moved_at = wait_until(lambda: a.assignment == list(range(PARTITIONS)), 30,
                              "b's partitions to move to a after its session timeout")
        assert moved_at - killed_at >= SESSION_S - 1.5, "partitions moved before the session timeout"
        expected |= produce(bs, topic, 200, 100)
        wait_until(lambda: set(everyone()) == expected, 30, "a to read b's partitions")

        c = member("c")
        wait_until(lambda: split_between(a, c), 30, "the partitions to split between a and c")
        left_at = time.monotonic()
        c.leave()
        back_at = wait_until(lambda: a.assignment == list(range(PARTITIONS)), 30,
                             "a to get everything back after c left")
        assert back_at - left_at < SESSION_S - 2, "a clean leave should rebalance at once"
        expected |= produce(bs, topic, 300, 100)
        wait_until(lambda: set(everyone()) == expected, 30, "a to read everything after c left")

        counts = collections.Counter(everyone())
        assert [v for v, n in counts.items() if n > 1] == [], "records read twice"
        assert set(counts) == expected
    finally:
        for m in members:
            m.close()


def test_static_member_restart_within_session_timeout_does_not_rebalance(kafka_broker_isolated):
    """KIP-345: a static member that closes (no LeaveGroup for static members) and comes back
    with the same group.instance.id before its session times out keeps its partitions; the
    group stays at the same generation."""
    from confluent_kafka import Consumer

    topic, group = "static-topic", "static-group"
    kafka_broker_isolated.call(lambda br: br.create_topic(topic, PARTITIONS))
    coord = kafka_broker_isolated.broker.group_coordinator

    def start(instance: str) -> Consumer:
        c = Consumer({"bootstrap.servers": kafka_broker_isolated.bootstrap, "group.id": group, "group.instance.id": instance,
                      "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest"})
        c.subscribe([topic])
        return c

    def state() -> tuple[str, int, int]:
        return kafka_broker_isolated.call(lambda br: (coord.groups[group].state.value, coord.groups[group].generation_id,
                                       len(coord.groups[group].members)))

    a, b = start("static-a"), start("static-b")
    try:
        def polled_until(cond) -> float:
            def step() -> bool:
                a.poll(0.05)
                b.poll(0.05)
                return cond()
            return wait_until(step, 30, "the static group to settle")

        polled_until(lambda: len(a.assignment()) + len(b.assignment()) == PARTITIONS and a.assignment()
                     and b.assignment() and state()[0] == "Stable" and state()[2] == 2)
        _, generation, _ = state()
        before = sorted(tp.partition for tp in b.assignment())
        b.close()
        b = start("static-b")
        polled_until(lambda: len(b.assignment()) > 0)
        assert sorted(tp.partition for tp in b.assignment()) == before
        assert state() == ("Stable", generation, 2)
    finally:
        a.close()
        b.close()
