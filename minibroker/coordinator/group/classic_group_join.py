"""JoinGroup of a classic group (Kafka: GroupMetadataManager.classicGroupJoin and the methods it
calls: new member, existing member, static member, add/update then rebalance or complete join).

Theory of operation: a JoinGroup parks the member (a future completed later by the manager when
the join phase completes) and moves the group to PreparingRebalance, or answers at once when the
group can complete its join. A new member without an id is first given one and told to rejoin
(MEMBER_ID_REQUIRED, KIP-394) and waits in `pending_join_members` for that; a static member
(group.instance.id, KIP-345) that comes back under a new id replaces the old one, keeping its
assignment when the group is stable. The rebalancing itself (the timers, completing the join,
the sync phase) is the GroupMetadataManager's; this class only decides what a JoinGroup does.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Protocol

from minibroker.coordinator.group.classic_group import (
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    ClientInfo,
    GroupState,
    Member,
)
from minibroker.coordinator.group.group_coordinator_config import GroupConfig
from minibroker.coordinator.group.group_events import GroupEvents
from minibroker.coordinator.group.group_responses import JoinResponse, join_error, join_response, sync_error
from minibroker.coordinator.group.group_responses import protocols as request_protocols
from minibroker.coordinator.runtime.keyed_timer import KeyedTimer
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_storage.clock import Clock

if TYPE_CHECKING:
    from minibroker_protocol.apis.join_group import JoinGroupRequest, JoinGroupResponse

    JoinFuture = asyncio.Future[JoinGroupResponse]

log = logging.getLogger("minibroker.coordinator.group")


class ClassicGroupRebalancing(Protocol):
    """What a JoinGroup uses of the GroupMetadataManager: its groups, their member sessions and
    the rebalance it starts or completes."""

    active: bool
    config: GroupConfig
    groups: dict[str, ClassicGroup]
    events: GroupEvents
    timer: KeyedTimer
    now_ms: Clock

    def heartbeat_key(self, group_id: str, member_id: str) -> tuple[str, str, str]: ...
    def reschedule_heartbeat(self, group: ClassicGroup, member: Member, timeout_ms: int | None = None) -> None: ...
    def cancel_heartbeat(self, group_id: str, member_id: str) -> None: ...
    def expire_heartbeat(self, group_id: str, member_id: str) -> None: ...
    def maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, reason: str) -> None: ...
    def maybe_complete_join_phase(self, group: ClassicGroup) -> None: ...
    def prepare_rebalance(self, group: ClassicGroup, reason: str) -> None: ...
    def write_group_metadata(self, group: ClassicGroup, assignment: dict[str, bytes]) -> None: ...


class ClassicGroupJoin:
    """What a JoinGroup does to the classic groups of one GroupMetadataManager."""

    def __init__(self, manager: ClassicGroupRebalancing) -> None:
        self.manager = manager

    def join_group(self, req: JoinGroupRequest, client: ClientInfo) -> JoinFuture:
        """Handle JoinGroup; the future resolves to the JoinGroup response (maybe much later).

        `req.rebalance_timeout_ms` must already be set (v0 has none: the handler uses the
        session timeout, as Kafka does)."""
        fut: JoinFuture = asyncio.get_running_loop().create_future()
        try:
            self._join(req, client, fut)
        except KafkaError as e:
            if not fut.done():
                fut.set_result(join_error(req.member_id, e.code))
        return fut

    def _join(self, req: JoinGroupRequest, client: ClientInfo, fut: JoinFuture) -> None:
        if not self.manager.active:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if not req.group_id:
            raise KafkaError(ErrorCode.INVALID_GROUP_ID)
        if not (self.manager.config.min_session_timeout_ms <= req.session_timeout_ms <= self.manager.config.max_session_timeout_ms):
            raise KafkaError(ErrorCode.INVALID_SESSION_TIMEOUT)
        is_unknown = req.member_id == UNKNOWN_MEMBER_ID
        group = self.manager.groups.get(req.group_id)
        if group is None:
            if not is_unknown:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
            group = ClassicGroup(req.group_id, current_state_timestamp=self.manager.now_ms())
            self.manager.groups[req.group_id] = group
            try:
                # Kafka commits a new group to the log with an empty GroupMetadata record.
                self.manager.write_group_metadata(group, {})
            except KafkaError:
                del self.manager.groups[req.group_id]
                raise
        if not self._accept_joining_member(group, req.member_id):
            group.remove(req.member_id)
            fut.set_result(join_error(UNKNOWN_MEMBER_ID, ErrorCode.GROUP_MAX_SIZE_REACHED))
        elif is_unknown:
            self._join_new_member(group, req, client, fut)
        else:
            self._join_existing_member(group, req, client, fut)

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        if group.is_in(GroupState.EMPTY, GroupState.DEAD):
            return True
        if group.is_in(GroupState.PREPARING_REBALANCE):
            # Counting the members already parked lets the last rejoining ones be refused when
            # group.max.size was lowered (Kafka: acceptJoiningMember).
            m = group.members.get(member_id)
            return (m is not None and m.is_awaiting_join) or group.num_awaiting_join() < self.manager.config.max_size
        return member_id in group.members or len(group.members) < self.manager.config.max_size

    def _join_new_member(self, group: ClassicGroup, req: JoinGroupRequest, client: ClientInfo,
                         fut: JoinFuture) -> None:
        if group.is_in(GroupState.DEAD):
            fut.set_result(join_error(UNKNOWN_MEMBER_ID, ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        protocols = request_protocols(req)
        if not group.supports_protocols(req.protocol_type, {n for n, _ in protocols}):
            fut.set_result(join_error(UNKNOWN_MEMBER_ID, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        instance_id = req.group_instance_id
        new_member_id = group.generate_member_id(client.client_id, instance_id)
        if instance_id is not None:
            existing = group.static_member_id(instance_id)
            if existing is not None:
                log.info("Static member with groupInstanceId=%s and unknown member id joins group %s in %s "
                         "state. Replacing previously mapped member %s with this groupInstanceId.",
                         instance_id, group.group_id, group.state.value, existing)
                self._update_static_member_and_rebalance(group, req, client, instance_id, existing, new_member_id,
                                                         fut)
            else:
                self._add_member_and_rebalance(group, req, client, new_member_id, fut)
        elif client.api_version >= 4:
            # KIP-394: hand out the member id first; the member rejoins with it. Until then it is
            # pending, and it is forgotten if it does not come back within its session timeout.
            group.add_pending_member(new_member_id)
            gid = group.group_id
            self.manager.timer.schedule(self.manager.heartbeat_key(gid, new_member_id), req.session_timeout_ms,
                                lambda: self.manager.expire_heartbeat(gid, new_member_id))
            fut.set_result(join_error(new_member_id, ErrorCode.MEMBER_ID_REQUIRED))
        else:
            self._add_member_and_rebalance(group, req, client, new_member_id, fut)

    def _join_existing_member(self, group: ClassicGroup, req: JoinGroupRequest, client: ClientInfo,
                              fut: JoinFuture) -> None:
        member_id = req.member_id
        protocols = request_protocols(req)
        if group.is_in(GroupState.DEAD):
            fut.set_result(join_error(member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(req.protocol_type, {n for n, _ in protocols}):
            fut.set_result(join_error(member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        if group.is_pending_member(member_id):
            if req.group_instance_id is not None:
                raise KafkaError(ErrorCode.INVALID_REQUEST,
                                 "a pending member id cannot be used by a static member")
            log.info("Pending dynamic member with id %s joins group %s in %s state. Adding to the group now.",
                     member_id, group.group_id, group.state.value)
            self._add_member_and_rebalance(group, req, client, member_id, fut)
            return
        group.validate_member(member_id, req.group_instance_id)  # UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID
        member = group.members[member_id]
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._update_member_and_rebalance(group, member, req, fut,
                                              f"member {member_id} is joining group during PreparingRebalance")
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            if member.matches(protocols):
                # The member missed its JoinGroup response: answer again for this generation.
                fut.set_result(join_response(group, member_id, with_members=group.is_leader(member_id)))
            else:
                self._update_member_and_rebalance(group, member, req, fut,
                                                  f"updating metadata for member {member_id}")
        elif group.is_in(GroupState.STABLE):
            if group.is_leader(member_id):
                # The leader rejoins to trigger a rebalance (e.g. the topics' metadata changed).
                self._update_member_and_rebalance(group, member, req, fut,
                                                  f"leader {member_id} re-joining group during Stable")
            elif not member.matches(protocols):
                self._update_member_and_rebalance(group, member, req, fut,
                                                  f"updating metadata for member {member_id}")
            else:
                fut.set_result(join_response(group, member_id, with_members=False))
        else:
            log.warning("Attempt to add rejoining member %s of group %s in unexpected group state %s",
                        member_id, group.group_id, group.state.value)
            fut.set_result(join_error(member_id, ErrorCode.UNKNOWN_MEMBER_ID))

    def _add_member_and_rebalance(self, group: ClassicGroup, req: JoinGroupRequest, client: ClientInfo, member_id: str,
                                  fut: JoinFuture) -> None:
        member = Member(member_id, req.group_instance_id, client.client_id, client.client_host,
                        req.rebalance_timeout_ms, req.session_timeout_ms, req.protocol_type, request_protocols(req),
                        is_new=True)
        if group.is_in(GroupState.PREPARING_REBALANCE) and group.previous_state is GroupState.EMPTY:
            group.new_member_added = True  # lets the initial rebalance wait a little longer
        group.add(member, fut)
        # A new member cannot heartbeat yet (it has no generation); bound its parked JoinGroup by
        # the new-member join timeout so a client that went away does not stall rebalances forever.
        self.manager.reschedule_heartbeat(group, member, self.manager.config.new_member_join_timeout_ms)
        self.manager.events.record(group.group_id, "MemberJoined", group.generation_id, "%s (client %s, %s)", member_id,
                           client.client_id, client.client_host)
        self.manager.maybe_prepare_rebalance_or_complete_join(
            group, f"adding new member {member_id} with group instance id {req.group_instance_id}")

    def _update_member_and_rebalance(self, group: ClassicGroup, member: Member, req: JoinGroupRequest,
                                     fut: JoinFuture, reason: str) -> None:
        if member.awaiting_join is not None and member.awaiting_join is not fut:
            # A second JoinGroup from the same member replaces the first (its connection is gone).
            group.complete_join(member, join_error(member.member_id, ErrorCode.REBALANCE_IN_PROGRESS))
        group.update_member(member, request_protocols(req), req.rebalance_timeout_ms, req.session_timeout_ms, fut)
        self.manager.maybe_prepare_rebalance_or_complete_join(group, reason)

    def _update_static_member_and_rebalance(self, group: ClassicGroup, req: JoinGroupRequest, client: ClientInfo,
                                            instance_id: str, old_member_id: str, new_member_id: str,
                                            fut: JoinFuture) -> None:
        current_leader = group.leader_id
        fenced_join = JoinResponse(error_code=ErrorCode.FENCED_INSTANCE_ID, member_id=old_member_id,
                                   protocol_name=None, leader="", members=[])
        member = group.replace_static_member(instance_id, old_member_id, new_member_id,
                                             fenced_join, sync_error(ErrorCode.FENCED_INSTANCE_ID))
        self.manager.cancel_heartbeat(group.group_id, old_member_id)
        self.manager.reschedule_heartbeat(group, member)
        old_protocols = member.protocols
        old_timeouts = (member.rebalance_timeout_ms, member.session_timeout_ms)
        group.update_member(member, request_protocols(req), req.rebalance_timeout_ms, req.session_timeout_ms, fut)
        if group.is_in(GroupState.STABLE):
            if group.protocol_name == group.select_protocol():
                # Same protocol: no rebalance (KIP-345); persist the new member id and answer
                # with the current generation. A v9+ leader is told to skip the assignment.
                try:
                    self.manager.write_group_metadata(group, group.assignments())
                except KafkaError as e:
                    group.update_member(member, old_protocols, old_timeouts[0], old_timeouts[1], None)
                    old = group.replace_static_member(instance_id, new_member_id, old_member_id,
                                                      None, None)
                    self.manager.cancel_heartbeat(group.group_id, new_member_id)
                    self.manager.reschedule_heartbeat(group, old)
                    fut.set_result(JoinResponse(error_code=e.code, member_id=UNKNOWN_MEMBER_ID,
                                                generation_id=group.generation_id,
                                                protocol_type=group.protocol_type,
                                                protocol_name=group.protocol_name, leader=current_leader or "",
                                                members=[]))
                    return
                if client.api_version >= 9:
                    is_leader = group.is_leader(new_member_id)
                    group.complete_join(member, join_response(group, new_member_id, with_members=is_leader,
                                                                    skip_assignment=is_leader))
                else:
                    resp = join_response(group, new_member_id, with_members=False)
                    resp.leader = current_leader or ""
                    group.complete_join(member, resp)
            else:
                self.manager.maybe_prepare_rebalance_or_complete_join(
                    group, f"static member {new_member_id} joined with a change of protocol")
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            # The leader may already be assigning to the old member id: rebalance again.
            self.manager.prepare_rebalance(group, f"updating metadata for static member {new_member_id}")
        else:
            self.manager.maybe_complete_join_phase(group)
