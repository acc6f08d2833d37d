"""KIP-73's replication quotas (minibroker.quotas.replication_quota): which partitions a broker
throttles from the `*.replication.throttled.replicas` topic configs, and when (Kafka's
shouldLeaderThrottle / shouldFollowerThrottle). The throttle on a cluster: tests/cluster/test_reassignment.py."""

from __future__ import annotations

from minibroker.quotas.replication_quota import ALL_PARTITIONS, ReplicationQuotas, throttled_partitions


def test_a_broker_keeps_the_partitions_paired_with_its_id() -> None:
    assert throttled_partitions("0:1,0:2,1:2,3:1", 1) == {0, 3}
    assert throttled_partitions("0:1,0:2,1:2,3:1", 2) == {0, 1}
    assert throttled_partitions("0:1", 3) == frozenset()
    assert throttled_partitions(["2:3", " 4:3 "], 3) == {2, 4}  # a parsed list config
    assert throttled_partitions("*", 7) == {ALL_PARTITIONS}
    assert throttled_partitions("", 1) == frozenset()
    assert throttled_partitions(None, 1) == frozenset()


def test_only_throttled_out_of_sync_replicas_wait_once_the_rate_is_over_the_bound() -> None:
    q = ReplicationQuotas(1)
    q.update({"leader.replication.throttled.rate": "1000", "follower.replication.throttled.rate": "1000"},
             {"t": {"leader.replication.throttled.replicas": "0:1,0:2",
                    "follower.replication.throttled.replicas": "1:1"},
              "u": {"leader.replication.throttled.replicas": "*"}})
    assert q.leader.throttled == {"t": {0}, "u": {ALL_PARTITIONS}}
    assert q.follower.throttled == {"t": {1}}
    assert not q.should_leader_throttle("t", 0, in_sync=False)  # under the bound
    q.leader.record(100_000)  # 100 kB over Kafka's 10 s minimum window: 10 kB/s > 1 kB/s
    assert q.leader.is_quota_exceeded()
    assert q.should_leader_throttle("t", 0, in_sync=False)
    assert q.should_leader_throttle("u", 5, in_sync=False)
    assert not q.should_leader_throttle("t", 0, in_sync=True)  # the ISR is never throttled
    assert not q.should_leader_throttle("t", 1, in_sync=False)  # not a throttled partition
    assert not q.should_follower_throttle("t", 1, caught_up=False)  # the follower quota is its own
    q.follower.record(100_000)
    assert q.should_follower_throttle("t", 1, caught_up=False)
    assert not q.should_follower_throttle("t", 1, caught_up=True)
    assert not q.should_follower_throttle("t", 0, caught_up=False)
    q.update({}, {})  # --verify cleared them: no bound, nothing throttled
    assert q.leader.rate_bound is None and not q.leader.throttled
    assert not q.should_leader_throttle("t", 0, in_sync=False)
