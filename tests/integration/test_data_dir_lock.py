"""One broker per data directory (issue 31): Kafka's `.lock`, with brokers in real processes.

A second `python -m minibroker` on a directory in use is refused with Kafka's one line and exit
status 2, and touches nothing; the lock goes with the process that held it, after SIGTERM and
after kill -9 (the kernel releases it), so the next broker starts. Kafka's own FileLock
(tools/java/LockCheck.java, from the reference jars) and minibroker refuse each other both ways:
the same POSIX record lock.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from tests.helpers import ROOT, free_port


def second_broker(data_dir, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minibroker", "--host", "127.0.0.1", "--port", str(free_port()),
                           "--data-dir", str(data_dir)], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def produce(bootstrap: str, value: bytes) -> None:
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    p.send("locked", value).get(timeout=20)
    p.close()


def values(bootstrap: str) -> list[bytes]:
    c = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=3000)
    tp = TopicPartition("locked", 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    got = [m.value for m in c]
    c.close()
    return got


def test_a_second_broker_on_a_data_dir_in_use_is_refused_until_the_first_exits_or_is_killed(kafka_broker_process):
    first = kafka_broker_process()
    first.start()
    produce(first.bootstrap, b"acknowledged")
    files_before = sorted(p.name for p in first.data_dir.iterdir())

    refused = second_broker(first.data_dir)
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        f"minibroker: Failed to acquire lock on file .lock in {first.data_dir}. A Kafka instance in another "
        "process or thread is using this directory."]
    assert sorted(p.name for p in first.data_dir.iterdir()) == files_before  # it wrote nothing there
    assert first.proc is not None and first.proc.poll() is None  # the first one serves on
    assert values(first.bootstrap) == [b"acknowledged"]

    first.kill()  # kill -9: the kernel drops the flock with the process
    after_kill = kafka_broker_process()
    after_kill.start()
    assert values(after_kill.bootstrap) == [b"acknowledged"]
    refused = second_broker(after_kill.data_dir)
    assert refused.returncode == 2 and "Failed to acquire lock on file .lock" in refused.stderr
    assert after_kill.stop() == 0  # SIGTERM: released on a clean exit too

    last = kafka_broker_process()
    last.start()
    assert values(last.bootstrap) == [b"acknowledged"]
    assert last.stop() == 0


def kafka_file_lock(data_dir: Path, hold_ms: int | None = None) -> list[str]:
    """The java command that takes Kafka's FileLock on data_dir/.lock (skips without a JDK or the jars)."""
    from reference import kafka_reference as kr  # lazy: only this test needs the reference jars

    java = shutil.which("java")
    if java is None:
        pytest.skip("no JDK on PATH (.ci/run installs one)")
    if not kr.jars_ready():
        pytest.skip(f"REFERENCE JARS UNAVAILABLE: {kr.missing_prerequisites()}")
    libs = kr.libs_dir()
    cp = [next(libs.glob(f"{prefix}*.jar")) for prefix in ("kafka-server-common-", "slf4j-api-")]
    return [java, "-cp", ":".join(map(str, cp)), str(ROOT / "tools/java/LockCheck.java"), str(data_dir),
            *([str(hold_ms)] if hold_ms is not None else [])]


def test_kafka_and_minibroker_refuse_each_other_a_data_dir(kafka_broker_process, tmp_path):
    broker = kafka_broker_process()
    broker.start()
    java = subprocess.run(kafka_file_lock(broker.data_dir), capture_output=True, text=True, timeout=120)
    assert java.stdout.split() == ["refused"], java.stdout + java.stderr
    assert broker.stop() == 0

    # Kafka's FileLock held by a JVM: minibroker is refused, then starts once the JVM lets go
    holder = subprocess.Popen(kafka_file_lock(broker.data_dir, hold_ms=60_000), stdout=subprocess.PIPE, text=True,
                              stderr=subprocess.DEVNULL)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        refused = second_broker(broker.data_dir)
        assert refused.returncode == 2
        assert "Failed to acquire lock on file .lock in" in refused.stderr, refused.stderr
    finally:
        holder.kill()
        holder.wait(30)
    broker.start()
    assert broker.stop() == 0
