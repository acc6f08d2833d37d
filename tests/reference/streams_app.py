"""Kafka Streams' word count (tests/reference/streams/WordCount.java) driven from Python.

`build()` has Maven compile the class and copy kafka-streams 4.4.0 with its dependencies into a
cache outside the repository (~/.cache/minibroker/kafka-streams-<version>); a stamp holding the
digest of the pom and the source makes a second call free. `WordCountApp` starts and stops JVM
instances of one application; `run_scenario` plays the same input and the same rebalances against
one broker and returns what a read_committed consumer sees on the output topic.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from filelock import FileLock

from reference import kafka_reference as kr

HERE = Path(__file__).resolve().parent / "streams"
POM = HERE / "pom.xml"
SOURCE = HERE / "WordCount.java"
_STAMP = ".complete"
VOCABULARY = ("alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november "
              "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()


def streams_version() -> str:
    m = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    assert m is not None, POM
    return m.group(1).strip()


def build_dir() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "minibroker" / f"kafka-streams-{streams_version()}"


def _digest() -> str:
    return hashlib.sha256(POM.read_bytes() + SOURCE.read_bytes()).hexdigest()


def missing_prerequisites() -> str | None:
    if kr.java_executable() is None:
        return "java is not installed"
    if not _built() and (shutil.which("mvn") is None or shutil.which("javac") is None):
        return "mvn and a JDK are needed to build the Kafka Streams word count"
    return None


def _built() -> bool:
    stamp = build_dir() / _STAMP
    return stamp.exists() and stamp.read_text().strip() == _digest()


def build() -> Path:
    """Compile WordCount and fetch its jars with Maven, unless this very pom and source are built."""
    out = build_dir()
    out.parent.mkdir(parents=True, exist_ok=True)
    # Two modules build it and `make test` runs them on separate pytest-xdist workers: one builds,
    # the other waits for the lock and finds the stamp (no rmtree under a running JVM).
    with FileLock(str(out) + ".lock"), kr.maven_lock():  # and no other Maven run on ~/.m2 meanwhile
        if _built():
            return out
        shutil.rmtree(out, ignore_errors=True)
        mvn = shutil.which("mvn")
        assert mvn is not None
        r = subprocess.run([mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(POM),
                            f"-Dstreams.build={out}", "package"], capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            raise RuntimeError(f"mvn failed ({r.returncode}):\n{r.stdout}{r.stderr}")
        (out / _STAMP).write_text(_digest() + "\n")
    return out


def words(batch: int, lines: int) -> list[str]:
    """`lines` lines of five words, the same for every broker: batch b, line i."""
    n = len(VOCABULARY)
    return [" ".join(VOCABULARY[(batch * 7 + i * 5 + j * (i % 3 + 1)) % n] for j in range(5))
            for i in range(lines)]


def expected_counts(batches: list[list[str]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for lines in batches:
        for line in lines:
            for w in line.split():
                counts[w] = counts.get(w, 0) + 1
    return counts


@dataclass
class Instance:
    """One JVM running WordCount; its stdout is a file (STATE lines) so nothing blocks on a pipe."""
    proc: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_state(self, state: str, timeout: float = 120.0, after: int = 0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.text()
            if f"STATE {state}" in out[after:]:
                return
            if self.proc.poll() is not None or "STATE ERROR" in out:
                break
            time.sleep(0.2)
        raise AssertionError(f"instance did not reach {state}:\n{self.text()[-6000:]}")

    def close(self, timeout: float = 60.0) -> None:
        """Clean shutdown: closing stdin makes WordCount call KafkaStreams.close()."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout)

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)


@dataclass
class WordCountApp:
    bootstrap: str
    app_id: str
    protocol: str
    input: str
    output: str
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="wordcount-")))
    instances: list[Instance] = field(default_factory=list)

    def start(self, name: str) -> Instance:
        out = build()
        java = kr.java_executable()
        assert java is not None
        log = self.workdir / f"{name}-{len(self.instances)}.log"
        state = self.workdir / f"state-{name}"
        cmd = [java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
               "-cp", f"{out / 'target' / 'classes'}:{out / 'libs' / '*'}", "WordCount",
               self.bootstrap, self.app_id, self.protocol, self.input, self.output, str(state)]
        with log.open("wb") as f:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=f, stderr=subprocess.STDOUT)
        inst = Instance(proc, log)
        self.instances.append(inst)
        return inst

    def stop_all(self) -> None:
        for inst in self.instances:
            if inst.proc.poll() is None:
                inst.proc.kill()
                inst.proc.wait(30)


def create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()], operation_timeout=30)
    for f in futures.values():
        f.result(60)


def produce(bootstrap: str, topic: str, lines: list[str], first_key: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i, line in enumerate(lines):
        p.produce(topic, key=f"line-{first_key + i}".encode(), value=line.encode())
    assert p.flush(60) == 0


class OutputReader:
    """A read_committed consumer of the whole output topic: word -> every count seen, in order."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}",
                                  "isolation.level": "read_committed", "enable.auto.commit": False})
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        self.seen: dict[str, list[int]] = {}

    def poll_until(self, done: Callable[[dict[str, list[int]]], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in self.consumer.consume(500, 0.5):
                if m.error():
                    continue
                self.seen.setdefault(m.key().decode(), []).append(int.from_bytes(m.value(), "big", signed=True))
            if done(self.seen):
                return True
        return done(self.seen)

    def wait_for(self, counts: dict[str, int], timeout: float = 180.0) -> bool:
        return self.poll_until(lambda seen: all(seen.get(w, [0])[-1] >= n for w, n in counts.items()), timeout)

    def close(self) -> None:
        self.consumer.close()


@dataclass
class ScenarioResult:
    seen: dict[str, list[int]]
    expected: dict[str, int]
    logs: str


def run_scenario(bootstrap: str, protocol: str, prefix: str) -> ScenarioResult:
    """Two instances, then one (a clean close), then a second again and the first killed with
    kill -9 while input is still arriving. Returns every committed output update per word."""
    app = WordCountApp(bootstrap, f"{prefix}-app", protocol, f"{prefix}-in", f"{prefix}-out")
    create_topics(bootstrap, {app.input: 4, app.output: 2})
    reader = OutputReader(bootstrap, app.output, 2)
    batches: list[list[str]] = []
    key = 0

    def feed(lines: list[str]) -> None:
        nonlocal key
        produce(bootstrap, app.input, lines, key)
        key += len(lines)
        batches.append(lines)

    try:
        a, b = app.start("a"), app.start("b")
        a.wait_state("RUNNING")
        b.wait_state("RUNNING")
        feed(words(0, 300))
        assert reader.wait_for(expected_counts(batches)), ("batch 0", reader.seen, app.instances[0].text()[-4000:])

        # a clean leave: the group rebalances onto `a` alone
        b.close()
        feed(words(1, 300))
        assert reader.wait_for(expected_counts(batches)), ("batch 1", reader.seen, a.text()[-4000:])

        # `b` again; then `a` dies mid-stream: its open transaction is aborted, `b` takes its tasks
        mark = len(a.text())
        b2 = app.start("b")
        b2.wait_state("RUNNING")
        a.wait_state("RUNNING", after=mark)
        before = expected_counts(batches)
        feed(words(2, 600))
        reader.poll_until(lambda seen: any(seen.get(w, [0])[-1] > n for w, n in before.items()), 60)
        a.kill9()
        feed(words(3, 600))
        final = expected_counts(batches)
        assert reader.wait_for(final, timeout=240), ("final", reader.seen, b2.text()[-4000:])
        # anything a duplicate would add arrives now or never: read on for a few more seconds
        reader.poll_until(lambda seen: False, 3)
        logs = "\n".join(i.text()[-3000:] for i in app.instances)
        b2.close()
        return ScenarioResult(reader.seen, final, logs)
    finally:
        reader.close()
        app.stop_all()
