"""KIP-848 consumer groups: ConsumerGroupHeartbeat, ConsumerGroupDescribe, member sessions.

Theory of operation (Kafka: GroupMetadataManager.consumerGroupHeartbeat and friends). Every
heartbeat runs the same steps on the event loop, without awaiting in between, and appends the
records of what changed to the group's __consumer_offsets partition before it answers:

1. validate the request (the INVALID_REQUEST messages are Kafka's);
2. find the group (created on a member's first join; an empty classic group of the same id is
   replaced, one with members converted by the online upgrade of group_migration.py or refused
   with GROUP_ID_NOT_FOUND as group.consumer.migration.policy says) and the
   member (epoch 0: join or static-member replacement; -1: leave; -2: static leave; otherwise
   the epoch must be the member's current one, or its previous one when what it reports owning
   is still its own -- a lost response retried);
3. update the member's subscription; bump the group epoch when a subscription changed or the
   subscribed topics' metadata did (regexes resolved against the topics now; a topic created,
   deleted or grown shows up here, on the next heartbeat of any member);
4. when the group epoch is ahead of the assignment epoch, run the assignor (the one most
   members ask for with `group.remote.assignor`, else the first of `group.consumer.assignors`);
5. reconcile the member one step (consumer_group.py) and answer with its epoch and, when it
   changed or the member asked with a full request, its assignment.

A member's session (group.consumer.session.timeout.ms) restarts on every heartbeat; a member
that does not revoke within its rebalance timeout is fenced. Both are keyed timers on the loop.
A restart replays the records (consumer_group_records.py) and gives every member a fresh session.
"""

from __future__ import annotations

import hashlib
import logging
import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from minibroker.config import BrokerConfig
from minibroker.coordinator.group import consumer_group_records as rec
from minibroker.coordinator.group.assignors import ASSIGNORS, MemberSpec, assignor_names
from minibroker.coordinator.group.consumer_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    copy_assignment,
    count,
    same_assignment,
)
from minibroker.coordinator.group.group_events import GroupEvents
from minibroker.coordinator.group.group_metadata_manager import write_records
from minibroker.coordinator.runtime.coordinator_store import CoordinatorStore
from minibroker.coordinator.runtime.keyed_timer import KeyedTimer
from minibroker.coordinator.runtime.partition_writer import CoordinatorRecord
from minibroker.topics import TopicRegistry
from protocol.apis import consumer_group_describe, consumer_group_heartbeat
from protocol.errors import ErrorCode, KafkaError
from storage.clock import Clock

log = logging.getLogger("minibroker.coordinator.consumer_group")

HB: Any = consumer_group_heartbeat.RESPONSE
CGD: Any = consumer_group_describe.RESPONSE
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


class _Invalid(KafkaError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_REQUEST, message)


class ConsumerGroupManager:
    """Every consumer group of the broker."""

    def __init__(self, config: ConsumerGroupConfig, store: CoordinatorStore, topics: TopicRegistry | None, *,
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
        # with an authorizer, the DESCRIBE check of the principal whose heartbeat last refreshed the
        # group's regexes: resolved topics it may not DESCRIBE are left out (Kafka: GroupMetadataManager)
        self.regex_topic_filters: dict[str, Callable[[str], bool]] = {}
        self.timer = KeyedTimer()
        self.events = GroupEvents(now_ms)  # the rebalance timeline; the coordinator shares one
        # Online migration between the protocols (group_migration.py sets these): convert a
        # classic group with members (or raise Kafka's refusal), and convert a group whose
        # remaining members all speak the classic protocol back (True: done, records written).
        self.upgrade_classic: Callable[[str, list[CoordinatorRecord]], ConsumerGroup] | None = None
        self.maybe_downgrade: Callable[[ConsumerGroup, set[str]], bool] | None = None

    # -- config --------------------------------------------------------------------------------
    def session_timeout_ms(self, group_id: str) -> int:
        return self.group_configs.get(group_id, {}).get("consumer.session.timeout.ms", self.config.session_timeout_ms)

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return self.group_configs.get(group_id, {}).get("consumer.heartbeat.interval.ms",
                                                        self.config.heartbeat_interval_ms)

    # -- persistence ---------------------------------------------------------------------------
    def _write(self, group_id: str, records: list[CoordinatorRecord]) -> None:
        write_records(self.store, group_id, records)

    def _member_record(self, g: ConsumerGroup, m: ConsumerGroupMember) -> CoordinatorRecord:
        return rec.member_metadata(g.group_id, m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                                   client_id=m.client_id, client_host=m.client_host,
                                   topic_names=m.subscribed_topic_names, topic_regex=m.subscribed_topic_regex,
                                   rebalance_timeout_ms=m.rebalance_timeout_ms, server_assignor=m.server_assignor,
                                   classic=None if m.classic is None else (m.classic.session_timeout_ms,
                                                                           m.classic.protocols))

    @staticmethod
    def _current_record(g: ConsumerGroup, m: ConsumerGroupMember) -> CoordinatorRecord:
        return rec.current_member_assignment(g.group_id, m.member_id, epoch=m.member_epoch,
                                             previous_epoch=m.previous_member_epoch, state=int(m.state),
                                             assigned=m.assigned, pending_revocation=m.pending_revocation,
                                             epochs=m.assignment_epochs)

    def replay(self, key: bytes, value: bytes | None) -> None:
        """Apply one record read back from __consumer_offsets (Kafka: GroupMetadataManager.replay)."""
        r = rec.decode_consumer_group_record(key, value)
        g = self.groups.get(r.group)
        if g is None:
            if r.value is None:
                return
            g = self.groups[r.group] = ConsumerGroup(r.group)
        v = r.value
        if r.type == rec.GROUP_METADATA:
            if v is None:
                del self.groups[r.group]
            else:
                g.group_epoch, g.metadata_hash = v.epoch, v.metadata_hash
        elif r.type == rec.MEMBER_METADATA:
            assert r.sub_key is not None
            if v is None:
                g.remove_member(r.sub_key)
                return
            m = g.members.get(r.sub_key)
            if m is None:
                m = ConsumerGroupMember(r.sub_key)
                g.add_member(m)
            m.instance_id, m.rack_id, m.client_id, m.client_host = v.instance_id, v.rack_id, v.client_id, v.client_host
            m.subscribed_topic_names = list(v.subscribed_topic_names)
            m.subscribed_topic_regex = v.subscribed_topic_regex
            m.rebalance_timeout_ms, m.server_assignor = v.rebalance_timeout_ms, v.server_assignor
            cm = v.classic_member_metadata
            m.classic = None if cm is None else ClassicMemberMetadata(
                cm.session_timeout_ms, [(p.name, bytes(p.metadata)) for p in cm.supported_protocols])
            if m.instance_id is not None:
                g.static_members[m.instance_id] = m.member_id
        elif r.type == rec.TARGET_ASSIGNMENT_MEMBER:
            assert r.sub_key is not None
            if v is None:
                g.target.pop(r.sub_key, None)
            else:
                g.target[r.sub_key] = rec.assignment_of(v.topic_partitions)
        elif r.type == rec.TARGET_ASSIGNMENT_METADATA:
            g.assignment_epoch = 0 if v is None else v.assignment_epoch
        elif r.type == rec.CURRENT_MEMBER_ASSIGNMENT:
            assert r.sub_key is not None
            m = g.members.get(r.sub_key)
            if v is None or m is None:
                return
            epochs = rec.assignment_epochs_of(v.assigned_partitions, v.member_epoch)
            epochs.update(rec.assignment_epochs_of(v.partitions_pending_revocation, v.member_epoch))
            g.update_current(m, epoch=v.member_epoch, state=MemberState(v.state),
                             assigned=rec.assignment_of(v.assigned_partitions),
                             pending=rec.assignment_of(v.partitions_pending_revocation), epochs=epochs)
            m.previous_member_epoch = v.previous_member_epoch
        elif r.type == rec.REGULAR_EXPRESSION:
            assert r.sub_key is not None
            if v is None:
                g.regex_topics.pop(r.sub_key, None)
            else:
                g.regex_topics[r.sub_key] = set(v.topics)

    def start_sessions(self) -> None:
        """After a load: every member gets a fresh session (Kafka does the same on failover)."""
        for g in self.groups.values():
            g.assignor_name = self._preferred_assignor(g)
            for m in g.members.values():
                self._schedule_session(g, m)

    def unload(self) -> None:
        self.timer.cancel_all()
        self.groups.clear()

    # -- topics ----------------------------------------------------------------------------------
    @property
    def topics(self) -> TopicRegistry:
        if self._topics is None:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "consumer groups need the topic registry")
        return self._topics

    def _resolve_regex(self, regex: str) -> set[str]:
        pattern = re.compile(regex)
        return {t.name for t in self.topics.values() if not t.is_internal and pattern.fullmatch(t.name)}

    def _subscribed_names(self, g: ConsumerGroup, m: ConsumerGroupMember) -> set[str]:
        names = set(m.subscribed_topic_names)
        if m.subscribed_topic_regex:
            names |= g.regex_topics.get(m.subscribed_topic_regex, set())
        return names

    def _refresh_regexes(self, g: ConsumerGroup, records: list[CoordinatorRecord]) -> None:
        wanted = {m.subscribed_topic_regex for m in g.members.values() if m.subscribed_topic_regex}
        for regex in list(g.regex_topics):
            if regex not in wanted:
                del g.regex_topics[regex]
                records.append(rec.tombstone(rec.REGULAR_EXPRESSION, g.group_id, regex))
        for regex in wanted:
            try:
                topics = self._resolve_regex(regex)
            except re.error:
                continue
            if (may_describe := self.regex_topic_filters.get(g.group_id)) is not None:
                topics = {t for t in topics if may_describe(t)}
            if g.regex_topics.get(regex) != topics:
                g.regex_topics[regex] = topics
                records.append(rec.regular_expression(g.group_id, regex, sorted(topics), 0, self.now_ms()))

    def _metadata(self, g: ConsumerGroup) -> tuple[dict[uuid.UUID, int], int]:
        """The partition counts of every topic the group subscribes to, and their hash."""
        names: set[str] = set()
        for m in g.members.values():
            names |= self._subscribed_names(g, m)
        counts: dict[uuid.UUID, int] = {}
        h = hashlib.sha256()
        for name in sorted(names):
            topic = self.topics.get(name)
            if topic is None:
                continue
            counts[topic.topic_id] = len(topic.partitions)
            h.update(f"{name}\0{topic.topic_id}\0{len(topic.partitions)}\n".encode())
        digest = int.from_bytes(h.digest()[:8], "big", signed=True) if counts else 0
        return counts, digest

    def _topic_ids(self, names: Iterable[str]) -> frozenset[uuid.UUID]:
        out = set()
        for n in names:
            t = self.topics.get(n)
            if t is not None:
                out.add(t.topic_id)
        return frozenset(out)

    # -- assignment --------------------------------------------------------------------------------
    def _preferred_assignor(self, g: ConsumerGroup) -> str:
        votes: dict[str, int] = {}
        for m in g.members.values():
            if m.server_assignor:
                votes[m.server_assignor] = votes.get(m.server_assignor, 0) + 1
        if votes:
            return max(sorted(votes), key=lambda n: votes[n])
        return self.config.assignors[0]

    def _compute_target(self, g: ConsumerGroup, partitions: dict[uuid.UUID, int],
                        records: list[CoordinatorRecord]) -> None:
        g.assignor_name = self._preferred_assignor(g)
        specs = {mid: MemberSpec(self._topic_ids(self._subscribed_names(g, m)), g.target.get(mid, {}))
                 for mid, m in g.members.items()}
        new = ASSIGNORS[g.assignor_name].assign(specs, partitions)
        for mid, a in new.items():
            if mid not in g.target or not same_assignment(g.target[mid], a):
                records.append(rec.target_assignment_member(g.group_id, mid, a))
            g.target[mid] = copy_assignment(a)
        g.assignment_epoch = g.group_epoch
        records.append(rec.target_assignment_metadata(g.group_id, g.assignment_epoch, self.now_ms()))
        if self.events.enabled:
            self.events.record(g.group_id, "TargetAssignment", g.group_epoch, "assignor %s: %s", g.assignor_name,
                               ", ".join(f"{mid[:8]}… {count(a)}" for mid, a in sorted(g.target.items())) or "-")

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
        self._refresh_regexes(g, records)
        _, g.metadata_hash = self._metadata(g)
        g.group_epoch += 1
        records.append(rec.group_metadata(g.group_id, g.group_epoch, g.metadata_hash))
        self.events.record(g.group_id, "GroupEpoch", g.group_epoch, "member %s removed", member_id)
        self._write(g.group_id, records)

    def cancel_member_timers(self, group_id: str, member_id: str) -> None:
        for kind in ("cg-session", "cg-rebalance", "cg-join", "cg-sync"):
            self.timer.cancel((kind, group_id, member_id))

    # -- ConsumerGroupHeartbeat ------------------------------------------------------------------------
    def heartbeat(self, req: Any, version: int, client_id: str, client_host: str,
                  may_describe: Callable[[str], bool] | None = None) -> Any:
        if may_describe is not None and req.group_id:
            self.regex_topic_filters[req.group_id] = may_describe
        try:
            return self._heartbeat(req, version, client_id, client_host)
        except KafkaError as e:
            return HB(error_code=e.code, error_message=e.message or None, member_epoch=0, heartbeat_interval_ms=0)

    def _validate(self, req: Any, version: int) -> None:
        """Kafka: throwIfConsumerGroupHeartbeatRequestIsInvalid."""
        if version >= 1 and not req.member_id:
            raise _Invalid("MemberId can't be empty.")
        if not req.group_id:
            raise _Invalid("GroupId can't be empty.")
        if req.rack_id is not None and not req.rack_id.strip():
            raise _Invalid("RackId can't be empty.")
        if req.instance_id is not None and not req.instance_id.strip():
            raise _Invalid("InstanceId can't be empty.")
        if req.member_epoch > 0 or req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            if not req.member_id:
                raise _Invalid("MemberId can't be empty.")
        elif req.member_epoch == 0:
            if req.rebalance_timeout_ms == -1:
                raise _Invalid("RebalanceTimeoutMs must be provided in first request.")
            if req.topic_partitions is None or req.topic_partitions:
                raise _Invalid("TopicPartitions must be empty when (re-)joining.")
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                raise _Invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if not req.member_id:
                raise _Invalid("MemberId can't be empty.")
            if req.instance_id is None:
                raise _Invalid("InstanceId can't be null.")
        else:
            raise _Invalid(f"MemberEpoch is invalid: {req.member_epoch}")
        if req.server_assignor is not None and req.server_assignor not in self.config.assignors:
            raise KafkaError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                             f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
                             f"{', '.join(self.config.assignors)}.")
        if req.subscribed_topic_regex is not None:
            try:
                re.compile(req.subscribed_topic_regex)
            except re.error as e:
                raise KafkaError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                                 f"SubscribedTopicRegex `{req.subscribed_topic_regex}` is not a valid regular "
                                 f"expression: {e}.") from None

    def _heartbeat(self, req: Any, version: int, client_id: str, client_host: str) -> Any:
        self._validate(req, version)
        gid = req.group_id
        if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(req)
        g = self.groups.get(gid)
        records: list[CoordinatorRecord] = []
        if g is None:
            classic = self._classic_exists(gid)
            if classic and (req.member_epoch != 0 or self.upgrade_classic is None):
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group.")
            if req.member_epoch != 0:
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
        if req.member_epoch == 0:
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
            self._check_epoch(m, req.member_epoch, owned)
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
        send = req.member_epoch == 0 or owned is not None or not same_assignment(before, m.assigned)
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
            records.append(self._member_record(g, m))
            bump = bump or m.assignment_inputs() != before_inputs
        self._refresh_regexes(g, records)
        partitions, digest = self._metadata(g)
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
            self._compute_target(g, partitions, records)
        if g.reconcile(m, owned):
            records.append(self._current_record(g, m))
            self.events.record(gid, "MemberEpoch", g.group_epoch, "%s: epoch %d, %s, owns %d, revoking %d",
                               m.member_id, m.member_epoch, m.state.name, count(m.assigned),
                               count(m.pending_revocation))

    def member_record(self, g: ConsumerGroup, m: ConsumerGroupMember) -> CoordinatorRecord:
        return self._member_record(g, m)

    def current_record(self, g: ConsumerGroup, m: ConsumerGroupMember) -> CoordinatorRecord:
        return self._current_record(g, m)

    def metadata_hash(self, g: ConsumerGroup) -> int:
        return self._metadata(g)[1]

    def write(self, group_id: str, records: list[CoordinatorRecord]) -> None:
        self._write(group_id, records)

    def schedule_session(self, g: ConsumerGroup, m: ConsumerGroupMember) -> None:
        self._schedule_session(g, m)

    def expire(self, group_id: str, member_id: str, why: str) -> None:
        self._expire(group_id, member_id, why)

    def _join(self, g: ConsumerGroup, req: Any, member_id: str, records: list[CoordinatorRecord]
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
                records.append(self._member_record(g, m))
                records.append(rec.target_assignment_member(g.group_id, member_id, target))
                records.append(self._current_record(g, m))
                return m
        existing = g.members.get(member_id)
        if existing is not None:
            # A member that lost its epoch rejoins under its id: it starts over, empty-handed.
            g.update_current(existing, epoch=0, state=MemberState.STABLE, assigned={}, pending={})
            return existing
        return ConsumerGroupMember(member_id, instance_id=req.instance_id)

    @staticmethod
    def _check_epoch(m: ConsumerGroupMember, epoch: int, owned: Assignment | None) -> None:
        """Kafka: throwIfMemberEpochIsInvalid."""
        if epoch > m.member_epoch:
            raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"The consumer group member has a greater member epoch ({epoch}) than the one "
                             f"known by the group coordinator ({m.member_epoch}). The member must abandon "
                             f"all its partitions and rejoin.")
        if epoch < m.member_epoch:
            subset = owned is not None and all(ps <= m.assigned.get(t, set()) for t, ps in owned.items())
            if epoch != m.previous_member_epoch or not subset:
                raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                                 f"The consumer group member has a smaller member epoch ({epoch}) than the "
                                 f"one known by the group coordinator ({m.member_epoch}). The member must "
                                 f"abandon all its partitions and rejoin.")

    def _leave(self, req: Any) -> Any:
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
            self._write(g.group_id, [self._current_record(g, m)])
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
        """Kafka 4.4: ConsumerGroup.validateOffsetCommit. A commit at the member's epoch passes; one
        at an older epoch passes only when every partition in `partitions` (topic name, index) is
        the member's (owned or being revoked) since that epoch or before; a newer epoch never does.
        A refused partition refuses the whole request, as in Kafka (OffsetMetadataManager)."""
        g = self.groups[group_id]
        if epoch < 0 and not g.members:
            return  # an admin, or a consumer without group management, on an empty group
        if transactional and epoch == -1 and member_id == "" and instance_id is None:
            return  # a transactional producer that names no member (Kafka 4.4: same)
        m = g.members.get(member_id)
        if m is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        if not transactional and api_version < 9 and m.classic is None:
            # a classic-protocol member commits with its generation (= member epoch) at any version
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "OffsetCommit version 9 or above must be used by "
                                                            "members using the consumer group protocol")
        # a classic-protocol member hears ILLEGAL_GENERATION; so does TxnOffsetCommit up to v5,
        # which has no STALE_MEMBER_EPOCH (Kafka: OffsetMetadataManager maps it)
        stale = (ErrorCode.ILLEGAL_GENERATION if transactional or m.classic is not None
                 else ErrorCode.STALE_MEMBER_EPOCH)
        if epoch > m.member_epoch:
            raise KafkaError(stale, f"Received member epoch {epoch} is newer than current member epoch "
                                    f"{m.member_epoch}.")
        if epoch < m.member_epoch:
            for name, p in partitions:
                topic = self._topics.get(name) if self._topics is not None else None
                assigned = m.assignment_epoch(topic.topic_id, p) if topic is not None else None
                if assigned is None:
                    raise KafkaError(stale, f"Partition {name}-{p} is not assigned or pending revocation for member.")
                if epoch < assigned:
                    raise KafkaError(stale, f"Received member epoch {epoch} is older than assignment epoch "
                                            f"{assigned} for partition {name}-{p}.")
        self._schedule_session(g, m)

    def validate_offset_fetch(self, group_id: str, member_id: str | None, epoch: int) -> int:
        """OffsetFetch v9+ from a member (ConsumerGroup.validateOffsetFetch): a request naming a
        member id must come from a member of the group, at its epoch; without a member id (an
        admin, a consumer without group management), or with epoch -1 on an empty group, it may
        read. Kafka 4.4 answers ("", -1) on a group with members UNKNOWN_MEMBER_ID too."""
        g = self.groups.get(group_id)
        if g is None or member_id is None or (epoch < 0 and not g.members):
            return ErrorCode.NONE
        m = g.members.get(member_id)
        if m is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if epoch != m.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    def is_subscribed_to_topic(self, group_id: str, topic: str) -> bool:
        g = self.groups[group_id]
        return any(topic in self._subscribed_names(g, m) for m in g.members.values())

    # -- Describe / List / Delete ------------------------------------------------------------------
    def describe(self, group_id: str, version: int) -> Any:
        g = self.groups.get(group_id)
        if g is None:
            classic = self._classic_exists(group_id)
            msg = f"Group {group_id} is not a consumer group." if classic is not None else f"Group {group_id} not found."
            return CGD.DescribedGroup(error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=msg, group_id=group_id,
                                      group_state="", members=[])

        def named(a: Assignment) -> Any:
            out = []
            for tid, ps in sorted(a.items(), key=lambda kv: str(kv[0])):
                t = self.topics.by_id(tid)
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

    def on_topics_changed(self) -> None:
        """Nothing to do eagerly: the next heartbeat of each group sees the new metadata hash."""
