"""Log: append (validation, offsets, epochs, LogAppendTime), read (KIP-74, whole batches, limits),
roll, timestamps, flush and the recovery point."""

from __future__ import annotations

import os
import threading

import pytest

from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records.batch import BatchView, iter_batches
from minibroker_protocol.records.v2 import ControlType, build_control_batch, decode_batch
from minibroker_storage.config import LogConfig
from minibroker_storage.log import AppendOrigin, Log

from .helpers import SEED_TS, Clock, batch


def open_log(tmp_path, clock=None, **cfg) -> Log:
    return Log.open(tmp_path / "t-0", LogConfig(**cfg), now_ms=clock or Clock())


def disk_bytes(lg: Log) -> bytes:
    return b"".join(s.log.read(0, s.size) for s in lg.segments)


# -- append -------------------------------------------------------------------------------------


def test_append_assigns_offsets_by_rewriting_base_offset_only(tmp_path):
    lg = open_log(tmp_path)
    b1, b2 = batch(3), batch(5)
    i1 = lg.append_as_leader(b1, leader_epoch=7)
    i2 = lg.append_as_leader(bytearray(b2), leader_epoch=7)
    assert (i1.first_offset, i1.last_offset, i1.num_records, i1.valid_bytes) == (0, 2, 3, len(b1))
    assert (i2.first_offset, i2.last_offset, i2.log_append_time) == (3, 7, -1)
    assert (lg.log_end_offset, lg.high_watermark, lg.last_stable_offset) == (8, 8, 8)
    data = disk_bytes(lg)
    assert len(data) == len(b1) + len(b2)
    v1, v2 = iter_batches(data)
    assert (v1.base_offset, v1.partition_leader_epoch, v2.base_offset) == (0, 7, 3)
    v1.validate()
    v2.validate()
    # byte-identical apart from baseOffset (bytes 0-7) and partitionLeaderEpoch (12-15)
    assert data[16:len(b1)] == b1[16:] and data[8:12] == b1[8:12]
    assert data[len(b1) + 16:] == b2[16:]
    assert lg.leader_epoch_cache.entries() == [(7, 0)]


def test_several_batches_in_one_append_each_get_offsets(tmp_path):
    lg = open_log(tmp_path)
    info = lg.append_as_leader(batch(2) + batch(4) + batch(1))
    assert (info.first_offset, info.last_offset, info.num_records) == (0, 6, 7)
    assert [(v.base_offset, v.last_offset) for v in iter_batches(disk_bytes(lg))] == [(0, 1), (2, 5), (6, 6)]


def corrupt_crc(b: bytes) -> bytes:
    x = bytearray(b)
    x[-1] ^= 0xFF
    return bytes(x)


@pytest.mark.parametrize("records, code", [
    (lambda: corrupt_crc(batch(2)), ErrorCode.CORRUPT_MESSAGE),
    (lambda: batch(2)[:-3], ErrorCode.CORRUPT_MESSAGE),  # torn
    (lambda: batch(2) + b"\0\0\0", ErrorCode.CORRUPT_MESSAGE),  # trailing garbage
    (lambda: batch(2, base_offset=5), ErrorCode.INVALID_RECORD),  # clients send baseOffset 0
    (lambda: batch(2, last_offset_delta=5), ErrorCode.INVALID_RECORD),  # count vs delta
    (lambda: batch(0), ErrorCode.INVALID_RECORD),
    (lambda: batch(2, is_control=True), ErrorCode.INVALID_RECORD),
    (lambda: batch(2, producer_id=9, producer_epoch=0, base_sequence=-1), ErrorCode.INVALID_RECORD),
    (lambda: batch(2, timestamp_type=1), ErrorCode.INVALID_TIMESTAMP),
])
def test_nothing_is_written_unless_every_batch_is_valid(tmp_path, records, code):
    lg = open_log(tmp_path)
    lg.append_as_leader(batch(1))
    good = batch(3)
    with pytest.raises(KafkaError) as e:
        lg.append_as_leader(good + records())
    assert e.value.code == code
    assert lg.log_end_offset == 1 and lg.active_segment.size == len(batch(1))


def test_empty_append_is_refused(tmp_path):
    with pytest.raises(KafkaError) as e:
        open_log(tmp_path).append_as_leader(b"")
    assert e.value.code == ErrorCode.INVALID_RECORD


def test_size_limits(tmp_path):
    lg = open_log(tmp_path, max_message_bytes=500)
    with pytest.raises(KafkaError) as e:
        lg.append_as_leader(batch(1, 600))
    assert e.value.code == ErrorCode.MESSAGE_TOO_LARGE
    lg = Log.open(tmp_path / "u-0", LogConfig(segment_bytes=1000))
    with pytest.raises(KafkaError) as e:
        lg.append_as_leader(batch(1, 400) + batch(1, 400) + batch(1, 400))
    assert e.value.code == ErrorCode.RECORD_LIST_TOO_LARGE


def test_timestamp_bounds(tmp_path):
    clock = Clock()
    lg = open_log(tmp_path, clock, message_timestamp_before_max_ms=1000, message_timestamp_after_max_ms=10)
    lg.append_as_leader(batch(1, base_ts=clock.ms - 1000))
    for ts in (clock.ms - 1001, clock.ms + 11):
        with pytest.raises(KafkaError) as e:
            lg.append_as_leader(batch(1, base_ts=ts))
        assert e.value.code == ErrorCode.INVALID_TIMESTAMP


def test_log_append_time_is_stamped_with_a_valid_crc(tmp_path):
    clock = Clock()
    lg = open_log(tmp_path, clock, message_timestamp_type="LogAppendTime")
    info = lg.append_as_leader(batch(3, base_ts=SEED_TS, ts_deltas=[0, 5, 9]))
    assert info.log_append_time == clock.ms and info.max_timestamp == clock.ms
    (v,) = iter_batches(disk_bytes(lg))
    v.validate()
    assert v.timestamp_type == 1 and v.max_timestamp == clock.ms and v.base_timestamp == SEED_TS
    assert {r.timestamp for r in decode_batch(disk_bytes(lg)).records} == {clock.ms}


def test_coordinator_may_write_control_batches(tmp_path):
    lg = open_log(tmp_path)
    lg.append_as_leader(build_control_batch(ControlType.COMMIT, producer_id=1, producer_epoch=0, coordinator_epoch=0,
                                            timestamp=SEED_TS), origin=AppendOrigin.COORDINATOR)
    assert lg.log_end_offset == 1


# -- read ---------------------------------------------------------------------------------------


def filled(tmp_path, sizes=(3, 5, 2, 4), value_size=100, **cfg) -> tuple[Log, list[bytes]]:
    lg = open_log(tmp_path, **cfg)
    for n in sizes:
        lg.append_as_leader(batch(n, value_size))
    data = disk_bytes(lg)
    return lg, [bytes(data[v.pos:v.pos + v.size]) for v in iter_batches(data)]


def test_read_whole_batches_from_the_one_holding_the_offset(tmp_path):
    lg, stored = filled(tmp_path)  # offsets [0-2] [3-7] [8-9] [10-13]
    info = lg.read(4, 1_000_000)  # mid-batch: the whole batch [3-7] and everything after
    assert info.first_offset == 3 and info.region.read_all() == b"".join(stored[1:])
    assert (info.high_watermark, info.log_end_offset, info.log_start_offset) == (14, 14, 0)
    # max_bytes cuts at a batch boundary, never inside a batch
    info = lg.read(0, len(stored[0]) + len(stored[1]) + 10)
    assert info.region.read_all() == stored[0] + stored[1]
    # KIP-74: at least one whole batch even when it exceeds max_bytes ...
    assert lg.read(3, 1).region.read_all() == stored[1]
    # ... unless the caller already has data for this fetch
    assert lg.read(3, 1, min_one_batch=False).region is None
    # the log end offset: empty; past it or before the start: out of range
    assert lg.read(14, 100).region is None
    for bad in (15, -1):
        with pytest.raises(KafkaError) as e:
            lg.read(bad, 100)
        assert e.value.code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_read_stops_before_max_offset(tmp_path):
    lg, stored = filled(tmp_path)
    assert lg.read(0, 10**6, max_offset=8).region.read_all() == stored[0] + stored[1]
    assert lg.read(0, 10**6, max_offset=9).region.read_all() == stored[0] + stored[1]  # [8-9] crosses it
    assert lg.read(8, 10**6, max_offset=8).region is None


def test_read_across_segments_returns_one_segment_file(tmp_path):
    lg, stored = filled(tmp_path, sizes=(2,) * 6, value_size=300, segment_bytes=1500)
    assert lg.num_segments > 2
    for seg in lg.segments.values():
        first = seg.base_offset
        info = lg.read(first, 10**6)
        assert info.first_offset == first
        assert info.region.fd == seg.log.fd and info.region.position == 0 and info.region.size == seg.size
    got = []
    off = 0
    while off < lg.log_end_offset:  # a consumer loop reads everything back, byte-identical
        info = lg.read(off, 700)
        chunk = info.region.read_all()
        got.append(chunk)
        off = list(iter_batches(chunk))[-1].last_offset + 1
    assert b"".join(got) == b"".join(stored)


def test_read_scans_from_the_index_on_large_segments(tmp_path):
    lg, stored = filled(tmp_path, sizes=[1] * 300, value_size=200, index_interval_bytes=1000)
    seg = lg.active_segment
    assert seg.offset_index.entries > 20
    for off in (0, 1, 57, 150, 299):
        info = lg.read(off, 2500)
        chunk = info.region.read_all()
        views = list(iter_batches(chunk))
        assert views[0].base_offset == off and sum(v.size for v in views) == len(chunk) <= 2500
        assert chunk == b"".join(stored[off:off + len(views)])


# -- roll ---------------------------------------------------------------------------------------


def test_roll_on_segment_bytes(tmp_path):
    lg = open_log(tmp_path, segment_bytes=1000)
    sizes = []
    for _ in range(5):
        sizes.append(len(batch(1, 300)))
        lg.append_as_leader(batch(1, 300))
    assert [s.base_offset for s in lg.segments] == [0, 2, 4]
    assert all(s.size <= 1000 for s in lg.segments)
    names = sorted(p.name for p in (tmp_path / "t-0").iterdir())
    assert "00000000000000000002.log" in names and "00000000000000000004.timeindex" in names
    old = lg.segments.get(0)
    assert old.offset_index.path.stat().st_size == old.offset_index.entries * 8  # trimmed on roll
    assert old.time_index.path.stat().st_size == old.time_index.entries * 12 > 0  # holds its final max


def test_roll_on_segment_ms_by_first_batch_timestamp(tmp_path):
    lg = open_log(tmp_path, segment_ms=1000)
    lg.append_as_leader(batch(1, base_ts=SEED_TS))
    lg.append_as_leader(batch(1, base_ts=SEED_TS + 1000))
    assert lg.num_segments == 1
    lg.append_as_leader(batch(1, base_ts=SEED_TS + 1001))
    assert [s.base_offset for s in lg.segments] == [0, 2]


def test_roll_on_full_index(tmp_path):
    lg = open_log(tmp_path, index_interval_bytes=0, segment_index_bytes=8 * 4)
    for _ in range(10):
        lg.append_as_leader(batch(1))
    assert lg.num_segments > 1
    for s in lg.segments:
        assert s.offset_index.entries <= 4


def test_explicit_roll_and_reopen(tmp_path):
    lg = open_log(tmp_path)
    lg.append_as_leader(batch(2))
    lg.roll()
    lg.roll()  # an empty active segment at the LEO already: nothing to do
    lg.append_as_leader(batch(2))
    assert [s.base_offset for s in lg.segments] == [0, 2]
    lg.flush()
    lg.close()
    lg = Log.open(tmp_path / "t-0", LogConfig(), clean_shutdown=True, recovery_point=4)
    assert (lg.log_end_offset, lg.num_segments) == (4, 2)
    assert lg.read(2, 100).first_offset == 2


# -- timestamps ---------------------------------------------------------------------------------


def test_offset_for_timestamp_finds_the_first_record_at_or_after_it(tmp_path):
    lg = open_log(tmp_path, segment_bytes=700, index_interval_bytes=100)
    t0 = SEED_TS
    for i in range(20):  # batch i: records at t0+10i, t0+10i+3, t0+10i+6
        lg.append_as_leader(batch(3, 50, base_ts=t0 + 10 * i, ts_deltas=[0, 3, 6]))
    assert lg.num_segments > 3
    assert lg.offset_for_timestamp(t0) == (0, t0)
    assert lg.offset_for_timestamp(t0 + 4) == (2, t0 + 6)  # inside a batch: to the record
    assert lg.offset_for_timestamp(t0 + 7) == (3, t0 + 10)
    assert lg.offset_for_timestamp(t0 + 124) == (38, t0 + 126)
    assert lg.offset_for_timestamp(t0 + 197) is None
    assert lg.max_timestamp_and_offset() == (t0 + 196, 59)
    lg.record_timestamps = None  # without record decoding: to the batch
    assert lg.offset_for_timestamp(t0 + 4) == (0, t0 + 6)
    lg.delete_records_before(31)
    assert lg.offset_for_timestamp(t0) == (31, t0 + 106)


def test_max_timestamp_with_out_of_order_timestamps(tmp_path):
    lg = open_log(tmp_path)
    lg.append_as_leader(batch(3, base_ts=SEED_TS, ts_deltas=[0, 50, 2]))
    lg.append_as_leader(batch(2, base_ts=SEED_TS + 10, ts_deltas=[0, 1]))
    assert lg.max_timestamp_and_offset() == (SEED_TS + 50, 1)
    assert lg.offset_for_timestamp(SEED_TS + 3) == (1, SEED_TS + 50)
    assert open_log(tmp_path / "empty").max_timestamp_and_offset() is None


# -- flush --------------------------------------------------------------------------------------


def test_flush_moves_the_recovery_point(tmp_path):
    clock = Clock()
    lg = open_log(tmp_path, clock, flush_ms=1000)
    lg.append_as_leader(batch(2))
    assert lg.recovery_point == 0 and lg.needs_flush() is False
    clock.advance(1000)
    assert lg.needs_flush()
    lg.maybe_flush()
    assert lg.recovery_point == 2 and not lg.needs_flush()


def test_flush_messages_1_is_fsync_per_append(tmp_path):
    lg = open_log(tmp_path, flush_messages=1)
    for i in range(3):
        lg.append_as_leader(batch(1))
        assert lg.needs_flush()
        lg.maybe_flush()
        assert lg.recovery_point == i + 1


def test_roll_asks_for_a_flush_of_the_closed_segment(tmp_path):
    lg = open_log(tmp_path, segment_bytes=800)
    for _ in range(3):
        lg.append_as_leader(batch(1, 300))
    assert lg.num_segments == 2 and lg.needs_flush()
    lg.maybe_flush()
    assert lg.recovery_point == lg.active_segment.base_offset < lg.log_end_offset


def test_flush_from_another_thread_while_appending(tmp_path):
    lg = open_log(tmp_path, segment_bytes=4000)
    stop = threading.Event()
    errors: list[BaseException] = []

    def flusher():
        try:
            while not stop.is_set():
                lg.flush()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=flusher)
    t.start()
    try:
        for _ in range(300):
            lg.append_as_leader(batch(2, 100))
    finally:
        stop.set()
        t.join(10)
    assert not errors
    lg.flush()
    assert lg.recovery_point == lg.log_end_offset == 600
    assert [v.base_offset for v in iter_batches(disk_bytes(lg))] == list(range(0, 600, 2))


def test_region_survives_segment_deletion_until_cleanup(tmp_path):
    clock = Clock()
    lg, stored = filled(tmp_path, sizes=(2,) * 6, value_size=300, segment_bytes=1500, clock=None)
    lg._now_ms = clock
    region = lg.read(0, 10**6).region
    lg.delete_records_before(lg.segments.values()[1].base_offset)
    assert lg.cleanup_deleted(clock.ms) == 0
    assert region.read_all() == b"".join(stored[:len(list(iter_batches(region.read_all())))])
    assert lg.cleanup_deleted(clock.ms + 60_000) == 1


def test_batch_view_over_fetched_region(tmp_path):
    lg, stored = filled(tmp_path)
    v = BatchView(lg.read(8, 10).region.read_all())
    assert (v.base_offset, v.last_offset) == (8, 9)


def _walked(seg, offset: int, limit: int) -> tuple[int, int] | None:
    """What a read of `offset` up to `limit` bytes covers, found by walking every header from the
    segment's start (the definition the indexed and tail-started lookups must agree with)."""
    views = list(seg.log.batches_from(0))
    start = next((p for p, v in views if v.last_offset >= offset), None)
    if start is None:
        return None
    end = start
    for p, v in views:
        if p >= start and p + v.size <= min(seg.size, start + limit):
            end = p + v.size
    if end == start:  # KIP-74: one whole batch however small the limit
        end = start + next(v.size for p, v in views if p == start)
    return start, end


def test_lookups_from_the_last_appended_batch_agree_with_a_walk_from_the_start(tmp_path):
    # Small batches, one and several per append, an index entry every few of them: a fetch at
    # the log end starts its header scan at the last appended batch; after a truncation or a
    # reopen that shortcut is unknown and the index is used again.
    lg = open_log(tmp_path, index_interval_bytes=700)
    for i in range(60):
        lg.append_as_leader(batch(1 + i % 3, 50) * (1 + i % 2))

    def check() -> None:
        seg = lg.active_segment
        for off in range(lg.log_end_offset):
            for limit in (1, 300, 10**6):
                info = lg.read(off, limit)
                want = _walked(seg, off, limit)
                assert want is not None and info.region is not None
                assert (info.region.position, info.region.position + info.region.size) == want, (off, limit)
        assert lg.read(lg.log_end_offset, 10**6).region is None

    check()
    seg = lg.active_segment
    assert seg.offset_index.entries > 5
    cut = lg.log_end_offset - 7
    seg.truncate_to(cut)  # mid-batch or at a batch start: the batch holding it goes
    assert seg.whole_batches_end(0, 10**9) == seg.size
    assert [seg.translate_offset(o) and seg.translate_offset(o)[0] for o in range(cut + 8)] == [
        (w[0] if (w := _walked(seg, o, 1)) else None) for o in range(cut + 8)]
    lg.close()
    lg = open_log(tmp_path, index_interval_bytes=700)
    check()
    lg.append_as_leader(batch(2, 50))
    check()


def test_a_read_of_the_last_appended_batch_reads_one_header(tmp_path, monkeypatch):
    # Issue 33: a consumer at the log end, woken by an append, reads the batch just appended. The
    # scan from the tail finds its header (one pread); that it is the last batch readable is known
    # from its size, so no second walk of headers looks for where the region ends.
    lg = open_log(tmp_path)
    for i in range(4):
        lg.append_as_leader(batch(1 + i % 2, 50) * (1 + i % 2))
    seg = lg.active_segment
    last_pos, last = list(seg.log.batches_from(0))[-1]
    preads: list[tuple[int, int]] = []
    real = os.pread
    monkeypatch.setattr(os, "pread", lambda fd, n, at: preads.append((n, at)) or real(fd, n, at))
    info = lg.read(last.base_offset, 10**6)
    assert [at for _, at in preads] == [last_pos]
    assert lg.read(lg.log_end_offset, 10**6).region is None
    monkeypatch.undo()
    assert info.region is not None and (info.region.position, info.region.size) == (last_pos, last.size)
    # a read from the first batch takes every batch, as a walk finds them
    whole = lg.read(0, 10**6).region
    assert whole is not None and (whole.position, whole.size) == (0, seg.size)
