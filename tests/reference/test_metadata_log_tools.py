"""Kafka's own `kafka-dump-log --cluster-metadata-decoder` reads the metadata log and the snapshot minibroker's
single voter writes (minibroker/raft): every batch valid, every record decoded as the record we wrote."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

from minibroker.raft.metadata_log import MetadataLog
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.metadata_serde import ApiMessageAndVersion
from reference import kafka_reference as kr

TID = uuid.UUID("c68858cf-7b48-4aab-b11c-b33b151cf2b3")


def records() -> list[ApiMessageAndVersion]:
    broker = mr.REGISTER_BROKER_RECORD
    return [
        ApiMessageAndVersion(mr.FEATURE_LEVEL_RECORD(name="metadata.version", feature_level=27), 0),
        ApiMessageAndVersion(broker(broker_id=2, incarnation_id=uuid.UUID(int=7), broker_epoch=5, end_points=[
            broker.BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=9092, security_protocol=0)],
            rack=None, fenced=True), 3),
        ApiMessageAndVersion(mr.TOPIC_RECORD(name="orders", topic_id=TID), 0),
        ApiMessageAndVersion(mr.PARTITION_RECORD(partition_id=0, topic_id=TID, replicas=[2], isr=[2], leader=2,
                                                 leader_epoch=0, partition_epoch=0), 2),
        ApiMessageAndVersion(mr.CONFIG_RECORD(resource_type=2, resource_name="orders", name="retention.ms",
                                              value="1000"), 0),
        ApiMessageAndVersion(mr.PARTITION_CHANGE_RECORD(partition_id=0, topic_id=TID, leader=-1, isr=[]), 2),
    ]


def test_kafka_dump_log_decodes_our_metadata_log_and_snapshot(tmp_path: Path) -> None:
    why = kr.missing_prerequisites()
    if why is not None:
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
    ml = MetadataLog.open(tmp_path, node_id=1)
    ml.become_leader([1])
    ml.append(records()[:2])
    ml.append(records()[2:])
    ml.flush()
    snap = ml.create_snapshot(ml.end_offset, records(), ml.last_append_timestamp)
    segment = ml.dir / "00000000000000000000.log"
    ml.close()
    out = kr.run_tool("kafka-dump-log", ["--cluster-metadata-decoder", "--files", f"{segment},{snap}"], timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "isvalid: false" not in text and "Exception" not in text and "Error" not in text, text
    assert "Snapshot end offset: 7, epoch: 1" in text
    assert 'LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1}],"grantingVoters":[{"voterId":1}]}' in text
    assert 'SnapshotHeader {"version":0,' in text and 'SnapshotFooter {"version":0}' in text
    payloads = [json.loads(m) for m in re.findall(r"payload: (\{.*\})$", text, re.M)]
    assert [(p["type"], p["version"]) for p in payloads] == [
        ("FEATURE_LEVEL_RECORD", 0), ("REGISTER_BROKER_RECORD", 3), ("TOPIC_RECORD", 0), ("PARTITION_RECORD", 2),
        ("CONFIG_RECORD", 0), ("PARTITION_CHANGE_RECORD", 2)] * 2
    assert payloads[1]["data"]["endPoints"] == [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9092,
                                                 "securityProtocol": 0}]
    assert payloads[2]["data"] == {"name": "orders", "topicId": "xohYz3tISquxHLM7FRzysw"}
    assert payloads[5]["data"]["leader"] == -1 and payloads[5]["data"]["isr"] == []
