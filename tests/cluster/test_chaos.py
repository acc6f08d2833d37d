"""Nothing lost (issue 29), bounded: bench/chaos.py's run for ~20 s of kill -9 / SIGSTOP / restart
of the brokers of a three-broker cluster under two idempotent acks=all producers. Outcomes only
(no timing bound): every acknowledged record read back once, in order, at its acked offset, and
each partition's `.log` segments byte-identical on the three replicas. The checker is tested first
on made-up reads, so a run that passes is not a checker that cannot fail."""

from __future__ import annotations

import pytest

from bench.chaos import PRODUCER_CONFIG, Acked, ChaosResult, _check, _value, run_chaos
from minibroker.testing import Cluster

pytestmark = pytest.mark.minibroker_cluster(brokers=3)


class _Acks:
    """What _check reads of a producer: its acknowledged records."""

    def __init__(self, acked: dict[bytes, Acked]):
        self.acked = acked


def _checked(acked: dict[bytes, Acked], read: dict[int, list[tuple[int, bytes]]]) -> ChaosResult:
    r = ChaosResult(0, 0)
    _check(r, [_Acks(acked)], read)  # type: ignore[list-item]  # only .acked is read
    return r


def test_checker_counts_lost_duplicated_reordered_and_misplaced():
    a, b, c = _value(0, 0), _value(0, 1), _value(0, 2)
    acked = {a: Acked(0, 0), b: Acked(0, 1), c: Acked(0, 2)}
    ok = _checked(acked, {0: [(0, a), (1, b), (2, c)]})
    assert (ok.acked, ok.read, ok.lost, ok.duplicated, ok.out_of_order, ok.misplaced) == (3, 3, 0, 0, 0, 0)
    assert _checked(acked, {0: [(0, a), (1, b)]}).lost == 1
    dup = _checked(acked, {0: [(0, a), (1, b), (2, b), (3, c)]})
    assert (dup.duplicated, dup.out_of_order, dup.misplaced) == (1, 1, 1)
    swapped = _checked(acked, {0: [(0, a), (1, c), (2, b)]})
    assert (swapped.out_of_order, swapped.misplaced, swapped.lost) == (1, 2, 0)


def test_producers_are_idempotent_acks_all():
    assert PRODUCER_CONFIG["acks"] == "all" and PRODUCER_CONFIG["enable.idempotence"] is True


def test_nothing_acknowledged_lost_under_chaos(kafka_cluster: Cluster):
    r = run_chaos(kafka_cluster, seconds=20, seed=29)
    print(r.summary())
    print("\n".join(r.timeline))
    assert r.acked > 0 and r.kills + r.pauses + r.restarts > 0, r.summary()
    assert (r.lost, r.duplicated, r.out_of_order, r.misplaced) == (0, 0, 0, 0), r.summary()
    assert r.read >= r.acked
    assert r.logs_identical, r.summary()
