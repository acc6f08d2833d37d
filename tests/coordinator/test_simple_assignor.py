"""The share-group SimpleAssignor (minibroker.coordinator.share.simple_assignor): balance first,
partitions shared only when members outnumber them, stickiness next."""

from __future__ import annotations

import uuid
from collections import Counter

from minibroker.coordinator.share.simple_assignor import assign

T = uuid.UUID(int=1)
U = uuid.UUID(int=2)


def _sizes(out: dict[str, dict[uuid.UUID, list[int]]]) -> list[int]:
    return sorted(sum(map(len, a.values())) for a in out.values())


def _owners(out: dict[str, dict[uuid.UUID, list[int]]]) -> Counter[tuple[uuid.UUID, int]]:
    return Counter((t, p) for a in out.values() for t, ps in a.items() for p in ps)


def test_partitions_are_spread_over_members_each_given_once() -> None:
    subs = {m: frozenset({T}) for m in ("a", "b")}
    out = assign(subs, {T: 4}, {})
    assert _sizes(out) == [2, 2]
    assert _owners(out) == Counter({(T, p): 1 for p in range(4)})
    out = assign({m: frozenset({T}) for m in "abc"}, {T: 7}, {})
    assert _sizes(out) == [2, 2, 3] and set(_owners(out).values()) == {1}


def test_partitions_are_shared_only_when_members_outnumber_them() -> None:
    out = assign({m: frozenset({T}) for m in "abc"}, {T: 2}, {})
    assert _sizes(out) == [1, 1, 2]
    assert _owners(out) == Counter({(T, 0): 2, (T, 1): 2})
    out = assign({m: frozenset({T}) for m in "abcd"}, {T: 1}, {})
    assert _sizes(out) == [1, 1, 1, 1]


def test_a_member_keeps_what_balance_allows() -> None:
    one = assign({"a": frozenset({T})}, {T: 4}, {})
    assert one == {"a": {T: [0, 1, 2, 3]}}
    two = assign({"a": frozenset({T}), "b": frozenset({T})}, {T: 4}, one)
    assert len(two["a"][T]) == 2 and set(two["a"][T]) < {0, 1, 2, 3}
    assert sorted(two["a"][T] + two["b"][T]) == [0, 1, 2, 3]
    # b leaves: a gets everything back, keeping its own
    back = assign({"a": frozenset({T})}, {T: 4}, two)
    assert back == {"a": {T: [0, 1, 2, 3]}}


def test_unsubscribed_topics_are_dropped_and_heterogeneous_subscriptions_assigned_per_topic() -> None:
    out = assign({"a": frozenset({T}), "b": frozenset({T, U})}, {T: 2, U: 3}, {"a": {U: [0]}})
    assert U not in out["a"]
    assert out["b"][U] == [0, 1, 2]
    assert sorted(out["a"].get(T, []) + out["b"].get(T, [])) == [0, 1]


def test_no_members_or_no_partitions() -> None:
    assert assign({}, {T: 3}, {}) == {}
    assert assign({"a": frozenset()}, {}, {}) == {"a": {}}
