"""OffsetIndex and TimeIndex: file layout, preallocation and trimming, search, truncation, checks."""

from __future__ import annotations

import bisect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker_storage.index import CorruptIndex
from minibroker_storage.offset_index import InvalidOffset, OffsetIndex
from minibroker_storage.time_index import TimeIndex


def test_offset_index_is_preallocated_then_trimmed(tmp_path):
    p = tmp_path / "00000000000000000100.index"
    idx = OffsetIndex(p, 100, 1000)
    assert p.stat().st_size == 1000 and idx.max_entries == 125 and idx.entries == 0  # rounded to entries
    idx.append(105, 0)
    idx.append(110, 4200)
    assert idx.lookup(99) == (100, 0)  # below the first entry: the segment start
    assert idx.lookup(107) == (105, 0)
    assert idx.lookup(110) == (110, 4200)
    assert idx.lookup(10_000) == (110, 4200)
    idx.close()
    assert p.read_bytes() == bytes.fromhex("0000000500000000" "0000000a00001068")  # relative offsets
    reopened = OffsetIndex(p, 100, 1000)
    assert reopened.entries == 2 and reopened.last_offset == 110
    reopened.resize(1000)  # an active segment's index gets its room back
    assert reopened.max_entries == 125 and reopened.entries == 2
    reopened.append(120, 9000)
    assert reopened.lookup(121) == (120, 9000)
    reopened.close()
    assert p.stat().st_size == 24


def test_offset_index_refuses_non_increasing_offsets_and_overflow(tmp_path):
    idx = OffsetIndex(tmp_path / "00000000000000000000.index", 0, 64)
    idx.append(5, 0)
    with pytest.raises(InvalidOffset):
        idx.append(5, 100)
    assert not idx.can_append_offset(2**31)
    for i in range(7):
        idx.append(10 + i, 100 * i)
    assert idx.is_full()
    with pytest.raises(IndexError):
        idx.append(100, 1)


def test_empty_trimmed_index_reopens_without_a_map(tmp_path):
    p = tmp_path / "00000000000000000000.index"
    OffsetIndex(p, 0, 80).close()
    assert p.stat().st_size == 0
    idx = OffsetIndex(p, 0, 80)
    assert idx.entries == 0 and idx.max_entries == 0 and idx.is_full()
    assert idx.lookup(5) == (0, 0)
    idx.resize(80)
    idx.append(3, 7)
    assert idx.lookup(5) == (3, 7)


def test_offset_index_truncate_to(tmp_path):
    idx = OffsetIndex(tmp_path / "00000000000000000000.index", 0, 800)
    for off, pos in [(10, 100), (20, 200), (30, 300)]:
        idx.append(off, pos)
    idx.truncate_to(30)  # an exact entry goes with everything after it
    assert idx.all_entries() == [(10, 100), (20, 200)]
    idx.truncate_to(15)  # between entries: keep those below
    assert idx.all_entries() == [(10, 100)] and idx.last_offset == 10
    idx.truncate_to(0)
    assert idx.entries == 0


def test_time_index_appends_only_growing_timestamps_and_keeps_a_slot(tmp_path):
    p = tmp_path / "00000000000000000050.timeindex"
    ti = TimeIndex(p, 50, 12 * 4)
    assert ti.last_entry == (-1, 50)
    ti.maybe_append(1000, 55)
    ti.maybe_append(1000, 60)  # same timestamp: nothing
    ti.maybe_append(1500, 60)
    assert ti.all_entries() == [(1000, 55), (1500, 60)]
    ti.maybe_append(1600, 70)
    assert ti.is_full()  # 4 slots, the last kept for the entry written when the segment rolls
    with pytest.raises(IndexError):
        ti.maybe_append(1700, 80)
    ti.maybe_append(1700, 80, skip_full_check=True)
    with pytest.raises(ValueError):
        ti.maybe_append(1800, 75, skip_full_check=True)  # offsets may not go back
    assert ti.lookup(999) == (-1, 50)
    assert ti.lookup(1000) == (1000, 55)
    assert ti.lookup(1599) == (1500, 60)
    ti.close()
    assert p.read_bytes()[:12] == (1000).to_bytes(8, "big") + (5).to_bytes(4, "big")
    ti = TimeIndex(p, 50, 48)
    assert ti.last_entry == (1700, 80) and ti.entries == 4
    ti.truncate_to(60)
    assert ti.all_entries() == [(1000, 55)]


def test_sanity_checks_catch_an_untrimmed_or_foreign_index(tmp_path):
    p = tmp_path / "00000000000000000000.index"
    idx = OffsetIndex(p, 0, 80)
    idx.append(3, 100)
    idx.flush()
    del idx
    idx = OffsetIndex(p, 0, 80)  # reopened untrimmed: 10 slots counted as entries, zeros at the end
    with pytest.raises(CorruptIndex):
        idx.sanity_check()
    p2 = tmp_path / "00000000000000000001.index"
    p2.write_bytes(bytes(7))
    with pytest.raises(CorruptIndex):
        OffsetIndex(p2, 1, 80).sanity_check()
    p3 = tmp_path / "00000000000000000002.index"
    p3.write_bytes((5).to_bytes(4, "big") + (900).to_bytes(4, "big"))
    with pytest.raises(CorruptIndex):
        OffsetIndex(p3, 2, 80).sanity_check(log_size=500)  # points past the end of the log
    OffsetIndex(p3, 2, 80).sanity_check(log_size=1000)


@settings(max_examples=60, deadline=None)
@given(gaps=st.lists(st.integers(1, 50), min_size=0, max_size=3000), probes=st.lists(st.integers(-5, 200_000), max_size=40))
def test_lookup_is_the_largest_entry_not_above_the_target(tmp_path_factory, gaps, probes):
    """The warm-section search gives the same answer as a plain search, on both keys and values."""
    d = tmp_path_factory.mktemp("idx")
    idx = OffsetIndex(d / "00000000000000000000.index", 0, 8 * 4000)
    offsets, positions = [], []
    off = pos = 0
    for g in gaps:
        off += g
        pos += 3 * g
        idx.append(off, pos)
        offsets.append(off)
        positions.append(pos)
    for t in probes + offsets[::97]:
        i = bisect.bisect_right(offsets, t) - 1
        assert idx.lookup(t) == ((offsets[i], positions[i]) if i >= 0 else (0, 0))
        j = bisect.bisect_right(positions, t) - 1
        found = idx.lookup_position(t)
        assert found == ((offsets[j], positions[j]) if j >= 0 else None)
    idx.close()
