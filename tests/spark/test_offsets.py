"""Offset JSON, rate limiting and range planning (minibroker/spark/offsets.py): examples and properties."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from minibroker.spark.offsets import OffsetRange, from_json, plan_ranges, rate_limit, split_ranges, to_json


def no_new(_tps):
    raise AssertionError("no new partitions expected")


def test_offset_json_is_canonical():
    offsets = {("b", 10): 5, ("b", 2): 7, ("a", 0): 1}
    assert json.dumps(to_json(offsets)) == '{"a": {"0": 1}, "b": {"2": 7, "10": 5}}'
    assert from_json(to_json(offsets)) == offsets
    assert from_json(json.loads('{"t": {"1": 3}}')) == {("t", 1): 3}
    assert from_json(None) == {}


def test_rate_limit_shares_by_lag():
    start = {("t", 0): 0, ("t", 1): 0}
    assert rate_limit(400, start, {("t", 0): 500, ("t", 1): 500}, no_new) == {("t", 0): 200, ("t", 1): 200}
    # Lag 900 and 100 with a limit of 100: floor(90) and floor(10).
    assert rate_limit(100, start, {("t", 0): 900, ("t", 1): 100}, no_new) == {("t", 0): 90, ("t", 1): 10}
    # A share below one record is rounded up, so a small partition is never starved.
    assert rate_limit(10, start, {("t", 0): 10_000, ("t", 1): 1}, no_new) == {("t", 0): 9, ("t", 1): 1}
    # Within the limit: everything.
    assert rate_limit(1000, start, {("t", 0): 5, ("t", 1): 7}, no_new) == {("t", 0): 5, ("t", 1): 7}


def test_rate_limit_new_partition_starts_at_earliest():
    got = rate_limit(10, {("t", 0): 0}, {("t", 0): 100, ("t", 1): 100}, lambda tps: {tp: 50 for tp in tps})
    # Lags 100 and 50 of 150: 6.67 -> 6 and 3.33 -> 3.
    assert got == {("t", 0): 6, ("t", 1): 53}


offset_maps = st.dictionaries(st.tuples(st.sampled_from("ab"), st.integers(0, 5)),
                              st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1)


@given(offset_maps, st.integers(1, 3000))
def test_rate_limit_properties(pairs, limit):
    start = {tp: s for tp, (s, _) in pairs.items()}
    latest = {tp: s + lag for tp, (s, lag) in pairs.items()}
    got = rate_limit(limit, start, latest, no_new)
    assert got.keys() == latest.keys()
    for tp in latest:
        assert start[tp] <= got[tp] <= latest[tp]
        if latest[tp] > start[tp]:
            assert got[tp] > start[tp]  # no partition with data is starved
    lagging = sum(1 for tp in latest if latest[tp] > start[tp])
    total_lag = sum(latest[tp] - start[tp] for tp in latest)
    taken = sum(got[tp] - start[tp] for tp in latest)
    if total_lag <= limit:
        assert got == latest
    else:
        # Rounding up tiny shares can overshoot by at most one record per partition.
        assert taken <= limit + lagging


def test_split_ranges_like_spark():
    big, small = OffsetRange("t", 0, 0, 10_000), OffsetRange("t", 1, 0, 10)
    assert split_ranges([big, small], None) == [big, small]
    assert split_ranges([big, small], 2) == [big, small]
    # minPartitions 3: the small range stays whole and the big one gets the other two tasks.
    assert split_ranges([big, small], 3) == [OffsetRange("t", 0, 0, 5000), OffsetRange("t", 0, 5000, 10_000), small]
    # Empty ranges are dropped.
    assert split_ranges([OffsetRange("t", 0, 5, 5), small], None) == [small]
    # Remainders go to the last parts.
    assert split_ranges([OffsetRange("t", 0, 0, 10)], 3) == [
        OffsetRange("t", 0, 0, 3), OffsetRange("t", 0, 3, 6), OffsetRange("t", 0, 6, 10)]


ranges_st = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 5000)), min_size=1, max_size=6)


@given(ranges_st, st.one_of(st.none(), st.integers(1, 40)))
def test_split_ranges_cover_each_range_exactly(spec, min_partitions):
    ranges = [OffsetRange("t", p, start, start + size) for p, (start, size) in enumerate(spec)]
    pieces = split_ranges(ranges, min_partitions)
    for r in ranges:
        mine = [x for x in pieces if x.partition == r.partition]
        if r.size == 0:
            assert mine == []
            continue
        assert mine[0].from_offset == r.from_offset and mine[-1].until_offset == r.until_offset
        assert all(a.until_offset == b.from_offset for a, b in zip(mine, mine[1:], strict=False))
        assert all(x.size > 0 for x in mine)
    nonempty = sum(1 for r in ranges if r.size > 0)
    if min_partitions is None or nonempty >= min_partitions:
        assert len(pieces) == nonempty


def test_plan_ranges_new_gone_and_backwards_partitions():
    start = {("t", 0): 10, ("t", 1): 20, ("gone", 0): 5}
    end = {("t", 0): 15, ("t", 1): 12, ("t", 2): 8}
    planned = plan_ranges(start, end, lambda tps: {tp: 3 for tp in tps}, None)
    assert planned.ranges == [OffsetRange("t", 0, 10, 15), OffsetRange("t", 2, 3, 8)]
    assert len(planned.losses) == 3
    assert "Added partition t-2 starts from 3 instead of 0" in planned.losses[0]
    assert "gone-0 are gone" in planned.losses[1]
    assert "Partition t-1's offset was changed from 20 to 12" in planned.losses[2]
    clean = plan_ranges({("t", 0): 0}, {("t", 0): 4, ("t", 1): 2}, lambda tps: {tp: 0 for tp in tps}, None)
    assert clean.losses == [] and clean.ranges == [OffsetRange("t", 0, 0, 4), OffsetRange("t", 1, 0, 2)]
