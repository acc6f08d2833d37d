"""Nothing lost but what Kafka's rules allow (issue 29): a bounded chaos run with
`unclean.leader.election.enable=true`.

The topic is bench/chaos.py's (RF 3, min.insync.replicas 2, three partitions, two idempotent
acks=all producers), with unclean leader election on. Each round drives partition 0's replicas
into an unclean election, with random picks: a follower F1 paused (SIGSTOP) until it leaves the
ISR, the other follower F2 killed (kill -9), the leader L killed, then F1 resumed: F1 is the only
live replica and out of sync (and out of the ELR, KIP-966), so the controller elects it
uncleanly (LeaderRecoveryState RECOVERING, KIP-704). The other partitions, led elsewhere, see the
same three brokers go and come back. Then L and F2 are started again, truncate to F1's log and
catch up.

What may be lost. An acks=all write is acknowledged once every member of the leader's ISR has it
(Partition.checkEnoughReplicasReachOffset; a shrink counts only once the controller committed it,
KIP-497), and a replica that joins the ISR has everything below the high watermark. So a replica
U holds every record acknowledged before the controller last removed U from the ISR, and keeps
it: truncation never goes below a high watermark it had. An unclean election of U can only lose
records acknowledged after that removal. The check, per partition, from the controller's metadata
log (its batches carry the controller's append time, the same clock as the producers'): every
acknowledged record missing afterwards was acknowledged (delivery report time) after the removal
from the ISR of some replica the controller later elected uncleanly. The delivery report comes
after the broker's acknowledgement, so a record reported before the removal was acknowledged
before it: a record breaking the rule is lost wrongly, whatever the reporting delay. Besides:
every replica's `.log` segments byte-identical after healing, and every surviving acknowledged
record at the offset its acknowledgement named.

    python bench/chaos_unclean.py --seconds 40 --seed 1
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

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic

if __package__ in (None, ""):  # run as a script: the checkout's root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.chaos import (  # noqa: E402
    PARTITIONS,
    PRODUCER_CONFIG,
    PRODUCERS,
    WAIT,
    ChaosResult,
    _check,
    _compare_logs,
    _heal,
    _Producing,
    _read_all,
    _value,
)
from minibroker.cluster_testing import Cluster, poll  # noqa: E402
from minibroker_protocol import metadata_records as mr  # noqa: E402
from minibroker_protocol.metadata_serde import read_metadata_batches  # noqa: E402

NO_LEADER_CHANGE = -2  # PartitionChangeRecord's leader default (Kafka: LeaderConstants.NO_LEADER_CHANGE)
RECOVERING = 1  # LeaderRecoveryState.RECOVERING (KIP-704)
FLUSH_S = 60.0  # the producers' last flush
VERBOSE = False  # the timeline as it happens, on stderr (--verbose)


@dataclass(frozen=True)
class UncleanElection:
    partition: int
    leader: int
    at_ms: int  # the controller's append time of the PartitionChangeRecord
    left_isr_ms: int  # when the controller last removed `leader` from the ISR before that
    recovering: bool  # the record set LeaderRecoveryState RECOVERING


@dataclass
class UncleanResult:
    chaos: ChaosResult
    rounds: int = 0
    elections: list[UncleanElection] = field(default_factory=list)
    lost_explained: int = 0
    lost_unexplained: list[str] = field(default_factory=list)
    renewed: int = 0  # producers librdkafka stopped (fatal) and replaced

    def summary(self) -> str:
        return "\n".join([self.chaos.summary(), f"rounds                  {self.rounds}",
                          f"unclean elections       {len(self.elections)}",
                          f"lost, allowed           {self.lost_explained}",
                          f"lost, not allowed       {len(self.lost_unexplained)}",
                          f"producers renewed       {self.renewed}",
                          *(f"  {u}" for u in self.lost_unexplained[:20])])


class _TimedProducing(_Producing):
    """bench/chaos.py's producer, also noting when each acknowledgement was reported (wall ms), and
    going on with a new producer when librdkafka stops the idempotent one for good: it does so
    (OUT_OF_ORDER_SEQUENCE_NUMBER, "sequence desynchronization") when a broker lost records it had
    acknowledged, which an unclean election may do; an application then makes a new producer."""

    def __init__(self, index: int, bootstrap: str, topic: str, result: ChaosResult, lock: threading.Lock):
        super().__init__(index, bootstrap, topic, result, lock)
        self.bootstrap = bootstrap
        self.acked_ms: dict[bytes, int] = {}
        self.renewed = 0

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        super()._delivered(err, msg)
        value = msg.value()
        if err is None and value is not None:
            self.acked_ms[value] = int(time.time() * 1000)

    def _renew(self, e: KafkaException) -> None:
        err = e.args[0]
        # produce() answers a producer already stopped with a plain _FATAL error (fatal() False)
        if not (err.fatal() or err.code() == KafkaError._FATAL):
            raise e
        old, self.producer = self.producer, Producer({"bootstrap.servers": self.bootstrap, **PRODUCER_CONFIG})
        self.renewed += 1
        old.purge()  # its queued records reported failed (_PURGE_QUEUE), by polls (see _Producing.finish)
        deadline = time.monotonic() + 30
        while len(old) and time.monotonic() < deadline:
            try:
                old.poll(0.1)
            except KafkaException:
                pass  # its fatal error again: the records are reported all the same

    def _poll(self, timeout: float) -> None:
        try:
            self.producer.poll(timeout)
        except KafkaException as e:
            self._renew(e)

    def run(self) -> None:  # bench/chaos.py's loop, with _renew
        seq = 0
        while not self.stop_flag.is_set():
            try:
                self.producer.produce(self.topic, value=_value(self.index, seq), partition=seq % PARTITIONS,
                                      on_delivery=self._delivered)
                seq += 1
            except BufferError:
                self._poll(0.1)
                continue
            except KafkaException as e:
                self._renew(e)
                continue
            self._poll(0)
            if seq % 50 == 0:
                time.sleep(0.01)


def unclean_elections(c: Cluster, topic: str) -> list[UncleanElection]:
    """The topic's unclean elections, read from the controller's metadata log: a new leader outside
    the ISR and the ELR it replaces, with when that replica last left the ISR."""
    assert c.controller is not None
    seg_dir = c.controller.data_dir / "__cluster_metadata-0"
    topic_id = None
    isr: dict[int, list[int]] = {}
    elr: dict[int, list[int]] = {}
    left: dict[tuple[int, int], int] = {}  # (partition, replica) -> when it last left the ISR
    out: list[UncleanElection] = []
    for seg in sorted(seg_dir.glob("*.log")):
        for batch in read_metadata_batches(seg.read_bytes()):
            if batch.is_control:
                continue
            for r in batch.records:
                m = r.message  # type: ignore[union-attr]
                if isinstance(m, mr.TopicRecord) and m.name == topic:
                    topic_id = m.topic_id
                elif isinstance(m, mr.PartitionRecord) and m.topic_id == topic_id:
                    isr[m.partition_id], elr[m.partition_id] = list(m.isr), list(m.eligible_leader_replicas or [])
                elif isinstance(m, mr.PartitionChangeRecord) and m.topic_id == topic_id:
                    p = m.partition_id
                    before = isr[p]
                    if m.leader != NO_LEADER_CHANGE and m.leader >= 0 and m.leader not in before \
                            and m.leader not in elr[p]:
                        out.append(UncleanElection(p, m.leader, batch.append_timestamp, left[(p, m.leader)],
                                                   m.leader_recovery_state == RECOVERING))
                    if m.isr is not None:
                        for gone in set(before) - set(m.isr):
                            left[(p, gone)] = batch.append_timestamp
                        isr[p] = list(m.isr)
                    if m.eligible_leader_replicas is not None:
                        elr[p] = list(m.eligible_leader_replicas)
    return out


def _round(c: Cluster, topic: str, rng: random.Random, note: list[str], started: float) -> None:
    """Partition 0's followers out one by one, its leader killed, the paused follower back alone."""
    def say(what: str) -> None:
        note.append(f"{time.monotonic() - started:7.1f}s {what}")
        if VERBOSE:
            print(note[-1], file=sys.stderr, flush=True)

    leader = c.wait_for_leader(topic, 0, timeout=WAIT)
    f1, f2 = rng.sample([n for n in sorted(c.brokers) if n != leader], 2)
    c.pause(f1)
    say(f"SIGSTOP broker {f1}")
    c.wait_for_isr(topic, 0, lambda isr: f1 not in isr, timeout=WAIT)
    c.stop_broker(f2, kill=True)
    say(f"kill -9 broker {f2}")
    c.wait_for_isr(topic, 0, [leader], timeout=WAIT)
    time.sleep(rng.uniform(1.0, 2.0))  # acks=all refused now (ISR 1 < min ISR 2); retried later
    c.stop_broker(leader, kill=True)
    say(f"kill -9 broker {leader} (the leader)")
    c.resume(f1)
    say(f"SIGCONT broker {f1}")
    c.wait_for_leader(topic, 0, f1, timeout=WAIT)
    say(f"broker {f1} leads {topic}-0")
    for n in (f2, leader):
        c.start_broker(n, WAIT)
        say(f"broker {n} started and serving")
    for p in range(PARTITIONS):
        c.wait_for_isr(topic, p, lambda isr: sorted(isr) == sorted(c.brokers), timeout=WAIT)
    say("every ISR whole")


def _check_loss(r: UncleanResult, producers: list[_TimedProducing], read: dict[int, list[tuple[int, bytes]]]) -> None:
    present = {value for records in read.values() for _, value in records}
    for pr in producers:
        for value, ack in pr.acked.items():
            if value in present:
                continue
            at = pr.acked_ms[value]
            if any(e.partition == ack.partition and at > e.left_isr_ms for e in r.elections):
                r.lost_explained += 1
            else:
                r.lost_unexplained.append(f"{value.decode()} acked at {ack.partition}/{ack.offset}, {at} ms; "
                                          f"unclean elections {[e for e in r.elections if e.partition == ack.partition]}")


def run_unclean_chaos(c: Cluster, seconds: float = 40.0, seed: int = 1) -> UncleanResult:
    """Rounds (the module doc) until `seconds` have passed (one at least), healing, the checks."""
    r = UncleanResult(ChaosResult(seed, seconds))
    rng = random.Random(seed)
    topic = f"unclean-chaos-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 3, config={
        "min.insync.replicas": "2", "unclean.leader.election.enable": "true"})])[topic].result(60)
    for p in range(PARTITIONS):
        c.wait_for_isr(topic, p, lambda isr: len(isr) == 3, timeout=WAIT)
    lock = threading.Lock()
    producers = [_TimedProducing(i, c.bootstrap, topic, r.chaos, lock) for i in range(PRODUCERS)]
    for pr in producers:
        pr.start()
    started = time.monotonic()
    try:
        time.sleep(2)  # records acknowledged by the whole ISR first
        while r.rounds == 0 or time.monotonic() - started < seconds:
            _round(c, topic, rng, r.chaos.timeline, started)
            r.rounds += 1
            time.sleep(rng.uniform(1.0, 3.0))
    finally:
        for pr in producers:
            pr.stop_flag.set()
        _heal(c, topic)
    for pr in producers:
        # a producer librdkafka holds in an epoch-bump drain after records were lost may never send
        # its last records: bounded, what it did not deliver is simply not acknowledged
        pr.finish(FLUSH_S)
        r.renewed += pr.renewed
    _heal(c, topic)
    read = _read_all(c.bootstrap, topic)
    _check(r.chaos, producers, read)  # type: ignore[arg-type]  # only .acked is read
    r.elections = unclean_elections(c, topic)
    _check_loss(r, producers, read)
    try:
        poll(lambda: _compare_logs(c, topic, r.chaos), "identical logs", 60)
    except TimeoutError:
        pass
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=40.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--verbose", action="store_true", help="print the timeline as it happens")
    a = ap.parse_args(argv)
    global VERBOSE
    VERBOSE = a.verbose
    with Cluster(3) as c:
        r = run_unclean_chaos(c, a.seconds, a.seed)
    print(r.summary())
    print("\n".join(r.chaos.timeline))
    ok = not r.lost_unexplained and r.chaos.logs_identical and r.elections
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
