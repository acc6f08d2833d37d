"""The log cleaner (storage/cleaner.py): what survives compaction, offsets, tombstones and their
delete horizon, aborted transactions, the dirty ratio, and crashes around the swap."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker_protocol.records.v2 import (
    ControlType,
    Record,
    build_batch,
    build_control_batch,
    decode_batches,
)
from minibroker_storage.cleaner import (
    UncleanableLog,
    clean,
    grab_filthiest,
    log_to_clean,
    pending_delete_horizon,
    swap_in,
)
from minibroker_storage.config import LogConfig
from minibroker_storage.log import AppendOrigin, Log
from minibroker_storage.log_files import SWAP_FILE_SUFFIX

from .helpers import SEED_TS, Clock


def keyed(pairs: list[tuple[bytes | None, bytes | None]], ts: int = SEED_TS, **kw) -> bytes:
    recs = [Record(timestamp_delta=i, offset_delta=i, key=k, value=v) for i, (k, v) in enumerate(pairs)]
    return build_batch(recs, base_timestamp=ts, **kw)


def compacted(tmp_path, clock, **cfg) -> Log:
    cfg.setdefault("segment_bytes", 400)
    cfg.setdefault("cleanup_policy", "compact")
    return Log.open(tmp_path / "c-0", LogConfig(**cfg), now_ms=clock)


def records(lg: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    out = []
    for seg in lg.segments.values():
        for b in decode_batches(seg.log.read(0, seg.size)):
            if not b.is_control:
                out.extend((r.offset, r.key, r.value) for r in b.records)
    return out


def run_cleaner(lg: Log, clock: Clock, checkpoint: int | None = None, horizon: int | None = None):
    ltc = log_to_clean(lg, checkpoint, clock(), horizon)
    result = clean(lg, ltc, clock(), clock)
    assert swap_in(result)
    return result


def latest(writes: list[tuple[bytes, bytes | None]]) -> dict[bytes, tuple[int, bytes | None]]:
    out = {}
    for off, (k, v) in enumerate(writes):
        out[k] = (off, v)
    return out


def test_latest_value_per_key_keeps_its_offset(tmp_path):
    clock = Clock()
    lg = compacted(tmp_path, clock)
    writes = [(b"k%d" % (i % 5), b"v%d" % i) for i in range(60)]
    for k, v in writes:
        lg.append_as_leader(keyed([(k, v)]))
    active_base = lg.active_segment.base_offset
    before = records(lg)
    result = run_cleaner(lg, clock)
    assert result.end_offset == active_base
    after = records(lg)
    want = latest(writes[:active_base])
    cleaned = [r for r in after if r[0] < active_base]
    assert cleaned == sorted((off, k, v) for k, (off, v) in want.items())
    assert [r for r in after if r[0] >= active_base] == [r for r in before if r[0] >= active_base]
    assert lg.log_end_offset == 60 and lg.read(0, 10**6).first_offset == cleaned[0][0]
    names = sorted(p.name for p in lg.dir.iterdir())
    assert not any(n.endswith((".cleaned", ".swap")) for n in names)
    assert any(n.endswith(".log.deleted") for n in names)


def test_tombstones_kept_until_the_delete_horizon(tmp_path):
    clock = Clock()
    lg = compacted(tmp_path, clock, delete_retention_ms=1000)
    for i in range(20):
        lg.append_as_leader(keyed([(b"a", b"x%d" % i), (b"b", b"y%d" % i)]))
    lg.append_as_leader(keyed([(b"a", None)]))
    for _ in range(8):
        lg.append_as_leader(keyed([(b"c", b"z" * 40)]))
    lg.roll()
    result = run_cleaner(lg, clock)
    got = {k: v for _, k, v in records(lg)}
    assert got == {b"a": None, b"b": b"y19", b"c": b"z" * 40}
    assert result.earliest_horizon == clock() + 1000
    assert pending_delete_horizon(lg) == result.earliest_horizon  # found again after a restart
    # before the horizon a new cleaning keeps it, after it the tombstone goes
    clock.advance(500)
    run_cleaner(lg, clock, checkpoint=result.end_offset)
    assert (b"a", None) in [(k, v) for _, k, v in records(lg)]
    clock.advance(600)
    ltc = log_to_clean(lg, result.end_offset, clock(), result.earliest_horizon)
    assert ltc.needs_compaction_now and grab_filthiest([ltc]) is ltc
    run_cleaner(lg, clock, checkpoint=result.end_offset, horizon=result.earliest_horizon)
    assert {k for _, k, _ in records(lg)} == {b"b", b"c"}


def test_aborted_transactions_removed_committed_kept(tmp_path):
    clock = Clock()
    lg = compacted(tmp_path, clock, segment_bytes=100_000)
    txn = dict(producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
    lg.append_as_leader(keyed([(b"k1", b"committed")], **txn))
    lg.append_as_leader(build_control_batch(ControlType.COMMIT, producer_id=7, producer_epoch=0,
                                            coordinator_epoch=0, timestamp=SEED_TS), origin=AppendOrigin.COORDINATOR)
    lg.append_as_leader(keyed([(b"k2", b"aborted")], **{**txn, "base_sequence": 1}))
    lg.append_as_leader(build_control_batch(ControlType.ABORT, producer_id=7, producer_epoch=0,
                                            coordinator_epoch=0, timestamp=SEED_TS), origin=AppendOrigin.COORDINATOR)
    lg.append_as_leader(keyed([(b"k3", b"plain")]))
    lg.roll()
    run_cleaner(lg, clock)
    assert [(k, v) for _, k, v in records(lg)] == [(b"k1", b"committed"), (b"k3", b"plain")]
    controls = [b for seg in lg.segments.values() for b in decode_batches(seg.log.read(0, seg.size))
                if b.is_control]
    assert len(controls) == 2 and all(b.has_delete_horizon for b in controls)


def test_dirty_ratio_decides(tmp_path):
    clock = Clock()
    lg = compacted(tmp_path, clock, min_cleanable_dirty_ratio=0.5)
    for i in range(40):
        lg.append_as_leader(keyed([(b"k%d" % (i % 3), b"v" * 30)]))
    ltc = log_to_clean(lg, None, clock())
    assert ltc.cleanable_ratio == 1.0 and grab_filthiest([ltc]) is ltc
    result = run_cleaner(lg, clock)
    ltc = log_to_clean(lg, result.end_offset, clock())
    assert ltc.dirty_bytes == 0 and grab_filthiest([ltc]) is None


def test_min_compaction_lag_keeps_young_segments_dirty(tmp_path):
    clock = Clock(SEED_TS + 100)
    lg = compacted(tmp_path, clock, min_compaction_lag_ms=10_000)
    for i in range(30):
        lg.append_as_leader(keyed([(b"k", b"v" * 30)], ts=SEED_TS + i))
    ltc = log_to_clean(lg, None, clock())
    assert ltc.first_uncleanable_offset == 0 and ltc.dirty_bytes == 0
    clock.advance(20_000)
    assert log_to_clean(lg, None, clock()).first_uncleanable_offset == lg.active_segment.base_offset


def test_cleaned_log_reopens_identically(tmp_path):
    clock = Clock()
    lg = compacted(tmp_path, clock)
    for i in range(50):
        lg.append_as_leader(keyed([(b"k%d" % (i % 4), b"v%d" % i)]))
    run_cleaner(lg, clock)
    want = records(lg)
    lg.flush()
    lg.close()
    again = Log.open(tmp_path / "c-0", lg.config, now_ms=clock, clean_shutdown=False)
    assert records(again) == want and again.log_end_offset == 50


def _crash_after_swap_files(tmp_path, clock, rename_old: int):
    """Clean up to the .swap files, then 'crash': some old segments already renamed .deleted."""
    lg = compacted(tmp_path, clock)
    writes = [(b"k%d" % (i % 4), b"v%d" % i) for i in range(50)]
    for k, v in writes:
        lg.append_as_leader(keyed([(k, v)]))
    before = records(lg)
    ltc = log_to_clean(lg, None, clock())
    result = clean(lg, ltc, clock(), clock)
    old = [s for g in result.old_groups for s in g]
    for seg in old[:rename_old]:
        for p in seg.files():
            if p.exists():  # a .txnindex exists only once the segment holds an abort marker
                    os.replace(p, p.with_name(p.name + ".deleted"))
    lg.flush()
    for seg in lg.segments.values() + result.new_segments:
        seg.close_handlers()
    return before, result


def _latest_per_key(recs):
    out = {}
    for _, k, v in recs:
        out[k] = v
    return out


def test_crash_with_swap_files_recovers_the_new_set(tmp_path):
    clock = Clock()
    for rename_old in (0, 1):
        d = tmp_path / str(rename_old)
        d.mkdir()
        before, result = _crash_after_swap_files(d, clock, rename_old)
        lg = Log.open(d / "c-0", LogConfig(segment_bytes=400, cleanup_policy="compact"), now_ms=clock)
        after = records(lg)
        assert _latest_per_key(after) == _latest_per_key(before)
        assert len(after) < len(before)  # the cleaned set, not the old one
        assert lg.log_end_offset == 50
        assert not any(p.name.endswith(SWAP_FILE_SUFFIX) for p in lg.dir.iterdir())


def test_crash_with_cleaned_files_keeps_the_old_set(tmp_path):
    clock = Clock()
    lg = compacted(tmp_path, clock)
    for i in range(50):
        lg.append_as_leader(keyed([(b"k%d" % (i % 4), b"v%d" % i)]))
    before = records(lg)
    result = clean(lg, log_to_clean(lg, None, clock()), clock(), clock)
    for seg in result.new_segments:  # back to the state before the .cleaned -> .swap rename
        seg.change_file_suffixes(SWAP_FILE_SUFFIX, ".cleaned")
        seg.close_handlers()
    lg.flush()
    for seg in lg.segments.values():
        seg.close_handlers()
    again = Log.open(tmp_path / "c-0", LogConfig(segment_bytes=400, cleanup_policy="compact"), now_ms=clock)
    assert records(again) == before
    assert not any(p.name.endswith(".cleaned") for p in again.dir.iterdir())


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.booleans()), min_size=1, max_size=80), st.integers(0, 2**32))
def test_property_consumer_view_is_preserved(tmp_path_factory, ops, seed):
    """Reading the cleaned log from 0 ends in the same latest value for every key as reading the
    original, offsets only ever removed, never changed or reordered."""
    rnd = random.Random(seed)
    clock = Clock()
    lg = compacted(tmp_path_factory.mktemp("p"), clock, segment_bytes=rnd.choice([200, 400, 1000]),
                   delete_retention_ms=10**9)
    for k, delete in ops:
        lg.append_as_leader(keyed([(b"k%d" % k, None if delete else b"v" * rnd.randint(1, 30))]))
    lg.roll()
    before = records(lg)
    run_cleaner(lg, clock)
    after = records(lg)
    assert set(after) <= set(before) and after == sorted(after)
    assert _latest_per_key(after) == _latest_per_key(before)
    assert len({k for _, k, _ in after}) == len(after)  # one record per key below the active segment


def test_partly_cleaned_batches_survive_recovery(tmp_path):
    """A batch that lost records from its middle has lastOffsetDelta > count - 1; recovery after
    an unclean shutdown must accept it (Kafka checks that relation only on client appends)."""
    clock = Clock()
    lg = compacted(tmp_path, clock, segment_bytes=100_000)
    lg.append_as_leader(keyed([(b"a", b"1"), (b"b", b"1"), (b"c", b"1"), (b"d", b"1")]))
    lg.append_as_leader(keyed([(b"b", b"2"), (b"c", b"2")]))
    lg.roll()
    run_cleaner(lg, clock)
    first = next(iter(decode_batches(lg.segments.first.log.read(0, lg.segments.first.size))))
    assert [r.offset for r in first.records] == [0, 3] and first.last_offset_delta == 3
    want = records(lg)
    lg.flush()
    for seg in lg.segments.values():
        seg.close_handlers()
    again = Log.open(tmp_path / "c-0", lg.config, now_ms=clock, recovery_point=0, clean_shutdown=False)
    assert records(again) == want and again.log_end_offset == 6


def test_commit_marker_kept_while_its_records_survive(tmp_path):
    """After the delete horizon an abort marker (its records are gone) is removed, a commit marker
    whose records are still in the log stays: without it, reloading producer state would see a
    transaction that never ended."""
    clock = Clock()
    lg = compacted(tmp_path, clock, segment_bytes=100_000, delete_retention_ms=100)

    def marker(kind):
        return build_control_batch(kind, producer_id=7, producer_epoch=0, coordinator_epoch=0, timestamp=SEED_TS)

    txn = dict(producer_id=7, producer_epoch=0, is_transactional=True)
    lg.append_as_leader(keyed([(b"k1", b"committed")], base_sequence=0, **txn))
    lg.append_as_leader(marker(ControlType.COMMIT), origin=AppendOrigin.COORDINATOR)
    lg.append_as_leader(keyed([(b"k2", b"aborted")], base_sequence=1, **txn))
    lg.append_as_leader(marker(ControlType.ABORT), origin=AppendOrigin.COORDINATOR)
    lg.roll()
    first = run_cleaner(lg, clock)
    assert first.earliest_horizon == clock() + 100
    clock.advance(200)
    second = run_cleaner(lg, clock, checkpoint=first.end_offset, horizon=first.earliest_horizon)
    controls = [(b.base_offset, b.is_control) for seg in lg.segments.values()
                for b in decode_batches(seg.log.read(0, seg.size)) if b.is_control]
    assert controls == [(1, True)]  # the commit marker; the abort marker (offset 3) is gone
    assert second.stats["markers_removed"] == 1 and second.earliest_horizon is None
    # nothing left to expire: the log is not picked again
    assert grab_filthiest([log_to_clean(lg, second.end_offset, clock(), second.earliest_horizon)]) is None


def test_message_set_v1_log_is_uncleanable(tmp_path):
    from minibroker_protocol.records.legacy import RecordData, build_message_set

    clock = Clock()
    cfg = LogConfig(record_version=1, cleanup_policy="compact", segment_bytes=200)
    lg = Log.open(tmp_path / "old-0", cfg, now_ms=clock)
    for i in range(10):
        lg.append_as_leader(build_message_set([RecordData(0, SEED_TS, b"k", b"v%d" % i)], magic=1))
    assert lg.num_segments > 1
    with pytest.raises(UncleanableLog):
        clean(lg, log_to_clean(lg, None, clock()), clock(), clock)
    assert not any(p.name.endswith((".cleaned", ".swap")) for p in lg.dir.iterdir())


def test_cleaned_segment_keeps_the_old_modification_time(tmp_path):
    clock = Clock()
    lg = compacted(tmp_path, clock)
    for i in range(30):
        lg.append_as_leader(keyed([(b"k%d" % (i % 3), b"v" * 30)]))
    old = [s for s in lg.segments.values()][:-1]
    past = 1_000_000_000
    for s in old:
        os.utime(s.log.path, ns=(past * 10**9, past * 10**9))
    result = run_cleaner(lg, clock)
    for new in result.new_segments:
        assert new.log.last_modified_ms() == past * 1000
