"""The follower's side of a log (Kafka: UnifiedLog.appendAsFollower, truncateTo,
truncateFullyAndStartAt) and the high watermark apart from the log end offset.

Golden logs: seed 003's segment (17 batches of 15 records, 15,556 bytes each, the index the
seed's DumpLogSegments printed) written by a leader is appended by a follower from the leader's
own bytes; the follower's `.log` and `.index` must be the leader's byte for byte, and its
`leader-epoch-checkpoint` the text Kafka writes."""

from __future__ import annotations

import pytest

from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records.batch import iter_batches, set_base_offset, set_partition_leader_epoch
from minibroker_protocol.records.v2 import ControlType, build_control_batch
from minibroker_storage.config import LogConfig
from minibroker_storage.log import Log

from .helpers import SEED_INDEX, SEED_TIMES, SEED_TS, Clock, batch, seed_batch


def open_log(path, **cfg) -> Log:
    return Log.open(path, LogConfig(**cfg), now_ms=Clock(SEED_TS + 60_000))


def disk_bytes(lg: Log) -> bytes:
    return b"".join(s.log.read(0, s.size) for s in lg.segments)


def leader_batches(lg: Log) -> bytes:
    """What a replica fetch of the whole log returns: the leader's segment bytes."""
    return disk_bytes(lg)


def stamped(n: int, base_offset: int, epoch: int, **kw) -> bytes:
    """A batch as a leader stored it: offsets and partition leader epoch assigned."""
    b = bytearray(batch(n, **kw))
    set_base_offset(b, 0, base_offset)
    set_partition_leader_epoch(b, 0, epoch)
    return bytes(b)


def test_follower_copy_of_seed_003_is_byte_identical(tmp_path):
    leader = open_log(tmp_path / "leader" / "hncscwc-0")
    for i, (first, last) in enumerate(SEED_TIMES):
        leader.append_as_leader(seed_batch(first, last), leader_epoch=0 if i < 6 else 3)
    follower = open_log(tmp_path / "follower" / "hncscwc-0")
    follower.high_watermark_follows_leo = False
    data = leader_batches(leader)
    # two fetches, the first cut in the middle of a batch (a partial batch waits for the next)
    cut = 5 * 15556 + 100
    info = follower.append_as_follower(data[:cut])
    assert info is not None and (info.first_offset, info.last_offset, info.valid_bytes) == (0, 74, 5 * 15556)
    assert follower.append_as_follower(data[info.valid_bytes:]).last_offset == 254  # type: ignore[union-attr]
    assert disk_bytes(follower) == data
    seg = follower.segments.active
    assert [(seg.offset_index.entry(i).offset, seg.offset_index.entry(i).position)
            for i in range(seg.offset_index.entries)] == SEED_INDEX
    assert (follower.log_end_offset, follower.high_watermark) == (255, 0)
    ckpt = follower.dir / "leader-epoch-checkpoint"
    assert ckpt.read_text() == "0\n2\n0 0\n3 90\n"
    assert ckpt.read_bytes() == (leader.dir / "leader-epoch-checkpoint").read_bytes()
    assert follower.end_offset_for_epoch(0) == (0, 90)
    assert follower.end_offset_for_epoch(3) == (3, 255)


def test_high_watermark_is_set_apart_from_the_log_end(tmp_path):
    lg = open_log(tmp_path / "t-0")
    lg.append_as_leader(batch(3))
    assert lg.high_watermark == 3  # no partition: HW follows LEO, as before
    lg.high_watermark_follows_leo = False
    lg.append_as_leader(batch(2))
    assert (lg.log_end_offset, lg.high_watermark, lg.last_stable_offset) == (5, 3, 3)
    assert lg.read(3, 10_000).region is None  # consumers read up to the HW
    assert lg.read(3, 10_000, max_offset=lg.log_end_offset).region is not None  # followers to the LEO
    assert lg.maybe_increment_high_watermark(4) is True
    assert lg.maybe_increment_high_watermark(2) is False and lg.high_watermark == 4
    with pytest.raises(ValueError):
        lg.maybe_increment_high_watermark(6)
    assert lg.update_high_watermark(100) == 5  # clamped to the LEO
    assert lg.update_high_watermark(-1) == 0


def test_append_as_follower_keeps_offsets_and_epochs_and_checks_headers(tmp_path):
    lg = open_log(tmp_path / "t-0")
    b = stamped(3, 0, 5) + stamped(2, 3, 5) + stamped(4, 10, 6)  # a gap: a compacted leader's log
    info = lg.append_as_follower(b)
    assert info is not None and (info.first_offset, info.last_offset, info.num_records) == (0, 13, 9)
    assert [(v.base_offset, v.partition_leader_epoch) for v in iter_batches(disk_bytes(lg))] == [
        (0, 5), (3, 5), (10, 6)]
    assert lg.leader_epoch_cache.entries() == [(5, 0), (6, 10)]
    assert lg.log_end_offset == 14
    with pytest.raises(KafkaError) as e:  # below the LEO
        lg.append_as_follower(stamped(1, 13, 6))
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE
    with pytest.raises(KafkaError):  # not increasing
        lg.append_as_follower(stamped(2, 20, 6) + stamped(1, 21, 6))
    bad = bytearray(stamped(1, 14, 6))
    bad[-1] ^= 0xFF
    with pytest.raises(KafkaError) as e:
        lg.append_as_follower(bytes(bad))
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE
    assert lg.log_end_offset == 14 and len(disk_bytes(lg)) == len(b)  # nothing written by a refused append
    assert lg.append_as_follower(b"") is None


def test_follower_producer_state_and_transactions(tmp_path):
    lg = open_log(tmp_path / "t-0")
    lg.high_watermark_follows_leo = False
    data = stamped(2, 0, 1, producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
    lg.append_as_follower(data)
    assert lg.first_unstable_offset == 0
    marker = bytearray(build_control_batch(ControlType.ABORT, producer_id=7, producer_epoch=0, coordinator_epoch=0,
                                           timestamp=SEED_TS))
    set_base_offset(marker, 0, 2)
    lg.append_as_follower(bytes(marker))
    assert lg.first_unstable_offset is None
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in lg.aborted_transactions(0, 3)] == [(7, 0, 2)]
    assert lg.producer_state.producers[7].last_seq == 1  # a follower knows the sequences a new leader checks


def test_truncate_to_cuts_segments_indexes_epochs_and_producers(tmp_path):
    lg = open_log(tmp_path / "t-0", segment_bytes=1500, index_interval_bytes=1)
    lg.high_watermark_follows_leo = False
    for i in range(12):
        lg.append_as_follower(stamped(5, i * 5, 1 if i < 4 else 2, value_size=40, producer_id=3, producer_epoch=0,
                                      base_sequence=i * 5))
    lg.update_high_watermark(60)
    assert lg.num_segments > 2
    before = disk_bytes(lg)
    assert lg.truncate_to(60) is False
    assert lg.truncate_to(23) is True  # in the middle of the batch 20..24: the whole batch goes
    assert lg.log_end_offset == 20 and lg.high_watermark == 20 and lg.recovery_point <= 20
    assert disk_bytes(lg) == before[:sum(v.size for v in iter_batches(before) if v.last_offset < 20)]
    assert all(s.base_offset <= 20 for s in lg.segments)
    assert lg.leader_epoch_cache.entries() == [(1, 0)]
    assert (lg.dir / "leader-epoch-checkpoint").read_text() == "0\n1\n1 0\n"
    assert lg.producer_state.producers[3].last_seq == 19
    assert not any(p.name.endswith(".snapshot") and int(p.name.split(".")[0]) > 20 for p in lg.dir.iterdir())
    # appends continue from there, and the log reopens to the same state
    lg.append_as_follower(stamped(5, 20, 4, value_size=40))
    assert lg.leader_epoch_cache.entries() == [(1, 0), (4, 20)]
    lg.close()
    again = open_log(tmp_path / "t-0", segment_bytes=1500, index_interval_bytes=1)
    assert again.log_end_offset == 25
    assert again.leader_epoch_cache.entries() == [(1, 0), (4, 20)]
    assert again.producer_state.producers[3].last_seq == 19


def test_truncate_fully_and_start_at(tmp_path):
    lg = open_log(tmp_path / "t-0", segment_bytes=1500)
    for i in range(8):
        lg.append_as_follower(stamped(5, i * 5, 1, value_size=40, producer_id=3, producer_epoch=0, base_sequence=i * 5))
    lg.truncate_fully_and_start_at(100)
    assert (lg.log_start_offset, lg.log_end_offset, lg.high_watermark, lg.num_segments) == (100, 100, 100, 1)
    assert lg.segments.active.base_offset == 100 and lg.segments.active.size == 0
    assert lg.leader_epoch_cache.entries() == [] and lg.producer_state.producers == {}
    assert (lg.dir / "leader-epoch-checkpoint").read_text() == "0\n0\n"
    lg.append_as_follower(stamped(2, 100, 7))
    assert lg.log_end_offset == 102 and lg.leader_epoch_cache.entries() == [(7, 100)]
    # truncating to the first segment's base offset is a full truncation (Kafka: truncateTo)
    assert lg.truncate_to(100) is True
    assert (lg.log_end_offset, lg.num_segments, disk_bytes(lg)) == (100, 1, b"")
    lg.cleanup_deleted(lg._now_ms() + 10**9)
    lg.close()
    again = open_log(tmp_path / "t-0", segment_bytes=1500)
    assert (again.log_start_offset, again.log_end_offset) == (100, 100)


def test_truncate_to_zero_with_one_segment_at_zero(tmp_path):
    lg = open_log(tmp_path / "t-0")
    lg.append_as_follower(stamped(3, 0, 0))
    assert lg.truncate_to(0) is True
    assert (lg.log_end_offset, disk_bytes(lg)) == (0, b"")
    lg.append_as_follower(stamped(2, 0, 1))
    assert lg.log_end_offset == 2
