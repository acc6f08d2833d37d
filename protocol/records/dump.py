"""Record data for humans: a summary of every batch in a buffer, in any format, and lines in
the style of Kafka's DumpLogSegments (seed 003 shows its output).

Theory of operation: `iter_summaries` walks the entries of a buffer (segment file contents, a
produce request's records, a fetch response's records) by their size fields, as
minibroker_protocol.records.batch.iter_batches does, and summarises each one without trusting it: a bad
CRC or an unreadable record section is reported in the summary (`is_valid`, `error`) rather than
raised, because the tools that call this exist to look at broken data. It stops at a partial
entry at the end (a fetch may end mid-batch) or at an entry whose header cannot be trusted to
find the next one, and reports that through `trailing`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from minibroker_protocol.records import legacy, v2
from minibroker_protocol.records.batch import (
    LOG_OVERHEAD,
    NO_SEQUENCE,
    V2_HEADER_SIZE,
    BatchView,
    InvalidBatch,
)
from minibroker_protocol.records.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, Codec

_TIMESTAMP_TYPE_NAMES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}


@dataclass(slots=True)
class RecordSummary:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    sequence: int = NO_SEQUENCE
    control: v2.ControlRecord | None = None


@dataclass(slots=True)
class BatchSummary:
    """One entry of a buffer: a v2 batch, or a v0/v1 message (a compressed one counts its inner
    messages, whose offsets it spans)."""

    position: int
    base_offset: int
    last_offset: int
    count: int | None
    compression: int
    size: int
    magic: int
    crc: int
    is_valid: bool
    base_timestamp: int
    max_timestamp: int
    timestamp_type: int  # -1 (v0), 0 CreateTime, 1 LogAppendTime
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = NO_SEQUENCE
    last_sequence: int = NO_SEQUENCE
    partition_leader_epoch: int = -1
    is_transactional: bool = False
    is_control: bool = False
    records: list[RecordSummary] | None = None
    error: str | None = None

    @property
    def codec_name(self) -> str:
        try:
            return Codec(self.compression).kafka_name
        except ValueError:
            return f"UNKNOWN({self.compression})"


@dataclass(slots=True)
class Trailing:
    """Bytes after the last whole entry: a partial entry, or data no header makes sense of."""

    position: int
    size: int
    reason: str


def iter_summaries(buf, *, records: bool = False, position: int = 0,
                   max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> Iterator[BatchSummary | Trailing]:
    """A BatchSummary per whole entry of `buf` (records included when asked), then a Trailing
    if bytes are left over. `position` is added to reported positions (a file offset)."""
    pos = 0
    n = len(buf)
    while pos < n:
        try:
            view = BatchView(buf, pos)
        except InvalidBatch as e:
            yield Trailing(position + pos, n - pos, str(e))
            return
        if view.batch_length < 0 or not view.is_complete():
            yield Trailing(position + pos, n - pos, "partial entry")
            return
        yield summarize(view, records=records, position=position + pos, max_size=max_size)
        pos += view.size


def summarize(view: BatchView, *, records: bool = False, position: int | None = None,
              max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> BatchSummary:
    """Summarise the (complete) entry `view` points at."""
    try:
        view.validate() if view.magic < 2 else _check_v2_crc(view)
        valid = True
        error = None
    except InvalidBatch as e:
        valid = False
        error = str(e)
    s = BatchSummary(
        position=view.pos if position is None else position, base_offset=view.base_offset,
        last_offset=view.last_offset, count=view.records_count, compression=view.compression, size=view.size,
        magic=view.magic, crc=view.crc, is_valid=valid, base_timestamp=view.base_timestamp,
        max_timestamp=view.max_timestamp,
        timestamp_type=view.timestamp_type if view.magic > 0 else legacy.NO_TIMESTAMP_TYPE,
        producer_id=view.producer_id, producer_epoch=view.producer_epoch, base_sequence=view.base_sequence,
        last_sequence=v2.last_sequence(view.base_sequence, view.last_offset_delta),
        partition_leader_epoch=view.partition_leader_epoch, is_transactional=view.is_transactional,
        is_control=view.is_control, error=error,
    )
    raw = memoryview(view.buf)[view.pos:view.pos + view.size]
    needs_inner = view.magic < 2 and view.compression != 0
    if not (records or needs_inner):
        return s
    try:
        recs = _records(raw, view, max_size)
    except InvalidBatch as e:
        # isvalid stays what DumpLogSegments means by it (size and CRC); the reason is kept.
        s.error = s.error or str(e)
        return s
    if needs_inner and recs:
        s.base_offset = recs[0].offset
        s.count = len(recs)
    if records:
        s.records = recs
    return s


def _check_v2_crc(view: BatchView) -> None:
    # DumpLogSegments' isvalid is the size and CRC check (DefaultRecordBatch.isValid), not the
    # producer-side count checks BatchView.validate adds.
    if view.batch_length < V2_HEADER_SIZE - LOG_OVERHEAD:
        raise InvalidBatch(f"batch length {view.batch_length} is smaller than a header")
    actual = view.compute_crc()
    if actual != view.crc:
        raise InvalidBatch(f"stored crc = {view.crc}, computed crc = {actual}")


def _records(raw, view: BatchView, max_size: int) -> list[RecordSummary]:
    if view.magic == 2:
        batch = v2.decode_batch(raw, max_size=max_size, verify_crc=False)
        out = []
        for r in batch.records:
            seq = NO_SEQUENCE if batch.base_sequence < 0 else v2.last_sequence(batch.base_sequence, r.offset_delta)
            control = v2.parse_control_record(r) if batch.is_control else None
            out.append(RecordSummary(r.offset, r.timestamp, r.key, r.value, list(r.headers), seq, control))
        return out
    return [RecordSummary(m.offset, m.timestamp, m.key, m.value)
            for m in legacy.iter_deep(raw, max_size=max_size, verify_crc=False)]


def _bool(b: bool) -> str:
    return "true" if b else "false"


def format_batch(s: BatchSummary) -> str:
    """One line as DumpLogSegments prints a batch (the layout of seed 003)."""
    if s.magic >= 2:
        head = (f"baseOffset: {s.base_offset} lastOffset: {s.last_offset} count: {s.count} "
                f"baseSequence: {s.base_sequence} lastSequence: {s.last_sequence} producerId: {s.producer_id} "
                f"producerEpoch: {s.producer_epoch} partitionLeaderEpoch: {s.partition_leader_epoch} "
                f"isTransactional: {_bool(s.is_transactional)} isControl: {_bool(s.is_control)}")
    else:
        head = f"offset: {s.last_offset}"
    return (f"{head} position: {s.position} {_TIMESTAMP_TYPE_NAMES.get(s.timestamp_type, '?')}: "
            f"{s.max_timestamp} isvalid: {_bool(s.is_valid)} size: {s.size} magic: {s.magic} "
            f"compresscodec: {s.codec_name} crc: {s.crc}")


def format_record(r: RecordSummary, timestamp_type: int = 0, *, payload: bool = False) -> str:
    """One `| offset: ...` line for a record, as DumpLogSegments --deep-iteration prints it."""
    line = (f"| offset: {r.offset} {_TIMESTAMP_TYPE_NAMES.get(timestamp_type, '?')}: {r.timestamp} "
            f"keySize: {-1 if r.key is None else len(r.key)} valueSize: {-1 if r.value is None else len(r.value)} "
            f"sequence: {r.sequence} headerKeys: [{', '.join(k for k, _ in r.headers)}]")
    if r.control is not None:
        if r.control.coordinator_epoch is not None:
            name = "COMMIT" if r.control.is_commit else "ABORT"
            line += f" endTxnMarker: {name} coordinatorEpoch: {r.control.coordinator_epoch}"
        else:
            line += f" controlType: {r.control.type}"
    elif payload:
        line += f" key: {_text(r.key)} payload: {_text(r.value)}"
    return line


def _text(b: bytes | None) -> str:
    if b is None:
        return "null"
    return b.decode("utf-8", errors="backslashreplace")


def dump(buf, *, records: bool = False, payload: bool = False, position: int = 0,
         max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> Iterator[str]:
    """Lines describing `buf`, batch by batch (and record by record when asked)."""
    for item in iter_summaries(buf, records=records or payload, position=position, max_size=max_size):
        if isinstance(item, Trailing):
            yield f"trailing bytes at position {item.position}: {item.size} ({item.reason})"
            continue
        yield format_batch(item)
        if item.error and not item.is_valid:
            yield f"| error: {item.error}"
        for r in item.records or ():
            yield format_record(r, item.timestamp_type, payload=payload)


__all__ = ["BatchSummary", "RecordSummary", "Trailing", "dump", "format_batch", "format_record", "iter_summaries",
           "summarize"]
