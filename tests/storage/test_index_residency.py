"""Where an index's entries live (storage/index.py): in memory for the active segment and written
through to the file; inactive segments' files mapped only while a lookup needs them; at most
`OPEN_FILES.limit` descriptors and maps at once across all logs. A partition costs one
descriptor, its `.log`.

The property test reads a many-segment log in random order with room for two maps only, so maps
are evicted and reopened all the time, and every read must still return exactly the batches
written; the crash test loses the index entries written after the last flush (as a power cut
loses unsynced pages), and the reopened log must rebuild the same indexes."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibroker_protocol.records.batch import iter_batches
from minibroker_storage import index as index_module
from minibroker_storage.config import LogConfig
from minibroker_storage.log import Log

from .helpers import SEED_TS, Clock, batch


def open_fds(under: Path | None = None) -> int:
    """Descriptors of this process, or those of files under a directory."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        n += under is None or target.startswith(str(under))
    return n


def file_entries(path: Path, fmt: str) -> list[tuple[int, int]]:
    raw = path.read_bytes()
    size = struct.calcsize(fmt)
    return [struct.unpack_from(fmt, raw, i) for i in range(0, len(raw), size)]


@pytest.fixture
def two_files():
    files = index_module.OPEN_FILES
    old = files.limit
    files.limit = 2
    try:
        yield files
    finally:
        files.limit = old


def test_a_partition_holds_one_descriptor_open_and_after_reopen(tmp_path, two_files):
    cfg = LogConfig(index_interval_bytes=0)
    logs = [Log.open(tmp_path / f"t{i}-0", cfg, now_ms=Clock()) for i in range(20)]
    for lg in logs:
        for _ in range(3):
            lg.append_as_leader(batch(2, 100))
    # the `.log` of each, and the write descriptors of the two indexes appended to last
    assert open_fds(tmp_path) == 20 + 2 and len(two_files) == 2
    assert all(lg.active_segment.offset_index.entries == 2 for lg in logs)
    leo = [lg.log_end_offset for lg in logs]
    for lg in logs:
        lg.close()
    assert open_fds(tmp_path) == 0 and len(two_files) == 0
    logs = [Log.open(tmp_path / f"t{i}-0", cfg, clean_shutdown=True, recovery_point=leo[i], now_ms=Clock())
            for i in range(20)]
    assert open_fds(tmp_path) == 20
    assert all(lg.active_segment.offset_index.in_memory for lg in logs)
    for lg in logs:
        lg.close()


def test_active_index_is_written_through_and_trimmed_at_roll(tmp_path, two_files):
    lg = Log.open(tmp_path / "t-0", LogConfig(index_interval_bytes=0, segment_index_bytes=800), now_ms=Clock())
    for i in range(3):
        lg.append_as_leader(batch(1, 50, base_ts=SEED_TS + i))
    seg = lg.active_segment
    idx, tidx = seg.offset_index.path, seg.time_index.path
    entries = [(o - seg.base_offset, p) for o, p in seg.offset_index.all_entries()]
    # preallocated as Kafka's, the entries in it at once (a tool reading the live file sees them)
    assert len(entries) == 2 and idx.stat().st_size == 800
    assert file_entries(idx, ">ii")[:2] == entries and not any(idx.read_bytes()[16:])
    assert file_entries(tidx, ">qi")[:2] == [(SEED_TS + 1, 1), (SEED_TS + 2, 2)]
    for other in range(3):  # other logs' indexes take the two descriptors: the next entry reopens the file
        o = Log.open(tmp_path / f"o{other}-0", LogConfig(index_interval_bytes=0), now_ms=Clock())
        o.append_as_leader(batch(1))
        o.append_as_leader(batch(1))
        o.close()
    assert not seg.offset_index.holds_descriptor
    lg.append_as_leader(batch(1, 50, base_ts=SEED_TS + 3))
    assert file_entries(idx, ">ii")[2] == (3, seg.offset_index.entry(2).position)
    entries = [(o - seg.base_offset, p) for o, p in seg.offset_index.all_entries()]
    lg.roll()
    assert not seg.offset_index.in_memory and not seg.offset_index.holds_descriptor
    assert file_entries(idx, ">ii") == entries  # trimmed to its entries
    assert file_entries(tidx, ">qi")[-1] == (SEED_TS + 3, 3)
    lg.close()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(20, 250), min_size=30, max_size=60), order=st.randoms(use_true_random=False),
       reopen=st.booleans())
def test_reads_stay_exact_while_maps_are_evicted_and_reopened(tmp_path_factory, two_files, sizes, order, reopen):
    d = tmp_path_factory.mktemp("lru") / "t-0"
    cfg = LogConfig(segment_bytes=800, index_interval_bytes=100)
    lg = Log.open(d, cfg, now_ms=Clock())
    written: dict[int, bytes] = {}
    for i, size in enumerate(sizes):
        info = lg.append_as_leader(batch(2, size, base_ts=SEED_TS + i))
        written[info.first_offset] = b""
    if reopen:
        leo = lg.log_end_offset
        lg.close()
        lg = Log.open(d, cfg, clean_shutdown=True, recovery_point=leo, now_ms=Clock())
    inactive = lg.segments.values()[:-1]
    assert len(inactive) >= 3 and not any(s.offset_index.mapped or s.offset_index.in_memory for s in inactive)
    for seg in lg.segments:
        for pos, view in seg.log.batches_from(0):
            written[view.base_offset] = seg.log.read(pos, view.size)
    fds = open_fds(d)
    offsets = [o for o in written for o in (o, o + 1)]
    order.shuffle(offsets)
    for off in offsets:
        info = lg.read(off, 1)  # min_one_batch: exactly the batch holding `off`
        assert info.region is not None
        got = info.region.read_all()
        base = off - off % 2
        assert got == written[base] and next(iter_batches(got)).base_offset == base
        ts = lg.offset_for_timestamp(SEED_TS + base // 2)
        assert ts is not None and ts.offset == base
        assert len(two_files) <= 2 and open_fds(d) <= fds + 2
    assert sum(s.offset_index.mapped + s.time_index.mapped for s in inactive) <= 2
    lg.close()
    assert len(two_files) == 0


def test_a_map_in_use_by_another_lookup_is_not_evicted(tmp_path, two_files):
    lg = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=600, index_interval_bytes=10), now_ms=Clock())
    for i in range(12):
        lg.append_as_leader(batch(1, 200, base_ts=SEED_TS + i))
    a, b, c = lg.segments.values()[:3]
    a.offset_index.lookup(a.base_offset)
    b.offset_index.lookup(b.base_offset)
    with a.offset_index._lock:  # a lookup of `a` in progress on another thread
        c.offset_index.lookup(c.base_offset)
        assert a.offset_index.mapped and not b.offset_index.mapped and c.offset_index.mapped
    lg.close()


def test_crash_between_append_and_index_flush_rebuilds_the_index(tmp_path):
    """kill -9 keeps the entries written through (page cache); a power cut loses those written
    after the last flush. The recovery point is below them, so the loader rebuilds that
    segment's indexes either way, and the same ones."""
    d = tmp_path / "t-0"
    cfg = LogConfig(index_interval_bytes=0)
    lg = Log.open(d, cfg, now_ms=Clock())
    for i in range(4):
        lg.append_as_leader(batch(1, 50, base_ts=SEED_TS + i))
    lg.flush()
    seg = lg.active_segment
    idx, tidx = seg.offset_index.path, seg.time_index.path
    synced = (idx.read_bytes(), tidx.read_bytes())
    flushed = seg.offset_index.all_entries()
    for i in range(4, 9):
        lg.append_as_leader(batch(1, 50, base_ts=SEED_TS + i))
    expected = (seg.offset_index.all_entries(), seg.time_index.all_entries())
    rp, leo = lg.recovery_point, lg.log_end_offset
    lg.close_handlers()  # kill -9
    assert file_entries(idx, ">ii")[:len(expected[0])] == [(o, p) for o, p in expected[0]]
    idx.write_bytes(synced[0])  # ... and the power cut: only what the flush synced
    tidx.write_bytes(synced[1])
    assert [(o, p) for o, p in file_entries(idx, ">ii") if (o, p) != (0, 0)] == [(o, p) for o, p in flushed]
    assert len(expected[0]) > len(flushed)
    lg = Log.open(d, cfg, recovery_point=rp, now_ms=Clock())
    seg = lg.active_segment
    assert lg.log_end_offset == leo
    assert (seg.offset_index.all_entries(), seg.time_index.all_entries()) == expected
    assert seg.offset_index.in_memory and seg.time_index.last_entry == (SEED_TS + 8, 8)
    lg.append_as_leader(batch(1, 50, base_ts=SEED_TS + 9))  # indexed as if there had been no crash
    entries = seg.offset_index.all_entries()
    assert entries[:-1] == expected[0] and entries[-1].offset == 9
    lg.close()
    assert file_entries(idx, ">ii") == [(o, p) for o, p in entries]
