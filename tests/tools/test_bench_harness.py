"""bench/run.py (the three-broker bench) runs end to end, against minibroker alone and briefly, and
its table and the parse of Kafka's ProducerPerformance summary say what they should. Not a timed
test: nothing here asserts a speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import javabench  # noqa: E402
import run as bench_run  # noqa: E402


def test_bench_runs_a_produce_and_a_consume_and_keeps_raw_results(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    r = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--brokers", "minibroker", "--rounds", "1",
         "--small", "2000", "--large", "20", "--results", str(out),
         "--only", "confluent-kafka produce 2e+03 x 100 B, acks=1;confluent-kafka consume 2e+03 x 100 B"],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    log = json.loads(out.read_text())["log"]
    by_name = {row["scenario"]: row for row in log}
    assert set(by_name) == {"confluent-kafka produce 2e+03 x 100 B, acks=1",
                            "confluent-kafka produce 2e+03 x 100 B, acks=1, lz4",
                            "confluent-kafka consume 2e+03 x 100 B"}
    for row in log:
        assert "failed" not in row, row
        assert row["records"] == 2000 and row["bytes"] == 200_000 and row["seconds"] > 0
        assert row["cpu_s"] >= 0 and row["rss_mb"] > 0 and row["fds"] > 0
    assert "| confluent-kafka consume 2e+03 x 100 B | " in r.stdout


def test_table_gives_ratios_against_each_peer() -> None:
    def row(broker: str, mb: float) -> dict:
        return {"broker": broker, "round": 0, "scenario": "s", "load1": 1.0, "seconds": 1.0, "records": 10,
                "bytes": int(mb * 1e6), "cpu_s": 0.5, "rss_mb": 40.0}

    doc = {"date": "d", "cores": 2, "brokers": ["minibroker", "kafka", "tansu"],
           "log": [row("minibroker", 100), row("kafka", 50), row("tansu", 200)]}
    assert bench_run.table(doc).splitlines()[-1].endswith("| 2.00x | 0.50x |")


def test_producer_performance_summary_is_parsed() -> None:
    line = ("1000000 records sent, 500000.0 records/sec (47.68 MB/sec), 3.10 ms avg latency, 90.00 ms max "
            "latency, 2 ms 50th, 7 ms 95th, 12 ms 99th, 40 ms 99.9th.")
    m = javabench._PERF_LINE.search(line)
    assert m is not None and (m.group(1), m.group(2), m.group(6), m.group(8), m.group(9)) == (
        "1000000", "500000.0", "2", "12", "40")
