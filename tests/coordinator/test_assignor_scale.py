"""KIP-848 target assignment at scale (issue 30, finding 10): the uniform assignor is linear in
members up to a log factor (it was quadratic: every member compared its subscription with every
other's, and each partition looked for its least-loaded subscriber among all of them), so one
assignment of 5,000 members takes milliseconds, not seconds; the result stays balanced and sticky.
`group.consumer.max.size` keeps Kafka 4.4's default (Integer.MAX_VALUE, GroupCoordinatorConfig)."""

from __future__ import annotations

import time
import uuid

from minibroker.config.keys import BROKER_CONFIGS
from minibroker.coordinator.group.assignors import MemberSpec, UniformAssignor

KAFKA_CONSUMER_GROUP_MAX_SIZE_DEFAULT = 2_147_483_647


def _cpu(fn: object) -> tuple[float, object]:
    t0 = time.process_time()
    out = fn()  # type: ignore[operator]
    return time.process_time() - t0, out


def test_one_assignment_of_thousands_of_members_is_fast_balanced_and_sticky() -> None:
    t1, t2 = uuid.uuid4(), uuid.uuid4()
    partitions = {t1: 10, t2: 3_000}
    both, only_t1 = frozenset({t1, t2}), frozenset({t1})
    members = {f"m{i:05d}": MemberSpec(both if i % 2 else only_t1, {}) for i in range(5_000)}
    took, out = _cpu(lambda: UniformAssignor().assign(members, partitions))
    assert took < 1.0, f"one assignment of 5,000 members took {took:.2f} s of CPU"
    assert isinstance(out, dict)
    owners = [(t, p) for a in out.values() for t, ps in a.items() for p in ps]
    assert sorted(owners, key=str) == sorted(((t, p) for t, n in partitions.items() for p in range(n)), key=str)
    counts = [sum(len(ps) for ps in out[m].values()) for m in members if members[m].subscribed == both]
    assert max(counts) - min(counts) <= 1
    # a member joins: the others keep what they had (sticky), and it costs as little again
    members2 = {m: MemberSpec(s.subscribed, out[m]) for m, s in members.items()}
    members2["new-member"] = MemberSpec(both, {})
    took2, out2 = _cpu(lambda: UniformAssignor().assign(members2, partitions))
    assert took2 < 1.0
    assert isinstance(out2, dict)
    kept = sum(1 for m in members for t, ps in out[m].items() for p in ps if p in out2[m].get(t, set()))
    assert kept >= len(owners) - 2


def test_consumer_group_max_size_is_kafkas_default() -> None:
    assert BROKER_CONFIGS["group.consumer.max.size"].default == KAFKA_CONSUMER_GROUP_MAX_SIZE_DEFAULT
