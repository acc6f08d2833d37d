"""The records of KRaft's metadata log `__cluster_metadata-0`, framed as Kafka frames them.

Theory of operation. The metadata log is an ordinary log of RecordBatch v2 batches (KIP-500,
KIP-595). A data batch holds metadata records: each record's key is null and its value is a
*frame* (Kafka: `AbstractApiMessageSerde`, used by `MetadataRecordSerde`): an unsigned varint
frame version (1), an unsigned varint api key naming the record's schema
(protocol/metadata_records.py's `BY_API_KEY`, Kafka: `MetadataRecordType`), an unsigned varint
schema version, then the record in its (always flexible) schema. A control batch (attribute bit
5, never transactional) holds one KRaft control record: the key is the usual control key (int16
version 0, int16 ControlRecordType), the value the control message (protocol/raft_records.py)
written at version 0 with no frame, the message carrying its own `version` field (Kafka:
`ControlRecordUtils`). Snapshots (`.checkpoint` files) are the same batches, opened by a
SnapshotHeader control batch and closed by a SnapshotFooter one.

Sans-IO: bytes in, messages out. Batches are built with minibroker_protocol.records.v2.build_batch, so they
are byte for byte what Kafka's `MemoryRecordsBuilder` writes (tests/protocol/test_metadata_serde.py
re-encodes a log and snapshots written by Kafka 4.4 and compares).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache

from minibroker_protocol import codec
from minibroker_protocol.metadata_records import BY_API_KEY
from minibroker_protocol.raft_records import (
    K_RAFT_VERSION_RECORD,
    LEADER_CHANGE_MESSAGE,
    SNAPSHOT_FOOTER_RECORD,
    SNAPSHOT_HEADER_RECORD,
    VOTERS_RECORD,
)
from minibroker_protocol.records.v2 import (
    ControlType,
    DecodedBatch,
    Record,
    build_batch,
    control_record_key,
    decode_batches,
    parse_control_record,
)
from minibroker_protocol.schema import Message, Schema
from minibroker_protocol.types import read_uvarint, write_uvarint

FRAME_VERSION = 1  # Kafka: AbstractApiMessageSerde.DEFAULT_FRAME_VERSION
CONTROL_VALUE_VERSION = 0  # Kafka: ControlRecordUtils.*_CURRENT_VERSION, all 0

# ControlRecordType -> the schema of its value
CONTROL_SCHEMAS: dict[int, Schema[Message]] = {
    ControlType.LEADER_CHANGE: LEADER_CHANGE_MESSAGE,
    ControlType.SNAPSHOT_HEADER: SNAPSHOT_HEADER_RECORD,
    ControlType.SNAPSHOT_FOOTER: SNAPSHOT_FOOTER_RECORD,
    ControlType.KRAFT_VERSION: K_RAFT_VERSION_RECORD,
    ControlType.KRAFT_VOTERS: VOTERS_RECORD,
}


class MetadataParseError(ValueError):
    """A metadata record that cannot be read (Kafka: MetadataParseException)."""


@cache
def _api_keys() -> dict[str, int]:
    return {schema.name: key for key, schema in BY_API_KEY.items()}


def api_key_of(message: Message) -> int:
    """The api key a metadata record is framed with, from its class (TopicRecord -> 2)."""
    try:
        return _api_keys()[type(message).__name__]
    except KeyError:
        raise ValueError(f"{type(message).__name__} is not a metadata record") from None


@dataclass(frozen=True, slots=True)
class ApiMessageAndVersion:
    """A metadata record and the schema version it is (to be) written at (Kafka's class of the name)."""

    message: Message
    version: int

    @property
    def api_key(self) -> int:
        return api_key_of(self.message)


@dataclass(frozen=True, slots=True)
class ControlMessage:
    """A KRaft control record: its ControlRecordType and its decoded value."""

    type: int
    message: Message


def write_metadata_record(record: ApiMessageAndVersion) -> bytes:
    """The value of a metadata log record: frame version, api key, version, message."""
    key = record.api_key
    out = codec.Output()
    write_uvarint(out, FRAME_VERSION)
    write_uvarint(out, key)
    write_uvarint(out, record.version)
    return codec.encode(BY_API_KEY[key], record.version, record.message, out).to_bytes()


def read_metadata_record(value: bytes | bytearray | memoryview) -> ApiMessageAndVersion:
    """Decode a metadata log record's value (the inverse of write_metadata_record)."""
    try:
        frame, pos = read_uvarint(value, 0)
        if frame != FRAME_VERSION:
            raise MetadataParseError(f"could not deserialize metadata record due to unknown frame version {frame}")
        key, pos = read_uvarint(value, pos)
        version, pos = read_uvarint(value, pos)
    except (IndexError, ValueError) as e:
        if isinstance(e, MetadataParseError):
            raise
        raise MetadataParseError(f"truncated metadata record frame: {e}") from None
    schema = BY_API_KEY.get(key)
    if schema is None:
        raise MetadataParseError(f"unknown metadata record api key {key}")
    if version not in schema.valid:
        raise MetadataParseError(f"{schema.name} version {version} is not one of {schema.valid}")
    try:
        return ApiMessageAndVersion(codec.decode(schema, version, value, pos), version)
    except (IndexError, ValueError) as e:
        raise MetadataParseError(f"could not read {schema.name} v{version}: {e}") from None


def write_control_value(message: Message, control_type: int) -> bytes:
    return codec.encode(CONTROL_SCHEMAS[control_type], CONTROL_VALUE_VERSION, message).to_bytes()


def read_control_record(key: bytes | None, value: bytes | None) -> ControlMessage:
    parsed = parse_control_record(Record(key=key, value=value))
    schema = CONTROL_SCHEMAS.get(parsed.type)
    if schema is None or value is None:
        raise MetadataParseError(f"control record type {parsed.type} does not belong in a metadata log")
    try:
        return ControlMessage(parsed.type, codec.decode(schema, CONTROL_VALUE_VERSION, value))
    except (IndexError, ValueError) as e:
        raise MetadataParseError(f"could not read {schema.name}: {e}") from None


def build_metadata_batch(records: Sequence[ApiMessageAndVersion], *, base_offset: int, leader_epoch: int,
                         timestamp: int) -> bytes:
    """A data batch of metadata records, as KRaft's leader appends them (CreateTime = append time,
    no producer id, uncompressed, the leader's epoch as partition leader epoch)."""
    recs = [Record(offset_delta=i, value=write_metadata_record(r)) for i, r in enumerate(records)]
    return build_batch(recs, base_offset=base_offset, base_timestamp=timestamp,
                       partition_leader_epoch=leader_epoch)


def build_control_batch(control: ControlMessage, *, base_offset: int, leader_epoch: int, timestamp: int) -> bytes:
    """A KRaft control batch of one record (Kafka: MemoryRecords.withLeaderChangeMessage and siblings)."""
    record = Record(key=control_record_key(control.type), value=write_control_value(control.message, control.type))
    return build_batch([record], base_offset=base_offset, base_timestamp=timestamp, is_control=True,
                       partition_leader_epoch=leader_epoch)


@dataclass(slots=True)
class MetadataBatch:
    """One batch of the metadata log, its records decoded (Kafka: raft's Batch)."""

    base_offset: int
    last_offset: int
    leader_epoch: int
    append_timestamp: int
    size_in_bytes: int
    is_control: bool
    records: list[ApiMessageAndVersion | ControlMessage] = field(default_factory=list)


def decode_metadata_batch(batch: DecodedBatch) -> MetadataBatch:
    out = MetadataBatch(batch.base_offset, batch.last_offset, batch.partition_leader_epoch, batch.max_timestamp,
                        batch.size, batch.is_control)
    for r in batch.records:
        if batch.is_control:
            out.records.append(read_control_record(r.key, r.value))
        elif r.value is None:
            raise MetadataParseError(f"metadata record at offset {r.offset} has no value")
        else:
            out.records.append(read_metadata_record(r.value))
    return out


def read_metadata_batches(buf: bytes | bytearray | memoryview, pos: int = 0) -> Iterator[MetadataBatch]:
    """Every whole batch in `buf` (a segment, a snapshot, a fetch response's records), decoded."""
    for batch in decode_batches(buf, pos):
        yield decode_metadata_batch(batch)
