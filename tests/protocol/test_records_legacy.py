"""MessageSet v0/v1: golden bytes from the seeds, wrappers and offsets, validation, conversion,
interop with kafka-python's legacy records."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.records import convert, v2
from minibroker_protocol.records import legacy as L
from minibroker_protocol.records.batch import V0_HEADER_SIZE, V1_HEADER_SIZE, BatchView, InvalidBatch
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
from minibroker_protocol.records.legacy import RecordData
from minibroker_protocol.records.xxhash32 import xxh32

LEGACY_CODECS = [NONE, GZIP, SNAPPY, LZ4]

try:
    import xxhash  # noqa: F401  kafka-python needs it for lz4 with magic 0

    HAVE_XXHASH = True
except ImportError:
    HAVE_XXHASH = False


def _theirs_can(magic: int, codec: int) -> bool:
    return not (magic == 0 and codec == LZ4 and not HAVE_XXHASH)


# ------------------------------------------------------------------------------ golden


def test_v0_message_field_by_field():
    m = L.encode_message(0, b"key", b"value", magic=0)
    assert len(m) == V0_HEADER_SIZE + 3 + 5 == 34  # 26-byte v0 header (seed 001)
    fields = [
        ("offset", "0000000000000000"),
        ("messageSize 22", "00000016"),
        ("crc", "2356c137"),
        ("magic", "00"),
        ("attributes", "00"),
        ("key length", "00000003"),
        ("key", "6b6579"),
        ("value length", "00000005"),
        ("value", "76616c7565"),
    ]
    pos = 0
    for name, hexval in fields:
        assert m[pos:pos + len(hexval) // 2].hex() == hexval, name
        pos += len(hexval) // 2
    assert pos == len(m)
    assert zlib.crc32(m[16:]) == 0x2356C137  # CRC-32 from magic on (seed 000)


def test_v1_message_is_42_bytes_field_by_field():
    m = L.encode_message(0, b"key", b"value", magic=1, timestamp=1000)
    # seed 002: LOG_OVERHEAD 12 + RECORD_OVERHEAD_V1 22 + key 3 + value 5 = 42
    assert len(m) == 12 + L.RECORD_OVERHEAD_V1 + 3 + 5 == V1_HEADER_SIZE + 8 == 42
    fields = [
        ("offset", "0000000000000000"),
        ("messageSize 30", "0000001e"),
        ("crc", "c94318c5"),
        ("magic", "01"),
        ("attributes", "00"),
        ("timestamp 1000", "00000000000003e8"),
        ("key length", "00000003"),
        ("key", "6b6579"),
        ("value length", "00000005"),
        ("value", "76616c7565"),
    ]
    pos = 0
    for name, hexval in fields:
        assert m[pos:pos + len(hexval) // 2].hex() == hexval, name
        pos += len(hexval) // 2
    assert pos == 42
    assert zlib.crc32(m[16:]) == 0xC94318C5


@pytest.mark.parametrize("magic", [0, 1])
def test_single_messages_are_byte_identical_to_kafka_pythons(magic):
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    builder.append(0, timestamp=1000, key=b"key", value=b"value")
    builder.append(1, timestamp=1001, key=None, value=b"")
    builder.append(2, timestamp=1002, key=b"", value=None)
    ours = b"".join([
        L.encode_message(0, b"key", b"value", magic=magic, timestamp=1000),
        L.encode_message(1, None, b"", magic=magic, timestamp=1001),
        L.encode_message(2, b"", None, magic=magic, timestamp=1002),
    ])
    assert ours == bytes(builder.build())


def test_seed_002_ten_records_sizes_in_v0_and_v1():
    # "in v0 these 10 messages would need 320 B, in v1 400 B" (vs 191 B as one v2 batch)
    recs = [RecordData(i, 1000, None, b"abcdef") for i in range(10)]
    assert len(L.build_message_set(recs, magic=0)) == 320
    assert len(L.build_message_set(recs, magic=1)) == 400


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4])
def test_seed_002_compressed_v1_relative_offsets(codec):
    # Uncompressed the inner messages would be 1025..1030; compressed they are 0..5 and the
    # wrapper carries 1030. AO = 1030 + (IO - 5): 1030 + (0 - 5) = 1025.
    recs = [RecordData(1025 + i, 2000 + i, b"k", b"v%d" % i) for i in range(6)]
    s = L.build_message_set(recs, magic=1, compression=codec)
    (wrapper,) = list(L.iter_shallow(s))
    assert wrapper.offset == 1030 and wrapper.key is None and wrapper.compression == codec
    assert wrapper.timestamp == 2005  # CreateTime wrapper: the max inner timestamp
    assert BatchView(s).base_offset == 1030  # the header view sees the last offset
    inner_raw = list(L.iter_shallow(decompress(codec, wrapper.value, magic=1, max_size=1 << 20)))
    assert [m.offset for m in inner_raw] == [0, 1, 2, 3, 4, 5]
    deep = list(L.iter_deep(s))
    assert [m.offset for m in deep] == [1025, 1026, 1027, 1028, 1029, 1030]
    assert [m.value for m in deep] == [b"v%d" % i for i in range(6)]


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4])
def test_compressed_v0_inner_offsets_are_absolute(codec):
    recs = [RecordData(1025 + i, -1, None, b"v%d" % i) for i in range(6)]
    s = L.build_message_set(recs, magic=0, compression=codec)
    (wrapper,) = list(L.iter_shallow(s))
    assert wrapper.offset == 1030 and wrapper.magic == 0
    inner_raw = list(L.iter_shallow(decompress(codec, wrapper.value, magic=0, max_size=1 << 20)))
    assert [m.offset for m in inner_raw] == list(range(1025, 1031))
    assert [m.offset for m in L.iter_deep(s)] == list(range(1025, 1031))


def test_v0_lz4_wrapper_uses_the_kafka_3160_checksum():
    s = L.build_message_set([RecordData(0, -1, None, b"x" * 100)], magic=0, compression=LZ4)
    (wrapper,) = list(L.iter_shallow(s))
    frame = wrapper.value
    assert frame[6] == (xxh32(frame[:6]) >> 8) & 0xFF
    s1 = L.build_message_set([RecordData(0, 5, None, b"x" * 100)], magic=1, compression=LZ4)
    frame1 = next(L.iter_shallow(s1)).value
    assert frame1[6] == (xxh32(frame1[4:6]) >> 8) & 0xFF


def test_log_append_time_v1_wrapper_stands_for_inner_timestamps():
    recs = [RecordData(i, 100 + i, None, b"v") for i in range(3)]
    s = L.build_message_set(recs, magic=1, compression=GZIP, timestamp_type=L.LOG_APPEND_TIME,
                            log_append_time=9999)
    (wrapper,) = list(L.iter_shallow(s))
    assert wrapper.timestamp == 9999 and wrapper.attributes == 0x08 | GZIP
    deep = list(L.iter_deep(s))
    assert [(m.timestamp, m.timestamp_type) for m in deep] == [(9999, L.LOG_APPEND_TIME)] * 3


# ------------------------------------------------------------------------ kafka-python


def _read_with_kafka_python(buf):
    out = []
    for batch in MemoryRecords(bytes(buf)):
        for r in batch:
            out.append((r.offset, r.timestamp, r.key, r.value))
    return out


legacy_rec_st = st.tuples(st.integers(0, 2**41), st.none() | st.binary(max_size=30), st.none() | st.binary(max_size=200))


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@given(recs=st.lists(legacy_rec_st, min_size=1, max_size=10), base=st.integers(0, 2**40))
@settings(max_examples=20, deadline=None)
def test_kafka_python_reads_ours(magic, codec, recs, base):
    if not _theirs_can(magic, codec):
        pytest.skip("kafka-python needs the xxhash package for lz4 with magic 0")
    s = L.build_message_set([RecordData(base + i, ts, k, v) for i, (ts, k, v) in enumerate(recs)], magic=magic,
                            compression=codec)
    expect = [(base + i, ts if magic else None, k, v) for i, (ts, k, v) in enumerate(recs)]  # v0: no timestamp
    assert _read_with_kafka_python(s) == expect


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@given(recs=st.lists(legacy_rec_st, min_size=1, max_size=10))
@settings(max_examples=20, deadline=None)
def test_we_read_kafka_pythons(magic, codec, recs):
    if not _theirs_can(magic, codec):
        pytest.skip("kafka-python needs the xxhash package for lz4 with magic 0")
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 30)
    for i, (ts, k, v) in enumerate(recs):
        builder.append(i, timestamp=ts, key=k, value=v)
    theirs = bytes(builder.build())
    # kafka-python leaves a compressed wrapper's offset 0 ("not assigned"), so inner offsets stand.
    got = [(m.offset, m.timestamp, m.key, m.value) for m in L.iter_deep(theirs)]
    assert got == [(i, ts if magic else -1, k, v) for i, (ts, k, v) in enumerate(recs)]
    checked = L.validate_legacy(theirs)
    assert len(checked.records) == len(recs)
    assigned, nxt = L.assign_offsets(theirs, 500)
    assert nxt == 500 + len(recs)
    assert [o for o, *_ in _read_with_kafka_python(assigned)] == list(range(500, 500 + len(recs)))


# -------------------------------------------------------------------------- properties

data_st = st.lists(legacy_rec_st, min_size=1, max_size=12)


def _records(recs, base=0):
    return [RecordData(base + i, ts, k, v) for i, (ts, k, v) in enumerate(recs)]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@given(recs=data_st, base=st.integers(0, 2**50), log_append=st.booleans())
@settings(max_examples=20, deadline=None)
def test_round_trip(magic, codec, recs, base, log_append):
    s = L.build_message_set(_records(recs, base), magic=magic, compression=codec,
                            timestamp_type=L.LOG_APPEND_TIME if log_append else L.CREATE_TIME, log_append_time=77)
    deep = list(L.iter_deep(s))
    assert [(m.offset, m.key, m.value) for m in deep] == [(base + i, k, v) for i, (_, k, v) in enumerate(recs)]
    if magic == 0:
        assert all(m.timestamp == -1 and m.timestamp_type == L.NO_TIMESTAMP_TYPE for m in deep)
    elif log_append:
        assert all(m.timestamp == 77 and m.timestamp_type == L.LOG_APPEND_TIME for m in deep)
    else:
        assert [m.timestamp for m in deep] == [ts for ts, _, _ in recs]
    v = L.validate_legacy(s)
    assert v.magic == magic and v.compression == codec and v.monotonic
    assert v.shallow_count == (len(recs) if codec == NONE else 1)
    views = [BatchView(s, 0)]
    views[0].validate()
    assert views[0].magic == magic


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@given(recs=data_st, client_base=st.sampled_from([0, 3, 1000]), base=st.integers(0, 2**50))
@settings(max_examples=20, deadline=None)
def test_assign_offsets(magic, codec, recs, client_base, base):
    s = L.build_message_set(_records(recs, client_base), magic=magic, compression=codec)
    out, nxt = L.assign_offsets(s, base)
    assert nxt == base + len(recs)
    v = L.validate_legacy(out)  # every CRC still (or again) valid
    assert [m.offset for m in v.records] == list(range(base, base + len(recs)))
    assert [(m.key, m.value) for m in v.records] == [(k, val) for _, k, val in recs]
    if codec != NONE:
        (orig,) = list(L.iter_shallow(s))
        (wrapper,) = list(L.iter_shallow(out))
        assert wrapper.offset == nxt - 1
        if magic == 1:
            # inner offsets were 0..n-1: only the wrapper changes, the payload is not recompressed
            assert wrapper.value == orig.value
        else:
            raw = list(L.iter_shallow(decompress(codec, wrapper.value, magic=0, max_size=1 << 24)))
            assert [m.offset for m in raw] == list(range(base, nxt))  # v0: rebuilt, absolute


def test_assign_offsets_rebuilds_v1_sets_with_bad_inner_offsets():
    # An old client that wrote absolute inner offsets: Kafka rebuilds instead of trusting them.
    inner = b"".join(L.encode_message(10 + i, None, b"v%d" % i, magic=1, timestamp=5) for i in range(3))
    wrapper = L.encode_message(12, None, compress(GZIP, inner, magic=1), magic=1, timestamp=5, attributes=GZIP)
    out, nxt = L.assign_offsets(wrapper, 100)
    assert nxt == 103
    (w,) = list(L.iter_shallow(out))
    raw = list(L.iter_shallow(decompress(GZIP, w.value, magic=1, max_size=1 << 20)))
    assert [m.offset for m in raw] == [0, 1, 2] and w.offset == 102
    assert [m.offset for m in L.iter_deep(out)] == [100, 101, 102]


def test_assign_offsets_log_append_time():
    s = L.build_message_set(_records([(5, None, b"a"), (6, None, b"b")]), magic=1)
    out, _ = L.assign_offsets(s, 10, log_append_time=4242)
    deep = list(L.iter_deep(out))
    assert [(m.offset, m.timestamp, m.timestamp_type) for m in deep] == [(10, 4242, 1), (11, 4242, 1)]
    s = L.build_message_set(_records([(5, None, b"a"), (6, None, b"b")]), magic=1, compression=SNAPPY)
    out, _ = L.assign_offsets(s, 10, log_append_time=4242)
    (w,) = list(L.iter_shallow(out))
    assert w.timestamp == 4242 and w.timestamp_type == L.LOG_APPEND_TIME
    assert [m.timestamp for m in L.iter_deep(out)] == [4242, 4242]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@given(recs=data_st, data=st.data())
@settings(max_examples=25, deadline=None)
def test_corruption_is_rejected(magic, codec, recs, data):
    s = bytearray(L.build_message_set(_records(recs), magic=magic, compression=codec))
    entries = [(p, m.size) for p, m in L._shallow_with_positions(s)]
    start, size = data.draw(st.sampled_from(entries))
    pos = data.draw(st.integers(start + 12, start + size - 1))  # anything the CRC covers, or the CRC
    s[pos] ^= data.draw(st.integers(1, 255))
    with pytest.raises(InvalidBatch):
        L.validate_legacy(s)


def test_validate_legacy_errors():
    ok = L.encode_message(0, None, b"v", magic=1, timestamp=1)
    with pytest.raises(InvalidBatch):
        L.validate_legacy(b"")
    with pytest.raises(InvalidBatch, match="magic"):
        L.validate_legacy(ok + L.encode_message(1, None, b"v", magic=0))
    with pytest.raises(InvalidBatch, match="runs past"):
        L.validate_legacy(ok + ok[:-1])
    too_small = bytearray(ok)
    struct.pack_into(">i", too_small, 8, 13)
    with pytest.raises(InvalidBatch, match="minimum"):
        L.validate_legacy(too_small)
    with pytest.raises(InvalidBatch) as e:
        L.validate_legacy(L.encode_message(0, None, b"x" * 100, magic=1, timestamp=1), max_message_size=50)
    assert e.value.code == ErrorCode.MESSAGE_TOO_LARGE
    # wrappers: null value, nothing inside, nested compression, mismatched inner magic, zstd
    bad = {
        "null value": L.encode_message(0, None, None, magic=1, timestamp=1, attributes=GZIP),
        "no inner": L.encode_message(0, None, compress(GZIP, b"", magic=1), magic=1, timestamp=1, attributes=GZIP),
        "nested": L.encode_message(0, None, compress(GZIP, L.encode_message(
            0, None, compress(GZIP, ok, magic=1), magic=1, timestamp=1, attributes=GZIP), magic=1), magic=1,
            timestamp=1, attributes=GZIP),
        "inner magic": L.encode_message(0, None, compress(GZIP, L.encode_message(0, None, b"v", magic=0), magic=1),
                                        magic=1, timestamp=1, attributes=GZIP),
        "zstd": L.encode_message(0, None, b"\x28\xb5\x2f\xfd", magic=1, timestamp=1, attributes=ZSTD),
    }
    for name, entry in bad.items():
        with pytest.raises(InvalidBatch) as e:
            L.validate_legacy(entry)
        assert e.value.code in (ErrorCode.INVALID_RECORD, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, ErrorCode.CORRUPT_MESSAGE), name
    assert L.validate_legacy(ok).records[0].value == b"v"


def test_wrapper_offset_below_last_inner_is_invalid():
    inner = b"".join(L.encode_message(i, None, b"v", magic=1, timestamp=1) for i in range(5))
    w = L.encode_message(2, None, compress(GZIP, inner, magic=1), magic=1, timestamp=1, attributes=GZIP)
    with pytest.raises(InvalidBatch) as e:
        list(L.iter_deep(w))
    assert e.value.code == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4])
def test_wrapper_bomb_is_bounded(magic, codec):
    inner = L.encode_message(0, None, bytes(8 << 20), magic=magic, timestamp=1)
    w = L.encode_message(0, None, compress(codec, inner, magic=magic), magic=magic, timestamp=1, attributes=codec)
    assert len(w) < 1 << 20
    with pytest.raises(DecompressionBomb):
        L.validate_legacy(w, max_size=1 << 20)
    assert L.validate_legacy(w, max_size=16 << 20).records[0].value == bytes(8 << 20)


# ---------------------------------------------------------------------------- conversion


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@given(recs=data_st, base=st.integers(0, 2**40))
@settings(max_examples=15, deadline=None)
def test_up_then_down_conversion_round_trips(magic, codec, recs, base):
    s = L.build_message_set(_records(recs, base), magic=magic, compression=codec)
    up = convert.up_convert(s)
    b = v2.decode_batch(up)
    assert b.compression == codec and b.base_offset == base and b.records_count == len(recs)
    assert [(r.offset, r.key, r.value) for r in b.records] == [(base + i, k, v) for i, (_, k, v) in enumerate(recs)]
    if magic == 1:
        assert [r.timestamp for r in b.records] == [ts for ts, _, _ in recs]
        assert b.max_timestamp == max(ts for ts, _, _ in recs)
    else:
        assert all(r.timestamp == -1 for r in b.records) and b.base_timestamp == -1
    down = convert.down_convert(up, magic)
    assert [(m.offset, m.timestamp, m.key, m.value) for m in L.iter_deep(down)] == [
        (m.offset, m.timestamp, m.key, m.value) for m in L.iter_deep(s)]
    if codec == NONE or magic == 1:
        assert down == s  # the same bytes Kafka's builder would write
    assert convert.up_convert(s, base_offset=7, compression=ZSTD)[16] == 2


def test_down_conversion_follows_records_util():
    recs = [v2.Record(offset_delta=i, timestamp_delta=i, key=b"k", value=b"v%d" % i, headers=[("h", b"x")])
            for i in range(4)]
    plain = v2.build_batch(recs, base_offset=10, base_timestamp=1000)
    gz = v2.build_batch(recs, base_offset=14, base_timestamp=2000, compression=GZIP)
    marker = v2.build_control_batch(v2.ControlType.COMMIT, producer_id=1, producer_epoch=0, coordinator_epoch=0,
                                    timestamp=3000, base_offset=18)
    lat = v2.build_batch(recs[:2], base_offset=19, base_timestamp=0, timestamp_type=v2.LOG_APPEND_TIME,
                         max_timestamp=5555)
    buf = plain + gz + marker + lat

    assert convert.down_convert(buf, 2) == buf
    v1 = convert.down_convert(buf, 1)
    entries = list(L.iter_shallow(v1))
    # 4 plain messages, one gzip wrapper, no marker, 2 plain LogAppendTime messages
    assert [(e.offset, e.compression) for e in entries] == [
        (10, NONE), (11, NONE), (12, NONE), (13, NONE), (17, GZIP), (19, NONE), (20, NONE)]
    assert entries[4].timestamp == 2003  # wrapper: max inner timestamp
    deep = list(L.iter_deep(v1))
    assert [m.offset for m in deep] == [10, 11, 12, 13, 14, 15, 16, 17, 19, 20]
    assert [m.timestamp for m in deep[:8]] == [1000, 1001, 1002, 1003, 2000, 2001, 2002, 2003]
    assert [(m.timestamp, m.timestamp_type) for m in deep[8:]] == [(5555, 1), (5555, 1)]
    assert _read_with_kafka_python(v1) == [(m.offset, m.timestamp, m.key, m.value) for m in deep]

    v0 = convert.down_convert(buf, 0)
    assert [(m.offset, m.timestamp, m.magic) for m in L.iter_deep(v0)] == [(o, -1, 0) for o in
                                                                          [10, 11, 12, 13, 14, 15, 16, 17, 19, 20]]
    assert convert.down_convert(v1, 0) == v0  # v1 entries convert to v0 as well

    # a fetch from offset 12: earlier records of uncompressed batches are dropped, a compressed
    # batch is kept whole (it is one v1 entry)
    assert [m.offset for m in L.iter_deep(convert.down_convert(buf, 1, first_offset=12))] == [
        12, 13, 14, 15, 16, 17, 19, 20]
    assert [m.offset for m in L.iter_deep(convert.down_convert(buf, 1, first_offset=16))] == [14, 15, 16, 17, 19, 20]

    with pytest.raises(InvalidBatch) as e:
        convert.down_convert(v2.build_batch(recs, base_timestamp=0, compression=ZSTD), 1)
    assert e.value.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert convert.down_convert(buf + plain[:30], 1) == v1  # a partial batch at the end is left out
