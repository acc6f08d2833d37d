"""KIP-1071 streams groups: StreamsGroupHeartbeat, StreamsGroupDescribe, member sessions.

Theory of operation (Kafka: GroupMetadataManager.streamsGroupHeartbeat). Each heartbeat runs on the
event loop without awaiting:

1. validate the request (a joining member sends its topology, process id and rebalance timeout;
   INVALID_REQUEST otherwise);
2. find or create the group and the member: epoch 0 joins (a static member's instance id takes
   over its predecessor's tasks), -1 leaves, -2 is a static member leaving for a restart; any
   other epoch must be the member's current one (or its previous one, a lost response retried);
3. take the topology when the group has none or a member sends a newer epoch, and configure it
   against the topics that exist (streams_group.configure_topology); what is missing is reported
   in the response's Status (the handler has already created the missing internal topics, as
   Kafka's coordinator asks the controller to);
4. when the group epoch moved past the assignment epoch and the topology is ready, compute the
   target assignment (streams_task_assignor.py);
5. move the member one step towards its target: give up (UNREVOKED_TASKS), then receive what the
   other members released (UNRELEASED_TASKS until they have), then STABLE at the target epoch.

Sessions (group.streams.session.timeout.ms) restart on every heartbeat; a member whose session
ends is removed and the group rebalances.

Persistence: after each heartbeat, session expiry or deletion the group's changed records are
appended to __consumer_offsets (streams_group_records.py); a coordinator that loads the partition
replays them, so the group, its epochs, topology and assignments outlive a restart or a move.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from minibroker.config import BrokerConfig
from minibroker.coordinator.group import streams_group_records as records
from minibroker.coordinator.group.streams_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    MemberState,
    StatusCode,
    StreamsGroup,
    StreamsGroupMember,
    StreamsTopology,
    Tasks,
    TasksTuple,
    TopicInfo,
    configure_topology,
    task_set,
    tasks_from_set,
    tasks_of,
)
from minibroker.coordinator.group.streams_group_records import StreamsGroupLog
from minibroker.coordinator.group.streams_task_assignor import AssignorMember, assign
from minibroker.coordinator.runtime.keyed_timer import KeyedTimer
from minibroker.coordinator.runtime.partition_writer import CoordinatorRecord
from minibroker_protocol.apis import streams_group_describe, streams_group_heartbeat
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_storage.clock import Clock

log = logging.getLogger("minibroker.coordinator.streams_group")

HB = streams_group_heartbeat.RESPONSE
_ASSIGNMENT_DELAYED = HB.Status(status_code=StatusCode.ASSIGNMENT_DELAYED,
                                status_detail="Assignment delayed due to the configured initial rebalance delay.")
SGD = streams_group_describe.RESPONSE
Req = streams_group_heartbeat.StreamsGroupHeartbeatRequest


@dataclass(slots=True)
class StreamsGroupConfig:
    """Broker settings of streams groups; defaults are Kafka 4.4's."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    num_standby_replicas: int = 0
    # Kafka's default is 3000 (group.streams.initial.rebalance.delay.ms, read by from_broker_config);
    # 0 here so that a manager built without a broker config assigns at once
    initial_rebalance_delay_ms: int = 0
    # only told to the members in each heartbeat answer, as Kafka 4.4 does (GroupMetadataManager.
    # streamsGroupHeartbeat sets AcceptableRecoveryLag and TaskOffsetIntervalMs from the group's
    # config; AcceptableRecoveryLagLegacy, v0 only, stays 0: Kafka never sets it, and its generated
    # StreamsGroupHeartbeatResponseData refuses a non-zero one at v1+). They steer warm-up tasks,
    # which Kafka 4.4's coordinator does not hand out (AssignmentRefiner.refine returns the target
    # assignment; docs/differences.md)
    acceptable_recovery_lag: int = 10_000
    task_offset_interval_ms: int = 60_000

    @classmethod
    def from_broker_config(cls, cfg: BrokerConfig) -> StreamsGroupConfig:
        return cls(session_timeout_ms=cfg.get("group.streams.session.timeout.ms"),
                   heartbeat_interval_ms=cfg.get("group.streams.heartbeat.interval.ms"),
                   num_standby_replicas=cfg.get("group.streams.num.standby.replicas"),
                   initial_rebalance_delay_ms=cfg.get("group.streams.initial.rebalance.delay.ms"),
                   acceptable_recovery_lag=cfg.get("group.streams.acceptable.recovery.lag"),
                   task_offset_interval_ms=cfg.get("group.streams.task.offset.interval.ms"))


def _with_group_configs(c: StreamsGroupConfig, own: Mapping[str, str] | None) -> StreamsGroupConfig:
    """The broker settings with a group's own streams.* GROUP configs over them (Kafka:
    GroupMetadataManager.streamsGroupSessionTimeoutMs and friends), read at each use."""
    if not own:
        return c
    return StreamsGroupConfig(
        session_timeout_ms=int(own.get("streams.session.timeout.ms", c.session_timeout_ms)),
        heartbeat_interval_ms=int(own.get("streams.heartbeat.interval.ms", c.heartbeat_interval_ms)),
        num_standby_replicas=int(own.get("streams.num.standby.replicas", c.num_standby_replicas)),
        initial_rebalance_delay_ms=int(own.get("streams.initial.rebalance.delay.ms", c.initial_rebalance_delay_ms)),
        acceptable_recovery_lag=int(own.get("streams.acceptable.recovery.lag", c.acceptable_recovery_lag)),
        task_offset_interval_ms=int(own.get("streams.task.offset.interval.ms", c.task_offset_interval_ms)))


def _ids(tasks: Tasks) -> list[streams_group_heartbeat.StreamsGroupHeartbeatResponse.TaskIds]:
    return [HB.TaskIds(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items()) if ps]


def _minus(a: Tasks, b: Tasks) -> Tasks:
    return tasks_from_set(task_set(a) - task_set(b))


def _validate(req: Req) -> None:
    """Kafka: GroupMetadataManager.throwIfStreamsGroupHeartbeatRequestIsInvalid."""
    def invalid(msg: str) -> KafkaError:
        return KafkaError(ErrorCode.INVALID_REQUEST, msg)
    if not req.group_id:
        raise invalid("GroupId can't be empty.")
    if not req.member_id:
        raise invalid("MemberId can't be empty.")
    if req.instance_id is not None and not req.instance_id:
        raise invalid("InstanceId can't be empty.")
    if req.member_epoch == 0:
        if req.rebalance_timeout_ms <= 0:
            raise invalid("RebalanceTimeoutMs must be provided and must be greater than 0.")
        if req.topology is None:
            raise invalid("Topology must be non-null when joining the group.")
        if req.process_id is None:
            raise invalid("ProcessId must be provided when joining the group.")
        if req.active_tasks or req.standby_tasks or req.warmup_tasks:
            raise invalid("Assigned tasks must be empty when joining the group.")
    elif req.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise invalid(f"MemberEpoch is {req.member_epoch}, but must be greater than or equal to -2.")


class StreamsGroupManager:
    """Every streams group of the coordinator's __consumer_offsets partitions."""

    def __init__(self, config: StreamsGroupConfig, *, now_ms: Clock,
                 other_group_exists: Callable[[str], bool],
                 write: Callable[[str, list[CoordinatorRecord]], None] | None = None) -> None:
        self.config = config
        self.now_ms = now_ms
        self._other_group_exists = other_group_exists
        self._write = write  # appends to the group's __consumer_offsets partition; KafkaError on failure
        self.groups: dict[str, StreamsGroup] = {}
        self.logs: dict[str, StreamsGroupLog] = {}  # what was written of each group
        self.timer = KeyedTimer()
        # streams.* GROUP configs (coordinator/group/streams_group_configs.py), group id -> key -> text
        self.group_configs: dict[str, dict[str, str]] = {}
        self.delayed_until: dict[str, int] = {}  # group id -> end of its initial rebalance delay

    def config_of(self, group_id: str) -> StreamsGroupConfig:
        return _with_group_configs(self.config, self.group_configs.get(group_id))

    # -- persistence -----------------------------------------------------------------------------
    def _persist(self, group_id: str) -> None:
        """Write the records of `group_id` that changed since the last write (tombstones for what
        is gone); KafkaError when the append fails, the log then still holding the old records."""
        lg = self.logs.setdefault(group_id, StreamsGroupLog())
        before = lg.written
        recs = lg.diff(self.groups.get(group_id), group_id)
        if group_id not in self.groups:
            del self.logs[group_id]
        if recs and self._write is not None:
            try:
                self._write(group_id, recs)
            except KafkaError:
                lg.written = before
                self.logs[group_id] = lg
                raise

    def replay(self, key: bytes, value: bytes | None) -> None:
        """One streams-group record read back from __consumer_offsets (ValueError if unreadable)."""
        records.replay(self.groups, self.logs, key, value)

    def after_load(self, partitions_of: Mapping[str, int]) -> None:
        """Once a partition is loaded: configure the topologies of its groups against the topics
        (the state they report needs it) and start every member's session, as Kafka does for the
        members it loads."""
        for g in self.groups.values():
            if g.topology is not None and g.configured is None:
                g.configured = configure_topology(g.topology, partitions_of)
            for m in g.members.values():
                if not self.timer.is_scheduled(("sg-session", g.group_id, m.member_id)):
                    self._schedule_session(g, m)

    def forget(self, group_ids: Iterable[str]) -> None:
        """This broker no longer leads the partition of these groups (Kafka: onUnloaded)."""
        gone = set(group_ids)
        self.timer.cancel_where(lambda k: isinstance(k, tuple) and len(k) > 1 and k[1] in gone)
        for gid in gone:
            self.groups.pop(gid, None)
            self.logs.pop(gid, None)

    # -- what the handler needs before the heartbeat ---------------------------------------------
    def topics_to_create(self, req: Req, partitions_of: Mapping[str, int]) -> dict[str, tuple[int, dict[str, str]]]:
        """Internal topics of the group's topology (or the joining member's) that do not exist yet:
        name -> (partitions, configs), for the handler to create before the heartbeat runs."""
        g = self.groups.get(req.group_id)
        topology = g.topology if g is not None and g.topology is not None else None
        if req.topology is not None and (topology is None or req.topology.epoch > topology.epoch):
            topology = StreamsTopology.from_request(req.topology)
        if topology is None:
            return {}
        configured = configure_topology(topology, partitions_of)
        return {n: (configured.internal_topics[n].partitions, configured.internal_topics[n].configs)
                for n in configured.missing_internal_topics}

    # -- the heartbeat ---------------------------------------------------------------------------
    def heartbeat(self, req: Req, client_id: str, client_host: str,
                  partitions_of: Mapping[str, int]) -> streams_group_heartbeat.StreamsGroupHeartbeatResponse:
        try:
            _validate(req)
            resp = self._heartbeat(req, client_id, client_host, partitions_of)
        except KafkaError as e:
            resp = HB(error_code=e.code, error_message=e.message or None, member_id=req.member_id, member_epoch=-1)
        try:
            self._persist(req.group_id)
        except KafkaError as e:
            return HB(error_code=e.code, error_message=e.message or None, member_id=req.member_id, member_epoch=-1)
        return resp

    def _heartbeat(self, req: Req, client_id: str, client_host: str,
                   partitions_of: Mapping[str, int]) -> streams_group_heartbeat.StreamsGroupHeartbeatResponse:
        gid = req.group_id
        g = self.groups.get(gid)
        if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            if g is not None and req.member_id in g.members:
                self._remove_member(g, req.member_id, keep_static=req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH)
                self._assign_after_leave(g)
            return HB(error_code=0, member_id=req.member_id, member_epoch=req.member_epoch,
                      heartbeat_interval_ms=0)
        if g is None:
            if req.member_epoch != 0:
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {gid} not found.")
            if self._other_group_exists(gid):
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} is not a streams group.")
            g = self.groups[gid] = StreamsGroup(gid)
        # Kafka bumps the group epoch at most once per heartbeat (a join that brings the first
        # topology is one change, not two)
        epoch_before = g.group_epoch
        m = g.members.get(req.member_id)
        if req.member_epoch == 0:
            m = self._join(g, req, m)
        elif m is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group {gid}.")
        elif req.member_epoch != m.member_epoch:
            owned = tasks_of(req.active_tasks)
            if not (req.member_epoch == m.previous_member_epoch and req.active_tasks is not None
                    and task_set(owned) <= task_set(m.assigned.active)):
                raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                                 f"The streams group member has an epoch ({req.member_epoch}) different from the "
                                 f"one known by the coordinator ({m.member_epoch}).")
        m.client_id, m.client_host = client_id, client_host
        if req.rebalance_timeout_ms > 0:
            m.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.user_endpoint is not None:
            m.user_endpoint = (req.user_endpoint.host, req.user_endpoint.port)
        if req.client_tags is not None:
            m.client_tags = {kv.key: kv.value for kv in req.client_tags}
        if req.topology is not None:
            m.topology_epoch = req.topology.epoch
            if g.topology is None or req.topology.epoch > g.topology.epoch:
                g.topology = StreamsTopology.from_request(req.topology)
                g.group_epoch += 1
        statuses = self._configure(g, partitions_of)
        g.group_epoch = min(g.group_epoch, epoch_before + 1)
        if g.topology is not None and m.topology_epoch < g.topology.epoch:
            statuses.append(HB.Status(status_code=StatusCode.STALE_TOPOLOGY,
                                      status_detail=f"The member's topology epoch {m.topology_epoch} is behind the "
                                                    f"group's {g.topology.epoch}."))
        if epoch_before == 0 and g.group_epoch == 1:
            self._start_initial_delay(g)
        # a topology not ready yet is assigned too, with no tasks: the member moves to the group
        # epoch and waits (Kafka does the same), instead of rejoining at epoch 0
        if g.configured is not None and g.assignment_epoch < g.group_epoch:
            if self._delayed(gid):
                statuses.append(_ASSIGNMENT_DELAYED)
            else:
                self._compute_target(g)
        before = (m.member_epoch, m.assigned.active, m.assigned.standby, m.assigned.warmup)
        reported = None if req.active_tasks is None else tasks_of(req.active_tasks)
        self._reconcile(g, m, reported)
        m.stamp_task_epochs()
        self._schedule_session(g, m)
        full = req.member_epoch == 0 or req.active_tasks is not None
        changed = before != (m.member_epoch, m.assigned.active, m.assigned.standby, m.assigned.warmup)
        cfg = self.config_of(g.group_id)  # AcceptableRecoveryLagLegacy: 0, its default, as on Kafka 4.4
        resp = HB(error_code=0, member_id=m.member_id, member_epoch=m.member_epoch, status=statuses or None,
                  heartbeat_interval_ms=cfg.heartbeat_interval_ms, acceptable_recovery_lag=cfg.acceptable_recovery_lag,
                  task_offset_interval_ms=cfg.task_offset_interval_ms, endpoint_information_epoch=g.endpoint_information_epoch)
        if full or changed:
            resp.active_tasks = _ids(m.assigned.active)
            resp.standby_tasks = _ids(m.assigned.standby)
            resp.warmup_tasks = _ids(m.assigned.warmup)
        return resp

    def _join(self, g: StreamsGroup, req: Req, m: StreamsGroupMember | None) -> StreamsGroupMember:
        if m is not None and m.member_epoch != 0:
            # a member rejoining with epoch 0 starts afresh (Kafka: the member lost its state)
            self._remove_member(g, m.member_id, keep_static=False)
            m = None
        if m is None:
            m = StreamsGroupMember(req.member_id, instance_id=req.instance_id, rack_id=req.rack_id,
                                   process_id=req.process_id or "")
            old_id = g.static_members.get(req.instance_id) if req.instance_id else None
            old = g.members.pop(old_id, None) if old_id is not None else None
            if old is not None:
                # a static member back under a new member id keeps its predecessor's tasks and epoch
                # (Kafka: static membership replacement, no rebalance)
                self.timer.cancel(("sg-session", g.group_id, old.member_id))
                m.member_epoch, m.previous_member_epoch = old.member_epoch, old.previous_member_epoch
                m.assigned = old.assigned
                m.task_epochs = old.task_epochs
                if old_id in g.target:
                    g.target[m.member_id] = g.target.pop(old_id)
            else:
                g.group_epoch += 1
            g.members[m.member_id] = m
            if req.instance_id:
                g.static_members[req.instance_id] = m.member_id
        return m

    def _remove_member(self, g: StreamsGroup, member_id: str, *, keep_static: bool) -> None:
        m = g.members.get(member_id)
        if m is None:
            return
        self.timer.cancel(("sg-session", g.group_id, member_id))
        if keep_static and m.instance_id:
            # -2: the static member comes back soon; its tasks wait for it until its session ends
            m.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
            self.timer.schedule(("sg-session", g.group_id, member_id), self.config_of(g.group_id).session_timeout_ms,
                                lambda: self._expire(g.group_id, member_id))
            return
        del g.members[member_id]
        g.target.pop(member_id, None)
        if m.instance_id and g.static_members.get(m.instance_id) == member_id:
            del g.static_members[m.instance_id]
        g.group_epoch += 1

    def _expire(self, gid: str, member_id: str) -> None:
        g = self.groups.get(gid)
        if g is not None and member_id in g.members:
            log.info("Streams group %s: member %s left (session timeout)", gid, member_id)
            self._remove_member(g, member_id, keep_static=False)
            self._assign_after_leave(g)
            try:
                self._persist(gid)
            except KafkaError as e:
                log.warning("Streams group %s: writing the removal of %s failed: %s", gid, member_id, e)

    def _assign_after_leave(self, g: StreamsGroup) -> None:
        """Kafka 4.4 computes the new target as soon as a member is gone (its records show the
        assignment epoch following the group epoch after a leave or an expiry, with no heartbeat
        in between), so the remaining members learn of it on their next heartbeat."""
        if (g.configured is not None and g.topology is not None and g.assignment_epoch < g.group_epoch
                and not self._delayed(g.group_id)):
            self._compute_target(g)

    def _start_initial_delay(self, g: StreamsGroup) -> None:
        """A new group's first join (Kafka 4.4): an empty target at epoch 1, group epoch 2, no
        assignment until group.streams.initial.rebalance.delay.ms ends (ASSIGNMENT_DELAYED)."""
        delay = self.config_of(g.group_id).initial_rebalance_delay_ms
        if delay <= 0 or g.configured is None:
            return
        g.target = {mid: TasksTuple() for mid in g.members}
        g.assignment_epoch = 1
        g.group_epoch = 2
        self.logs.setdefault(g.group_id, StreamsGroupLog()).assignment_timestamp = self.now_ms()
        self.delayed_until[g.group_id] = self.now_ms() + delay

    def _delayed(self, gid: str) -> bool:
        if self.delayed_until.get(gid, -1) <= self.now_ms():
            self.delayed_until.pop(gid, None)
        return gid in self.delayed_until

    def _schedule_session(self, g: StreamsGroup, m: StreamsGroupMember) -> None:
        gid, mid = g.group_id, m.member_id
        self.timer.schedule(("sg-session", gid, mid), self.config_of(gid).session_timeout_ms,
                            lambda: self._expire(gid, mid))

    # -- topology and assignment -----------------------------------------------------------------
    def _configure(self, g: StreamsGroup, partitions_of: Mapping[str, int]
                   ) -> list[streams_group_heartbeat.StreamsGroupHeartbeatResponse.Status]:
        if g.topology is None:
            return []
        configured = configure_topology(g.topology, partitions_of)
        lg = self.logs.setdefault(g.group_id, StreamsGroupLog())
        lg.metadata_hash = records.metadata_hash(g.topology, partitions_of)
        if configured.ready:
            lg.validated_topology_epoch = g.topology.epoch
        if g.configured is None or configured.task_counts != g.configured.task_counts:
            g.group_epoch += 1 if g.configured is not None else 0
        g.configured = configured
        out = []
        if configured.missing_source_topics:
            out.append(HB.Status(status_code=StatusCode.MISSING_SOURCE_TOPICS,
                                 status_detail="Source topics " + ", ".join(configured.missing_source_topics)
                                               + " are missing."))
        if configured.missing_internal_topics:
            out.append(HB.Status(status_code=StatusCode.MISSING_INTERNAL_TOPICS,
                                 status_detail="Internal topics are missing: "
                                               + ", ".join(configured.missing_internal_topics)))
        if configured.incorrectly_partitioned:
            out.append(HB.Status(status_code=StatusCode.INCORRECTLY_PARTITIONED_TOPICS,
                                 status_detail="Following topics are incorrectly partitioned: "
                                               + ", ".join(configured.incorrectly_partitioned)))
        return out

    def _compute_target(self, g: StreamsGroup) -> None:
        assert g.configured is not None and g.topology is not None
        stateful = {s.subtopology_id for s in g.topology.subtopologies if s.state_changelog_topics}
        live = {mid: m for mid, m in g.members.items() if m.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH}
        members = {mid: AssignorMember(m.process_id, g.target.get(mid, m.assigned)) for mid, m in live.items()}
        standby = self.config_of(g.group_id).num_standby_replicas
        g.target = assign(members, g.configured.task_counts, stateful, standby)
        g.assignment_epoch = g.group_epoch
        lg = self.logs.setdefault(g.group_id, StreamsGroupLog())
        # Kafka 4.4 stamps the assignments its assignor computed; an empty group's has none (0)
        lg.assignment_timestamp = self.now_ms() if live else 0
        # Kafka: the assignment configs the target was computed with (StreamsGroupMetadataValue)
        lg.last_assignment_configs = {"num.standby.replicas": str(standby)}

    def _reconcile(self, g: StreamsGroup, m: StreamsGroupMember, reported: Tasks | None) -> None:
        """One step of Kafka's streams.CurrentAssignmentBuilder (in the initial delay: empty targets)."""
        target = g.target.get(m.member_id, TasksTuple() if self._delayed(g.group_id) else None)
        if target is None:
            return
        if m.state is MemberState.UNREVOKED_TASKS:
            if reported is None or not task_set(reported) <= task_set(m.assigned.active):
                return  # still owns what it must give up
            m.pending_revocation = {}
        elif m.member_epoch != g.assignment_epoch:
            revoke = _minus(m.assigned.active, target.active)
            if revoke:
                m.assigned = TasksTuple(tasks_from_set(task_set(m.assigned.active) & task_set(target.active)),
                                        target.standby, target.warmup)
                m.pending_revocation = revoke
                m.state = MemberState.UNREVOKED_TASKS
                return
        # step to the target: the active tasks no other member still holds
        blocked = {t for t in task_set(target.active) if g.owner_of_active(t, m.member_id) is not None}
        if m.member_epoch != g.assignment_epoch:
            m.previous_member_epoch, m.member_epoch = m.member_epoch, g.assignment_epoch
        m.assigned = TasksTuple(tasks_from_set(task_set(target.active) - blocked), target.standby, target.warmup)
        m.state = MemberState.UNRELEASED_TASKS if blocked else MemberState.STABLE

    # -- offsets of members ----------------------------------------------------------------------
    def validate_offset_commit(self, group_id: str, member_id: str, epoch: int) -> None:
        """Kafka: StreamsGroup.validateOffsetCommit: a member at its epoch, or -1 for an admin."""
        g = self.groups[group_id]
        if epoch < 0 and not member_id:
            if g.members:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
            return
        m = g.members.get(member_id)
        if m is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
        if epoch != m.member_epoch:
            raise KafkaError(ErrorCode.STALE_MEMBER_EPOCH)
        self._schedule_session(g, m)

    def is_subscribed_to_topic(self, group_id: str, topic: str) -> bool:
        """An empty group reads nothing: its offsets may be deleted (Kafka: OffsetDelete on an
        Empty streams group succeeds)."""
        g = self.groups[group_id]
        return bool(g.members) and g.topology is not None and any(topic in s.source_topics or topic in {r.name for r in s.repartition_source_topics}
                                              for s in g.topology.subtopologies)

    # -- Describe / List ---------------------------------------------------------------------------
    def describe(self, group_id: str) -> streams_group_describe.StreamsGroupDescribeResponse.DescribedGroup:
        g = self.groups.get(group_id)
        if g is None:
            return SGD.DescribedGroup(error_code=ErrorCode.GROUP_ID_NOT_FOUND, group_id=group_id, group_state="",
                                      error_message=f"Group {group_id} not found.", members=[])
        topology = None
        if g.topology is not None:
            sizes = g.configured.internal_topics if g.configured else {}

            def info(i: TopicInfo) -> streams_group_describe.StreamsGroupDescribeResponse.TopicInfo:
                n = sizes[i.name].partitions if i.name in sizes else i.partitions
                return SGD.TopicInfo(name=i.name, partitions=n, replication_factor=i.replication_factor,
                                     topic_configs=[SGD.KeyValue(key=k, value=v) for k, v in sorted(i.configs.items())])
            topology = SGD.Topology(epoch=g.topology.epoch, subtopologies=[
                SGD.Subtopology(subtopology_id=s.subtopology_id, source_topics=s.source_topics,
                                repartition_sink_topics=s.repartition_sink_topics,
                                state_changelog_topics=[info(i) for i in s.state_changelog_topics],
                                repartition_source_topics=[info(i) for i in s.repartition_source_topics])
                for s in g.topology.subtopologies])

        def ids(tasks: Tasks) -> list[streams_group_describe.StreamsGroupDescribeResponse.TaskIds]:
            return [SGD.TaskIds(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items()) if ps]

        def assignment(t: TasksTuple) -> streams_group_describe.StreamsGroupDescribeResponse.Assignment:
            return SGD.Assignment(active_tasks=ids(t.active), standby_tasks=ids(t.standby), warmup_tasks=ids(t.warmup))
        members = [SGD.Member(member_id=m.member_id, member_epoch=m.member_epoch, instance_id=m.instance_id,
                              rack_id=m.rack_id, client_id=m.client_id, client_host=m.client_host,
                              topology_epoch=m.topology_epoch, process_id=m.process_id,
                              user_endpoint=None if m.user_endpoint is None
                              else SGD.Endpoint(host=m.user_endpoint[0], port=m.user_endpoint[1]),
                              client_tags=[SGD.KeyValue(key=k, value=v) for k, v in sorted(m.client_tags.items())],
                              task_offsets=[], task_end_offsets=[], assignment=assignment(m.assigned),
                              target_assignment=assignment(g.target.get(m.member_id, TasksTuple())),
                              is_classic=False)
                   for m in g.members.values()]
        return SGD.DescribedGroup(group_id=group_id, group_state=g.state().value, group_epoch=g.group_epoch,
                                  assignment_epoch=g.assignment_epoch, topology=topology, members=members,
                                  assignor_name="sticky")

    def list_entries(self) -> list[tuple[str, str, str, str]]:
        return [(gid, "streams", g.state().value, "streams") for gid, g in self.groups.items()]

    def delete(self, group_id: str) -> int:
        g = self.groups.get(group_id)
        if g is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if g.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self.groups[group_id]
        try:
            self._persist(group_id)
        except KafkaError as e:
            self.groups[group_id] = g
            return e.code
        return ErrorCode.NONE

    def unload(self) -> None:
        self.timer.cancel_all()
        self.groups.clear()
        self.logs.clear()

    def member_ids(self, group_id: str) -> Iterable[str]:
        g = self.groups.get(group_id)
        return () if g is None else g.members.keys()
