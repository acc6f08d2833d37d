"""Kafka's `kafka-metadata-quorum --bootstrap-controller` against minibroker's controller process
(DescribeCluster with the controller endpoint type, then DescribeQuorum): the leader, its epoch, the
voter with its listener and directory id, and a broker following the log listed as an observer; and
`kafka-features --bootstrap-controller describe` (the controller's ApiVersions features)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from minibroker_storage.checkpoint import read_properties
from reference import kafka_reference as kr
from tests.helpers import BrokerProcess, free_port


def test_kafka_metadata_quorum_describes_our_controller(tmp_path: Path) -> None:
    why = kr.missing_prerequisites()
    if why is not None:
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
    cport = free_port()
    voters = f"3000@127.0.0.1:{cport}"
    for name in ("controller", "broker"):
        (tmp_path / name).mkdir()
    controller = BrokerProcess(tmp_path / "controller" / "data", port=cport, overrides={
        "process.roles": "controller", "node.id": 3000, "controller.quorum.voters": voters,
        "listeners": f"CONTROLLER://127.0.0.1:{cport}", "controller.listener.names": "CONTROLLER"})
    controller.start()
    meta = read_properties(controller.data_dir / "meta.properties")
    broker = BrokerProcess(tmp_path / "broker" / "data", overrides={
        "process.roles": "broker", "node.id": 1, "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER", "cluster.id": meta["cluster.id"]})
    broker.start()
    try:
        status = ""
        deadline = time.monotonic() + 60
        while '"id": 1' not in status.partition("CurrentObservers:")[2]:  # until the broker has fetched
            assert time.monotonic() < deadline, status
            out = kr.run_tool("kafka-metadata-quorum", ["--bootstrap-controller", f"127.0.0.1:{cport}",
                                                        "describe", "--status"], timeout=120)
            assert out.returncode == 0, out.stderr
            status = out.stdout
        lines = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        assert lines["ClusterId"].strip() == meta["cluster.id"]
        assert lines["LeaderId"].strip() == "3000" and lines["LeaderEpoch"].strip() == "1"
        assert int(lines["HighWatermark"].strip()) > 0
        assert lines["CurrentVoters"].strip() == f'[{{"id": 3000, "directoryId": "{meta["directory.id"]}", ' \
            f'"endpoints": ["CONTROLLER://127.0.0.1:{cport}"]}}]'
        replication = kr.run_tool("kafka-metadata-quorum", ["--bootstrap-controller", f"127.0.0.1:{cport}",
                                                            "describe", "--replication"], timeout=120)
        assert replication.returncode == 0, replication.stderr
        rows = [line.split() for line in replication.stdout.splitlines()[1:] if line.strip()]
        assert [(r[0], r[1], r[-1]) for r in rows] == [("3000", meta["directory.id"], "Leader"),
                                                       ("1", "AAAAAAAAAAAAAAAAAAAAAA", "Observer")]
        features = kr.run_tool("kafka-features", ["--bootstrap-controller", f"127.0.0.1:{cport}", "describe"],
                               timeout=120)
        assert features.returncode == 0, features.stderr
        described = {line.split()[1]: " ".join(line.split()) for line in features.stdout.splitlines() if line}
        assert "FinalizedVersionLevel: 4.4-IV2" in described["metadata.version"], features.stdout
        assert "SupportedMaxVersion: 2 FinalizedVersionLevel: 2" in described["transaction.version"], features.stdout
        down = kr.run_tool("kafka-features", ["--bootstrap-controller", f"127.0.0.1:{cport}", "downgrade",
                                              "--feature", "transaction.version=1"], timeout=120)
        assert down.returncode == 0 and "transaction.version was downgraded to 1." in down.stdout, down.stdout
        again = kr.run_tool("kafka-features", ["--bootstrap-controller", f"127.0.0.1:{cport}", "describe"],
                            timeout=120)
        assert "FinalizedVersionLevel: 1" in " ".join(
            next(line for line in again.stdout.splitlines() if "transaction.version" in line).split())
    finally:
        broker.stop()
        controller.stop()
