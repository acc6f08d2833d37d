"""Replica placement (minibroker/controller/replica_placer.py): Kafka's rack-unaware striping."""

from __future__ import annotations

import random

import pytest

from minibroker.controller.replica_placer import place
from minibroker_protocol.errors import ErrorCode, KafkaError


def test_striping_as_kafka_documents_it() -> None:
    # the first replicas walk the brokers; once the partitions wrap around, the followers shift by one
    assert place([1, 2, 3], 6, 3, start_index=0, shift=0) == [
        [1, 2, 3], [2, 3, 1], [3, 1, 2], [1, 3, 2], [2, 1, 3], [3, 2, 1]]
    assert place([10, 11, 12, 13, 14], 3, 2, start_index=2, shift=1) == [[12, 14], [13, 10], [14, 11]]


def test_new_partitions_continue_the_stripe() -> None:
    whole = place([1, 2, 3], 6, 2, start_index=1, shift=0)
    assert place([1, 2, 3], 3, 2, start_partition=3, start_index=1, shift=0) == whole[3:]


def test_leaders_and_replicas_spread_evenly() -> None:
    out = place(list(range(6)), 60, 3, rng=random.Random(7))
    assert all(len(set(r)) == 3 for r in out)
    leaders = [r[0] for r in out]
    assert {leaders.count(b) for b in range(6)} == {10}
    assert {sum(b in r for r in out) for b in range(6)} == {30}


@pytest.mark.parametrize("brokers, rf", [([1, 2], 3), ([], 1), ([1], 0)])
def test_impossible_factors_are_refused(brokers: list[int], rf: int) -> None:
    with pytest.raises(KafkaError) as e:
        place(brokers, 1, rf)
    assert e.value.code == ErrorCode.INVALID_REPLICATION_FACTOR
