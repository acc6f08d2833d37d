"""Deciding one partition's change and writing it as a PartitionChangeRecord (Kafka: PartitionChangeBuilder).

Leader election, as Kafka's controller does it: the current leader stays if it is still eligible;
otherwise the first replica *in replica order* (the preferred replica first) that is in the ISR
and usable (unfenced, not shutting down) becomes leader. With no such replica the partition has
no leader (-1), unless `unclean.leader.election.enable` lets the first usable replica outside the
ISR lead, with the ISR reset to it and LeaderRecoveryState RECOVERING (KIP-704). When the ISR
would become empty the last member is kept in it (Kafka keeps the ISR non-empty so the partition
can come back from it). A record is written only if something changed; its leader field is -2
when the leader did not change.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from minibroker.metadata.partition_registration import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    LeaderRecoveryState,
    PartitionRegistration,
)
from minibroker_protocol import metadata_records as mr


def elect_leader(reg: PartitionRegistration, isr: Sequence[int], usable: Callable[[int], bool], *,
                 unclean: bool) -> tuple[int, tuple[int, ...], bool]:
    """(leader, ISR, unclean?) for `reg` with the target `isr`."""
    if reg.leader != NO_LEADER and reg.leader in isr and usable(reg.leader):
        return reg.leader, tuple(isr), False
    for r in reg.replicas:
        if r in isr and usable(r):
            return r, tuple(isr), False
    if unclean:
        for r in reg.replicas:
            if usable(r):
                return r, (r,), True
    return NO_LEADER, tuple(isr), False


def change_record(topic_id: uuid.UUID, partition: int, reg: PartitionRegistration, *, target_isr: Sequence[int],
                  usable: Callable[[int], bool], unclean: bool = False,
                  target_leader_recovery: int | None = None) -> mr.PartitionChangeRecord | None:
    """The record moving `reg` to `target_isr` with the leader elected for it, or None if nothing changes."""
    isr = [r for r in reg.replicas if r in target_isr]  # ISR kept in replica order, as Kafka writes it
    if not isr and reg.isr:
        isr = [reg.isr[-1]] if reg.leader == NO_LEADER or reg.leader not in reg.isr else [reg.leader]
    leader, isr_t, was_unclean = elect_leader(reg, isr, usable, unclean=unclean)
    record = mr.PARTITION_CHANGE_RECORD(partition_id=partition, topic_id=topic_id)
    changed = False
    if tuple(isr_t) != reg.isr:
        record.isr = list(isr_t)
        changed = True
    if leader != reg.leader:
        record.leader = leader
        changed = True
    else:
        record.leader = NO_LEADER_CHANGE
    if was_unclean:
        record.leader_recovery_state = LeaderRecoveryState.RECOVERING
    elif target_leader_recovery is not None and target_leader_recovery != reg.leader_recovery_state:
        record.leader_recovery_state = target_leader_recovery
        changed = True
    return record if changed else None
