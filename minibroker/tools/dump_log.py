"""`python -m minibroker dump-log FILE...`: print a partition's files as Kafka's kafka-dump-log.sh
(DumpLogSegments) does, field for field, so its output can be read beside Kafka's.

    Dumping data/demo-0/00000000000000000000.log
    Log starting offset: 0
    baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 ... position: 0 CreateTime: 1700000000000
    size: 76 magic: 2 compresscodec: none crc: 1425134478 isvalid: true
    | offset: 0 CreateTime: 1700000000000 keySize: 3 valueSize: 5 sequence: -1 headerKeys: []

Per file suffix: `.log` (batches; `--deep-iteration` adds one `| offset:` line per record,
`--print-data-log` adds key and payload and implies deep iteration; `--offsets-decoder` reads
`__consumer_offsets` records as JSON, `--transaction-log-decoder` those of
`__transaction_state`, `--share-group-state-decoder` those of `__share_group_state`), `.index` (`offset: 29 position: 15556`, checked against
the log as Kafka checks it), `.timeindex` (`timestamp: ... offset: ...`), `.snapshot` (producer
state) and `.txnindex` (aborted transactions). `--index-sanity-check` runs Kafka's load-time index check
(OffsetIndex/TimeIndex.sanityCheck) on the file as Kafka's tool opens it, instead of printing
entries.

`--layout classic` prints batches in the order Kafka 2.x/3.0 used (docs/tour.md step 3:
`... position: 0 CreateTime: ... isvalid: true size: 15556 magic: 2 compresscodec: NONE crc: ...`);
the default is the layout of current Kafka. Problems found (index entries that do not point at a
batch's last offset, offsets that are not consecutive, time index mismatches) go to stderr
after the dump, as Kafka prints them. The tool only reads; it is safe on a live broker's files.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import struct
import sys
import uuid
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from minibroker.tools.json_value import JsonValue
from minibroker_protocol import coordinator_records as cr
from minibroker_protocol import share_group_records as shr
from minibroker_protocol import share_records as sr
from minibroker_protocol import streams_group_records as sgr
from minibroker_protocol.codec import decode
from minibroker_protocol.records import legacy
from minibroker_protocol.records.batch import LOG_OVERHEAD, V2_HEADER_SIZE
from minibroker_protocol.records.compression import decompress
from minibroker_protocol.records.dump import (
    BatchSummary,
    RecordSummary,
    Trailing,
    format_batch,
    format_record,
    iter_summaries,
)
from minibroker_protocol.schema import F, Message, Schema
from minibroker_storage.producer_state import CorruptSnapshot, read_snapshot
from minibroker_storage.txn_index import TransactionIndex

_TS_NAMES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}
_DELETE_HORIZON_FLAG = 0x40  # RecordBatch v2 attribute bit 6 (KIP-534): base timestamp is the delete horizon
_INDEX_ENTRY = struct.Struct(">ii")
_TIME_INDEX_ENTRY = struct.Struct(">qi")
_CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER",
                  5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}


def _bool(b: bool) -> str:
    return "true" if b else "false"


def _optional_long(v: int | None) -> str:
    # Kafka prints java.util.OptionalLong as is
    return "OptionalLong.empty" if v is None else f"OptionalLong[{v}]"


def base_offset_of(path: Path) -> int:
    return int(path.name.split(".", 1)[0])


# -- .log ------------------------------------------------------------------------------------------
def batch_line(s: BatchSummary, attributes: int, layout: str = "current") -> str:
    """One batch as DumpLogSegments.printBatchLevel prints it."""
    if layout == "classic":
        return format_batch(s)
    if s.magic >= 2:
        horizon = s.base_timestamp if attributes & _DELETE_HORIZON_FLAG else None
        head = (f"baseOffset: {s.base_offset} lastOffset: {s.last_offset} count: {s.count} "
                f"baseSequence: {s.base_sequence} lastSequence: {s.last_sequence} producerId: {s.producer_id} "
                f"producerEpoch: {s.producer_epoch} partitionLeaderEpoch: {s.partition_leader_epoch} "
                f"isTransactional: {_bool(s.is_transactional)} isControl: {_bool(s.is_control)} "
                f"deleteHorizonMs: {_optional_long(horizon)}")
    else:
        head = f"offset: {s.last_offset}"
    return (f"{head} position: {s.position} {_TS_NAMES.get(s.timestamp_type, '?')}: {s.max_timestamp} "
            f"size: {s.size} magic: {s.magic} compresscodec: {s.codec_name.lower()} crc: {s.crc} "
            f"isvalid: {_bool(s.is_valid)}")


def record_line(r: RecordSummary, batch: BatchSummary, *, metadata: bool = True,
                parser: Callable[[RecordSummary], tuple[str | None, str | None]] | None = None,
                layout: str = "current", legacy_check: tuple[int, bool] | None = None) -> str:
    """One `| offset: ...` line of --deep-iteration (DumpLogSegments.dumpLog)."""
    if layout == "classic":
        line = format_record(r, batch.timestamp_type, payload=parser is not None and not batch.is_control)
        return line
    prefix = "| "
    parts: list[str] = []
    if metadata:
        line = (f"{prefix}offset: {r.offset} {_TS_NAMES.get(batch.timestamp_type, '?')}: {r.timestamp} "
                f"keySize: {-1 if r.key is None else len(r.key)} valueSize: {-1 if r.value is None else len(r.value)}")
        if batch.magic >= 2:
            line += f" sequence: {r.sequence} headerKeys: [{','.join(k for k, _ in r.headers)}]"
        elif legacy_check is not None:
            # the closing brace is Kafka's (a stray `}` in DumpLogSegments' format string), kept so
            # that the lines compare equal
            line += f" isValid: {_bool(legacy_check[1])} crc: {legacy_check[0]}}}"
        if r.control is not None:
            if r.control.coordinator_epoch is not None:
                name = "COMMIT" if r.control.is_commit else "ABORT"
                line += f" endTxnMarker: {name} coordinatorEpoch: {r.control.coordinator_epoch}"
            else:
                t = r.control.type
                line += f" controlType: {_CONTROL_TYPES.get(t, 'UNKNOWN')}({t})"
        parts.append(line)
        prefix = " "
    if parser is not None and not batch.is_control:
        key, payload = parser(r)
        if key is not None:
            parts.append(f"{prefix}key: {key}")
            prefix = " "
        if payload is not None:
            parts.append(f" payload: {payload}")
    return "".join(parts) if parts else prefix.rstrip()


def legacy_checks(raw: bytes | memoryview) -> list[tuple[int, bool]]:
    """(stored crc, crc valid) of every message in a v0/v1 entry, inner messages of a compressed
    wrapper in place of the wrapper: what Kafka prints per record as `isValid: … crc: …`."""

    def walk(buf: bytes | memoryview, out: list[tuple[int, bool]], outer: bool) -> None:
        pos = 0
        while len(buf) - pos >= LOG_OVERHEAD:
            msg, stop = legacy.read_message(buf, pos, verify_crc=False)
            valid = zlib.crc32(memoryview(buf)[pos + LOG_OVERHEAD + 4:stop]) & 0xFFFFFFFF == msg.crc
            if outer and msg.is_compressed and msg.value is not None:
                walk(decompress(msg.compression, msg.value, magic=msg.magic), out, False)
            else:
                out.append((msg.crc, valid))
            pos = stop

    out: list[tuple[int, bool]] = []
    walk(raw, out, True)
    return out


def string_parser(r: RecordSummary) -> tuple[str | None, str | None]:
    """Kafka's default StringDecoder: UTF-8 text of the key and the value."""
    return _utf8(r.key), _utf8(r.value)


def _utf8(b: bytes | None) -> str | None:
    return None if b is None else bytes(b).decode("utf-8", errors="replace")


class DumpState:
    """Problems collected while dumping, printed to stderr at the end as Kafka does."""

    def __init__(self) -> None:
        self.index_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.non_consecutive: dict[str, list[tuple[int, int]]] = {}
        self.time_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.time_out_of_order: dict[str, list[tuple[int, int]]] = {}
        self.time_not_found: dict[str, list[tuple[int, int]]] = {}

    def print(self, err: TextIO) -> None:
        for name, pairs in self.index_mismatches.items():
            err.write(f"Mismatches in :{name}\n")
            for index_offset, log_offset in pairs:
                err.write(f"  Index offset: {index_offset}, log offset: {log_offset}\n")
        for name, pairs in self.time_mismatches.items():
            err.write(f"Found timestamp mismatch in :{name}\n")
            for index_ts, log_ts in pairs:
                err.write(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}\n")
        for name, pairs in self.time_out_of_order.items():
            err.write(f"Found out of order timestamp in :{name}\n")
            for ts, prev in pairs:
                err.write(f"  Index timestamp: {ts}, Previously indexed timestamp: {prev}\n")
        for name, pairs in self.time_not_found.items():
            err.write(f"The following indexed offsets are not found in :{name}\n")
            for indexed, found in pairs:
                err.write(f"Indexed offset: {indexed}, found log offset: {found}\n")
        for name, pairs in self.non_consecutive.items():
            err.write(f"Non-consecutive offsets in {name}\n")
            for first, second in pairs:
                err.write(f"  {first} is followed by {second}\n")


def _read_prefix(path: Path, max_bytes: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(max_bytes if max_bytes >= 0 else -1)


def dump_log(path: Path, out: TextIO, state: DumpState, *, deep: bool = False,
             parser: Callable[[RecordSummary], tuple[str | None, str | None]] | None = None,
             metadata: bool = True, max_bytes: int = (1 << 31) - 1, layout: str = "current") -> None:
    title = "Starting offset" if layout == "classic" else "Log starting offset"
    out.write(f"{title}: {base_offset_of(path)}\n")
    file_size = path.stat().st_size
    buf = _read_prefix(path, max_bytes)
    valid_bytes = 0
    last_offset = -1
    deep = deep or parser is not None
    for item in iter_summaries(buf, records=deep):
        if isinstance(item, Trailing):
            break
        attributes = struct.unpack_from(">h", buf, item.position + 21)[0] if item.magic >= 2 and \
            item.size >= V2_HEADER_SIZE else 0
        out.write(batch_line(item, attributes, layout) + "\n")
        if deep:
            if item.records is None and item.error:
                out.write(f"| records unreadable: {item.error}\n")
            checks: list[tuple[int, bool]] = []
            if item.magic < 2 and layout != "classic":
                try:
                    checks = legacy_checks(memoryview(buf)[item.position:item.position + item.size])
                except Exception:  # noqa: BLE001 - unreadable: the records print without the check
                    checks = []
            for i, r in enumerate(item.records or ()):
                # as Kafka's tool: the count starts at -1 in every file, so a segment whose base
                # offset is not 0 reports "-1 is followed by <base>" (DumpLogSegments.dumpLog)
                if r.offset != last_offset + 1:
                    state.non_consecutive.setdefault(str(path.resolve()), []).append((last_offset, r.offset))
                last_offset = r.offset
                out.write(record_line(r, item, metadata=metadata, parser=parser, layout=layout,
                                      legacy_check=checks[i] if i < len(checks) else None) + "\n")
        valid_bytes += item.size
    trailing = file_size - valid_bytes
    if trailing > 0 and max_bytes >= file_size:
        out.write(f"Found {trailing} invalid bytes at the end of {path.name}\n")


# -- .index / .timeindex ---------------------------------------------------------------------------
def _log_for(path: Path) -> Path:
    return path.with_name(path.name.split(".", 1)[0] + ".log")


def _batch_at(log_buf: bytes, position: int) -> BatchSummary | None:
    for item in iter_summaries(memoryview(log_buf)[position:], position=position):
        return item if isinstance(item, BatchSummary) else None
    return None


class CorruptIndexException(Exception):
    """An index fails the check Kafka runs when it loads the file (named as Kafka's exception)."""


# --index-sanity-check runs OffsetIndex/TimeIndex.sanityCheck on the file as DumpLogSegments opens
# it: read-only, every slot of the file counted as an entry. On a preallocated index (an active
# segment's, not yet trimmed) the "last entry" is then a zero slot: the offset index still passes
# (relative offset 0 is the base offset), the time index fails once its first entry has a
# timestamp (0 < first timestamp), exactly as Kafka's tool reports it.
def offset_index_sanity_check(path: Path, data: bytes, base: int) -> None:
    n = len(data) // _INDEX_ENTRY.size
    if n:
        last = base + _INDEX_ENTRY.unpack_from(data, (n - 1) * _INDEX_ENTRY.size)[0]
        if last < base:
            raise CorruptIndexException(
                f"Corrupt index found, index file {os.path.abspath(path)} has non-zero size but the last "
                f"offset is {last} which is less than the base offset {base}")
    if len(data) % _INDEX_ENTRY.size:
        raise CorruptIndexException(f"Index file {os.path.abspath(path)} is corrupt, found {len(data)} bytes "
                                    f"which is neither positive nor a multiple of {_INDEX_ENTRY.size}")


def time_index_sanity_check(path: Path, data: bytes, base: int) -> None:
    n = len(data) // _TIME_INDEX_ENTRY.size
    name = os.path.abspath(path)
    if n:
        last_ts, last_rel = _TIME_INDEX_ENTRY.unpack_from(data, (n - 1) * _TIME_INDEX_ENTRY.size)
        first_ts = _TIME_INDEX_ENTRY.unpack_from(data, 0)[0]
        if last_ts < first_ts:
            raise CorruptIndexException(
                f"Corrupt time index found, time index file ({name}) has non-zero size but the last "
                f"timestamp is {last_ts} which is less than the first timestamp {first_ts}")
        if base + last_rel < base:
            raise CorruptIndexException(
                f"Corrupt time index found, time index file ({name}) has non-zero size but the last "
                f"offset is {base + last_rel} which is less than the first offset {base}")
    if len(data) % _TIME_INDEX_ENTRY.size:
        raise CorruptIndexException(f"Time index file {name} is corrupt, found {len(data)} bytes which is "
                                    f"neither positive nor a multiple of {_TIME_INDEX_ENTRY.size}")


def dump_index(path: Path, out: TextIO, state: DumpState, *, sanity_only: bool = False,
               verify_only: bool = False) -> None:
    base = base_offset_of(path)
    data = path.read_bytes()
    n = len(data) // _INDEX_ENTRY.size
    if n == 0:
        out.write(f"{path} is empty.\n")
        return
    if sanity_only:
        offset_index_sanity_check(path, data, base)
        out.write(f"{path} passed sanity check.\n")
        return
    log_path = _log_for(path)
    log_buf = log_path.read_bytes() if log_path.exists() else b""
    for i in range(n):
        rel, position = _INDEX_ENTRY.unpack_from(data, i * _INDEX_ENTRY.size)
        offset = base + rel
        # a preallocated or crash-torn file ends in zero entries: stop at the first one (as Kafka does)
        if offset == base and i > 0:
            return
        batch = _batch_at(log_buf, position)
        found = batch.last_offset if batch is not None else -1
        if found != offset:
            state.index_mismatches.setdefault(str(path.resolve()), []).append((offset, found))
        if not verify_only:
            out.write(f"offset: {offset} position: {position}\n")


def dump_time_index(path: Path, out: TextIO, state: DumpState, *, sanity_only: bool = False,
                    verify_only: bool = False) -> None:
    base = base_offset_of(path)
    data = path.read_bytes()
    if sanity_only:
        time_index_sanity_check(path, data, base)
        out.write(f"{path} passed sanity check.\n")
        return
    log_path = _log_for(path)
    log_buf = log_path.read_bytes() if log_path.exists() else b""
    summaries = [s for s in iter_summaries(log_buf, records=True) if isinstance(s, BatchSummary)]
    name = str(path.resolve())
    prev_ts = -1
    for i in range(len(data) // _TIME_INDEX_ENTRY.size):
        ts, rel = _TIME_INDEX_ENTRY.unpack_from(data, i * _TIME_INDEX_ENTRY.size)
        offset = base + rel
        if offset == base and i > 0:
            return
        batch = next((s for s in summaries if s.last_offset >= offset), None)
        if batch is None:
            state.time_not_found.setdefault(name, []).append((offset, -1))
        elif batch.last_offset != offset:
            state.time_not_found.setdefault(name, []).append((offset, batch.last_offset))
        else:
            max_ts = max((r.timestamp for r in batch.records or ()), default=-1)
            if max_ts != ts:
                state.time_mismatches.setdefault(name, []).append((ts, max_ts))
            if prev_ts >= ts:
                state.time_out_of_order.setdefault(name, []).append((ts, prev_ts))
        if not verify_only:
            out.write(f"timestamp: {ts} offset: {offset}\n")
        prev_ts = ts


# -- .snapshot / .txnindex -------------------------------------------------------------------------
def dump_producer_snapshot(path: Path, out: TextIO, err: TextIO) -> None:
    """ProducerStateManager.readSnapshot entries, one line each (DumpLogSegments.dumpProducerIdSnapshot)."""
    try:
        entries = read_snapshot(path)
    except CorruptSnapshot as bad:
        err.write(f"{bad}\n")
        return
    for e in entries:
        line = (f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} "
                f"coordinatorEpoch: {e.coordinator_epoch} "
                f"currentTxnFirstOffset: {_optional_long(e.current_txn_first_offset)} "
                f"lastTimestamp: {e.last_timestamp} ")
        if e.batches:
            b = e.batches[0]
            line += (f"firstSequence: {b.first_seq} lastSequence: {b.last_seq} lastOffset: {b.last_offset} "
                     f"offsetDelta: {b.offset_delta} timestamp: {b.timestamp}")
        out.write(line + "\n")


def dump_txn_index(path: Path, out: TextIO) -> None:
    idx = TransactionIndex(base_offset_of(path), path)
    try:
        for t in idx.all_aborted_txns():
            out.write(f"version: {t.version} producerId: {t.producer_id} firstOffset: {t.first_offset} "
                      f"lastOffset: {t.last_offset} lastStableOffset: {t.last_stable_offset}\n")
    finally:
        idx.close()


# -- __consumer_offsets ----------------------------------------------------------------------------
def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def message_json(msg: Message, version: int, extra_tags: dict[int, tuple[str, str]] | None = None) -> dict[str, JsonValue]:
    """A decoded message as Kafka's generated JsonConverter writes it: camelCase names, only the
    fields present at `version`, tagged fields only when they differ from their default, bytes
    as base64. `extra_tags` names tagged fields our schema does not declare ({tag: (jsonName,
    "uuid")}), printed from the bytes the decoder kept."""
    out: dict[str, JsonValue] = {}
    for f in msg._fields:
        if version not in f.versions:
            continue
        v = getattr(msg, f.name)
        if version in f.tagged and f.is_default(v):
            continue
        out[_camel(f.name)] = _json_value(v, version)
    for tag, raw in sorted((getattr(msg, "unknown_tags", None) or {}).items()):
        name, kind = (extra_tags or {}).get(tag, ("", ""))
        if kind == "uuid" and len(raw) == 16 and raw != bytes(16):
            out[name] = _uuid(raw)
    return out


def _uuid(raw: bytes) -> str:
    """Kafka's Uuid.toString: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# Tagged fields Kafka 4.x writes that minibroker_protocol.coordinator_records does not declare yet:
# OffsetCommitValue v4 carries the topic's id as tag 0 (Kafka 4.4's group coordinator writes it;
# minibroker does not, see docs/differences.md#offset-commit-topic-id).
_OFFSET_COMMIT_VALUE_TAGS = {0: ("topicId", "uuid")}


def _json_value(v: object, version: int) -> JsonValue:
    if isinstance(v, list):
        return [_json_value(x, version) for x in v]
    if isinstance(v, Message):
        return message_json(v, version)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode()
    if isinstance(v, uuid.UUID):  # topic ids of the KIP-848 records
        return _uuid(v.bytes)
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    # as json.dumps would refuse it (the parser reports the record and goes on); no field type
    # of the coordinator records decodes to anything else
    raise TypeError(f"Object of type {type(v).__name__} is not JSON serializable")


def consumer_protocol_schemas() -> tuple[Schema[Message], Schema[Message]]:
    """(ConsumerProtocolSubscription, ConsumerProtocolAssignment) schemas."""
    # The consumer's embedded protocol (ConsumerProtocolSubscription / ConsumerProtocolAssignment
    # message definitions, versions 0-3, never flexible): an int16 version, then the fields.

    sub: Schema[Message] = Schema("ConsumerProtocolSubscription", "0-3", fields=[
        F("topics", "[]string", "0+"),
        F("user_data", "bytes", "0+", nullable="0+", default=None),
        F("owned_partitions", "[]TopicPartition", "1+", ignorable=True, fields=[
            F("topic", "string", "1+"), F("partitions", "[]int32", "1+")]),
        F("generation_id", "int32", "2+", default=-1, ignorable=True),
        F("rack_id", "string", "3+", nullable="3+", default=None, ignorable=True),
    ])
    assign: Schema[Message] = Schema("ConsumerProtocolAssignment", "0-3", fields=[
        F("assigned_partitions", "[]TopicPartition", "0+", fields=[
            F("topic", "string", "0+"), F("partitions", "[]int32", "0+")]),
        F("user_data", "bytes", "0+", nullable="0+", default=None),
    ])
    return sub, assign


def decode_embedded(schema: Schema[Message], raw: bytes) -> dict[str, Any]:
    """JSON-ready fields of a version-prefixed embedded message (a subscription or assignment)."""
    (version,) = struct.unpack_from(">h", raw, 0)
    version = min(version, 3)  # a newer version starts with the fields of the latest we know
    return message_json(decode(schema, version, raw, 2, exact=False), version)


def _consumer_group_records() -> dict[int, tuple[Schema[Message], Schema[Message]]]:
    return {
        3: (cr.CONSUMER_GROUP_METADATA_KEY, cr.CONSUMER_GROUP_METADATA_VALUE),
        4: (cr.CONSUMER_GROUP_PARTITION_METADATA_KEY, cr.CONSUMER_GROUP_PARTITION_METADATA_VALUE),
        5: (cr.CONSUMER_GROUP_MEMBER_METADATA_KEY, cr.CONSUMER_GROUP_MEMBER_METADATA_VALUE),
        6: (cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
        7: (cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
        8: (cr.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, cr.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
        16: (cr.CONSUMER_GROUP_REGULAR_EXPRESSION_KEY, cr.CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE),
        # KIP-932 share groups: 10-15 (protocol/share_group_records.py)
        **shr.BY_TYPE,
        # KIP-1071 streams groups: 17, 19-23 (protocol/streams_group_records.py)
        **sgr.BY_TYPE,
    }


_CONSUMER_GROUP_RECORDS = _consumer_group_records()


def offsets_parser(r: RecordSummary) -> tuple[str | None, str | None]:
    """Key and value of a __consumer_offsets record as JSON (DumpLogSegments' OffsetsMessageParser)."""
    if r.key is None:
        raise ValueError(f"Failed to decode message at offset {r.offset} using offset topic decoder "
                         "(message had a missing key)")
    try:
        key = bytes(r.key)
        (kv,) = struct.unpack_from(">h", key, 0)
        key_version = kv  # OffsetCommitKey and GroupMetadataKey: the type is the key's version
        key_schema: Schema[Message]
        value_schema: Schema[Message]
        if kv in (0, 1):
            key_schema, value_schema = cr.OFFSET_COMMIT_KEY, cr.OFFSET_COMMIT_VALUE
        elif kv == 2:
            key_schema, value_schema = cr.GROUP_METADATA_KEY, cr.GROUP_METADATA_VALUE
        elif kv in _CONSUMER_GROUP_RECORDS:
            # KIP-848 records (CoordinatorRecordType): the type, then the key struct at version 0
            key_schema, value_schema = _CONSUMER_GROUP_RECORDS[kv]
            key_version = 0
        else:
            return f"Unknown record type {kv} at offset {r.offset}, skipping.", None
        key_json = json.dumps({"type": str(kv), "data": message_json(decode(key_schema, key_version, key, 2),
                                                                      key_version)}, separators=(",", ":"))
        if r.value is None:
            return key_json, "<DELETE>"
        value = bytes(r.value)
        (vv,) = struct.unpack_from(">h", value, 0)
        data = message_json(decode(value_schema, vv, value, 2, exact=False), vv,
                            _OFFSET_COMMIT_VALUE_TAGS if kv in (0, 1) else None)
        if kv == 2 and data.get("protocolType") == "consumer":
            sub, assign = consumer_protocol_schemas()
            members = data.get("members")  # GroupMetadataValue's members: structs, their bytes as base64
            for m in members if isinstance(members, list) else []:
                if not isinstance(m, dict):
                    continue
                for field, schema in (("subscription", sub), ("assignment", assign)):
                    encoded = m.get(field)
                    if not isinstance(encoded, str):
                        continue
                    try:
                        m[field] = decode_embedded(schema, base64.b64decode(encoded))
                    except Exception:  # noqa: BLE001 - keep the original bytes, as Kafka does
                        pass
        return key_json, json.dumps({"version": str(vv), "data": data}, separators=(",", ":"))
    except Exception as e:  # noqa: BLE001 - the tool reports and goes on, as Kafka does
        return f"Error at offset {r.offset}, skipping. {e}", None


# Kafka's TransactionState ids (TransactionState.java), printed by name in the JSON value.
_TXN_STATES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
               5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}


def transaction_log_parser(r: RecordSummary) -> tuple[str | None, str | None]:
    """Key and value of a __transaction_state record as Kafka 4.x's transaction log decoder prints
    them: JSON as for __consumer_offsets (`{"type":"0","data":{...}}`, `{"version":"1","data":{...}}`),
    the state by name."""

    if r.key is None:
        raise ValueError(f"Failed to decode message at offset {r.offset} using the specified decoder "
                         "(message had a missing key)")
    try:
        key = bytes(r.key)
        (kv,) = struct.unpack_from(">h", key, 0)
        if kv != 0:
            return f"Unknown record type {kv} at offset {r.offset}, skipping.", None
        key_json = json.dumps({"type": "0", "data": message_json(decode(cr.TRANSACTION_LOG_KEY, 0, key, 2), 0)},
                              separators=(",", ":"))
        if r.value is None:
            return key_json, "<DELETE>"
        value = bytes(r.value)
        (vv,) = struct.unpack_from(">h", value, 0)
        data = message_json(decode(cr.TRANSACTION_LOG_VALUE, vv, value, 2, exact=False), vv)
        status = data.get("transactionStatus")
        data["transactionStatus"] = _TXN_STATES.get(status, f"Unknown({status})") if isinstance(status, int) \
            else status
        return key_json, json.dumps({"version": str(vv), "data": data}, separators=(",", ":"))
    except Exception as e:  # noqa: BLE001 - reported in place of the record, as the offsets decoder does
        return f"Error at offset {r.offset}, skipping. {e}", None


def share_group_state_parser(r: RecordSummary) -> tuple[str | None, str | None]:
    """Key and value of a __share_group_state record as Kafka 4.x's share group state decoder
    prints them (the coordinator-record JSON of the offsets decoder: `{"type":"0","data":{...}}`
    for a ShareSnapshot key, type 1 for a ShareUpdate, `{"version":"0","data":{...}}` values)."""

    if r.key is None:
        raise ValueError(f"Failed to decode message at offset {r.offset} using the specified decoder "
                         "(message had a missing key)")
    try:
        key = bytes(r.key)
        (kt,) = struct.unpack_from(">h", key, 0)
        key_schema: Schema[Message]
        value_schema: Schema[Message]
        if kt == 0:
            key_schema, value_schema = sr.SHARE_SNAPSHOT_KEY, sr.SHARE_SNAPSHOT_VALUE
        elif kt == 1:
            key_schema, value_schema = sr.SHARE_UPDATE_KEY, sr.SHARE_UPDATE_VALUE
        else:
            return f"Unknown record type {kt} at offset {r.offset}, skipping.", None
        # the key structs have a single version, 0, whatever the record type
        key_json = json.dumps({"type": str(kt), "data": message_json(decode(key_schema, 0, key, 2), 0)},
                              separators=(",", ":"))
        if r.value is None:
            return key_json, "<DELETE>"
        value = bytes(r.value)
        (vv,) = struct.unpack_from(">h", value, 0)
        data = message_json(decode(value_schema, vv, value, 2, exact=False), vv)
        return key_json, json.dumps({"version": str(vv), "data": data}, separators=(",", ":"))
    except Exception as e:  # noqa: BLE001 - reported in place of the record, as the offsets decoder does
        return f"Error at offset {r.offset}, skipping. {e}", None


# -- command line ----------------------------------------------------------------------------------
def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="minibroker dump-log",
                                description="Print .log, .index, .timeindex, .snapshot and .txnindex files "
                                            "as Kafka's kafka-dump-log.sh does.")
    p.add_argument("paths", nargs="*", metavar="FILE", help="files to dump")
    p.add_argument("--files", default="", help="comma-separated files (Kafka's spelling)")
    p.add_argument("--print-data-log", action="store_true", help="print keys and payloads (implies deep iteration)")
    p.add_argument("--deep-iteration", action="store_true", help="one line per record, not only per batch")
    p.add_argument("--skip-record-metadata", action="store_true", help="with --print-data-log: only key/payload")
    p.add_argument("--verify-index-only", action="store_true", help="check index entries, print only problems")
    p.add_argument("--index-sanity-check", action="store_true", help="run the load-time index check only")
    p.add_argument("--max-bytes", type=int, default=(1 << 31) - 1, help="read at most this much of a .log")
    p.add_argument("--max-message-size", type=int, default=5 * 1024 * 1024, help="accepted, as Kafka's")
    p.add_argument("--offsets-decoder", action="store_true", help="decode __consumer_offsets records")
    p.add_argument("--transaction-log-decoder", action="store_true", help="decode __transaction_state records")
    p.add_argument("--share-group-state-decoder", action="store_true", help="decode __share_group_state records")
    p.add_argument("--layout", choices=["current", "classic"], default="current",
                   help="batch line layout: current Kafka, or classic (Kafka 2.x/3.0)")
    args = p.parse_args(argv)
    args.all_files = list(args.paths) + [f for f in args.files.split(",") if f]
    if not args.all_files:
        p.error("no files given")
    return args


def main(argv: list[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    out = out or sys.stdout
    err = err or sys.stderr
    parser = None
    if args.offsets_decoder:
        parser = offsets_parser
    elif args.transaction_log_decoder:
        parser = transaction_log_parser
    elif args.share_group_state_decoder:
        parser = share_group_state_parser
    elif args.print_data_log:
        parser = string_parser
    state = DumpState()
    rc = 0
    for name in args.all_files:
        path = Path(name)
        out.write(f"Dumping {name}\n")
        if not path.is_file():
            err.write(f"{name}: no such file\n")
            rc = 1
            continue
        try:
            _dump_one(path, args, parser, state, out, err)
        except Exception as e:  # noqa: BLE001 - a corrupt file is reported, the others still dumped
            out.flush()
            err.write(f"{name}: {type(e).__name__}: {e}\n")
            rc = 1
    out.flush()
    state.print(err)
    return rc


def _dump_one(path: Path, args: argparse.Namespace,
              parser: Callable[[RecordSummary], tuple[str | None, str | None]] | None, state: DumpState, out: TextIO,
              err: TextIO) -> None:
    name = str(path)
    suffix = path.suffix
    if suffix == ".log":
        dump_log(path, out, state, deep=args.deep_iteration, parser=parser,
                 metadata=not args.skip_record_metadata, max_bytes=args.max_bytes, layout=args.layout)
    elif suffix == ".index":
        dump_index(path, out, state, sanity_only=args.index_sanity_check, verify_only=args.verify_index_only)
    elif suffix == ".timeindex":
        dump_time_index(path, out, state, sanity_only=args.index_sanity_check,
                        verify_only=args.verify_index_only)
    elif suffix == ".snapshot":
        dump_producer_snapshot(path, out, err)
    elif suffix == ".txnindex":
        dump_txn_index(path, out)
    else:
        err.write(f"Ignoring unknown file {name}\n")


if __name__ == "__main__":
    sys.exit(main())
