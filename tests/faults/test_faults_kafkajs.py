"""kafkajs through a delayed Metadata (issue 32): the broker holds the answer past the client's
request timeout; kafkajs reports the timeout, retries, and every record is stored once, in order.
(tests/js/delayed_metadata.js; `npm ci` in tests/js installs kafkajs.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

JS = Path(__file__).resolve().parent.parent / "js"

# `make test` installs kafkajs; a bare pytest run without it skips, but CI (CI=true) must not.
pytestmark = pytest.mark.skipif(
    not os.environ.get("CI") and (shutil.which("node") is None or not (JS / "node_modules" / "kafkajs").is_dir()),
    reason="needs node and `npm ci` in tests/js (make test does it)")


def test_kafkajs_through_a_delayed_metadata(faults_broker):
    b = faults_broker
    t = b.create_topic(f"faults-js-{uuid.uuid4().hex[:8]}")
    # the first Metadata after the connection's ApiVersions is held for 1.5 s; kafkajs gives up on
    # it after 1 s, and its retry waits behind the held one (answers leave in order)
    with b.faults.inject("Metadata", delay_ms=1500, client_id="kafkajs-delayed-metadata") as f:
        done = subprocess.run(["node", str(JS / "delayed_metadata.js"), b.bootstrap, t, "20", "1000"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert f.fired == 1
    assert result["sent"] == 20 and result["timeouts"] >= 1, result
    assert [int(v) for v in b.values(t)] == list(range(20))
