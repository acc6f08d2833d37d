"""Recovery (LogLoader): torn and corrupt tails, rebuilt indexes, clean shutdown scans nothing.

The property test writes a log, "crashes" (file descriptors closed, nothing trimmed or flushed
beyond a random flush point), damages the data after the recovery point at a random byte —
cutting it there, flipping a checksummed byte, or leaving junk after it — and reopens. Every
batch written wholly before the damage must come back byte-identical, nothing after it, the
indexes must be exactly what the indexing rule gives for the surviving batches, and the log end
offset must follow the last surviving batch.
"""

from __future__ import annotations

import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibroker_protocol.records.batch import iter_batches
from minibroker_storage.config import LogConfig
from minibroker_storage.log import Log
from minibroker_storage.log_manager import LogManager

from .helpers import SEED_TS, Clock, batch


@dataclass
class Stored:
    segment: int  # base offset of the segment file
    pos: int  # position in the segment file
    data: bytes
    base_offset: int
    last_offset: int
    max_timestamp: int


def segment_logs(d: Path) -> list[Path]:
    return sorted(d.glob("*.log"))


def stored_batches(d: Path) -> list[Stored]:
    out = []
    for p in segment_logs(d):
        raw = p.read_bytes()
        base = int(p.name[:20])
        for v in iter_batches(raw):
            out.append(Stored(base, v.pos, raw[v.pos:v.pos + v.size], v.base_offset, v.last_offset, v.max_timestamp))
    return out


def expected_indexes(batches: list[Stored], interval: int) -> tuple[list, list]:
    """The indexing rule, restated independently: an offset entry for a batch starting more than
    `interval` bytes after the last indexed batch (the first batch never), a time entry at the
    same moments when the segment's max timestamp grew, and the final maximum at the end."""
    offsets, times = [], []
    last_entry, max_ts, max_off = 0, -1, -1
    for b in batches:
        if b.max_timestamp > max_ts:
            max_ts, max_off = b.max_timestamp, b.last_offset
        if b.pos - last_entry > interval:
            offsets.append((b.last_offset, b.pos))
            if not times or max_ts > times[-1][0]:
                times.append((max_ts, max_off))
            last_entry = b.pos
    if max_ts >= 0 and (not times or max_ts > times[-1][0]):
        times.append((max_ts, max_off))
    return offsets, times


def read_everything(lg: Log) -> bytes:
    out = []
    off = lg.log_start_offset
    while off < lg.log_end_offset:
        info = lg.read(off, 3000)
        if info.region is None:  # only empty segments up to the LEO (a gap after a cut)
            break
        chunk = info.region.read_all()
        out.append(chunk)
        off = list(iter_batches(chunk))[-1].last_offset + 1
    return b"".join(out)


def check_log(lg: Log, survivors: list[Stored], interval: int) -> None:
    assert read_everything(lg) == b"".join(b.data for b in survivors)
    for seg in lg.segments:
        mine = [b for b in survivors if b.segment == seg.base_offset]
        offsets, times = expected_indexes(mine, interval)
        assert seg.offset_index.all_entries() == offsets, seg
        assert seg.time_index.all_entries() == times, seg
    assert stored_batches(lg.dir) == survivors


batch_specs = st.lists(
    st.tuples(st.integers(1, 4), st.integers(0, 250), st.integers(-3, 40)),  # records, value size, ts step
    min_size=1, max_size=40)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=batch_specs, seg_bytes=st.sampled_from([1200, 2500, 10**6]), interval=st.sampled_from([0, 300, 4096]),
       flush_at=st.floats(0, 1), damage_at=st.floats(0, 1), kind=st.sampled_from(["cut", "flip", "junk"]),
       junk=st.binary(min_size=1, max_size=80), later=st.sampled_from(["removed", "emptied"]))
def test_recovery_keeps_exactly_the_batches_before_the_damage(tmp_path_factory, specs, seg_bytes, interval,
                                                               flush_at, damage_at, kind, junk, later):
    d = tmp_path_factory.mktemp("rec") / "t-0"
    cfg = LogConfig(segment_bytes=seg_bytes, index_interval_bytes=interval)
    lg = Log.open(d, cfg, now_ms=Clock())
    ts = SEED_TS
    for n, size, step in specs:
        ts += step
        lg.append_as_leader(batch(n, size, base_ts=ts, ts_deltas=[i % 3 for i in range(n)]))
    lg.flush(int(flush_at * lg.log_end_offset))
    recovery_point = lg.recovery_point
    lg.close_handlers()  # the crash: nothing trimmed, nothing more flushed

    written = stored_batches(d)
    # damage only where recovery looks: from the segment holding the recovery point on
    floor = max(b.segment for b in written if b.segment <= recovery_point) if any(
        b.segment <= recovery_point for b in written) else 0
    files = [p for p in segment_logs(d) if int(p.name[:20]) >= floor]
    sizes = [p.stat().st_size for p in files]
    total = sum(sizes)
    if total == 0:
        return
    at = min(int(damage_at * total), total - 1)
    fi = 0
    while at >= sizes[fi]:
        at -= sizes[fi]
        fi += 1
    target = files[fi]
    base = int(target.name[:20])
    hit = next(b for b in written if b.segment == base and b.pos <= at < b.pos + len(b.data))
    if kind == "cut":
        os.truncate(target, at)
        for p in files[fi + 1:]:  # whatever came after the tear is lost with it
            if later == "removed":
                for s in (".log", ".index", ".timeindex"):
                    p.with_suffix(s).unlink(missing_ok=True)
            else:
                os.truncate(p, 0)
        survivors = [b for b in written if (b.segment, b.pos) < (base, hit.pos)]
    elif kind == "flip":
        rel = at - hit.pos
        if rel < 16 and not 8 <= rel < 12:  # baseOffset and leader epoch are outside the CRC: pick another byte
            at = hit.pos + 17 + rel
        raw = bytearray(target.read_bytes())
        raw[at] ^= 0x5A
        target.write_bytes(raw)
        survivors = [b for b in written if (b.segment, b.pos) < (base, hit.pos)]
    else:  # junk after the last batch: a torn append
        with open(files[-1], "ab") as f:
            f.write(junk)
        survivors = written

    lg = Log.open(d, cfg, recovery_point=recovery_point, now_ms=Clock())
    try:
        check_log(lg, survivors, interval)
        if kind == "cut" and later == "emptied" and files[fi + 1:] and at == hit.pos:
            # cut exactly between batches: nothing is invalid, so the emptied later segment files
            # stay, and as in Kafka the log end offset is the last one's base offset (a gap)
            assert lg.log_end_offset == int(files[-1].name[:20])
        else:
            assert lg.log_end_offset == (survivors[-1].last_offset + 1 if survivors else 0)
        assert lg.recovery_point <= lg.log_end_offset
        # the log goes on: a new append lands right after
        leo = lg.log_end_offset
        info = lg.append_as_leader(batch(2))
        assert info.first_offset == leo and lg.read(leo, 100).first_offset == leo
    finally:
        lg.close()


def write_segments(d: Path, n_batches: int = 12, **cfg) -> Log:
    lg = Log.open(d, LogConfig(segment_bytes=1000, index_interval_bytes=200, **cfg), now_ms=Clock())
    for i in range(n_batches):
        lg.append_as_leader(batch(2, 150, base_ts=SEED_TS + i))
    return lg


def test_torn_tail_is_cut_with_a_log_line(tmp_path, caplog):
    d = tmp_path / "t-0"
    lg = write_segments(d)
    lg.close_handlers()
    active = segment_logs(d)[-1]
    data = active.read_bytes()
    views = list(iter_batches(data))
    os.truncate(active, views[-1].pos + 30)  # half of the last batch made it to disk
    caplog.set_level(logging.INFO, "minibroker_storage")
    lg = Log.open(d, LogConfig(segment_bytes=1000, index_interval_bytes=200), now_ms=Clock())
    assert lg.log_end_offset == views[-1].base_offset
    msg = [r.getMessage() for r in caplog.records if "truncated" in r.getMessage()]
    assert msg and f"truncated 30 bytes from offset {views[-1].base_offset}" in msg[0]


def test_corruption_in_an_unflushed_segment_deletes_the_later_ones(tmp_path):
    d = tmp_path / "t-0"
    lg = write_segments(d)
    bases = [s.base_offset for s in lg.segments]
    assert len(bases) >= 4
    lg.flush(bases[1] + 1)  # the recovery point inside the second segment
    rp = lg.recovery_point
    lg.close_handlers()
    third = d / f"{bases[2]:020d}.log"
    raw = bytearray(third.read_bytes())
    raw[70] ^= 1  # inside the first batch's records
    third.write_bytes(raw)
    lg = Log.open(d, LogConfig(segment_bytes=1000), recovery_point=rp, now_ms=Clock())
    assert [s.base_offset for s in lg.segments] == bases[:3]
    assert lg.log_end_offset == bases[2] and lg.segments.active.size == 0
    assert not (d / f"{bases[3]:020d}.log").exists()


def test_clean_shutdown_scans_nothing(tmp_path):
    """After a clean shutdown a corrupt byte in the data goes unnoticed (nothing is scanned);
    without the marker the same directory is recovered and cut there."""
    data = tmp_path / "data"
    lm = LogManager(data, LogConfig(), now_ms=Clock())
    lm.startup()
    lg = lm.create_log("t", 0, __import__("uuid").uuid4(), LogConfig())
    for i in range(10):
        lg.append_as_leader(batch(2, 100, base_ts=SEED_TS + i))
    lm.shutdown()
    assert (data / ".kafka_cleanshutdown").exists()
    assert (data / "recovery-point-offset-checkpoint").read_text() == "0\n1\nt 0 20\n"
    seg = data / "t-0" / "00000000000000000000.log"
    raw = bytearray(seg.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    seg.write_bytes(raw)

    lm = LogManager(data, LogConfig(), now_ms=Clock())
    lm.startup()
    assert lm.had_clean_shutdown and not (data / ".kafka_cleanshutdown").exists()
    assert lm.get_log("t", 0).log_end_offset == 20  # not scanned
    lm.get_log("t", 0).close_handlers()  # crash: no marker this time

    lm = LogManager(data, LogConfig(), now_ms=Clock())
    lm.startup()
    assert not lm.had_clean_shutdown
    # the recovery point (20) is in the only segment, so it is scanned and cut at the bad batch
    assert lm.get_log("t", 0).log_end_offset < 20
    lm.shutdown()


def test_missing_or_corrupt_indexes_are_rebuilt_after_a_clean_shutdown(tmp_path):
    d = tmp_path / "t-0"
    lg = write_segments(d)
    lg.flush()
    lg.close()
    leo = lg.log_end_offset
    first = d / "00000000000000000000"
    good = [Path(str(first) + s).read_bytes() for s in (".index", ".timeindex")]
    assert good[0] and good[1]
    Path(str(first) + ".index").unlink()
    Path(str(first) + ".timeindex").write_bytes(b"\x01" * 7)  # not a whole entry
    lg = Log.open(d, LogConfig(segment_bytes=1000, index_interval_bytes=200), clean_shutdown=True,
                  recovery_point=leo, now_ms=Clock())
    assert lg.log_end_offset == leo
    lg.close()
    assert [Path(str(first) + s).read_bytes() for s in (".index", ".timeindex")] == good


def test_orphan_index_and_stray_files_are_removed(tmp_path):
    d = tmp_path / "t-0"
    lg = write_segments(d, 3)
    lg.close()
    (d / "00000000000000009999.index").write_bytes(b"")
    (d / "00000000000000000000.log.deleted").write_bytes(b"x")
    (d / "00000000000000000077.log.cleaned").write_bytes(b"x")
    lg = Log.open(d, LogConfig(), clean_shutdown=True, recovery_point=6)
    names = {p.name for p in d.iterdir()}
    assert not names & {"00000000000000009999.index", "00000000000000000000.log.deleted",
                        "00000000000000000077.log.cleaned"}
    assert lg.log_end_offset == 6


def test_untrimmed_index_below_the_recovery_point_is_rebuilt(tmp_path):
    """A rolled segment whose trim never reached the disk: a preallocated index with zeros after
    its entries. The sanity check catches it and the index is rebuilt."""
    d = tmp_path / "t-0"
    lg = write_segments(d)
    lg.flush()
    rp = lg.recovery_point
    entries = lg.segments.first.offset_index.all_entries()
    lg.close_handlers()
    idx = d / "00000000000000000000.index"
    with open(idx, "ab") as f:
        f.write(bytes(8 * 100))
    lg = Log.open(d, LogConfig(segment_bytes=1000, index_interval_bytes=200), recovery_point=rp, now_ms=Clock())
    assert lg.segments.first.offset_index.all_entries() == entries
    lg.close()
    assert idx.stat().st_size == 8 * len(entries)
    raw = idx.read_bytes()
    assert [struct.unpack_from(">ii", raw, i) for i in range(0, len(raw), 8)] == entries
