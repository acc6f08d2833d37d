"""Nothing lost (issue 29): a bounded chaos run against a three-broker cluster.

A topic of RF 3 with min.insync.replicas=2, two idempotent acks=all producers (confluent-kafka)
writing numbered records, and every few seconds (seeded random) one broker killed with SIGKILL,
paused with SIGSTOP (resumed later with SIGCONT) or restarted cleanly (SIGTERM, start). At most one
broker is down at a time: with RF 3 and min.insync 2 the two others keep the ISR at its minimum, so
acks=all writes go on most of the time and every record acknowledged was written to at least two
replicas — the guarantee being tested (Kafka's, KIP-101/KIP-279 truncation by leader epoch). Two
down at once would only stall the producers (NOT_ENOUGH_REPLICAS), not test anything more.

Then healing (every broker running, the ISR whole, HW = LEO everywhere), and the checks:
acknowledged records lost = 0, duplicated = 0, per-partition order of each producer kept, every
acknowledged record at the offset its ack named, and each partition's `.log` segment files
byte-identical on the three replicas.

    python bench/chaos.py --seconds 120 --seed 1

exits 1 if anything acknowledged was lost or anything duplicated (or the logs differ).
tests/cluster/test_chaos.py runs `run_chaos` for ~20 s in `make test`.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

if __package__ in (None, ""):  # run as a script: the checkout's root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minibroker.cluster_testing import Cluster, poll  # noqa: E402

PARTITIONS = 3
PRODUCERS = 2
# acks=all idempotent; a long delivery timeout so a record fails only when it truly cannot be written;
# log_level 2: the reconnect chatter off, the summary is the output
PRODUCER_CONFIG: dict[str, str | int | bool] = {"acks": "all", "enable.idempotence": True, "message.timeout.ms": 120000,
                                                "linger.ms": 5, "queue.buffering.max.messages": 2000, "log_level": 2}
WAIT = 240.0  # a loaded 2-core machine restarts a broker in tens of seconds


@dataclass
class Acked:
    partition: int
    offset: int


@dataclass
class ChaosResult:
    seed: int
    seconds: float
    acked: int = 0
    failed: int = 0
    read: int = 0
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0
    misplaced: int = 0  # acked at one offset, read at another
    kills: int = 0
    pauses: int = 0
    restarts: int = 0
    leader_changes: int = 0
    logs_identical: bool = False
    log_differences: list[str] = field(default_factory=list)
    timeline: list[str] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return (self.lost == 0 and self.duplicated == 0 and self.out_of_order == 0 and self.misplaced == 0
                and self.logs_identical)

    def summary(self) -> str:
        lines = [f"seed {self.seed}, {self.seconds:.0f} s of chaos, {PRODUCERS} producers, {PARTITIONS} partitions",
                 f"acknowledged            {self.acked}",
                 f"failed (reported)       {self.failed}  {self.errors or ''}",
                 f"read back               {self.read}",
                 f"lost (acknowledged)     {self.lost}",
                 f"duplicated              {self.duplicated}",
                 f"out of order            {self.out_of_order}",
                 f"at another offset       {self.misplaced}",
                 f"kills -9                {self.kills}",
                 f"pauses (SIGSTOP)        {self.pauses}",
                 f"clean restarts          {self.restarts}",
                 f"leader changes          {self.leader_changes}",
                 f"logs identical          {'yes' if self.logs_identical else 'no'}"]
        lines += [f"  {d}" for d in self.log_differences]
        return "\n".join(lines)


def _value(producer: int, seq: int) -> bytes:
    return f"p{producer}-{seq:09d}".encode()


def _parse(value: bytes) -> tuple[int, int]:
    p, s = value.decode().split("-")
    return int(p[1:]), int(s)


class _Producing(threading.Thread):
    """One idempotent acks=all producer writing p<i>-<seq> round robin over the partitions."""

    def __init__(self, index: int, bootstrap: str, topic: str, result: ChaosResult, lock: threading.Lock):
        super().__init__(name=f"chaos-producer-{index}", daemon=True)
        self.index, self.topic, self.result, self.lock = index, topic, result, lock
        self.acked: dict[bytes, Acked] = {}
        self.stop_flag = threading.Event()
        self.producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG})

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        with self.lock:
            value, partition, offset = msg.value(), msg.partition(), msg.offset()
            if err is None and value is not None and partition is not None and offset is not None:
                self.acked[value] = Acked(partition, offset)
            else:
                self.result.failed += 1
                name = "no offset" if err is None else err.name()
                self.result.errors[name] = self.result.errors.get(name, 0) + 1

    def run(self) -> None:
        seq = 0
        while not self.stop_flag.is_set():
            try:
                self.producer.produce(self.topic, value=_value(self.index, seq), partition=seq % PARTITIONS,
                                      on_delivery=self._delivered)
                seq += 1
            except BufferError:  # the queue is full while a leader is away: wait for acks
                self.producer.poll(0.1)
                continue
            self.producer.poll(0)
            if seq % 50 == 0:
                time.sleep(0.01)  # a steady stream, not a flood the machine cannot take under chaos

    def _poll(self, timeout: float) -> None:
        self.producer.poll(timeout)

    def finish(self, timeout: float) -> int:
        """Stop producing, wait up to `timeout` s for the outstanding reports; the count left."""
        self.stop_flag.set()
        self.join(30)
        # poll, not flush: a fatal error (an unclean election's sequence desynchronization) is
        # raised by flush while librdkafka's flush loop goes on serving delivery callbacks with
        # that exception set: a callback then stalled on the lock or failed with SystemError
        deadline = time.monotonic() + timeout
        while len(self.producer) and time.monotonic() < deadline:
            self._poll(0.1)
        return len(self.producer)


def _leaders(c: Cluster, topic: str) -> dict[int, int] | None:
    try:
        return {p: s.leader for p, s in c.partitions(topic).items()}
    except Exception:  # noqa: BLE001 - a broker just killed may answer nothing: sample again later
        return None


def _chaos(c: Cluster, topic: str, seconds: float, rng: random.Random, r: ChaosResult,
           gap: tuple[float, float] = (2.0, 5.0)) -> None:
    """Every 2-5 s: bring the broker that is down back, or (none down) kill / pause / restart one
    (weights 3 / 2 / 1: the unclean kill is the case that truncates logs)."""
    started = time.monotonic()
    down: tuple[int, str] | None = None
    leaders = _leaders(c, topic)

    def note(what: str) -> None:
        r.timeline.append(f"{time.monotonic() - started:7.1f}s {what}")

    while time.monotonic() - started < seconds:
        # a pause outlasts broker.session.timeout.ms (3 s) and replica.lag.time.max.ms (4 s) of the
        # test cluster: the paused broker is fenced, leaves the ISR, and wakes up as a zombie leader
        time.sleep(rng.uniform(5.0, 8.0) if down is not None and down[1] == "paused" else rng.uniform(*gap))
        if down is not None:
            node, how = down
            if how == "paused":
                c.resume(node)
                note(f"SIGCONT broker {node}")
            else:
                c.start_broker(node, WAIT)
                note(f"broker {node} started and serving")
            down = None
        else:
            node = rng.choice(sorted(c.brokers))
            action = rng.choices(["kill", "pause", "restart"], weights=[3, 2, 1])[0]
            if action == "kill":
                c.stop_broker(node, kill=True)
                r.kills += 1
                down = (node, "killed")
                note(f"kill -9 broker {node}")
            elif action == "pause":
                c.pause(node)
                r.pauses += 1
                down = (node, "paused")
                note(f"SIGSTOP broker {node}")
            else:
                c.stop_broker(node)
                r.restarts += 1
                down = (node, "stopped")
                note(f"SIGTERM broker {node}")
        now = _leaders(c, topic)
        if now is not None and leaders is not None:
            r.leader_changes += sum(1 for p, n in now.items() if leaders.get(p) != n)
        leaders = now if now is not None else leaders
    if down is not None:
        note(f"chaos over, broker {down[0]} {down[1]}")


def _read_all(bootstrap: str, topic: str) -> dict[int, list[tuple[int, bytes]]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"chaos-{uuid.uuid4()}",
                         "enable.auto.commit": False, "fetch.max.bytes": 8 << 20})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=60)[1] for p in range(PARTITIONS)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
        next_offset = {p: 0 for p in range(PARTITIONS)}
        deadline = time.monotonic() + WAIT
        while any(next_offset[p] < ends[p] for p in out) and time.monotonic() < deadline:
            for m in consumer.consume(1000, 0.5):
                p, offset, value = m.partition(), m.offset(), m.value()
                if m.error() is None and p is not None and offset is not None and value is not None:
                    out[p].append((offset, value))
                    next_offset[p] = offset + 1
        return out
    finally:
        consumer.close()


def _check(r: ChaosResult, producers: list[_Producing], read: dict[int, list[tuple[int, bytes]]]) -> None:
    seen: dict[bytes, int] = {}
    where: dict[bytes, tuple[int, int]] = {}
    for p, records in read.items():
        last: dict[int, int] = {}
        for offset, value in records:
            r.read += 1
            seen[value] = seen.get(value, 0) + 1
            where.setdefault(value, (p, offset))
            producer, seq = _parse(value)
            if seq <= last.get(producer, -1):
                r.out_of_order += 1
            last[producer] = seq
    r.duplicated = sum(n - 1 for n in seen.values())
    for pr in producers:
        r.acked += len(pr.acked)
        for value, ack in pr.acked.items():
            if value not in seen:
                r.lost += 1
            elif where[value] != (ack.partition, ack.offset):
                r.misplaced += 1


def _compare_logs(c: Cluster, topic: str, r: ChaosResult) -> bool:
    r.log_differences = []
    for p in range(PARTITIONS):
        copies = {}
        for n, b in c.brokers.items():
            d = b.data_dir / f"{topic}-{p}"
            copies[n] = {f.name: f.read_bytes() for f in sorted(d.glob("*.log"))}
        ref_node, ref = next(iter(copies.items()))
        for n, segs in copies.items():
            if segs != ref:
                sizes = {k: len(v) for k, v in segs.items()}
                ref_sizes = {k: len(v) for k, v in ref.items()}
                r.log_differences.append(f"{topic}-{p}: broker {n} {sizes} != broker {ref_node} {ref_sizes}")
    r.logs_identical = not r.log_differences
    return r.logs_identical


def _heal(c: Cluster, topic: str) -> None:
    c.heal(WAIT)
    for p in range(PARTITIONS):
        c.wait_for_isr(topic, p, lambda isr: sorted(isr) == sorted(c.brokers), timeout=WAIT)


def run_chaos(c: Cluster, seconds: float = 120.0, seed: int = 1, gap: tuple[float, float] = (2.0, 5.0)) -> ChaosResult:
    """The run on a started cluster of three brokers (the module doc); the cluster is healed after."""
    r = ChaosResult(seed, seconds)
    rng = random.Random(seed)
    topic = f"chaos-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[topic].result(60)
    for p in range(PARTITIONS):
        c.wait_for_isr(topic, p, lambda isr: len(isr) == 3, timeout=WAIT)
    lock = threading.Lock()
    producers = [_Producing(i, c.bootstrap, topic, r, lock) for i in range(PRODUCERS)]
    for pr in producers:
        pr.start()
    try:
        _chaos(c, topic, seconds, rng, r, gap)
    finally:
        for pr in producers:
            pr.stop_flag.set()
        _heal(c, topic)
    for pr in producers:
        pr.finish(WAIT)
    _heal(c, topic)  # anything the flush's last retries moved
    read = _read_all(c.bootstrap, topic)
    _check(r, producers, read)
    # HW = LEO on the followers only after their next fetch: compare until equal or out of time
    try:
        poll(lambda: _compare_logs(c, topic, r), "identical logs", 60)
    except TimeoutError:
        pass
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gap", type=float, nargs=2, default=(2.0, 5.0), metavar=("MIN", "MAX"),
                    help="seconds between two steps (a pause lasts 5-8 s whatever this says)")
    ap.add_argument("--data-dir", help="keep the cluster's files here (default: a temporary directory)")
    ap.add_argument("--timeline", action="store_true", help="print what was done to which broker, when")
    a = ap.parse_args(argv)
    with Cluster(3, data_dir=a.data_dir) as c:
        r = run_chaos(c, a.seconds, a.seed, tuple(a.gap))
    print(r.summary())
    if a.timeline or not r.ok:
        print("\n".join(r.timeline))
    return 0 if r.ok else 1


if __name__ == "__main__":
    sys.exit(main())
