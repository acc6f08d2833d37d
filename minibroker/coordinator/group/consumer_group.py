"""One KIP-848 consumer group: members, epochs, target assignment, reconciliation.

Theory of operation (Kafka: ConsumerGroup, ConsumerGroupMember, CurrentAssignmentBuilder).
A group has three epochs of state:

- the *group epoch*, bumped whenever what the assignment depends on changes (a member joins,
  leaves or changes its subscription; a subscribed topic appears, disappears or grows);
- the *target assignment* and its *assignment epoch*: what the assignor computed for the group
  epoch it was computed at;
- each member's *current assignment* and *member epoch*: what the member has been told to own.

A member converges to its target in steps, revoke before assign, so that no partition is ever
owned by two members: a member owning partitions no longer in its target first gets an
assignment without them (state UNREVOKED_PARTITIONS, epoch unchanged) and keeps that epoch
until its heartbeat shows it let them go; then it moves to the target epoch and gets the
partitions of its target that nobody else still holds (UNRELEASED_PARTITIONS while some are
held, STABLE once it has them all). `partition_epochs` records which member epoch owns each
partition, so a partition is handed out only after its previous owner released it.

Each member also keeps the *assignment epoch* of every partition it owns or is revoking: the
member epoch at which the partition became its own (kept across later epoch bumps while it
stays the member's; Kafka 4.3+, ConsumerGroupMember.assignedPartitions with epochs). An
OffsetCommit at an epoch older than the member's current one is accepted for a partition whose
assignment epoch is not newer than the commit's (a commit sent just before a rebalance bumped
the member), and refused for a partition the member no longer holds.

The group's state follows (ConsumerGroup.ConsumerGroupState): Empty without members,
Assigning while the group epoch is ahead of the assignment epoch, Reconciling while a member is
not at the assignment epoch or not stable, else Stable. No I/O or timers here.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field

Assignment = dict[uuid.UUID, set[int]]
PartitionEpochs = dict[tuple[uuid.UUID, int], int]  # (topic id, partition) -> assignment epoch

LEAVE_GROUP_MEMBER_EPOCH = -1  # Kafka: ConsumerGroupHeartbeatRequest.LEAVE_GROUP_MEMBER_EPOCH
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
JOIN_GROUP_MEMBER_EPOCH = 0


class MemberState(enum.IntEnum):
    """Kafka's MemberState; the value is what ConsumerGroupCurrentMemberAssignmentValue stores."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


def copy_assignment(a: Assignment) -> Assignment:
    return {t: set(ps) for t, ps in a.items() if ps}


def same_assignment(a: Assignment, b: Assignment) -> bool:
    # no copies of the sets: compared for every member at every target assignment (issue 30)
    return {t: ps for t, ps in a.items() if ps} == {t: ps for t, ps in b.items() if ps}


def _minus(a: Assignment, b: Assignment) -> Assignment:
    return {t: ps - b.get(t, set()) for t, ps in a.items() if ps - b.get(t, set())}


def _and(a: Assignment, b: Assignment) -> Assignment:
    return {t: ps & b.get(t, set()) for t, ps in a.items() if ps & b.get(t, set())}


def count(a: Assignment) -> int:
    return sum(len(ps) for ps in a.values())


@dataclass(slots=True)
class ClassicMemberMetadata:
    """What a member of the classic protocol inside a consumer group keeps from its JoinGroup
    (Kafka: ConsumerGroupMemberMetadataValue.ClassicMemberMetadata; group_migration.py)."""

    session_timeout_ms: int
    protocols: list[tuple[str, bytes]]  # (name, subscription) in the member's preference order


@dataclass(eq=False)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    # the epoch at which each partition of `assigned` and `pending_revocation` became the member's
    assignment_epochs: PartitionEpochs = field(default_factory=dict)
    classic: ClassicMemberMetadata | None = None  # set: the member speaks the classic protocol

    def assignment_epoch(self, tid: uuid.UUID, p: int) -> int | None:
        """The assignment epoch of a partition the member owns or is revoking, else None."""
        return self.assignment_epochs.get((tid, p))

    def subscription_key(self) -> tuple[object, ...]:
        """Everything the member's record holds: a change is written."""
        classic = None if self.classic is None else (self.classic.session_timeout_ms, tuple(self.classic.protocols))
        return (tuple(sorted(self.subscribed_topic_names)), self.subscribed_topic_regex, self.server_assignor,
                self.instance_id, self.rack_id, self.client_id, self.client_host, self.rebalance_timeout_ms, classic)

    def assignment_inputs(self) -> tuple[object, ...]:
        """What the target assignment depends on: a change bumps the group epoch. A new client id,
        host, rack or rebalance timeout (a static member back from a restart) only rewrites the
        member's record (Kafka: GroupMetadataManager.hasMemberSubscriptionChanged)."""
        return tuple(sorted(self.subscribed_topic_names)), self.subscribed_topic_regex, self.server_assignor


@dataclass(eq=False)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    metadata_hash: int = 0
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    target: dict[str, Assignment] = field(default_factory=dict)
    partition_epochs: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)
    partition_owner: dict[tuple[uuid.UUID, int], str] = field(default_factory=dict)
    regex_topics: dict[str, set[str]] = field(default_factory=dict)  # resolved regexes
    assignor_name: str = "uniform"
    deleted: bool = False

    # -- state --------------------------------------------------------------------------------
    @property
    def state(self) -> ConsumerGroupState:
        if self.deleted:
            return ConsumerGroupState.DEAD
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for m in self.members.values():
            if m.member_epoch != self.assignment_epoch or m.state is not MemberState.STABLE:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    # -- membership ---------------------------------------------------------------------------
    def add_member(self, member: ConsumerGroupMember) -> None:
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self._own(member)

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        self._release(member)
        self.target.pop(member_id, None)
        return member

    def _release(self, member: ConsumerGroupMember) -> None:
        for a in (member.assigned, member.pending_revocation):
            for tid, ps in a.items():
                for p in ps:
                    if self.partition_owner.get((tid, p)) == member.member_id:
                        del self.partition_owner[(tid, p)]
                        self.partition_epochs.pop((tid, p), None)

    def _own(self, member: ConsumerGroupMember) -> None:
        for a in (member.assigned, member.pending_revocation):
            for tid, ps in a.items():
                for p in ps:
                    self.partition_owner[(tid, p)] = member.member_id
                    self.partition_epochs[(tid, p)] = member.member_epoch

    def update_current(self, member: ConsumerGroupMember, *, epoch: int, state: MemberState,
                       assigned: Assignment, pending: Assignment, epochs: PartitionEpochs | None = None) -> None:
        """Set the member's current assignment. A partition it keeps, or is now told to revoke,
        keeps its assignment epoch; one it gets (again, if it was being revoked) gets `epoch`
        (Kafka: CurrentAssignmentBuilder); `epochs` overrides both (a replayed record, a static
        member taking over its predecessor's partitions)."""
        self._release(member)
        if epoch != member.member_epoch:
            member.previous_member_epoch = member.member_epoch
        old = member.assignment_epochs
        was_assigned = {(tid, p) for tid, ps in member.assigned.items() for p in ps}
        member.member_epoch = epoch
        member.state = state
        member.assigned = copy_assignment(assigned)
        member.pending_revocation = copy_assignment(pending)
        new: PartitionEpochs = {}
        for a, keeps in ((member.assigned, was_assigned), (member.pending_revocation, old.keys())):
            for tid, ps in a.items():
                for p in ps:
                    key = (tid, p)
                    if epochs is not None and key in epochs:
                        new[key] = epochs[key]
                    else:
                        new[key] = old[key] if key in keeps and key in old else epoch
        member.assignment_epochs = new
        self._own(member)

    def free(self, tid: uuid.UUID, p: int, member_id: str) -> bool:
        owner = self.partition_owner.get((tid, p))
        return owner is None or owner == member_id

    # -- reconciliation (Kafka: CurrentAssignmentBuilder) -------------------------------------
    def reconcile(self, member: ConsumerGroupMember, owned: Assignment | None) -> bool:
        """Move `member` one step towards its target; `owned` is what the member reported
        owning (None when the heartbeat did not say). Returns whether its state changed."""
        target = self.target.get(member.member_id, {})
        target_epoch = self.assignment_epoch
        before = (member.member_epoch, member.state, copy_assignment(member.assigned),
                  copy_assignment(member.pending_revocation))
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            # Still waiting for the member to let go of what it must revoke.
            if owned is None or _and(member.pending_revocation, owned):
                return False
            self._compute_next(member, target, target_epoch)
        elif member.member_epoch != target_epoch or member.state is MemberState.UNRELEASED_PARTITIONS:
            self._compute_next(member, target, target_epoch)
        after = (member.member_epoch, member.state, member.assigned, member.pending_revocation)
        return before != after

    def _compute_next(self, member: ConsumerGroupMember, target: Assignment, target_epoch: int) -> None:
        current = member.assigned
        keep = _and(current, target)
        revoke = _minus(current, target)
        if revoke:
            self.update_current(member, epoch=member.member_epoch, state=MemberState.UNREVOKED_PARTITIONS,
                                assigned=keep, pending=revoke)
            return
        new = copy_assignment(keep)
        unreleased = False
        for tid, ps in target.items():
            for p in ps:
                if p in new.get(tid, set()):
                    continue
                if self.free(tid, p, member.member_id):
                    new.setdefault(tid, set()).add(p)
                else:
                    unreleased = True
        self.update_current(member, epoch=target_epoch,
                            state=MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
                            assigned=new, pending={})
