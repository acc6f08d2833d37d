"""Data survives a restart of the broker process: a clean stop (SIGTERM) and a crash (SIGKILL).

Each test produces with acks=all through confluent-kafka to topics with several partitions and
codecs and small segments (so recovery sees several segments and their indexes), restarts the
subprocess broker, and consumes everything back: keys, values, headers and timestamps equal to
what was sent, the segment files byte-identical, and new records continuing at the log end.
After a clean stop the recovery-point checkpoint equals each log end offset and the next start
recovers nothing; after a kill the start recovers the unflushed segments and loses no acked
record (the kill stops the process, not the machine, so the page cache keeps what was written).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.helpers import TIMEOUT, Rec, confluent_consume

TOPICS = {"plain": ("none", 3), "gz": ("gzip", 2), "zs": ("zstd", 1)}  # name -> (codec, partitions)
PER_PARTITION = 300
SEGMENT_BYTES = "16384"  # a few segments per partition


def expected(topic: str, partition: int, start: int = 0, n: int = PER_PARTITION) -> list[Rec]:
    out = []
    for i in range(start, start + n):
        key = None if i % 7 == 0 else b"%s-%d-%d" % (topic.encode(), partition, i)
        # Incompressible values, so the compressed topics also fill several segments.
        value = None if i % 11 == 0 else b"".join(hashlib.sha256(b"%d-%d" % (i, j)).digest()
                                                  for j in range(1 + i % 8))
        headers = (("i", b"%d" % i),) if i % 3 else (("i", b"%d" % i), ("null", None))
        out.append(Rec(key, value, headers, 1_700_000_000_000 + partition * 1_000_000 + i))
    return out


def create_topics(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, parts, 1, config={"segment.bytes": SEGMENT_BYTES})
                                   for name, (_, parts) in TOPICS.items()], request_timeout=TIMEOUT)
    for f in futures.values():
        f.result(TIMEOUT)


def produce(bootstrap: str, start: int = 0, n: int = PER_PARTITION) -> dict[tuple[str, int], list[int]]:
    """Produce `n` records per partition with acks=all; returns the acked offsets per partition."""
    acked: dict[tuple[str, int], list[int]] = {}
    errors: list = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            acked.setdefault((msg.topic(), msg.partition()), []).append(msg.offset())

    for name, (codec, parts) in TOPICS.items():
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "compression.type": codec,
                      "linger.ms": 5, "batch.num.messages": 50})
        for partition in range(parts):
            for r in expected(name, partition, start, n):
                p.produce(name, key=r.key, value=r.value, headers=list(r.headers), timestamp=r.timestamp,
                          partition=partition, on_delivery=on_delivery)
        assert p.flush(TIMEOUT) == 0
    assert not errors, errors
    return acked


def consume_all(bootstrap: str, total_per_partition: int) -> dict[tuple[str, int], list[tuple[int, Rec]]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "restart-check", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100})
    try:
        c.assign([TopicPartition(name, p, 0) for name, (_, parts) in TOPICS.items() for p in range(parts)])
        n = sum(parts for _, parts in TOPICS.values()) * total_per_partition
        msgs = confluent_consume(c, n, timeout=60)
    finally:
        c.close()
    out: dict[tuple[str, int], list[tuple[int, Rec]]] = {}
    for m in msgs:
        rec = Rec(m.key(), m.value(), tuple(m.headers() or ()), m.timestamp()[1])
        out.setdefault((m.topic(), m.partition()), []).append((m.offset(), rec))
    return out


def check_everything(bootstrap: str, total_per_partition: int) -> None:
    got = consume_all(bootstrap, total_per_partition)
    for name, (_, parts) in TOPICS.items():
        for p in range(parts):
            want = list(enumerate(expected(name, p, 0, total_per_partition)))
            assert got[(name, p)] == want, f"{name}-{p} differs"


def segment_digests(data_dir: Path) -> dict[str, str]:
    return {str(f.relative_to(data_dir)): hashlib.sha256(f.read_bytes()).hexdigest()
            for name, p in all_partitions() for f in sorted((data_dir / f"{name}-{p}").glob("*.log"))}


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """Kafka's offset checkpoint: version line 0, count line, then `topic partition offset`."""
    lines = path.read_text().splitlines()
    assert lines[0] == "0"
    assert int(lines[1]) == len(lines) - 2
    out = {}
    for line in lines[2:]:
        topic, partition, offset = line.split(" ")
        out[(topic, int(partition))] = int(offset)
    # Only this test's topics (the consumer's group.id also brings __consumer_offsets).
    return {tp: o for tp, o in out.items() if tp[0] in TOPICS}


def all_partitions() -> list[tuple[str, int]]:
    return [(name, p) for name, (_, parts) in TOPICS.items() for p in range(parts)]


def test_clean_stop_and_restart(kafka_broker_process):
    b = kafka_broker_process()
    b.start()
    create_topics(b.bootstrap)
    acked = produce(b.bootstrap)
    assert {tp: sorted(o) for tp, o in acked.items()} == {tp: list(range(PER_PARTITION)) for tp in all_partitions()}
    assert b.stop() == 0

    data = b.data_dir
    assert (data / ".kafka_cleanshutdown").exists()
    # Everything was flushed: each recovery point is the log end offset.
    assert read_checkpoint(data / "recovery-point-offset-checkpoint") == {tp: PER_PARTITION for tp in all_partitions()}
    assert read_checkpoint(data / "replication-offset-checkpoint") == {tp: PER_PARTITION for tp in all_partitions()}
    for name, p in all_partitions():
        assert len(list((data / f"{name}-{p}").glob("*.log"))) > 1, "expected several segments"
    before = segment_digests(data)

    log_start = len(b.log_text())
    b.start()
    check_everything(b.bootstrap, PER_PARTITION)
    log = b.log_text()[log_start:]
    assert f"Loading {len(all_partitions())} logs" in log, log
    assert "Recovering" not in log, log
    assert segment_digests(data) == before

    acked = produce(b.bootstrap, PER_PARTITION, 10)
    assert {tp: sorted(o) for tp, o in acked.items()} == {
        tp: list(range(PER_PARTITION, PER_PARTITION + 10)) for tp in all_partitions()}
    check_everything(b.bootstrap, PER_PARTITION + 10)
    assert b.stop() == 0


def test_kill_9_and_restart(kafka_broker_process):
    b = kafka_broker_process()
    b.start()
    create_topics(b.bootstrap)
    produce(b.bootstrap)
    b.kill()

    data = b.data_dir
    assert not (data / ".kafka_cleanshutdown").exists()
    before = segment_digests(data)

    log_start = len(b.log_text())
    b.start()
    check_everything(b.bootstrap, PER_PARTITION)
    # (Read after a request was answered: the port is bound before the logs are loaded.)
    log = b.log_text()[log_start:]
    assert f"Recovering {len(all_partitions())} logs" in log, log
    assert "Recovering unflushed segment" in log, log
    # Recovery found nothing to truncate: the files are what the killed broker wrote.
    assert segment_digests(data) == before

    produce(b.bootstrap, PER_PARTITION, 10)
    check_everything(b.bootstrap, PER_PARTITION + 10)
    assert b.stop() == 0
    assert read_checkpoint(data / "recovery-point-offset-checkpoint") == {
        tp: PER_PARTITION + 10 for tp in all_partitions()}


@pytest.mark.parametrize("tail", [b"\x00" * 37, b"\xde\xad\xbe\xef" * 100], ids=["zeros", "garbage"])
def test_kill_9_with_a_torn_write_at_the_end(kafka_broker_process, tail):
    """A crash mid-append leaves a partial batch at the end of the active segment; recovery
    truncates it and keeps every acked record."""
    b = kafka_broker_process()
    b.start()
    create_topics(b.bootstrap)
    produce(b.bootstrap)
    b.kill()

    data = b.data_dir
    active = max((data / "gz-1").glob("*.log"))
    clean_size = active.stat().st_size
    with open(active, "ab") as f:
        f.write(tail)

    log_start = len(b.log_text())
    b.start()
    check_everything(b.bootstrap, PER_PARTITION)
    assert active.stat().st_size == clean_size
    log = b.log_text()[log_start:]
    assert "gz-1" in log and "truncated" in log.lower(), log
    produce(b.bootstrap, PER_PARTITION, 10)
    check_everything(b.bootstrap, PER_PARTITION + 10)
    assert b.stop() == 0
