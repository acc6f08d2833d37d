"""Run the same scenarios against minibroker, Apache Kafka and Tansu, in the same run.

    .venv/bin/python bench/run.py [--rounds 5] [--small 1000000] [--large 20000]
                                  [--brokers minibroker,kafka,tansu] [--only "SUBSTRING;..."]

All brokers run at once (bench/brokers.py). Each round goes through the scenario list, and each
scenario runs against every broker back to back, the order rotating from round to round, so that
whatever else loads the machine loads every broker alike. Every produce gets a fresh topic; the
consumes after it read that topic. Clients run in their own processes: Kafka's ProducerPerformance
and ConsumerPerformance and a Java consumer (bench/javabench.py), confluent-kafka
(bench/clients.py) and kcat.

Printed: the medians per scenario and broker (MB/s and records/s; broker CPU seconds per GB moved;
the broker's peak RSS during the scenario), and the ratios minibroker/kafka and minibroker/tansu
(> 1 means minibroker is faster; for latency, the peer's p50 over ours). Every single
measurement goes to bench/results/run-<time>.json (`--results`), with the machine's load.
`--table FILE.json` prints the table of an earlier run again. `--cpu-hog N` runs N processes that
spin for the whole run (one core each): a busy laptop or CI box beside the brokers and clients
(issue 33 asks for every latency ratio with one such hog as well as on a quiet machine).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import javabench
from brokers import PY, ROOT, Kafka, Minibroker, Tansu, cpu_seconds, open_files, peak_rss_mb, reset_peak_rss

# bench/tls.py imports these from here
from brokers import free_port as free_port
from brokers import wait_port as wait_port

RESULTS = ROOT / "bench" / "results"


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=30).values():
        fut.result(30)


def delete_topics(bootstrap: str, topics: list[str]) -> None:
    from confluent_kafka.admin import AdminClient

    if not topics:
        return
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.delete_topics(topics, operation_timeout=60).values():
        try:
            fut.result(60)
        except Exception as e:  # a broker that cannot delete keeps the data: only memory grows
            print(f"  delete failed: {e}", file=sys.stderr)


def py_client(*args: str) -> dict:
    out = subprocess.run([PY, str(ROOT / "bench" / "clients.py"), *args], capture_output=True, text=True,
                         timeout=900)
    if out.returncode:
        raise RuntimeError(out.stderr.strip()[-500:])
    return json.loads(out.stdout)


client = py_client  # the name bench/loops.py and bench/raw_fetch.py import


def py_clients_in_parallel(n: int, *args: str) -> dict:
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


@dataclass
class Scenario:
    name: str
    topic: str  # scenarios with the same topic key share the topic; a produce makes a fresh one
    fresh: bool  # True: make a fresh topic (a produce); False: read the last one of that key
    partitions: int
    run: Callable[[str, str], dict]  # (bootstrap, topic) -> result
    latency: bool = False


def scenarios(small: int, large: int) -> list[Scenario]:
    s, lg = small, large
    pc = py_client
    return [
        # Kafka's own tools and the Java consumer
        Scenario(f"ProducerPerformance {s:.0e} x 100 B, acks=1", "jsmall", True, 1,
                 lambda b, t: javabench.producer_perf(b, t, s, 100, "1")),
        Scenario(f"Java consumer {s:.0e} x 100 B", "jsmall", False, 1,
                 lambda b, t: javabench.java_consume(b, t, s)),
        Scenario(f"ConsumerPerformance {s:.0e} x 100 B", "jsmall", False, 1,
                 lambda b, t: javabench.consumer_perf(b, t, s)),
        Scenario(f"ProducerPerformance {s:.0e} x 100 B, acks=all, zstd", "jzstd", True, 1,
                 lambda b, t: javabench.producer_perf(b, t, s, 100, "all", "zstd")),
        Scenario(f"ProducerPerformance {s:.0e} x 100 B, acks=1, 32 partitions", "j32", True, 32,
                 lambda b, t: javabench.producer_perf(b, t, s, 100, "1")),
        Scenario(f"Java consumer {s:.0e} x 100 B, 32 partitions", "j32", False, 32,
                 lambda b, t: javabench.java_consume(b, t, s)),
        Scenario(f"ProducerPerformance {lg:.0e} x 10 KiB, acks=1", "jlarge", True, 1,
                 lambda b, t: javabench.producer_perf(b, t, lg, 10240, "1")),
        Scenario(f"Java consumer {lg:.0e} x 10 KiB", "jlarge", False, 1,
                 lambda b, t: javabench.java_consume(b, t, lg)),
        Scenario(f"ConsumerPerformance {lg:.0e} x 10 KiB", "jlarge", False, 1,
                 lambda b, t: javabench.consumer_perf(b, t, lg)),
        # confluent-kafka (librdkafka under a Python loop) and kcat
        Scenario(f"confluent-kafka produce {s:.0e} x 100 B, acks=1", "small", True, 1,
                 lambda b, t: pc("produce", b, t, str(s), "100", "--acks", "1")),
        Scenario(f"confluent-kafka consume {s:.0e} x 100 B", "small", False, 1,
                 lambda b, t: pc("consume", b, t, str(s))),
        Scenario(f"confluent-kafka produce {s:.0e} x 100 B, acks=all", "small-all", True, 1,
                 lambda b, t: pc("produce", b, t, str(s), "100", "--acks", "all")),
        Scenario(f"confluent-kafka produce {s:.0e} x 100 B, acks=1, lz4", "small-lz4", True, 1,
                 lambda b, t: pc("produce", b, t, str(s), "100", "--acks", "1", "--compression", "lz4")),
        Scenario(f"confluent-kafka produce {s:.0e} x 100 B, acks=all, zstd", "small-zstd", True, 1,
                 lambda b, t: pc("produce", b, t, str(s), "100", "--acks", "all", "--compression", "zstd")),
        Scenario(f"confluent-kafka produce {lg:.0e} x 10 KiB, acks=1", "large", True, 1,
                 lambda b, t: pc("produce", b, t, str(lg), "10240", "--acks", "1")),
        Scenario(f"confluent-kafka consume {lg:.0e} x 10 KiB", "large", False, 1,
                 lambda b, t: pc("consume", b, t, str(lg))),
        Scenario(f"kcat consume {lg:.0e} x 10 KiB (whole process)", "large", False, 1,
                 lambda b, t: pc("kcat-consume", b, t, str(lg))),
        Scenario(f"8 confluent-kafka producers x {s // 8:.0e} x 100 B, 32 partitions", "multi", True, 32,
                 lambda b, t: py_clients_in_parallel(8, "produce", b, t, str(s // 8), "100")),
        Scenario("produce-ack latency, 1 x 100 B at a time, acks=all (confluent-kafka)", "latency", True, 1,
                 lambda b, t: pc("latency", b, t, "2000", "100"), latency=True),
        Scenario("end-to-end latency produce -> consume, 1 x 100 B at a time (confluent-kafka)", "e2e", True, 1,
                 lambda b, t: pc("e2e", b, t, "1000", "100"), latency=True),
    ]


def select(every: list[Scenario], only: str) -> list[Scenario]:
    """The scenarios named by --only, with the producing scenario each chosen consumer reads from.

    A consume scenario (fresh=False) reads the topic an earlier producing scenario of the same
    topic key filled; chosen alone it would find the topic empty ("consumed only 0 of ...")."""
    if not only:
        return every
    wanted = {i for i, sc in enumerate(every) if any(o.strip().lower() in sc.name.lower() for o in only.split(";"))}
    for i in sorted(wanted):
        sc = every[i]
        if not sc.fresh and not any(every[j].fresh and every[j].topic == sc.topic for j in wanted if j < i):
            fill = next((j for j in range(i) if every[j].fresh and every[j].topic == sc.topic), None)
            if fill is not None:
                wanted.add(fill)
    return [sc for i, sc in enumerate(every) if i in wanted]


def run(brokers: dict[str, object], rounds: int, todo: list[Scenario], log: list[dict]) -> None:
    bootstraps = {name: b.start() for name, b in brokers.items()}  # type: ignore[attr-defined]
    print(f"brokers: {bootstraps}", file=sys.stderr)
    names = list(brokers)
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        topics: dict[tuple[str, str], str] = {}
        for sc in todo:
            for name in order:
                b, boot = brokers[name], bootstraps[name]
                key = (name, sc.topic)
                if sc.fresh or key not in topics:
                    topics[key] = f"bench-{sc.topic}-{r}-{time.time_ns()}"
                    create_topic(boot, topics[key], sc.partitions)
                pid = b.pid  # type: ignore[attr-defined]
                cpu0 = cpu_seconds(pid)
                reset_peak_rss(pid)
                row = {"broker": name, "round": r, "scenario": sc.name, "load1": os.getloadavg()[0]}
                try:
                    res = sc.run(boot, topics[key])
                except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
                    # a broker that cannot serve a client is a result too (Tansu and kcat's librdkafka)
                    print(f"  {name} r{r + 1}: {sc.name}: FAILED: {str(e)[-300:]}", file=sys.stderr)
                    log.append(row | {"failed": str(e)[-300:]})
                    continue
                res |= {"cpu_s": cpu_seconds(pid) - cpu0, "rss_mb": peak_rss_mb(pid), "fds": open_files(pid)}
                log.append(row | res)
                print(f"  {name} r{r + 1}: {sc.name}: {fmt(res)}", file=sys.stderr)
        for name in names:  # bound Tansu's memory: it keeps every topic in RAM
            delete_topics(bootstraps[name], [t for (n, _), t in topics.items() if n == name])


def fmt(res: dict) -> str:
    if "bytes" in res and "seconds" in res:
        mbps = res["bytes"] / res["seconds"] / 1e6
        return f"{res['records'] / res['seconds']:,.0f} rec/s, {mbps:.1f} MB/s, broker cpu {res['cpu_s']:.2f} s"
    return f"p50 {res['p50_ms']:.2f} ms, p99 {res['p99_ms']:.2f} ms, p99.9 {res['p999_ms']:.2f} ms"


def table(doc: dict) -> str:
    log, names = doc["log"], doc["brokers"]
    order: list[str] = []
    for row in log:
        if row["scenario"] not in order:
            order.append(row["scenario"])
    peers = [n for n in names if n != "minibroker"] if "minibroker" in names else []
    head = "| scenario | " + " | ".join(names) + "".join(f" | minibroker/{p}" for p in peers) + " |"
    lines = [head, "|---" * (len(names) + len(peers) + 1) + "|"]
    for sc in order:
        cells, vals = [], {}
        for n in names:
            rows = [r for r in log if r["scenario"] == sc and r["broker"] == n and "failed" not in r]
            if not rows:
                cells.append("fails" if any(r["scenario"] == sc and r["broker"] == n for r in log) else "-")
                continue
            med = statistics.median
            if "p50_ms" in rows[0] and "bytes" not in rows[0]:
                v = med(r["p50_ms"] for r in rows)
                cells.append(f"p50 {v:.2f} / p99 {med(r['p99_ms'] for r in rows):.2f} / "
                             f"p99.9 {med(r['p999_ms'] for r in rows):.2f} ms")
                vals[n] = 1 / v if v else 0.0
            else:
                mbps = med(r["bytes"] / r["seconds"] / 1e6 for r in rows)
                rps = med(r["records"] / r["seconds"] for r in rows)
                cpu_gb = med(r["cpu_s"] / (r["bytes"] / 1e9) for r in rows)
                rss = max(r["rss_mb"] for r in rows)
                extra = ""
                if "p99_ms" in rows[0]:
                    extra = f", ack p50 {med(r['p50_ms'] for r in rows):.0f} / p99 {med(r['p99_ms'] for r in rows):.0f} ms"
                cells.append(f"{mbps:.1f} MB/s, {rps / 1e3:,.0f} k rec/s (cpu {cpu_gb:.1f} s/GB, rss {rss:.0f} MB{extra})")
                vals[n] = mbps
        ratios = [f"{vals['minibroker'] / vals[p]:.2f}x" if vals.get("minibroker") and vals.get(p) else "-"
                  for p in peers]
        lines.append(f"| {sc} | " + " | ".join(cells + ratios) + " |")
    rounds = {r["round"] for r in log}
    loads = [r["load1"] for r in log]
    hog = f", {doc['cpu_hogs']} CPU hog(s) beside the brokers" if doc.get("cpu_hogs") else ""
    return (f"{doc['date']}, {doc['cores']} cores, {len(rounds)} rounds (medians){hog}, load average "
            f"{min(loads):.1f}-{max(loads):.1f} during the run\n\n" + "\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--small", type=int, default=1_000_000)
    ap.add_argument("--large", type=int, default=20_000)
    ap.add_argument("--brokers", default="minibroker,kafka,tansu")
    ap.add_argument("--only", default="", help="substrings of scenario names, separated by ;")
    ap.add_argument("--loop", default="uvloop", choices=["uvloop", "asyncio"])
    ap.add_argument("--mb-override", action="append", default=[], help="minibroker --override KEY=VALUE")
    ap.add_argument("--java-clients", default="3.9", choices=["3.9", "4.4"],
                    help="kafka-clients the Java tools run with (Tansu 0.6 cannot serve 4.x)")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="also run the minibroker of another checkout (e.g. /work/main) as 'baseline'")
    ap.add_argument("--cpu-hog", type=int, default=0, metavar="N",
                    help="N processes spinning on the CPU beside the brokers for the whole run")
    ap.add_argument("--results", type=Path, default=None)
    ap.add_argument("--table", type=Path, default=None, help="print the table of an earlier run's JSON")
    a = ap.parse_args()
    if a.table:
        print(table(json.loads(a.table.read_text())))
        return
    javabench.CLIENTS = a.java_clients
    makers = {"minibroker": lambda: Minibroker(a.loop, tuple(a.mb_override)), "kafka": Kafka, "tansu": Tansu,
              "baseline": lambda: Minibroker(a.loop, tuple(a.mb_override), cwd=a.baseline, name="baseline")}
    names = a.brokers.split(",") + (["baseline"] if a.baseline else [])
    brokers = {n: makers[n]() for n in names}
    todo = select(scenarios(a.small, a.large), a.only)
    if any("Java consumer" in sc.name for sc in todo):
        javabench.classes_dir()  # compile before the clock matters
    doc = {"date": time.strftime("%Y-%m-%d %H:%M"), "cores": os.cpu_count(), "brokers": list(brokers),
           "java_clients": a.java_clients,
           "argv": sys.argv[1:], "cpu_hogs": a.cpu_hog, "log": []}
    # a SIGTERM (timeout, kill) still stops the brokers: the JVM runs in its own session
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = a.results or RESULTS / f"run-{time.strftime('%Y%m%d-%H%M%S')}.json"
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.cpu_hog)]
    try:
        run(brokers, a.rounds, todo, doc["log"])
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        for b in brokers.values():
            b.stop()  # type: ignore[attr-defined]
        out.write_text(json.dumps(doc, indent=1))
        print(f"raw results: {out}", file=sys.stderr)
    print(table(doc))


if __name__ == "__main__":
    main()
