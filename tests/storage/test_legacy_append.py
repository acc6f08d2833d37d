"""A log whose on-disk format is MessageSet v0/v1 (message.format.version 0.8.2 / 0.10.0, issue 7).

Golden bytes are checked field by field against the layouts of shared/seeds 000-002: the 26-byte
v0 header, the 34-byte v1 header, the 42-byte key="key" value="value" v1 message, and a
compressed wrapper whose offset is its last inner message's.
"""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records import legacy
from minibroker_protocol.records.batch import iter_batches
from minibroker_protocol.records.legacy import RecordData, build_message_set
from minibroker_storage.config import LogConfig
from minibroker_storage.log import Log

from .helpers import Clock, log_file

T = 1_700_000_000_123


def v1_log(tmp_path, **kw) -> Log:
    cfg = LogConfig(record_version=1, **kw)
    assert cfg.record_version == 1
    return Log.open(tmp_path / "legacy-0", cfg, now_ms=Clock(T + 1000))


def v0_log(tmp_path, **kw) -> Log:
    cfg = LogConfig(record_version=0, **kw)
    assert cfg.record_version == 0
    return Log.open(tmp_path / "legacy-0", cfg, now_ms=Clock(T + 1000))


def recs(*kv, ts: int = T) -> list[RecordData]:
    return [RecordData(i, ts + i, k, v) for i, (k, v) in enumerate(kv)]


def segment_bytes(lg: Log) -> bytes:
    lg.flush()
    return log_file(lg.dir).read_bytes()


def test_v1_key_value_message_is_the_seeds_42_bytes(tmp_path):
    lg = v1_log(tmp_path)
    lg.append_as_leader(build_message_set(recs((b"key", b"value")), magic=1))
    data = segment_bytes(lg)
    assert len(data) == 42  # seed 002: LOG_OVERHEAD 12 + RECORD_OVERHEAD_V1 22 + key 3 + value 5
    # offset 0-7 | size 8-11 | crc 12-15 | magic 16 | attributes 17 | timestamp 18-25 | key length 26-29
    offset, size, crc, magic, attrs, ts, klen = struct.unpack_from(">qiIbbqi", data)
    assert (offset, size, magic, attrs, ts, klen) == (0, 30, 1, 0, T, 3)
    assert crc == zlib.crc32(data[16:])  # seed 000: CRC-32 from the magic byte to the end
    assert data[30:33] == b"key"
    assert struct.unpack_from(">i", data, 33)[0] == 5 and data[37:42] == b"value"
    # seed 001: the fixed part (both length fields included) is 34 bytes in v1
    assert len(data) - len(b"key") - len(b"value") == 34


def test_v1_second_message_has_the_next_offset_and_a_null_key(tmp_path):
    lg = v1_log(tmp_path)
    lg.append_as_leader(build_message_set(recs((b"key", b"value")), magic=1))
    lg.append_as_leader(build_message_set(recs((None, b"v2"), ts=T + 5), magic=1))
    second = segment_bytes(lg)[42:]
    off, size, crc, magic, attrs, ts, klen, vlen = struct.unpack_from(">qiIbbqii", second)
    assert (off, size, magic, attrs, ts, klen, vlen) == (1, 22 + 2, 1, 0, T + 5, -1, 2)
    assert second[34:] == b"v2" and crc == zlib.crc32(second[16:])


def test_v0_header_is_26_bytes(tmp_path):
    lg = v0_log(tmp_path)
    lg.append_as_leader(build_message_set(recs((b"key", b"value"), (b"k2", None)), magic=0))
    data = segment_bytes(lg)
    assert len(data) == (26 + 3 + 5) + (26 + 2)  # seed 001: a v0 header is 26 bytes
    # offset 0-7 | size 8-11 | crc 12-15 | magic 16 | attributes 17 | key length 18-21 | key | value length | value
    off, size, crc, magic, attrs, klen = struct.unpack_from(">qiIbbi", data)
    assert (off, size, magic, attrs, klen) == (0, 14 + 8, 0, 0, 3)
    assert data[22:25] == b"key" and struct.unpack_from(">i", data, 25)[0] == 5 and data[29:34] == b"value"
    assert crc == zlib.crc32(data[16:34])
    off, size, crc, magic, attrs, klen = struct.unpack_from(">qiIbbi", data, 34)
    assert (off, size, magic, attrs, klen) == (1, 16, 0, 0, 2)
    assert data[56:58] == b"k2" and struct.unpack_from(">i", data, 58)[0] == -1  # null value: length -1
    assert crc == zlib.crc32(data[50:])
    assert lg.log_end_offset == 2


def test_v1_compressed_wrapper_keeps_relative_inner_offsets_and_carries_the_last_offset(tmp_path):
    lg = v1_log(tmp_path)
    lg.append_as_leader(build_message_set(recs((None, b"a")), magic=1))
    info = lg.append_as_leader(build_message_set(recs((b"k", b"x"), (b"k", b"y"), (b"k", b"z")), magic=1,
                                                 compression=1))
    assert (info.first_offset, info.last_offset, info.num_records) == (1, 3, 3)
    data = segment_bytes(lg)
    shallow = list(legacy.iter_shallow(data))
    assert [m.offset for m in shallow] == [0, 3]  # seed 000: the wrapper's offset is its last inner offset
    wrapper = shallow[1]
    assert wrapper.attributes & 0x07 == 1 and wrapper.key is None and wrapper.timestamp == T + 2  # max inner ts
    raw_inner = list(legacy.iter_shallow(_gunzip(wrapper.value)))
    assert [m.offset for m in raw_inner] == [0, 1, 2]  # KIP-31: relative inner offsets
    assert [m.offset for m in legacy.inner_records(wrapper)] == [1, 2, 3]  # AO = 3 + (IO - 2), seed 002
    assert lg.log_end_offset == 4


def _gunzip(value: bytes) -> bytes:
    import gzip
    return gzip.decompress(value)


def test_v0_compressed_wrapper_is_rebuilt_with_absolute_inner_offsets(tmp_path):
    lg = v0_log(tmp_path)
    lg.append_as_leader(build_message_set(recs((None, b"a"), (None, b"b")), magic=0))
    lg.append_as_leader(build_message_set(recs((None, b"c"), (None, b"d")), magic=0, compression=1))
    data = segment_bytes(lg)
    shallow = list(legacy.iter_shallow(data))
    assert [m.offset for m in shallow] == [0, 1, 3]
    assert [m.offset for m in legacy.iter_shallow(_gunzip(shallow[2].value))] == [2, 3]
    assert [(m.offset, m.value) for m in legacy.iter_deep(data)] == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")]


def test_reads_recovery_and_index_by_wrapper_last_offset(tmp_path):
    lg = v1_log(tmp_path, index_interval_bytes=0)
    for i in range(5):
        lg.append_as_leader(build_message_set([RecordData(j, T + j, None, b"%d-%d" % (i, j)) for j in range(4)],
                                              magic=1, compression=1))
    assert lg.log_end_offset == 20
    info = lg.read(6, 1 << 20)
    got = info.region.read_all()
    assert next(legacy.iter_shallow(got)).offset == 7  # the wrapper holding 4..7
    assert [m.offset for m in legacy.iter_deep(got)][:4] == [4, 5, 6, 7]
    # Kafka's LogSegment indexes an entry by its last offset: a wrapper's own offset
    assert [e.offset for e in lg.active_segment.offset_index.all_entries()][:2] == [7, 11]
    lg.close()
    again = Log.open(tmp_path / "legacy-0", lg.config, now_ms=Clock(T + 1000))  # no clean-shutdown marker
    assert again.log_end_offset == 20
    assert next(legacy.iter_shallow(again.read(13, 10).region.read_all())).offset == 15
    assert again.offset_for_timestamp(T + 2) == (2, T + 2)
    again.close()


def test_log_append_time_stamps_the_v1_wrapper(tmp_path):
    lg = v1_log(tmp_path, message_timestamp_type="LogAppendTime")
    info = lg.append_as_leader(build_message_set(recs((None, b"a"), (None, b"b")), magic=1, compression=1))
    assert info.log_append_time == T + 1000
    wrapper = next(legacy.iter_shallow(segment_bytes(lg)))
    assert wrapper.timestamp == T + 1000 and wrapper.timestamp_type == legacy.LOG_APPEND_TIME
    assert {m.timestamp for m in legacy.inner_records(wrapper)} == {T + 1000}


@pytest.mark.parametrize("make, code", [
    (lambda: build_message_set(recs((None, b"a")), magic=0), ErrorCode.INVALID_RECORD),  # v0 into a v1 log
    (lambda: bytes(build_message_set(recs((None, b"a")), magic=1)[:-1]) + b"b", ErrorCode.CORRUPT_MESSAGE),
    (lambda: build_message_set(recs((None, b"a")), magic=1)[:-3], ErrorCode.CORRUPT_MESSAGE),
    (lambda: build_message_set(recs((None, b"x" * 200)), magic=1), ErrorCode.MESSAGE_TOO_LARGE),
])
def test_bad_message_sets_are_refused_and_nothing_is_written(tmp_path, make, code):
    lg = v1_log(tmp_path, max_message_bytes=100)
    with pytest.raises(KafkaError) as e:
        lg.append_as_leader(make())
    assert e.value.code == code
    assert lg.log_end_offset == 0 and lg.active_segment.size == 0


def test_a_v1_log_refuses_record_batch_v2(tmp_path):
    from minibroker_protocol.records.v2 import Record, build_batch
    lg = v1_log(tmp_path)
    with pytest.raises(KafkaError) as e:
        lg.append_as_leader(build_batch([Record(value=b"a")], base_timestamp=T))
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE  # byte 16 is 2: not a message set


def test_legacy_fetch_offsets_before(tmp_path):
    lg = v1_log(tmp_path)
    for _ in range(3):
        lg.append_as_leader(build_message_set(recs((None, b"a"), (None, b"b")), magic=1))
        lg.roll()
    lg.append_as_leader(build_message_set(recs((None, b"c")), magic=1))
    assert [s.base_offset for s in lg.segments.values()] == [0, 2, 4, 6]
    assert lg.legacy_fetch_offsets_before(-1, 10) == [7, 6, 4, 2, 0]
    assert lg.legacy_fetch_offsets_before(-1, 1) == [7]
    assert lg.legacy_fetch_offsets_before(-2, 10) == [0]
    assert lg.legacy_fetch_offsets_before(0, 10) == []  # every segment was modified after time 0


def test_batches_on_disk_are_whole_entries(tmp_path):
    lg = v1_log(tmp_path)
    lg.append_as_leader(build_message_set(recs((None, b"a"), (None, b"b")), magic=1, compression=2))
    views = list(iter_batches(segment_bytes(lg)))
    assert [(v.magic, v.base_offset, v.last_offset) for v in views] == [(1, 1, 1)]


def test_coordinator_appends_stay_record_batch_v2_on_a_legacy_log(tmp_path):
    """__consumer_offsets under a broker-wide old message.format.version: the coordinators' v2
    batches are written as they are, after the client's message sets (a mixed log reads fine)."""
    from minibroker_protocol.records.v2 import Record, build_batch
    from minibroker_storage.log import AppendOrigin
    lg = v1_log(tmp_path)
    lg.append_as_leader(build_message_set(recs((None, b"a")), magic=1))
    lg.append_as_leader(build_batch([Record(value=b"b")], base_timestamp=T), origin=AppendOrigin.COORDINATOR)
    assert [(v.magic, v.last_offset) for v in iter_batches(segment_bytes(lg))] == [(1, 0), (2, 1)]
    lg.close()
    assert Log.open(tmp_path / "legacy-0", lg.config, now_ms=Clock(T)).log_end_offset == 2


def test_the_annotated_hexdump_in_docs_formats_is_what_the_log_writes(tmp_path):
    """docs/formats.md shows a v1 segment byte by byte; rebuild it and compare."""
    import re
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "docs" / "formats.md").read_text()
    block = text.split("### A v1 topic's segment", 1)[1].split("```", 2)[1]
    documented = bytes.fromhex("".join(re.sub(r"^[0-9a-f]{8}\s+", "", line) for line in block.strip().splitlines()))
    base = 1_700_000_000_000
    lg = Log.open(tmp_path / "seeds-0", LogConfig(record_version=1),
                  now_ms=Clock(base + 5000))
    lg.append_as_leader(build_message_set([RecordData(0, base, b"key", b"value")], magic=1))
    lg.append_as_leader(build_message_set([RecordData(0, base + 1, None, b"a"), RecordData(1, base + 2, None, b"b")],
                                          magic=1, compression=1))
    assert segment_bytes(lg) == documented and len(documented) == 134


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(magic=st.sampled_from([0, 1]), codec=st.sampled_from([0, 1, 2, 3]),
       sets=st.lists(st.lists(st.tuples(st.none() | st.binary(max_size=8), st.none() | st.binary(max_size=40)),
                              min_size=1, max_size=6), min_size=1, max_size=5))
def test_appended_message_sets_read_back_in_order_with_consecutive_offsets(tmp_path_factory, magic, codec, sets):
    cfg = LogConfig(record_version=magic, index_interval_bytes=50)
    lg = Log.open(tmp_path_factory.mktemp("prop") / "p-0", cfg, now_ms=Clock(T + 1000))
    expected = []
    for kvs in sets:
        info = lg.append_as_leader(build_message_set(recs(*kvs), magic=magic, compression=codec))
        assert info.first_offset == len(expected) and info.last_offset == len(expected) + len(kvs) - 1
        expected += kvs
    data = segment_bytes(lg)
    got = list(legacy.iter_deep(data))
    assert [(m.offset, m.key, m.value) for m in got] == [(i, k, v) for i, (k, v) in enumerate(expected)]
    assert {m.magic for m in got} == {magic}
    for target in range(len(expected)):  # every offset is found through the index and a header scan
        first = next(m for m in legacy.iter_deep(lg.read(target, 1).region.read_all()) if m.offset >= target)
        assert first.offset == target
    lg.close()
