"""Run the same scenarios against minibroker and the peer broker (Tansu), in the same run.

    .venv/bin/python bench/run.py [--rounds 3] [--small 1000000] [--large 20000] [--brokers minibroker,tansu]

Each scenario runs in a fresh client process (bench/clients.py, confluent-kafka) against a fresh
topic with one partition; each is repeated --rounds times and the median is printed, with the
ratio minibroker/peer (> 1 means minibroker is faster for throughput). Broker CPU seconds are read
from /proc for the broker's process over each scenario. Tansu is started by
../shared/peers/tansu.sh (in-memory storage, its default); minibroker by `python -m minibroker`
with a data dir under a temp dir (page cache, Kafka's default flush policy).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
TANSU = ROOT.parent / "shared" / "peers" / "tansu.sh"
CLK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {port}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def reset_peak_rss(pid: int) -> None:
    """Reset VmHWM, so that the next reading is this scenario's peak (Linux: clear_refs 5)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        pass  # then the figure is the peak so far


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Minibroker:
    name = "minibroker"

    def __init__(self, loop: str):
        self.dir = Path(tempfile.mkdtemp(prefix="mb-bench-"))
        self.port = free_port()
        self.loop = loop

    def start(self) -> str:
        self.proc = subprocess.Popen(
            [PY, "-m", "minibroker", "--host", "127.0.0.1", "--port", str(self.port), "--data-dir",
             str(self.dir / "data"), "--loop", self.loop, "--log-level", "WARNING",
             "--override", "auto.create.topics.enable=true"],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=open(self.dir / "broker.log", "wb"))
        wait_port(self.port)
        self.pid = self.proc.pid
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        shutil.rmtree(self.dir, ignore_errors=True)


class Tansu:
    name = "tansu"

    def start(self) -> str:
        self.port = free_port()
        out = subprocess.run(["bash", str(TANSU), "start", str(self.port)], capture_output=True, text=True,
                             timeout=300)
        if out.returncode:
            raise RuntimeError(f"tansu did not start: {out.stderr}")
        pidfile = Path(os.environ.get("TANSU_DIR", Path.home() / ".cache/minibroker-peers")) / "tansu.pid"
        self.pid = int(pidfile.read_text())
        return out.stdout.strip()

    def stop(self) -> None:
        subprocess.run(["bash", str(TANSU), "stop"], timeout=60)


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=30).values():
        fut.result(30)


def clients_in_parallel(n: int, *args: str) -> dict:
    """n client processes at once; throughput over the slowest one's time."""
    procs = [subprocess.Popen([PY, str(ROOT / "bench" / "clients.py"), *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(n)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=900)
        if p.returncode:
            raise RuntimeError(err.strip()[-500:])
        results.append(json.loads(out))
    return {"seconds": max(r["seconds"] for r in results), "records": sum(r["records"] for r in results),
            "bytes": sum(r["bytes"] for r in results)}


def client(*args: str) -> dict:
    out = subprocess.run([PY, str(ROOT / "bench" / "clients.py"), *args], capture_output=True, text=True,
                         timeout=900)
    if out.returncode:
        raise RuntimeError(out.stderr.strip()[-500:])
    return json.loads(out.stdout)


def scenarios(small: int, large: int) -> list[tuple[str, list[str], str]]:
    """(name, client args after bootstrap/topic, what the topic holds)."""
    return [
        (f"produce {small:.0e} x 100 B, acks=1", ["produce", "{t}", str(small), "100", "--acks", "1"], "small"),
        (f"consume {small:.0e} x 100 B", ["consume", "{t}", str(small)], "small"),
        (f"produce {small:.0e} x 100 B, acks=all", ["produce", "{t}", str(small), "100", "--acks", "all"],
         "small-all"),
        (f"produce {small:.0e} x 100 B, acks=1, lz4",
         ["produce", "{t}", str(small), "100", "--acks", "1", "--compression", "lz4"], "small-lz4-1"),
        (f"produce {small:.0e} x 100 B, acks=all, lz4",
         ["produce", "{t}", str(small), "100", "--acks", "all", "--compression", "lz4"], "small-lz4"),
        (f"produce {large:.0e} x 10 KiB, acks=1", ["produce", "{t}", str(large), "10240", "--acks", "1"], "large"),
        (f"consume {large:.0e} x 10 KiB", ["consume", "{t}", str(large)], "large"),
        (f"consume {large:.0e} x 10 KiB with kcat (whole process)", ["kcat-consume", "{t}", str(large)], "large"),
        ("produce-ack latency, 1 x 100 B", ["latency", "{t}", "2000", "100"], "latency"),
        (f"8 producers x {small // 8:.0e} x 100 B, 32 partitions", ["multi", "{t}", str(small // 8), "100"],
         "multi"),
    ]


def run_broker(b, rounds: int, small: int, large: int) -> dict[str, list[dict]]:
    bootstrap = b.start()
    results: dict[str, list[dict]] = {}
    try:
        for r in range(rounds):
            topics: dict[str, str] = {}
            for name, args, kind in scenarios(small, large):
                # a consume follows the produce of the same kind: reuse that topic
                if kind not in topics or not args[0].endswith("consume"):
                    topics[kind] = f"bench-{kind}-{r}-{time.time_ns()}"
                    create_topic(bootstrap, topics[kind], 32 if kind == "multi" else 1)
                rest = [a.replace("{t}", topics[kind]) for a in args[1:]]
                cpu0 = cpu_seconds(b.pid)
                reset_peak_rss(b.pid)
                try:
                    if args[0] == "multi":
                        res = clients_in_parallel(8, "produce", bootstrap, *rest)
                    else:
                        res = client(args[0], bootstrap, *rest)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    # A broker that cannot serve a client is a result too (Tansu and kcat's librdkafka).
                    print(f"  {b.name} round {r + 1}: {name}: FAILED: {str(e)[-300:]}", file=sys.stderr)
                    results.setdefault(name, []).append({"failed": True})
                    continue
                res["cpu_s"] = cpu_seconds(b.pid) - cpu0
                res["rss_mb"] = peak_rss_mb(b.pid)
                results.setdefault(name, []).append(res)
                print(f"  {b.name} round {r + 1}: {name}: {fmt(res)}", file=sys.stderr)
        peaks = [r.get("rss_mb", 0.0) for rows in results.values() for r in rows] + [peak_rss_mb(b.pid)]
        results["_peak_rss_mb"] = [{"mb": max(peaks)}]  # VmHWM is reset per scenario
    finally:
        b.stop()
    return results


def fmt(res: dict) -> str:
    if "p50_ms" in res:
        return f"p50 {res['p50_ms']:.2f} ms, p99 {res['p99_ms']:.2f} ms"
    mbps = res["bytes"] / res["seconds"] / 1e6
    return f"{res['records'] / res['seconds']:,.0f} rec/s, {mbps:.1f} MB/s, broker cpu {res.get('cpu_s', 0):.2f} s"


def median(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--small", type=int, default=1_000_000)
    ap.add_argument("--large", type=int, default=20_000)
    ap.add_argument("--brokers", default="minibroker,tansu")
    ap.add_argument("--loop", default="uvloop", choices=["uvloop", "asyncio"])
    a = ap.parse_args()
    brokers = {"minibroker": lambda: Minibroker(a.loop), "tansu": Tansu}
    all_results = {}
    for name in a.brokers.split(","):
        print(f"== {name}", file=sys.stderr)
        all_results[name] = run_broker(brokers[name](), a.rounds, a.small, a.large)
    names = list(all_results)
    print(f"\n{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, medians of {a.rounds}, "
          f"minibroker loop {a.loop}\n")
    print("| scenario | " + " | ".join(names) + (" | minibroker/peer |" if len(names) == 2 else " |"))
    print("|---" * (len(names) + 1 + (len(names) == 2)) + "|")
    for name, _args, _kind in scenarios(a.small, a.large):
        cells = []
        vals = []
        for b in names:
            rows = [r for r in all_results[b].get(name, []) if not r.get("failed")]
            if not rows:
                cells.append("fails")
                vals.append(0.0)
                continue
            if "p50" in name or "latency" in name:
                v = median(rows, "p50_ms")
                cells.append(f"p50 {v:.2f} ms, p99 {median(rows, 'p99_ms'):.2f} ms")
            else:
                v = statistics.median(r["bytes"] / r["seconds"] / 1e6 for r in rows)
                cpu = statistics.median(r["cpu_s"] for r in rows)
                rss = max(r.get("rss_mb", 0) for r in rows)
                cells.append(f"{v:.1f} MB/s (cpu {cpu:.1f} s, rss {rss:.0f} MB)")
            vals.append(v)
        ratio = ""
        if len(vals) == 2 and vals[0] and vals[1]:
            ratio = f" | {(vals[1] / vals[0] if 'latency' in name else vals[0] / vals[1]):.2f}x"
        print(f"| {name} | " + " | ".join(cells) + ratio + " |")
    print("| peak RSS over the whole run | " + " | ".join(f"{all_results[b]['_peak_rss_mb'][0]['mb']:.0f} MB"
                                                     for b in names) + " |")


if __name__ == "__main__":
    main()
