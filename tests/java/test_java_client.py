"""The official Java client against the broker (tools/java/ClientCheck.java).

Spark's Kafka connector is kafka-clients underneath, so this is the client that has to work.
The program is compiled with the installed JDK into a temp dir and run once against an
in-process broker; each of its steps is one test here.

Idempotent produce (the Java default) needs InitProducerId (KIP-98). Whether the broker serves it
is read from its handler registry, i.e. what ApiVersions advertises: when it does, the step must
succeed; until then the step must fail in exactly the way the client reports an API the broker
does not advertise, and nothing else may fail because of it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, TEST_OVERRIDES

sys.path.insert(0, str(ROOT / "tools" / "java"))
from classpath import kafka_client_jars  # noqa: E402

INIT_PRODUCER_ID = 22
STEPS = ("create_topic", "produce_idempotent", "produce_plain", "consume_group", "committed", "list_offsets",
         "transactions")
REFERENCE_JARS = ("kafka-clients-", "slf4j-api-", "lz4-java-", "snappy-java-", "zstd-jni-")


def _client_jars(client: str) -> list[Path]:
    """kafka-clients 3.9.1 (the PyPI wheel's) or the reference broker's 4.x jars (reference/pom.xml)."""
    if client == "3.9.1":
        return kafka_client_jars()
    from reference import kafka_reference as kr
    if not kr.jars_ready():
        pytest.skip(f"REFERENCE JARS UNAVAILABLE: {kr.missing_prerequisites()}")
    libs = kr.libs_dir()
    jars = [j for prefix in REFERENCE_JARS for j in sorted(libs.glob(prefix + "*.jar"))]
    assert jars[0].name == f"kafka-clients-{kr.kafka_version()}.jar", jars
    return jars


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} not found: the Java-client check needs a JDK (17+) on PATH")
    return path


@pytest.fixture(scope="module", params=["3.9.1", "4.x"])
def java_run(request, tmp_path_factory):
    """Compile and run ClientCheck once per client version; returns (step -> (ok, detail), broker
    serves InitProducerId)."""
    from minibroker.testing import BrokerThread

    jars = _client_jars(request.param)
    classes = tmp_path_factory.mktemp("java-classes")
    cp = ":".join(map(str, jars))
    subprocess.run([_tool("javac"), "-d", str(classes), "-cp", cp, str(ROOT / "tools/java/ClientCheck.java")],
                   check=True, timeout=120, capture_output=True)
    with BrokerThread(tmp_path_factory.mktemp("java-broker"), overrides=dict(TEST_OVERRIDES)) as b:
        proc = subprocess.run([_tool("java"), "-cp", f"{classes}:{cp}", "ClientCheck", b.bootstrap, "java-check"],
                              capture_output=True, text=True, timeout=240)
        idempotence = b.call(lambda broker: INIT_PRODUCER_ID in broker.handlers)
    steps: dict[str, tuple[bool, str]] = {}
    for line in proc.stdout.splitlines():
        status, _, rest = line.partition(" ")
        if status in ("OK", "FAIL"):
            name, _, detail = rest.partition(" ")
            steps[name] = (status == "OK", detail)
    print(proc.stdout)  # shown by pytest on failure
    assert set(steps) == set(STEPS), f"unexpected output:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return steps, idempotence


@pytest.mark.parametrize("step", [s for s in STEPS if s != "produce_idempotent"])
def test_java_client_step(java_run, step):
    steps, _ = java_run
    ok, detail = steps[step]
    assert ok, f"{step}: {detail}"


def test_java_idempotent_produce(java_run):
    steps, idempotence = java_run
    ok, detail = steps["produce_idempotent"]
    if idempotence:
        assert ok, detail
    else:
        # The broker does not advertise InitProducerId, and the Java client says so.
        assert not ok
        assert "UnsupportedVersionException: The node does not support INIT_PRODUCER_ID" in detail, detail


def test_classpath_tool_prints_the_jars():
    out = subprocess.run([sys.executable, str(ROOT / "tools/java/classpath.py")], capture_output=True,
                         text=True, check=True, timeout=30).stdout.strip()
    assert [Path(p).name for p in out.split(":")][0] == "kafka-clients.jar"
