"""KRaft metadata records and control records against bytes Kafka 4.4 wrote (tests/protocol/kraft_golden)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from minibroker_protocol import metadata_records as mr
from minibroker_protocol import raft_records as rr
from minibroker_protocol.metadata_serde import (
    ApiMessageAndVersion,
    ControlMessage,
    MetadataParseError,
    build_control_batch,
    build_metadata_batch,
    read_metadata_batches,
    read_metadata_record,
    write_metadata_record,
)
from minibroker_protocol.records.v2 import ControlType, decode_batches

GOLDEN = Path(__file__).resolve().parent / "kraft_golden"
FILES = ["00000000000000000000.log", "00000000000000000000-0000000000.checkpoint",
         "00000000000000000048-0000000001.checkpoint"]


@pytest.mark.parametrize("name", FILES)
def test_every_batch_kafka_wrote_is_rebuilt_byte_for_byte(name: str) -> None:
    buf = (GOLDEN / name).read_bytes()
    raw = list(decode_batches(buf))
    decoded = list(read_metadata_batches(buf))
    assert len(raw) == len(decoded) > 0
    rebuilt = bytearray()
    for r, d in zip(raw, decoded, strict=True):
        assert (d.base_offset, d.last_offset, d.leader_epoch, d.is_control) == (
            r.base_offset, r.last_offset, r.partition_leader_epoch, r.is_control)
        for rec in r.records:  # each record value re-encodes to the same bytes
            if not r.is_control:
                assert rec.value is not None
                assert write_metadata_record(read_metadata_record(rec.value)) == rec.value
        if d.is_control:
            (control,) = d.records
            assert isinstance(control, ControlMessage)
            rebuilt += build_control_batch(control, base_offset=d.base_offset, leader_epoch=d.leader_epoch,
                                           timestamp=r.base_timestamp)
        else:
            records = [x for x in d.records if isinstance(x, ApiMessageAndVersion)]
            assert len(records) == len(d.records)
            rebuilt += build_metadata_batch(records, base_offset=d.base_offset, leader_epoch=d.leader_epoch,
                                            timestamp=r.base_timestamp)
    assert bytes(rebuilt) == buf


def test_the_log_holds_the_records_kafka_writes_for_a_topic() -> None:
    batches = list(read_metadata_batches((GOLDEN / FILES[0]).read_bytes()))
    first = batches[0].records[0]
    assert isinstance(first, ControlMessage) and first.type == ControlType.LEADER_CHANGE
    assert first.message == rr.LEADER_CHANGE_MESSAGE(
        version=0, leader_id=1, voters=[rr.LEADER_CHANGE_MESSAGE.Voter(voter_id=1)],
        granting_voters=[rr.LEADER_CHANGE_MESSAGE.Voter(voter_id=1)])
    records = [r for b in batches for r in b.records if isinstance(r, ApiMessageAndVersion)]
    by_type: dict[str, list[ApiMessageAndVersion]] = {}
    for r in records:
        by_type.setdefault(type(r.message).__name__, []).append(r)
    (topic,) = by_type["TopicRecord"]
    assert isinstance(topic.message, mr.TopicRecord) and topic.message.name == "golden"
    parts = [p.message for p in by_type["PartitionRecord"]]
    assert [p.partition_id for p in parts if isinstance(p, mr.PartitionRecord)] == [0, 1, 2]
    assert all(p.topic_id == topic.message.topic_id for p in parts if isinstance(p, mr.PartitionRecord))
    (broker,) = by_type["RegisterBrokerRecord"]
    assert isinstance(broker.message, mr.RegisterBrokerRecord)
    assert (broker.version, broker.message.broker_id, broker.message.end_points[0].name) == (4, 1, "PLAINTEXT")
    levels = {f.message.name: f.message.feature_level for f in by_type["FeatureLevelRecord"]
              if isinstance(f.message, mr.FeatureLevelRecord)}
    assert levels["metadata.version"] > 20
    assert "NoOpRecord" in by_type and "BeginTransactionRecord" in by_type and "ConfigRecord" in by_type


def test_a_snapshot_opens_with_a_header_and_closes_with_a_footer() -> None:
    batches = list(read_metadata_batches((GOLDEN / FILES[2]).read_bytes()))
    head, tail = batches[0].records[0], batches[-1].records[-1]
    assert isinstance(head, ControlMessage) and head.type == ControlType.SNAPSHOT_HEADER
    assert isinstance(tail, ControlMessage) and tail.type == ControlType.SNAPSHOT_FOOTER
    assert all(b.leader_epoch == 1 for b in batches)


def test_a_record_round_trips_and_frames_as_kafka() -> None:
    tid = uuid.UUID("c68858cf-7b48-4aab-b11c-b33b151cf2b3")
    rec = ApiMessageAndVersion(mr.TOPIC_RECORD(name="golden", topic_id=tid), 0)
    value = write_metadata_record(rec)
    assert value[:3] == bytes([1, 2, 0])  # frame version 1, api key 2 (TopicRecord), version 0
    assert value.hex() == "01020007676f6c64656e" + tid.hex + "00"
    assert read_metadata_record(value) == rec


@pytest.mark.parametrize("value, what", [
    (bytes([2, 2, 0]), "frame version 2"),
    (bytes([1, 99, 0]), "api key 99"),
    (bytes([1, 2, 7]), "version 7"),
    (bytes([1, 2, 0, 7]), "truncated"),
    (b"", "empty"),
])
def test_bad_frames_are_refused(value: bytes, what: str) -> None:
    with pytest.raises(MetadataParseError):
        read_metadata_record(value)
