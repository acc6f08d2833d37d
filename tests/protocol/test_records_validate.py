"""Record-level validation of producer batches (protocol.records.validate): golden bytes, the
uniform fast path against the loop, and properties over every codec."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.records import validate
from protocol.records.batch import BatchView, InvalidBatch, crc32c
from protocol.records.compression import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    DecompressionBomb,
    compress,
    decompress,
)
from protocol.records.v2 import Record, build_batch, encode_records
from protocol.records.validate import RecordValidationError, validate_records, walk_records

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]

# build_batch([Record(key=b"k", value=b"v")], base_timestamp=0): the header, then one record: length
# 0x10 (zigzag 8), attributes 0, timestampDelta 0, offsetDelta 0, key 0x02 (1) "k", value 0x02 "v",
# headerCount 0.
GOLDEN = bytes.fromhex(
    "0000000000000000" "0000003a" "ffffffff" "02" "fe917cab" "0000" "00000000"
    "0000000000000000" "0000000000000000" "ffffffffffffffff" "ffff" "ffffffff" "00000001"
    "10" "00" "00" "00" "026b" "0276" "00"
)


def with_header_fixed(b: bytes | bytearray, *, count: int | None = None) -> bytes:
    """`b` with its batch length, optionally its record count, and its CRC made consistent again."""
    out = bytearray(b)
    struct.pack_into(">i", out, 8, len(out) - 12)
    if count is not None:
        struct.pack_into(">i", out, 57, count)
        struct.pack_into(">i", out, 23, max(count - 1, 0))  # lastOffsetDelta: only the records are wrong
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


def error_of(b: bytes, **kw) -> InvalidBatch | None:
    try:
        validate_records(BatchView(b), **kw)
    except InvalidBatch as e:
        return e
    return None


# ------------------------------------------------------------------------------ golden


def test_golden_batch_passes():
    assert build_batch([Record(key=b"k", value=b"v")], base_timestamp=0) == GOLDEN
    assert error_of(GOLDEN) is None
    assert error_of(GOLDEN, require_keys=True) is None


def test_golden_batch_claiming_two_records_fails_with_premature_eof():
    bad = with_header_fixed(GOLDEN, count=2)
    assert bad.hex().endswith("00000002" "10000000026b027600")
    e = error_of(bad)
    assert (e.error, str(e)) == ("INVALID_RECORD", "Incorrect declared batch size, premature EOF reached")


def test_golden_batch_with_a_trailing_byte_fails_with_records_remaining():
    e = error_of(with_header_fixed(GOLDEN + b"\x00"))
    assert (e.error, str(e)) == ("INVALID_RECORD", "Incorrect declared batch size, records still remaining in file")


def test_golden_record_with_a_null_key_is_named_by_index():
    b = build_batch([Record(key=b"k", value=b"v"), Record(offset_delta=1, value=b"v")], base_timestamp=0)
    assert error_of(b) is None
    e = error_of(b, require_keys=True, where="t-0")
    assert isinstance(e, RecordValidationError) and e.error == "INVALID_RECORD"
    assert e.record_errors == [(1, "Compacted topic cannot accept message without key in topic partition t-0.")]
    assert str(e) == ("One or more records have been rejected due to 1 record errors in total, and only showing the "
                      "first three errors at most: [RecordError(batchIndex=1, message='Compacted topic cannot accept "
                      "message without key in topic partition t-0.')]")


# -------------------------------------------------------------------------- error precedence


def test_a_crc_error_wins_over_a_framing_error():
    bad = bytearray(with_header_fixed(GOLDEN, count=2))
    bad[-1] ^= 0xFF
    assert error_of(bytes(bad)).error == "CORRUPT_MESSAGE"


def test_undecompressable_data_is_unknown_server_error_as_in_kafka():
    b = bytearray(build_batch([Record(value=b"v")], base_timestamp=0, compression=GZIP))
    e = error_of(with_header_fixed(b[:61] + b"not gzip at all"))
    assert e.error == "UNKNOWN_SERVER_ERROR" and "Failed to decompress record stream" in str(e)


def test_a_decompression_bomb_stays_invalid_record():
    b = build_batch([Record(value=bytes(10_000))], base_timestamp=0, compression=ZSTD)
    with pytest.raises(DecompressionBomb):
        validate_records(BatchView(b), max_size=1000)


def test_a_record_too_short_for_its_fields_is_refused():
    # one record whose length says 2 bytes: attributes and one varint cannot hold a record
    b = with_header_fixed(GOLDEN[:61] + b"\x04\x00\x00", count=1)
    assert error_of(b).error == "INVALID_RECORD"


# ------------------------------------------------------------------- fast path vs. the loop


def test_uniform_records_take_the_slicing_path_and_agree_with_the_loop():
    # a null key is 1 byte shorter than b"k": its value is 1 byte longer, so all records are the same
    # size (offset deltas < 64 are one-byte varints)
    recs = [Record(offset_delta=i, key=None if i % 7 == 3 else b"k", value=bytes(101 if i % 7 == 3 else 100))
            for i in range(60)]
    body = encode_records(recs)
    assert len(body) % len(recs) == 0
    assert validate._run_length(body, 0, 1, len(body) // len(recs), len(recs)) == len(recs)
    expected = [i for i, r in enumerate(recs) if r.key is None]
    assert walk_records(body, len(recs), require_keys=True) == expected
    # the same records through the loop (the slicing path refuses a body one record short)
    assert walk_records(body + encode_records([Record(key=b"k", value=b"other size")]), len(recs) + 1,
                        require_keys=True) == expected


def test_uniform_prefix_but_wrong_total_falls_back_and_fails():
    body = encode_records([Record(offset_delta=i, value=bytes(100)) for i in range(10)])
    for bad, count in ((body[:-1], 10), (body + b"\x00", 10), (body, 11), (body, 9)):
        with pytest.raises(InvalidBatch):
            walk_records(bad, count)


# -------------------------------------------------------------------------------- properties

record_st = st.builds(
    Record,
    timestamp_delta=st.integers(0, 1 << 40),
    offset_delta=st.just(0),
    key=st.one_of(st.none(), st.binary(max_size=20)),
    value=st.one_of(st.none(), st.binary(max_size=300)),
    headers=st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))), max_size=2),
)
uniform_st = st.tuples(st.integers(1, 300), st.integers(0, 200)).map(
    lambda t: [Record(offset_delta=0, key=b"key", value=bytes(t[1]))] * t[0])
records_st = st.one_of(st.lists(record_st, min_size=1, max_size=40), uniform_st).map(
    lambda rs: [Record(r.attributes, r.timestamp_delta, i, r.key, r.value, r.headers) for i, r in enumerate(rs)])


def _build(recs: list[Record], codec: int) -> bytes:
    return build_batch(recs, base_timestamp=1_700_000_000_000, compression=codec)


def _rebuilt(batch: bytes, codec: int, body: bytes, count: int | None = None) -> bytes:
    """`batch` with its records section replaced by `body` (compressed with `codec`)."""
    section = body if codec == NONE else compress(codec, body)
    return with_header_fixed(batch[:61] + section, count=count)


@pytest.mark.parametrize("codec", CODECS)
@given(recs=records_st)
@settings(max_examples=40, deadline=None)
def test_every_built_batch_passes(codec, recs):
    b = _build(recs, codec)
    assert error_of(b) is None
    e = error_of(b, require_keys=True, where="t-0")
    assert [i for i, _ in (e.record_errors if e is not None else [])] == [i for i, r in enumerate(recs) if r.key is None]


@pytest.mark.parametrize("codec", CODECS)
@given(recs=records_st, data=st.data())
@settings(max_examples=40, deadline=None)
def test_a_wrong_record_count_fails(codec, recs, data):
    b = _build(recs, codec)
    count = data.draw(st.integers(0, len(recs) + 50).filter(lambda c: c != len(recs)))
    body = encode_records(recs)
    e = error_of(_rebuilt(b, codec, body, count))
    assert e is not None and e.error == "INVALID_RECORD"


@pytest.mark.parametrize("codec", CODECS)
@given(recs=records_st, data=st.data())
@settings(max_examples=40, deadline=None)
def test_a_truncated_or_extended_body_fails(codec, recs, data):
    b = _build(recs, codec)
    body = encode_records(recs)
    if data.draw(st.booleans()):
        body = body[:-data.draw(st.integers(1, len(body)))]
    else:
        body = body + data.draw(st.binary(min_size=1, max_size=300))
    e = error_of(_rebuilt(b, codec, body))
    assert e is not None and e.error in ("INVALID_RECORD", "UNKNOWN_SERVER_ERROR")  # an empty gzip is unreadable


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_rebuilt_helper_round_trips(codec):
    recs = [Record(value=b"v")]
    b = _build(recs, codec)
    assert decompress(codec, _rebuilt(b, codec, encode_records(recs))[61:]) == encode_records(recs)
