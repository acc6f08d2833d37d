"""Kafka's kafka-dump-log --offsets-decoder on minibroker's KIP-848 records, next to ours.

A minibroker of its own holds a consumer group (confluent-kafka, group.protocol=consumer) with two
members, one subscribed by name, one by regular expression (the record types 3, 5, 6, 7, 8 and 16
of __consumer_offsets, and their tombstones when the members leave), and committed offsets.
Kafka's tool reads the files without an error, and `python -m minibroker dump-log` prints the very
same stdout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from reference import kafka_reference as kr


def _group_records(bootstrap: str) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("dl848-a", 2, 1)])["dl848-a"].result(30)
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(4):
        p.produce("dl848-a", value=b"x", partition=i % 2)
    p.flush(30)
    conf = {"bootstrap.servers": bootstrap, "group.id": "dl848", "group.protocol": "consumer",
            "auto.offset.reset": "earliest", "enable.auto.commit": False}
    a, b = Consumer(conf), Consumer(conf)
    a.subscribe(["dl848-a"])
    b.subscribe(["^dl848-.*"])
    read, end = 0, time.monotonic() + 60
    while (read < 4 or len(a.assignment()) + len(b.assignment()) < 2) and time.monotonic() < end:
        for c in (a, b):
            m = c.poll(0.2)
            if m is not None and not m.error():
                read += 1
    assert read == 4
    for c in (a, b):
        if c.assignment():
            c.commit(asynchronous=False)
    a.close()
    b.close()


def test_kafka_dump_log_prints_minibroker_consumer_group_records(tmp_path: Path,
                                                                kafka_reference: kr.KafkaReference) -> None:
    from minibroker.testing import BrokerThread

    data = tmp_path / "data"
    with BrokerThread(data, overrides={"group.initial.rebalance.delay.ms": 0}) as broker:
        _group_records(broker.bootstrap)
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
    assert {"3", "5", "6", "7", "8", "16", "1"} <= types, types
