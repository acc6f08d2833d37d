"""BatchView and the in-place rewrites of minibroker_protocol.records.batch, checked against full decoders
(ours and kafka-python's)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.memory_records import MemoryRecords

from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.records import legacy as L
from minibroker_protocol.records import v2
from minibroker_protocol.records.batch import (
    BatchView,
    InvalidBatch,
    iter_batches,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)
from minibroker_protocol.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]


def _batch(n=3, codec=NONE, **kw):
    recs = [v2.Record(offset_delta=i, timestamp_delta=i * 10, key=b"k", value=b"v%d" % i) for i in range(n)]
    kw.setdefault("base_timestamp", 1000)
    return v2.build_batch(recs, compression=codec, **kw)


@pytest.mark.parametrize("codec", CODECS)
def test_view_agrees_with_the_decoder(codec):
    b = _batch(5, codec, base_offset=40, producer_id=9, producer_epoch=2, base_sequence=100, is_transactional=True,
               partition_leader_epoch=4)
    v = BatchView(b)
    d = v2.decode_batch(b)
    v.validate()
    for name in ("base_offset", "batch_length", "partition_leader_epoch", "magic", "crc", "attributes",
                 "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
                 "base_sequence", "records_count"):
        assert getattr(v, name) == getattr(d, name), name
    assert (v.size, v.last_offset, v.compression, v.is_transactional, v.is_control) == (
        len(b), 44, codec, True, False)


@pytest.mark.parametrize("codec", CODECS)
@given(offset=st.integers(0, 2**62), epoch=st.integers(-1, 2**31 - 1), lat=st.integers(0, 2**42))
@settings(max_examples=15, deadline=None)
def test_in_place_rewrites_keep_the_batch_valid(codec, offset, epoch, lat):
    buf = bytearray(_batch(4, codec))
    set_base_offset(buf, 0, offset)
    set_partition_leader_epoch(buf, 0, epoch)
    BatchView(buf).validate()  # baseOffset and the epoch are outside the CRC
    set_log_append_time(buf, 0, lat)
    v = BatchView(buf)
    v.validate()
    assert v.timestamp_type == 1 and v.max_timestamp == lat and v.base_offset == offset
    d = v2.decode_batch(buf)
    assert [r.offset for r in d.records] == [offset + i for i in range(4)]
    assert [r.timestamp for r in d.records] == [lat] * 4
    kb = next(MemoryRecords(bytes(buf)))
    assert kb.validate_crc()
    assert [(r.offset, r.timestamp) for r in kb] == [(offset + i, lat) for i in range(4)]


def test_view_of_legacy_messages():
    m1 = L.encode_message(77, b"k", b"v", magic=1, timestamp=123)
    v = BatchView(m1)
    v.validate()
    assert (v.magic, v.base_offset, v.last_offset, v.records_count, v.base_timestamp, v.size) == (1, 77, 77, 1, 123,
                                                                                                 len(m1))
    m0 = L.encode_message(78, None, b"v", magic=0)
    v0 = BatchView(m0)
    v0.validate()
    assert (v0.magic, v0.base_offset, v0.base_timestamp, v0.timestamp_type) == (0, 78, -1, 0)
    wrapper = L.build_message_set([L.RecordData(10 + i, 5, None, b"x") for i in range(4)], magic=1, compression=GZIP)
    vw = BatchView(wrapper)
    assert vw.base_offset == 13 and vw.compression == GZIP  # the wrapper carries the last offset
    bad = bytearray(m1)
    bad[-1] ^= 1
    with pytest.raises(InvalidBatch):
        BatchView(bad).validate()


def test_iter_batches_over_mixed_formats_stops_at_a_partial_entry():
    parts = [L.encode_message(0, None, b"a", magic=0), L.encode_message(1, None, b"b", magic=1, timestamp=1),
             _batch(3, LZ4, base_offset=2), _batch(2, NONE, base_offset=5)]
    buf = b"".join(parts)
    views = list(iter_batches(buf))
    assert [(v.pos, v.size, v.magic) for v in views] == [
        (0, len(parts[0]), 0), (len(parts[0]), len(parts[1]), 1),
        (len(parts[0]) + len(parts[1]), len(parts[2]), 2), (len(buf) - len(parts[3]), len(parts[3]), 2)]
    assert len(list(iter_batches(buf[:-1]))) == 3


def test_producer_side_count_check():
    b = bytearray(_batch(3))
    v2_bad = v2.build_batch([v2.Record(offset_delta=0), v2.Record(offset_delta=5)], base_timestamp=0)
    with pytest.raises(InvalidBatch) as e:
        BatchView(v2_bad).validate()  # a client batch must have offsets 0..n-1
    assert e.value.code == ErrorCode.INVALID_RECORD
    assert len(v2.decode_batch(v2_bad).records) == 2  # but a compacted batch on disk decodes fine
    b[16] = 3
    with pytest.raises(InvalidBatch):
        BatchView(b)
