"""MirrorMaker 2 (Kafka's `connect-mirror-maker`) from its own pinned jars, reference/mm2/pom.xml.

connect-mirror stops at 4.3.1 on Maven Central and its classes fail on the 4.4.0 Connect runtime
of reference/pom.xml (NoClassDefFoundError: org.apache.kafka.common.utils.AppInfoParser), so MM2
runs from a consistent 4.3.1 set in its own cache directory. `fetch()` copies it with Maven once
(a stamp holding the pom's digest makes later calls instant); `command(properties)` is the java
command line of `connect-mirror-maker.sh properties`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from reference import kafka_reference as kr

POM = Path(__file__).resolve().parent / "mm2" / "pom.xml"
MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"
_STAMP = ".complete"


def version() -> str:
    m = re.search(r"<mirror\.version>([^<]+)</mirror\.version>", POM.read_text())
    if m is None:
        raise RuntimeError(f"no <mirror.version> in {POM}")
    return m.group(1).strip()


def libs_dir() -> Path:
    env = os.environ.get("MINIBROKER_MM2_LIBS")
    if env:
        return Path(env)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "minibroker" / f"mm2-{version()}" / "libs"


def _digest() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def jars_ready() -> bool:
    stamp = libs_dir() / _STAMP
    return stamp.exists() and stamp.read_text().split() == [version(), _digest()]


def missing_prerequisites() -> str | None:
    if kr.java_executable() is None:
        return "java is not installed"
    if not jars_ready() and shutil.which("mvn") is None:
        return f"the MirrorMaker 2 jars are not in {libs_dir()} and mvn is not installed to fetch them"
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
        raise RuntimeError("mvn is not installed; cannot fetch the MirrorMaker 2 jars")
    shutil.rmtree(libs, ignore_errors=True)
    r = subprocess.run([mvn, "-q", "-B", "-Dstyle.color=never", "-f", str(POM), f"-Dmm2.libs={libs}",
                        "dependency:copy-dependencies"], capture_output=True, text=True)
    if r.returncode != 0 or not any(libs.glob("connect-mirror-*.jar")):
        raise RuntimeError(f"mvn failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    (libs / _STAMP).write_text(f"{version()} {_digest()}\n")
    return libs


def command(properties: Path, *, heap: str = "384m") -> list[str]:
    """`connect-mirror-maker.sh properties` as one java command line, on the 4.3.1 jars."""
    java = kr.java_executable()
    if java is None:
        raise RuntimeError("java is not installed")
    return [java, f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={kr.TOOLS_LOG4J}", "-cp", str(fetch() / "*"), MAIN, str(properties)]
