"""A Kafka Connect distributed worker (`connect-distributed.sh`) from its own pinned jars,
reference/connect/pom.xml: connect-runtime with the FileStream connectors and MirrorMaker 2's
connectors (connect-mirror) on its class path (issue 35).

connect-file stops at 4.3.1 on Maven Central and its classes do not load on the 4.4.0 runtime, so
the worker runs from one consistent 4.3.1 set in its own cache directory (as MirrorMaker 2 does,
reference/mirror_maker.py). `fetch()` copies it with Maven once (a stamp holding the pom's digest
makes later calls instant); `worker_properties(...)` writes a worker config and
`command(properties)` is the java command line of `connect-distributed.sh properties`. The worker
is driven through its REST API (`rest(...)`), as an operator drives it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from reference import kafka_reference as kr

POM = Path(__file__).resolve().parent / "connect" / "pom.xml"
MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"
_STAMP = ".complete"


def version() -> str:
    m = re.search(r"<connect\.version>([^<]+)</connect\.version>", POM.read_text())
    if m is None:
        raise RuntimeError(f"no <connect.version> in {POM}")
    return m.group(1).strip()


def libs_dir() -> Path:
    env = os.environ.get("MINIBROKER_CONNECT_LIBS")
    if env:
        return Path(env)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "minibroker" / f"connect-{version()}" / "libs"


def _digest() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def jars_ready() -> bool:
    stamp = libs_dir() / _STAMP
    return stamp.exists() and stamp.read_text().split() == [version(), _digest()]


def missing_prerequisites() -> str | None:
    if kr.java_executable() is None:
        return "java is not installed"
    if not jars_ready() and shutil.which("mvn") is None:
        return f"the Kafka Connect jars are not in {libs_dir()} and mvn is not installed to fetch them"
    return None


def fetch() -> Path:
    libs = libs_dir()
    if jars_ready():
        return libs
    with kr.maven_lock():
        return _fetch(libs)


def _fetch(libs: Path) -> Path:
    if jars_ready():  # fetched by whoever held the lock before
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("mvn is not installed; cannot fetch the Kafka Connect jars")
    shutil.rmtree(libs, ignore_errors=True)
    r = subprocess.run([mvn, "-q", "-B", "-Dstyle.color=never", "-f", str(POM), f"-Dconnect.libs={libs}",
                        "dependency:copy-dependencies"], capture_output=True, text=True)
    if r.returncode != 0 or not any(libs.glob("connect-file-*.jar")) or not any(libs.glob("connect-mirror-*.jar")):
        raise RuntimeError(f"mvn failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    (libs / _STAMP).write_text(f"{version()} {_digest()}\n")
    return libs


def worker_properties(path: Path, bootstrap: str, rest_port: int, group: str = "connect-cluster") -> Path:
    """connect-distributed.properties as Kafka ships it, on one node (replication factor 1),
    strings as keys and values, offsets flushed every second."""
    path.write_text("\n".join([
        f"bootstrap.servers={bootstrap}",
        f"group.id={group}",
        "key.converter=org.apache.kafka.connect.storage.StringConverter",
        "value.converter=org.apache.kafka.connect.storage.StringConverter",
        "offset.storage.topic=connect-offsets",
        "offset.storage.replication.factor=1",
        "config.storage.topic=connect-configs",
        "config.storage.replication.factor=1",
        "status.storage.topic=connect-status",
        "status.storage.replication.factor=1",
        "offset.flush.interval.ms=1000",
        f"listeners=http://127.0.0.1:{rest_port}",
        "",
    ]))
    return path


def command(properties: Path, *, heap: str = "384m") -> list[str]:
    """`connect-distributed.sh properties` as one java command line."""
    java = kr.java_executable()
    if java is None:
        raise RuntimeError("java is not installed")
    return [java, f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={kr.TOOLS_LOG4J}", "-cp", str(fetch() / "*"), MAIN, str(properties)]


def rest(port: int, method: str, path: str, body: Any = None, timeout: float = 30.0) -> tuple[int, Any]:
    """One call to the worker's REST API: (HTTP status, decoded JSON body or None)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw) if raw else None
        except ValueError:
            return e.code, raw.decode(errors="replace")
