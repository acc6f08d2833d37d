"""Record-level checks of a producer's RecordBatch v2, cheaply (Kafka: LogValidator's record loop).

Theory of operation: the header checks (protocol.records.batch.BatchView.validate) cannot see
whether the records section holds what the header claims. Kafka finds out by iterating every
record of a client batch (DefaultRecordBatch's RecordIterator): fewer records than `recordsCount`
is "premature EOF", more bytes than the records use is "records still remaining", and a compressed
section is decompressed to be iterated. For compacted topics each record must have a key
(LogValidator.validateKey), reported per record (RecordValidationException's RecordErrors, which
Produce v8+ returns as `record_errors`).

Only the framing is walked: each record's length varint, plus, for keys, the three fields before
the key length. Records are never decoded into objects. When every record has the same length
(fixed-size payloads, the common case) even the walk is done in C: if a record's length prefix is
the k bytes p0..pk-1 and spans `stride` bytes with its body, the next m records have that length
iff byte i of each of their strides is pi, which is `body[pos+i:...:stride] == bytes([pi]) * m`:
k slice compares instead of m loop turns.
"""

from __future__ import annotations

from protocol.records.batch import V2_HEADER_SIZE, BatchView, InvalidBatch
from protocol.records.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    Codec,
    CompressionError,
    DecompressionBomb,
    codec_of,
    decompress,
)
from protocol.types import DecodeError, read_uvarint

# attributes int8, timestampDelta, offsetDelta, keyLength, valueLength, headerCount: one byte each
# at least (Kafka: DefaultRecord.readFrom needs them all).
MIN_RECORD_BODY = 6
_PREMATURE_EOF = "Incorrect declared batch size, premature EOF reached"
_REMAINING = "Incorrect declared batch size, records still remaining in file"


class RecordValidationError(InvalidBatch):
    """Kafka's RecordValidationException: some records of a batch were refused, each with its
    index in the batch (ProduceResponse.RecordError). The message is Kafka's, from
    LogValidator.processRecordErrors."""

    def __init__(self, record_errors: list[tuple[int, str]]):
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in record_errors[:3])
        super().__init__(f"One or more records have been rejected due to {len(record_errors)} record errors in "
                         f"total, and only showing the first three errors at most: [{shown}]", "INVALID_RECORD")
        self.record_errors = record_errors


def _invalid(message: str) -> InvalidBatch:
    return InvalidBatch(message, "INVALID_RECORD")  # Kafka: InvalidRecordException


def record_section(view: BatchView, *, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes | memoryview:
    """The batch's records, decompressed if need be (at most `max_size` bytes)."""
    mv = memoryview(view.buf)[view.pos + V2_HEADER_SIZE:view.pos + view.size]
    codec = codec_of(view.compression)
    if codec is Codec.NONE:
        return mv
    try:
        return decompress(codec, mv, magic=2, max_size=max_size)
    except DecompressionBomb:
        raise
    except CompressionError as e:
        if e.error != "CORRUPT_MESSAGE":
            raise
        # Kafka answers UNKNOWN_SERVER_ERROR here, not CORRUPT_MESSAGE: the codec's wrapForInput or
        # DefaultRecordBatch.StreamRecordIterator wraps the IOException in a plain KafkaException
        # ("Failed to decompress record stream"), which ReplicaManager.appendToLocalLog does not list
        # among the known append errors, so Errors.forException maps it to UNKNOWN_SERVER_ERROR. It is
        # also the better answer: not retriable, while CORRUPT_MESSAGE (retriable) would make the
        # client resend the same undecodable bytes until its delivery timeout.
        raise InvalidBatch(f"Failed to decompress record stream: {e}", "UNKNOWN_SERVER_ERROR") from None


def _same_prefix(body: bytes, pos: int, k: int, stride: int, m: int) -> bool:
    """Whether the m records from `pos`, `stride` bytes apart, all start with the k-byte length prefix
    at `pos`: k strided slices compared in C."""
    last = pos + (m - 1) * stride + 1
    return all(body[pos + i:last + i:stride] == body[pos + i:pos + i + 1] * m for i in range(k))


def _run_length(body: bytes, pos: int, k: int, stride: int, most: int) -> int:
    """How many records from `pos` (at most `most`; the first two are known to match) have the same
    length: galloping then bisection, so O(run) bytes compared in C and O(log run) Python steps."""
    good, bad = 2, most + 1
    m = 4
    while m < bad:
        if not _same_prefix(body, pos, k, stride, m):
            bad = m
            break
        good = m
        m *= 2
    else:
        if good < most and _same_prefix(body, pos, k, stride, most):
            return most
    while bad - good > 1:
        mid = (good + bad) // 2
        if _same_prefix(body, pos, k, stride, mid):
            good = mid
        else:
            bad = mid
    return good


def _key_is_null(body, start: int, end: int) -> bool:
    """The record body at [start, end): skip attributes, timestampDelta and offsetDelta, then read
    the keyLength's sign. Any negative keyLength is a null key (DefaultRecord.readFrom), and a
    zigzag varint is negative iff its first byte is odd."""
    pos = start + 1
    for _ in range(2):
        while pos < end and body[pos] & 0x80:
            pos += 1
        pos += 1
    if pos >= end:
        raise _invalid("Found invalid record structure")
    return bool(body[pos] & 1)


def walk_records(body: bytes, count: int, *, require_keys: bool = False) -> list[int]:
    """Check that `body` is exactly `count` well-framed records (InvalidBatch, INVALID_RECORD, if
    not); return the indexes of the records without a key if `require_keys`, else [].

    Records come in runs of equal length (a fixed-size payload changes size only where the offset
    or timestamp delta needs one more varint byte, at 64, 8192, ...): a run is measured with slice
    compares (`_run_length`), so the Python loop turns once per run, not once per record."""
    n = len(body)
    keyless: list[int] = []
    pos = index = 0
    while index < count:
        if pos >= n:
            raise _invalid(_PREMATURE_EOF)
        b = body[pos]
        if b < 0x80:  # one- and two-byte lengths (records under 8 KiB) are read inline, no call
            k = 1
            value = b
        elif pos + 1 < n and body[pos + 1] < 0x80:
            k = 2
            value = (b & 0x7F) | body[pos + 1] << 7
        else:
            try:
                value, after = read_uvarint(body, pos)
            except DecodeError:
                raise _invalid(_PREMATURE_EOF) from None
            k = after - pos
        length = (value >> 1) ^ -(value & 1)
        stride = k + length
        if length < MIN_RECORD_BODY or pos + stride > n:
            raise _invalid(f"Invalid record size: expected {length} bytes in record payload, but instead the "
                           f"buffer has only {n - pos - k} remaining bytes.")
        nxt = pos + stride
        # the next record as long as this one? (first byte alone first: mixed sizes stop there)
        if nxt < n and body[nxt] == b and index + 1 < count and body[nxt:nxt + k] == body[pos:pos + k]:
            m = _run_length(body, pos, k, stride, min(count - index, (n - pos) // stride))
        else:
            m = 1
        if require_keys:
            for i, start in enumerate(range(pos + k, nxt + (m - 1) * stride, stride), index):
                if _key_is_null(body, start, start + length):
                    keyless.append(i)
        pos = nxt + (m - 1) * stride
        index += m
    if pos != n:
        raise _invalid(_REMAINING)
    return keyless


def validate_records(view: BatchView, *, require_keys: bool = False, where: str = "",
                     max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> None:
    """Kafka's record loop over one client v2 batch (whole, header read): its records section must
    hold exactly `recordsCount` records; with `require_keys` (a compacted topic) each needs a key,
    else RecordValidationError naming the records. `where` is the topic-partition for messages.

    Header errors come first, as Kafka checks the header before any record: the CRC is not
    recomputed on success (the log does that), only when the walk fails, so that a corrupt batch
    is reported as corrupt rather than as badly framed."""
    try:
        body = record_section(view, max_size=max_size)
        if view.compression == Codec.NONE:
            body = bytes(body)  # one memcpy; slices and indexing of bytes are the cheapest
        missing = walk_records(body, view.records_count, require_keys=require_keys)
    except InvalidBatch:
        view.validate()  # a header or CRC error wins
        raise
    if missing:
        msg = f"Compacted topic cannot accept message without key in topic partition {where}."
        raise RecordValidationError([(i, msg) for i in missing])
