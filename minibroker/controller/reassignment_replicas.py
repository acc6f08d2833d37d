"""A partition's replica set while it is reassigned (Kafka: PartitionReassignmentReplicas,
PartitionReassignmentRevert; KIP-455).

A reassignment that changes the replica set goes through three stages, all written as
PartitionChangeRecords:

  1. the replicas become the target followed by the replicas being removed, with
     `adding_replicas` (target - current) and `removing_replicas` (current - target) set; the
     new replicas create their logs and fetch from the leader like any follower;
  2. the leader adds each caught-up new replica to the ISR (AlterPartition);
  3. once the ISR holds every target replica, the change that brought it there also completes the
     reassignment: the replicas become the target, the ISR loses the removed replicas, adding and
     removing are cleared, and a new leader is elected if the leader was removed.

Stage 3 is not a step of its own: every change the controller builds for a partition (an
AlterPartition, a broker fenced or shut down, the reassignment request itself) first asks
`maybe_complete` (Kafka: PartitionChangeBuilder.completeReassignmentIfNeeded), so a reassignment
that only removes replicas or reorders them completes in the record that starts it. A
cancellation (`revert`) puts the original replicas back and drops the added ones from the ISR.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from minibroker.metadata.partition_registration import PartitionRegistration
from minibroker_protocol.errors import ErrorCode, KafkaError


@dataclass(frozen=True, slots=True)
class ReassignmentReplicas:
    """The replica lists a partition is headed for (Kafka: PartitionReassignmentReplicas)."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @classmethod
    def of(cls, reg: PartitionRegistration) -> ReassignmentReplicas:
        """The partition's lists as the registration holds them."""
        return cls(reg.replicas, reg.adding_replicas, reg.removing_replicas)

    @classmethod
    def moving(cls, current: Sequence[int], target: Sequence[int]) -> ReassignmentReplicas:
        """Stage 1 of a move from `current` to `target`: the target, then the replicas leaving
        (both sorted by id, as Kafka's TreeSet orders them)."""
        removing = tuple(sorted(set(current) - set(target)))
        adding = tuple(sorted(set(target) - set(current)))
        return cls((*target, *removing), adding, removing)

    @property
    def in_progress(self) -> bool:
        return bool(self.adding or self.removing)

    def original_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)

    def maybe_complete(self, target_isr: Sequence[int]) -> tuple[ReassignmentReplicas, list[int]] | None:
        """(the completed lists, the ISR without the removed replicas) when `target_isr` holds
        every replica that stays; None while the reassignment must wait (or none is in progress)."""
        if not self.in_progress:
            return None
        isr = [r for r in target_isr if r not in self.removing]
        replicas = tuple(r for r in self.replicas if r not in self.removing)
        if not isr or not replicas or not set(replicas) <= set(isr):
            return None
        return ReassignmentReplicas(replicas), isr


@dataclass(frozen=True, slots=True)
class ReassignmentRevert:
    """What a cancelled reassignment goes back to (Kafka: PartitionReassignmentRevert): the
    original replicas, the ISR without the replicas being added. `unclean` when none of the ISR
    is left: the first original replica is put in the ISR, which only an unclean election allows."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    unclean: bool

    @classmethod
    def of(cls, reg: PartitionRegistration) -> ReassignmentRevert:
        original = ReassignmentReplicas.of(reg).original_replicas()
        isr = tuple(r for r in reg.isr if r not in reg.adding_replicas)
        if isr:
            return cls(original, isr, False)
        if not original:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             "Invalid replica assignment: addingReplicas contains all replicas.")
        return cls(original, (original[0],), True)
