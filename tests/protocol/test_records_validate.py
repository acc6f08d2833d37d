"""Record-level validation of producer batches (minibroker_protocol.records.validate): golden bytes, the
uniform fast path against the loop, and properties over every codec."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.records import validate
from minibroker_protocol.records.batch import BatchView, InvalidBatch, crc32c
from minibroker_protocol.records.compression import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    DecompressionBomb,
    compress,
    decompress,
)
from minibroker_protocol.records.v2 import Record, build_batch, decode_batch, encode_records
from minibroker_protocol.records.validate import RecordValidationError, validate_records, walk_records
from minibroker_protocol.types import read_varint

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
    assert (e.code, str(e)) == (ErrorCode.INVALID_RECORD, "Incorrect declared batch size, premature EOF reached")


def test_golden_batch_with_a_trailing_byte_fails_with_records_remaining():
    e = error_of(with_header_fixed(GOLDEN + b"\x00"))
    assert (e.code, str(e)) == (ErrorCode.INVALID_RECORD, "Incorrect declared batch size, records still remaining in file")


def test_golden_record_with_a_null_key_is_named_by_index():
    b = build_batch([Record(key=b"k", value=b"v"), Record(offset_delta=1, value=b"v")], base_timestamp=0)
    assert error_of(b) is None
    e = error_of(b, require_keys=True, where="t-0")
    assert isinstance(e, RecordValidationError) and e.code == ErrorCode.INVALID_RECORD
    assert e.record_errors == [(1, "Compacted topic cannot accept message without key in topic partition t-0")]
    assert str(e) == ("One or more records have been rejected due to 1 record errors in total, and only showing the "
                      "first three errors at most: [RecordError(batchIndex=1, message='Compacted topic cannot accept "
                      "message without key in topic partition t-0')]")


# -------------------------------------------------------------------------- error precedence


def test_a_crc_error_wins_over_a_framing_error():
    bad = bytearray(with_header_fixed(GOLDEN, count=2))
    bad[-1] ^= 0xFF
    assert error_of(bytes(bad)).code == ErrorCode.CORRUPT_MESSAGE


def test_undecompressable_data_is_unknown_server_error_as_in_kafka():
    b = bytearray(build_batch([Record(value=b"v")], base_timestamp=0, compression=GZIP))
    e = error_of(with_header_fixed(b[:61] + b"not gzip at all"))
    assert e.code == ErrorCode.UNKNOWN_SERVER_ERROR and "Failed to decompress record stream" in str(e)


def test_a_decompression_bomb_stays_invalid_record():
    b = build_batch([Record(value=bytes(10_000))], base_timestamp=0, compression=ZSTD)
    with pytest.raises(DecompressionBomb):
        validate_records(BatchView(b), max_size=1000)


def test_a_record_too_short_for_its_fields_is_refused():
    # one record whose length says 2 bytes: attributes and one varint cannot hold a record
    b = with_header_fixed(GOLDEN[:61] + b"\x04\x00\x00", count=1)
    assert error_of(b).code == ErrorCode.INVALID_RECORD


# ------------------------------------------------------------------- fast path vs. the loop


def test_uniform_records_take_the_slicing_path_and_agree_with_the_loop():
    # a null key is 1 byte shorter than b"k": its value is 1 byte longer, so all records are the same
    # size (offset deltas < 64 are one-byte varints)
    recs = [Record(offset_delta=i, key=None if i % 7 == 3 else b"k", value=bytes(101 if i % 7 == 3 else 100))
            for i in range(60)]
    body = encode_records(recs)
    assert len(body) % len(recs) == 0
    stride = len(body) // len(recs)
    k = 2  # the length varint of a 10x-byte record
    assert validate._run_length(body, 0, k, stride, len(recs)) == 3  # record 3's null key: another layout
    assert validate._run_length(body, 4 * stride, k, stride, 20) == 6  # records 4..9 (10 is keyless)
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
# equal-length records in runs (the layout path): null or not keys, headers with fixed or varying
# ASCII or non-ASCII keys, timestamp deltas growing by a step (their varints grow as offsetDelta's)
header_st = st.tuples(st.text(max_size=4), st.one_of(st.none(), st.binary(max_size=3)))
layout_st = st.tuples(st.integers(1, 300), st.integers(0, 200), st.one_of(st.none(), st.just(b"key")),
                      st.lists(header_st, max_size=2), st.sampled_from([0, 1, 7, 100]),
                      st.sampled_from(["", "h", "\u00e9"])).map(
    lambda t: [Record(timestamp_delta=i * t[4], key=t[2], value=bytes(t[1]),
                      headers=t[3] + ([(f"{t[5]}{i % 10}", b"v")] if t[5] else [])) for i in range(t[0])])
records_st = st.one_of(st.lists(record_st, min_size=1, max_size=40), uniform_st, layout_st).map(
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
    assert e is not None and e.code == ErrorCode.INVALID_RECORD


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
    assert e is not None and e.code in (ErrorCode.INVALID_RECORD, ErrorCode.UNKNOWN_SERVER_ERROR)  # an empty gzip is unreadable


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_rebuilt_helper_round_trips(codec):
    recs = [Record(value=b"v")]
    b = _build(recs, codec)
    assert decompress(codec, _rebuilt(b, codec, encode_records(recs))[61:]) == encode_records(recs)


def _decodes(b: bytes) -> bool:
    try:
        decode_batch(b)
    except InvalidBatch:
        return False
    return True


def _overlong_int32_varint(body: bytes) -> bool:
    """Whether a record of `body`, read as v2.read_record reads it, has an int32 field (its length,
    offsetDelta, a size or a count) in more than 5 varint bytes: Kafka's ByteUtils.readVarint refuses
    that ("Varint is too long"), and so does validate; our decoder reads up to 10 bytes for any field."""
    pos = 0
    found = False

    def field() -> int:
        nonlocal pos, found
        value, after = read_varint(body, pos)
        found |= after - pos > 5
        pos = after
        return value

    while pos < len(body):
        field()
        _, pos = read_varint(body, pos + 1)  # attributes, then timestampDelta: a varlong, 10 bytes allowed
        field()
        for _ in range(2):
            pos += max(field(), 0)
        for _ in range(field()):
            pos += max(field(), 0)
            pos += max(field(), 0)
    return found


@pytest.mark.parametrize("codec", CODECS)
@given(recs=records_st, data=st.data())
@settings(max_examples=150, deadline=None)
def test_a_one_byte_mutation_is_refused_exactly_when_the_decoder_refuses_it(codec, recs, data):
    """validate agrees with v2.decode_batch on every single-byte change of the records, but for
    int32 varints of 6 to 10 bytes, which Kafka refuses and our decoder reads (validate sides with
    Kafka: refusing more than the decoder never stores what it cannot read). Where Kafka is looser
    than the decoder (a size below -1, a 5-byte size overflowing int32, a header key not UTF-8),
    validate sides with the decoder, so nothing stored is unreadable here."""
    body = encode_records(recs)
    i = data.draw(st.integers(0, len(body) - 1), label="index")
    byte = data.draw(st.one_of(st.sampled_from([0x00, 0x01, 0x02, 0x03, 0x7F, 0x80, 0x81, 0xFF]),
                               st.integers(0, 255)).filter(lambda v: v != body[i]), label="byte")
    mutated = body[:i] + bytes([byte]) + body[i + 1:]
    b = _rebuilt(_build(recs, codec), codec, mutated)
    e = error_of(b)
    if _decodes(b):
        if e is not None:
            assert (e.code, str(e)) == (ErrorCode.INVALID_RECORD, "Found invalid record structure")
            assert _overlong_int32_varint(mutated)
    else:
        assert e is not None and e.code == ErrorCode.INVALID_RECORD, "stored a batch our decoder refuses"


# ------------------------------------------------------------------- golden: every field


def _uniform_300(**kw) -> list[Record]:
    # 100-byte values: records 0-63 have a one-byte offsetDelta, 64-299 two bytes (zigzag 128)
    return [Record(offset_delta=i, key=b"key", value=bytes(100), **kw) for i in range(300)]


def _end_of_record(recs: list[Record], i: int) -> int:
    return len(encode_records(recs[:i + 1]))


@pytest.mark.parametrize("codec", CODECS)
def test_golden_uniform_300_records_across_the_offset_delta_growth_pass(codec):
    recs = _uniform_300()
    body = encode_records(recs)
    assert body[_end_of_record(recs, 63) - 112:_end_of_record(recs, 63)].startswith(bytes.fromhex("dc01" "00" "00" "7e"))
    assert body[_end_of_record(recs, 63):].startswith(bytes.fromhex("de01" "00" "00" "8001"))  # offsetDelta 64
    b = _build(recs, codec)
    assert error_of(b) is None and _decodes(b)
    e = error_of(b, require_keys=True)
    assert e is None


@pytest.mark.parametrize("codec", [NONE, LZ4])
@pytest.mark.parametrize("index", [0, 1, 63, 64, 200, 299])
def test_golden_uniform_300_with_one_header_count_of_minus_one_fails_as_in_kafka(codec, index):
    recs = _uniform_300()
    body = bytearray(encode_records(recs))
    end = _end_of_record(recs, index)
    assert body[end - 1] == 0x00  # headersCount 0, the record's last byte
    body[end - 1] = 0x01  # zigzag -1
    e = error_of(_rebuilt(_build(recs, codec), codec, bytes(body)))
    assert (e.code, str(e)) == (ErrorCode.INVALID_RECORD, "Found invalid number of record headers -1")


def test_golden_a_continuation_bit_in_a_timestamp_delta_inside_a_run_fails():
    recs = _uniform_300()
    body = bytearray(encode_records(recs))
    ts = _end_of_record(recs, 149) + 2 + 1  # record 150: length (2 bytes), attributes, timestampDelta
    assert body[ts] == 0x00
    body[ts] = 0x80  # the varint now swallows offsetDelta (ac02): keyLength is read from offsetDelta's
    b = _rebuilt(_build(recs, NONE), NONE, bytes(body))  # 06, and the key from the key's "k" (zigzag -54)
    e = error_of(b)
    assert (e.code, str(e)) == (ErrorCode.INVALID_RECORD, "Invalid negative key size -54") and not _decodes(b)


def test_golden_header_keys_in_a_run():
    # varying ASCII keys and a fixed non-ASCII one share a layout; a key that is not UTF-8 does not
    recs = [Record(offset_delta=i, key=b"k", value=bytes(50), headers=[(f"id-{i % 10}", b"v"), ("\u00e9t\u00e9", None)])
            for i in range(200)]
    b = _build(recs, NONE)
    assert error_of(b) is None and _decodes(b)
    body = bytearray(encode_records(recs))
    key = body.index(b"id-3", _end_of_record(recs, 122))  # record 123's header key
    body[key + 3] = 0xFF
    b = _rebuilt(b, NONE, bytes(body))
    e = error_of(b)
    assert (e.code, str(e)) == (ErrorCode.INVALID_RECORD, "Invalid header key: not UTF-8") and not _decodes(b)


def _hand_record(fields: bytes) -> bytes:
    """One record of these body bytes, with its length varint."""
    return bytes([len(fields) << 1]) + fields


def test_golden_varint_length_limits_are_kafkas():
    # attributes, timestampDelta, offsetDelta, key null, value null, no headers
    five = _hand_record(bytes.fromhex("00" "00" "8080808000" "01" "01" "00"))
    six = _hand_record(bytes.fromhex("00" "00" "808080808000" "01" "01" "00"))
    ten_ts = _hand_record(bytes.fromhex("00" "80808080808080808000" "00" "01" "01" "00"))
    eleven_ts = _hand_record(bytes.fromhex("00" "8080808080808080808000" "00" "01" "01" "00"))
    for rec, ok in ((five, True), (six, False), (ten_ts, True), (eleven_ts, False)):
        e = error_of(with_header_fixed(GOLDEN[:61] + rec, count=1))
        assert (e is None) == ok, rec.hex()
        if not ok:
            assert (e.code, str(e)) == (ErrorCode.INVALID_RECORD, "Found invalid record structure")
    # the decoder reads a 6-byte int32 varint (the one case where validate is the stricter)
    assert _decodes(with_header_fixed(GOLDEN[:61] + six, count=1))
    # a 6-byte length varint too
    e = error_of(with_header_fixed(GOLDEN[:61] + bytes.fromhex("8c8080808000") + five[1:], count=1))
    assert (e.code, str(e)) == (ErrorCode.INVALID_RECORD, "Found invalid record structure")


@pytest.mark.parametrize(("fields", "message"), [
    ("00 00 00 03 01 00", "Invalid negative key size -2"),  # Kafka would read a null key: our decoder refuses
    ("00 00 00 01 05 00", "Invalid negative value size -3"),
    ("00 00 00 01 01 02 01 01", "Invalid negative header key size -1"),
    ("00 00 00 01 01 02 00 03", "Invalid negative header value size -2"),
    ("00 00 00 01 01 02 02 ff 01", "Invalid header key: not UTF-8"),
    ("00 00 00 01 01 00 00", "Invalid record size: expected to read 7 bytes in record payload, but instead read 6"),
    ("00 00 00 02 6b 01", "Found invalid record structure"),  # headersCount runs off the end
])
def test_golden_malformed_fields_fail_with_kafkas_messages(fields, message):
    b = with_header_fixed(GOLDEN[:61] + _hand_record(bytes.fromhex(fields)), count=1)
    e = error_of(b)
    assert (e.code, str(e)) == (ErrorCode.INVALID_RECORD, message)
    assert not _decodes(b)


def test_null_keys_in_a_run_are_all_named():
    recs = [Record(offset_delta=i, value=bytes(30)) for i in range(300)] + [Record(offset_delta=300, key=b"k")]
    e = error_of(_build(recs, NONE), require_keys=True, where="t-0")
    assert isinstance(e, RecordValidationError) and [i for i, _ in e.record_errors] == list(range(300))
