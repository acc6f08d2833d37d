"""Kafka's kafka-dump-log --offsets-decoder on minibroker's share-group records (KIP-932), next to ours.

A minibroker of its own holds a share group (confluent-kafka's ShareConsumer) with two members that
then leave, and the group is deleted: the record types 10-15 of __consumer_offsets and their
tombstones. Kafka 4.4's tool reads the files without an error (every record decodes with its
ShareGroup* schema), and `python -m minibroker dump-log` prints the very same stdout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reference import kafka_reference as kr
from tests.reference import share_clients as sc


def _share_group_records(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("dlshare", 2, 1)])["dlshare"].result(30)
    consumers = [sc.consumer(bootstrap, "dlshare-g", "dlshare", 5) for _ in range(2)]
    try:
        end = time.monotonic() + 30
        while time.monotonic() < end:  # long enough for both members to be assigned
            for c in consumers:
                c.poll(0.3)
    finally:
        for c in consumers:
            c.close()
    admin.delete_consumer_groups(["dlshare-g"])["dlshare-g"].result(30)


def test_kafka_dump_log_prints_minibroker_share_group_records(tmp_path: Path) -> None:
    from minibroker.testing import BrokerThread

    if (why := kr.missing_prerequisites()) is not None:  # only Kafka's tool is needed, not its broker
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")

    data = tmp_path / "data"
    with BrokerThread(data, overrides={"group.initial.rebalance.delay.ms": 0}) as broker:
        _share_group_records(broker.bootstrap)
    files = sorted(p for p in data.glob("__consumer_offsets-*/*.log") if p.stat().st_size > 0)
    args = ["--files", ",".join(map(str, files)), "--offsets-decoder"]
    kafka = kr.run_tool("kafka-dump-log", args, timeout=120)
    ours = subprocess.run([sys.executable, "-m", "minibroker", "dump-log", *args], capture_output=True, text=True,
                          timeout=120)
    assert kafka.returncode == 0 and "Error" not in kafka.stdout and "Unknown record type" not in kafka.stdout, \
        kafka.stdout[-3000:] + kafka.stderr
    assert ours.stdout == kafka.stdout
    types = {json.loads(line.split(" key: ", 1)[1].split(" payload: ")[0])["type"]
             for line in kafka.stdout.splitlines() if " key: " in line}
    assert {"10", "11", "12", "13", "14", "15"} <= types, types
