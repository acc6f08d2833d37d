"""The quixstreams application of tests/integration/test_quixstreams.py (a windowed sum, exactly once) and
its expected windows, run by that test and by tests/reference/test_stream_apps_reference.py."""


from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from filelock import FileLock
from kafka import KafkaConsumer, KafkaProducer

from tests.integration.helpers import unique

VERSION = "3.28.1"
APP = '''
import os
from datetime import timedelta

from quixstreams import Application

app = Application(broker_address=os.environ["BOOTSTRAP"], consumer_group=os.environ["GROUP"],
                  auto_offset_reset="earliest", processing_guarantee="exactly-once",
                  state_dir=os.environ["STATE_DIR"])
readings = app.topic(os.environ["IN_TOPIC"], value_deserializer="json")
sums = app.topic(os.environ["OUT_TOPIC"], value_serializer="json")

sdf = app.dataframe(readings)
sdf = sdf.apply(lambda reading: reading["amount"])
sdf = sdf.tumbling_window(duration_ms=timedelta(seconds=10)).sum().final()
sdf = sdf.to_topic(sums)

if __name__ == "__main__":
    app.run()
'''
WINDOW_MS = 10_000
T0 = (int(time.time() * 1000) // WINDOW_MS - 100) * WINDOW_MS  # a window boundary, in the recent past
def quix_python() -> Path:
    """The cache virtualenv's python with quixstreams installed (made once)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "minibroker" / f"quixstreams-{VERSION}"
    py = cache / "bin" / "python"
    stamp = cache / ".complete"
    cache.parent.mkdir(parents=True, exist_ok=True)
    # one maker at a time (pytest-xdist workers, or two checkouts' test runs), the others wait for it
    with FileLock(str(cache) + ".lock"):
        if not stamp.exists():
            subprocess.run([sys.executable, "-m", "venv", str(cache)], check=True, timeout=300)
            r = subprocess.run([str(py), "-m", "pip", "install", "-q", f"quixstreams=={VERSION}"],
                               capture_output=True, text=True, timeout=900)
            if r.returncode != 0:
                pytest.skip(f"QUIXSTREAMS UNAVAILABLE: pip failed: {r.stderr[-500:]}")
            stamp.write_text(VERSION)
    return py


def readings() -> list[tuple[bytes, int, dict[str, int]]]:
    """(key, timestamp, value): two sensors over two windows, then one reading each in a later
    window, which closes the first two (`final()` emits a window once stream time passes it)."""
    out = []
    for i in range(12):
        for key in (b"sensor-a", b"sensor-b"):
            out.append((key, T0 + i * 1_500, {"amount": i + (100 if key == b"sensor-b" else 0)}))
    for key in (b"sensor-a", b"sensor-b"):
        out.append((key, T0 + 3 * WINDOW_MS, {"amount": 0}))
    return out


def expected() -> list[tuple[str, int, int, int]]:
    """(key, window start, window end, sum) of every closed window."""
    sums: dict[tuple[str, int], int] = {}
    for key, ts, v in readings()[:-2]:
        start = ts // WINDOW_MS * WINDOW_MS
        sums[(key.decode(), start)] = sums.get((key.decode(), start), 0) + v["amount"]
    return sorted((k, s, s + WINDOW_MS, total) for (k, s), total in sums.items())


def run_windowed_sum(bootstrap: str, tmp_path: Path, in_topic: str, out_topic: str, group: str
                     ) -> list[tuple[str, int, int, int]]:
    """Send the readings, run the documented app until every closed window's sum is out (read
    committed), stop it with SIGTERM; the sums as (key, start, end, sum), sorted."""
    py = quix_python()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for key, ts, value in readings():
        producer.send(in_topic, key=key, value=json.dumps(value).encode(), timestamp_ms=ts)
    producer.flush(30)
    producer.close()

    (tmp_path / "app.py").write_text(APP)
    env = {**os.environ, "BOOTSTRAP": bootstrap, "IN_TOPIC": in_topic, "OUT_TOPIC": out_topic,
           "GROUP": group, "STATE_DIR": str(tmp_path / "state")}
    env.pop("PYTHONPATH", None)
    log = (tmp_path / "app.log").open("w")
    app = subprocess.Popen([str(py), "app.py"], cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        consumer = KafkaConsumer(out_topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                 isolation_level="read_committed", consumer_timeout_ms=1000,
                                 group_id=unique("check"))
        got = []
        want = expected()
        deadline = time.monotonic() + 300
        while len(got) < len(want) and time.monotonic() < deadline:
            assert app.poll() is None, (tmp_path / "app.log").read_text()[-3000:]
            got += [(r.key.decode(), *(lambda v: (v["start"], v["end"], v["value"]))(json.loads(r.value)))
                    for r in consumer]
        consumer.close()
        return sorted(got)
    finally:
        app.send_signal(signal.SIGTERM)
        try:
            app.wait(60)
        except subprocess.TimeoutExpired:
            app.kill()
            app.wait(10)
        log.close()


