"""The Java transactional producer (tools/java/TxnCheck.java) on Apache Kafka 4.4 and minibroker.

The program runs with the Kafka 4.4 client (transactions v2: both brokers finalize
transaction.version 2) and with the 3.9.1 client (the classic protocol), each against both
brokers at once; every step's line must be the same on both. The steps: exactly-once
consume-transform-produce (and the epoch bumped once per transaction with v2, never with v1),
abort, fencing by a second instance, and the transaction timeout (what the client sees after the
coordinator aborted its transaction: v2 and v1 differ, as they do on Kafka).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from reference import kafka_reference as kr
from tests.helpers import ROOT
from tests.reference.helpers import POOL, Pair, java_available

sys.path.insert(0, str(ROOT / "tools" / "java"))
from classpath import kafka_client_jars  # noqa: E402

SOURCE = ROOT / "tools/java/TxnCheck.java"
STEPS = ("eos", "abort", "fencing", "timeout")


def _compile(classpath: str, out: Path) -> None:
    javac = Path(kr.java_executable() or "java").with_name("javac")
    subprocess.run([str(javac), "-d", str(out), "-cp", classpath, str(SOURCE)], check=True, timeout=180,
                   capture_output=True)


@pytest.fixture(scope="module")
def classpaths(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """{"4.4": ..., "3.9.1": ...}: TxnCheck compiled against each client, with its jars."""
    if not java_available():
        pytest.skip("REFERENCE BROKER UNAVAILABLE: no Java")
    cps = {"4.4": f"{kr.libs_dir()}/*", "3.9.1": ":".join(map(str, kafka_client_jars()))}
    dirs = {name: tmp_path_factory.mktemp(f"txncheck-{name}") for name in cps}
    for f in [POOL.submit(_compile, cp, dirs[name]) for name, cp in cps.items()]:
        f.result()
    yield {name: f"{dirs[name]}:{cp}" for name, cp in cps.items()}


def _run(classpath: str, bootstrap: str, prefix: str) -> dict[str, str]:
    java = kr.java_executable() or "java"
    proc = subprocess.run([java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath, "TxnCheck",
                           bootstrap, prefix], capture_output=True, text=True, timeout=240)
    steps = {}
    for line in proc.stdout.splitlines():
        status, _, rest = line.partition(" ")
        if status in ("OK", "FAIL"):
            name, _, detail = rest.partition(" ")
            steps[name] = f"{status} {detail}"
    assert set(steps) == set(STEPS), f"unexpected output:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return steps


@pytest.fixture(scope="module")
def results(pair: Pair, classpaths: dict[str, str]) -> dict[tuple[str, str], dict[str, str]]:
    """(client, broker) -> step -> line; the four runs at once."""
    # the same names on both brokers (per client): the shared brokers' listings stay alike
    # (kafka-transactions list in tests/reference/test_tools.py)
    runs = {(client, side.name): POOL.submit(_run, cp, side.bootstrap, f"txncheck-{client.replace('.', '')}")
            for client, cp in classpaths.items() for side in (pair.kafka, pair.mini)}
    return {k: f.result(timeout=300) for k, f in runs.items()}


@pytest.mark.parametrize("client", ["4.4", "3.9.1"])
@pytest.mark.parametrize("step", STEPS)
def test_java_transactions_match_kafka(results: dict[tuple[str, str], dict[str, str]], client: str,
                                       step: str) -> None:
    kafka, mini = results[(client, "kafka")][step], results[(client, "minibroker")][step]
    assert mini == kafka
    assert mini.startswith("OK "), mini


def test_java_44_runs_transactions_v2_and_391_v1(results: dict[tuple[str, str], dict[str, str]]) -> None:
    for broker in ("kafka", "minibroker"):
        assert results[("4.4", broker)]["eos"].endswith("exact=true committed=20 epoch-bumps=per-transaction")
        assert results[("3.9.1", broker)]["eos"].endswith("exact=true committed=20 epoch-bumps=none")
        # v2: the coordinator's abort bumped the epoch, the client's commit is an invalid transition;
        # v1: the client is fenced
        assert "commit=InvalidTxnStateException" in results[("4.4", broker)]["timeout"]
        assert "commit=ProducerFencedException" in results[("3.9.1", broker)]["timeout"]
        assert results[("4.4", broker)]["timeout"].endswith("read_committed=[after]")
