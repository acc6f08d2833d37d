"""Disk full and read-only data directory (issue 10): Produce gets KAFKA_STORAGE_ERROR, nothing
already stored is damaged, and the broker keeps serving reads.

The data directory is a small tmpfs mounted for the test (root only; skipped otherwise), so the
disk really fills: no mocks of the file layer. The broker runs as a subprocess, so that if a write
to a memory-mapped index page on the full disk raised SIGBUS it would show as a dead broker
rather than a dead test run. Kafka, on the same error, marks the whole log directory offline
(LogDirFailureChannel) and the partitions stay offline until a restart; this broker answers
KAFKA_STORAGE_ERROR for the failed append, cuts the segment back to its last whole batch
(minibroker_storage.file_records.FileRecords.append), and appends again once space is back.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bench.crash_loop import Wire, create_topic, fetch_all, scan_partition_dir
from minibroker_protocol.apis import api_versions, produce
from minibroker_protocol.errors import ErrorCode as E
from minibroker_protocol.records.v2 import Record, build_batch

PRODUCE_V = 9
VALUE = 60 * 1024  # bytes of each record value: a few dozen appends fill the disk


def _mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir(parents=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    _mount_tmpfs(disk, "4m")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def value_of(i: int) -> bytes:
    return (b"%08d" % i) * (VALUE // 8)


def produce_one(wire: Wire, topic: str, i: int) -> object:
    batch = build_batch([Record(key=b"%d" % i, value=value_of(i))], base_timestamp=0)
    R = produce.REQUEST
    resp = wire.call(produce.API, PRODUCE_V, R(transactional_id=None, acks=-1, timeout_ms=5_000, topic_data=[
        R.TopicProduceData(name=topic, partition_data=[R.PartitionProduceData(index=0, records=batch)])]))
    return resp.responses[0].partition_responses[0]


def check_log(port: int, topic: str, acked: dict[int, int]) -> None:
    """Every acknowledged record at its offset, byte-identical; nothing else in the log."""
    records = fetch_all(port, topic, 0)
    assert [off for off, _, _ in records] == list(range(len(records)))
    by_offset = {off: (k, v) for off, k, v in records}
    for i, off in acked.items():
        assert by_offset.get(off) == (b"%d" % i, value_of(i)), f"acked record {i} at offset {off}"
    assert len(records) == len(acked)


def api_versions_ok(port: int) -> bool:
    wire = Wire(port, timeout=10)
    try:
        return wire.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="t",
                                                                   client_software_version="1")).error_code == 0
    finally:
        wire.close()


def fill_until_error(wire: Wire, topic: str, acked: dict[int, int], start: int, limit: int = 400) -> tuple[int, object]:
    for i in range(start, start + limit):
        part = produce_one(wire, topic, i)
        if part.error_code:
            return i, part
        acked[i] = part.base_offset
    raise AssertionError(f"{limit} appends of {VALUE} bytes did not fill the disk")


def test_disk_full_gets_storage_error_and_damages_nothing(small_disk, kafka_broker_process):
    data = small_disk / "data"
    # Small preallocated indexes: their sparse pages are touched as entries are written.
    b = kafka_broker_process(overrides={"log.index.size.max.bytes": 64 * 1024})
    b.data_dir = data
    b.log_path = small_disk.parent / "broker.log"  # the broker's own log must not share the full disk
    b.start()
    topic = "full"
    create_topic(b.port, topic, 1)
    acked: dict[int, int] = {}
    wire = Wire(b.port, timeout=10)
    failed_at, part = fill_until_error(wire, topic, acked, 0)
    assert part.error_code == E.KAFKA_STORAGE_ERROR, E(part.error_code).name
    assert part.base_offset == -1
    assert len(acked) >= 10
    # Still full: the same answer again, on the same connection; the broker is alive and reads work.
    assert produce_one(wire, topic, failed_at).error_code == E.KAFKA_STORAGE_ERROR
    assert b.proc.poll() is None
    assert api_versions_ok(b.port)
    check_log(b.port, topic, acked)
    scan = scan_partition_dir(data / f"{topic}-0")
    assert scan.problems == [] and scan.torn_tail_bytes == 0, scan
    # Space comes back (the tmpfs grows, as an operator adds room): appends continue right after
    # the last acknowledged one.
    subprocess.run(["mount", "-o", "remount,size=16m", str(small_disk)], check=True)
    part = produce_one(wire, topic, failed_at)
    assert part.error_code == 0 and part.base_offset == len(acked)
    acked[failed_at] = part.base_offset
    wire.close()
    check_log(b.port, topic, acked)
    # A clean stop and a restart (recovery, indexes, checkpoints written on a disk that had been full).
    assert b.stop() == 0
    b.start()
    check_log(b.port, topic, acked)
    b.stop()


def test_broker_refuses_to_start_on_a_read_only_data_dir_and_keeps_the_data(small_disk, kafka_broker_process):
    """A live remount read-only is refused by the kernel while segments are open for writing
    ("mount point is busy"), so the read-only case is a data directory that became read-only while
    the broker was down. Kafka marks such a log dir offline and, all of them being offline, shuts
    the broker down ("all log dirs have failed"); this broker exits at startup with the OSError
    naming the read-only path. Once the directory is writable again every record is there."""
    data = small_disk / "data"
    b = kafka_broker_process()
    b.data_dir = data
    b.log_path = small_disk.parent / "broker.log"
    b.start()
    topic = "ro"
    create_topic(b.port, topic, 1)
    wire = Wire(b.port, timeout=10)
    acked = {}
    for i in range(5):
        part = produce_one(wire, topic, i)
        assert part.error_code == 0
        acked[i] = part.base_offset
    wire.close()
    assert b.stop() == 0
    before = sorted((p.name, p.read_bytes()) for p in (data / "ro-0").iterdir() if p.suffix == ".log")
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    try:
        try:
            b.start()
        except RuntimeError:
            pass  # exited before its port answered
        rc = b.proc.wait(20)
        assert rc != 0
        assert "Read-only file system" in b.log_text()
    finally:
        if b.proc.poll() is None:
            b.proc.kill()
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    assert sorted((p.name, p.read_bytes()) for p in (data / "ro-0").iterdir() if p.suffix == ".log") == before
    b.start()
    check_log(b.port, topic, acked)
    b.stop()
