"""The controller's periodic elections (Kafka: QuorumController's `electPreferred` and `electUnclean`
periodic tasks, ReplicationControlManager.maybeBalancePartitionLeaders / maybeElectUncleanLeaders).

Preferred-leader balancing (`auto.leader.rebalance.enable`, default true): every
`leader.imbalance.check.interval.seconds` the controller moves the leadership of every partition led
by another replica than its preferred one (the first of its replicas) back to the preferred one, if
that one is in the ISR and usable (unfenced, not shutting down). So a broker that restarts, rejoins
the ISR and is the preferred replica leads again within one interval. Kafka's KRaft controller has
no per-broker threshold: `leader.imbalance.per.broker.percentage` is read by the ZooKeeper
controller only, and is accepted and described here as Kafka 4 does, with no effect. At most
MAX_ELECTIONS_PER_IMBALANCE elections go into one batch; a pass that stops there runs again at
the next tick instead of waiting a whole interval (Kafka reschedules it immediately).

Unclean elections: a partition without a leader whose topic has `unclean.leader.election.enable`
(its own, else the cluster default) gets its first usable replica as leader, even out of the ISR,
every `unclean.leader.election.interval.ms` (Kafka's internal key, 5 minutes). As on Kafka 4.4's
controller, turning the key on with IncrementalAlterConfigs elects nothing by itself: the next
periodic pass does (Kafka's incrementalAlterConfigs writes only the ConfigRecords). A broker that
comes back unfenced is elected where it can be by the controller's broker_usable, at once, with
the topic's key as it is then (Kafka: handleBrokerUnfenced).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from minibroker.controller import eligible_leader_replicas as elr_rules
from minibroker.controller.partition_change import change_record
from minibroker.metadata.image import MetadataImage
from minibroker.metadata.partition_registration import NO_LEADER, NO_LEADER_CHANGE
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.metadata_serde import ApiMessageAndVersion

MAX_ELECTIONS_PER_IMBALANCE = 1000  # Kafka: ReplicationControlManager's maxElectionsPerImbalance
DEFAULT_UNCLEAN_INTERVAL_MS = 5 * 60 * 1000  # Kafka: unclean.leader.election.interval.ms (internal)
PARTITION_CHANGE_RECORD_VERSION = 2


def balance_partition_leaders(image: MetadataImage, usable: Callable[[int], bool],
                              limit: int = MAX_ELECTIONS_PER_IMBALANCE) -> tuple[list[ApiMessageAndVersion], bool]:
    """Preferred elections for every imbalanced partition whose preferred replica can lead; and
    whether the pass stopped at `limit` with more to do."""
    records: list[ApiMessageAndVersion] = []
    for t in image.topics.values():
        for p, reg in sorted(t.partitions.items()):
            if reg.leader == NO_LEADER or not reg.replicas or reg.leader == reg.replicas[0]:
                continue  # only partitions with a leader that is not the preferred one are imbalanced
            preferred = reg.replicas[0]
            if preferred not in reg.isr or not usable(preferred):
                continue
            if len(records) >= limit:
                return records, True
            records.append(ApiMessageAndVersion(
                mr.PARTITION_CHANGE_RECORD(partition_id=p, topic_id=t.id, leader=preferred),
                PARTITION_CHANGE_RECORD_VERSION))
    return records, False


def elect_unclean_leaders(image: MetadataImage, usable: Callable[[int], bool], unclean: Callable[[str], bool],
                          limit: int = MAX_ELECTIONS_PER_IMBALANCE) -> tuple[list[ApiMessageAndVersion], bool]:
    """Unclean elections for leaderless partitions of topics that allow them; and whether the pass
    stopped at `limit` with more to do."""
    records: list[ApiMessageAndVersion] = []
    for t in image.topics.values():
        leaderless = [(p, reg) for p, reg in sorted(t.partitions.items()) if reg.leader == NO_LEADER]
        if not leaderless or not unclean(t.name):
            continue
        for p, reg in leaderless:
            rec = change_record(t.id, p, reg, target_isr=reg.isr, usable=usable, unclean=True,
                                elr=elr_rules.policy(image, t.name))
            if rec is None or rec.leader in (NO_LEADER, NO_LEADER_CHANGE):
                continue
            if len(records) >= limit:
                return records, True
            records.append(ApiMessageAndVersion(rec, PARTITION_CHANGE_RECORD_VERSION))
    return records, False


@dataclass(slots=True)
class PeriodicElections:
    """When each periodic election is due. `imbalance_check_interval_ms` None: auto.leader.rebalance.enable=false."""

    imbalance_check_interval_ms: int | None
    unclean_interval_ms: int = DEFAULT_UNCLEAN_INTERVAL_MS
    next_balance_ms: int = 0
    next_unclean_ms: int = 0

    def start(self, now_ms: int) -> None:
        if self.imbalance_check_interval_ms is not None:
            self.next_balance_ms = now_ms + self.imbalance_check_interval_ms
        self.next_unclean_ms = now_ms + self.unclean_interval_ms

    def due(self, now_ms: int, image: MetadataImage, usable: Callable[[int], bool],
            unclean: Callable[[str], bool]) -> list[ApiMessageAndVersion]:
        """The records of every pass due at `now_ms`; each pass is scheduled again."""
        records: list[ApiMessageAndVersion] = []
        if now_ms >= self.next_unclean_ms:
            out, more = elect_unclean_leaders(image, usable, unclean)
            records += out
            self.next_unclean_ms = now_ms if more else now_ms + self.unclean_interval_ms
        if self.imbalance_check_interval_ms is not None and now_ms >= self.next_balance_ms:
            out, more = balance_partition_leaders(image, usable)
            records += out
            self.next_balance_ms = now_ms if more else now_ms + self.imbalance_check_interval_ms
        return records
