"""kafkajs's idempotent producer through the dropping proxy: 10 000 records over four
partitions, each stored once and in order (tests/js/idempotent_producer.js; `npm ci` in
tests/js installs kafkajs from its package-lock.json)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.idempotence_helpers import (
    PARTITIONS,
    RECORDS,
    TOPIC,
    check_stored,
    plan,
    proxied_broker,
)

JS = Path(__file__).resolve().parent.parent / "js"

# `make test` installs kafkajs; a bare pytest run without it skips, but CI (CI=true) must not.
pytestmark = pytest.mark.skipif(
    not os.environ.get("CI") and (shutil.which("node") is None or not (JS / "node_modules" / "kafkajs").is_dir()),
    reason="needs node and `npm ci` in tests/js (make test does it)")


def test_kafkajs_idempotent_producer_with_dropped_connections(tmp_path):
    with proxied_broker(tmp_path / "data") as (b, proxy):
        run_kafkajs(b, proxy)


def run_kafkajs(b, proxy) -> None:
    done = subprocess.run(["node", str(JS / "idempotent_producer.js"), proxy.bootstrap, TOPIC, str(PARTITIONS),
                           str(RECORDS)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"sent": RECORDS}
    check_stored(b, proxy, [(p, k, v) for p, k, v in plan()])
