"""Online migration of a group between the classic protocol and KIP-848's consumer protocol.

Theory of operation (Kafka 4: GroupMetadataManager's convertToConsumerGroup / convertToClassicGroup
and the classicGroup*ToConsumerGroup handlers; KIP-848 "Upgrade & Downgrade"):

- *Upgrade.* A ConsumerGroupHeartbeat that joins a classic group with members converts it, when
  `group.consumer.migration.policy` allows upgrades, the group uses the `consumer` protocol type
  and it fits in `group.consumer.max.size`. Each classic member becomes a member of the consumer
  group at member epoch = the classic generation, Stable, owning what its last SyncGroup gave it
  (which is also its target); the group and assignment epochs are the generation. The records:
  the classic GroupMetadata tombstone, then the consumer group's records, then the joining
  member's. Classic members parked in JoinGroup/SyncGroup get REBALANCE_IN_PROGRESS.
- *Classic members inside a consumer group.* Their JoinGroup / SyncGroup / Heartbeat /
  LeaveGroup are served by the consumer group: a JoinGroup updates the member (subscription from
  the embedded ConsumerProtocolSubscription; the supported protocols and session timeout kept as
  the member record's ClassicMemberMetadata), bumps the group epoch like a heartbeat would and
  reconciles the member one step (revoke before assign), answering generation = member epoch and
  no member list (the member is a follower); SyncGroup answers its assigned partitions as a
  ConsumerProtocolAssignment at the version of its subscription; a Heartbeat answers
  REBALANCE_IN_PROGRESS when the member must rejoin to make progress (its epoch is behind the
  group's, it has partitions to revoke, or partitions it waited for are free). A member that does
  not SyncGroup, or does not rejoin after being asked, within its rebalance timeout is fenced.
  A classic JoinGroup is refused only when the policy is `disabled`.
- *Downgrade.* When the last consumer-protocol member leaves (or is fenced) and classic members
  remain, the policy allows downgrades and they fit in `group.max.size`, the consumer group is
  tombstoned and written back as a classic group (GroupMetadata: generation = group epoch, each
  member's target assignment serialized for it), which then rebalances at once.
"""

from __future__ import annotations

import enum
import logging
import uuid
from typing import TYPE_CHECKING

from minibroker.coordinator.coordinator_metadata_image import TopicsMetadata
from minibroker.coordinator.group import consumer_group_records as rec
from minibroker.coordinator.group.classic_group import (
    CONSUMER_PROTOCOL_TYPE,
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    GroupState,
    Member,
)
from minibroker.coordinator.group.consumer_group import (
    Assignment,
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
)
from minibroker.coordinator.group.consumer_group_manager import ConsumerGroupManager
from minibroker.coordinator.group.consumer_protocol import (
    parse_assignment,
    parse_subscription,
    protocol_version,
    serialize_assignment,
)
from minibroker.coordinator.group.group_metadata_manager import ClientInfo, GroupMetadataManager
from minibroker.coordinator.group.group_responses import (
    JoinResponse,
    MemberResponse,
    SyncResponse,
    join_error,
    sync_error,
)
from minibroker.coordinator.group.group_responses import protocols as request_protocols
from minibroker.coordinator.group.records import group_metadata_record, group_metadata_tombstone
from minibroker.coordinator.runtime.partition_writer import CoordinatorRecord
from minibroker_protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from minibroker_protocol.apis.heartbeat import HeartbeatRequest
    from minibroker_protocol.apis.join_group import JoinGroupRequest, JoinGroupResponse
    from minibroker_protocol.apis.leave_group import LeaveGroupRequest, LeaveGroupResponse
    from minibroker_protocol.apis.sync_group import SyncGroupRequest, SyncGroupResponse

log = logging.getLogger("minibroker.coordinator.group")


class MigrationPolicy(enum.Enum):
    """Kafka: ConsumerGroupMigrationPolicy (`group.consumer.migration.policy`)."""

    DISABLED = "disabled"
    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    BIDIRECTIONAL = "bidirectional"

    @classmethod
    def parse(cls, value: str) -> MigrationPolicy:
        return cls(value.strip().lower())

    @property
    def upgrade_enabled(self) -> bool:
        return self in (MigrationPolicy.UPGRADE, MigrationPolicy.BIDIRECTIONAL)

    @property
    def downgrade_enabled(self) -> bool:
        return self in (MigrationPolicy.DOWNGRADE, MigrationPolicy.BIDIRECTIONAL)


class GroupMigration:
    """Moves groups between the two protocols and serves classic members of consumer groups."""

    def __init__(self, policy: MigrationPolicy, classic: GroupMetadataManager, consumer: ConsumerGroupManager,
                 topics: TopicsMetadata | None) -> None:
        self.policy = policy
        self.classic = classic
        self.consumer = consumer
        self._topics = topics
        consumer.upgrade_classic = self.upgrade
        consumer.maybe_downgrade = self.maybe_downgrade

    # -- topic names <-> ids ---------------------------------------------------------------------
    def _ids(self, by_name: dict[str, set[int]]) -> Assignment:
        out: Assignment = {}
        for name, ps in by_name.items():
            t = self._topics.get(name) if self._topics is not None else None
            if t is not None and ps:
                out.setdefault(t.topic_id, set()).update(p for p in ps if 0 <= p < len(t.partitions))
        return {tid: ps for tid, ps in out.items() if ps}

    def _names(self, by_id: Assignment) -> dict[str, set[int]]:
        out: dict[str, set[int]] = {}
        for tid, ps in by_id.items():
            t = self._topics.by_id(tid) if self._topics is not None else None
            if t is not None and ps:
                out[t.name] = set(ps)
        return out

    # -- upgrade ---------------------------------------------------------------------------------
    def upgrade(self, group_id: str, records: list[CoordinatorRecord]) -> ConsumerGroup:
        """Convert the classic group `group_id` (with members) for a joining consumer-protocol
        member, or raise Kafka's refusal (GROUP_ID_NOT_FOUND, GroupMetadataManager.validateOnlineUpgrade)."""
        cg = self.classic.groups[group_id]
        prefix = f"Cannot upgrade classic group {group_id} to consumer group"
        if not self.policy.upgrade_enabled:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"{prefix} because online upgrade is disabled.")
        if not cg.uses_consumer_protocol():
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND,
                             f"{prefix} because the group does not use the consumer embedded protocol.")
        if len(cg.members) > self.consumer.config.max_size:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND,
                             f"{prefix} because the group size exceeds the consumer group maximum size.")
        if len(cg.members) >= self.consumer.config.max_size:
            # the joining member would not fit: Kafka converts, refuses the member and keeps nothing
            raise KafkaError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                             f"The consumer group has reached its maximum capacity of "
                             f"{self.consumer.config.max_size} members.")
        g = ConsumerGroup(group_id, group_epoch=cg.generation_id, assignment_epoch=cg.generation_id,
                          assignor_name=self.consumer.config.assignors[0])
        try:
            for cm in cg.members.values():
                owned, user_data = parse_assignment(cm.assignment) if cm.assignment else ({}, None)
                if user_data:
                    raise _CustomAssignor()
                sub = parse_subscription(cm.metadata(cg.protocol_name))
                assigned = self._ids(owned)
                m = ConsumerGroupMember(
                    cm.member_id, instance_id=cm.group_instance_id, rack_id=sub.rack_id, client_id=cm.client_id,
                    client_host=cm.client_host, rebalance_timeout_ms=cm.rebalance_timeout_ms,
                    subscribed_topic_names=list(sub.topics), member_epoch=cg.generation_id,
                    previous_member_epoch=cg.generation_id, state=MemberState.STABLE,
                    classic=ClassicMemberMetadata(cm.session_timeout_ms, list(cm.protocols)))
                g.add_member(m)
                g.update_current(m, epoch=cg.generation_id, state=MemberState.STABLE, assigned=assigned, pending={})
                m.previous_member_epoch = cg.generation_id
                g.target[m.member_id] = {tid: set(ps) for tid, ps in assigned.items()}
        except _CustomAssignor:
            log.warning("%s: userData from a custom assignor would be lost.", prefix)
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND,
                             f"{prefix} because an unsupported custom assignor is in use. Please refer to the "
                             f"documentation or switch to a default assignor before re-attempting the upgrade."
                             ) from None
        except ValueError as e:
            log.warning("%s because the embedded consumer protocol is malformed: %s.", prefix, e)
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND,
                             f"{prefix} because the embedded consumer protocol is malformed.") from None
        g.metadata_hash = self.consumer.metadata_hash(g)
        # Kafka's order (ConsumerGroup.createConsumerGroupRecords): subscriptions, group epoch,
        # targets, assignment epoch, current assignments -- after the classic group's tombstone.
        records.append(group_metadata_tombstone(group_id))
        records.extend(self.consumer.member_record(g, m) for m in g.members.values())
        records.append(rec.group_metadata(group_id, g.group_epoch, g.metadata_hash))
        records.extend(rec.target_assignment_member(group_id, mid, a) for mid, a in g.target.items())
        records.append(rec.target_assignment_metadata(group_id, g.assignment_epoch, self.consumer.now_ms()))
        records.extend(self.consumer.current_record(g, m) for m in g.members.values())
        self.classic.hand_over(cg)
        for m in g.members.values():
            self.consumer.schedule_session(g, m)
        log.info("[GroupId %s] Converted the classic group to a consumer group.", group_id)
        self.consumer.events.record(group_id, "Upgraded", g.group_epoch, "classic group of %d member(s) converted",
                                    len(g.members))
        return g

    # -- downgrade -------------------------------------------------------------------------------
    def maybe_downgrade(self, g: ConsumerGroup, leaving: set[str]) -> bool:
        """Called before members leave or are fenced: when only classic-protocol members would
        remain, convert the group back (Kafka: validateOnlineDowngradeWithFencedMembers)."""
        remaining = [m for mid, m in g.members.items() if mid not in leaving]
        if not remaining or not self._may_downgrade(g, remaining):
            return False
        self._to_classic(g, remaining, [], rebalance=True)
        return True

    def _may_downgrade(self, g: ConsumerGroup, remaining: list[ConsumerGroupMember]) -> bool:
        if any(m.classic is None for m in remaining):
            return False
        if not self.policy.downgrade_enabled:
            log.info("Cannot downgrade consumer group %s to classic group because the online downgrade is "
                     "disabled.", g.group_id)
            return False
        if len(remaining) > self.classic.config.max_size:
            log.info("Cannot downgrade consumer group %s to classic group because its group size is greater "
                     "than classic group max size.", g.group_id)
            return False
        return True

    def _to_classic(self, g: ConsumerGroup, remaining: list[ConsumerGroupMember], records: list[CoordinatorRecord],
                    *, rebalance: bool) -> None:
        """Tombstone the consumer group and write it back as a classic group of `remaining`
        (Kafka: convertToClassicGroup); `records` go first. A downgrade on a member's leave
        rebalances at once; one on a static member's replacement keeps the assignment."""
        gid = g.group_id
        now = self.consumer.now_ms()
        classic = ClassicGroup(gid, state=GroupState.STABLE, generation_id=g.group_epoch,
                               protocol_type=CONSUMER_PROTOCOL_TYPE, current_state_timestamp=now)
        try:
            for m in remaining:
                assert m.classic is not None
                classic.add(Member(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                                   m.classic.session_timeout_ms, CONSUMER_PROTOCOL_TYPE, list(m.classic.protocols)))
            classic.protocol_name = classic.select_protocol()
            assignment = {}
            for cm in classic.members.values():
                version = protocol_version(cm.metadata(classic.protocol_name))
                assignment[cm.member_id] = serialize_assignment(self._names(g.target.get(cm.member_id, {})), version)
        except ValueError as e:
            log.warning("Cannot downgrade the consumer group %s: fail to parse the Consumer Protocol consumer.", gid)
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot downgrade the classic group {gid}: {e}.") from None
        classic.subscribed_topics = classic.compute_subscribed_topics()
        for cm in classic.members.values():
            cm.assignment = assignment[cm.member_id]
        for mid in g.members:
            records.extend(rec.member_tombstones(gid, mid))
        for regex in g.regex_topics:
            records.append(rec.tombstone(rec.REGULAR_EXPRESSION, gid, regex))
        records.extend(rec.group_tombstones(gid))
        records.append(group_metadata_record(classic, assignment))
        self.consumer.write(gid, records)
        for mid in g.members:
            self.consumer.cancel_member_timers(gid, mid)
        g.deleted = True
        self.consumer.groups.pop(gid, None)
        log.info("[GroupId %s] Converted the consumer group to a classic group.", gid)
        self.consumer.events.record(gid, "Downgraded", g.group_epoch, "%d classic member(s) remain", len(remaining))
        self.classic.take_over(classic, f"Downgrade group {gid} from consumer to classic for member leaving."
                               if rebalance else None)

    # -- classic members in a consumer group ----------------------------------------------------
    def join(self, g: ConsumerGroup, req: JoinGroupRequest, client: ClientInfo) -> JoinGroupResponse:
        """A classic JoinGroup to a consumer group with members (Kafka: classicGroupJoinToConsumerGroup)."""
        try:
            return self._join(g, req, client)
        except KafkaError as e:
            return join_error(req.member_id, e.code)

    def _join(self, g: ConsumerGroup, req: JoinGroupRequest, client: ClientInfo) -> JoinGroupResponse:
        gid = g.group_id
        if self.policy is MigrationPolicy.DISABLED:
            log.info("Cannot join the consumer group %s with the classic protocol because the group migration "
                     "is disabled.", gid)
            raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        cfg = self.classic.config
        if not cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms:
            raise KafkaError(ErrorCode.INVALID_SESSION_TIMEOUT)  # Kafka checks it for every JoinGroup
        unknown = req.member_id == UNKNOWN_MEMBER_ID
        member_id = str(uuid.uuid4()) if unknown else req.member_id
        static_id = g.static_members.get(req.group_instance_id) if req.group_instance_id is not None else None
        if member_id not in g.members and static_id is None and len(g.members) >= self.consumer.config.max_size:
            raise KafkaError(ErrorCode.GROUP_MAX_SIZE_REACHED)
        protocols = request_protocols(req)
        if req.protocol_type != CONSUMER_PROTOCOL_TYPE or not self._supports(g, {n for n, _ in protocols}):
            raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if unknown and req.group_instance_id is None and client.api_version >= 4:
            # KIP-394: hand out the member id first (Kafka: JoinGroupRequest.requiresKnownMemberId)
            log.info("[GroupId %s] Dynamic member with unknown member id joins the consumer group. Created a new "
                     "member id %s and requesting the member to rejoin with this id.", gid, member_id)
            return join_error(member_id, ErrorCode.MEMBER_ID_REQUIRED)
        try:
            sub = parse_subscription(protocols[0][1])
        except ValueError:
            raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL) from None
        records: list[CoordinatorRecord] = []
        joined = False
        replaced_at = -1
        replaced_consumer_member = False
        if static_id is not None and static_id != member_id:
            if not unknown:
                raise KafkaError(ErrorCode.FENCED_INSTANCE_ID)
            replaced_consumer_member = g.members[static_id].classic is None
            self._replace_static(g, g.members[static_id], member_id, records)
            replaced_at = len(records)
        m = g.members.get(member_id)
        if m is None:
            m = ConsumerGroupMember(member_id, instance_id=req.group_instance_id)
            g.add_member(m)
            joined = True
            log.info("[GroupId %s] Member %s joins the consumer group using the classic protocol.", gid, member_id)
        elif m.classic is None and replaced_at < 0:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)  # a consumer-protocol member's id
        before_sub, before_inputs = m.subscription_key(), m.assignment_inputs()
        m.instance_id = req.group_instance_id
        if sub.rack_id is not None:
            m.rack_id = sub.rack_id
        if req.rebalance_timeout_ms != -1:
            m.rebalance_timeout_ms = req.rebalance_timeout_ms
        m.server_assignor = None
        m.subscribed_topic_names = list(sub.topics)
        m.client_id, m.client_host = client.client_id, client.client_host
        m.classic = ClassicMemberMetadata(req.session_timeout_ms, protocols)
        self.consumer.update_and_reconcile(g, m, records, joined=joined, before_sub=before_sub,
                                           before_inputs=before_inputs, owned=self._ids(sub.owned))
        if replaced_at >= 0:
            # the new member's records, subscription before assignment so that a replay sees it first
            records[replaced_at:replaced_at] = [
                self.consumer.member_record(g, m), rec.target_assignment_member(gid, member_id, g.target[member_id]),
                self.consumer.current_record(g, m)]
        response = JoinResponse(error_code=0, generation_id=m.member_epoch, protocol_type=CONSUMER_PROTOCOL_TYPE,
                                protocol_name=protocols[0][0], leader="", skip_assignment=False, member_id=member_id,
                                members=[])
        if replaced_consumer_member and self._may_downgrade(g, list(g.members.values())):
            # the last consumer-protocol member was replaced by this classic one: back to a classic
            # group, the members keeping their assignments (Kafka: validateOnlineDowngradeWithReplacedMember)
            self._to_classic(g, list(g.members.values()), records, rebalance=False)
            return response
        self.consumer.write(gid, records)
        self.consumer.timer.cancel(("cg-join", gid, member_id))
        self.consumer.schedule_session(g, m)
        self.consumer.timer.schedule(("cg-sync", gid, member_id), max(m.rebalance_timeout_ms, 0),
                                     lambda: self.consumer.expire(gid, member_id, "sync timeout"))
        return response

    def _replace_static(self, g: ConsumerGroup, old: ConsumerGroupMember, member_id: str,
                        records: list[CoordinatorRecord]) -> None:
        """A static member back under a new member id takes over the old one's subscription,
        epoch and assignment, without a rebalance (Kafka: the static member replacement of
        getOrMaybeSubscribeStaticConsumerGroupMember)."""
        gid = g.group_id
        log.info("[GroupId %s] Static member with instance id %s re-joins the consumer group using the classic "
                 "protocol. Created a new member %s to replace the existing member %s.", gid, old.instance_id,
                 member_id, old.member_id)
        self.consumer.cancel_member_timers(gid, old.member_id)
        target = g.target.get(old.member_id, {})
        g.remove_member(old.member_id)
        records.extend(rec.member_tombstones(gid, old.member_id))
        m = ConsumerGroupMember(member_id, instance_id=old.instance_id, rack_id=old.rack_id, client_id=old.client_id,
                                client_host=old.client_host, rebalance_timeout_ms=old.rebalance_timeout_ms,
                                subscribed_topic_names=list(old.subscribed_topic_names),
                                subscribed_topic_regex=old.subscribed_topic_regex, server_assignor=old.server_assignor,
                                classic=old.classic)
        g.add_member(m)
        g.update_current(m, epoch=old.member_epoch, state=old.state, assigned=old.assigned,
                         pending=old.pending_revocation, epochs=old.assignment_epochs)
        m.previous_member_epoch = old.previous_member_epoch
        g.target[member_id] = {tid: set(ps) for tid, ps in target.items()}

    @staticmethod
    def _supports(g: ConsumerGroup, names: set[str]) -> bool:
        """Kafka: ConsumerGroup.supportsClassicProtocols -- a protocol every classic member has."""
        classic = [m.classic for m in g.members.values() if m.classic is not None]
        if not names:
            return False
        if not classic:
            return True
        return any(all(any(n == name for n, _ in c.protocols) for c in classic) for name in names)

    def _member(self, g: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
        """Kafka: validateConsumerGroupMember + throwIfMemberDoesNotUseClassicProtocol."""
        if instance_id is not None:
            mid = g.static_members.get(instance_id)
            if mid is None:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
            if mid != member_id:
                raise KafkaError(ErrorCode.FENCED_INSTANCE_ID)
        m = g.members.get(member_id)
        if m is None or m.classic is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
        return m

    def _ask_to_rejoin(self, g: ConsumerGroup, m: ConsumerGroupMember) -> None:
        key = ("cg-join", g.group_id, m.member_id)
        if not self.consumer.timer.is_scheduled(key):
            gid, mid = g.group_id, m.member_id
            self.consumer.timer.schedule(key, max(m.rebalance_timeout_ms, 0),
                                         lambda: self.consumer.expire(gid, mid, "join timeout"))

    def sync(self, g: ConsumerGroup, req: SyncGroupRequest) -> SyncGroupResponse:
        """Kafka: classicGroupSyncToConsumerGroup."""
        try:
            m = self._member(g, req.member_id, req.group_instance_id)
            if req.generation_id != m.member_epoch:
                raise KafkaError(ErrorCode.ILLEGAL_GENERATION)
            assert m.classic is not None
            name = m.classic.protocols[0][0]
            if (req.protocol_type is not None and req.protocol_type != CONSUMER_PROTOCOL_TYPE) or \
                    (req.protocol_name is not None and req.protocol_name != name):
                raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            if g.group_epoch > m.member_epoch and m.state is not MemberState.UNREVOKED_PARTITIONS:
                self._ask_to_rejoin(g, m)
                raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS)
            self.consumer.timer.cancel(("cg-sync", g.group_id, m.member_id))
            self.consumer.schedule_session(g, m)
            data = serialize_assignment(self._names(m.assigned), protocol_version(m.classic.protocols[0][1]))
            return SyncResponse(error_code=0, protocol_type=req.protocol_type, protocol_name=req.protocol_name,
                                assignment=data)
        except KafkaError as e:
            return sync_error(e.code)

    def heartbeat(self, g: ConsumerGroup, req: HeartbeatRequest) -> int:
        """Kafka: classicGroupHeartbeatToConsumerGroup."""
        try:
            m = self._member(g, req.member_id, req.group_instance_id)
        except KafkaError as e:
            return e.code
        if req.generation_id != m.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION
        self.consumer.schedule_session(g, m)
        if m.member_epoch < g.group_epoch or m.state is MemberState.UNREVOKED_PARTITIONS or (
                m.state is MemberState.UNRELEASED_PARTITIONS and not self._waiting_on_unreleased(g, m)):
            self._ask_to_rejoin(g, m)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    @staticmethod
    def _waiting_on_unreleased(g: ConsumerGroup, m: ConsumerGroupMember) -> bool:
        """Kafka: ConsumerGroup.waitingOnUnreleasedPartition -- a target partition still owned by another."""
        for tid, ps in g.target.get(m.member_id, {}).items():
            for p in ps - m.assigned.get(tid, set()):
                if not g.free(tid, p, m.member_id):
                    return True
        return False

    def leave(self, g: ConsumerGroup, members: list[LeaveGroupRequest.MemberIdentity]
              ) -> tuple[int, list[LeaveGroupResponse.MemberResponse]]:
        """Kafka: classicGroupLeaveToConsumerGroup (the downgrade check included)."""
        responses, leaving = [], []
        for ident in members:
            mid, iid = ident.member_id, ident.group_instance_id
            try:
                if iid is None:
                    m = g.members.get(mid)
                    if m is None or m.classic is None:
                        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
                else:
                    sid = g.static_members.get(iid)
                    if sid is None:
                        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
                    if mid != UNKNOWN_MEMBER_ID and mid != sid:
                        raise KafkaError(ErrorCode.FENCED_INSTANCE_ID)
                    m = g.members[sid]
                    if m.classic is None:
                        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
                    mid = sid
                log.info("[Group %s] Member %s has left group through explicit `LeaveGroup` request; client "
                         "reason: %s", g.group_id, mid, ident.reason or "not provided")
                leaving.append(mid)
                responses.append(MemberResponse(member_id=mid, group_instance_id=iid, error_code=ErrorCode.NONE))
            except KafkaError as e:
                responses.append(MemberResponse(member_id=mid, group_instance_id=iid, error_code=e.code))
        if leaving:
            gid = g.group_id
            for mid in leaving:
                self.consumer.cancel_member_timers(gid, mid)
            if not self.maybe_downgrade(g, set(leaving)):
                records: list[CoordinatorRecord] = []
                for mid in leaving:
                    records.extend(rec.member_tombstones(gid, mid))
                    g.remove_member(mid)
                g.metadata_hash = self.consumer.metadata_hash(g)
                g.group_epoch += 1
                records.append(rec.group_metadata(gid, g.group_epoch, g.metadata_hash))
                self.consumer.events.record(gid, "GroupEpoch", g.group_epoch, "classic member(s) %s left",
                                            ", ".join(leaving))
                self.consumer.write(gid, records)
        return ErrorCode.NONE, responses


class _CustomAssignor(Exception):
    """A classic member's assignment carries user data: a custom assignor the upgrade would break."""
