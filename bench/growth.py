"""How cost grows with the work: curves, not single points, for minibroker beside Kafka (and Tansu).

    .venv/bin/python bench/growth.py [--what partitions,connections,topics,restart]
                                     [--brokers minibroker,kafka,tansu] [--plot]

* partitions: one topic of 1 -> 10 -> 100 -> 1,000 partitions under the same produce load
  (ProducerPerformance, --records x 100 B, acks=1): throughput, broker CPU seconds, RSS and open
  file descriptors after the load.
* connections: 1 -> 100 -> 1,000 producer connections at once (raw Produce v9 requests of one
  100 B record, acks=1, one in flight per connection, --requests in all): requests/s, broker CPU
  per request, peak RSS and RSS per connection.
* topics: 10 -> 100 -> 1,000 -> 10,000 (--max-topics) one-partition topics: the time of the
  CreateTopics requests (1,000 topics each at most) making each step's new topics, of Metadata for
  all topics (median of 5), and the broker's open files.
* restart: retained data 100 MB -> 1 GB -> 10 GB (--sizes, in MB; 1 KiB records, 100 MiB
  segments, one partition): time from the process start until a ListOffsets of that partition
  answers with the full log end offset, first after kill -9 (once the recovery-point checkpoint
  covers the rolled segments; both brokers checkpoint every 5 s here), then after a clean stop,
  for minibroker and Kafka. The rows give the bytes after the recovery point: what recovery checks.

Every figure goes to bench/results/growth-<time>.json; --plot draws bench/growth-<what>.png with
matplotlib (pip install -e '.[bench]'). The brokers run at once and each step alternates them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import javabench
from brokers import (
    ROOT,
    Kafka,
    Minibroker,
    Tansu,
    cpu_seconds,
    kr,
    open_files,
    peak_rss_mb,
    reset_peak_rss,
    rss_mb,
)
from run import create_topic

sys.path.insert(0, str(ROOT))
from minibroker_protocol.apis import metadata, produce  # noqa: E402
from minibroker_protocol.codec import encode  # noqa: E402
from minibroker_protocol.headers import RequestHeader, encode_request_header  # noqa: E402
from minibroker_protocol.records.v2 import Record, build_batch  # noqa: E402

RESULTS = ROOT / "bench" / "results"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# -- partitions ---------------------------------------------------------------------------------------
def partitions(brokers: dict, counts: list[int], records: int) -> list[dict]:
    rows = []
    for n in counts:
        for name, (b, boot) in brokers.items():
            topic = f"growth-p{n}-{time.time_ns()}"
            create_topic(boot, topic, n)
            cpu0 = cpu_seconds(b.pid)
            reset_peak_rss(b.pid)
            res = javabench.producer_perf(boot, topic, records, 100, "1")
            row = {"broker": name, "partitions": n, "mb_s": res["bytes"] / res["seconds"] / 1e6,
                   "cpu_s": cpu_seconds(b.pid) - cpu0, "rss_mb": rss_mb(b.pid), "peak_rss_mb": peak_rss_mb(b.pid),
                   "fds": open_files(b.pid), "p99_ms": res["p99_ms"]}
            rows.append(row)
            log(f"  partitions {row}")
    return rows


# -- connections --------------------------------------------------------------------------------------
def produce_frame(topic: str) -> bytes:
    batch = build_batch([Record(offset_delta=0, key=None, value=b"x" * 100)], base_timestamp=int(time.time() * 1000))
    R = produce.REQUEST
    body = R(transactional_id=None, acks=1, timeout_ms=5_000, topic_data=[R.TopicProduceData(
        name=topic, partition_data=[R.PartitionProduceData(index=0, records=batch)])])
    out = bytearray()
    encode_request_header(out, RequestHeader(produce.API.key, 9, 0, "growth"))
    out += encode(produce.REQUEST, 9, body).to_bytes()
    return struct.pack(">i", len(out)) + bytes(out)


async def _drive(boot: str, frame: bytes, conns: int, per_conn: int) -> float:
    host, port = boot.rsplit(":", 1)
    streams = []
    for _ in range(conns):  # open them all first: the clock measures requests, not connects
        streams.append(await asyncio.open_connection(host, int(port), limit=1 << 20))

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(per_conn):
            writer.write(frame)
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            await reader.readexactly(size)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(r, w) for r, w in streams))
    dt = time.perf_counter() - t0
    for _, w in streams:
        w.close()
    return dt


def connections(brokers: dict, counts: list[int], requests: int) -> list[dict]:
    rows = []
    for n in counts:
        for name, (b, boot) in brokers.items():
            topic = f"growth-c{n}-{time.time_ns()}"
            create_topic(boot, topic, 1)
            per = max(1, requests // n)
            idle = rss_mb(b.pid)
            cpu0 = cpu_seconds(b.pid)
            reset_peak_rss(b.pid)
            dt = asyncio.run(_drive(boot, produce_frame(topic), n, per))
            total = per * n
            row = {"broker": name, "connections": n, "requests": total, "req_s": total / dt,
                   "cpu_us_per_req": (cpu_seconds(b.pid) - cpu0) / total * 1e6, "peak_rss_mb": peak_rss_mb(b.pid),
                   "kb_per_conn": (peak_rss_mb(b.pid) - idle) * 1024 / n}
            rows.append(row)
            log(f"  connections {row}")
    return rows


# -- topics -------------------------------------------------------------------------------------------
def _raw_metadata_ms(boot: str, runs: int = 5) -> float:
    """Median time of a Metadata v9 request for all topics over a plain socket, until the whole
    response is read: the broker's share, without a client library's parsing and caching."""
    R = metadata.REQUEST
    out = bytearray()
    encode_request_header(out, RequestHeader(metadata.API.key, 9, 0, "growth"))
    out += encode(R, 9, R(topics=None, allow_auto_topic_creation=False,
                          include_topic_authorized_operations=False)).to_bytes()
    frame = struct.pack(">i", len(out)) + bytes(out)
    host, port = boot.rsplit(":", 1)
    times = []
    with socket.create_connection((host, int(port)), timeout=60) as s:
        for _ in range(runs):
            t0 = time.perf_counter()
            s.sendall(frame)
            head = b""
            while len(head) < 4:
                head += s.recv(4 - len(head))
            left = struct.unpack(">i", head)[0]
            while left:
                chunk = s.recv(min(left, 1 << 20))
                if not chunk:
                    raise EOFError("broker closed the connection")
                left -= len(chunk)
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def topics(brokers: dict, steps: list[int]) -> list[dict]:
    from confluent_kafka.admin import AdminClient, NewTopic

    rows = []
    made = {name: 0 for name in brokers}
    prefix = f"gt{time.time_ns() % 10**8}"
    for total in steps:
        for name, (_b, boot) in brokers.items():
            admin = AdminClient({"bootstrap.servers": boot})
            new = [NewTopic(f"{prefix}-{i}", 1, 1) for i in range(made[name], total)]
            t0 = time.perf_counter()
            # at most 1,000 topics a request: Kafka's controller refuses a larger batch of metadata
            # records (POLICY_VIOLATION "Unable to perform excessively large batch operation")
            for at in range(0, len(new), 1000):
                futs = admin.create_topics(new[at:at + 1000], operation_timeout=120, request_timeout=300)
                for fut in futs.values():
                    fut.result(300)
            create_s = time.perf_counter() - t0
            made[name] = total
            # Kafka answers CreateTopics once its controller commits, before the broker serves the
            # topics: wait until Metadata lists them all, and report that time too
            listed = len(admin.list_topics(timeout=120).topics)
            while listed < total and time.perf_counter() - t0 < 600:
                time.sleep(0.05)
                listed = len(admin.list_topics(timeout=120).topics)
            visible_s = time.perf_counter() - t0
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                md = admin.list_topics(timeout=120)
                times.append(time.perf_counter() - t0)
            row = {"broker": name, "topics": total, "created": len(new), "create_s": create_s,
                   "create_ms_per_topic": create_s * 1000 / max(1, len(new)),
                   "listed_ms_per_topic": visible_s * 1000 / max(1, len(new)),
                   "metadata_ms": statistics.median(times) * 1000, "listed": len(md.topics),
                   "metadata_raw_ms": _raw_metadata_ms(boot), "fds": open_files(_b.pid)}
            rows.append(row)
            log(f"  topics {row}")
    return rows


# -- restart ------------------------------------------------------------------------------------------
def _served(boot: str, topic: str, end: int, deadline: float) -> None:
    """Until a ListOffsets of the partition answers with `end` (the data is served, not just a port)."""
    from confluent_kafka import Consumer, TopicPartition

    host, port = boot.rsplit(":", 1)
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, int(port)), 0.2).close()
            break
        except OSError:
            time.sleep(0.005)
    c = Consumer({"bootstrap.servers": boot, "group.id": "growth", "socket.connection.setup.timeout.ms": 1000})
    try:
        while time.monotonic() < deadline:
            try:
                _lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=1.0)
                if hi >= end:
                    return
            except Exception:
                pass
            time.sleep(0.01)
    finally:
        c.close()
    raise TimeoutError(f"{topic} not served with end offset {end}")


def _segments(data_dir: Path, topic: str) -> int:
    return len(list((data_dir / f"{topic}-0").glob("*.log")))


def _recovery_point(data_dir: Path, topic: str) -> int | None:
    """The partition's offset in `recovery-point-offset-checkpoint` (the same file in both brokers)."""
    try:
        lines = (data_dir / "recovery-point-offset-checkpoint").read_text().splitlines()
    except FileNotFoundError:
        return None
    for line in lines[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[0] == topic and parts[1] == "0":
            return int(parts[2])
    return None


def _after_recovery_point(data_dir: Path, topic: str, deadline: float) -> tuple[int | None, int]:
    """Wait until the checkpointed recovery point reaches the last segment's base offset (the
    rolled segments are flushed and checkpointed), then return it and the bytes from the segment
    holding it on: what a start after kill -9 must check."""
    part = data_dir / f"{topic}-0"
    bases = sorted(int(p.name[:20]) for p in part.glob("*.log"))
    rp = _recovery_point(data_dir, topic)
    while (rp is None or rp < bases[-1]) and time.monotonic() < deadline:
        time.sleep(0.5)
        rp = _recovery_point(data_dir, topic)
    floor = max((b for b in bases if rp is not None and b <= rp), default=bases[0])
    after = sum((part / f"{b:020d}.log").stat().st_size for b in bases if b >= floor)
    return rp, after


RESTART_OVERRIDES = {"log.flush.offset.checkpoint.interval.ms": 5000}
"""Both brokers checkpoint recovery points every 5 s instead of 60 s, so that the bench need not
wait a minute before each kill -9 for the checkpoint to cover the rolled segments."""


def restart(sizes_mb: list[int], names: list[str]) -> list[dict]:
    rows = []
    for size in sizes_mb:
        records = size * 1000  # 1 KiB records (1,024 B): size MB ~ records KiB
        for name in names:
            root = Path(tempfile.mkdtemp(prefix=f"growth-restart-{name}-"))
            topic = "retained"
            b: Minibroker | Kafka = (
                Minibroker(data_dir=root / "data", overrides=tuple(f"{k}={v}" for k, v in RESTART_OVERRIDES.items()))
                if name == "minibroker" else Kafka(workdir=root, overrides=dict(RESTART_OVERRIDES)))
            boot = b.start()
            data_dir = root / "data"
            from confluent_kafka.admin import AdminClient, NewTopic

            admin = AdminClient({"bootstrap.servers": boot})
            admin.create_topics([NewTopic(topic, 1, 1, config={"segment.bytes": str(100 * 1024 * 1024)})])[
                topic].result(60)
            t0 = time.monotonic()
            javabench.producer_perf(boot, topic, records, 1024, "1")
            log(f"  restart: {name} wrote {size} MB in {time.monotonic() - t0:.0f} s")
            du = sum(f.stat().st_size for f in (data_dir / f"{topic}-0").glob("*.log"))
            # kill -9 first, right after the load (once the checkpoint covers the rolled segments),
            # then a clean stop of the recovered broker
            for how in ("kill -9", "clean"):
                rp, after = _after_recovery_point(data_dir, topic, time.monotonic() + 120)
                if how == "clean":
                    b.stop() if name == "kafka" else b.stop(remove=False)  # type: ignore[call-arg]
                else:
                    b.kill()
                t0 = time.monotonic()
                if name == "kafka":
                    assert isinstance(b, Kafka)
                    b.ref.proc = subprocess.Popen(
                        kr.java_command("kafka.Kafka", [str(root / "server.properties")], heap="1g",
                                        log4j=root / "log4j2.properties"),
                        stdout=open(root / "stdout.log", "ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                        start_new_session=True)
                else:
                    assert isinstance(b, Minibroker)
                    b.start()
                _served(boot, topic, records, time.monotonic() + 600)
                secs = time.monotonic() - t0
                row = {"broker": name, "size_mb": size, "log_bytes": du, "segments": _segments(data_dir, topic),
                       "after": how, "ready_s": secs, "recovery_point": rp,
                       "bytes_after_recovery_point": after if how == "kill -9" else 0}
                rows.append(row)
                log(f"  restart {row}")
            b.stop()
            shutil.rmtree(root, ignore_errors=True)
    return rows


def raise_fd_limit() -> None:
    """Soft limit of open files up to the hard one (the brokers inherit it): 10,000 topics need
    more than the usual soft 1,024 for Kafka and Tansu."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def plot(doc: dict, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    charts = {
        "partitions": ("partitions", [("mb_s", "MB/s"), ("cpu_s", "broker CPU s"), ("rss_mb", "RSS MB"),
                                      ("fds", "open files")]),
        "connections": ("connections", [("req_s", "requests/s"), ("cpu_us_per_req", "CPU us / request"),
                                        ("peak_rss_mb", "peak RSS MB"), ("kb_per_conn", "KB / connection")]),
        "topics": ("topics", [("create_ms_per_topic", "CreateTopics ms / topic"),
                              ("listed_ms_per_topic", "until listed, ms / topic"),
                              ("metadata_ms", "Metadata (all topics) ms"), ("fds", "open files")]),
    }
    for what, (xkey, ys) in charts.items():
        rows = doc.get(what)
        if not rows:
            continue
        fig, axes = plt.subplots(1, len(ys), figsize=(4 * len(ys), 3.4))
        for ax, (ykey, label) in zip(axes, ys, strict=True):
            for name in dict.fromkeys(r["broker"] for r in rows):
                pts = [(r[xkey], r[ykey]) for r in rows if r["broker"] == name]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
            ax.set_xscale("log")
            ax.set_xlabel(xkey)
            ax.set_title(label, fontsize=10)
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=8)
        fig.tight_layout()
        path = out_dir / f"growth-{what}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        made.append(path)
    rows = doc.get("restart")
    if rows:
        fig, ax = plt.subplots(figsize=(5, 3.4))
        for name in dict.fromkeys(r["broker"] for r in rows):
            for how, style in (("clean", "-"), ("kill -9", "--")):
                pts = [(r["log_bytes"] / 1e6, r["ready_s"]) for r in rows if r["broker"] == name and r["after"] == how]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", label=f"{name}, {how}")
        ax.set_xscale("log")
        ax.set_xlabel("retained MB")
        ax.set_title("start until the partition is served, s", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = out_dir / "growth-restart.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        made.append(path)
    return made


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--what", default="partitions,connections,topics,restart")
    ap.add_argument("--brokers", default="minibroker,kafka,tansu")
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--max-topics", type=int, default=1000)
    ap.add_argument("--sizes", default="100,1000", help="retained MB for the restart curve")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="also run the minibroker of another checkout as 'baseline' (before/after)")
    ap.add_argument("--plot", action="store_true")
    ap.add_argument("--replot", type=Path, default=None, help="draw the PNGs of an earlier JSON")
    a = ap.parse_args()
    raise_fd_limit()
    out_dir = ROOT / "bench"
    if a.replot:
        print(plot(json.loads(a.replot.read_text()), out_dir))
        return
    what = a.what.split(",")
    doc: dict = {"date": time.strftime("%Y-%m-%d %H:%M"), "cores": os.cpu_count(), "argv": sys.argv[1:],
                 "load1_start": os.getloadavg()[0]}
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"growth-{time.strftime('%Y%m%d-%H%M%S')}.json"
    names = a.brokers.split(",")
    live = [w for w in what if w != "restart"]
    started: dict = {}
    try:
        if live:
            makers = {"minibroker": Minibroker, "kafka": Kafka, "tansu": Tansu,
                      "baseline": lambda: Minibroker(cwd=a.baseline, name="baseline")}
            for n in names + (["baseline"] if a.baseline else []):
                b = makers[n]()
                started[n] = (b, b.start())
            if "partitions" in live:
                doc["partitions"] = partitions(started, [1, 10, 100, 1000], a.records)
            if "connections" in live:
                doc["connections"] = connections(started, [1, 100, 1000], a.requests)
            if "topics" in live:
                steps = [s for s in (10, 100, 1000, 10000) if s <= a.max_topics]
                doc["topics"] = topics(started, steps)
        for b, _ in started.values():
            b.stop()
        started.clear()
        if "restart" in what:
            doc["restart"] = restart([int(s) for s in a.sizes.split(",")],
                                     [n for n in names if n in ("minibroker", "kafka")])
    finally:
        for b, _ in started.values():
            b.stop()
        doc["load1_end"] = os.getloadavg()[0]
        out.write_text(json.dumps(doc, indent=1))
        log(f"raw results: {out}")
    if a.plot:
        print(plot(doc, out_dir))
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
