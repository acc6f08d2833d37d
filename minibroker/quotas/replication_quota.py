"""Replication throttles (KIP-73; Kafka: ReplicationQuotaManager, ConfigHandler's throttled-replica
parsing, ReplicaManager.shouldLeaderThrottle, ReplicaFetcherThread.shouldFollowerThrottle).

Theory of operation. Each broker holds two quotas, `leader` and `follower`, each a byte rate
(`leader.replication.throttled.rate` / `follower.replication.throttled.rate`, dynamic configs of
this broker's own BROKER resource only, as Kafka's BrokerConfigHandler reads them; unset: no bound)
and the partitions it throttles, from the topic configs `leader.replication.throttled.replicas` /
`follower.replication.throttled.replicas`: `*` (every partition of the topic) or `partition:broker`
pairs, of which a broker keeps the partitions paired with its own id. kafka-reassign-partitions
--throttle lists the current replicas in the leader list and the moving ones in the follower list.

- The leader answers a follower's fetch of a throttled partition with no records while its leader
  quota is exceeded, unless that follower is in the ISR; the bytes it sends for throttled
  partitions are recorded once per answered fetch (Kafka: KafkaApis records the response's
  throttled partitions' size).
- The follower leaves a throttled partition out of its fetch while its follower quota is
  exceeded, unless it is caught up to the leader's HW (its lag 0); the bytes it appends to
  throttled partitions are recorded.
Non-throttled partitions never wait. Rates are measured as Kafka measures them
(`replication.quota.window.num` 11 windows of `replication.quota.window.size.seconds` 1 s), so a
throttle starting from nothing lets about ten seconds' worth through at once, as Kafka's does.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from minibroker.quotas.rate import SampledRate
from minibroker_storage.file_region import FileRegion

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
WINDOW_NUM = 11  # replication.quota.window.num
WINDOW_SIZE_MS = 1000  # replication.quota.window.size.seconds
ALL_PARTITIONS = -1  # '*' (Kafka: ReplicationQuotaManager.AllReplicas)


def throttled_partitions(value: str | Iterable[str] | None, broker_id: int) -> frozenset[int]:
    """The partitions a `*.replication.throttled.replicas` value throttles on `broker_id`
    ({ALL_PARTITIONS} for `*`; Kafka: ConfigHandler.parseThrottledPartitions)."""
    if value is None:
        return frozenset()
    items = [s.strip() for s in (value.split(",") if isinstance(value, str) else value) if s.strip()]
    if items == ["*"]:
        return frozenset({ALL_PARTITIONS})
    out = set()
    for item in items:
        p, _, b = item.partition(":")
        if b.strip().isdigit() and int(b) == broker_id and p.strip().isdigit():
            out.add(int(p))
    return frozenset(out)


class FetchedPartition(Protocol):
    """A partition a fetch asked for (minibroker.replica_manager.FetchPartition)."""

    @property
    def topic(self) -> str | None: ...
    @property
    def partition(self) -> int: ...


class ReadResult(Protocol):
    """What was read of it (minibroker.partition.LogReadResult)."""

    @property
    def records(self) -> FileRegion | None: ...


def _now_ms() -> float:
    return time.monotonic() * 1000


@dataclass(slots=True)
class ReplicationQuota:
    """One direction's throttle (Kafka: ReplicationQuotaManager)."""

    rate_bound: float | None = None  # bytes/s; None: unbounded (Kafka: Long.MaxValue)
    throttled: dict[str, frozenset[int]] = field(default_factory=dict)  # topic -> partitions
    _rate: SampledRate = field(default_factory=lambda: SampledRate(WINDOW_NUM, WINDOW_SIZE_MS, _now_ms()))

    def is_throttled(self, topic: str, partition: int) -> bool:
        ps = self.throttled.get(topic)
        return ps is not None and (partition in ps or ALL_PARTITIONS in ps)

    def is_quota_exceeded(self) -> bool:
        return self.rate_bound is not None and self._rate.rate(_now_ms()) > self.rate_bound

    def record(self, size: int) -> None:
        if size:
            self._rate.record(size, _now_ms())

    def rate(self) -> float:
        """The measured rate, bytes/s."""
        return self._rate.rate(_now_ms())


class ReplicationQuotas:
    """This broker's leader and follower throttles, read from each metadata image."""

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.leader = ReplicationQuota()
        self.follower = ReplicationQuota()

    def update(self, broker_configs: Mapping[str, str], topic_configs: Mapping[str, Mapping[str, str]]) -> None:
        """`broker_configs`: this broker's own dynamic configs; `topic_configs`: topic -> its configs."""
        for quota, rate_key, replicas_key in ((self.leader, LEADER_RATE, LEADER_REPLICAS),
                                              (self.follower, FOLLOWER_RATE, FOLLOWER_REPLICAS)):
            raw = broker_configs.get(rate_key)
            quota.rate_bound = float(raw) if raw not in (None, "") else None
            throttled = {}
            for topic, cfg in topic_configs.items():
                ps = throttled_partitions(cfg.get(replicas_key), self.node_id)
                if ps:
                    throttled[topic] = ps
            quota.throttled = throttled

    def should_leader_throttle(self, topic: str, partition: int, in_sync: bool) -> bool:
        """Kafka: ReplicaManager.shouldLeaderThrottle: a replica in the ISR is never throttled."""
        return not in_sync and self.leader.is_throttled(topic, partition) and self.leader.is_quota_exceeded()

    def should_follower_throttle(self, topic: str, partition: int, caught_up: bool) -> bool:
        """Kafka: ReplicaFetcherThread.shouldFollowerThrottle: a caught-up replica is never throttled."""
        return not caught_up and self.follower.is_throttled(topic, partition) and self.follower.is_quota_exceeded()


def emptied(records: FileRegion) -> FileRegion:
    """A throttled partition's answer: no records, still not null (Kafka sends MemoryRecords.EMPTY)."""
    return dataclasses.replace(records, size=0)


def record_leader_bytes(quotas: ReplicationQuotas, parts: Sequence[FetchedPartition],
                        results: Sequence[ReadResult]) -> None:
    """Count a follower's answered fetch against the leader quota: the bytes of its throttled
    partitions (Kafka: KafkaApis' sizeOfThrottledPartitions, recorded after the fetch)."""
    leader = quotas.leader
    if not leader.throttled:
        return
    size = sum(r.records.size for fp, r in zip(parts, results, strict=True)
               if r.records is not None and fp.topic is not None and leader.is_throttled(fp.topic, fp.partition))
    leader.record(size)
