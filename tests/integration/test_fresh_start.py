"""A first start on a fresh data directory is quiet (issue 31): no warning, no error; the
directory is created (and locked) before anything is written into it."""

from __future__ import annotations

import time


def test_a_fresh_data_dir_starts_without_a_warning(kafka_broker_process):
    broker = kafka_broker_process()
    assert not broker.data_dir.exists()
    broker.start()  # listening (bound before the broker is built)
    deadline = time.monotonic() + 30
    while "minibroker node" not in broker.log_text() and time.monotonic() < deadline:
        time.sleep(0.05)  # built and serving: SIGTERM now stops it cleanly
    assert broker.stop() == 0
    log = broker.log_text()
    assert "minibroker node" in log  # it did start
    assert " WARNING " not in log and " ERROR " not in log, log
    assert (broker.data_dir / "broker-config-overrides.json").is_file()
