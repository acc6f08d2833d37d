"""bench/startup.py runs and measures what it says (one run; loose bounds: the machine is shared,
so this catches a start path that got an order of magnitude slower, not a few milliseconds)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_startup_bench_measures_both_starts():
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "startup.py"), "--runs", "1", "--json"],
                       capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert 0 < result["in_process_first_start_ms"] < 100  # target 10 ms
    assert 0 < result["in_process_second_start_ms"] < 100
    assert 0 < result["cli_listening_ms"] <= result["cli_api_versions_ms"] < 5000  # target 300 ms
    assert result["bytecode_cache"] is True
