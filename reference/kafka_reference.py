"""Apache Kafka itself, as the reference next to minibroker: its jars, its tools, a one-node broker.

Theory of operation. `reference/pom.xml` pins an Apache Kafka release on Maven Central; `fetch()`
(`make reference`) has Maven copy those jars and every dependency into a cache outside the repo,
`~/.cache/minibroker/kafka-<version>/libs` (or `$MINIBROKER_KAFKA_LIBS`), and marks the copy
complete with a stamp file, so later calls cost one `stat`. Everything else is a plain
`java -cp 'libs/*' <main class>`:

* `KafkaReference` runs a single-node KRaft broker+controller (`process.roles=broker,controller`,
  the way `config/server.properties` ships) on free loopback ports in a temp dir: `StorageTool
  format` first, then `kafka.Kafka`. Kafka's defaults stand except what one node needs (replication
  factor 1 for the internal topics) and `group.initial.rebalance.delay.ms=0`, as in our own tests.
  It is ready once the log says "Kafka Server started" and an ApiVersions request is answered; it
  stops by PID, SIGTERM then SIGKILL after a bound. `restart(kill=...)` stops it (SIGTERM, or
  SIGKILL for a crash) and starts it again on the same directory, ports and cluster id: what a
  test needs to compare durable state across a restart.
* `tool_command()` / `run_tool()` run Kafka's command-line tools by short name (`kafka-topics`,
  `TopicCommand`, `topics` all mean `org.apache.kafka.tools.TopicCommand`), as the
  `bin/kafka-*.sh` scripts do; `reference/kafka-tool` is the shell entry point.

JVMs stay small: the machines have two cores shared by several sessions. Tools run with the serial
GC and the C1 compiler only (they are short-lived; C2 would only cost CPU), except the perf tools,
whose figures should be Kafka's real ones.

Only the standard library is used, so the module works from any Python >= 3.11 and from tests.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
TOOLS_LOG4J = HERE / "tools-log4j2.properties"
_STAMP = ".complete"


def kafka_version() -> str:
    """The Kafka release pinned in reference/pom.xml."""
    m = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    if m is None:
        raise RuntimeError(f"no <kafka.version> in {POM}")
    return m.group(1).strip()


def libs_dir() -> Path:
    """Where the jars live: $MINIBROKER_KAFKA_LIBS, else the per-version cache under ~/.cache."""
    env = os.environ.get("MINIBROKER_KAFKA_LIBS")
    if env:
        return Path(env)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "minibroker" / f"kafka-{kafka_version()}" / "libs"


@contextlib.contextmanager
def maven_lock() -> Iterator[None]:
    """One Maven run at a time on this machine's ~/.m2: two at once (pytest-xdist workers fetching
    the Connect and MirrorMaker jars, say) copied the same artifact over each other and one failed
    ("Failed to copy artifact"). An flock on a file next to the caches; the holder's exit frees it."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "minibroker"
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "maven.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def java_executable() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


def missing_prerequisites() -> str | None:
    """Why the reference cannot run here (no java, or no jars and no mvn to fetch them), or None."""
    if java_executable() is None:
        return "java is not installed (.ci/run installs openjdk-17-jdk-headless)"
    if not jars_ready() and shutil.which("mvn") is None:
        return f"the Kafka jars are not in {libs_dir()} and mvn is not installed to fetch them " \
               "(.ci/run installs maven; then `make reference`)"
    return None


def _pom_digest() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def jars_ready() -> bool:
    """A complete copy made from this very pom.xml is in libs_dir() (the stamp holds its digest,
    so an edited pom is fetched again)."""
    stamp = libs_dir() / _STAMP
    return stamp.exists() and stamp.read_text().split() == [kafka_version(), _pom_digest()]


def fetch(quiet: bool = True) -> Path:
    """Copy the pinned jars into libs_dir() with Maven, unless a complete copy is there already.

    Idempotent and cheap when cached: the stamp is written only after Maven succeeded, so an
    interrupted copy is redone rather than half-used."""
    libs = libs_dir()
    if jars_ready():
        return libs
    with maven_lock():
        return _fetch(libs, quiet)


def _fetch(libs: Path, quiet: bool) -> Path:
    if jars_ready():  # fetched by whoever held the lock before
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("mvn is not installed; cannot fetch the Kafka jars")
    # a copy from another pom (or an interrupted one) goes first: stale jars would join the classpath
    shutil.rmtree(libs, ignore_errors=True)
    cmd = [mvn, "-B", "-Dstyle.color=never", "-f", str(POM), f"-Dkafka.libs={libs}", "dependency:copy-dependencies"]
    if quiet:
        cmd.insert(1, "-q")
    r = subprocess.run(cmd, capture_output=quiet, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"mvn failed ({r.returncode}):\n{r.stdout or ''}{r.stderr or ''}")
    if not any(libs.glob("kafka_2.13-*.jar")):
        raise RuntimeError(f"mvn finished but {libs} has no kafka_2.13 jar")
    (libs / _STAMP).write_text(f"{kafka_version()} {_pom_digest()}\n")
    return libs


# -- kafka-metadata-shell: its own classpath ----------------------------------------------------
# kafka-shell 4.4.0 is not on Maven Central (its newest there is 4.3.1), and 4.3.1 runs only on Kafka
# 4.3.1's own jars, so reference/shell/pom.xml copies them apart, into their own cache
# (docs/differences.md#metadata-shell).
SHELL_POM = HERE / "shell" / "pom.xml"
SHELL_MAIN = "org.apache.kafka.shell.MetadataShell"


def shell_version() -> str:
    """The kafka-shell release pinned in reference/shell/pom.xml."""
    m = re.search(r"<shell\.version>([^<]+)</shell\.version>", SHELL_POM.read_text())
    if m is None:
        raise RuntimeError(f"no <shell.version> in {SHELL_POM}")
    return m.group(1).strip()


def shell_libs_dir() -> Path:
    """kafka-shell's jars: $MINIBROKER_KAFKA_SHELL_LIBS, else the per-version cache under ~/.cache."""
    env = os.environ.get("MINIBROKER_KAFKA_SHELL_LIBS")
    if env:
        return Path(env)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "minibroker" / f"kafka-shell-{shell_version()}" / "libs"


def shell_jars_ready() -> bool:
    stamp = shell_libs_dir() / _STAMP
    digest = hashlib.sha256(SHELL_POM.read_bytes()).hexdigest()
    return stamp.exists() and stamp.read_text().split() == [shell_version(), digest]


def fetch_shell(quiet: bool = True) -> Path:
    """Copy kafka-shell and its dependencies into shell_libs_dir(), as fetch() does for Kafka's."""
    libs = shell_libs_dir()
    if shell_jars_ready():
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("mvn is not installed; cannot fetch kafka-shell's jars")
    shutil.rmtree(libs, ignore_errors=True)
    cmd = [mvn, "-B", "-Dstyle.color=never", "-f", str(SHELL_POM), f"-Dshell.libs={libs}",
           "dependency:copy-dependencies"]
    if quiet:
        cmd.insert(1, "-q")
    r = subprocess.run(cmd, capture_output=quiet, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"mvn failed ({r.returncode}):\n{r.stdout or ''}{r.stderr or ''}")
    if not any(libs.glob("kafka-shell-*.jar")):
        raise RuntimeError(f"mvn finished but {libs} has no kafka-shell jar")
    digest = hashlib.sha256(SHELL_POM.read_bytes()).hexdigest()
    (libs / _STAMP).write_text(f"{shell_version()} {digest}\n")
    return libs


def metadata_shell_command(snapshot: Path, command: Sequence[str]) -> list[str]:
    """`kafka-metadata-shell --snapshot FILE <command words>`: one command, non-interactive (the
    shell runs the words given after its options and exits), on kafka-shell's own classpath."""
    cmd = java_command(SHELL_MAIN, ["--snapshot", str(snapshot), *command], jit=False)
    cp = cmd.index("-cp")
    cmd[cp + 1] = str(shell_libs_dir() / "*")
    return cmd


# -- the command-line tools -----------------------------------------------------------------------
# Main classes of Kafka 4.x's tools (checked with `unzip -l` on kafka-tools / kafka_2.13 jars); the
# bin/ script name of each is the key.
TOOLS: dict[str, str] = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",
    "kafka-streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-share-consumer-perf-test": "org.apache.kafka.tools.ShareConsumerPerformance",
    "kafka-dump-log": "org.apache.kafka.tools.DumpLogSegments",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-cluster": "org.apache.kafka.tools.ClusterTool",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
    "kafka-delegation-tokens": "org.apache.kafka.tools.DelegationTokenCommand",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-server-start": "kafka.Kafka",
    "connect-mirror-maker": "org.apache.kafka.connect.mirror.MirrorMaker",
}
# Tools whose own numbers matter: they get the full JIT (see the module docstring).
_PERF = {"org.apache.kafka.tools.ProducerPerformance", "org.apache.kafka.tools.ConsumerPerformance",
         "org.apache.kafka.tools.ShareConsumerPerformance", "kafka.Kafka",
         "org.apache.kafka.connect.mirror.MirrorMaker"}


def tool_class(name: str) -> str:
    """The main class for `name`: a bin/ script name (with or without `kafka-` and `.sh`), a
    class's simple name (`TopicCommand`) or a fully-qualified class name."""
    if "." in name and not name.endswith(".sh"):
        return name
    base = name.removesuffix(".sh")
    for key in (base, f"kafka-{base}"):
        if key in TOOLS:
            return TOOLS[key]
    for fqcn in TOOLS.values():
        if fqcn.rsplit(".", 1)[1] == base:
            return fqcn
    raise KeyError(f"unknown Kafka tool {name!r}; known: {', '.join(sorted(TOOLS))}")


def java_command(main_class: str, args: Sequence[str] = (), *, heap: str = "256m",
                 log4j: Path | None = None, jit: bool | None = None) -> list[str]:
    """`java ... -cp libs/* main_class args`, the way Kafka's kafka-run-class.sh starts a class."""
    java = java_executable()
    if java is None:
        raise RuntimeError("java is not installed")
    full_jit = main_class in _PERF if jit is None else jit
    # -XX:-UsePerfData: no /tmp/hsperfdata_<user>/<pid> file. Nothing here reads jstat counters,
    # and a JVM that found another process's file under its pid warned on stderr ("Cannot use
    # file ... locked by another process"), which tests compare between the brokers' tools
    opts = [f"-Xmx{heap}", "-XX:+UseSerialGC", "-Xshare:auto", "-XX:-UsePerfData", "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j or TOOLS_LOG4J}"]
    if not full_jit:
        opts.append("-XX:TieredStopAtLevel=1")
    return [java, *opts, "-cp", str(libs_dir() / "*"), main_class, *args]


def tool_command(name: str, args: Sequence[str] = ()) -> list[str]:
    return java_command(tool_class(name), args)


def run_tool(name: str, args: Sequence[str] = (), *, input: str | None = None, timeout: float = 60.0,
             check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run one Kafka tool to completion; stdout and stderr are captured as text."""
    return subprocess.run(tool_command(name, args), input=input, text=True, capture_output=True,
                          timeout=timeout, check=check, stdin=None if input is not None else subprocess.DEVNULL)


# -- the broker -----------------------------------------------------------------------------------
def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def random_cluster_id() -> str:
    """A cluster id as StorageTool random-uuid prints it: 16 random bytes, URL-safe base64, no
    padding (Kafka's Uuid.toString). Like Kafka's Uuid.randomUuid, never one that starts with '-':
    StorageTool's argument parser would take `-t -xyz...` for an option (1 start in 64 failed so)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def api_versions_answered(host: str, port: int, timeout: float = 2.0) -> bool:
    """Send ApiVersions v0 and read the answer's error code: 0 means the broker serves requests
    (its socket can accept before the request handlers are enabled)."""
    header = struct.pack(">hhih", 18, 0, 1, 5) + b"probe"
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(struct.pack(">i", len(header)) + header)
            size = struct.unpack(">i", _recv_exactly(s, 4))[0]
            body = _recv_exactly(s, size)
    except OSError:
        return False
    corr, error = struct.unpack(">ih", body[:6])
    return corr == 1 and error == 0


def _recv_exactly(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


_BROKER_LOG4J = """\
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.state.name = state.change.logger
logger.state.level = WARN
"""


@dataclass
class KafkaReference:
    """A single-node Apache Kafka (KRaft broker+controller) on loopback, in its own temp dir.

    `with KafkaReference() as k: k.bootstrap` — or start()/stop(). `overrides` are server
    properties on top of the one-node settings; `heap` bounds the JVM."""

    overrides: Mapping[str, object] = field(default_factory=dict)
    heap: str = "512m"
    jit: bool | None = None  # None: the full JIT (the perf tools' figures); False: C1 only, starts sooner
    workdir: Path | None = None
    host: str = "127.0.0.1"
    port: int = 0
    controller_port: int = 0
    node_id: int = 1
    cluster_id: str = ""
    proc: subprocess.Popen[bytes] | None = None
    _own_workdir: bool = False
    _log_mark: int = 0  # server.log's size when the running process started (a restart appends to it)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def data_dir(self) -> Path:
        """log.dirs: one directory per partition, `<topic>-<partition>`, as minibroker's."""
        assert self.workdir is not None
        return self.workdir / "data"

    @property
    def log_path(self) -> Path:
        assert self.workdir is not None
        return self.workdir / "server.log"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def properties(self) -> dict[str, str]:
        props: dict[str, object] = {
            "process.roles": "broker,controller",
            "node.id": self.node_id,
            "controller.quorum.voters": f"{self.node_id}@{self.host}:{self.controller_port}",
            "listeners": f"PLAINTEXT://{self.host}:{self.port},CONTROLLER://{self.host}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": self.data_dir,
            # one node: the internal topics cannot have the default replication factor 3
            # (config/server.properties sets the same for a single-node quickstart)
            "offsets.topic.replication.factor": 1,
            "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1,
            "share.coordinator.state.topic.replication.factor": 1,
            "share.coordinator.state.topic.min.isr": 1,
            # as minibroker's tests: a joining consumer is not held back 3 s
            "group.initial.rebalance.delay.ms": 0,
        }
        props.update(self.overrides)
        return {k: _prop(v) for k, v in props.items()}

    def start(self, timeout: float = 90.0) -> KafkaReference:
        if self.proc is not None:
            raise RuntimeError("already started")
        if not jars_ready():
            fetch()
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="kafka-reference-"))
            self._own_workdir = True
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port(self.host)
        self.controller_port = self.controller_port or free_port(self.host)
        self.cluster_id = self.cluster_id or random_cluster_id()
        conf = self.workdir / "server.properties"
        conf.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        log4j = self.workdir / "log4j2.properties"
        log4j.write_text(_BROKER_LOG4J.format(log=self.log_path))
        # a restart finds the directory formatted already: one JVM less (StorageTool would skip it)
        if not (self.data_dir / "meta.properties").exists():
            fmt = subprocess.run(
                java_command("kafka.tools.StorageTool",
                             ["format", "-t", self.cluster_id, "-c", str(conf), "--ignore-formatted"],
                             heap="256m"),
                capture_output=True, text=True, timeout=timeout)
            if fmt.returncode != 0:
                raise RuntimeError(f"StorageTool format failed ({fmt.returncode}): {fmt.stdout}{fmt.stderr}")
        self._log_mark = self.log_path.stat().st_size if self.log_path.exists() else 0
        out = open(self.workdir / "stdout.log", "ab")
        try:
            self.proc = subprocess.Popen(
                java_command("kafka.Kafka", [str(conf)], heap=self.heap, log4j=log4j, jit=self.jit),
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            out.close()
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        started = False
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"kafka.Kafka exited with {self.proc.returncode}:\n{self.tail()}")
            if not started:
                started = self.log_path.exists() and "Kafka Server started" in self._log_since_start()
            if started and api_versions_answered(self.host, self.port):
                return
            time.sleep(0.1)
        raise TimeoutError(f"Kafka did not answer on {self.bootstrap} within {timeout}s:\n{self.tail()}")

    def _log_since_start(self) -> str:
        """server.log as written by the running process (an earlier run's lines skipped)."""
        with open(self.log_path, "rb") as f:
            f.seek(self._log_mark)
            return f.read().decode(errors="replace")

    def tail(self, lines: int = 40) -> str:
        text = ""
        for p in (self.workdir / "stdout.log", self.log_path) if self.workdir else ():
            if p.exists():
                text += "\n".join(p.read_text(errors="replace").splitlines()[-lines:]) + "\n"
        return text

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM (Kafka's controlled shutdown), then SIGKILL if it is still there after `grace`;
        a temp dir of our own is removed."""
        self._end_process(kill=False, grace=grace)
        if self._own_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def restart(self, kill: bool = False, timeout: float = 90.0) -> KafkaReference:
        """`halt(kill)`, then start again on the same directory, ports and cluster id; returns once
        the broker answers again."""
        self.halt(kill)
        return self.start(timeout)

    def halt(self, kill: bool = False) -> None:
        """Stop the broker but keep its directory, ports and cluster id for a later start():
        SIGTERM and wait (a clean shutdown), or SIGKILL (a crash: no shutdown hook runs, nothing
        more is flushed)."""
        if self.proc is None:
            raise RuntimeError("not started")
        self._end_process(kill=kill)

    def _end_process(self, *, kill: bool, grace: float = 20.0) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            if not kill:
                os.kill(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(grace)
                    return
                except subprocess.TimeoutExpired:
                    pass
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        except ProcessLookupError:
            pass

    def __enter__(self) -> KafkaReference:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _prop(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def main(argv: Sequence[str] | None = None) -> int:
    """`python reference/kafka_reference.py fetch|libs|version|broker`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    cmd = argv[0] if argv else "fetch"
    if cmd == "fetch":
        if shutil.which("mvn") is None and not jars_ready():
            print(f"reference: mvn not installed; Kafka {kafka_version()} jars not fetched "
                  "(tests/reference will be skipped)", file=sys.stderr)
            return 0
        print(fetch())
        # kafka-metadata-shell's separate classpath (tests/reference/test_metadata_shell_reference.py)
        if shutil.which("mvn") is None and not shell_jars_ready():
            print(f"reference: mvn not installed; kafka-shell {shell_version()} jars not fetched", file=sys.stderr)
        else:
            print(fetch_shell())
    elif cmd == "libs":
        print(libs_dir())
    elif cmd == "version":
        print(kafka_version())
    elif cmd == "broker":
        # a reference broker in the foreground until Ctrl-C, for trying things by hand
        with KafkaReference() as k:
            print(f"Apache Kafka {kafka_version()} on {k.bootstrap} (pid {k.pid}, dir {k.workdir})", flush=True)
            try:
                k.proc.wait() if k.proc else None
            except KeyboardInterrupt:
                pass
    else:
        print(main.__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
