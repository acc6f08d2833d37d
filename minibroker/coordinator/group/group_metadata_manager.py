"""Classic group membership: the JoinGroup / SyncGroup / Heartbeat / LeaveGroup state machine
(Kafka: the classic-group half of GroupMetadataManager).

Theory of operation:

- JoinGroup (classic_group_join.py) parks the member (a future completed later) and moves the group to
  PreparingRebalance; the join phase completes when every member has rejoined, or when the
  rebalance timeout (the largest member rebalance.timeout.ms) fires and removes the members
  that did not. The first rebalance of an Empty group waits group.initial.rebalance.delay.ms,
  extended while new members keep arriving. Completing the join starts a new generation,
  picks the protocol all members support, and answers everyone; only the leader gets the
  member list with metadata and computes the assignment.
- SyncGroup from the leader carries the assignment. It is written to __consumer_offsets as a
  GroupMetadata record, then handed to every member parked in SyncGroup; the group is Stable.
- Heartbeats push back each member's session deadline. A member that misses it is removed and
  the group rebalances; so are members that do not send SyncGroup within the rebalance timeout.

Deadlines are loop timers keyed by group and member (runtime/keyed_timer.py). Records are
appended synchronously (`write_records`), so an operation and its write are never interleaved
with another operation. The answers' shapes are built in group_responses.py.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from minibroker.coordinator.group.classic_group import (
    EMPTY_ASSIGNMENT,
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    ClientInfo,
    GroupState,
    Member,
)
from minibroker.coordinator.group.classic_group_join import ClassicGroupJoin
from minibroker.coordinator.group.group_coordinator_config import GroupConfig
from minibroker.coordinator.group.group_events import GroupEvents
from minibroker.coordinator.group.group_responses import (
    MemberResponse,
    join_error,
    join_response,
    sync_error,
    sync_response,
)
from minibroker.coordinator.group.records import GroupMetadataRecord, group_metadata_record
from minibroker.coordinator.runtime.coordinator_store import CoordinatorStore
from minibroker.coordinator.runtime.keyed_timer import KeyedTimer
from minibroker.coordinator.runtime.partition_writer import CoordinatorRecord
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_storage.clock import Clock

if TYPE_CHECKING:
    from minibroker_protocol.apis.heartbeat import HeartbeatRequest
    from minibroker_protocol.apis.join_group import JoinGroupRequest, JoinGroupResponse
    from minibroker_protocol.apis.leave_group import LeaveGroupRequest, LeaveGroupResponse
    from minibroker_protocol.apis.sync_group import SyncGroupRequest, SyncGroupResponse
    from minibroker_protocol.coordinator_records import GroupMetadataValue

log = logging.getLogger("minibroker.coordinator.group")


def append_error_to_response_error(code: int) -> int:
    """Kafka: GroupMetadataManager.appendGroupMetadataErrorToResponseError."""
    if code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                ErrorCode.REQUEST_TIMED_OUT):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return code

def write_records(store: CoordinatorStore, group_id: str, records: list[CoordinatorRecord], producer_id: int = -1,
                  producer_epoch: int = -1) -> None:
    """Append records to the group's __consumer_offsets partition; KafkaError (with the code a
    client of the group APIs expects) on failure."""
    if not records:
        return
    try:
        if producer_id >= 0:
            store.append(group_id, records, producer_id=producer_id, producer_epoch=producer_epoch)
        else:
            store.append(group_id, records)
    except KafkaError as e:
        raise KafkaError(append_error_to_response_error(e.code), e.message) from None
    except OSError as e:
        log.error("writing to __consumer_offsets for group %s failed: %s", group_id, e)
        raise KafkaError(ErrorCode.NOT_COORDINATOR, str(e)) from None


def classic_group_of(group_id: str, v: GroupMetadataValue) -> ClassicGroup:
    """The classic group a GroupMetadataValue describes (Kafka: ClassicGroup.fromRecord): Stable
    with its members and their assignments, or Empty."""
    group = ClassicGroup(
        group_id, generation_id=v.generation, protocol_type=v.protocol_type or None,
        protocol_name=v.protocol, leader_id=v.leader,
        current_state_timestamp=None if v.current_state_timestamp == -1 else v.current_state_timestamp,
    )
    # A record with members always names the chosen protocol (it is written once one is); the
    # null protocol belongs to an empty group, which has no member to give it to.
    protocol = v.protocol or ""
    for mm in v.members:
        member = Member(mm.member_id, mm.group_instance_id, mm.client_id, mm.client_host,
                        mm.rebalance_timeout if mm.rebalance_timeout != -1 else mm.session_timeout,
                        mm.session_timeout, v.protocol_type, [(protocol, bytes(mm.subscription))],
                        bytes(mm.assignment))
        group.add(member)
    group.leader_id = v.leader if v.leader in group.members else group.leader_id
    group.state = GroupState.STABLE if group.members else GroupState.EMPTY
    group.subscribed_topics = group.compute_subscribed_topics()
    return group


class GroupMetadataManager:
    """Every classic group's membership, generations and member sessions."""

    def __init__(self, config: GroupConfig, store: CoordinatorStore, *, now_ms: Clock) -> None:
        self.config = config
        self.store = store
        self.now_ms = now_ms
        self.groups: dict[str, ClassicGroup] = {}
        self.timer = KeyedTimer()
        self.active = False
        self.events = GroupEvents(now_ms)  # the rebalance timeline; the coordinator shares one
        self.joins = ClassicGroupJoin(self)

    def unload(self) -> None:
        """Stop every timer; members parked in JoinGroup/SyncGroup retry against the next
        coordinator (Kafka does the same when a coordinator partition is unloaded)."""
        self.timer.cancel_all()
        for group in self.groups.values():
            for member in group.members.values():
                group.complete_join(member, join_error(member.member_id, ErrorCode.NOT_COORDINATOR))
                group.complete_sync(member, sync_error(ErrorCode.NOT_COORDINATOR))

    def start_sessions(self) -> None:
        """After loading: every member gets a fresh session timeout."""
        for group in self.groups.values():
            for member in group.members.values():
                self.reschedule_heartbeat(group, member)

    def replay_group(self, rec: GroupMetadataRecord) -> None:
        if rec.value is None:
            group = self.groups.pop(rec.group, None)
            if group is not None:
                group.state = GroupState.DEAD
            return
        group = classic_group_of(rec.group, rec.value)
        old = self.groups.get(rec.group)
        if old is not None:
            old.state = GroupState.DEAD
        self.groups[rec.group] = group

    def write_group_metadata(self, group: ClassicGroup, assignment: dict[str, bytes]) -> None:
        write_records(self.store, group.group_id, [group_metadata_record(group, assignment)])

    def drop_group(self, group: ClassicGroup) -> None:
        gid = group.group_id
        for mid in list(group.pending_join_members):
            self.cancel_heartbeat(gid, mid)
        self.timer.cancel(("join", gid))
        self.timer.cancel(("sync", gid))
        group.transition_to(GroupState.DEAD, self.now_ms())
        self.groups.pop(gid, None)
        self.events.record(gid, "Dead", group.generation_id, "group removed")

    # -- online migration (group_migration.py) ---------------------------------------------
    def hand_over(self, group: ClassicGroup) -> None:
        """The group becomes a consumer group: members parked in a rebalance are told to rejoin
        (REBALANCE_IN_PROGRESS, Kafka: convertToConsumerGroup) and its timers stop."""
        for member in list(group.members.values()):
            group.complete_join(member, join_error(member.member_id, ErrorCode.REBALANCE_IN_PROGRESS))
            group.complete_sync(member, sync_error(ErrorCode.REBALANCE_IN_PROGRESS))
            self.cancel_heartbeat(group.group_id, member.member_id)
        self.drop_group(group)

    def take_over(self, group: ClassicGroup, reason: str | None) -> None:
        """A consumer group came back as this classic group: fresh sessions, then a rebalance
        when there is a reason for one (Kafka: convertToClassicGroup)."""
        self.groups[group.group_id] = group
        for member in group.members.values():
            self.reschedule_heartbeat(group, member)
        if reason is not None:
            self.prepare_rebalance(group, reason)

    @staticmethod
    def heartbeat_key(group_id: str, member_id: str) -> tuple[str, str, str]:
        return ("heartbeat", group_id, member_id)

    def reschedule_heartbeat(self, group: ClassicGroup, member: Member, timeout_ms: int | None = None) -> None:
        gid, mid = group.group_id, member.member_id
        self.timer.schedule(self.heartbeat_key(gid, mid),
                            member.session_timeout_ms if timeout_ms is None else timeout_ms,
                            lambda: self.expire_heartbeat(gid, mid))

    def cancel_heartbeat(self, group_id: str, member_id: str) -> None:
        self.timer.cancel(self.heartbeat_key(group_id, member_id))

    def expire_heartbeat(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return
        if group.is_pending_member(member_id):
            log.info("Pending member %s in group %s has been removed after session timeout expiration.",
                     member_id, group_id)
            group.remove(member_id)
            if group.is_in(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
                self._complete_join(group)
            return
        member = group.members.get(member_id)
        if member is not None and not member.has_satisfied_heartbeat():
            log.info("Member %s in group %s has failed, removing it from the group.", member_id, group_id)
            self._remove_member_and_update_group(group, member,
                                                 f"removing member {member_id} on heartbeat expiration")

    # ----------------------------------------------------------------------------- JoinGroup
    def join_group(self, req: JoinGroupRequest, client: ClientInfo) -> asyncio.Future[JoinGroupResponse]:
        """Handle JoinGroup (classic_group_join.py); the future resolves to the JoinGroup response."""
        return self.joins.join_group(req, client)

    # ------------------------------------------------------------------------- rebalancing
    def maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, reason: str) -> None:
        if group.can_rebalance():
            self.prepare_rebalance(group, reason)
        else:
            self.maybe_complete_join_phase(group)

    def maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        if (group.is_in(GroupState.PREPARING_REBALANCE) and group.previous_state is not GroupState.EMPTY
                and group.has_all_members_joined()):
            self._complete_join(group)

    def prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self._remove_sync_expiration(group)
        initial = group.is_in(GroupState.EMPTY)
        gid = group.group_id
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self.timer.schedule(("join", gid), delay,
                                lambda: self._try_complete_initial_rebalance(gid, delay, remaining))
        group.transition_to(GroupState.PREPARING_REBALANCE, self.now_ms())
        self.events.record(gid, "PreparingRebalance", group.generation_id, "%s", reason)
        log.info("Preparing to rebalance group %s in state %s with old generation %d (reason: %s).",
                 gid, group.state.value, group.generation_id, reason)
        if not initial:
            if group.has_all_members_joined():
                self._complete_join(group)
            else:
                self.timer.schedule(("join", gid), group.rebalance_timeout_ms(),
                                    lambda: self._complete_join_by_id(gid))

    def _try_complete_initial_rebalance(self, group_id: str, delay_ms: int, remaining_ms: int) -> None:
        group = self.groups.get(group_id)
        if group is None or not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        if group.new_member_added and remaining_ms != 0:
            group.new_member_added = False
            new_delay = min(self.config.initial_rebalance_delay_ms, remaining_ms)
            new_remaining = max(remaining_ms - delay_ms, 0)
            self.timer.schedule(("join", group_id), new_delay,
                                lambda: self._try_complete_initial_rebalance(group_id, new_delay, new_remaining))
        else:
            self._complete_join(group)

    def _complete_join_by_id(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None:
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        gid = group.group_id
        self.timer.cancel(("join", gid))
        if not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        gone = [m for m in group.not_yet_rejoined() if not m.is_static]
        for m in gone:
            group.remove(m.member_id)
            self.cancel_heartbeat(gid, m.member_id)
        if gone:
            log.info("Group %s removed dynamic members who haven't joined: %s", gid, [m.member_id for m in gone])
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait another rebalance timeout for session expiry to clear them.
            log.error("Group %s could not complete rebalance because no members rejoined.", gid)
            self.timer.schedule(("join", gid), group.rebalance_timeout_ms(), lambda: self._complete_join_by_id(gid))
            return
        group.init_next_generation(self.now_ms())
        self.events.record(gid, "CompletingRebalance" if group.members else "Empty", group.generation_id,
                           "generation %d, protocol %s, leader %s, %d member(s)", group.generation_id,
                           group.protocol_name, group.leader_id, len(group.members))
        if group.is_in(GroupState.EMPTY):
            log.info("Group %s with generation %d is now empty.", gid, group.generation_id)
            try:
                self.write_group_metadata(group, {})
            except KafkaError as e:
                # Safe to go on: an empty generation has nobody to confuse (Kafka: same choice).
                log.warning("Failed to write empty metadata for group %s: %s", gid, e)
            return
        log.info("Stabilized group %s generation %d (%s) with %d members.", gid, group.generation_id,
                 group.protocol_name, len(group.members))
        for member in list(group.members.values()):
            resp = join_response(group, member.member_id, with_members=group.is_leader(member.member_id))
            group.complete_join(member, resp)
            self.reschedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        generation = group.generation_id
        self.timer.schedule(("sync", gid), group.rebalance_timeout_ms(),
                            lambda: self._expire_pending_sync(gid, generation))

    def _remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self.timer.cancel(("sync", group.group_id))

    def _expire_pending_sync(self, group_id: str, generation_id: int) -> None:
        group = self.groups.get(group_id)
        if group is None or generation_id != group.generation_id:
            return
        if group.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE) and group.pending_sync_members:
            missing = sorted(group.pending_sync_members)
            for member_id in missing:
                group.remove(member_id)
                self.cancel_heartbeat(group_id, member_id)
            log.info("Group %s removed members who haven't sent their sync requests: %s", group_id, missing)
            self.prepare_rebalance(group, f"removing {missing} on pending sync request expiration")

    def _remove_member_and_update_group(self, group: ClassicGroup, member: Member, reason: str) -> None:
        self.events.record(group.group_id, "MemberRemoved", group.generation_id, "%s", reason)
        # A member still parked in JoinGroup gets UNKNOWN_MEMBER_ID, so a live client rejoins.
        group.complete_join(member, join_error(UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        self.cancel_heartbeat(group.group_id, member.member_id)
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self.maybe_prepare_rebalance_or_complete_join(group, reason)
        elif group.is_in(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
            self._complete_join(group)

    def _reset_and_propagate_assignment_error(self, group: ClassicGroup, error: int) -> None:
        for m in group.members.values():
            m.assignment = EMPTY_ASSIGNMENT
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: ClassicGroup, error: int) -> None:
        for member in list(group.members.values()):
            if group.complete_sync(member, sync_response(group, member.assignment, error)):
                # The session clock restarts once the member has its assignment.
                self.reschedule_heartbeat(group, member)

    # ----------------------------------------------------------------------------- SyncGroup
    def sync_group(self, req: SyncGroupRequest) -> asyncio.Future[SyncGroupResponse]:
        """Handle SyncGroup; followers wait for the leader's assignment."""
        fut: asyncio.Future[SyncGroupResponse] = asyncio.get_running_loop().create_future()
        try:
            self._sync(req, fut)
        except KafkaError as e:
            if not fut.done():
                fut.set_result(sync_error(e.code))
        return fut

    def _sync(self, req: SyncGroupRequest, fut: asyncio.Future[SyncGroupResponse]) -> None:
        if not self.active:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if not req.group_id:
            raise KafkaError(ErrorCode.INVALID_GROUP_ID)
        group = self.groups.get(req.group_id)
        if group is None or group.is_in(GroupState.EMPTY):
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_in(GroupState.DEAD):
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        group.validate_member(req.member_id, req.group_instance_id)
        if req.generation_id != group.generation_id:
            raise KafkaError(ErrorCode.ILLEGAL_GENERATION)
        if ((req.protocol_type is not None and req.protocol_type != group.protocol_type)
                or (req.protocol_name is not None and req.protocol_name != group.protocol_name)):
            raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        member = group.members[req.member_id]
        if group.is_in(GroupState.PREPARING_REBALANCE):
            raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS)
        if group.is_in(GroupState.STABLE):
            self._remove_pending_sync_member(group, req.member_id)
            fut.set_result(sync_response(group, member.assignment))
            return
        # CompletingRebalance: park until the leader's assignment is stored.
        if member.awaiting_sync is not None and member.awaiting_sync is not fut:
            group.complete_sync(member, sync_error(ErrorCode.REBALANCE_IN_PROGRESS))
        member.awaiting_sync = fut
        self._remove_pending_sync_member(group, req.member_id)
        if not group.is_leader(req.member_id):
            return
        assignment: dict[str, bytes] = {a.member_id: bytes(a.assignment) for a in req.assignments}
        missing = [mid for mid in group.members if mid not in assignment]
        for mid in missing:
            assignment[mid] = EMPTY_ASSIGNMENT
        if missing:
            log.warning("Setting empty assignments for members %s of %s for generation %d.",
                        missing, group.group_id, group.generation_id)
        log.info("Assignment received from leader %s for group %s for generation %d. The group has %d members.",
                 req.member_id, group.group_id, group.generation_id, len(group.members))
        try:
            self.write_group_metadata(group, assignment)
        except KafkaError as e:
            self._reset_and_propagate_assignment_error(group, e.code)
            self.maybe_prepare_rebalance_or_complete_join(group, f"error {e} storing the group assignment")
            return
        for m in group.members.values():
            m.assignment = assignment.get(m.member_id, EMPTY_ASSIGNMENT)
        self._propagate_assignment(group, ErrorCode.NONE)
        group.transition_to(GroupState.STABLE, self.now_ms())
        self.events.record(group.group_id, "Stable", group.generation_id, "assignment from leader %s for %d member(s)",
                           req.member_id, len(group.members))

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self.timer.cancel(("sync", group.group_id))

    # ----------------------------------------------------------------------------- Heartbeat
    def heartbeat(self, req: HeartbeatRequest) -> int:
        """Handle Heartbeat; returns the error code."""
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if not req.group_id:
            return ErrorCode.INVALID_GROUP_ID
        group = self.groups.get(req.group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        try:
            group.validate_member(req.member_id, req.group_instance_id)
        except KafkaError as e:
            return e.code
        if req.generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.is_in(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self.reschedule_heartbeat(group, group.members[req.member_id])
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # ---------------------------------------------------------------------------- LeaveGroup
    def leave_group(self, group_id: str, members: list[LeaveGroupRequest.MemberIdentity]
                    ) -> tuple[int, list[LeaveGroupResponse.MemberResponse]]:
        """Handle LeaveGroup for `members` (MemberIdentity objects: member_id, group_instance_id,
        reason); returns (top-level error, per-member responses)."""
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, [MemberResponse(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                       error_code=ErrorCode.UNKNOWN_MEMBER_ID) for m in members]
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        responses = []
        left = []
        for ident in members:
            mid, iid = ident.member_id, ident.group_instance_id
            reason = ident.reason or "not provided"
            error = ErrorCode.NONE
            if mid == UNKNOWN_MEMBER_ID:
                # Administrative removal of a static member by its instance id (KIP-345).
                static_id = group.static_member_id(iid) if iid is not None else None
                if static_id is not None:
                    self._remove_current_member(group, static_id, reason)
                    left.append(static_id)
                else:
                    error = ErrorCode.UNKNOWN_MEMBER_ID
            elif group.is_pending_member(mid):
                group.remove(mid)
                self.cancel_heartbeat(group_id, mid)
                log.info("Pending member %s has left group %s through explicit LeaveGroup; client reason: %s",
                         mid, group_id, reason)
            else:
                try:
                    group.validate_member(mid, iid)
                    self._remove_current_member(group, mid, reason)
                    left.append(mid)
                except KafkaError as e:
                    error = ErrorCode(e.code)
            responses.append(MemberResponse(member_id=mid, group_instance_id=iid, error_code=error))
        if any(r.error_code == ErrorCode.NONE for r in responses):
            if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                self.maybe_prepare_rebalance_or_complete_join(
                    group, f"explicit LeaveGroup request for ({', '.join(left)}) members")
            elif group.is_in(GroupState.PREPARING_REBALANCE):
                self.maybe_complete_join_phase(group)
        return ErrorCode.NONE, responses

    def _remove_current_member(self, group: ClassicGroup, member_id: str, reason: str) -> None:
        member = group.members[member_id]
        self.cancel_heartbeat(group.group_id, member_id)
        log.info("Member %s has left group %s through explicit LeaveGroup request; client reason: %s",
                 member_id, group.group_id, reason)
        self.events.record(group.group_id, "MemberLeft", group.generation_id, "%s (LeaveGroup; reason: %s)",
                           member_id, reason)
        group.complete_join(member, join_error(UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member_id)
