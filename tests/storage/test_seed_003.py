"""File-level checks against shared/seeds/003: what Kafka's DumpLogSegments printed for a segment
of 15-record, 15,556-byte batches, reproduced by appending the same shapes of batch."""

from __future__ import annotations

import struct

from minibroker_protocol.records.batch import BatchView, iter_batches
from minibroker_storage.config import LogConfig
from minibroker_storage.log import Log

from .helpers import SEED_INDEX, SEED_TIMES, SEED_TS, seed_batch, write_seed_segment


def test_batches_are_the_seeds_size_and_land_at_its_positions(tmp_path):
    b = seed_batch(*SEED_TIMES[0])
    assert len(b) == 15556 and BatchView(b).batch_length == 15544  # seed: "Length: 15544", "size: 15556"
    lg = write_seed_segment(tmp_path)
    lg.close()
    data = (tmp_path / "hncscwc-0" / "00000000000000000000.log").read_bytes()
    views = list(iter_batches(data))
    assert [(v.pos, v.base_offset, v.last_offset, v.records_count) for v in views[:6]] == [
        (0, 0, 14, 15), (15556, 15, 29, 15), (31112, 30, 44, 15), (46668, 45, 59, 15),
        (62224, 60, 74, 15), (77780, 75, 89, 15)]
    assert [(v.base_timestamp, v.max_timestamp) for v in views[:6]] == SEED_TIMES[:6]
    for v in views:  # only baseOffset and partitionLeaderEpoch were rewritten; the CRC still holds
        v.validate()
        assert v.partition_leader_epoch == 0 and v.magic == 2


def test_offset_index_matches_the_seeds_dump(tmp_path):
    lg = write_seed_segment(tmp_path)
    seg = lg.active_segment
    assert seg.offset_index.all_entries() == SEED_INDEX
    # preallocated to segment.index.bytes while active ...
    index_path = tmp_path / "hncscwc-0" / "00000000000000000000.index"
    assert index_path.stat().st_size == 10485760
    lg.close()
    # ... trimmed to its 16 entries on close; 4-byte relative offset + 4-byte position, big-endian
    raw = index_path.read_bytes()
    assert len(raw) == 16 * 8
    assert raw[:16] == bytes.fromhex("0000001d00003cc4" "0000002c00007988")  # 29@15556, 44@31112
    assert [struct.unpack_from(">ii", raw, i) for i in range(0, len(raw), 8)] == SEED_INDEX


def test_time_index_gets_an_entry_only_when_the_max_timestamp_grew(tmp_path):
    lg = write_seed_segment(tmp_path)
    lg.close()
    raw = (tmp_path / "hncscwc-0" / "00000000000000000000.timeindex").read_bytes()
    entries = [struct.unpack_from(">qi", raw, i) for i in range(0, len(raw), 12)]
    # at the moments of the index entries (offsets 29, 44, 59, 74, 89, ...); the batch ending at 59
    # did not raise the maximum (seed: 385 twice), so it has no time entry
    assert entries[:4] == [(SEED_TS + 8, 29), (SEED_TS + 9, 44), (SEED_TS + 10, 74), (SEED_TS + 12, 89)]
    assert entries[-1] == (SEED_TS + 23, 254)
    assert len(entries) == len(SEED_INDEX) - 1
    ts = [e[0] for e in entries]
    assert ts == sorted(set(ts))


def test_index_passes_dump_log_segments_verification(tmp_path):
    """kafka-dump-log.sh --verify-index-only: every offset entry's batch starts at its position and
    ends at its offset; every time entry names the last offset of a batch with that max timestamp."""
    lg = write_seed_segment(tmp_path)
    lg.close()
    d = tmp_path / "hncscwc-0"
    data = (d / "00000000000000000000.log").read_bytes()
    by_pos = {v.pos: v for v in iter_batches(data)}
    by_last = {v.last_offset: v for v in by_pos.values()}
    raw = (d / "00000000000000000000.index").read_bytes()
    for off, pos in (struct.unpack_from(">ii", raw, i) for i in range(0, len(raw), 8)):
        assert by_pos[pos].last_offset == off
    raw = (d / "00000000000000000000.timeindex").read_bytes()
    for ts, off in (struct.unpack_from(">qi", raw, i) for i in range(0, len(raw), 12)):
        assert by_last[off].max_timestamp == ts


def test_rebuilt_indexes_equal_the_appended_ones(tmp_path):
    lg = write_seed_segment(tmp_path)
    lg.close()
    d = tmp_path / "hncscwc-0"
    before = [(d / f"00000000000000000000{s}").read_bytes() for s in (".index", ".timeindex")]
    for s in (".index", ".timeindex"):
        (d / f"00000000000000000000{s}").unlink()
    lg = Log.open(d, LogConfig(), clean_shutdown=True, recovery_point=255)  # indexes missing: rebuilt
    assert lg.log_end_offset == 255
    lg.close()
    assert [(d / f"00000000000000000000{s}").read_bytes() for s in (".index", ".timeindex")] == before
