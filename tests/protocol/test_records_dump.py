"""Batch summaries for humans, checked against the DumpLogSegments output in seed 003."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker_protocol.records import legacy as L
from minibroker_protocol.records import v2
from minibroker_protocol.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD
from minibroker_protocol.records.dump import BatchSummary, Trailing, dump, format_batch, iter_summaries

# seed 003, `kafka-run-class.sh kafka.tools.DumpLogSegments --files 00000000000000000000.log`
SEED_003_LINES = [
    "baseOffset: 0 lastOffset: 14 count: 15 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
    "partitionLeaderEpoch: 0 isTransactional: false isControl: false position: 0 CreateTime: 1672712725383 "
    "isvalid: true size: 15556 magic: 2 compresscodec: NONE crc: 3190469233",
    "baseOffset: 15 lastOffset: 29 count: 15 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
    "partitionLeaderEpoch: 0 isTransactional: false isControl: false position: 15556 CreateTime: 1672712725384 "
    "isvalid: true size: 15556 magic: 2 compresscodec: NONE crc: 3825157874",
]


def _perf_test_batch(base_offset: int, base_ts: int, max_delta: int) -> bytes:
    # 15 records of a 1024-byte value and no key, timestamps within the batch's span
    deltas = [min(i // 2, max_delta) for i in range(14)] + [max_delta]
    recs = [v2.Record(offset_delta=i, timestamp_delta=d, value=b"%04d" % (base_offset + i) * 256)
            for i, d in enumerate(deltas)]
    return v2.build_batch(recs, base_offset=base_offset, base_timestamp=base_ts, partition_leader_epoch=0)


def test_dump_lines_match_seed_003_except_the_crc():
    seg = _perf_test_batch(0, 1672712725376, 7) + _perf_test_batch(15, 1672712725383, 1)
    summaries = list(iter_summaries(seg))
    assert all(isinstance(s, BatchSummary) for s in summaries)
    lines = [format_batch(s) for s in summaries]
    for line, seed_line, s in zip(lines, SEED_003_LINES, summaries, strict=True):
        head, _, crc = seed_line.rpartition(" crc: ")
        assert line == f"{head} crc: {s.crc}"
        assert s.crc != int(crc)  # our payload is not the perf-test's random text
    assert list(dump(seg)) == lines


def test_forged_crc_is_reported_not_raised():
    seg = bytearray(_perf_test_batch(0, 1672712725376, 7))
    seg[17:21] = (3190469233).to_bytes(4, "big")
    (s,) = list(iter_summaries(seg, records=True))
    assert s.crc == 3190469233 and not s.is_valid and "crc" in s.error
    assert format_batch(s).endswith("isvalid: false size: 15556 magic: 2 compresscodec: NONE crc: 3190469233")


def test_records_and_control_markers():
    data = v2.build_batch([v2.Record(offset_delta=i, key=b"k", value=b"hello", headers=[("a", b"1"), ("b", None)])
                           for i in range(2)], base_offset=5, base_timestamp=100, producer_id=7, producer_epoch=1,
                          base_sequence=10, is_transactional=True, compression=GZIP)
    data += v2.build_control_batch(v2.ControlType.ABORT, producer_id=7, producer_epoch=1, coordinator_epoch=3,
                                   timestamp=200, base_offset=7)
    lines = list(dump(data, payload=True))
    assert lines[0].startswith("baseOffset: 5 lastOffset: 6 count: 2 baseSequence: 10 lastSequence: 11 producerId: 7 "
                               "producerEpoch: 1 partitionLeaderEpoch: -1 isTransactional: true isControl: false")
    assert "compresscodec: GZIP" in lines[0]
    assert lines[1] == ("| offset: 5 CreateTime: 100 keySize: 1 valueSize: 5 sequence: 10 headerKeys: [a, b] "
                        "key: k payload: hello")
    assert lines[2].startswith("| offset: 6 CreateTime: 100") and "sequence: 11" in lines[2]
    assert "isControl: true" in lines[3]
    assert lines[4] == ("| offset: 7 CreateTime: 200 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
                        "endTxnMarker: ABORT coordinatorEpoch: 3")


def test_legacy_entries():
    recs = [L.RecordData(100 + i, 50 + i, None, b"v") for i in range(3)]
    data = L.build_message_set(recs, magic=1, compression=SNAPPY) + L.build_message_set(recs[:1], magic=0)
    (w, m0) = list(iter_summaries(data, records=True))
    assert (w.base_offset, w.last_offset, w.count, w.magic, w.compression) == (100, 102, 3, 1, SNAPPY)
    assert [r.offset for r in w.records] == [100, 101, 102]
    assert format_batch(w).startswith("offset: 102 position: 0 CreateTime: 52 isvalid: true")
    assert format_batch(m0).startswith(f"offset: 100 position: {w.size} NoTimestampType: -1 isvalid: true")


@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from([NONE, GZIP, SNAPPY, LZ4, ZSTD])), min_size=1,
                max_size=4), st.data())
@settings(max_examples=30, deadline=None)
def test_partial_tail_is_reported(specs, draw):
    data = bytearray()
    offset = 0
    for n, codec in specs:
        last = v2.build_batch([v2.Record(offset_delta=i, value=b"x") for i in range(n)], base_offset=offset,
                              base_timestamp=0, compression=codec)
        data += last
        offset += n
    # Somewhere inside the last batch: cutting len(last) bytes would drop it whole, leaving no tail.
    cut = draw.draw(st.integers(1, len(last) - 1), label="cut")
    items = list(iter_summaries(data[:-cut], records=True, position=1000))
    assert all(isinstance(i, BatchSummary) and i.is_valid for i in items[:-1])
    tail = items[-1]
    assert isinstance(tail, Trailing)
    assert tail.position + tail.size == 1000 + len(data) - cut
    assert len(items) == len(specs)
