"""RecordBatch v2: golden bytes from the seeds, interop with kafka-python, properties."""

from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.records import v2
from minibroker_protocol.records.batch import BatchView, InvalidBatch
from minibroker_protocol.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD, DecompressionBomb
from minibroker_protocol.records.v2 import (
    ControlType,
    Record,
    build_batch,
    build_control_batch,
    decode_batch,
    decode_batches,
    parse_control_record,
    read_record,
    record_size,
    write_record,
)

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
TS = 1524712213771  # the CreateTime in seed 002's DumpLogSegments line


# ------------------------------------------------------------------------------ golden


def test_seed_002_one_record_is_76_bytes_field_by_field():
    b = build_batch([Record(key=b"key", value=b"value")], base_timestamp=TS)
    assert len(b) == 76  # 61 header + 14 record body + 1 length varint (seed 002)
    fields = [
        ("baseOffset", "0000000000000000"),
        ("batchLength", "00000040"),  # 76 - 12
        ("partitionLeaderEpoch", "ffffffff"),
        ("magic", "02"),
        ("crc", "6effce8a"),  # CRC-32C of bytes 21..75; kafka-python computes the same (below)
        ("attributes", "0000"),
        ("lastOffsetDelta", "00000000"),
        ("baseTimestamp", "00000162ffee0d0b"),
        ("maxTimestamp", "00000162ffee0d0b"),
        ("producerId", "ffffffffffffffff"),
        ("producerEpoch", "ffff"),
        ("baseSequence", "ffffffff"),
        ("recordsCount", "00000001"),
        ("record length 14 (zigzag 28)", "1c"),
        ("record attributes", "00"),
        ("timestampDelta 0", "00"),
        ("offsetDelta 0", "00"),
        ("key length 3 (zigzag 6)", "06"),
        ("key", "6b6579"),
        ("value length 5 (zigzag 10)", "0a"),
        ("value", "76616c7565"),
        ("header count 0", "00"),
    ]
    pos = 0
    for name, hexval in fields:
        n = len(hexval) // 2
        assert b[pos:pos + n].hex() == hexval, name
        pos += n
    assert pos == 76
    assert crc32c.crc32c(b[21:]) == 0x6EFFCE8A


def test_seed_002_ten_six_byte_values_make_191_bytes():
    # "10 records, value length 6, key null": each record is 13 bytes (12 + length varint).
    recs = [Record(offset_delta=i, value=b"msg-%02d" % i) for i in range(10)]
    assert all(record_size(r) == 13 for r in recs)
    b = build_batch(recs, base_offset=2, base_timestamp=TS, partition_leader_epoch=0)
    assert len(b) == 191
    view = BatchView(b)
    view.validate()
    # the seed's dump: baseOffset: 2 lastOffset: 11 ... partitionLeaderEpoch: 0 ... size: 191 magic: 2
    assert (view.base_offset, view.last_offset, view.records_count) == (2, 11, 10)
    assert (view.partition_leader_epoch, view.size, view.magic, view.compression) == (0, 191, 2, 0)
    assert (view.producer_id, view.producer_epoch, view.base_sequence) == (-1, -1, -1)
    assert view.max_timestamp == TS


# Seed 003's hexdump of the first two batch headers of 00000000000000000000.log.
SEED_003_HEADER_1 = (
    "0000000000000000" "00003cb8" "00000000" "02" "be2ab271" "0000" "0000000e"
    "000001857572a380" "000001857572a387" "ffffffffffffffff" "ffff" "ffffffff" "0000000f"
)
SEED_003_HEADER_2 = (
    "000000000000000f" "00003cb8" "00000000" "02" "e3ff46f2" "0000" "0000000e"
    "000001857572a387" "000001857572a388" "ffffffffffffffff" "ffff" "ffffffff" "0000000f"
)


def test_seed_003_hexdump_parses_to_the_seed_values():
    h = bytes.fromhex(SEED_003_HEADER_1)
    assert len(h) == 61
    v = BatchView(h)
    assert v.base_offset == 0
    assert v.batch_length == 15544
    assert v.partition_leader_epoch == 0
    assert v.magic == 2
    assert v.crc == 3190469233
    assert v.attributes == 0
    assert v.last_offset_delta == 14
    assert v.base_timestamp == 1672712725376
    assert v.max_timestamp == 1672712725383
    assert (v.producer_id, v.producer_epoch, v.base_sequence) == (-1, -1, -1)
    assert v.records_count == 15
    assert v.size == 15556 and v.last_offset == 14
    assert not v.is_complete()  # only the header was dumped
    v2_ = BatchView(bytes.fromhex(SEED_003_HEADER_2))
    assert (v2_.base_offset, v2_.crc, v2_.last_offset, v2_.max_timestamp) == (15, 3825157874, 29, 1672712725384)


def seed_003_like_batch(base_offset: int, base_ts: int, deltas: list[int]) -> bytes:
    # kafka-producer-perf-test's default record: no key, a 1024-byte value. Each record takes
    # 1033 bytes (two-byte length and value-length varints), 15 of them 15495 + 61 = 15556.
    recs = [Record(offset_delta=i, timestamp_delta=d, value=bytes([65 + i]) * 1024) for i, d in enumerate(deltas)]
    return build_batch(recs, base_offset=base_offset, base_timestamp=base_ts, partition_leader_epoch=0)


def test_seed_003_header_built_from_its_fields():
    b = seed_003_like_batch(0, 1672712725376, [0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7])
    seed = bytes.fromhex(SEED_003_HEADER_1)
    # Every header byte matches the seed's hexdump except the CRC (the payload differs).
    assert b[:17] == seed[:17]
    assert b[21:61] == seed[21:61]
    v = BatchView(b)
    v.validate()
    assert (v.batch_length, v.size, v.last_offset_delta, v.records_count) == (15544, 15556, 14, 15)
    # Stamp the seed's CRC in: BatchView reads it back, and the check now fails, as it must.
    forged = bytearray(b)
    forged[17:21] = seed[17:21]
    fv = BatchView(forged)
    assert fv.crc == 3190469233
    with pytest.raises(InvalidBatch):
        fv.validate()
    with pytest.raises(InvalidBatch):
        decode_batch(forged)


def test_control_batch_golden():
    b = build_control_batch(ControlType.COMMIT, producer_id=1000, producer_epoch=5, coordinator_epoch=7,
                            timestamp=TS, base_offset=42, partition_leader_epoch=3)
    assert len(b) == 78
    assert b[21:23].hex() == "0030"  # transactional | control
    assert b[43:51].hex() == "00000000000003e8" and b[51:53].hex() == "0005" and b[53:57].hex() == "ffffffff"
    # record: length 16, attrs, ts delta, offset delta, key len 4, key, value len 6, value, 0 headers
    assert b[61:].hex() == "20" "00" "00" "00" "08" "00000001" "0c" "000000000007" "00"
    d = decode_batch(b)
    assert d.is_control and d.is_transactional and d.base_offset == 42
    c = parse_control_record(d.records[0])
    assert (c.type, c.key_version, c.coordinator_epoch, c.value_version) == (1, 0, 7, 0)
    assert c.is_commit and not c.is_abort
    # kafka-python recognises it as a commit marker
    kb = DefaultRecordBatch(bytearray(b))
    assert kb.validate_crc() and kb.is_control_batch
    (rec,) = list(kb)
    assert rec.commit and rec.type == 1


def test_control_record_errors():
    with pytest.raises(InvalidBatch):
        parse_control_record(Record(key=b"\x00"))
    with pytest.raises(InvalidBatch):
        parse_control_record(Record(key=b"\xff\xff\x00\x01", value=b"\x00\x00\x00\x00\x00\x01"))
    with pytest.raises(InvalidBatch):
        parse_control_record(Record(key=b"\x00\x00\x00\x00", value=b"\x00\x00"))
    leader_change = parse_control_record(Record(key=b"\x00\x00\x00\x02", value=b"anything"))
    assert leader_change.type == ControlType.LEADER_CHANGE and leader_change.coordinator_epoch is None
    with pytest.raises(ValueError):
        build_control_batch(ControlType.LEADER_CHANGE, producer_id=1, producer_epoch=0, coordinator_epoch=0,
                            timestamp=0)


def test_log_append_time_batches_report_max_timestamp_for_every_record():
    recs = [Record(offset_delta=i, timestamp_delta=i, value=b"v") for i in range(3)]
    b = build_batch(recs, base_timestamp=1000, timestamp_type=v2.LOG_APPEND_TIME, max_timestamp=5000)
    d = decode_batch(b)
    assert d.timestamp_type == v2.LOG_APPEND_TIME and d.max_timestamp == 5000
    assert [r.timestamp for r in d.records] == [5000, 5000, 5000]
    kb = DefaultRecordBatch(bytearray(b))
    assert [r.timestamp for r in kb] == [5000, 5000, 5000]


# ------------------------------------------------------------------------ kafka-python


def _kafka_python_batch(records, codec, base_ts):
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for i, (ts, key, value, headers) in enumerate(records):
        builder.append(i, timestamp=base_ts + ts, key=key, value=value, headers=headers)
    return bytes(builder.build())


def test_uncompressed_batch_is_byte_identical_to_kafka_pythons():
    recs = [(0, b"key", b"value", []), (3, None, b"x" * 200, [("h1", b"v1"), ("h2", None)]), (1, b"", b"", [])]
    theirs = _kafka_python_batch(recs, 0, TS)
    ours = build_batch(
        [Record(timestamp_delta=ts, offset_delta=i, key=k, value=v, headers=h) for i, (ts, k, v, h) in enumerate(recs)],
        base_timestamp=TS, partition_leader_epoch=0,  # kafka-python leaves the epoch 0
    )
    assert ours == theirs


record_st = st.tuples(
    st.integers(-(2**31), 2**31),  # timestamp delta
    st.none() | st.binary(max_size=40),
    st.none() | st.binary(max_size=300),
    st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=20)), max_size=3),
)


@pytest.mark.parametrize("codec", CODECS)
@given(recs=st.lists(record_st, min_size=1, max_size=12))
@settings(max_examples=20, deadline=None)
def test_kafka_python_reads_ours(codec, recs):
    b = build_batch(
        [Record(timestamp_delta=ts, offset_delta=i, key=k, value=v, headers=h) for i, (ts, k, v, h) in enumerate(recs)],
        base_offset=100, compression=codec, base_timestamp=TS,
    )
    batch = next(MemoryRecords(b))
    assert batch.validate_crc()
    assert batch.compression_type == codec
    got = [(r.offset, r.timestamp, r.key, r.value, [(k, v) for k, v in r.headers]) for r in batch]
    assert got == [(100 + i, TS + ts, k, v, h) for i, (ts, k, v, h) in enumerate(recs)]


@pytest.mark.parametrize("codec", CODECS)
@given(recs=st.lists(record_st, min_size=1, max_size=12))
@settings(max_examples=20, deadline=None)
def test_we_read_kafka_pythons(codec, recs):
    recs = [(abs(ts), k, v, h) for ts, k, v, h in recs]  # their builder takes absolute timestamps
    theirs = _kafka_python_batch(recs, codec, 0)
    d = decode_batch(theirs)
    assert d.records_count == len(recs)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in d.records] == [
        (i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(recs)
    ]


# -------------------------------------------------------------------------- properties

header_st = st.tuples(st.text(max_size=12), st.none() | st.binary(max_size=30))
v2_record_st = st.builds(
    lambda ts, k, v, h: (ts, k, v, h),
    st.integers(-(2**40), 2**40), st.none() | st.binary(max_size=50), st.none() | st.binary(max_size=400),
    st.lists(header_st, max_size=4),
)


@pytest.mark.parametrize("codec", CODECS)
@given(
    recs=st.lists(v2_record_st, max_size=15),
    gaps=st.lists(st.integers(1, 1000), min_size=15, max_size=15),
    base_offset=st.integers(0, 2**62),
    base_ts=st.integers(-1, 2**42),
    pid=st.integers(-1, 2**62),
    epoch=st.integers(-1, 2**15 - 1),
    seq=st.integers(-1, 2**31 - 1),
    txn=st.booleans(),
    ple=st.integers(-1, 2**31 - 1),
)
@settings(max_examples=25, deadline=None)
def test_round_trip(codec, recs, gaps, base_offset, base_ts, pid, epoch, seq, txn, ple):
    offsets, o = [], 0
    for g in gaps[:len(recs)]:
        offsets.append(o)
        o += g  # offsets with gaps, as after compaction
    records = [Record(timestamp_delta=ts, offset_delta=od, key=k, value=v, headers=h)
               for od, (ts, k, v, h) in zip(offsets, recs, strict=True)]
    b = build_batch(records, base_offset=base_offset, compression=codec, base_timestamp=base_ts, producer_id=pid,
                    producer_epoch=epoch, base_sequence=seq, is_transactional=txn, partition_leader_epoch=ple)
    d = decode_batch(b)
    assert (d.base_offset, d.partition_leader_epoch, d.producer_id, d.producer_epoch, d.base_sequence) == (
        base_offset, ple, pid, epoch, seq)
    assert d.compression == codec and d.is_transactional == txn and not d.is_control
    assert d.records_count == len(records) and d.size == len(b)
    assert d.last_offset_delta == (offsets[-1] if offsets else 0)
    assert d.max_timestamp == base_ts + max((r.timestamp_delta for r in records), default=0)
    assert [r.to_record() for r in d.records] == records
    assert [r.offset for r in d.records] == [base_offset + od for od in offsets]
    assert [r.timestamp for r in d.records] == [base_ts + r.timestamp_delta for r in records]
    view = BatchView(b)
    assert (view.base_offset, view.crc, view.records_count, view.size) == (base_offset, d.crc, len(records), len(b))
    assert view.compute_crc() == view.crc
    # Rebuilding from what was decoded gives the same bytes (deterministic codecs).
    again = build_batch([r.to_record() for r in d.records], base_offset=base_offset, compression=codec,
                        base_timestamp=base_ts, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                        is_transactional=txn, partition_leader_epoch=ple)
    assert again == b


@given(rec=v2_record_st.map(lambda t: Record(timestamp_delta=t[0], key=t[1], value=t[2], headers=t[3])),
       od=st.integers(-(2**31), 2**31 - 1))
@settings(max_examples=100, deadline=None)
def test_record_round_trip_and_size(rec, od):
    rec.offset_delta = od
    out = bytearray()
    write_record(out, rec)
    assert len(out) == record_size(rec)
    back, end = read_record(out, 0)
    assert back == rec and end == len(out)
    for cut in range(len(out)):
        with pytest.raises(InvalidBatch):
            read_record(out[:cut], 0)


@pytest.mark.parametrize("codec", CODECS)
@given(data=st.data())
@settings(max_examples=30, deadline=None)
def test_corruption_inside_the_crc_is_rejected(codec, data):
    recs = [Record(offset_delta=i, key=b"k%d" % i, value=b"value %d" % i * 5) for i in range(5)]
    b = bytearray(build_batch(recs, compression=codec, base_timestamp=TS))
    pos = data.draw(st.integers(17, len(b) - 1), label="pos")
    flip = data.draw(st.integers(1, 255), label="xor")
    b[pos] ^= flip
    with pytest.raises(InvalidBatch):
        decode_batch(b)


def test_bytes_outside_the_crc_may_change():
    b = bytearray(build_batch([Record(value=b"v")], base_timestamp=TS))
    b[0:8] = (77).to_bytes(8, "big")  # baseOffset, rewritten by the broker on append
    b[12:16] = (9).to_bytes(4, "big")  # partitionLeaderEpoch, stamped by the leader
    d = decode_batch(b)
    assert d.base_offset == 77 and d.partition_leader_epoch == 9 and d.records[0].offset == 77


def _rebuild_with_crc(b: bytearray) -> bytes:
    struct.pack_into(">I", b, 17, crc32c.crc32c(bytes(b[21:])))
    return bytes(b)


def test_structural_errors_with_a_valid_crc():
    good = bytearray(build_batch([Record(offset_delta=i, value=b"abc") for i in range(3)], base_timestamp=TS))
    too_many = bytearray(good)
    struct.pack_into(">i", too_many, 57, 4)
    with pytest.raises(InvalidBatch, match="premature"):
        decode_batch(_rebuild_with_crc(too_many))
    too_few = bytearray(good)
    struct.pack_into(">i", too_few, 57, 2)
    with pytest.raises(InvalidBatch, match="remaining"):
        decode_batch(_rebuild_with_crc(too_few))
    negative = bytearray(good)
    struct.pack_into(">i", negative, 57, -1)
    with pytest.raises(InvalidBatch):
        decode_batch(_rebuild_with_crc(negative))
    bad_len = bytearray(good)
    bad_len[61] = 0x7E  # first record claims 63 bytes
    with pytest.raises(InvalidBatch):
        decode_batch(_rebuild_with_crc(bad_len))
    with pytest.raises(InvalidBatch):
        decode_batch(bytes(good[:-1]))  # runs past the end
    wrong_magic = bytearray(good)
    wrong_magic[16] = 1
    with pytest.raises(InvalidBatch):
        decode_batch(wrong_magic)


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_compressed_batch_bomb_is_bounded(codec):
    recs = [Record(offset_delta=i, value=bytes(1 << 20)) for i in range(16)]  # 16 MiB of zeros
    b = build_batch(recs, compression=codec, base_timestamp=TS)
    assert len(b) < 1 << 20
    with pytest.raises(DecompressionBomb) as e:
        decode_batch(b, max_size=1 << 20)
    assert e.value.code == ErrorCode.INVALID_RECORD
    assert len(decode_batch(b, max_size=32 << 20).records) == 16


@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(CODECS)), min_size=1, max_size=5), st.integers(0, 60))
@settings(max_examples=30, deadline=None)
def test_decode_batches_walks_a_buffer_and_stops_at_a_partial_batch(specs, cut):
    buf = bytearray()
    offset = 0
    for n, codec in specs:
        buf += build_batch([Record(offset_delta=i, value=b"x%d" % i) for i in range(n)], base_offset=offset,
                           compression=codec, base_timestamp=TS)
        offset += max(n, 1)
    assume(cut < len(buf))
    whole = list(decode_batches(buf))
    assert len(whole) == len(specs)
    partial = list(decode_batches(buf[:len(buf) - cut]))
    assert len(partial) == (len(specs) if cut == 0 else len(specs) - 1)
