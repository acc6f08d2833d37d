"""The data dir's identity seen from clients: the cluster id is meta.properties', the same after a
restart and in every answer (Metadata, DescribeCluster, DescribeConfigs' cluster.id); a dir Kafka's
StorageTool formatted is served; another node's dir is refused with Kafka's one-line message."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from minibroker_storage.checkpoint import read_properties
from tests.helpers import ROOT, BrokerProcess, free_port

GOLDEN = ROOT / "tests" / "protocol" / "kraft_golden"
KAFKA_CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


def cluster_ids(bootstrap: str) -> tuple[str, str, list[str]]:
    """(DescribeCluster's cluster id, DescribeConfigs' cluster.id, the topics) as kafka-python sees them."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        described = admin.describe_cluster()["cluster_id"]
        resp = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")
        return described, resp["broker"]["1"]["cluster.id"]["value"], admin.list_topics()
    finally:
        admin.close()


def test_the_cluster_id_survives_a_restart_and_is_the_same_everywhere(kafka_broker_process) -> None:
    broker: BrokerProcess = kafka_broker_process()
    broker.start()
    try:
        first = cluster_ids(broker.bootstrap)
    finally:
        assert broker.stop() == 0
    stored = read_properties(broker.data_dir / "meta.properties")
    assert first[0] == first[1] == stored["cluster.id"]
    broker.start()
    try:
        assert cluster_ids(broker.bootstrap)[:2] == (stored["cluster.id"],) * 2
    finally:
        broker.stop()
    assert read_properties(broker.data_dir / "meta.properties") == stored


def test_a_dir_formatted_by_kafka_is_served_with_its_cluster_id(kafka_broker_process, tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "__cluster_metadata-0").mkdir(parents=True)
    shutil.copy(GOLDEN / "meta.properties", data)
    shutil.copy(GOLDEN / "00000000000000000000-0000000000.checkpoint", data / "__cluster_metadata-0")
    broker: BrokerProcess = kafka_broker_process()
    broker.start()
    try:
        described, configured, topics = cluster_ids(broker.bootstrap)
    finally:
        broker.stop()
    assert described == configured == KAFKA_CLUSTER_ID
    assert "__cluster_metadata" not in topics


def test_another_nodes_dir_is_refused_with_kafkas_message(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(GOLDEN / "meta.properties", data)
    proc = subprocess.run(
        [sys.executable, "-m", "minibroker", "--host", "127.0.0.1", "--port", str(free_port()), "--data-dir",
         str(data), "--override", "node.id=2"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2  # every refused start (minibroker.cli); Kafka's script exits 1
    assert proc.stderr.strip().splitlines()[-1] == (
        f"minibroker: Stored node id 1 doesn't match previous node id 2 in {data / 'meta.properties'}. If you "
        "moved your data, make sure your configured node id matches. If you intend to create a new node, you "
        "should remove all data in your data directories.")


def test_another_clusters_dir_is_refused_with_kafkas_message(tmp_path: Path) -> None:
    """cluster.id configured (a KRaft node's, or `python -m minibroker cluster`'s) against a dir another
    cluster formatted: Kafka's MetaPropertiesEnsemble.verify message, one line, before anything binds."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(GOLDEN / "meta.properties", data)
    proc = subprocess.run(
        [sys.executable, "-m", "minibroker", "--host", "127.0.0.1", "--port", str(free_port()), "--data-dir",
         str(data), "--override", "node.id=1", "--override", "cluster.id=AAAAAAAAAAAAAAAAAAAAAA"], cwd=ROOT,
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        f"minibroker: Invalid cluster.id in: {data / 'meta.properties'}. Expected AAAAAAAAAAAAAAAAAAAAAA, but "
        f"read {KAFKA_CLUSTER_ID}")
    assert len(proc.stderr.strip().splitlines()) == 1  # one line, no traceback
