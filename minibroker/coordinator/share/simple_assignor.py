"""The share-group target assignment as Kafka's SimpleAssignor (KIP-932) computes it.

Theory of operation. Share-group members do not own partitions, but they are still assigned
some, so that a member fetches from a few partitions rather than from all of them:
- Balance first: the partitions are spread over the members, the counts of two members differing
  by one at most. A partition is given to one member while there are at least as many partitions
  as members; only when members outnumber partitions is a partition shared, by
  ceil(members / partitions) of them (its "desired sharing"), and every member gets one or two.
- Stickiness next: a member keeps what it had as far as balance allows.

The steps (Kafka's SimpleHomogeneousAssignmentBuilder): drop partitions of topics no longer
subscribed; take partitions shared by more members than desired away, from overfilled members
first; take more away from members still above their quota; then hand the partitions short of
members to the members short of partitions, in turn. A member's quota is its share of
desiredSharing x partitions, the fractions rounded so that the quotas add up.

When members subscribe to different topics (Kafka's SimpleHeterogeneousAssignmentBuilder) each
topic is assigned among its own subscribers the same way; Kafka balances the total count per
member across topics there, which we do not (a member subscribed to several topics may get more
than one subscribed to one).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping

TopicPartition = tuple[uuid.UUID, int]
Assignment = dict[uuid.UUID, list[int]]


def assign(subscriptions: Mapping[str, frozenset[uuid.UUID]], partition_counts: Mapping[uuid.UUID, int],
           current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    """The target assignment of every member: `subscriptions` gives each member's subscribed topic
    ids (existing topics only), `partition_counts` each topic's partition count, `current` each
    member's assignment so far."""
    if not subscriptions:
        return {}
    distinct = set(subscriptions.values())
    if len(distinct) == 1:
        topics = next(iter(distinct))
        return _assign_partitions(list(subscriptions), _partitions(topics, partition_counts), current)
    out: dict[str, Assignment] = {m: {} for m in subscriptions}
    for tid in sorted(set().union(*distinct), key=str):
        members = [m for m, topics in subscriptions.items() if tid in topics]
        for m, a in _assign_partitions(members, _partitions({tid}, partition_counts), current).items():
            out[m].update(a)
    return out


def _partitions(topics: frozenset[uuid.UUID] | set[uuid.UUID],
                partition_counts: Mapping[uuid.UUID, int]) -> list[TopicPartition]:
    return [(tid, p) for tid in sorted(topics, key=str) for p in range(partition_counts.get(tid, 0))]


def _assign_partitions(members: list[str], targets: list[TopicPartition],
                       current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    n_members, n_parts = len(members), len(targets)
    if n_parts == 0:
        return {m: {} for m in members}
    sharing = -(-n_members // n_parts)  # ceil: more than one member per partition only if they outnumber them
    precise = sharing * n_parts / n_members
    quota = {m: math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i, m in enumerate(members)}
    wanted = set(targets)
    held: dict[str, list[TopicPartition]] = {}
    by_partition: dict[TopicPartition, list[str]] = {tp: [] for tp in targets}
    for m in members:  # what each member keeps of its assignment: subscribed partitions only
        mine = [(tid, p) for tid, parts in sorted(current.get(m, {}).items(), key=lambda kv: str(kv[0]))
                for p in sorted(parts) if (tid, p) in wanted]
        held[m] = mine
        for tp in mine:
            by_partition[tp].append(m)
    overfilled = {m for m in members if len(held[m]) > quota[m]}
    # a partition shared more than desired: drop it from overfilled members first, then from others
    for tp, owners in by_partition.items():
        for prefer_overfilled in (True, False):
            for m in list(owners):
                if len(owners) <= sharing:
                    break
                if (m in overfilled) == prefer_overfilled:
                    owners.remove(m)
                    held[m].remove(tp)
    # members still above their quota give up their last partitions
    for m in members:
        while len(held[m]) > quota[m]:
            by_partition[held[m].pop()].remove(m)
    # partitions short of members go to members short of partitions, in turn
    unfilled = [m for m in members if len(held[m]) < quota[m]]
    turn = 0
    for tp, owners in by_partition.items():
        tried = 0
        while len(owners) < sharing and unfilled and tried < len(unfilled):
            m = unfilled[turn % len(unfilled)]
            if m in owners:
                turn += 1
                tried += 1
                continue
            owners.append(m)
            held[m].append(tp)
            tried = 0
            if len(held[m]) >= quota[m]:
                unfilled.remove(m)
            else:
                turn += 1
        if not unfilled:
            break
    out: dict[str, Assignment] = {}
    for m in members:
        a: Assignment = {}
        for tid, p in held[m]:
            a.setdefault(tid, []).append(p)
        out[m] = {tid: sorted(ps) for tid, ps in a.items()}
    return out
