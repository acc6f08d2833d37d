"""Server-side partition assignors of KIP-848 consumer groups: `uniform` and `range`.

Theory of operation: the coordinator hands an assignor every member's subscription (the topic
ids it is subscribed to, resolved from names and regexes) and current target assignment, plus
the partition counts of those topics; the assignor returns the new target assignment of every
member. Kafka's assignors (org.apache.kafka.coordinator.group.assignor.UniformAssignor and
RangeAssignor) make the same promises we keep here: every subscribed partition goes to exactly
one subscribed member; `uniform` balances the partition counts (they differ by at most one
between members with the same subscription) and keeps partitions where they are when that
stays balanced (stickiness keeps revocations few); `range` gives each member a contiguous range
of every topic it subscribes to, members sorted by id, the first ones one partition more, so
that co-partitioned topics land together. The exact shapes can differ from Kafka's where its
builders break ties in an order of their own (hash-map iteration); clients see valid, balanced
assignments either way.
"""

from __future__ import annotations

import collections
import heapq
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

Assignment = dict[uuid.UUID, set[int]]  # topic id -> partitions


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """What an assignor knows of one member."""

    subscribed: frozenset[uuid.UUID]
    current: Mapping[uuid.UUID, set[int]]  # the member's current target assignment


class Assignor(Protocol):
    name: str

    def assign(self, members: Mapping[str, MemberSpec], partitions: Mapping[uuid.UUID, int]
               ) -> dict[str, Assignment]: ...


def _sorted_topics(partitions: Mapping[uuid.UUID, object]) -> list[uuid.UUID]:
    return sorted(partitions, key=str)


class _LeastLoaded:
    """The least-loaded subscriber of each topic, ties by member id, as `min(subscribers, key=(count,
    id))` would find it, in O(log members) instead of O(members): a heap per topic of (count, member)
    entries, an entry stale once the member's count moved on (pushed again on every change)."""

    def __init__(self, counts: dict[str, int], subscribed: Mapping[str, list[uuid.UUID]]) -> None:
        self.counts = counts
        self.subscribed = subscribed
        self.heaps: dict[uuid.UUID, list[tuple[int, str]]] = {}
        for m, topics in subscribed.items():
            for tid in topics:
                self.heaps.setdefault(tid, []).append((counts[m], m))
        for h in self.heaps.values():
            heapq.heapify(h)

    def least(self, tid: uuid.UUID) -> str | None:
        h = self.heaps.get(tid)
        while h:
            count, m = h[0]
            if count == self.counts[m]:
                return m
            heapq.heappop(h)
        return None

    def add(self, m: str, delta: int) -> None:
        self.counts[m] += delta
        for tid in self.subscribed[m]:
            heapq.heappush(self.heaps[tid], (self.counts[m], m))


class UniformAssignor:
    """Balanced and sticky (Kafka: UniformAssignor, its optimized and general builders).

    Linear in members, up to a log factor (issue 30: a quadratic quota pass and a linear search of
    the least-loaded member per partition made 2,000 joins cost 92 s of the event loop): members
    are grouped by subscription once, and the least-loaded subscriber of a topic comes from a heap."""

    name = "uniform"

    def assign(self, members: Mapping[str, MemberSpec], partitions: Mapping[uuid.UUID, int]
               ) -> dict[str, Assignment]:
        out: dict[str, Assignment] = {m: {} for m in members}
        if not members:
            return out
        counts = dict.fromkeys(members, 0)
        all_parts = [(tid, p) for tid in _sorted_topics(partitions) for p in range(partitions[tid])]
        # A member's fair share among the members sharing its subscription: total partitions they can
        # take over their number (rounded up); the sticky pass keeps no more than that. Computed once
        # per distinct subscription (most groups have one).
        peers = collections.Counter(s.subscribed for s in members.values())
        topics_for = {sub: [t for t in sub if t in partitions] for sub in peers}
        share = {sub: -(-sum(partitions[t] for t in topics) // peers[sub]) for sub, topics in topics_for.items()}
        topics_of = {m: topics_for[s.subscribed] for m, s in members.items()}
        quota = {m: share[s.subscribed] for m, s in members.items()}
        owner: dict[tuple[uuid.UUID, int], str] = {}
        # sticky pass: keep current partitions still subscribed and existing, up to the quota
        for m in sorted(members):
            spec = members[m]
            for tid in _sorted_topics(spec.current):
                if tid not in spec.subscribed or tid not in partitions:
                    continue
                for p in sorted(spec.current[tid]):
                    if p >= partitions[tid] or (tid, p) in owner or counts[m] >= quota[m]:
                        continue
                    owner[(tid, p)] = m
                    counts[m] += 1
        least = _LeastLoaded(counts, topics_of)
        # the rest: each to its least-loaded subscriber (ties by member id)
        for tp in all_parts:
            if tp in owner:
                continue
            taker = least.least(tp[0])
            if taker is None:
                continue
            owner[tp] = taker
            least.add(taker, 1)
        # balance: move partitions from members with two or more above a peer that could take them
        moved = True
        while moved:
            moved = False
            for tp, m in sorted(owner.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
                target = least.least(tp[0])
                if target is not None and counts[m] - counts[target] >= 2:
                    owner[tp] = target
                    least.add(m, -1)
                    least.add(target, 1)
                    moved = True
        for (tid, p), m in owner.items():
            out[m].setdefault(tid, set()).add(p)
        return out


class RangeAssignor:
    """Per topic, contiguous ranges over the subscribers sorted by member id (Kafka: RangeAssignor)."""

    name = "range"

    def assign(self, members: Mapping[str, MemberSpec], partitions: Mapping[uuid.UUID, int]
               ) -> dict[str, Assignment]:
        out: dict[str, Assignment] = {m: {} for m in members}
        for tid in _sorted_topics(partitions):
            subs = sorted(m for m, s in members.items() if tid in s.subscribed)
            if not subs:
                continue
            n = partitions[tid]
            per, extra = divmod(n, len(subs))
            start = 0
            for i, m in enumerate(subs):
                size = per + (1 if i < extra else 0)
                if size:
                    out[m][tid] = set(range(start, start + size))
                start += size
        return out


ASSIGNORS: dict[str, Assignor] = {a.name: a for a in (UniformAssignor(), RangeAssignor())}

# Kafka accepts the class names in group.consumer.assignors as well as the short names.
_CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def assignor_names(configured: list[str]) -> list[str]:
    """The short names of the configured assignors, in order (unknown names are an error)."""
    out = []
    for name in configured:
        short = _CLASS_NAMES.get(name.strip(), name.strip())
        if short not in ASSIGNORS:
            raise ValueError(f"Unknown consumer group assignor {name}")
        out.append(short)
    return out
