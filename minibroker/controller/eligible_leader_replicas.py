"""Eligible Leader Replicas (KIP-966 part 1), as Kafka 4.4's controller keeps them.

Theory of operation. With `min.insync.replicas` = M and acks=all, the high watermark only moves
while the ISR has at least M members; so when the ISR shrinks below M, a replica leaving it still
holds every committed record and may safely lead later. Kafka's PartitionChangeBuilder
(`maybePopulateTargetElr`) keeps those replicas in the partition's EligibleLeaderReplicas:
  - ISR >= M: ELR and LastKnownElr are empty;
  - ISR < M: ELR = (ELR u old ISR) - new ISR - replicas that came back from an unclean shutdown
    (a broker whose re-registration carries another previous broker epoch lost its unflushed tail).
The ISR may then become empty (a fenced last member moves to the ELR instead of staying in the
ISR, as it does without ELR). Election (`isValidNewLeader`): an ISR member, or, only when the ISR
is empty, an unfenced ELR member, in replica order; one elected from the ELR becomes the ISR alone
and leaves the ELR. With ISR and ELR both empty, the *last known leader* is elected (an unclean
election, LeaderRecoveryState RECOVERING): Kafka 4.4 runs with `useLastKnownLeaderInBalancedRecovery`
on, so LastKnownElr holds one id, the leader of the moment the ISR became empty
(`maybeUpdateLastKnownLeader`), cleared again once the partition has a leader. An unclean election
clears ELR and LastKnownElr.

The feature is `eligible.leader.replicas.version` (level 1: on), finalized on new Kafka 4.1+
clusters and on ours (minibroker.features).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from minibroker.features import ELIGIBLE_LEADER_REPLICAS_VERSION
from minibroker.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, MetadataImage
from minibroker.metadata.partition_registration import NO_LEADER, PartitionRegistration
from minibroker_protocol import metadata_records as mr

MIN_INSYNC_KEY = "min.insync.replicas"


@dataclass(frozen=True, slots=True)
class ElrPolicy:
    """What one partition change needs to keep the ELR: the topic's min.insync.replicas and the
    brokers back from an unclean shutdown (Kafka: setUncleanShutdownReplicas)."""

    min_isr: int
    unclean_shutdown: tuple[int, ...] = ()


def enabled(image: MetadataImage) -> bool:
    """Kafka: FeatureControlManager.isElrFeatureEnabled (level >= 1 finalized)."""
    return image.features.get(ELIGIBLE_LEADER_REPLICAS_VERSION, 0) >= 1


def min_isr(image: MetadataImage, topic: str) -> int:
    """The topic's min.insync.replicas: its own, else the cluster default (Kafka records it at
    format time when ELR is on, minibroker.dynamic_config), else Kafka's default 1."""
    value = image.configs.get((TOPIC_RESOURCE, topic), {}).get(MIN_INSYNC_KEY)
    if value is None:
        value = image.configs.get((BROKER_RESOURCE, ""), {}).get(MIN_INSYNC_KEY)
    try:
        return int(value) if value is not None else 1
    except ValueError:
        return 1


def policy(image: MetadataImage, topic: str, unclean_shutdown: Iterable[int] = ()) -> ElrPolicy | None:
    """The policy for a change of one of `topic`'s partitions, None when ELR is off."""
    return ElrPolicy(min_isr(image, topic), tuple(unclean_shutdown)) if enabled(image) else None


def target_elr(reg: PartitionRegistration, isr: Sequence[int], p: ElrPolicy) -> tuple[int, ...]:
    """The ELR after the ISR becomes `isr` (Kafka: maybePopulateTargetElr), sorted as Kafka's
    HashSet of small ints iterates."""
    if len(isr) >= p.min_isr:
        return ()
    return tuple(sorted((set(reg.elr) | set(reg.isr)) - set(isr) - set(p.unclean_shutdown)))


def elect(reg: PartitionRegistration, replicas: Sequence[int], isr: Sequence[int], elr: Sequence[int],
          usable: Callable[[int], bool], *, unclean: bool) -> tuple[int, bool]:
    """(leader, unclean?) (Kafka: electAnyLeader with ELR on)."""
    def valid(r: int) -> bool:
        return (r in isr or (not isr and r in elr)) and usable(r)

    if reg.leader != NO_LEADER and valid(reg.leader):
        return reg.leader, False
    for r in replicas:
        if valid(r):
            return r, False
    if not isr and not elr and len(reg.last_known_elr) == 1:
        # Kafka elects the last known leader here without asking whether it is unfenced
        # (PartitionChangeBuilder.canElectLastKnownLeader): mirrored as it is
        return reg.last_known_elr[0], True
    if unclean:
        for r in replicas:
            if usable(r):
                return r, True
    return NO_LEADER, False


def set_fields(record: mr.PartitionChangeRecord, reg: PartitionRegistration, elr: Sequence[int],
               was_unclean: bool) -> bool:
    """Write ELR and LastKnownElr into `record` where they change (Kafka: maybeUpdateRecordElr and
    maybeUpdateLastKnownLeader); whether any did. `record.isr`/`record.leader` are final."""
    changed = False
    new_elr = () if was_unclean else tuple(elr)
    if new_elr != reg.elr:
        record.eligible_leader_replicas = list(new_elr)
        changed = True
    if record.isr is not None and not record.isr and reg.last_known_elr != (reg.leader,):
        record.last_known_elr = [reg.leader]  # the partition becomes leaderless: remember who led
        changed = True
    elif (record.leader >= 0 or (reg.leader != NO_LEADER and record.leader != NO_LEADER)) and reg.last_known_elr:
        record.last_known_elr = []  # it has (or keeps) a leader
        changed = True
    return changed


def alter_partition_fields(record: mr.PartitionChangeRecord, reg: PartitionRegistration, p: ElrPolicy) -> None:
    """ELR fields of a leader's own ISR change (AlterPartition: the leader stays, record.isr set)."""
    set_fields(record, reg, target_elr(reg, record.isr or (), p), was_unclean=False)


__all__ = ["ElrPolicy", "alter_partition_fields", "elect", "enabled", "min_isr", "policy",
           "set_fields", "target_elr"]
