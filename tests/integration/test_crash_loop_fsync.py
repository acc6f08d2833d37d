"""What a SIGKILL crash loop cannot show: that with the fsync setting the broker calls fsync on
the segment before it answers a Produce (issue 10).

A killed process loses nothing that reached the page cache, so the crash loop passes with Kafka's
default flush policy too (bench/crash_loop.py). A power loss does lose the page cache; only
`log.flush.interval.messages=1` (topic: flush.messages) covers it, by fsyncing before the ack.
This test watches the broker's system calls with strace: on the producer's connection, between
reading each Produce request and sending its response, fsync(<the segment's fd>) must have
returned. The same run with the default flush policy is the control: no fsync there, so the check
can fail.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.crash_loop import FSYNC_OVERRIDES, Wire, create_topic
from minibroker_protocol.apis import produce
from minibroker_protocol.records.v2 import Record, build_batch
from tests.helpers import ROOT, TEST_OVERRIDES, free_port

N = 12
FIRST_CID = 1000  # the producer's correlation ids: FIRST_CID .. FIRST_CID + N - 1

_LINE = re.compile(r"^(\d+)\s+(.*)$")  # strace pads the pid column to 5 characters
_CALL = re.compile(r"^(\w+)\((.*)\) += (-?\d+)")


def run_traced_broker(data_dir: Path, trace: Path, overrides: dict) -> None:
    """Start the broker under strace, produce N single-record batches one at a time (acks=-1), stop."""
    port = free_port()
    args = ["strace", "-f", "-qq", "-xx", "-s", "16", "-o", str(trace),
            "-e", "trace=openat,fsync,fdatasync,recvfrom,sendto",
            sys.executable, "-m", "minibroker", "--host", "127.0.0.1", "--port", str(port),
            "--data-dir", str(data_dir)]
    for k, v in {**TEST_OVERRIDES, **overrides}.items():
        args += ["--override", f"{k}={v}"]
    log = open(data_dir.parent / "broker.log", "ab")
    proc = subprocess.Popen(args, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                create_topic(port, "fsync", 1)
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.1)
        w = Wire(port, timeout=20)
        w.cid = FIRST_CID - 1
        R = produce.REQUEST
        for i in range(N):
            batch = build_batch([Record(value=b"record %d" % i)], base_timestamp=int(time.time() * 1000))
            resp = w.call(produce.API, 9, R(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
                R.TopicProduceData(name="fsync", partition_data=[R.PartitionProduceData(index=0, records=batch)])]))
            assert resp.responses[0].partition_responses[0].error_code == 0
        w.close()
    finally:
        # strace forwards nothing to its child; signal the broker itself.
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
        pids = children.read_text().split() if children.exists() else []
        for pid in pids:
            os.kill(int(pid), signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


def _hex(arg: str) -> bytes:
    # A call strace split into "<unfinished ...>" and "resumed>" lines is rebuilt without the
    # space after its comma, so the argument may start with or lack whitespace.
    m = re.match(r'\s*"((?:\\x[0-9a-f]{2})*)"', arg)
    return bytes.fromhex(m.group(1).replace("\\x", "")) if m else b""


def fsync_before_each_ack(trace: Path) -> dict[int, bool]:
    """For each producer correlation id: did fsync(segment fd) return between the broker reading
    the request and sending the response? (strace -f lines, in completion order.)"""
    log_fds: set[int] = set()
    pending: dict[str, str] = {}  # pid -> the start of an <unfinished ...> call
    received_at: dict[int, int] = {}  # correlation id -> event index
    fsyncs: list[int] = []  # event indexes of completed fsyncs of a segment fd
    answered: dict[int, bool] = {}
    for index, raw in enumerate(trace.read_text(errors="replace").splitlines()):
        m = _LINE.match(raw)
        if not m:
            continue
        pid, rest = m.groups()
        if rest.endswith("<unfinished ...>"):
            pending[pid] = rest[: -len("<unfinished ...>")].rstrip()
            continue
        if rest.startswith("<..."):
            start = pending.pop(pid, None)
            if start is None:
                continue
            rest = start + rest[rest.index("resumed>") + len("resumed>"):]
        c = _CALL.match(rest)
        if not c:
            continue
        name, args, result = c.group(1), c.group(2), int(c.group(3))
        if name == "openat" and result >= 0:
            path = _hex(args.split(",", 1)[1]).decode(errors="replace")  # -xx prints paths in hex too
            if path.endswith(".log") and "/fsync-0/" in path:
                log_fds.add(result)
        elif name in ("fsync", "fdatasync") and result == 0 and int(args.split(",")[0]) in log_fds:
            fsyncs.append(index)
        elif name == "recvfrom" and result >= 12:
            data = _hex(args.split(",", 1)[1])
            if len(data) >= 12:
                cid = int.from_bytes(data[8:12], "big", signed=True)
                if FIRST_CID <= cid < FIRST_CID + N:
                    received_at[cid] = index
        elif name == "sendto" and result >= 8:
            data = _hex(args.split(",", 1)[1])
            if len(data) >= 8:
                cid = int.from_bytes(data[4:8], "big", signed=True)
                if cid in received_at and cid not in answered:
                    answered[cid] = any(received_at[cid] < f < index for f in fsyncs)
    return answered


@pytest.fixture
def traced(tmp_path):
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    probe = subprocess.run(["strace", "-qq", "-e", "trace=none", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"strace cannot trace here: {probe.stderr.decode().strip()}")
    return tmp_path


def test_fsync_returns_before_each_produce_ack_with_flush_messages_1(traced):
    trace = traced / "fsync.trace"
    run_traced_broker(traced / "data", trace, dict(FSYNC_OVERRIDES))
    answered = fsync_before_each_ack(trace)
    assert sorted(answered) == list(range(FIRST_CID, FIRST_CID + N)), "not every produce was seen in the trace"
    assert all(answered.values()), answered


def test_control_the_default_flush_policy_acks_without_fsync(traced):
    """Kafka's default (flush.messages = Long.MAX_VALUE): the ack leaves before any fsync; the
    data is safe from a process crash (page cache), not from a power loss."""
    trace = traced / "default.trace"
    run_traced_broker(traced / "data", trace, {})
    answered = fsync_before_each_ack(trace)
    assert sorted(answered) == list(range(FIRST_CID, FIRST_CID + N))
    assert not any(answered.values()), answered
