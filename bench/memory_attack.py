"""The broker's resident memory under the memory attack of issue 24: N connections each claiming a
100 MB request and sending its body as fast as the broker reads.

    .venv/bin/python bench/memory_attack.py [--connections 300] [--seconds 10] [--override k=v ...]
    .venv/bin/python bench/memory_attack.py --issue30 --baseline /work/before [--only 1,2,9,3,5]

The second form runs issue 30's attacks (bench/issue30_attacks.py) against this checkout and the
baseline in one run and records what each cost (bench/results/issue30-attacks.json).

Starts `python -m minibroker` from this checkout as a child, attacks it over 127.0.0.1, prints the
child's RSS every half second (MB) and the bytes the attackers got in, then stops it. Run it on
main and on a branch to compare.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers import BrokerProcess  # noqa: E402
from tests.integration.limits_helpers import MemoryAttack, raise_fd_limit, rss_mb  # noqa: E402


def main() -> None:
    if "--issue30" in sys.argv:
        from bench.issue30_attacks import main as issue30  # lazy: the other bench's imports

        issue30([a for a in sys.argv[1:] if a != "--issue30"])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--connections", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--max-rss-mb", type=float, default=8000, help="stop the attack above this (protect the host)")
    ap.add_argument("--override", action="append", default=[])
    args = ap.parse_args()
    raise_fd_limit(args.connections + 1000)
    overrides = dict(o.split("=", 1) for o in args.override)
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp) / "data", overrides=overrides)
        broker.start()
        assert broker.proc is not None
        pid = broker.proc.pid
        print(f"t=0.0s rss={rss_mb(pid):.0f}MB (before)")
        attack = MemoryAttack(broker.bootstrap, args.connections)
        attack.start()
        t0 = time.monotonic()
        peak = 0.0
        try:
            while (elapsed := time.monotonic() - t0) < args.seconds:
                time.sleep(0.5)
                rss = rss_mb(pid)
                peak = max(peak, rss)
                print(f"t={elapsed + 0.5:.1f}s rss={rss:.0f}MB sent={attack.bytes_sent / 1e6:.0f}MB "
                      f"closed={len(attack.closed_by_broker)}", flush=True)
                if rss > args.max_rss_mb:
                    print("stopping: over --max-rss-mb")
                    break
        finally:
            attack.stop()
            print(f"peak rss={peak:.0f}MB")
            broker.kill()
            lines = broker.log_text().splitlines()
            print(f"broker log: {len(lines)} lines, last ones:", *lines[-8:], sep="\n  ")


if __name__ == "__main__":
    main()
