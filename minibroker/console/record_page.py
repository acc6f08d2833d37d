"""The records of a stored batch for the console's message page, decoded lazily and within a budget
(issue 30, finding 4).

A batch can hold millions of records in a few kilobytes (zstd compresses a repeated tiny record
to almost nothing): decoding all of them to show a page with `limit=1` cost 33 s of the event
loop and 1.5 GiB, for one unauthenticated GET. So a page decodes records one at a time from the
start of the batch and stops at `MAX_PAGE_RECORDS` in all, and decompresses only a prefix of a
compressed batch (`MAX_PAGE_DECOMPRESSED` bytes, through the codec's streaming decoder: gzip, lz4
and zstd; snappy is decompressed whole up to that size, else its records are not shown). What a
page left out is counted (`records_truncated`), and the next page starts after the batch.

Kafka has no such page (its tools read segments from the shell); the cost bounds are ours.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import lz4.frame  # the console's own import: a broker without a console never loads it
import zstandard

from minibroker_protocol.records import v2
from minibroker_protocol.records.batch import NO_SEQUENCE, V2_HEADER_SIZE, BatchView, InvalidBatch
from minibroker_protocol.records.compression import Codec, decompress
from minibroker_protocol.records.dump import RecordSummary

MAX_PAGE_RECORDS = 500  # records rendered by one page, over all its batches
MAX_PAGE_DECOMPRESSED = 4 * 1024 * 1024  # bytes of one batch decompressed for a page


def decompressed_prefix(codec: int, data: bytes | memoryview, limit: int) -> tuple[bytes, bool]:
    """At most `limit` bytes of the decompressed records section, and whether that is all of it."""
    c = Codec(codec)
    if c is Codec.NONE:
        return bytes(data[:limit]), len(data) <= limit
    if c is Codec.GZIP:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out = d.decompress(bytes(data), limit)
        return out, d.eof and not d.unconsumed_tail
    if c is Codec.LZ4:
        lz = lz4.frame.LZ4FrameDecompressor()
        out = lz.decompress(bytes(data), max_length=limit)
        return out, lz.eof
    if c is Codec.ZSTD:
        out_buf = bytearray(limit)
        with zstandard.ZstdDecompressor().stream_reader(bytes(data)) as reader:
            got = 0
            while got < limit:
                n = reader.readinto(memoryview(out_buf)[got:])
                if not n:
                    return bytes(out_buf[:got]), True
                got += n
            return bytes(out_buf), not reader.readinto(bytearray(1))
    return decompress(codec, data, max_size=limit), True  # snappy: whole, or DecompressionBomb


def v2_records(view: BatchView, budget: int) -> tuple[list[RecordSummary], bool, str | None]:
    """Up to `budget` records of the v2 batch `view` (complete, in memory), decoded one by one:
    (records, whether some were left out, why records could not be read)."""
    section = memoryview(view.buf)[view.pos + V2_HEADER_SIZE:view.pos + view.size]
    try:
        data, whole = decompressed_prefix(view.compression, section, MAX_PAGE_DECOMPRESSED)
    except InvalidBatch as e:
        return [], view.records_count > 0, f"records not shown: {e}"
    except Exception as e:  # noqa: BLE001 - each codec library has its own errors; all mean corrupt data
        return [], view.records_count > 0, f"records not shown: {Codec(view.compression).name.lower()} data is corrupt: {e}"
    out: list[RecordSummary] = []
    for r in _records(view, data, min(budget, view.records_count)):
        out.append(r)
    truncated = len(out) < view.records_count
    error = None
    if truncated and len(out) < budget and not whole:
        error = f"records past the first {MAX_PAGE_DECOMPRESSED} decompressed bytes are not shown"
    return out, truncated, error


def _records(view: BatchView, data: bytes, n: int) -> Iterator[RecordSummary]:
    log_append = view.max_timestamp if view.timestamp_type == 1 else None
    pos, end = 0, len(data)
    seq_base = view.base_sequence
    for _ in range(n):
        if pos >= end:
            return
        try:
            r, pos = v2.read_record(data, pos, end)
        except InvalidBatch:
            return  # the prefix ends inside a record, or the data is bad: show what came before
        seq = NO_SEQUENCE if seq_base < 0 else v2.last_sequence(seq_base, r.offset_delta)
        control = v2.parse_control_record(r) if view.is_control else None
        ts = log_append if log_append is not None else view.base_timestamp + r.timestamp_delta
        yield RecordSummary(view.base_offset + r.offset_delta, ts, r.key, r.value, list(r.headers), seq, control)
