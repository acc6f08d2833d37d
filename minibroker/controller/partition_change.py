"""Deciding one partition's change and writing it as a PartitionChangeRecord (Kafka: PartitionChangeBuilder).

Leader election, as Kafka's controller does it: the current leader stays if it is still eligible;
otherwise the first replica *in replica order* (the preferred replica first) that is in the ISR
and usable (unfenced, not shutting down) becomes leader. With no such replica the partition has
no leader (-1), unless `unclean.leader.election.enable` lets the first usable replica outside the
ISR lead, with the ISR reset to it and LeaderRecoveryState RECOVERING (KIP-704). Without ELR,
when the ISR would become empty the last member is kept in it (Kafka keeps the ISR non-empty so
the partition can come back from it); with ELR (KIP-966, on by default) it moves to the ELR and
the election follows minibroker.controller.eligible_leader_replicas. A record is written only if something changed; its leader field is -2
when the leader did not change. A reassignment in progress completes in whichever change brings its
new replicas into the ISR (minibroker.controller.reassignment_replicas); a change that takes a
replica out of the replica set bumps the leader epoch even when the leader stays (Kafka:
triggerLeaderEpochBumpForReplicaReassignmentIfNeeded), so the removed replica's fetches are fenced.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from minibroker.controller import eligible_leader_replicas as elr_rules
from minibroker.controller.directory_assignment import ReplicaAcceptor
from minibroker.controller.eligible_leader_replicas import ElrPolicy
from minibroker.controller.reassignment_replicas import ReassignmentReplicas
from minibroker.metadata.partition_registration import (
    MIGRATING,
    NO_LEADER,
    NO_LEADER_CHANGE,
    LeaderRecoveryState,
    PartitionRegistration,
    directory_of,
)
from minibroker_protocol import metadata_records as mr


def elect_leader(reg: PartitionRegistration, isr: Sequence[int], usable: Callable[[int], bool], *,
                 unclean: bool, replicas: Sequence[int] | None = None) -> tuple[int, tuple[int, ...], bool]:
    """(leader, ISR, unclean?) for `reg` with the target `isr` and `replicas` (default: reg's)."""
    replicas = reg.replicas if replicas is None else replicas
    if reg.leader != NO_LEADER and reg.leader in isr and usable(reg.leader):
        return reg.leader, tuple(isr), False
    for r in replicas:
        if r in isr and usable(r):
            return r, tuple(isr), False
    if unclean:
        for r in replicas:
            if usable(r):
                return r, (r,), True
    return NO_LEADER, tuple(isr), False


def change_record(topic_id: uuid.UUID, partition: int, reg: PartitionRegistration, *, target_isr: Sequence[int],
                  usable: Callable[[int], bool], unclean: bool = False,
                  target_leader_recovery: int | None = None,
                  target: ReassignmentReplicas | None = None,
                  elr: ElrPolicy | None = None,
                  directory: tuple[int, uuid.UUID] | None = None) -> mr.PartitionChangeRecord | None:
    """The record moving `reg` to `target_isr` (and to the replica lists `target`, default: reg's
    own) with the leader elected for it, or None if nothing changes. `elr`: the partition keeps
    Eligible Leader Replicas (KIP-966, minibroker.controller.eligible_leader_replicas).
    `directory`: (broker, directory id) its replica is now in (KIP-858; Kafka: setDirectory).
    With a ReplicaAcceptor as `usable`, a replica whose directory is offline is not elected and a
    new replica is recorded in its broker's default directory (Kafka: LeaderAcceptor,
    setDefaultDirProvider)."""
    default_dir: Callable[[int], uuid.UUID] = lambda _r: MIGRATING  # noqa: E731
    if isinstance(usable, ReplicaAcceptor):
        default_dir, usable = usable.default_dir, usable.for_partition(reg)
    target = ReassignmentReplicas.of(reg) if target is None else target
    completed = target.maybe_complete(target_isr)  # Kafka: completeReassignmentIfNeeded
    if completed is not None:
        target, target_isr = completed
    # the ISR in the order given (Kafka's PartitionChangeBuilder keeps its targetIsr list), replicas only
    isr = [r for r in dict.fromkeys(target_isr) if r in target.replicas]
    target_elr: tuple[int, ...] = ()
    if elr is not None:  # KIP-966: the ISR may empty; who leaves it below min ISR stays eligible
        target_elr = elr_rules.target_elr(reg, isr, elr)
        leader, was_unclean = elr_rules.elect(reg, target.replicas, isr, target_elr, usable, unclean=unclean)
        isr_t = (leader,) if was_unclean else tuple(isr)
        if leader != reg.leader and leader in target_elr:  # elected from the ELR: it alone is the ISR
            isr_t, target_elr = (leader,), tuple(r for r in target_elr if r != leader)
    else:
        if not isr and reg.isr:
            isr = [reg.isr[-1]] if reg.leader == NO_LEADER or reg.leader not in reg.isr else [reg.leader]
        leader, isr_t, was_unclean = elect_leader(reg, isr, usable, unclean=unclean, replicas=target.replicas)
    record = mr.PARTITION_CHANGE_RECORD(partition_id=partition, topic_id=topic_id)
    changed = False
    if set(isr_t) != set(reg.isr):  # a new order of the same members is no change (Kafka keeps the list)
        record.isr = list(isr_t)
        changed = True
    if leader != reg.leader:
        record.leader = leader
        changed = True
    else:
        record.leader = NO_LEADER_CHANGE
        if not set(reg.replicas) <= set(target.replicas):  # a replica leaves: the leader epoch moves
            record.leader = reg.leader
            changed = True
    if elr is not None:
        changed = elr_rules.set_fields(record, reg, target_elr, was_unclean) or changed
    changed = _assignment_changes(record, reg, target, default_dir, directory) or changed
    if was_unclean:
        record.leader_recovery_state = LeaderRecoveryState.RECOVERING
    elif target_leader_recovery is not None and target_leader_recovery != reg.leader_recovery_state:
        record.leader_recovery_state = target_leader_recovery
        changed = True
    return record if changed else None


def _assignment_changes(record: mr.PartitionChangeRecord, reg: PartitionRegistration,
                        target: ReassignmentReplicas, default_dir: Callable[[int], uuid.UUID],
                        directory: tuple[int, uuid.UUID] | None) -> bool:
    """Set the record's replicas, adding and removing replicas, and directories where `target`
    differs from `reg`; whether any did (Kafka: PartitionChangeBuilder.setAssignmentChanges: a
    replica keeps its directory, a new one gets its broker's default one)."""
    changed = False
    replicas = target.replicas or reg.replicas
    dirs = {r: directory_of(reg, r) for r in reg.replicas}
    if directory is not None:
        dirs[directory[0]] = directory[1]
    new_dirs = [dirs[r] if r in dirs else default_dir(r) for r in replicas]
    if new_dirs != [directory_of(reg, r) for r in reg.replicas]:
        record.directories = new_dirs
        changed = True
    if target.replicas and target.replicas != reg.replicas:
        record.replicas = list(target.replicas)
        changed = True
    if target.removing != reg.removing_replicas:
        record.removing_replicas = list(target.removing)
        changed = True
    if target.adding != reg.adding_replicas:
        record.adding_replicas = list(target.adding)
        changed = True
    return changed
