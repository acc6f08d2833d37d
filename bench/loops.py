"""uvloop or the standard loop? Small-request latency and 10 KiB consume on each, same run.

    .venv/bin/python bench/loops.py [--rounds 3]

Both loops run the same connection code (add_reader/add_writer + os.sendfile), so this measures
only the loops themselves. Prints medians per loop.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import Minibroker, client, cpu_seconds, create_topic  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--large", type=int, default=20_000)
    ap.add_argument("--small", type=int, default=300_000)
    a = ap.parse_args()
    rows: dict[str, dict[str, list[float]]] = {}
    for r in range(a.rounds):
        for loop in ("uvloop", "asyncio"):
            b = Minibroker(loop)
            boot = b.start()
            res = rows.setdefault(loop, {})
            try:
                t = f"lat-{time.time_ns()}"
                create_topic(boot, t)
                lat = client("latency", boot, t, "2000", "100")
                res.setdefault("p50_ms", []).append(lat["p50_ms"])
                res.setdefault("p99_ms", []).append(lat["p99_ms"])
                t = f"small-{time.time_ns()}"
                create_topic(boot, t)
                cpu0 = cpu_seconds(b.pid)
                p = client("produce", boot, t, str(a.small), "100")
                res.setdefault("produce_100B_MBps", []).append(p["bytes"] / p["seconds"] / 1e6)
                res.setdefault("produce_100B_cpu_s", []).append(cpu_seconds(b.pid) - cpu0)
                t = f"large-{time.time_ns()}"
                create_topic(boot, t)
                client("produce", boot, t, str(a.large), "10240")
                cpu0 = cpu_seconds(b.pid)
                c = client("consume", boot, t, str(a.large))
                res.setdefault("consume_10KiB_MBps", []).append(c["bytes"] / c["seconds"] / 1e6)
                res.setdefault("consume_10KiB_cpu_s", []).append(cpu_seconds(b.pid) - cpu0)
            finally:
                b.stop()
            print(f"round {r + 1} {loop}: " + ", ".join(f"{k} {v[-1]:.2f}" for k, v in res.items()),
                  file=sys.stderr)
    keys = list(next(iter(rows.values())))
    print("| loop | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for loop, res in rows.items():
        print(f"| {loop} | " + " | ".join(f"{statistics.median(res[k]):.2f}" for k in keys) + " |")


if __name__ == "__main__":
    main()
