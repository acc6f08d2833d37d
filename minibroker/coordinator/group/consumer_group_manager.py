"""KIP-848 consumer groups: ConsumerGroupHeartbeat, ConsumerGroupDescribe, member sessions.

Theory of operation (Kafka: GroupMetadataManager.consumerGroupHeartbeat and friends). Every
heartbeat runs the same steps on the event loop, without awaiting in between, and appends the
records of what changed to the group's __consumer_offsets partition before it answers:

1. validate the request (consumer_group_validation.py; the INVALID_REQUEST messages are Kafka's);
2. find the group (created on a member's first join; an empty classic group of the same id is
   replaced, one with members converted by the online upgrade of group_migration.py or refused
   with GROUP_ID_NOT_FOUND as group.consumer.migration.policy says) and the
   member (epoch 0: join or static-member replacement; -1: leave; -2: static leave; otherwise
   the epoch must be the member's current one, or its previous one when what it reports owning
   is still its own -- a lost response retried);
3. update the member's subscription; bump the group epoch when a subscription changed or the
   subscribed topics' metadata did (regexes resolved against the topics now; a topic created,
   deleted or grown shows up here, on the next heartbeat of any member; target_assignment_builder.py);
4. when the group epoch is ahead of the assignment epoch, run the assignor (the one most
   members ask for with `group.remote.assignor`, else the first of `group.consumer.assignors`;
   target_assignment_builder.py);
5. reconcile the member one step (consumer_group.py) and answer with its epoch and, when it
   changed or the member asked with a full request, its assignment.

A member's session (group.consumer.session.timeout.ms) restarts on every heartbeat; a member
that does not revoke within its rebalance timeout is fenced. Both are keyed timers on the loop.
A restart replays the records (consumer_group_replay.py, encoded by consumer_group_records.py) and
gives every member a fresh session.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from minibroker.config import BrokerConfig
from minibroker.coordinator.coordinator_metadata_image import TopicsMetadata
from minibroker.coordinator.group import consumer_group_records as rec
from minibroker.coordinator.group.assignors import assignor_names
from minibroker.coordinator.group.consumer_group import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    copy_assignment,
    count,
    same_assignment,
)
from minibroker.coordinator.group.consumer_group_replay import (
    current_assignment_record,
    member_metadata_record,
)
from minibroker.coordinator.group.consumer_group_replay import replay as replay_record
from minibroker.coordinator.group.consumer_group_validation import (
    check_member_epoch,
    validate_heartbeat,
    validate_offset_commit,
    validate_offset_fetch,
)
from minibroker.coordinator.group.group_events import GroupEvents
from minibroker.coordinator.group.group_metadata_manager import write_records
from minibroker.coordinator.group.target_assignment_builder import TargetAssignmentBuilder
from minibroker.coordinator.runtime.coordinator_store import CoordinatorStore
from minibroker.coordinator.runtime.keyed_timer import KeyedTimer
from minibroker.coordinator.runtime.partition_writer import CoordinatorRecord
from minibroker_protocol.apis import consumer_group_describe, consumer_group_heartbeat
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_storage.clock import Clock

log = logging.getLogger("minibroker.coordinator.consumer_group")

HB = consumer_group_heartbeat.RESPONSE
CGD = consumer_group_describe.RESPONSE
CONSUMER_MEMBER_TYPE = 1  # ConsumerGroupDescribe v1 member_type (Kafka: MemberType.CONSUMER)
CLASSIC_MEMBER_TYPE = 0  # a classic-protocol member of a consumer group (Kafka: MemberType.CLASSIC)


@dataclass(slots=True)
class ConsumerGroupConfig:
    """Broker settings of consumer groups; defaults are Kafka 4's."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    assignors: tuple[str, ...] = ("uniform", "range")
    max_size: int = 2**31 - 1
    migration_policy: str = "bidirectional"  # group.consumer.migration.policy (group_migration.py)

    @classmethod
    def from_broker_config(cls, cfg: BrokerConfig) -> ConsumerGroupConfig:
        return cls(session_timeout_ms=cfg.get("group.consumer.session.timeout.ms"),
                   heartbeat_interval_ms=cfg.get("group.consumer.heartbeat.interval.ms"),
                   assignors=tuple(assignor_names(cfg.get("group.consumer.assignors"))),
                   max_size=cfg.get("group.consumer.max.size"),
                   migration_policy=cfg.get("group.consumer.migration.policy"))


class ConsumerGroupManager:
    """Every consumer group of the broker."""

    def __init__(self, config: ConsumerGroupConfig, store: CoordinatorStore, topics: TopicsMetadata | None, *,
                 now_ms: Clock, classic_group_exists: Callable[[str], bool | None],
                 drop_classic_group: Callable[[str], None]) -> None:
        self.config = config
        self.store = store
        self._topics = topics  # None: a coordinator without topics (unit tests of classic groups)
        self.now_ms = now_ms
        # None: no such classic group; False: an empty one (replaceable); True: one with members
        self._classic_exists = classic_group_exists
        self._drop_classic = drop_classic_group
        self.groups: dict[str, ConsumerGroup] = {}
        self.group_configs: dict[str, dict[str, int]] = {}  # GROUP config resources (KIP-848)
        self.timer = KeyedTimer()
        # subscriptions, metadata hash and target assignments; holds the rebalance timeline
        # (`events`), which the group coordinator shares with the classic groups
        self.assignments = TargetAssignmentBuilder(config.assignors, topics, GroupEvents(now_ms), now_ms=now_ms)
        # Online migration between the protocols (group_migration.py sets these): convert a
        # classic group with members (or raise Kafka's refusal), and convert a group whose
        # remaining members all speak the classic protocol back (True: done, records written).
        self.upgrade_classic: Callable[[str, list[CoordinatorRecord]], ConsumerGroup] | None = None
        self.maybe_downgrade: Callable[[ConsumerGroup, set[str]], bool] | None = None

    @property
    def events(self) -> GroupEvents:
        return self.assignments.events

    @events.setter
    def events(self, events: GroupEvents) -> None:
        self.assignments.events = events

    # -- config --------------------------------------------------------------------------------
    def session_timeout_ms(self, group_id: str) -> int:
        return self.group_configs.get(group_id, {}).get("consumer.session.timeout.ms", self.config.session_timeout_ms)

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return self.group_configs.get(group_id, {}).get("consumer.heartbeat.interval.ms",
                                                        self.config.heartbeat_interval_ms)

    # -- persistence ---------------------------------------------------------------------------
    def _write(self, group_id: str, records: list[CoordinatorRecord]) -> None:
        write_records(self.store, group_id, records)

    def replay(self, key: bytes, value: bytes | None) -> None:
        """Apply one record read back from __consumer_offsets (consumer_group_replay.py)."""
        replay_record(self.groups, key, value)

    def start_sessions(self) -> None:
        """After a load: every member gets a fresh session (Kafka does the same on failover)."""
        for g in self.groups.values():
            g.assignor_name = self.assignments.preferred_assignor(g)
            for m in g.members.values():
                self._schedule_session(g, m)

    def unload(self) -> None:
        self.timer.cancel_all()
        self.groups.clear()

    # -- timers ------------------------------------------------------------------------------------
    def _schedule_session(self, g: ConsumerGroup, m: ConsumerGroupMember) -> None:
        gid, mid = g.group_id, m.member_id
        timeout = self.session_timeout_ms(gid) if m.classic is None else m.classic.session_timeout_ms
        self.timer.schedule(("cg-session", gid, mid), timeout,
                            lambda: self._expire(gid, mid, "session timeout"))

    def _schedule_rebalance(self, g: ConsumerGroup, m: ConsumerGroupMember) -> None:
        key = ("cg-rebalance", g.group_id, m.member_id)
        if m.state is MemberState.UNREVOKED_PARTITIONS:
            if not self.timer.is_scheduled(key):
                gid, mid, epoch = g.group_id, m.member_id, m.member_epoch

                def expire() -> None:
                    cur = self.groups.get(gid)
                    member = cur.members.get(mid) if cur else None
                    if member is not None and member.state is MemberState.UNREVOKED_PARTITIONS \
                            and member.member_epoch == epoch:
                        self._expire(gid, mid, "rebalance timeout")

                self.timer.schedule(key, max(m.rebalance_timeout_ms, 0), expire)
        else:
            self.timer.cancel(key)

    def _expire(self, group_id: str, member_id: str, why: str) -> None:
        g = self.groups.get(group_id)
        if g is None or member_id not in g.members:
            return
        log.info("[GroupId %s] Member %s fenced from the group because of its %s.", group_id, member_id, why)
        self.events.record(group_id, "MemberFenced", g.group_epoch, "%s: %s", member_id, why)
        try:
            self._remove_member(g, member_id)
        except KafkaError as e:
            log.warning("fencing member %s of group %s failed: %s", member_id, group_id, e)

    def _remove_member(self, g: ConsumerGroup, member_id: str) -> None:
        """Fence or remove a member: tombstones, a new group epoch (Kafka: removeMember + bump);
        or, when only classic-protocol members remain, the downgrade (consumerGroupFenceMembers)."""
        self.cancel_member_timers(g.group_id, member_id)
        if self.maybe_downgrade is not None and self.maybe_downgrade(g, {member_id}):
            return
        records = rec.member_tombstones(g.group_id, member_id)
        g.remove_member(member_id)
        self.assignments.refresh_regexes(g, records)
        _, g.metadata_hash = self.assignments.metadata(g)
        g.group_epoch += 1
        records.append(rec.group_metadata(g.group_id, g.group_epoch, g.metadata_hash))
        self.events.record(g.group_id, "GroupEpoch", g.group_epoch, "member %s removed", member_id)
        self._write(g.group_id, records)

    def cancel_member_timers(self, group_id: str, member_id: str) -> None:
        for kind in ("cg-session", "cg-rebalance", "cg-join", "cg-sync"):
            self.timer.cancel((kind, group_id, member_id))

    # -- ConsumerGroupHeartbeat ------------------------------------------------------------------------
    def heartbeat(self, req: consumer_group_heartbeat.ConsumerGroupHeartbeatRequest, version: int, client_id: str,
                  client_host: str, may_describe: Callable[[str], bool] | None = None
                  ) -> consumer_group_heartbeat.ConsumerGroupHeartbeatResponse:
        if may_describe is not None and req.group_id:
            self.assignments.regex_topic_filters[req.group_id] = may_describe
        try:
            return self._heartbeat(req, version, client_id, client_host)
        except KafkaError as e:
            return HB(error_code=e.code, error_message=e.message or None, member_epoch=0, heartbeat_interval_ms=0)

    def _heartbeat(self, req: consumer_group_heartbeat.ConsumerGroupHeartbeatRequest, version: int, client_id: str,
                   client_host: str) -> consumer_group_heartbeat.ConsumerGroupHeartbeatResponse:
        validate_heartbeat(req, version, self.config.assignors)
        gid = req.group_id
        if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(req)
        g = self.groups.get(gid)
        records: list[CoordinatorRecord] = []
        if g is None:
            classic = self._classic_exists(gid)
            if classic and (req.member_epoch != JOIN_GROUP_MEMBER_EPOCH or self.upgrade_classic is None):
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group.")
            if req.member_epoch != JOIN_GROUP_MEMBER_EPOCH:
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} not found.")
            if classic and self.upgrade_classic is not None:
                # a classic group with members: the online upgrade (group_migration.py)
                g = self.upgrade_classic(gid, records)
            else:
                if classic is False:
                    self._drop_classic(gid)  # an empty classic group gives way (Kafka: same, KIP-848 upgrade)
                g = ConsumerGroup(gid, assignor_name=self.config.assignors[0])
            created = True
        else:
            created = False
        member_id = req.member_id or str(uuid.uuid4())
        bump = False
        owned = None if req.topic_partitions is None else {tp.topic_id: set(tp.partitions)
                                                            for tp in req.topic_partitions}
        if req.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
            m = self._join(g, req, member_id, records)
            if m.member_id not in g.members:
                if len(g.members) >= self.config.max_size:
                    raise KafkaError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                     f"The consumer group has reached its maximum capacity of "
                                     f"{self.config.max_size} members.")
                g.add_member(m)
                bump = True
        else:
            m = g.members.get(member_id)  # type: ignore[assignment]
            if m is None:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {member_id} is not a member of group {gid}.")
            check_member_epoch(m, req.member_epoch, owned)
        before_sub, before_inputs = m.subscription_key(), m.assignment_inputs()
        if req.subscribed_topic_names is not None:
            m.subscribed_topic_names = list(req.subscribed_topic_names)
        if req.subscribed_topic_regex is not None:
            m.subscribed_topic_regex = req.subscribed_topic_regex or None
        if req.server_assignor is not None:
            m.server_assignor = req.server_assignor
        if req.rebalance_timeout_ms != -1:
            m.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.rack_id is not None:
            m.rack_id = req.rack_id
        m.client_id, m.client_host = client_id, client_host
        before = copy_assignment(m.assigned)
        self.update_and_reconcile(g, m, records, joined=bump, before_sub=before_sub, before_inputs=before_inputs,
                                  owned=owned)
        try:
            self._write(gid, records)
        finally:
            # The state is the coordinator's either way; a failed write answers with its error
            # and the client retries (Kafka reverts the in-memory state; we keep it: one node).
            if created:
                self.groups[gid] = g
        self._schedule_session(g, m)
        self._schedule_rebalance(g, m)
        send = req.member_epoch == JOIN_GROUP_MEMBER_EPOCH or owned is not None or not same_assignment(before, m.assigned)
        assignment = None
        if send:
            assignment = HB.Assignment(topic_partitions=[
                HB.TopicPartitions(topic_id=tid, partitions=sorted(ps))
                for tid, ps in sorted(m.assigned.items(), key=lambda kv: str(kv[0])) if ps])
        return HB(error_code=0, member_id=m.member_id, member_epoch=m.member_epoch,
                  heartbeat_interval_ms=self.heartbeat_interval_ms(gid), assignment=assignment)

    def update_and_reconcile(self, g: ConsumerGroup, m: ConsumerGroupMember, records: list[CoordinatorRecord], *,
                             joined: bool, before_sub: tuple[object, ...], before_inputs: tuple[object, ...],
                             owned: Assignment | None) -> None:
        """Steps 3 to 5 of a heartbeat, once the member's fields are updated; a classic member's
        JoinGroup in a consumer group takes the same steps (group_migration.py)."""
        gid, bump = g.group_id, joined
        why = "member %s joined" if bump else "member %s changed its subscription"
        if m.subscription_key() != before_sub or bump:
            records.append(member_metadata_record(g, m))
            bump = bump or m.assignment_inputs() != before_inputs
        self.assignments.refresh_regexes(g, records)
        partitions, digest = self.assignments.metadata(g)
        if digest != g.metadata_hash:
            if not bump:
                why = "subscribed topics changed (%s's heartbeat)"
            g.metadata_hash = digest
            bump = True
        if bump:
            g.group_epoch += 1
            records.append(rec.group_metadata(gid, g.group_epoch, g.metadata_hash))
            self.events.record(gid, "GroupEpoch", g.group_epoch, why, m.member_id)
        if g.group_epoch > g.assignment_epoch:
            self.assignments.compute_target(g, partitions, records)
        if g.reconcile(m, owned):
            records.append(current_assignment_record(g, m))
            self.events.record(gid, "MemberEpoch", g.group_epoch, "%s: epoch %d, %s, owns %d, revoking %d",
                               m.member_id, m.member_epoch, m.state.name, count(m.assigned),
                               count(m.pending_revocation))

    def member_record(self, g: ConsumerGroup, m: ConsumerGroupMember) -> CoordinatorRecord:
        return member_metadata_record(g, m)

    def current_record(self, g: ConsumerGroup, m: ConsumerGroupMember) -> CoordinatorRecord:
        return current_assignment_record(g, m)

    def metadata_hash(self, g: ConsumerGroup) -> int:
        return self.assignments.metadata(g)[1]

    def write(self, group_id: str, records: list[CoordinatorRecord]) -> None:
        self._write(group_id, records)

    def schedule_session(self, g: ConsumerGroup, m: ConsumerGroupMember) -> None:
        self._schedule_session(g, m)

    def expire(self, group_id: str, member_id: str, why: str) -> None:
        self._expire(group_id, member_id, why)

    def _join(self, g: ConsumerGroup, req: consumer_group_heartbeat.ConsumerGroupHeartbeatRequest, member_id: str, records: list[CoordinatorRecord]
              ) -> ConsumerGroupMember:
        if req.instance_id is not None:
            old_id = g.static_members.get(req.instance_id)
            if old_id is not None and old_id != member_id:
                old = g.members[old_id]
                if old.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    raise KafkaError(ErrorCode.UNRELEASED_INSTANCE_ID,
                                     f"Static member {old_id} with instance id {req.instance_id} is not "
                                     f"released yet.")
                # The static member is back under a new member id: it takes over the old one's
                # assignment and epoch, no rebalance (Kafka: consumerGroupStaticMemberJoin...).
                target = g.target.get(old_id, {})
                g.remove_member(old_id)
                self.timer.cancel(("cg-session", g.group_id, old_id))
                records.extend(rec.member_tombstones(g.group_id, old_id))
                m = ConsumerGroupMember(member_id, instance_id=req.instance_id)
                m.previous_member_epoch = old.previous_member_epoch
                g.add_member(m)
                epoch = old.previous_member_epoch if old.previous_member_epoch >= 0 else 0
                g.update_current(m, epoch=epoch, state=MemberState.STABLE, assigned=old.assigned,
                                 pending=old.pending_revocation, epochs=old.assignment_epochs)
                m.subscribed_topic_names = old.subscribed_topic_names
                m.subscribed_topic_regex = old.subscribed_topic_regex
                m.server_assignor, m.rebalance_timeout_ms = old.server_assignor, old.rebalance_timeout_ms
                g.target[member_id] = target
                records.append(member_metadata_record(g, m))
                records.append(rec.target_assignment_member(g.group_id, member_id, target))
                records.append(current_assignment_record(g, m))
                return m
        existing = g.members.get(member_id)
        if existing is not None:
            # A member that lost its epoch rejoins under its id: it starts over, empty-handed.
            g.update_current(existing, epoch=0, state=MemberState.STABLE, assigned={}, pending={})
            return existing
        return ConsumerGroupMember(member_id, instance_id=req.instance_id)

    def _leave(self, req: consumer_group_heartbeat.ConsumerGroupHeartbeatRequest
               ) -> consumer_group_heartbeat.ConsumerGroupHeartbeatResponse:
        g = self.groups.get(req.group_id)
        m = g.members.get(req.member_id) if g is not None else None
        if g is None or m is None:
            if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and g is not None \
                    and req.instance_id in g.static_members:
                raise KafkaError(ErrorCode.FENCED_INSTANCE_ID)
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID,
                             f"Member {req.member_id} is not a member of group {req.group_id}.")
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # A static member leaving for a while keeps its assignment until its session
            # expires or it comes back (KIP-848's static membership); what it was revoking is
            # released at once, and its partitions' assignment epochs go to 0, so that whoever
            # comes back with the instance id starts a new epoch history (Kafka 4.4:
            # consumerGroupStaticMemberGroupLeave, resetAssignedPartitionsEpochsToZero).
            g.update_current(m, epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, state=m.state, assigned=m.assigned,
                             pending={}, epochs=dict.fromkeys(m.assignment_epochs, 0))
            self._write(g.group_id, [current_assignment_record(g, m)])
            log.info("[GroupId %s] Static member %s with instance id %s temporarily left the consumer group.",
                     g.group_id, m.member_id, m.instance_id)
            self.events.record(g.group_id, "StaticMemberLeft", g.group_epoch, "%s (instance %s) keeps its assignment",
                               m.member_id, m.instance_id)
        else:
            log.info("[GroupId %s] Member %s left the consumer group.", g.group_id, m.member_id)
            self._remove_member(g, m.member_id)
        return HB(error_code=0, member_id=req.member_id, member_epoch=req.member_epoch, heartbeat_interval_ms=0)

    # -- offsets (Kafka: ConsumerGroup.validateOffsetCommit / validateOffsetFetch) -----------------------
    def validate_offset_commit(self, group_id: str, member_id: str, epoch: int, api_version: int,
                               transactional: bool = False, *, instance_id: str | None = None,
                               partitions: Iterable[tuple[str, int]] = ()) -> None:
        """A commit of `member_id` at `epoch` passes or raises Kafka's error (consumer_group_validation.py);
        it restarts the member's session."""
        g = self.groups[group_id]
        m = validate_offset_commit(g, member_id, epoch, api_version, transactional, instance_id, partitions,
                                   self._topics)
        if m is not None:
            self._schedule_session(g, m)

    def validate_offset_fetch(self, group_id: str, member_id: str | None, epoch: int) -> int:
        return validate_offset_fetch(self.groups.get(group_id), member_id, epoch)

    def is_subscribed_to_topic(self, group_id: str, topic: str) -> bool:
        g = self.groups[group_id]
        return any(topic in self.assignments.subscribed_names(g, m) for m in g.members.values())

    # -- Describe / List / Delete ------------------------------------------------------------------
    def describe(self, group_id: str, version: int) -> consumer_group_describe.ConsumerGroupDescribeResponse.DescribedGroup:
        g = self.groups.get(group_id)
        if g is None:
            classic = self._classic_exists(group_id)
            msg = f"Group {group_id} is not a consumer group." if classic is not None else f"Group {group_id} not found."
            return CGD.DescribedGroup(error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=msg, group_id=group_id,
                                      group_state="", members=[])

        def named(a: Assignment) -> consumer_group_describe.ConsumerGroupDescribeResponse.Assignment:
            out = []
            for tid, ps in sorted(a.items(), key=lambda kv: str(kv[0])):
                t = self.assignments.topics.by_id(tid)
                if t is not None and ps:
                    out.append(CGD.TopicPartitions(
                        topic_id=tid, topic_name=t.name, partitions=sorted(ps)))
            return CGD.Assignment(topic_partitions=out)

        members = [CGD.Member(
            member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
            client_id=m.client_id, client_host=m.client_host, subscribed_topic_names=sorted(m.subscribed_topic_names),
            subscribed_topic_regex=m.subscribed_topic_regex, assignment=named(m.assigned),
            target_assignment=named(g.target.get(m.member_id, {})),
            member_type=CONSUMER_MEMBER_TYPE if m.classic is None else CLASSIC_MEMBER_TYPE)
            for m in g.members.values()]
        return CGD.DescribedGroup(error_code=0, group_id=group_id, group_state=g.state.value,
                                  group_epoch=g.group_epoch, assignment_epoch=g.assignment_epoch,
                                  assignor_name=g.assignor_name, members=members)

    def list_entries(self) -> list[tuple[str, str, str, str]]:
        return [(gid, "consumer", g.state.value, "consumer") for gid, g in self.groups.items()]

    def delete(self, group_id: str, offsets_tombstones: list[CoordinatorRecord]) -> int:
        g = self.groups.get(group_id)
        if g is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if g.members:
            return ErrorCode.NON_EMPTY_GROUP
        records = list(offsets_tombstones)
        for regex in g.regex_topics:
            records.append(rec.tombstone(rec.REGULAR_EXPRESSION, group_id, regex))
        records.extend(rec.group_tombstones(group_id))
        self._write(group_id, records)
        g.deleted = True
        del self.groups[group_id]
        self.events.record(group_id, "Dead", g.group_epoch, "group deleted")
        return ErrorCode.NONE
