"""The Java 4.4 transactional producer through faults (issue 32): InitProducerId answered
COORDINATOR_LOAD_IN_PROGRESS then CONCURRENT_TRANSACTIONS, a commit's EndTxn answered
CONCURRENT_TRANSACTIONS twice; the client retries each, commits every transaction, and a
read_committed consumer sees every record once, in order (tools/java/TxnFaultsCheck.java, one JVM)."""

from __future__ import annotations

import subprocess
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition

from reference import kafka_reference as kr
from tests.helpers import ROOT
from tests.integration.helpers import confluent_consume

SOURCE = ROOT / "tools/java/TxnFaultsCheck.java"
TRANSACTIONS, RECORDS = 5, 10


def test_java_transactional_producer_through_coordinator_faults(faults_broker):
    java = kr.java_executable()
    if java is None or not kr.jars_ready():
        pytest.skip(f"REFERENCE JARS UNAVAILABLE: {kr.missing_prerequisites()}")
    b = faults_broker
    t = b.create_topic(f"faults-java-{uuid.uuid4().hex[:8]}")
    txn = f"txn-{uuid.uuid4().hex[:8]}"
    faults = b.faults
    with faults.inject("InitProducerId", error="COORDINATOR_LOAD_IN_PROGRESS", transactional_id=txn) as loading, \
            faults.inject("InitProducerId", error="CONCURRENT_TRANSACTIONS", transactional_id=txn) as concurrent, \
            faults.inject("EndTxn", error="CONCURRENT_TRANSACTIONS", transactional_id=txn, count=2,
                          after=1) as end_txn:
        proc = subprocess.run([java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", f"{kr.libs_dir()}/*",
                               str(SOURCE), b.bootstrap, t, txn, str(TRANSACTIONS), str(RECORDS)],
                              capture_output=True, text=True, timeout=240)
        assert proc.stdout.strip().endswith(f"OK committed {TRANSACTIONS * RECORDS}"), proc.stdout + proc.stderr[-3000:]
        assert (loading.fired, concurrent.fired, end_txn.fired) == (1, 1, 2)
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(t, 0, 0)])
        got = [int(m.value()) for m in confluent_consume(c, TRANSACTIONS * RECORDS)]
    finally:
        c.close()
    assert got == list(range(TRANSACTIONS * RECORDS))
