"""Record-level checks of a producer's RecordBatch v2, every field of every record, cheaply (Kafka:
LogValidator's record loop over DefaultRecord.readFrom).

Theory of operation: the header checks (minibroker_protocol.records.batch.BatchView.validate) cannot see
whether the records section holds what the header claims. Kafka finds out by iterating every
record of a client batch (DefaultRecordBatch's RecordIterator): fewer records than `recordsCount`
is "premature EOF", more bytes than the records use is "records still remaining", a compressed
section is decompressed to be iterated, and each record is read field by field
(DefaultRecord.readFrom): varints no longer than ByteUtils allows, a non-negative header count,
non-negative header key sizes, and fields that end exactly at the record's length. For compacted
topics each record must have a key (LogValidator.validateKey), reported per record
(RecordValidationException's RecordErrors, which Produce v8+ returns as `record_errors`).

The rules are the union of Kafka's and our decoder's (minibroker_protocol.records.v2.read_record), so that
nothing reaches a segment that either would refuse to read back:
- Kafka's: an int32 varint (the record length, offsetDelta, every size and count) has at most 5
  bytes, a varlong (timestampDelta) at most 10; our decoder reads 10 for all.
- the decoder's: a key, value or header value size below -1 is refused (Kafka reads any negative
  size as null); a size whose 5-byte varint overflows int32 is taken at its full value, as the
  decoder does (Kafka drops the high bits); and a header key must be UTF-8, as the decoder reads
  it as a str (Kafka keeps the bytes and decodes lazily, replacing bad sequences; refusing keeps
  fetch, compaction and format conversion able to decode every stored record).
The messages are Kafka's where it has one. Uncompressed, reads are bounded by the section's end
as in Kafka; Kafka bounds a compressed record by its own length, so a compressed record whose
field overruns it can get "Invalid record size" here where Kafka says "Found invalid record
structure": same verdict, other words.

Records are never decoded into objects, and most are not even read in Python. A record's *layout*
is what fixes where its fields lie: the bytes of its length varint and of every size and count
field (keyLength, valueLength, headersCount, each header's key and value sizes), and which bytes
of its timestampDelta and offsetDelta varints carry the continuation bit. The first record of a
run is read in full, in Python; its layout is then compared with the next m records of the
same length in C, one strided slice per structural byte: `body[pos+j::stride][:m]` must equal m
copies of the first record's byte j for a size byte, and must be all >= 0x80 or all < 0x80
(`translate` + `isascii`) for a delta varint's byte. A record with the same layout as a valid one
is valid: it has the same length, its deltas are varints of the same byte count (any bytes with
that continuation pattern are a varint, and the first record's count is within Kafka's limits),
so its sizes are read at the same places with the same values, its key, value and header value
bytes are opaque, and its fields end where the first record's do. Header key bytes are contents
that must be UTF-8: all-ASCII columns (`isascii`) prove that; a first record with a non-ASCII key
makes its key bytes part of the layout. Runs are found by galloping and bisection on m (the
checks hold for m records iff they hold for each; each step compares only the records not yet
known to match, and the run's end is guessed from where offsetDelta needs one more byte, at 64,
8192, ..., if it counts up from the record's index as clients write it), so a batch costs
O(records) bytes compared in C and O(runs x log(run)) Python steps. Where a run ends the next
record is read in full and starts a new layout (so a wrong guess costs one more run). With
require_keys, a run's records all share the first one's keyLength, hence its null-ness.
Records of varying sizes are each read in Python: inline in walk_records for the common shape
(short varints, no headers), else by _read_record; about 1 us/record (bench/validate.py), where
the framing alone cost about 0.4 us.
"""

from __future__ import annotations

import hashlib

from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.records.batch import V2_HEADER_SIZE, BatchView, InvalidBatch
from minibroker_protocol.records.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    Codec,
    CompressionError,
    DecompressionBomb,
    codec_of,
    decompress,
)

MAX_VARINT = 5  # ByteUtils.readVarint: "Varint is too long, the most significant bit in the 5th byte is set"
MAX_VARLONG = 10  # ByteUtils.readVarlong: "Varlong is too long, most significant bit in the 10th byte is set"
_PREMATURE_EOF = "Incorrect declared batch size, premature EOF reached"
_REMAINING = "Incorrect declared batch size, records still remaining in file"
# DefaultRecord.readFrom wraps BufferUnderflowException and ByteUtils' IllegalArgumentException (a
# varint too long) in this; the cause is not sent to the client
_STRUCTURE = "Found invalid record structure"
_FLIP = bytes(b ^ 0x80 for b in range(256))  # continuation bit inverted: "all set" becomes isascii()


class RecordValidationError(InvalidBatch):
    """Kafka's RecordValidationException: some records of a batch were refused, each with its
    index in the batch (ProduceResponse.RecordError). The message is Kafka's, from
    LogValidator.processRecordErrors."""

    def __init__(self, record_errors: list[tuple[int, str]]):
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in record_errors[:3])
        super().__init__(f"One or more records have been rejected due to {len(record_errors)} record errors in "
                         f"total, and only showing the first three errors at most: [{shown}]", ErrorCode.INVALID_RECORD)
        self.record_errors = record_errors


def _invalid(message: str) -> InvalidBatch:
    return InvalidBatch(message, ErrorCode.INVALID_RECORD)  # Kafka: InvalidRecordException


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
        if e.code != ErrorCode.CORRUPT_MESSAGE:
            raise
        # Kafka answers UNKNOWN_SERVER_ERROR here, not CORRUPT_MESSAGE: the codec's wrapForInput or
        # DefaultRecordBatch.StreamRecordIterator wraps the IOException in a plain KafkaException
        # ("Failed to decompress record stream"), which ReplicaManager.appendToLocalLog does not list
        # among the known append errors, so Errors.forException maps it to UNKNOWN_SERVER_ERROR. It is
        # also the better answer: not retriable, while CORRUPT_MESSAGE (retriable) would make the
        # client resend the same undecodable bytes until its delivery timeout.
        raise InvalidBatch(f"Failed to decompress record stream: {e}", ErrorCode.UNKNOWN_SERVER_ERROR) from None


# ------------------------------------------------------------------------- one record in Python


def _varint(body: bytes, p: int, most: int) -> tuple[int, int]:
    """The zigzag varint at `p` (at most `most` bytes, as ByteUtils) and the position after it;
    IndexError if it runs off the end. The value is not cut to 32 bits, as minibroker_protocol.types.read_varint."""
    raw = shift = 0
    for q in range(p, p + most):
        b = body[q]
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), q + 1
        shift += 7
    raise _invalid(_STRUCTURE)  # "Varint is too long" (IllegalArgumentException in readFrom)


def _skip_varint(body: bytes, p: int, most: int) -> int:
    """The position after the varint at `p` whose first byte has the continuation bit."""
    for q in range(p + 1, p + most):
        if body[q] < 0x80:
            return q + 1
    raise _invalid(_STRUCTURE)


def _read_record(body: bytes, start: int, length: int) -> bool:
    """Read the record body of `length` bytes at `start` as DefaultRecord.readFrom does (plus our
    decoder's rules, see the module doc); InvalidBatch if it is malformed, else whether its key is
    null. One-byte varints, nearly every one in practice, are read inline."""
    n = len(body)
    try:
        p = start + 1  # attributes: unused by Kafka and by v2.read_record
        p = p + 1 if body[p] < 0x80 else _skip_varint(body, p, MAX_VARLONG)  # timestampDelta
        p = p + 1 if body[p] < 0x80 else _skip_varint(body, p, MAX_VARINT)  # offsetDelta
        b = body[p]
        if b < 0x80:
            size, p = (b >> 1) ^ -(b & 1), p + 1
        else:
            size, p = _varint(body, p, MAX_VARINT)
        key_null = size < 0
        if size >= 0:
            p += size
        elif size != -1:
            raise _invalid(f"Invalid negative key size {size}")
        b = body[p]
        if b < 0x80:
            size, p = (b >> 1) ^ -(b & 1), p + 1
        else:
            size, p = _varint(body, p, MAX_VARINT)
        if size >= 0:
            p += size
        elif size != -1:
            raise _invalid(f"Invalid negative value size {size}")
        b = body[p]
        if b < 0x80:
            count, p = (b >> 1) ^ -(b & 1), p + 1
        else:
            count, p = _varint(body, p, MAX_VARINT)
        if count:
            p = _read_headers(body, p, count)
    except IndexError:  # Kafka: BufferUnderflowException
        raise _invalid(_STRUCTURE) from None
    if p != start + length:
        if p > n:
            raise _invalid(_STRUCTURE)
        raise _invalid(f"Invalid record size: expected to read {length} bytes in record payload, but instead "
                       f"read {p - start}")
    return key_null


def _read_headers(body: bytes, p: int, count: int) -> int:
    """DefaultRecord.readHeaders, after its count check; the position after the headers."""
    if count < 0:
        raise _invalid(f"Found invalid number of record headers {count}")
    n = len(body)
    if count > n - p:
        raise _invalid(f"Found invalid number of record headers. {count} is larger than the remaining size of the "
                       f"buffer")
    for _ in range(count):
        size, p = _varint(body, p, MAX_VARINT)
        if size < 0:
            raise _invalid(f"Invalid negative header key size {size}")
        q = p + size
        if q > n:
            raise IndexError
        if not body[p:q].isascii():
            try:
                body[p:q].decode()
            except UnicodeDecodeError:
                raise _invalid("Invalid header key: not UTF-8") from None
        size, p = _varint(body, q, MAX_VARINT)
        if size >= 0:
            p += size
        elif size != -1:
            raise _invalid(f"Invalid negative header value size {size}")
    return p


# ------------------------------------------------------------------ the next records, in C


def _layout(body: bytes, pos: int, k: int) -> tuple[list[int], list[int], list[int], int]:
    """The layout of the valid record at `pos` whose length varint has `k` bytes, as offsets from
    `pos`: the bytes that must be equal in a record of the same layout (length and size varints,
    non-ASCII header keys), those that must be < 0x80 (the last byte of a delta varint, ASCII
    header key bytes), those that must be >= 0x80 (a delta varint's other bytes); and how many
    records from this one keep its offsetDelta's byte count if offsetDelta counts up by one (a
    guess for the run's length: offsetDelta is the record's index in clients' batches)."""
    fixed = list(range(k))
    low: list[int] = []
    high: list[int] = []

    def end_of(p: int) -> int:
        while body[p] >= 0x80:
            p += 1
        return p + 1

    def size_at(p: int) -> tuple[int, int]:  # a size varint: its bytes are fixed; (value, after)
        q = end_of(p)
        fixed.extend(range(p - pos, q - pos))
        raw = _raw(body, p, q)
        return (raw >> 1) ^ -(raw & 1), q

    p = pos + k + 1
    delta = 0
    for _ in range(2):  # timestampDelta, offsetDelta
        q = end_of(p)
        high.extend(range(p - pos, q - 1 - pos))
        low.append(q - 1 - pos)
        raw = _raw(body, p, q)
        delta, width, p = (raw >> 1) ^ -(raw & 1), q - p, q
    guess = (1 << (7 * width - 1)) - delta if delta >= 0 else 2
    for _ in range(2):  # key, value
        size, p = size_at(p)
        p += max(size, 0)
    count, p = size_at(p)
    for _ in range(count):
        size, p = size_at(p)
        key = body[p:p + size]
        (low if key.isascii() else fixed).extend(range(p - pos, p + size - pos))
        size, p = size_at(p + size)
        p += max(size, 0)
    return fixed, low, high, guess


def _raw(body: bytes, p: int, q: int) -> int:
    """The unsigned value of the varint body[p:q]."""
    raw = 0
    for i, b in enumerate(body[p:q]):
        raw |= (b & 0x7F) << (7 * i)
    return raw


def _same_layout(body: bytes, pos: int, stride: int, first: int, m: int, fixed: list[int], low: list[int],
                 high: list[int]) -> bool:
    """Whether records first..m-1 from `pos`, `stride` bytes apart (all inside `body`), have the
    layout of the one at `pos`: one strided slice per structural byte, compared in C."""
    start = pos + first * stride
    last = pos + (m - 1) * stride + 1
    count = m - first
    for j in fixed:
        if body[start + j:last + j:stride] != body[pos + j:pos + j + 1] * count:
            return False
    for j in low:
        if not body[start + j:last + j:stride].isascii():
            return False
    return all(body[start + j:last + j:stride].translate(_FLIP).isascii() for j in high)


def _run_length(body: bytes, pos: int, k: int, stride: int, most: int) -> int:
    """How many records from the valid one at `pos` (at most `most`, all inside `body`) share its
    layout: galloping (2, 4, 8, ..., with the guessed end of the run on the way), then bisection,
    each step comparing only the records not yet known to match; O(run) bytes compared in C
    and O(log run) Python steps."""
    if most < 2:
        return 1
    fixed, low, high, guess = _layout(body, pos, k)
    good, bad = 1, most + 1
    m = 2
    while True:
        if not _same_layout(body, pos, stride, good, m, fixed, low, high):
            bad = m
            break
        good = m
        if m == most or m == guess:  # the guess is taken as the end: if wrong, the next run goes on
            return m
        m = min(2 * m, most, guess if guess > m else most)
    while bad - good > 1:
        mid = (good + bad) // 2
        if _same_layout(body, pos, stride, good, mid, fixed, low, high):
            good = mid
        else:
            bad = mid
    return good


# ------------------------------------------------------------------------------ the batch


def walk_records(body: bytes, count: int, *, require_keys: bool = False) -> list[int]:
    """Check that `body` is exactly `count` valid records (InvalidBatch, INVALID_RECORD, if not);
    return the indexes of the records without a key if `require_keys`, else [].

    Each run of records of one layout costs one Python read of its first record and a few slice
    compares (`_run_length`); a record of another length than its predecessor starts a new run.
    Errors are found in record order (the first record of a layout that differs is read in full),
    so the message is the one Kafka's iteration would give first."""
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
                k = _skip_varint(body, pos, MAX_VARINT) - pos
            except IndexError:
                raise _invalid(_PREMATURE_EOF) from None
            value = _raw(body, pos, pos + k)
        length = (value >> 1) ^ -(value & 1)
        start = pos + k
        if length > n - start:
            raise _invalid(f"Invalid record size: expected {length} bytes in record payload, but instead the "
                           f"buffer has only {n - start} remaining bytes.")
        nxt = start + length
        # The common record read inline, no call: one- or two-byte offsetDelta and sizes, no
        # headers. Whatever else, valid or not, sets p past the end and is left to _read_record.
        try:
            p = start + 2 if body[start + 1] < 0x80 else _skip_varint(body, start + 1, MAX_VARLONG)
            if body[p] < 0x80:  # offsetDelta
                p += 1
            elif body[p + 1] < 0x80:
                p += 2
            else:
                p = _skip_varint(body, p, MAX_VARINT)
            c = body[p]  # keyLength: -1 is 0x01, any other odd value is negative
            key_null = c == 1
            if c < 0x80:
                p += 1 + (c >> 1) if not c & 1 else 1 if key_null else n + 1
            elif body[p + 1] < 0x80 and not c & 1:
                p += 2 + ((c & 0x7F) >> 1 | body[p + 1] << 6)
            else:
                p = n + 1
            c = body[p]  # valueLength
            if c < 0x80:
                p += 1 + (c >> 1) if not c & 1 else 1 if c == 1 else n + 1
            elif body[p + 1] < 0x80 and not c & 1:
                p += 2 + ((c & 0x7F) >> 1 | body[p + 1] << 6)
            else:
                p = n + 1
            p = p + 1 if body[p] == 0 else n + 1  # headersCount
        except IndexError:
            p = n + 1
        if p != nxt:
            key_null = _read_record(body, start, length)  # raises for any length < 6
        stride = k + length
        # the next record as long as this one? (first byte alone first: mixed sizes stop there)
        if nxt < n and body[nxt] == b and index + 1 < count and body[nxt:nxt + k] == body[pos:start]:
            m = _run_length(body, pos, k, stride, min(count - index, (n - pos) // stride))
        else:
            m = 1
        if key_null and require_keys:
            keyless.extend(range(index, index + m))
        pos += m * stride
        index += m
    if pos != n:
        raise _invalid(_REMAINING)
    return keyless


# Walks done ahead, off the broker's event loop (minibroker.record_walks): the batch's digest and
# the walk's parameters -> the error it raised (None: valid). A batch of millions of compressed
# records costs seconds to walk (issue 30), so the produce handler walks such batches on a worker
# thread first and the log's validator, on the loop, takes the verdict here instead of walking
# again. Keyed by the batch's bytes (BLAKE2b), so another batch can never borrow a verdict.
PREWALK_MIN_RECORDS = 10_000
_walked: dict[tuple[bytes, bool, str], Exception | None] = {}


def _walk_key(view: BatchView, require_keys: bool, where: str) -> tuple[bytes, bool, str]:
    return hashlib.blake2b(view.buf[view.pos:view.pos + view.size], digest_size=16).digest(), require_keys, where


def prewalk_records(view: BatchView, *, require_keys: bool = False, where: str = "") -> None:
    """`validate_records`, remembering its verdict for the next `validate_records` of these bytes
    (which then costs a digest). Safe to call on another thread."""
    key = _walk_key(view, require_keys, where)
    try:
        validate_records(view, require_keys=require_keys, where=where)
    except (InvalidBatch, RecordValidationError) as e:
        _walked[key] = e
    else:
        _walked[key] = None


def forget_prewalk(view: BatchView, *, require_keys: bool = False, where: str = "") -> None:
    """Drop a verdict that was not used (the append did not get to the walk)."""
    _walked.pop(_walk_key(view, require_keys, where), None)


def validate_records(view: BatchView, *, require_keys: bool = False, where: str = "",
                     max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> None:
    """Kafka's record loop over one client v2 batch (whole, header read): its records section must
    hold exactly `recordsCount` valid records; with `require_keys` (a compacted topic) each needs a
    key, else RecordValidationError naming the records. `where` is the topic-partition for messages.

    Header errors come first, as Kafka checks the header before any record: the CRC is not
    recomputed on success (the log does that), only when the walk fails, so that a corrupt batch
    is reported as corrupt rather than as badly framed."""
    if _walked and view.records_count >= PREWALK_MIN_RECORDS:
        key = _walk_key(view, require_keys, where)
        if key in _walked:
            error = _walked.pop(key)
            if error is not None:
                raise error
            return
    try:
        section = record_section(view, max_size=max_size)
        # one memcpy of an uncompressed section (slices and indexing of bytes are the cheapest); a
        # decompressed one is bytes already
        body = section if isinstance(section, bytes) else bytes(section)
        missing = walk_records(body, view.records_count, require_keys=require_keys)
    except InvalidBatch:
        view.validate()  # a header or CRC error wins
        raise
    if missing:
        # Kafka 4.4's text (no final period; tests/reference/test_differential_data.py)
        msg = f"Compacted topic cannot accept message without key in topic partition {where}"
        raise RecordValidationError([(i, msg) for i in missing])
