"""Kafka's kafka-dump-log (DumpLogSegments) on minibroker's files, and minibroker on Kafka's.

minibroker -> Kafka: a minibroker of its own writes a partition that rolls segments (so there are
trimmed indexes and producer snapshots), a committed and an aborted transaction (.txnindex,
__transaction_state) and a group's offsets (__consumer_offsets), and is stopped cleanly. Kafka's
tool reads every file with no error and no mismatch, and `python -m minibroker dump-log` prints
the very same stdout for the same files.

Kafka -> minibroker: the reference broker writes a partition that rolls; minibroker's dump-log
prints what Kafka's tool prints for its rolled segments, and a fresh minibroker that finds the
copied partition directory in its data dir serves every record intact.

One JVM per option set (DumpLogSegments takes a comma-separated --files list).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from reference import kafka_reference as kr
from tests.reference.helpers import Pair

N = 12_000  # ~2.3 MB of records: two rolls at segment.bytes=1 MiB (Kafka 4's minimum)
SEGMENT = "1048576"


def produce(bootstrap: str, topic: str, *, transactions: bool = False) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    # retention.ms=-1: the records are stamped in 2023, and both brokers' retention check would
    # delete them mid-test, the active segment too (docs/differences.md#retention-active-segment)
    admin.create_topics([NewTopic(topic, 1, 1, config={"segment.bytes": SEGMENT, "retention.ms": "-1"})])[
        topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20, "batch.size": 16384,
                  "compression.type": "none"})
    for i in range(N):
        p.produce(topic, key=f"key-{i}".encode(), value=(f"value-{i}-" + "x" * 150).encode(),
                  headers=[("h", str(i % 7).encode())], timestamp=1_700_000_000_000 + i)
        if i % 2000 == 0:
            p.poll(0)
    assert p.flush(60) == 0
    if transactions:
        for tid, commit in (("dl-tx-commit", True), ("dl-tx-abort", False)):
            t = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid})
            t.init_transactions(30)
            t.begin_transaction()
            t.produce(topic, key=b"tx", value=tid.encode())
            t.flush(30)
            (t.commit_transaction if commit else t.abort_transaction)(30)
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "dl-group", "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition(topic, 0, 42)], asynchronous=False)
        c.close()


def kafka_dump(files: list[Path], *opts: str) -> subprocess.CompletedProcess[str]:
    return kr.run_tool("kafka-dump-log", ["--files", ",".join(map(str, files)), *opts], timeout=120)


def our_dump(files: list[Path], *opts: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "minibroker", "dump-log", "--files",
                           ",".join(map(str, files)), *opts], capture_output=True, text=True, timeout=120)


def assert_same_dump(files: list[Path], *opts: str, clean: bool = True) -> str:
    assert files, opts
    k, m = kafka_dump(files, *opts), our_dump(files, *opts)
    assert k.returncode == 0, k.stderr
    assert stderr_blocks(m.stderr) == stderr_blocks(k.stderr)
    if clean:
        # no error, no index mismatch, no offsets out of sequence inside a file (Kafka's tool counts
        # from -1 in every file, so a segment based above 0 is always listed as "-1 is followed by
        # <its base offset>": that note alone is expected)
        for block in stderr_blocks(k.stderr):
            head, *rest = block.splitlines()
            assert head.startswith("Non-consecutive offsets in ") and \
                rest == [f"  -1 is followed by {int(Path(head.split()[-1]).stem)}"], k.stderr
    assert m.stdout == k.stdout, f"{opts}: first difference at line " + str(next(
        (i for i, (a, b) in enumerate(zip(k.stdout.splitlines(), m.stdout.splitlines(), strict=False)) if a != b),
        min(len(k.stdout.splitlines()), len(m.stdout.splitlines()))))
    return k.stdout


def stderr_blocks(text: str) -> set[str]:
    """Kafka prints its problem lists per file from a hash map: compare them as a set of blocks."""
    blocks: list[str] = []
    for line in text.splitlines():
        if line.startswith(" ") and blocks:
            blocks[-1] += "\n" + line
        else:
            blocks.append(line)
    return set(blocks)


def nonempty_logs(data: Path, prefix: str) -> list[Path]:
    return sorted(p for p in data.glob(f"{prefix}-*/*.log") if p.stat().st_size > 0)


def test_kafka_dump_log_reads_minibroker_files(tmp_path: Path, kafka_reference: kr.KafkaReference) -> None:
    from minibroker.testing import BrokerThread

    data = tmp_path / "data"
    with BrokerThread(data, overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        produce(b.bootstrap, "dl-mini", transactions=True)
    part = data / "dl-mini-0"
    logs = sorted(part.glob("*.log"))
    assert len(logs) >= 3, sorted(p.name for p in part.iterdir())
    indexes = sorted(part.glob("*.index")) + sorted(part.glob("*.timeindex"))
    out = assert_same_dump(logs, "--deep-iteration", "--print-data-log")
    assert f"payload: value-{N - 1}-" in out and "endTxnMarker: ABORT" in out and "endTxnMarker: COMMIT" in out
    out = assert_same_dump(indexes, "--index-sanity-check")
    # every file passes; an index with no entry at all (the small last segment) is "empty"
    assert out.count("passed sanity check.") + out.count(" is empty.") == len(indexes)
    assert out.count("passed sanity check.") >= len(indexes) - 1
    assert_same_dump(indexes, "--verify-index-only")
    assert_same_dump(indexes)
    snapshots, txn = sorted(part.glob("*.snapshot")), sorted(part.glob("*.txnindex"))
    assert snapshots and txn
    out = assert_same_dump(snapshots + txn)
    assert "producerId:" in out and "lastStableOffset:" in out
    out = assert_same_dump(nonempty_logs(data, "__consumer_offsets"), "--offsets-decoder")
    assert '"group":"dl-group"' in out
    out = assert_same_dump(nonempty_logs(data, "__transaction_state"), "--transaction-log-decoder")
    assert '"transactionStatus":"CompleteAbort"' in out and '"transactionStatus":"CompleteCommit"' in out


def test_minibroker_reads_kafka_files(tmp_path: Path, kafka_reference: kr.KafkaReference, pair: Pair) -> None:
    from minibroker.testing import BrokerThread

    topic = "dl-kafka"
    produce(kafka_reference.bootstrap, topic)
    part = kafka_reference.data_dir / f"{topic}-0"
    logs = sorted(part.glob("*.log"))
    assert len(logs) >= 3
    rolled = [p.with_suffix("") for p in logs[:-1]]  # closed segments: indexes trimmed by Kafka
    assert_same_dump(logs, "--deep-iteration", "--print-data-log")
    idx = [Path(f"{s}.index") for s in rolled] + [Path(f"{s}.timeindex") for s in rolled]
    assert_same_dump(idx, "--index-sanity-check")
    assert_same_dump(idx, "--verify-index-only")
    assert_same_dump(idx)
    snapshots = sorted(part.glob("*.snapshot"))
    if snapshots:
        assert_same_dump(snapshots)

    # recovery: the partition directory, copied as it is on Kafka's disk (the active segment's
    # indexes preallocated, no clean-shutdown marker), into a fresh minibroker's data dir
    data = tmp_path / "data"
    data.mkdir()
    shutil.copytree(part, data / part.name)
    with BrokerThread(data, overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        records = b.records(topic)
    assert len(records) == N
    for i, r in enumerate(records):
        assert (r.offset, r.key, r.timestamp) == (i, f"key-{i}".encode(), 1_700_000_000_000 + i)
        assert r.value == (f"value-{i}-" + "x" * 150).encode()
        assert [(k, bytes(v)) for k, v in r.headers] == [("h", str(i % 7).encode())]
