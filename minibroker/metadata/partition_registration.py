"""One partition's replica state as the metadata log records it (Kafka: PartitionRegistration).

Both sides of the metadata log use it: the controller (minibroker.controller) decides changes and
writes them, every broker replays them into its image (minibroker.metadata.image). A
PartitionRecord sets all of it; a PartitionChangeRecord carries only what changed (null lists and
leader -2 mean "unchanged"). `merge` is the one place that applies a change: a new leader bumps
the leader epoch, and every change bumps the partition epoch, the number AlterPartition requests
must quote (KIP-497/KIP-841).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from minibroker_protocol import metadata_records as mr

# Kafka's DirectoryId (KIP-858): the reserved directory ids of PartitionRecord.directories
MIGRATING = uuid.UUID(int=0)  # placed before directories were recorded (or by a broker that registered none)
UNASSIGNED = uuid.UUID(int=1)  # not placed yet: the broker picks a directory and tells the controller
LOST = uuid.UUID(int=2)  # in a directory that is offline
# metadata.version 3.7-IV2 (feature level 17): Kafka's MetadataVersion.isDirectoryAssignmentSupported
DIRECTORY_ASSIGNMENT_LEVEL = 17

NO_LEADER = -1
NO_LEADER_CHANGE = -2  # PartitionChangeRecord.leader: unchanged


class LeaderRecoveryState:
    """Kafka: LeaderRecoveryState (KIP-704)."""

    RECOVERED = 0
    RECOVERING = 1  # a leader elected uncleanly, until it has rebuilt its state
    NO_CHANGE = -1


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader_recovery_state: int = LeaderRecoveryState.RECOVERED
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    directories: tuple[uuid.UUID, ...] = field(default=())

    @classmethod
    def from_record(cls, r: mr.PartitionRecord) -> PartitionRegistration:
        return cls(tuple(r.replicas), tuple(r.isr), r.leader, r.leader_epoch, r.partition_epoch,
                   tuple(r.removing_replicas), tuple(r.adding_replicas), r.leader_recovery_state,
                   tuple(r.eligible_leader_replicas or ()), tuple(r.last_known_elr or ()), tuple(r.directories))

    def to_record(self, topic_id: uuid.UUID, partition: int) -> mr.PartitionRecord:
        return mr.PARTITION_RECORD(
            partition_id=partition, topic_id=topic_id, replicas=list(self.replicas), isr=list(self.isr),
            removing_replicas=list(self.removing_replicas), adding_replicas=list(self.adding_replicas),
            leader=self.leader, leader_recovery_state=self.leader_recovery_state, leader_epoch=self.leader_epoch,
            partition_epoch=self.partition_epoch, directories=list(self.directories),
            eligible_leader_replicas=list(self.elr) if self.elr else None,
            last_known_elr=list(self.last_known_elr) if self.last_known_elr else None)

    def merge(self, r: mr.PartitionChangeRecord) -> PartitionRegistration:
        """The registration after a PartitionChangeRecord (Kafka: PartitionRegistration.merge)."""
        new = self
        if r.isr is not None:
            new = replace(new, isr=tuple(r.isr))
        if r.replicas is not None:
            new = replace(new, replicas=tuple(r.replicas))
        if r.removing_replicas is not None:
            new = replace(new, removing_replicas=tuple(r.removing_replicas))
        if r.adding_replicas is not None:
            new = replace(new, adding_replicas=tuple(r.adding_replicas))
        if r.leader != NO_LEADER_CHANGE:
            new = replace(new, leader=r.leader, leader_epoch=self.leader_epoch + 1)
        if r.leader_recovery_state != LeaderRecoveryState.NO_CHANGE:
            new = replace(new, leader_recovery_state=r.leader_recovery_state)
        if r.directories is not None:
            new = replace(new, directories=tuple(r.directories))
        if r.eligible_leader_replicas is not None:
            new = replace(new, elr=tuple(r.eligible_leader_replicas))
        if r.last_known_elr is not None:
            new = replace(new, last_known_elr=tuple(r.last_known_elr))
        return replace(new, partition_epoch=self.partition_epoch + 1)

    def has_leader(self) -> bool:
        return self.leader != NO_LEADER


def directory_assignment_supported(features: Mapping[str, int]) -> bool:
    return features.get("metadata.version", 0) >= DIRECTORY_ASSIGNMENT_LEVEL


def directory_online(d: uuid.UUID, online: tuple[uuid.UUID, ...] | list[uuid.UUID]) -> bool:
    """Kafka: DirectoryId.isOnline. A registration without directories (from before 3.7-IV2)
    says nothing: online."""
    if d in (UNASSIGNED, MIGRATING):
        return True
    if d == LOST:
        return False
    return not online or d in online


def directory_of(reg: PartitionRegistration, broker_id: int) -> uuid.UUID:
    """The replica's directory; MIGRATING for a partition recorded without directories (Kafka:
    PartitionRegistration fills DirectoryId.migratingArray)."""
    if len(reg.directories) != len(reg.replicas):
        return MIGRATING
    for r, d in zip(reg.replicas, reg.directories, strict=True):
        if r == broker_id:
            return d
    return UNASSIGNED
