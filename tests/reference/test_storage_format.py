"""A data dir formatted by Kafka's own `kafka-storage format` (StorageTool) is one minibroker starts on:
the cluster id clients see is the one StorageTool wrote, and meta.properties stays as Kafka wrote it."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient

from reference import kafka_reference as kr
from tests.helpers import BrokerProcess


def test_minibroker_starts_on_a_dir_kafka_storage_formatted(tmp_path: Path) -> None:
    why = kr.missing_prerequisites()
    if why is not None:
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
    data = tmp_path / "data"
    conf = tmp_path / "server.properties"
    conf.write_text("process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
                    "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n"
                    f"controller.listener.names=CONTROLLER\nlog.dirs={data}\n")
    cluster_id = kr.random_cluster_id()
    fmt = kr.run_tool("kafka-storage", ["format", "-t", cluster_id, "-c", str(conf)], timeout=120)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    written = (data / "meta.properties").read_bytes()
    assert (data / "__cluster_metadata-0").is_dir()  # the bootstrap snapshot Kafka formats with
    broker = BrokerProcess(data)
    broker.start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
        try:
            assert admin.describe_cluster()["cluster_id"] == cluster_id
            assert "__cluster_metadata" not in admin.list_topics()
        finally:
            admin.close()
    finally:
        assert broker.stop() == 0
    assert (data / "meta.properties").read_bytes() == written
