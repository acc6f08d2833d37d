"""Issue 30's findings 4, 6 and 10 as attacks over the wire, before and after in one run: what each
costs the attacker's answer and what a well-behaved client's Metadata waits meanwhile.

    .venv/bin/python bench/admin_attacks.py [--before /work/before] [--members 1000]

For each checkout (--before, then this one) starts `python -m minibroker` from it as a child with
the console on, then: produces one zstd batch of 1.5 M tiny records and asks the console's message
page for it with limit=1 (finding 4); joins `--members` KIP-848 members to one group with raw
ConsumerGroupHeartbeats (finding 10); adds 1,000 partitions with one CreatePartitions (finding 6).
A probe sends Metadata every 50 ms on its own connection throughout; its worst wait is reported.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from minibroker_protocol.apis import consumer_group_heartbeat, create_partitions, create_topics, produce  # noqa: E402
from tests.console.batch_helpers import big_batch  # noqa: E402
from tests.helpers import free_port  # noqa: E402
from tests.integration.helpers import RawClient  # noqa: E402
from tests.integration.limits_helpers import rss_mb  # noqa: E402
from tests.integration.probe_helpers import MetadataProbe  # noqa: E402


def start(root: Path, data: Path) -> tuple[subprocess.Popen[bytes], str, int]:
    port, console = free_port(), free_port()
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen([sys.executable, "-m", "minibroker", "--host", "127.0.0.1", "--port", str(port),
                             "--data-dir", str(data), "--console-port", str(console),
                             "--override", "group.initial.rebalance.delay.ms=0",
                             "--override", "offsets.topic.num.partitions=1",
                             # the 1.5 M-record batch is 1.2 MB compressed (zstd level 3)
                             "--override", "message.max.bytes=8388608"],
                            cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with RawClient(f"127.0.0.1:{port}", timeout=1):
                return proc, f"127.0.0.1:{port}", console
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the broker did not start")


def create(boot: str, name: str, partitions: int) -> None:
    CT = create_topics.REQUEST
    with RawClient(boot, timeout=120) as c:
        c.call(create_topics.API, 7, CT(topics=[CT.CreatableTopic(name=name, num_partitions=partitions,
                                                                  replication_factor=1, assignments=[], configs=[])],
                                        timeout_ms=60_000))


def page_attack(boot: str, console: int, pid: int) -> str:
    create(boot, "huge", 1)
    batch = big_batch(1_500_000)
    P = produce.REQUEST
    with RawClient(boot, timeout=120) as c:
        r = c.call(produce.API, 9, P(transactional_id=None, acks=1, timeout_ms=60_000, topic_data=[
            P.TopicProduceData(name="huge", partition_data=[P.PartitionProduceData(index=0, records=batch)])]))
    code = r.responses[0].partition_responses[0].error_code
    if code:
        return f"batch refused at produce (error {code})"
    rss0 = rss_mb(pid)
    with MetadataProbe(boot, timeout=300) as probe:
        t0 = time.monotonic()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{console}/api/topics/huge/0/messages?limit=1",
                                        timeout=300) as resp:
                resp.read()
            took = f"{time.monotonic() - t0:.2f} s"
        except OSError as e:
            took = f"failed after {time.monotonic() - t0:.0f} s ({e})"
    return f"page {took}, RSS +{rss_mb(pid) - rss0:.0f} MB, Metadata worst {probe.worst:.2f} s"


def join_attack(boot: str, members: int) -> str:
    create(boot, "joined", 12)
    HB = consumer_group_heartbeat.REQUEST
    with RawClient(boot, timeout=300) as c, MetadataProbe(boot, timeout=300) as probe:
        t0 = time.monotonic()
        for _ in range(members):
            for _ in range(100):
                r = c.call(consumer_group_heartbeat.API, 0, HB(
                    group_id="attack", member_id=str(uuid.uuid4()), member_epoch=0, rebalance_timeout_ms=60_000,
                    subscribed_topic_names=["joined"], topic_partitions=[]))
                if r.error_code in (14, 15, 16):
                    time.sleep(0.1)
                    continue
                break
        took = time.monotonic() - t0
    return f"{members} joins {took:.1f} s, Metadata worst {probe.worst:.2f} s"


def partitions_attack(boot: str) -> str:
    create(boot, "grown", 1)
    CP = create_partitions.REQUEST
    with RawClient(boot, timeout=600) as c, MetadataProbe(boot, timeout=600) as probe:
        t0 = time.monotonic()
        c.call(create_partitions.API, 3, CP(topics=[CP.CreatePartitionsTopic(name="grown", count=1_001,
                                                                               assignments=None)],
                                            timeout_ms=600_000, validate_only=False))
        took = time.monotonic() - t0
    return f"+1,000 partitions {took:.1f} s, Metadata worst {probe.worst:.2f} s"


def run(root: Path, members: int) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        proc, boot, console = start(root, Path(tmp) / "data")
        try:
            return [page_attack(boot, console, proc.pid), join_attack(boot, members), partitions_attack(boot)]
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", type=Path, default=None, help="a checkout of the broker as it was")
    ap.add_argument("--members", type=int, default=1_000)
    args = ap.parse_args()
    rows = [("before", args.before)] if args.before else []
    rows.append(("after", HERE))
    for label, root in rows:
        for line in run(root, args.members):
            print(f"{label:7} {line}", flush=True)


if __name__ == "__main__":
    main()
