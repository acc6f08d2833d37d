"""Kafka's own load tools and the Java consumer, as bench clients (run by bench/run.py).

* `producer_perf()`: `ProducerPerformance` (bin/kafka-producer-perf-test.sh) from the reference
  jars, with the issue's producer settings (linger.ms 5, batch.size 256 KiB) unless told
  otherwise; its own summary line is parsed (records/s, MB/s, latency percentiles).
* `consumer_perf()`: `ConsumerPerformance` (bin/kafka-consumer-perf-test.sh). It subscribes with
  a group, so its total time includes the group join; its `fetch.*` columns exclude it, and
  those are what is reported.
* `java_consume()`: bench/java/ConsumeBench.java, compiled here once against the reference jars
  (assign every partition, seek to the beginning, max.poll.records 10000, the clock from the
  first record).

All three run with kafka-clients 3.9.2 by default (below: Tansu cannot serve 4.x clients).

Every result is a dict with seconds/records/bytes (and latency fields where the tool has them).
The JVMs get the full JIT (kafka_reference's perf-tool treatment) and a 1 GiB heap.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

from brokers import kr

HERE = Path(__file__).resolve().parent
JAVA_SRC = HERE / "java" / "ConsumeBench.java"


def classes_dir() -> Path:
    """ConsumeBench compiled against the jars, cached by the source's digest."""
    digest = hashlib.sha256(JAVA_SRC.read_bytes()).hexdigest()[:12]
    out = kr.libs_dir().parent / f"bench-classes-{digest}"
    if not (out / "ConsumeBench.class").exists():
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-nowarn", "-cp", str(kr.libs_dir() / "*"), "-d", str(out), str(JAVA_SRC)],
                       check=True, capture_output=True, text=True, timeout=300)
    return out


# Tansu 0.6.0 drops the connection on kafka-clients 4.x's ApiVersions (v4), so the 4.4 tools
# cannot talk to it at all. The Java programs therefore run with kafka-clients 3.9 (the issue's
# own measurements used 3.9.1) against every broker alike: the 4.4 tools' classes with the 3.9
# client ahead of the 4.4 jars on the class path (ProducerPerformance and ConsumerPerformance
# work so). `CLIENTS = "4.4"` (run.py --java-clients 4.4) runs them with 4.4 throughout.
CLIENTS_39 = "org.apache.kafka:kafka-clients:3.9.2"


def clients_39_jar() -> Path:
    """kafka-clients 3.9.2, fetched once with Maven into the jars' cache."""
    out = kr.libs_dir().parent / "kafka-clients-3.9"
    jar = out / "kafka-clients-3.9.2.jar"
    if not jar.exists():
        subprocess.run(["mvn", "-q", "-B", "dependency:copy", f"-Dartifact={CLIENTS_39}", f"-DoutputDirectory={out}"],
                       check=True, capture_output=True, text=True, timeout=600)
    return jar


# which kafka-clients the Java programs run with: "3.9" (every broker can serve it) or "4.4"
CLIENTS = "3.9"


def _java(main_class: str, args: list[str], extra_cp: tuple[Path, ...] = ()) -> list[str]:
    cmd = kr.java_command(main_class, args, heap="1g", jit=True)
    if CLIENTS == "3.9":
        extra_cp = (*extra_cp, clients_39_jar())
    if extra_cp:
        i = cmd.index("-cp") + 1
        cmd[i] = ":".join([*map(str, extra_cp), cmd[i]])
    return cmd


def _run(cmd: list[str], timeout: float) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if out.returncode:
        raise RuntimeError(f"{cmd[-4:]} exited {out.returncode}: {(out.stderr or out.stdout).strip()[-500:]}")
    return out.stdout


_PERF_LINE = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max "
    r"latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th")


def producer_perf(bootstrap: str, topic: str, count: int, size: int, acks: str = "1", compression: str = "none",
                  props: tuple[str, ...] = ("linger.ms=5", "batch.size=262144"), timeout: float = 900) -> dict:
    args = ["--topic", topic, "--num-records", str(count), "--record-size", str(size), "--throughput", "-1",
            "--bootstrap-server", bootstrap]
    for prop in (f"acks={acks}", f"compression.type={compression}", *props):
        args += ["--command-property", prop]
    text = _run(_java(kr.tool_class("kafka-producer-perf-test"), args), timeout)
    found = list(_PERF_LINE.finditer(text))
    if not found:
        raise RuntimeError(f"no summary from ProducerPerformance: {text[-300:]}")
    m = found[-1]  # the last line is the whole run's summary
    n, rps = int(m.group(1)), float(m.group(2))
    return {"seconds": n / rps, "records": n, "bytes": n * size, "avg_ms": float(m.group(4)),
            "p50_ms": float(m.group(6)), "p99_ms": float(m.group(8)), "p999_ms": float(m.group(9))}


def consumer_perf(bootstrap: str, topic: str, count: int, timeout: float = 900) -> dict:
    args = ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(count), "--timeout", "60000",
            "--group", f"perf-{topic}", "--hide-header"]
    text = _run(_java(kr.tool_class("kafka-consumer-perf-test"), args), timeout)
    # start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
    # rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    rows = [line.split(",") for line in text.splitlines() if line.count(",") >= 9]
    if not rows:
        raise RuntimeError(f"no result from ConsumerPerformance: {text[-300:]}")
    f = [x.strip() for x in rows[-1]]
    mb, n, fetch_ms = float(f[2]), int(f[4]), float(f[7])
    if n < count:
        raise RuntimeError(f"ConsumerPerformance read {n} of {count}")
    return {"seconds": fetch_ms / 1000, "records": n, "bytes": int(mb * 1024 * 1024),
            "rebalance_ms": float(f[6])}


def java_consume(bootstrap: str, topic: str, count: int, props: tuple[str, ...] = (), timeout: float = 900) -> dict:
    text = _run(_java("ConsumeBench", [bootstrap, topic, str(count), *props], (classes_dir(),)), timeout)
    return json.loads(text.strip().splitlines()[-1])
