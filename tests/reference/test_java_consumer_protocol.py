"""The Java consumer 4.4 with group.protocol=consumer (tools/java/ConsumerProtocolCheck.java) on
Apache Kafka 4.4 and minibroker at once: the server-side range assignor named by the clients
(group.remote.assignor=range), static members (group.instance.id) getting their partitions back
after a restart, the default uniform assignor, synchronous commits through a rebalance with none
failing (Kafka 4.3+ accepts a commit at the member's previous epoch for a partition it still
owns). Every step's line must be the same on both.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from reference import kafka_reference as kr
from tests.helpers import ROOT
from tests.reference.helpers import POOL, Pair, java_available

STEPS = ("range", "static", "uniform", "commits")


@pytest.fixture(scope="module")
def classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    if not java_available():
        pytest.skip("REFERENCE BROKER UNAVAILABLE: no Java")
    out = tmp_path_factory.mktemp("consumer-protocol-check")
    cp = f"{kr.libs_dir()}/*"
    javac = Path(kr.java_executable() or "java").with_name("javac")
    subprocess.run([str(javac), "-d", str(out), "-cp", cp, str(ROOT / "tools/java/ConsumerProtocolCheck.java")],
                   check=True, timeout=180, capture_output=True)
    return f"{out}:{cp}"


def _run(classpath: str, bootstrap: str) -> dict[str, str]:
    proc = subprocess.run([kr.java_executable() or "java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp",
                           classpath, "ConsumerProtocolCheck", bootstrap, f"cpc-{uuid.uuid4().hex[:8]}"],
                          capture_output=True, text=True, timeout=240)
    steps = {}
    for line in proc.stdout.splitlines():
        status, _, rest = line.partition(" ")
        if status in ("OK", "FAIL"):
            name, _, detail = rest.partition(" ")
            steps[name] = f"{status} {detail}"
    assert set(steps) == set(STEPS), f"unexpected output:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return steps


def test_java_consumer_protocol_matches_kafka(pair: Pair, classpath: str) -> None:
    kafka, mini = (f.result(timeout=300) for f in [POOL.submit(_run, classpath, s.bootstrap)
                                                   for s in (pair.kafka, pair.mini)])
    assert mini == kafka
    assert mini["range"] == "OK sizes=3,3 contiguous=true all=[0, 1, 2, 3, 4, 5] read=60 distinct=60"
    assert mini["static"] == "OK same=true"
    assert mini["uniform"] == "OK partitions=[0, 1, 2, 3, 4, 5] read=60"
    assert mini["commits"] == "OK commitFailed=0"
