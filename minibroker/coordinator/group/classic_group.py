"""One classic consumer group: its members, generation, protocol and state.

Theory of operation: this is the data half of Kafka's classic group protocol (ClassicGroup,
ClassicGroupMember, ClassicGroupState in Kafka's group-coordinator module). It holds no timers
and does no I/O; group_coordinator.py drives it. The states and their legal predecessors:

    Empty               <- PreparingRebalance
    PreparingRebalance  <- Stable, CompletingRebalance, Empty
    CompletingRebalance <- PreparingRebalance
    Stable              <- CompletingRebalance
    Dead                <- any

A member parked in JoinGroup holds `awaiting_join` (a future the coordinator completes with the
JoinGroup response); one parked in SyncGroup holds `awaiting_sync`. The join phase can complete
when every member is awaiting a join and no member id handed out with MEMBER_ID_REQUIRED
(KIP-394) is still pending. Static members (KIP-345) are indexed by group.instance.id.
"""

from __future__ import annotations

import asyncio
import enum
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from minibroker.coordinator.group.consumer_protocol import subscription_topics
from minibroker_protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from minibroker_protocol.apis.join_group import JoinGroupResponse
    from minibroker_protocol.apis.sync_group import SyncGroupResponse

_T = TypeVar("_T")

CONSUMER_PROTOCOL_TYPE = "consumer"  # Kafka: ConsumerProtocol.PROTOCOL_TYPE
UNKNOWN_MEMBER_ID = ""  # Kafka: JoinGroupRequest.UNKNOWN_MEMBER_ID
EMPTY_ASSIGNMENT = b""


@dataclass(slots=True)
class ClientInfo:
    """Who sent a request: what members are described with (DescribeGroups)."""

    client_id: str
    client_host: str
    api_version: int


class GroupState(enum.Enum):
    """Kafka's ClassicGroupState; the value is the name clients see (DescribeGroups, ListGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


@dataclass(eq=False)
class Member:
    """A member of a classic group (Kafka: ClassicGroupMember)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]  # (name, metadata) in the member's preference order
    assignment: bytes = EMPTY_ASSIGNMENT
    awaiting_join: asyncio.Future[JoinGroupResponse] | None = None
    awaiting_sync: asyncio.Future[SyncGroupResponse] | None = None
    # A member that has not yet received its first JoinGroup response; its session timer is
    # the new-member join timeout, and it may expire even while parked in JoinGroup.
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    def has_satisfied_heartbeat(self) -> bool:
        # Members parked in a rebalance count as alive; new members do not (Kafka: same rule).
        if self.is_new:
            return False
        return self.is_awaiting_join or self.is_awaiting_sync

    def protocol_names(self) -> set[str]:
        return {name for name, _ in self.protocols}

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return [(n, bytes(m)) for n, m in protocols] == [(n, bytes(m)) for n, m in self.protocols]

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        raise ValueError(f"member {self.member_id} does not support protocol {protocol}")

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")


def _complete(fut: asyncio.Future[_T] | None, value: _T) -> bool:
    if fut is None:
        return False
    if not fut.done():
        fut.set_result(value)
    return True


@dataclass(eq=False)
class ClassicGroup:
    """A classic group's state (Kafka: ClassicGroup)."""

    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    current_state_timestamp: int | None = None
    previous_state: GroupState = GroupState.DEAD
    members: dict[str, Member] = field(default_factory=dict)  # insertion ordered, like Kafka's LinkedHashMap
    static_members: dict[str, str] = field(default_factory=dict)  # group.instance.id -> member id
    pending_join_members: set[str] = field(default_factory=set)
    pending_sync_members: set[str] = field(default_factory=set)
    supported_protocols: dict[str, int] = field(default_factory=dict)  # protocol name -> #members
    new_member_added: bool = False
    subscribed_topics: set[str] | None = None

    # -- queries ---------------------------------------------------------------------------
    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    @property
    def is_empty(self) -> bool:
        return self.state is GroupState.EMPTY

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_join_members

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.is_awaiting_join)

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join() and not self.pending_join_members

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def is_subscribed_to_topic(self, topic: str) -> bool:
        if self.subscribed_topics is not None:
            return topic in self.subscribed_topics
        # Unknown subscription: a consumer group must be assumed subscribed (Kafka: same default).
        return self.uses_consumer_protocol()

    # -- membership ------------------------------------------------------------------------
    def generate_member_id(self, client_id: str | None, group_instance_id: str | None) -> str:
        prefix = group_instance_id if group_instance_id is not None else (client_id or "")
        return f"{prefix}-{uuid.uuid4()}"

    def add(self, member: Member, awaiting_join: asyncio.Future[JoinGroupResponse] | None = None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise ValueError(f"static member {member.group_instance_id} is already in group {self.group_id}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.protocol_type != member.protocol_type:
            raise ValueError("the group and member's protocol type must be the same")
        if not self.supports_protocols(member.protocol_type, member.protocol_names()):
            raise ValueError("none of the member's protocols can be supported")
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._count_protocols(member, +1)
        member.awaiting_join = awaiting_join
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._count_protocols(member, -1)
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return member

    def update_member(self, member: Member, protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
                      session_timeout_ms: int, awaiting_join: asyncio.Future[JoinGroupResponse] | None) -> None:
        self._count_protocols(member, -1)
        member.protocols = protocols
        self._count_protocols(member, +1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.awaiting_join = awaiting_join

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str,
                              fenced_join: JoinGroupResponse | None,
                              fenced_sync: SyncGroupResponse | None) -> Member:
        """A static member rejoined with an unknown member id: it takes over the old member's slot,
        and whoever still waits under the old id is fenced (FENCED_INSTANCE_ID)."""
        old = self.members.pop(old_member_id, None)
        if old is None:
            raise ValueError(f"cannot replace non-existing member id {old_member_id}")
        # None only when undoing a replacement (classic_group_join.py), whose member waits on nothing
        if fenced_join is not None:
            self.complete_join(old, fenced_join)
        if fenced_sync is not None:
            self.complete_sync(old, fenced_sync)
        new = Member(new_member_id, old.group_instance_id, old.client_id, old.client_host,
                     old.rebalance_timeout_ms, old.session_timeout_ms, old.protocol_type,
                     list(old.protocols), old.assignment)
        self.members[new_member_id] = new
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        self.pending_sync_members.discard(old_member_id)
        return new

    def add_pending_member(self, member_id: str) -> None:
        if member_id in self.members:
            raise ValueError(f"{member_id} is already a member of group {self.group_id}")
        self.pending_join_members.add(member_id)

    def static_member_id(self, group_instance_id: str) -> str | None:
        return self.static_members.get(group_instance_id)

    def validate_member(self, member_id: str, group_instance_id: str | None) -> None:
        """Kafka's ClassicGroup.validateMember: the instance id must map to this member id."""
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
            if existing != member_id:
                raise KafkaError(ErrorCode.FENCED_INSTANCE_ID)
        if member_id not in self.members:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)

    def maybe_elect_new_joined_leader(self) -> bool:
        """If the leader did not rejoin, promote a member that did; False if none did."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.is_awaiting_join:
            return True
        for m in self.members.values():
            if m.is_awaiting_join:
                self.leader_id = m.member_id
                return True
        return False

    def complete_join(self, member: Member, response: JoinGroupResponse) -> bool:
        fut, member.awaiting_join = member.awaiting_join, None
        return _complete(fut, response)

    def complete_sync(self, member: Member, response: SyncGroupResponse) -> bool:
        fut, member.awaiting_sync = member.awaiting_sync, None
        return _complete(fut, response)

    # -- protocols -------------------------------------------------------------------------
    def _count_protocols(self, member: Member, delta: int) -> None:
        for name in member.protocol_names():
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + delta

    def supports_protocols(self, protocol_type: str, names: Iterable[str]) -> bool:
        names = set(names)
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        n = len(self.members)
        return (self.protocol_type == protocol_type
                and any(self.supported_protocols.get(name, 0) == n for name in names))

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol that every member supports."""
        if not self.members:
            raise ValueError("cannot select a protocol for an empty group")
        n = len(self.members)
        candidates = {name for name, count in self.supported_protocols.items() if count == n}
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes.items(), key=lambda kv: kv[1])[0]

    def compute_subscribed_topics(self) -> set[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for m in self.members.values():
                topics.update(subscription_topics(m.metadata(self.protocol_name)))
        except ValueError:
            return None  # unparseable subscription: treat as unknown, like Kafka
        return topics

    # -- transitions -----------------------------------------------------------------------
    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise ValueError(f"group {self.group_id}: illegal transition {self.state.value} -> {state.value}")
        self.previous_state = self.state
        self.state = state
        self.current_state_timestamp = now_ms

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def assignments(self) -> dict[str, bytes]:
        return {m.member_id: m.assignment for m in self.members.values()}
