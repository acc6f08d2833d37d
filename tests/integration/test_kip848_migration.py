"""The group size limits of the online migration (group.consumer.migration.policy), on minibroker
alone: the same checks as Kafka 4.4's GroupMetadataManager (validateOnlineUpgrade and the joining
member's throwIfConsumerGroupIsFull against group.consumer.max.size; the downgrade against
group.max.size), which would each need a Kafka configured for it. The migration itself is compared
with Kafka in tests/reference/test_kip848_migration_reference.py."""

from __future__ import annotations

import uuid
from pathlib import Path

from minibroker.testing import BrokerThread
from tests.integration import migration_helpers as mh
from tests.integration.helpers import RawClient


def _broker(tmp_path: Path, **overrides: object) -> BrokerThread:
    return BrokerThread(tmp_path / uuid.uuid4().hex[:6], overrides={"group.initial.rebalance.delay.ms": 0,
                                                                     **overrides})


def test_upgrade_refused_when_the_joining_member_would_not_fit(tmp_path: Path) -> None:
    with _broker(tmp_path, **{"group.consumer.max.size": 1}) as b:
        mh.k848.make_topic(b.bootstrap, "size-t", 2)
        with RawClient(b.bootstrap) as c:
            join = mh._classic_join(c, "size-g", "size-t")
            assert mh._sync(c, "size-g", join, "size-t", [0, 1]).error_code == 0
            r = mh._cghb(c, "size-g", str(uuid.uuid4()), 0, "size-t")
        assert (r.error_code, r.error_message) == (
            81, "The consumer group has reached its maximum capacity of 1 members.")  # GROUP_MAX_SIZE_REACHED
        assert mh.group_listing(b.bootstrap, "size-g") == [("classic", "consumer", "Stable")]


def test_downgrade_only_within_group_max_size(tmp_path: Path) -> None:
    outcome = {}
    for limit in (1, 2):
        with _broker(tmp_path, **{"group.max.size": limit}) as b:
            mh.k848.make_topic(b.bootstrap, "size-t", 2)
            member = str(uuid.uuid4())
            with RawClient(b.bootstrap) as c:
                assert mh._cghb(c, "size-g", member, 0, "size-t").error_code == 0
                for _ in range(2):  # two classic members join the consumer group
                    join = mh._classic_join(c, "size-g", "size-t")
                    assert mh._sync(c, "size-g", join, "size-t", []).error_code == 0
                assert mh._cghb(c, "size-g", member, -1, "size-t").error_code == 0
            outcome[limit] = [t for t, _, _ in mh.group_listing(b.bootstrap, "size-g")]
    assert outcome == {1: ["consumer"], 2: ["classic"]}
