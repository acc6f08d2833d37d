"""Three-broker clusters side by side (issue 29): a minibroker cluster (`python -m minibroker
cluster`, minibroker.testing.Cluster) and Apache Kafka 4.4's (reference/kafka_cluster.py: one
controller, three brokers), started in the same run with the same timing keys
(cluster_testing.TEST_OVERRIDES: a dead broker fenced after 3 s).

Per round, against each cluster in turn (the order alternating per round, so load hits both alike):
- produce: Kafka's ProducerPerformance (bench/javabench.py), acks=all, to a new topic of one
  partition, RF 3, min.insync.replicas 2: records/s, MB/s, latency p50 / p99; the CPU seconds all
  the cluster's processes (brokers and controller) spent per GB produced (from /proc/PID/stat),
  and the cluster's RSS at its peak during the produce (all its processes summed, sampled every
  100 ms);
- failover: a warmed confluent-kafka producer (acks=all, idempotent) on a new RF 3 topic; the
  partition's leader killed with SIGKILL and one record produced at once: the time from the kill
  to that record's acknowledgement (fencing after the session timeout + election + the client's
  metadata refresh). The broker is started again and the ISR waited for before the next step.

Medians over the rounds and the ratios minibroker / Kafka; every measurement in the JSON.

    .venv/bin/python bench/cluster_bench.py --rounds 3 --records 200000 --results bench/results/cluster-bench.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

if __package__ in (None, ""):  # run as a script: the checkout's root on the path (bench/ is already)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import javabench  # noqa: E402

from minibroker.cluster_testing import ClusterOps  # noqa: E402
from minibroker.testing import Cluster  # noqa: E402
from reference.kafka_cluster import KafkaCluster  # noqa: E402


def new_topic(c: ClusterOps, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(name, 1, 3, config={"min.insync.replicas": "2"})])[name].result(120)
    c.wait_for_isr(name, 0, [1, 2, 3], timeout=120)
    return name


def cluster_pids(c: ClusterOps) -> list[int]:
    """Every process of the cluster now: the brokers and the controller."""
    if isinstance(c, KafkaCluster):
        nodes = [c.controller, *c.brokers.values()]
        return [n.proc.pid for n in nodes if n.proc is not None and n.proc.poll() is None]
    assert isinstance(c, Cluster)
    doc = json.loads((c.root / "cluster.json").read_text())
    return [p for p in [c.pid(n) for n in c.brokers] + [doc["controller"]["pid"]] if p is not None]


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
    return total / os.sysconf("SC_CLK_TCK")


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/status") as f:
            total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return total / 1024


def produce_round(c: ClusterOps, records: int, size: int) -> dict[str, float]:
    topic = new_topic(c, "perf")
    pids = cluster_pids(c)
    peak = [rss_mb(pids)]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.1):
            peak[0] = max(peak[0], rss_mb(pids))

    sampler = threading.Thread(target=sample, daemon=True)
    cpu0 = cpu_seconds(pids)
    sampler.start()
    try:
        r = javabench.producer_perf(c.bootstrap, topic, records, size, acks="all")
    finally:
        done.set()
        sampler.join()
    cpu = cpu_seconds(pids) - cpu0
    return {"records_per_s": r["records"] / r["seconds"], "mb_per_s": r["bytes"] / r["seconds"] / 1e6,
            "p50_ms": r["p50_ms"], "p99_ms": r["p99_ms"], "cpu_s_per_gb": cpu / (r["bytes"] / 1e9),
            "peak_rss_mb": peak[0]}


def failover_round(c: ClusterOps) -> float:
    topic = new_topic(c, "failover")
    acked: list[float] = []
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": True,
                  "message.timeout.ms": 120000, "linger.ms": 0})
    p.produce(topic, b"warm", partition=0)
    assert p.flush(60) == 0
    leader = c.leader(topic)
    killed = time.monotonic()
    c.stop_broker(leader, kill=True)
    p.produce(topic, b"after", partition=0,
              on_delivery=lambda err, m: acked.append(time.monotonic()) if err is None else None)
    remaining = p.flush(150)
    if remaining or not acked:
        raise RuntimeError(f"no acknowledgement after the kill of broker {leader}")
    took = acked[0] - killed
    c.start_broker(leader)
    c.wait_for_isr(topic, 0, [1, 2, 3], timeout=180)
    return took


def median_of(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--results", type=Path, default=None)
    args = ap.parse_args()
    clusters: dict[str, ClusterOps] = {"minibroker": Cluster(3), "kafka": KafkaCluster(3)}
    out: dict[str, object] = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                              "args": vars(args) | {"results": str(args.results)}, "rounds": []}
    produce: dict[str, list[dict[str, float]]] = {k: [] for k in clusters}
    failover: dict[str, list[float]] = {k: [] for k in clusters}
    try:
        for name, c in clusters.items():
            t0 = time.monotonic()
            c.start()  # type: ignore[attr-defined]
            out[f"{name}_start_s"] = round(time.monotonic() - t0, 1)
        for i in range(args.rounds):
            order = list(clusters) if i % 2 == 0 else list(reversed(clusters))
            for name in order:
                c = clusters[name]
                row = {"round": i, "cluster": name, "load": os.getloadavg()[0]}
                pr = produce_round(c, args.records, args.size)
                fo = failover_round(c)
                produce[name].append(pr)
                failover[name].append(fo)
                row |= pr | {"failover_s": fo}
                out["rounds"].append(row)  # type: ignore[attr-defined]
                print(json.dumps(row), flush=True)
    finally:
        for c in clusters.values():
            c.stop()  # type: ignore[attr-defined]
    summary: dict[str, dict[str, float]] = {}
    for name in clusters:
        summary[name] = {k: median_of(produce[name], k) for k in ("records_per_s", "mb_per_s", "p50_ms", "p99_ms",
                                                                 "cpu_s_per_gb", "peak_rss_mb")}
        summary[name]["failover_s"] = statistics.median(failover[name])
    summary["ratio_minibroker_over_kafka"] = {
        k: summary["minibroker"][k] / summary["kafka"][k] if summary["kafka"][k] else float("nan")
        for k in summary["minibroker"]}
    out["medians"] = summary
    print(json.dumps(summary, indent=2))
    if args.results is not None:
        args.results.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
