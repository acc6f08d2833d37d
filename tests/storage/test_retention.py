"""Retention (retention.ms, retention.bytes), DeleteRecords and delayed file deletion."""

from __future__ import annotations

from dataclasses import replace

import pytest

from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_storage.config import LogConfig
from minibroker_storage.log import Log

from .helpers import SEED_TS, Clock, batch


def segmented(tmp_path, clock, n=6, **cfg) -> Log:
    """A log of `n` segments (plus the active one), one batch of 2 records each, segment i's
    records stamped SEED_TS + 1000*i."""
    cfg.setdefault("segment_bytes", 1000)
    lg = Log.open(tmp_path / "t-0", LogConfig(**cfg), now_ms=clock)
    for i in range(n + 1):
        lg.append_as_leader(batch(2, 300, base_ts=SEED_TS + 1000 * i))
    assert [s.base_offset for s in lg.segments] == list(range(0, 2 * n + 2, 2))
    return lg


def names(lg: Log) -> list[str]:
    return sorted(p.name for p in lg.dir.iterdir())


def test_retention_ms_by_largest_timestamp(tmp_path):
    clock = Clock(SEED_TS + 2500)
    lg = segmented(tmp_path, clock, retention_ms=1000)
    # now - largest timestamp > 1000: segments of SEED_TS+0 and +1000 (2500-1000 = 1500 > 1000)
    assert lg.delete_old_segments() == 2
    assert lg.log_start_offset == 4 and lg.segments.first.base_offset == 4
    assert "00000000000000000000.log.deleted" in names(lg) and "00000000000000000000.log" not in names(lg)
    with pytest.raises(KafkaError) as e:
        lg.read(3, 100)
    assert e.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    clock.advance(4500)  # now SEED_TS + 7000: every segment but the active one (SEED_TS + 6000) expired
    assert lg.delete_old_segments() == 4  # everything but the active segment
    assert lg.num_segments == 1 and lg.log_start_offset == 12 == lg.active_segment.base_offset
    assert lg.log_end_offset == 14 and lg.read(12, 10**6).region is not None


def test_retention_ms_deletes_an_expired_active_segment_after_a_roll(tmp_path):
    """Kafka 4.4 (UnifiedLog.deletableSegments/deleteSegments): when every segment, the active one
    included, is past retention.ms, the log rolls an empty segment at the log end and deletes
    them all; the log start offset moves to the log end offset."""
    clock = Clock(SEED_TS + 10_000_000)
    lg = segmented(tmp_path, clock, retention_ms=1000)
    assert lg.delete_old_segments() == 7
    assert lg.num_segments == 1 and lg.log_start_offset == lg.log_end_offset == 14 == lg.active_segment.base_offset
    assert lg.active_segment.size == 0 and lg.high_watermark == 14
    assert "00000000000000000012.log.deleted" in names(lg) and "00000000000000000014.log" in names(lg)
    with pytest.raises(KafkaError) as e:
        lg.read(12, 100)
    assert e.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert lg.read(14, 100).region is None
    assert lg.delete_old_segments() == 0  # an empty active segment stays
    info = lg.append_as_leader(batch(1, base_ts=SEED_TS + 10_000_000))
    assert info.first_offset == 14 and lg.delete_old_segments() == 0  # new records are not expired
    lg.close()
    lg = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=1000, retention_ms=1000), clean_shutdown=True,
                  recovery_point=15, log_start_offset=14, now_ms=clock)
    assert (lg.log_start_offset, lg.log_end_offset) == (14, 15)
    lg.close()


def test_retention_ms_minus_one_keeps_everything(tmp_path):
    lg = segmented(tmp_path, Clock(SEED_TS + 10**9), retention_ms=-1)
    assert lg.delete_old_segments() == 0


def test_retention_bytes(tmp_path):
    lg = segmented(tmp_path, Clock(), retention_bytes=1)
    seg_size = lg.segments.first.size
    # deletes oldest segments while the log stays at or above retention.bytes
    lg.config = replace(lg.config, retention_bytes=3 * seg_size + 10)
    assert lg.delete_old_segments() == 3
    assert lg.num_segments == 4
    lg.config = replace(lg.config, retention_bytes=3 * seg_size)
    assert lg.delete_old_segments() == 1
    assert lg.num_segments == 3 and lg.size_in_bytes() == 3 * seg_size


def test_compact_policy_does_no_time_or_size_retention(tmp_path):
    lg = segmented(tmp_path, Clock(SEED_TS + 10**9), retention_ms=1, cleanup_policy="compact")
    assert lg.delete_old_segments() == 0


def test_retention_never_passes_the_high_watermark(tmp_path):
    lg = segmented(tmp_path, Clock(SEED_TS + 10**9), retention_ms=1)
    lg.high_watermark = 5  # as if replication lagged: only segments wholly below 5 may go
    assert lg.delete_old_segments() == 2
    assert lg.log_start_offset == 4


def test_delete_records_moves_the_log_start_offset(tmp_path):
    clock = Clock()
    lg = segmented(tmp_path, clock)
    assert lg.delete_records_before(5) == 5  # mid-segment: the segment [4, 6) stays
    assert [s.base_offset for s in lg.segments][:2] == [4, 6]
    assert lg.read(5, 10**6).first_offset == 4  # the whole batch, the consumer skips offset 4
    with pytest.raises(KafkaError):
        lg.read(4, 100)
    assert lg.delete_records_before(3) == 5  # never backwards
    with pytest.raises(KafkaError) as e:
        lg.delete_records_before(15)
    assert e.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert lg.delete_records_before(-1) == 14  # -1: up to the high watermark
    assert lg.num_segments == 1 and lg.log_end_offset == 14
    assert lg.read(14, 100).region is None


def test_deleted_files_go_after_the_delay(tmp_path):
    clock = Clock()
    lg = segmented(tmp_path, clock, file_delete_delay_ms=60_000)
    lg.delete_records_before(4)
    assert sorted(n for n in names(lg) if n.endswith(".deleted")) == [
        "00000000000000000000.index.deleted", "00000000000000000000.log.deleted",
        "00000000000000000000.timeindex.deleted", "00000000000000000002.index.deleted",
        "00000000000000000002.log.deleted", "00000000000000000002.timeindex.deleted"]
    assert lg.cleanup_deleted(clock.ms + 59_999) == 0
    assert lg.cleanup_deleted(clock.ms + 60_000) == 2
    assert not any(n.endswith(".deleted") for n in names(lg))


def test_start_offset_survives_reopen_and_epochs_follow(tmp_path):
    clock = Clock()
    lg = segmented(tmp_path, clock)
    lg.delete_records_before(7)
    assert lg.leader_epoch_cache.entries() == [(0, 7)]
    lg.flush()
    lg.close()
    lg = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=1000), log_start_offset=7, recovery_point=14,
                  clean_shutdown=True, now_ms=clock)
    assert (lg.log_start_offset, lg.log_end_offset, lg.segments.first.base_offset) == (7, 14, 6)
    assert not any(n.endswith(".deleted") for n in names(lg))  # stray .deleted files go on load
