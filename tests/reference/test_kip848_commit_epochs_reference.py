"""OffsetCommit and TxnOffsetCommit at a KIP-848 member's current, previous and future epochs,
Apache Kafka 4.4 next to minibroker (tests/reference/commit_epochs_helpers.py drives both with the
same raw requests). Kafka 4.3+ keeps the epoch at which each partition became a member's and
accepts a commit at an older member epoch for a partition held since then; the answers must match
line by line.
"""

from __future__ import annotations

from tests.reference.commit_epochs_helpers import commits_at_member_epochs
from tests.reference.helpers import POOL, Pair

STALE, ILLEGAL_GENERATION = 113, 22


def test_commits_at_older_member_epochs_match_kafka(pair: Pair) -> None:
    kafka, mini = (f.result(timeout=120) for f in [POOL.submit(commits_at_member_epochs, s.bootstrap)
                                                   for s in (pair.kafka, pair.mini)])
    assert mini == kafka
    rows = {r[:-1]: r[-1] for r in mini}
    assert rows[("settled: A's epoch moved by, B's is A's", 1)] is True
    for v in (9, 10):
        assert rows[("OffsetCommit", v, "A current Y")] == [0]
        assert rows[("OffsetCommit", v, "A previous Y (still owned)")] == [0]
        assert rows[("OffsetCommit", v, "A previous X (revoked)")] == [STALE]
        assert rows[("OffsetCommit", v, "A previous X and Y")] == [STALE, STALE]
        assert rows[("OffsetCommit", v, "A future Y")] == [STALE]
    assert rows[("TxnOffsetCommit", 5, "A previous Y (still owned)")] == [0]
    assert rows[("TxnOffsetCommit", 5, "A previous X (revoked)")] == [ILLEGAL_GENERATION]
