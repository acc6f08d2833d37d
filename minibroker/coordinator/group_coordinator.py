"""The group coordinator: classic consumer groups and committed offsets.

Theory of operation: one `GroupCoordinator` per broker owns every group (a single broker is the
coordinator of all __consumer_offsets partitions). Its operations follow Kafka's classic protocol
(GroupMetadataManager / OffsetMetadataManager in Kafka's group-coordinator module):

- JoinGroup parks the member (a future completed later) and moves the group to
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
- OffsetCommit writes OffsetCommit records, then updates the offsets cache OffsetFetch reads.
- On start the coordinator replays __consumer_offsets: groups come back with their generation,
  members and assignments (Stable, members given a fresh session timeout), offsets with their
  metadata and leader epochs.

Everything runs on the event loop; deadlines are loop timers keyed by group and member
(coordinator/timer.py). Records are appended synchronously through the storage engine, so an
operation and its write are never interleaved with another operation.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from minibroker.coordinator.group import (
    EMPTY_ASSIGNMENT,
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    GroupState,
    Member,
)
from minibroker.coordinator.records import (
    GroupMetadataRecord,
    OffsetAndMetadata,
    OffsetCommitRecord,
    decode_record,
    group_metadata_record,
    group_metadata_tombstone,
    offset_commit_record,
    offset_commit_tombstone,
)
from minibroker.coordinator.timer import KeyedTimer
from protocol.apis import describe_groups, join_group, leave_group, sync_group
from protocol.errors import ErrorCode, KafkaError

log = logging.getLogger("minibroker.coordinator.group")

JoinResponse = join_group.RESPONSE
SyncResponse = sync_group.RESPONSE

# Kafka's AclOperation codes the GROUP resource supports (READ, DELETE, DESCRIBE,
# DESCRIBE_CONFIGS, ALTER_CONFIGS); with no authorizer every one is allowed.
GROUP_AUTHORIZED_OPERATIONS = sum(1 << op for op in (3, 6, 8, 10, 11))
NO_OFFSET = -1

Record = tuple[bytes, "bytes | None"]


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class GroupConfig:
    """The broker settings the coordinator uses; defaults are Kafka's."""

    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    max_size: int = 2**31 - 1
    # Kafka: GroupCoordinatorConfig.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS (not a broker key).
    new_member_join_timeout_ms: int = 5 * 60 * 1000
    offsets_retention_ms: int = 7 * 24 * 60 * 60 * 1000
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096

    @classmethod
    def from_broker_config(cls, cfg: Any) -> GroupConfig:
        return cls(
            initial_rebalance_delay_ms=cfg.get("group.initial.rebalance.delay.ms"),
            min_session_timeout_ms=cfg.get("group.min.session.timeout.ms"),
            max_session_timeout_ms=cfg.get("group.max.session.timeout.ms"),
            max_size=cfg.get("group.max.size"),
            offsets_retention_ms=cfg.get("offsets.retention.minutes") * 60_000,
            offsets_retention_check_interval_ms=cfg.get("offsets.retention.check.interval.ms"),
            offset_metadata_max_bytes=cfg.get("offset.metadata.max.bytes"),
        )


@dataclass(slots=True)
class ClientInfo:
    """Who sent a request: what members are described with (DescribeGroups)."""

    client_id: str
    client_host: str
    api_version: int


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


def _join_error(member_id: str, code: int) -> Any:
    return JoinResponse(error_code=code, member_id=member_id, generation_id=-1, protocol_name=None,
                        leader="", members=[])


def _sync_error(code: int) -> Any:
    return SyncResponse(error_code=code, assignment=EMPTY_ASSIGNMENT)


def _protocols(req: Any) -> list[tuple[str, bytes]]:
    return [(p.name, bytes(p.metadata)) for p in req.protocols]


class GroupCoordinator:
    """Classic groups and their committed offsets (one per broker)."""

    def __init__(self, config: GroupConfig, store: Any, *, now_ms: Any = wall_clock_ms):
        self.config = config
        self.store = store  # offsets_store.OffsetsStore or anything with append()/load()
        self.now_ms = now_ms
        self.groups: dict[str, ClassicGroup] = {}
        self.offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        # TxnOffsetCommit offsets waiting for their transaction's marker: producer id -> group -> offsets
        self.pending_txn_offsets: dict[int, dict[str, dict[tuple[str, int], OffsetAndMetadata]]] = {}
        self.timer = KeyedTimer()
        self.active = False
        self._expiry_task: asyncio.Task[None] | None = None

    @classmethod
    def from_broker(cls, broker: Any) -> GroupCoordinator:
        from minibroker.coordinator.offsets_store import OffsetsStore

        return cls(GroupConfig.from_broker_config(broker.config), OffsetsStore.from_broker(broker))

    # ----------------------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        self.timer = KeyedTimer(asyncio.get_running_loop())
        self.load()
        self.active = True
        self._expiry_task = asyncio.create_task(self._expire_offsets_periodically(),
                                                name="group-offsets-expiry")

    async def stop(self) -> None:
        self.active = False
        if self._expiry_task is not None:
            self._expiry_task.cancel()
            try:
                await self._expiry_task
            except (asyncio.CancelledError, Exception):
                pass
            self._expiry_task = None
        self.timer.cancel_all()
        # Members parked in JoinGroup/SyncGroup retry against the next coordinator
        # (Kafka does the same when a coordinator partition is unloaded).
        for group in self.groups.values():
            for member in group.members.values():
                group.complete_join(member, _join_error(member.member_id, ErrorCode.NOT_COORDINATOR))
                group.complete_sync(member, _sync_error(ErrorCode.NOT_COORDINATOR))

    def load(self) -> None:
        """Rebuild groups and offsets from __consumer_offsets (Kafka: the coordinator's replay)."""
        loaded = 0
        for key, value in self.store.load():
            try:
                rec = decode_record(key, value)
                if rec is None:
                    continue
                loaded += 1
                if isinstance(rec, OffsetCommitRecord):
                    self._replay_offset(rec)
                elif isinstance(rec, GroupMetadataRecord):
                    self._replay_group(rec)
            except ValueError as e:
                # One unreadable record must not keep the broker from starting; say which.
                log.error("Skipping a __consumer_offsets record while loading: %s", e)
        open_txns = getattr(self.store, "open_transactions", {})
        for pid, held in open_txns.items():  # transactional offsets still waiting for a marker
            for key, value in held:
                try:
                    rec = decode_record(key, value)
                except ValueError as e:
                    log.error("Skipping a transactional __consumer_offsets record while loading: %s", e)
                    continue
                if isinstance(rec, OffsetCommitRecord) and rec.value is not None:
                    if rec.group not in self.groups:  # a simple group, as _replay_offset makes
                        self.groups[rec.group] = ClassicGroup(rec.group, current_state_timestamp=None)
                    self.pending_txn_offsets.setdefault(pid, {}).setdefault(rec.group, {})[
                        (rec.topic, rec.partition)] = rec.value
        for group in self.groups.values():
            for member in group.members.values():
                self._reschedule_heartbeat(group, member)
        if loaded:
            log.info("Loaded %d group(s) and %d committed offset(s) from %d record(s) of __consumer_offsets",
                     len(self.groups), sum(len(o) for o in self.offsets.values()), loaded)

    def _replay_offset(self, rec: OffsetCommitRecord) -> None:
        if rec.value is None:
            offsets = self.offsets.get(rec.group)
            if offsets is not None:
                offsets.pop((rec.topic, rec.partition), None)
                if not offsets:
                    del self.offsets[rec.group]
            return
        if rec.group not in self.groups:
            # Offsets without group metadata belong to a "simple" group (manual assignment).
            self.groups[rec.group] = ClassicGroup(rec.group, current_state_timestamp=None)
        self.offsets.setdefault(rec.group, {})[(rec.topic, rec.partition)] = rec.value

    def _replay_group(self, rec: GroupMetadataRecord) -> None:
        if rec.value is None:
            group = self.groups.pop(rec.group, None)
            if group is not None:
                group.state = GroupState.DEAD
            return
        v = rec.value
        group = ClassicGroup(
            rec.group, generation_id=v.generation, protocol_type=v.protocol_type or None,
            protocol_name=v.protocol, leader_id=v.leader,
            current_state_timestamp=None if v.current_state_timestamp == -1 else v.current_state_timestamp,
        )
        for mm in v.members:
            member = Member(mm.member_id, mm.group_instance_id, mm.client_id, mm.client_host,
                            mm.rebalance_timeout if mm.rebalance_timeout != -1 else mm.session_timeout,
                            mm.session_timeout, v.protocol_type, [(v.protocol, bytes(mm.subscription))],
                            bytes(mm.assignment))
            group.add(member)
        group.leader_id = v.leader if v.leader in group.members else group.leader_id
        group.state = GroupState.STABLE if group.members else GroupState.EMPTY
        group.subscribed_topics = group.compute_subscribed_topics()
        old = self.groups.get(rec.group)
        if old is not None:
            old.state = GroupState.DEAD
        self.groups[rec.group] = group

    # ------------------------------------------------------------------------------- writes
    def _write(self, group_id: str, records: list[Record], producer_id: int = -1, producer_epoch: int = -1) -> None:
        """Append records to the group's __consumer_offsets partition; KafkaError on failure."""
        if not records:
            return
        try:
            if producer_id >= 0:
                self.store.append(group_id, records, producer_id=producer_id, producer_epoch=producer_epoch)
            else:
                self.store.append(group_id, records)
        except KafkaError as e:
            raise KafkaError(append_error_to_response_error(e.code), e.message) from None
        except OSError as e:
            log.error("writing to __consumer_offsets for group %s failed: %s", group_id, e)
            raise KafkaError(ErrorCode.NOT_COORDINATOR, str(e)) from None

    def _write_group_metadata(self, group: ClassicGroup, assignment: dict[str, bytes]) -> None:
        self._write(group.group_id, [group_metadata_record(group, assignment)])

    # ------------------------------------------------------------------------------- timers
    @staticmethod
    def _heartbeat_key(group_id: str, member_id: str) -> tuple[str, str, str]:
        return ("heartbeat", group_id, member_id)

    def _reschedule_heartbeat(self, group: ClassicGroup, member: Member, timeout_ms: int | None = None) -> None:
        gid, mid = group.group_id, member.member_id
        self.timer.schedule(self._heartbeat_key(gid, mid),
                            member.session_timeout_ms if timeout_ms is None else timeout_ms,
                            lambda: self._expire_heartbeat(gid, mid))

    def _cancel_heartbeat(self, group_id: str, member_id: str) -> None:
        self.timer.cancel(self._heartbeat_key(group_id, member_id))

    def _expire_heartbeat(self, group_id: str, member_id: str) -> None:
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
    def join_group(self, req: Any, client: ClientInfo) -> asyncio.Future[Any]:
        """Handle JoinGroup; the future resolves to the JoinGroup response (maybe much later).

        `req.rebalance_timeout_ms` must already be set (v0 has none: the handler uses the
        session timeout, as Kafka does)."""
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        try:
            self._join(req, client, fut)
        except KafkaError as e:
            if not fut.done():
                fut.set_result(_join_error(req.member_id, e.code))
        return fut

    def _join(self, req: Any, client: ClientInfo, fut: asyncio.Future[Any]) -> None:
        if not self.active:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if not req.group_id:
            raise KafkaError(ErrorCode.INVALID_GROUP_ID)
        if not (self.config.min_session_timeout_ms <= req.session_timeout_ms <= self.config.max_session_timeout_ms):
            raise KafkaError(ErrorCode.INVALID_SESSION_TIMEOUT)
        is_unknown = req.member_id == UNKNOWN_MEMBER_ID
        group = self.groups.get(req.group_id)
        if group is None:
            if not is_unknown:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
            group = ClassicGroup(req.group_id, current_state_timestamp=self.now_ms())
            self.groups[req.group_id] = group
            try:
                # Kafka commits a new group to the log with an empty GroupMetadata record.
                self._write_group_metadata(group, {})
            except KafkaError:
                del self.groups[req.group_id]
                raise
        if not self._accept_joining_member(group, req.member_id):
            group.remove(req.member_id)
            fut.set_result(_join_error(UNKNOWN_MEMBER_ID, ErrorCode.GROUP_MAX_SIZE_REACHED))
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
            return (m is not None and m.is_awaiting_join) or group.num_awaiting_join() < self.config.max_size
        return member_id in group.members or len(group.members) < self.config.max_size

    def _join_new_member(self, group: ClassicGroup, req: Any, client: ClientInfo,
                         fut: asyncio.Future[Any]) -> None:
        if group.is_in(GroupState.DEAD):
            fut.set_result(_join_error(UNKNOWN_MEMBER_ID, ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        protocols = _protocols(req)
        if not group.supports_protocols(req.protocol_type, {n for n, _ in protocols}):
            fut.set_result(_join_error(UNKNOWN_MEMBER_ID, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        new_member_id = group.generate_member_id(client.client_id, req.group_instance_id)
        if req.group_instance_id is not None:
            existing = group.static_member_id(req.group_instance_id)
            if existing is not None:
                log.info("Static member with groupInstanceId=%s and unknown member id joins group %s in %s "
                         "state. Replacing previously mapped member %s with this groupInstanceId.",
                         req.group_instance_id, group.group_id, group.state.value, existing)
                self._update_static_member_and_rebalance(group, req, client, existing, new_member_id, fut)
            else:
                self._add_member_and_rebalance(group, req, client, new_member_id, fut)
        elif client.api_version >= 4:
            # KIP-394: hand out the member id first; the member rejoins with it. Until then it is
            # pending, and it is forgotten if it does not come back within its session timeout.
            group.add_pending_member(new_member_id)
            gid = group.group_id
            self.timer.schedule(self._heartbeat_key(gid, new_member_id), req.session_timeout_ms,
                                lambda: self._expire_heartbeat(gid, new_member_id))
            fut.set_result(_join_error(new_member_id, ErrorCode.MEMBER_ID_REQUIRED))
        else:
            self._add_member_and_rebalance(group, req, client, new_member_id, fut)

    def _join_existing_member(self, group: ClassicGroup, req: Any, client: ClientInfo,
                              fut: asyncio.Future[Any]) -> None:
        member_id = req.member_id
        protocols = _protocols(req)
        if group.is_in(GroupState.DEAD):
            fut.set_result(_join_error(member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(req.protocol_type, {n for n, _ in protocols}):
            fut.set_result(_join_error(member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
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
                fut.set_result(self._join_response(group, member_id, with_members=group.is_leader(member_id)))
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
                fut.set_result(self._join_response(group, member_id, with_members=False))
        else:
            log.warning("Attempt to add rejoining member %s of group %s in unexpected group state %s",
                        member_id, group.group_id, group.state.value)
            fut.set_result(_join_error(member_id, ErrorCode.UNKNOWN_MEMBER_ID))

    def _join_response(self, group: ClassicGroup, member_id: str, *, with_members: bool,
                       skip_assignment: bool = False) -> Any:
        members = []
        if with_members:
            members = [JoinResponse.JoinGroupResponseMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id,
                metadata=m.metadata(group.protocol_name)) for m in group.members.values()]
        return JoinResponse(error_code=0, generation_id=group.generation_id, protocol_type=group.protocol_type,
                            protocol_name=group.protocol_name, leader=group.leader_id or "",
                            skip_assignment=skip_assignment, member_id=member_id, members=members)

    def _add_member_and_rebalance(self, group: ClassicGroup, req: Any, client: ClientInfo, member_id: str,
                                  fut: asyncio.Future[Any]) -> None:
        member = Member(member_id, req.group_instance_id, client.client_id, client.client_host,
                        req.rebalance_timeout_ms, req.session_timeout_ms, req.protocol_type, _protocols(req),
                        is_new=True)
        if group.is_in(GroupState.PREPARING_REBALANCE) and group.previous_state is GroupState.EMPTY:
            group.new_member_added = True  # lets the initial rebalance wait a little longer
        group.add(member, fut)
        # A new member cannot heartbeat yet (it has no generation); bound its parked JoinGroup by
        # the new-member join timeout so a client that went away does not stall rebalances forever.
        self._reschedule_heartbeat(group, member, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance_or_complete_join(
            group, f"adding new member {member_id} with group instance id {req.group_instance_id}")

    def _update_member_and_rebalance(self, group: ClassicGroup, member: Member, req: Any,
                                     fut: asyncio.Future[Any], reason: str) -> None:
        if member.awaiting_join is not None and member.awaiting_join is not fut:
            # A second JoinGroup from the same member replaces the first (its connection is gone).
            group.complete_join(member, _join_error(member.member_id, ErrorCode.REBALANCE_IN_PROGRESS))
        group.update_member(member, _protocols(req), req.rebalance_timeout_ms, req.session_timeout_ms, fut)
        self._maybe_prepare_rebalance_or_complete_join(group, reason)

    def _update_static_member_and_rebalance(self, group: ClassicGroup, req: Any, client: ClientInfo,
                                            old_member_id: str, new_member_id: str,
                                            fut: asyncio.Future[Any]) -> None:
        current_leader = group.leader_id
        fenced_join = JoinResponse(error_code=ErrorCode.FENCED_INSTANCE_ID, member_id=old_member_id,
                                   protocol_name=None, leader="", members=[])
        member = group.replace_static_member(req.group_instance_id, old_member_id, new_member_id,
                                             fenced_join, _sync_error(ErrorCode.FENCED_INSTANCE_ID))
        self._cancel_heartbeat(group.group_id, old_member_id)
        self._reschedule_heartbeat(group, member)
        old_protocols = member.protocols
        old_timeouts = (member.rebalance_timeout_ms, member.session_timeout_ms)
        group.update_member(member, _protocols(req), req.rebalance_timeout_ms, req.session_timeout_ms, fut)
        if group.is_in(GroupState.STABLE):
            if group.protocol_name == group.select_protocol():
                # Same protocol: no rebalance (KIP-345); persist the new member id and answer
                # with the current generation. A v9+ leader is told to skip the assignment.
                try:
                    self._write_group_metadata(group, group.assignments())
                except KafkaError as e:
                    group.update_member(member, old_protocols, old_timeouts[0], old_timeouts[1], None)
                    old = group.replace_static_member(req.group_instance_id, new_member_id, old_member_id,
                                                      None, None)
                    self._cancel_heartbeat(group.group_id, new_member_id)
                    self._reschedule_heartbeat(group, old)
                    fut.set_result(JoinResponse(error_code=e.code, member_id=UNKNOWN_MEMBER_ID,
                                                generation_id=group.generation_id,
                                                protocol_type=group.protocol_type,
                                                protocol_name=group.protocol_name, leader=current_leader or "",
                                                members=[]))
                    return
                if client.api_version >= 9:
                    is_leader = group.is_leader(new_member_id)
                    group.complete_join(member, self._join_response(group, new_member_id, with_members=is_leader,
                                                                    skip_assignment=is_leader))
                else:
                    resp = self._join_response(group, new_member_id, with_members=False)
                    resp.leader = current_leader or ""
                    group.complete_join(member, resp)
            else:
                self._maybe_prepare_rebalance_or_complete_join(
                    group, f"static member {new_member_id} joined with a change of protocol")
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            # The leader may already be assigning to the old member id: rebalance again.
            self._prepare_rebalance(group, f"updating metadata for static member {new_member_id}")
        else:
            self._maybe_complete_join_phase(group)

    # ------------------------------------------------------------------------- rebalancing
    def _maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)
        else:
            self._maybe_complete_join_phase(group)

    def _maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        if (group.is_in(GroupState.PREPARING_REBALANCE) and group.previous_state is not GroupState.EMPTY
                and group.has_all_members_joined()):
            self._complete_join(group)

    def _prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
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
            self._cancel_heartbeat(gid, m.member_id)
        if gone:
            log.info("Group %s removed dynamic members who haven't joined: %s", gid, [m.member_id for m in gone])
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait another rebalance timeout for session expiry to clear them.
            log.error("Group %s could not complete rebalance because no members rejoined.", gid)
            self.timer.schedule(("join", gid), group.rebalance_timeout_ms(), lambda: self._complete_join_by_id(gid))
            return
        group.init_next_generation(self.now_ms())
        if group.is_in(GroupState.EMPTY):
            log.info("Group %s with generation %d is now empty.", gid, group.generation_id)
            try:
                self._write_group_metadata(group, {})
            except KafkaError as e:
                # Safe to go on: an empty generation has nobody to confuse (Kafka: same choice).
                log.warning("Failed to write empty metadata for group %s: %s", gid, e)
            return
        log.info("Stabilized group %s generation %d (%s) with %d members.", gid, group.generation_id,
                 group.protocol_name, len(group.members))
        for member in list(group.members.values()):
            resp = self._join_response(group, member.member_id, with_members=group.is_leader(member.member_id))
            group.complete_join(member, resp)
            self._reschedule_heartbeat(group, member)
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
                self._cancel_heartbeat(group_id, member_id)
            log.info("Group %s removed members who haven't sent their sync requests: %s", group_id, missing)
            self._prepare_rebalance(group, f"removing {missing} on pending sync request expiration")

    def _remove_member_and_update_group(self, group: ClassicGroup, member: Member, reason: str) -> None:
        # A member still parked in JoinGroup gets UNKNOWN_MEMBER_ID, so a live client rejoins.
        group.complete_join(member, _join_error(UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        self._cancel_heartbeat(group.group_id, member.member_id)
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(group, reason)
        elif group.is_in(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
            self._complete_join(group)

    def _reset_and_propagate_assignment_error(self, group: ClassicGroup, error: int) -> None:
        for m in group.members.values():
            m.assignment = EMPTY_ASSIGNMENT
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: ClassicGroup, error: int) -> None:
        ok = error == ErrorCode.NONE
        for member in list(group.members.values()):
            resp = SyncResponse(error_code=error, assignment=member.assignment,
                                protocol_type=group.protocol_type if ok else None,
                                protocol_name=group.protocol_name if ok else None)
            if group.complete_sync(member, resp):
                # The session clock restarts once the member has its assignment.
                self._reschedule_heartbeat(group, member)

    # ----------------------------------------------------------------------------- SyncGroup
    def sync_group(self, req: Any) -> asyncio.Future[Any]:
        """Handle SyncGroup; followers wait for the leader's assignment."""
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        try:
            self._sync(req, fut)
        except KafkaError as e:
            if not fut.done():
                fut.set_result(_sync_error(e.code))
        return fut

    def _sync(self, req: Any, fut: asyncio.Future[Any]) -> None:
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
            fut.set_result(SyncResponse(error_code=0, protocol_type=group.protocol_type,
                                        protocol_name=group.protocol_name, assignment=member.assignment))
            return
        # CompletingRebalance: park until the leader's assignment is stored.
        if member.awaiting_sync is not None and member.awaiting_sync is not fut:
            group.complete_sync(member, _sync_error(ErrorCode.REBALANCE_IN_PROGRESS))
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
            self._write_group_metadata(group, assignment)
        except KafkaError as e:
            self._reset_and_propagate_assignment_error(group, e.code)
            self._maybe_prepare_rebalance_or_complete_join(group, f"error {e} storing the group assignment")
            return
        for m in group.members.values():
            m.assignment = assignment.get(m.member_id, EMPTY_ASSIGNMENT)
        self._propagate_assignment(group, ErrorCode.NONE)
        group.transition_to(GroupState.STABLE, self.now_ms())

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self.timer.cancel(("sync", group.group_id))

    # ----------------------------------------------------------------------------- Heartbeat
    def heartbeat(self, req: Any) -> int:
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
        self._reschedule_heartbeat(group, group.members[req.member_id])
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # ---------------------------------------------------------------------------- LeaveGroup
    def leave_group(self, group_id: str, members: list[Any]) -> tuple[int, list[Any]]:
        """Handle LeaveGroup for `members` (MemberIdentity objects: member_id, group_instance_id,
        reason); returns (top-level error, per-member responses)."""
        MR = leave_group.RESPONSE.MemberResponse
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, [MR(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                       error_code=ErrorCode.UNKNOWN_MEMBER_ID) for m in members]
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        responses = []
        left = []
        for ident in members:
            mid, iid = ident.member_id, ident.group_instance_id
            reason = getattr(ident, "reason", None) or "not provided"
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
                self._cancel_heartbeat(group_id, mid)
                log.info("Pending member %s has left group %s through explicit LeaveGroup; client reason: %s",
                         mid, group_id, reason)
            else:
                try:
                    group.validate_member(mid, iid)
                    self._remove_current_member(group, mid, reason)
                    left.append(mid)
                except KafkaError as e:
                    error = e.code
            responses.append(MR(member_id=mid, group_instance_id=iid, error_code=error))
        if any(r.error_code == ErrorCode.NONE for r in responses):
            if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                self._maybe_prepare_rebalance_or_complete_join(
                    group, f"explicit LeaveGroup request for ({', '.join(left)}) members")
            elif group.is_in(GroupState.PREPARING_REBALANCE):
                self._maybe_complete_join_phase(group)
        return ErrorCode.NONE, responses

    def _remove_current_member(self, group: ClassicGroup, member_id: str, reason: str) -> None:
        member = group.members[member_id]
        self._cancel_heartbeat(group.group_id, member_id)
        log.info("Member %s has left group %s through explicit LeaveGroup request; client reason: %s",
                 member_id, group.group_id, reason)
        group.complete_join(member, _join_error(UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member_id)

    # --------------------------------------------------------------------------- OffsetCommit
    def commit_offsets(self, req: Any, api_version: int, topics: list[Any] | None = None
                       ) -> dict[tuple[str, int], int]:
        """Handle OffsetCommit for `topics` (default: all of the request's); returns the error
        code of every partition."""
        topics = req.topics if topics is None else topics
        requested = [(t.name, p.partition_index) for t in topics for p in t.partitions]

        def all_failed(code: int) -> dict[tuple[str, int], int]:
            return dict.fromkeys(requested, code)

        if not self.active:
            return all_failed(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if req.group_id is None:
            return all_failed(ErrorCode.INVALID_GROUP_ID)
        generation = req.generation_id_or_member_epoch
        group = self.groups.get(req.group_id)
        created = False
        if group is None:
            if generation >= 0:
                return all_failed(ErrorCode.GROUP_ID_NOT_FOUND if api_version >= 9 else ErrorCode.ILLEGAL_GENERATION)
            # A commit without group management creates a "simple" group (Kafka: same).
            group = ClassicGroup(req.group_id, current_state_timestamp=self.now_ms())
            created = True
        try:
            self._validate_offset_commit(group, req.member_id, req.group_instance_id, generation)
        except KafkaError as e:
            return all_failed(e.code)
        if group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            self._reschedule_heartbeat(group, group.members[req.member_id])
        now = self.now_ms()
        retention = getattr(req, "retention_time_ms", -1)
        expire = None if retention == -1 else now + retention
        results: dict[tuple[str, int], int] = {}
        records: list[Record] = []
        staged: list[tuple[str, int, OffsetAndMetadata]] = []
        for t in topics:
            for p in t.partitions:
                metadata = p.committed_metadata
                if metadata is not None and len(metadata) > self.config.offset_metadata_max_bytes:
                    results[(t.name, p.partition_index)] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                    continue
                ts = p.commit_timestamp if p.commit_timestamp != -1 else now
                om = OffsetAndMetadata(p.committed_offset, p.committed_leader_epoch, metadata or "", ts, expire)
                records.append(offset_commit_record(req.group_id, t.name, p.partition_index, om))
                staged.append((t.name, p.partition_index, om))
                results[(t.name, p.partition_index)] = ErrorCode.NONE
        try:
            self._write(req.group_id, records)
        except KafkaError as e:
            return all_failed(e.code)
        if created:
            self.groups[req.group_id] = group
        offsets = self.offsets.setdefault(req.group_id, {}) if staged else self.offsets.get(req.group_id, {})
        for topic, partition, om in staged:
            offsets[(topic, partition)] = om
        return results

    @staticmethod
    def _validate_offset_commit(group: ClassicGroup, member_id: str, group_instance_id: str | None,
                                generation_id: int, transactional: bool = False) -> None:
        """Kafka: ClassicGroup.validateOffsetCommit. Transactional commits (TxnOffsetCommit v0-2
        carry no member) skip the member and rebalance-state checks."""
        if group.is_in(GroupState.DEAD):
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if generation_id < 0 and group.is_in(GroupState.EMPTY):
            return  # admin client or a consumer without group management
        if generation_id >= 0 or member_id or group_instance_id is not None:
            group.validate_member(member_id, group_instance_id)
            if generation_id != group.generation_id:
                raise KafkaError(ErrorCode.ILLEGAL_GENERATION)
        elif not transactional and not group.is_in(GroupState.EMPTY):
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
        if not transactional and group.is_in(GroupState.COMPLETING_REBALANCE):
            # The member has its new generation but not its assignment yet: let it retry after sync.
            raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS)

    # ---------------------------------------------------------------- TxnOffsetCommit (KIP-98)
    def commit_transactional_offsets(self, req: Any) -> dict[tuple[str, int], int]:
        """TxnOffsetCommit (OffsetMetadataManager.commitTransactionalOffset): the offsets are
        written in a transactional batch of the producer and take effect when the transaction
        coordinator writes the COMMIT marker (`complete_transaction`)."""
        requested = [(t.name, p.partition_index) for t in req.topics for p in t.partitions]
        if not self.active:
            return dict.fromkeys(requested, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        group = self.groups.get(req.group_id)
        created = False
        if group is None:
            if req.generation_id >= 0:
                return dict.fromkeys(requested, ErrorCode.ILLEGAL_GENERATION)
            group = ClassicGroup(req.group_id, current_state_timestamp=self.now_ms())
            created = True
        try:
            self._validate_offset_commit(group, req.member_id, req.group_instance_id, req.generation_id,
                                         transactional=True)
        except KafkaError as e:
            return dict.fromkeys(requested, e.code)
        now = self.now_ms()
        results: dict[tuple[str, int], int] = {}
        records: list[Record] = []
        staged: dict[tuple[str, int], OffsetAndMetadata] = {}
        for t in req.topics:
            for p in t.partitions:
                metadata = p.committed_metadata
                if metadata is not None and len(metadata) > self.config.offset_metadata_max_bytes:
                    results[(t.name, p.partition_index)] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                    continue
                om = OffsetAndMetadata(p.committed_offset, p.committed_leader_epoch, metadata or "", now)
                records.append(offset_commit_record(req.group_id, t.name, p.partition_index, om))
                staged[(t.name, p.partition_index)] = om
                results[(t.name, p.partition_index)] = ErrorCode.NONE
        try:
            self._write(req.group_id, records, req.producer_id, req.producer_epoch)
        except KafkaError as e:
            return dict.fromkeys(requested, e.code)
        if created:
            self.groups[req.group_id] = group
        if staged:
            self.pending_txn_offsets.setdefault(req.producer_id, {}).setdefault(req.group_id, {}).update(staged)
        return results

    def complete_transaction(self, producer_id: int, partitions: Iterable[int], committed: bool) -> None:
        """A transaction marker was written to these __consumer_offsets partitions: the pending
        offsets of `producer_id` in them take effect (commit) or are dropped (abort)."""
        held = self.pending_txn_offsets.get(producer_id)
        if not held:
            return
        done = set(partitions)
        for group_id in [g for g in held if self.store.partition_for(g) in done]:
            offsets = held.pop(group_id)
            group = self.groups.get(group_id)
            if committed and group is not None and not group.is_in(GroupState.DEAD):
                self.offsets.setdefault(group_id, {}).update(offsets)
        if not held:
            del self.pending_txn_offsets[producer_id]

    def has_pending_transactional_offsets(self, group_id: str, topic: str, partition: int) -> bool:
        return any((topic, partition) in by_group.get(group_id, {}) for by_group in self.pending_txn_offsets.values())

    # ---------------------------------------------------------------------------- OffsetFetch
    def fetch_offsets(self, group_id: str, topics: list[tuple[str, list[int]]] | None
                      ) -> tuple[int, list[tuple[str, list[tuple[int, OffsetAndMetadata | None]]]]]:
        """Handle OffsetFetch for one group: (group error, [(topic, [(partition, offset or None)])]).
        `topics` None means every partition the group has offsets for."""
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        if group_id is None:
            return ErrorCode.INVALID_GROUP_ID, []
        group = self.groups.get(group_id)
        known = group is not None and not group.is_in(GroupState.DEAD)
        offsets = self.offsets.get(group_id, {}) if known else {}
        if topics is None:
            by_topic: dict[str, list[tuple[int, OffsetAndMetadata | None]]] = {}
            for (topic, partition), om in offsets.items():
                by_topic.setdefault(topic, []).append((partition, om))
            return ErrorCode.NONE, [(t, sorted(ps, key=lambda x: x[0])) for t, ps in by_topic.items()]
        return ErrorCode.NONE, [(t, [(p, offsets.get((t, p))) for p in ps]) for t, ps in topics]

    def committed(self, group_id: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        """The committed offset of one partition (for inspection helpers and tests)."""
        return self.offsets.get(group_id, {}).get((topic, partition))

    # -------------------------------------------------------------------- List/Describe/Delete
    def list_groups(self, states: Iterable[str] = (), types: Iterable[str] = ()) -> list[tuple[str, str, str, str]]:
        """(group id, protocol type, state, type) of each group passing the filters (KIP-518,
        KIP-848: case-insensitive states; the only type served is "classic")."""
        wanted_states = {s.strip().lower() for s in states}
        wanted_types = {t.strip().lower() for t in types}
        out = []
        for g in self.groups.values():
            if g.is_in(GroupState.DEAD):
                continue
            if wanted_states and g.state.value.lower() not in wanted_states:
                continue
            if wanted_types and "classic" not in wanted_types:
                continue
            out.append((g.group_id, g.protocol_type or "", g.state.value, "classic"))
        return out

    def describe_group(self, group_id: str, include_authorized_operations: bool = False) -> Any:
        DG = describe_groups.RESPONSE.DescribedGroup
        DM = describe_groups.RESPONSE.DescribedGroupMember
        ops = GROUP_AUTHORIZED_OPERATIONS if include_authorized_operations else -(1 << 31)
        if not self.active:
            return DG(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, group_id=group_id, group_state="",
                      protocol_type="", protocol_data="", members=[], authorized_operations=ops)
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return DG(error_code=0, group_id=group_id, group_state=GroupState.DEAD.value, protocol_type="",
                      protocol_data="", members=[], authorized_operations=ops)
        stable = group.is_in(GroupState.STABLE)
        members = [
            DM(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
               client_host=m.client_host,
               # Metadata is only meaningful once a protocol is chosen (Kafka: describeNoMetadata).
               member_metadata=m.metadata(group.protocol_name) if stable else b"",
               member_assignment=m.assignment)
            for m in group.members.values()
        ]
        return DG(error_code=0, group_id=group_id, group_state=group.state.value,
                  protocol_type=group.protocol_type or "",
                  protocol_data=(group.protocol_name or "") if stable else "",
                  members=members, authorized_operations=ops)

    def delete_groups(self, group_ids: list[str]) -> list[tuple[str, int]]:
        out = []
        for gid in group_ids:
            if not self.active:
                out.append((gid, ErrorCode.COORDINATOR_NOT_AVAILABLE))
                continue
            group = self.groups.get(gid)
            if group is None or group.is_in(GroupState.DEAD):
                out.append((gid, ErrorCode.GROUP_ID_NOT_FOUND))
                continue
            if group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE):
                out.append((gid, ErrorCode.NON_EMPTY_GROUP))
                continue
            records: list[Record] = [offset_commit_tombstone(gid, t, p) for (t, p) in self.offsets.get(gid, {})]
            records.append(group_metadata_tombstone(gid))
            try:
                self._write(gid, records)
            except KafkaError as e:
                out.append((gid, e.code))
                continue
            self._drop_group(group)
            out.append((gid, ErrorCode.NONE))
        return out

    def _drop_group(self, group: ClassicGroup) -> None:
        gid = group.group_id
        for mid in list(group.pending_join_members):
            self._cancel_heartbeat(gid, mid)
        self.timer.cancel(("join", gid))
        self.timer.cancel(("sync", gid))
        group.transition_to(GroupState.DEAD, self.now_ms())
        self.groups.pop(gid, None)
        self.offsets.pop(gid, None)

    def delete_offsets(self, group_id: str, topics: list[tuple[str, list[int]]]
                       ) -> tuple[int, list[tuple[str, list[tuple[int, int]]]]]:
        """Handle OffsetDelete: (group error, [(topic, [(partition, error)])])."""
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, []
        if not group.is_in(GroupState.EMPTY) and not group.uses_consumer_protocol():
            return ErrorCode.NON_EMPTY_GROUP, []
        offsets = self.offsets.get(group_id, {})
        records: list[Record] = []
        deleted: list[tuple[str, int]] = []
        result = []
        for topic, partitions in topics:
            if group.is_subscribed_to_topic(topic):
                result.append((topic, [(p, int(ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)) for p in partitions]))
                continue
            for p in partitions:
                if (topic, p) in offsets:
                    records.append(offset_commit_tombstone(group_id, topic, p))
                    deleted.append((topic, p))
            result.append((topic, [(p, int(ErrorCode.NONE)) for p in partitions]))
        try:
            self._write(group_id, records)
        except KafkaError as e:
            return e.code, []
        for key in deleted:
            offsets.pop(key, None)
        if not offsets:
            self.offsets.pop(group_id, None)
        return ErrorCode.NONE, result

    def on_partitions_deleted(self, topic: str, partitions: Iterable[int] | None = None) -> int:
        """Drop every group's committed offsets of a deleted topic's partitions (all of them when
        `partitions` is None), with tombstones (Kafka: OffsetMetadataManager.onPartitionsDeleted).
        Returns how many offsets were removed."""
        wanted = None if partitions is None else set(partitions)
        removed = 0
        for gid, offsets in list(self.offsets.items()):
            keys = [(t, p) for (t, p) in offsets if t == topic and (wanted is None or p in wanted)]
            if not keys:
                continue
            try:
                self._write(gid, [offset_commit_tombstone(gid, t, p) for t, p in keys])
            except KafkaError as e:
                log.warning("Failed to delete offsets of %s for group %s: %s", topic, gid, e)
                continue
            for key in keys:
                offsets.pop(key, None)
            if not offsets:
                self.offsets.pop(gid, None)
            removed += len(keys)
        return removed

    # -------------------------------------------------------------------------- expiry
    async def _expire_offsets_periodically(self) -> None:
        interval = self.config.offsets_retention_check_interval_ms / 1000.0
        while True:
            await asyncio.sleep(interval)
            try:
                self.cleanup_group_metadata()
            except Exception:
                log.exception("offset expiration failed")

    def cleanup_group_metadata(self) -> int:
        """Expire offsets past offsets.retention.minutes and delete Empty groups left with none
        (Kafka: GroupMetadataManager.cleanupGroupMetadata). Returns the number of offsets expired."""
        now = self.now_ms()
        expired_total = 0
        for gid, group in list(self.groups.items()):
            offsets = self.offsets.get(gid, {})
            expired = self._expired_offsets(group, offsets, now)
            records: list[Record] = [offset_commit_tombstone(gid, t, p) for (t, p) in expired]
            # An Empty group left without offsets goes (Kafka: maybeDeleteGroup), unless a member id
            # handed out with MEMBER_ID_REQUIRED is about to come back with it.
            delete_group = (len(expired) == len(offsets) and group.is_in(GroupState.EMPTY)
                            and not group.pending_join_members)
            if delete_group:
                records.append(group_metadata_tombstone(gid))
            if not records:
                continue
            try:
                self._write(gid, records)
            except KafkaError as e:
                log.warning("Failed to expire offsets of group %s: %s", gid, e)
                continue
            for key in expired:
                offsets.pop(key, None)
            expired_total += len(expired)
            if expired:
                log.info("Removed %d expired offsets of group %s", len(expired), gid)
            if not offsets:
                self.offsets.pop(gid, None)
            if delete_group:
                log.info("Group %s transitioned to Dead: no members and no offsets left", gid)
                self._drop_group(group)
        return expired_total

    @staticmethod
    def _expiration_base(group: ClassicGroup) -> str | None:
        """Which timestamp offsets of this group expire from (Kafka: offsetExpirationCondition):
        'state' for an Empty group with a known protocol type (retention counts from when it became
        empty), 'commit' for a Stable consumer group (only unsubscribed topics) and for simple
        groups, None when nothing may expire."""
        if group.protocol_type is not None:
            if group.is_in(GroupState.EMPTY):
                return "state"
            if group.uses_consumer_protocol() and group.subscribed_topics is not None \
                    and group.is_in(GroupState.STABLE):
                return "commit"
            return None
        return "commit"

    def _expired_offsets(self, group: ClassicGroup, offsets: dict[tuple[str, int], OffsetAndMetadata],
                         now: int) -> list[tuple[str, int]]:
        base = self._expiration_base(group)
        if base is None:
            return []
        retention = self.config.offsets_retention_ms
        out = []
        for (topic, partition), om in offsets.items():
            if group.is_subscribed_to_topic(topic):
                continue
            if om.expire_timestamp_ms is not None:
                expired = now >= om.expire_timestamp_ms
            else:
                start = om.commit_timestamp_ms
                if base == "state" and group.current_state_timestamp is not None:
                    start = group.current_state_timestamp
                expired = now - start >= retention
            if expired:
                out.append((topic, partition))
        return out
