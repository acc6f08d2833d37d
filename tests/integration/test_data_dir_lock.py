"""One broker per data directory (issue 31): Kafka's `.lock`, with brokers in real processes.

A second `python -m minibroker` on a directory in use is refused with Kafka's one line and exit
status 2, and touches nothing; the lock goes with the process that held it, after SIGTERM and
after kill -9 (flock is released by the kernel), so the next broker starts.
"""

from __future__ import annotations

import subprocess
import sys

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
