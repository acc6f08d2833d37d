"""Share groups (KIP-932): membership, share sessions and the share partitions they read.

Theory of operation. A share group is a group of the KIP-848 kind (members heartbeat with an
epoch; the coordinator computes the assignment) whose members do not own partitions: the
partitions are spread over the members as Kafka's SimpleAssignor does
(minibroker.coordinator.share.simple_assignor: one member per partition unless members outnumber
partitions), and the records are shared through the share partitions
(minibroker.coordinator.share.share_partition). The group epoch goes up whenever membership,
subscriptions or the subscribed topics' partitions change; the target assignment follows it at
most every group.share.assignment.interval.ms (KIP-1263), and a member takes its target, with the
assignment epoch, on its next heartbeat (share groups revoke nothing first). A member that stops
heartbeating for group.share.session.timeout.ms is removed.

When a member is first assigned a partition the share partition is initialised (Kafka:
InitializeShareGroupState) at share.auto.offset.reset of the group (latest by default, earliest, or
by_duration:<ISO-8601>) and that start is persisted. Share sessions (KIP-932's ShareFetch
sessions: epoch 0 opens, -1 closes, anything else must be the next epoch) remember which
partitions a member fetches. Closing one releases the records the member holds in its partitions
(delivery counts kept; a record at the delivery-count limit is archived), as Kafka's
SharePartitionManager.releaseSession: on a final ShareFetch/ShareAcknowledge (epoch -1), and when
the connection that opened the session closes (Kafka's ShareSessionCache ties each connection to
the last session it opened; a session replaced or closed since is not the connection's any more),
so a consumer that dies hands its records on at once, not when their locks expire. Reopening a
session (epoch 0) drops the old one without a release (Kafka's newContext): the member may still
acknowledge what it holds. A member leaving the group (heartbeat at epoch -1) keeps its session
and records, as on Kafka: a closing consumer's last acknowledgements may come after its leave.
A member timing out closes its session here (Kafka's group coordinator does not tell the
share-partition manager; there the records wait for their locks).

A timer task expires acquisition locks and sessions of members gone silent, and wakes the share
fetches parked on the partition (the ReplicaManager's fetch waiters, keyed by topic partition).
Every change of a share partition's state is written to __share_group_state before the answer
(minibroker.coordinator.share.share_coordinator_shard).

Records a share partition gives up on while its group has a dead-letter queue (KIP-1191: rejected,
or at the delivery-count limit) are ARCHIVING; every persist hands them to the DLQ writer
(minibroker.coordinator.share.share_group_dlq), which archives them once written.

Group configs (DescribeConfigs/IncrementalAlterConfigs on GROUP resources) are kept per group in
`share_group_configs.json` in the data directory (Kafka keeps them in the cluster metadata);
deleting the group leaves them, as Kafka does.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from minibroker import features
from minibroker.config import BrokerConfig
from minibroker.coordinator.coordinator_metadata_image import TopicsMetadata
from minibroker.coordinator.runtime.coordinator_store import CoordinatorStore
from minibroker.coordinator.runtime.partition_writer import CoordinatorRecord
from minibroker.coordinator.share import share_group_records as rec
from minibroker.coordinator.share import share_group_state_metadata as state_metadata
from minibroker.coordinator.share.persister import DefaultStatePersister, LocalPersister, WriteState
from minibroker.coordinator.share.share_coordinator_shard import ShareCoordinatorShard, ShareKey
from minibroker.coordinator.share.share_group_configs import (
    ASSIGNMENT_INTERVAL_MS,
    AUTO_OFFSET_RESET,
    DELIVERY_COUNT_LIMIT,
    DLQ_TOPIC_NAME,
    PARTITION_MAX_RECORD_LOCKS,
    RENEW_ACKNOWLEDGE_ENABLE,
    config_value,
    parse_bool,
    parse_duration_ms,
    store_group_configs,
)
from minibroker.coordinator.share.share_group_dlq import DLQRecordParameter, ShareGroupDLQManager, ranges
from minibroker.coordinator.share.share_group_state_admin import ShareGroupStateAdmin
from minibroker.coordinator.share.share_partition import BatchInfo, SharePartition
from minibroker.coordinator.share.simple_assignor import assign
from minibroker.replica_manager import ReplicaManager
from minibroker.topics import TopicRegistry
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records.batch import BatchView, iter_batches
from minibroker_storage.clock import Clock, wall_clock_ms
from minibroker_storage.log import Log

log = logging.getLogger("minibroker.coordinator.share_group")


class PartitionLeadership(Protocol):
    """What a cluster's brokers check before touching share partitions (share_partition_manager.py)."""

    async def prepare(self, group_id: str, partitions: Iterable[tuple[uuid.UUID, int]]) -> dict[tuple[uuid.UUID, int], int]:
        """The partitions that cannot be served here, each with its error; the others loaded."""

    def group_closed(self, group_id: str) -> None:
        """The group's last share session here closed."""


class AcknowledgementBatch(Protocol):
    """An acknowledged range of a ShareAcknowledge or ShareFetch request (both carry this struct)."""

    @property
    def first_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def acknowledge_types(self) -> Sequence[int]: ...


LEAVE_EPOCH = -1
INITIAL_SESSION_EPOCH = 0
FINAL_SESSION_EPOCH = -1
READ_COMMITTED = 1

@dataclass(slots=True)
class ShareMember:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed: list[str]
    assignment: dict[uuid.UUID, list[int]] = field(default_factory=dict)
    deadline_ms: int = 0


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    # the target assignment (SimpleAssignor) of assignment_epoch, computed at assigned_at_ms
    target: dict[str, dict[uuid.UUID, list[int]]] = field(default_factory=dict)
    assigned_at_ms: int = 0
    subscribed_metadata: dict[uuid.UUID, int] = field(default_factory=dict)
    metadata_hash: int = 0  # of subscribed_metadata, persisted with the group epoch
    # its ShareGroupStatePartitionMetadata (share_group_state_metadata.py): the share partitions
    # whose state was initialised and those being initialised (topic id -> (topic name,
    # partitions)), the topics whose state is being deleted (topic id -> name), and whether the
    # record exists (written or replayed; Kafka's shareGroupStatePartitionMetadata has the group)
    initialized: dict[uuid.UUID, tuple[str, list[int]]] = field(default_factory=dict)
    initializing: dict[uuid.UUID, tuple[str, list[int]]] = field(default_factory=dict)
    deleting: dict[uuid.UUID, str] = field(default_factory=dict)
    state_metadata_written: bool = False

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"


@dataclass(slots=True, eq=False)
class ShareSession:
    member_id: str
    epoch: int = 1
    partitions: dict[tuple[uuid.UUID, int], None] = field(default_factory=dict)  # ordered set


@dataclass(frozen=True, slots=True)
class AcquiredPartition:
    """One partition's part of a ShareFetch answer."""

    topic_id: uuid.UUID
    partition: int
    records: bytes
    acquired: list[tuple[int, int, int]]
    error_code: int = 0
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class ShareGroupConfig:
    enabled: bool
    lock_ms: int
    delivery_count_limit: int
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_size: int
    state_partitions: int
    state_segment_bytes: int

    @classmethod
    def from_broker_config(cls, cfg: BrokerConfig) -> ShareGroupConfig:
        return cls(bool(cfg.get("group.share.enable")), cfg.get("group.share.record.lock.duration.ms"),
                   cfg.get("group.share.delivery.count.limit"), cfg.get("group.share.session.timeout.ms"), cfg.get("group.share.heartbeat.interval.ms"),
                   cfg.get("group.share.max.size"), cfg.get("share.coordinator.state.topic.num.partitions"),
                   cfg.get("share.coordinator.state.topic.segment.bytes"))


class ShareGroupCoordinator:
    """Share groups, their members and sessions, and the share partitions of this node."""

    TICK_S = 0.1

    def __init__(self, config: ShareGroupConfig, broker_config: BrokerConfig, store: CoordinatorStore,
                 topics: TopicRegistry, replica_manager: ReplicaManager, data_dir: Path, *,
                 now_ms: Clock = wall_clock_ms) -> None:
        self.config = config
        self.broker_config = broker_config
        self.store = store  # __share_group_state (the handlers create it on FindCoordinator)
        self.shard = ShareCoordinatorShard(store)  # the persisted share-partition states
        # share partitions' state: this shard, or each key's share coordinator on a cluster (persister.py)
        self.persister: LocalPersister | DefaultStatePersister = LocalPersister(self.shard)
        self.manager: PartitionLeadership | None = None  # a cluster's share-partition leadership
        self.state_admin: ShareGroupStateAdmin | None = None  # a cluster's admin APIs, through the persister
        # KIP-1191: records given up on go to their group's dead-letter queue topic
        self.dlq = ShareGroupDLQManager(topics, replica_manager, self.group_config, now_ms)
        self.topics = topics
        # assignments count the cluster's partitions (Coordinators sets CoordinatorMetadataImage)
        self.metadata: TopicsMetadata = topics
        self.replica_manager = replica_manager
        self.now_ms = now_ms
        self.groups: dict[str, ShareGroup] = {}
        self.partitions: dict[ShareKey, SharePartition] = {}
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        # connection key -> (group id, the last session opened on that connection)
        self._connection_sessions: dict[int, tuple[str, ShareSession]] = {}
        self._configs_path = data_dir / "share_group_configs.json"
        # a group's records to __consumer_offsets (the group coordinator's; it replays them)
        self.write: Callable[[str, list[CoordinatorRecord]], None] | None = None
        self.group_configs: dict[str, dict[str, str]] = {}
        self._task: asyncio.Task[None] | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        if self._configs_path.exists():
            self.group_configs = json.loads(self._configs_path.read_text())
        self.shard.states = {}
        for partition in self.store.partitions():  # one node leads every partition of __share_group_state
            self.load_partition(partition)
        self._task = asyncio.create_task(self._tick(), name="share-group-timer")

    def load_partition(self, partition: int) -> None:
        """Replay one partition of __share_group_state (this broker became its leader): the share
        partitions whose state it holds come back with their in-flight records."""
        before = set(self.shard.states)
        self.shard.load_partition(partition)
        for key, st in self.shard.states.items():
            if key in before or self.persister.remote:  # a cluster's share partitions are on their leaders
                continue
            sp = self._new_partition(key, st.start_offset)
            sp.state_epoch = st.state_epoch
            sp.restore(st.start_offset, st.batches)
            self._send_to_dlq(key, sp)  # records caught ARCHIVING by the restart (Kafka resumes them)
            self.groups.setdefault(key[0], ShareGroup(key[0]))

    def unload_partition(self, partition: int) -> None:
        """Forget the persisted states `partition` holds (this broker no longer leads it)."""
        self.shard.unload_partition(partition)

    async def stop(self) -> None:
        await self.persister.close()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.TICK_S)
            try:
                self.expire(self.now_ms())
            except Exception:
                log.exception("share-group timer failed")

    def expire(self, now: int) -> None:
        """Lock timeouts and silent members (both hand records back to the others)."""
        for group in list(self.groups.values()):
            for m in list(group.members.values()):
                if not m.deadline_ms:  # replayed: a fresh session (Kafka's onLoaded schedules one)
                    m.deadline_ms = now + int(self.group_config(group.group_id, "share.session.timeout.ms"))
                    continue
                if m.deadline_ms <= now:
                    log.info("share group %s: member %s timed out", group.group_id, m.member_id)
                    self._remove_member(group, m.member_id)
        for key, sp in self.partitions.items():
            if sp.expire_locks(now):
                self._persist(key, sp)
                self.replica_manager.wake(sp.topic, sp.partition)

    # -- configs -----------------------------------------------------------------------------
    def group_config(self, group_id: str, name: str) -> str:
        return config_value(self.group_configs.get(group_id, {}), self.broker_config, name)

    def set_group_configs(self, group_id: str, configs: dict[str, str]) -> None:
        if configs:
            self.group_configs[group_id] = dict(configs)
        else:
            self.group_configs.pop(group_id, None)
        store_group_configs(self._configs_path, self.group_configs)
        for key, sp in self.partitions.items():
            if key[0] == group_id:
                self.configure(sp)

    def lock_ms(self, group_id: str) -> int:
        return int(self.group_config(group_id, "share.record.lock.duration.ms"))

    # -- membership (ShareGroupHeartbeat) ------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                  subscribed: list[str] | None, client_id: str, client_host: str) -> tuple[ShareMember | None, bool]:
        """Returns (the member, whether its assignment is to be sent); raises KafkaError."""
        if not self.config.enabled:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "Share groups are not enabled")
        if not group_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if not member_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        now = self.now_ms()
        records: list[CoordinatorRecord] = []  # written together at the end, as Kafka's CoordinatorResult
        changed = False  # one heartbeat moves the group epoch at most once (join, subscription, assignment)
        joined = False
        group = self.groups.get(group_id)
        if member_epoch == LEAVE_EPOCH:
            if group is not None and member_id in group.members:
                # its share session and what it holds stay: a closing consumer leaves the group and
                # sends its last acknowledgements (ShareAcknowledge at epoch -1) at once, either
                # may arrive first (Kafka's group coordinator does not tell the share-partition
                # manager of a leave); closing the session or its connection releases the rest
                self._remove_member(group, member_id, close_session=False)
            return None, False
        if group is None:
            group = self.groups[group_id] = ShareGroup(group_id)
        member = group.members.get(member_id)
        if member_epoch == 0:
            if subscribed is None:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
            if member is None:
                if len(group.members) >= self.config.max_size:
                    raise KafkaError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                     f"The share group has reached its maximum capacity of {self.config.max_size} members.")
                member = group.members[member_id] = ShareMember(member_id, 0, client_id, client_host, rack_id,
                                                                sorted(subscribed))
                changed = joined = True
        elif member is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID,
                             f"Member {member_id} is not a member of group {group_id}.")
        elif member_epoch != member.member_epoch:
            raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"The share group member has a smaller member epoch ({member_epoch}) than the one "
                             f"known by the group coordinator ({member.member_epoch}). The member must abandon "
                             "all its partitions and rejoin.")
        member.deadline_ms = now + int(self.group_config(group_id, "share.session.timeout.ms"))
        member.client_id, member.client_host = client_id, client_host
        if rack_id is not None:
            member.rack_id = rack_id
        if subscribed is not None and sorted(subscribed) != member.subscribed:
            member.subscribed = sorted(subscribed)
            changed = True
        # a join is assigned at once (see _maybe_assign)
        interval = 0 if joined else int(self.group_config(group_id, ASSIGNMENT_INTERVAL_MS))
        send = _reconcile(group, member, changed, self.metadata, interval, now, records)
        send = send or member_epoch == 0 or subscribed is not None
        for tid, parts in member.assignment.items():
            topic = self.topics.by_id(tid)
            if topic is not None:
                for p in parts:
                    self._initialised(group_id, topic.topic_id, topic.name, p)
        records += _initialized(group, self.metadata)
        self.write_records(group_id, records)
        return member, send

    def write_records(self, group_id: str, records: list[CoordinatorRecord], quiet: bool = False) -> None:
        """The group's records to __consumer_offsets; KafkaError when they cannot be written, unless
        `quiet` (a timer's, or an admin's side effect)."""
        try:
            if self.write is not None and records:
                self.write(group_id, records)
        except KafkaError as e:
            if not quiet:
                raise
            log.warning("share group %s: its records not written: %s", group_id, e.message)

    def _remove_member(self, group: ShareGroup, member_id: str, close_session: bool = True) -> None:
        self.write_records(group.group_id, _leave(group, member_id, self.metadata, self.now_ms()), quiet=True)
        if not close_session:
            return
        self.sessions.pop((group.group_id, member_id), None)
        # everything it holds in the group, sessions replaced since included: nobody can
        # acknowledge it any more
        for key, sp in self.partitions.items():
            if key[0] == group.group_id and sp.release_member(member_id):
                self._persist(key, sp)
                self.replica_manager.wake(sp.topic, sp.partition)

    def list_groups(self, states: Iterable[str] = (), types: Iterable[str] = ()) -> list[tuple[str, str, str, str]]:
        """ListGroups entries (group id, protocol type, state, type) of the share groups passing the filters."""
        return _listed(self.groups.values(), states, types)

    def describe(self, group_id: str) -> ShareGroup | None:
        return self.groups.get(group_id)

    def delete_group(self, group_id: str) -> int:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        for key in [k for k in self.partitions if k[0] == group_id]:
            del self.partitions[key]
            self.persister.delete(key)
        self.write_records(group_id, rec.group_tombstones(group_id, list(group.members)))  # ShareGroup.createGroupTombstoneRecords
        # its GROUP configs stay, as on Kafka 4.4 (GroupCoordinatorService.deleteGroups deletes the
        # share state and the group's records, never its ConfigRecords)
        del self.groups[group_id]
        return ErrorCode.NONE

    # -- share partitions --------------------------------------------------------------------
    def _new_partition(self, key: ShareKey, start: int) -> SharePartition:
        topic = self.topics.by_id(key[1])
        sp = SharePartition(key[0], topic.name if topic else "", key[2], start)
        self.configure(sp)
        self.partitions[key] = sp
        return sp

    def configure(self, sp: SharePartition) -> None:
        """The group configs a share partition applies (the DLQ needs share.version 2, KIP-1191)."""
        sp.delivery_count_limit = int(self.group_config(sp.group_id, DELIVERY_COUNT_LIMIT))
        sp.max_in_flight = int(self.group_config(sp.group_id, PARTITION_MAX_RECORD_LOCKS))
        sp.dlq_enabled = (features.finalized_level(features.SHARE_VERSION) >= 2
                          and bool(self.group_config(sp.group_id, DLQ_TOPIC_NAME)))

    def _initialised(self, group_id: str, topic_id: uuid.UUID, topic: str, partition: int) -> SharePartition | None:
        key = (group_id, topic_id, partition)
        sp = self.partitions.get(key)
        if sp is not None:
            sp.topic = topic
            return sp
        lg = self.topics.get_log(topic, partition) if self.manager is None else None  # a cluster's: its manager's
        if lg is None:
            return None
        sp = self._new_partition(key, _reset_offset(self.group_config(group_id, AUTO_OFFSET_RESET), lg, self.now_ms()))
        self._persist(key, sp)
        return sp

    def partition_state(self, group_id: str, topic_id: uuid.UUID, partition: int) -> SharePartition | None:
        return self.partitions.get((group_id, topic_id, partition))

    def _persist(self, key: ShareKey, sp: SharePartition) -> None:
        self.persister.write(key, WriteState(sp.start_offset, sp.state_epoch, sp.leader_epoch, sp.state_batches()))
        self._send_to_dlq(key, sp)  # ARCHIVING is persisted first, as Kafka's SharePartition

    def _send_to_dlq(self, key: ShareKey, sp: SharePartition) -> None:
        for param in ranges(key[0], key[1], key[2], sp.take_dlq_pending()):
            self.dlq.enqueue(param, self._archived)

    def _archived(self, param: DLQRecordParameter) -> None:
        """The DLQ write of `param` ended (written or not): its records are done."""
        key = (param.group_id, param.topic_id, param.partition)
        sp = self.partitions.get(key)
        if sp is not None:
            sp.archive(param.first_offset, param.last_offset)
            self._persist(key, sp)
            self.replica_manager.wake(sp.topic, sp.partition)

    def alter_start_offset(self, group_id: str, topic_id: uuid.UUID, topic: str, partition: int, offset: int) -> None:
        key = (group_id, topic_id, partition)
        sp = self.partitions.get(key) or self._new_partition(key, offset)
        sp.topic = topic
        sp.reset(offset)
        self._persist(key, sp)

    def delete_offsets(self, group_id: str, topic_id: uuid.UUID) -> None:
        for key in [k for k in self.partitions if k[0] == group_id and k[1] == topic_id]:
            del self.partitions[key]
            self.persister.delete(key)
        if (group := self.groups.get(group_id)) is not None:
            self.write_records(group_id, _uninitialized(group, topic_id), quiet=True)

    def _forget_topic(self, topic_id: uuid.UUID) -> None:
        """The share partitions of a deleted topic, in every group."""
        for key in [k for k in self.partitions if k[1] == topic_id]:
            del self.partitions[key]
            self.persister.delete(key)
        for gid, group in self.groups.items():
            self.write_records(gid, _uninitialized(group, topic_id), quiet=True)

    # -- share sessions ----------------------------------------------------------------------
    def check_member(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or member_id not in group.members:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")

    def session_for(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """The member's session at `epoch` (opened at 0), its epoch moved on; raises KafkaError."""
        return _session_for(self.sessions, (group_id, member_id), epoch)

    def close_session(self, group_id: str, member_id: str) -> None:
        s = self.sessions.pop((group_id, member_id), None)
        if s is not None:
            self._release(group_id, s)
        if self.manager is not None and not any(g == group_id for g, _ in self.sessions):
            self.manager.group_closed(group_id)  # its share partitions are read again by the next session

    def bind_connection(self, connection: int, group_id: str, session: ShareSession) -> bool:
        """`session` was opened on `connection` (a key the caller chose for it): closing that
        connection closes the session while it is still the member's. Returns whether the
        connection is new here, so that the caller registers connection_closed for it once."""
        new = connection not in self._connection_sessions
        self._connection_sessions[connection] = (group_id, session)
        return new

    def connection_closed(self, connection: int) -> None:
        """The connection went (the client died, or closed it without a final ShareFetch): the
        session it opened last is closed if nothing replaced it, and its records go back
        (Kafka's ShareSessionCache connection-disconnect listener -> releaseSession)."""
        entry = self._connection_sessions.pop(connection, None)
        if entry is None:
            return
        group_id, session = entry
        if self.sessions.get((group_id, session.member_id)) is session:
            log.info("share group %s: member %s's share session closed with its connection",
                     group_id, session.member_id)
            self.close_session(group_id, session.member_id)

    def _release(self, group_id: str, session: ShareSession) -> None:
        """The member's acquired records in the session's partitions go back (Kafka's
        releaseSession: SharePartition.releaseAcquiredRecords for each of them)."""
        for tid, p in session.partitions:
            key = (group_id, tid, p)
            sp = self.partitions.get(key)
            if sp is not None and sp.release_member(session.member_id):
                self._persist(key, sp)
                self.replica_manager.wake(sp.topic, sp.partition)

    # -- acknowledgements and acquisition ----------------------------------------------------
    def acknowledge(self, group_id: str, member_id: str, topic_id: uuid.UUID, partition: int,
                    batches: Iterable[AcknowledgementBatch]) -> int:
        key = (group_id, topic_id, partition)
        if self.topics.by_id(topic_id) is None:
            # the topic was deleted while its records were acquired: nothing to acknowledge, and
            # its share partitions go (Kafka's SharePartitionManager answers UNKNOWN_TOPIC_ID; the
            # group coordinator deletes the share state of deleted topics)
            self._forget_topic(topic_id)
            return ErrorCode.UNKNOWN_TOPIC_ID
        sp = self.partitions.get(key)
        if sp is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        now, lock = self.now_ms(), self.lock_ms(group_id)
        renew = parse_bool(self.group_config(group_id, RENEW_ACKNOWLEDGE_ENABLE))
        error = 0
        for b in batches:
            code = sp.acknowledge(member_id, b.first_offset, b.last_offset, list(b.acknowledge_types), lock, now,
                                  renew_enabled=renew)
            error = error or code
        self._persist(key, sp)
        self.replica_manager.wake(sp.topic, sp.partition)
        return error

    def acquire(self, group_id: str, member_id: str, topic_id: uuid.UUID, partition: int, max_records: int,
                max_bytes: int, *, whole_batches: bool = True, batch_size: int = 0) -> AcquiredPartition | None:
        """Acquire available records of one partition for a member; None when there are none."""
        topic = self.topics.by_id(topic_id)
        lg = self.topics.get_log(topic.name, partition) if topic is not None else None
        if topic is None or lg is None:
            code = ErrorCode.UNKNOWN_TOPIC_ID if topic is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            return AcquiredPartition(topic_id, partition, b"", [], code)
        sp = self._initialised(group_id, topic_id, topic.name, partition)
        if sp is None or max_records <= 0:
            return None
        if sp.start_offset < lg.log_start_offset:
            sp.move_start_to(lg.log_start_offset)
        committed = self.group_config(group_id, "share.isolation.level").strip().lower() == "read_committed"
        limit = lg.last_stable_offset if committed else lg.high_watermark
        offset = sp.fetch_offset()
        if offset >= limit:
            return None
        info = lg.read(offset, max(1, max_bytes), max_offset=limit, min_one_batch=True)
        if info.region is None or not info.region.size:
            return None
        buf = info.region.read_all()
        views = list(iter_batches(buf))
        skips = _skipped(lg, views, offset, limit) if committed else set()
        batches = [BatchInfo(v.base_offset, v.last_offset, v.is_control or v.pos in skips) for v in views]
        # an acquisition is not persisted (Kafka's neither): after a restart acquired is available
        acquired = sp.acquire(member_id, batches, max_records, self.lock_ms(group_id), self.now_ms(), limit,
                              whole_batches=whole_batches, batch_size=batch_size)
        if not acquired:
            return None
        first, last = acquired[0][0], acquired[-1][1]
        used = [v for v in views if v.last_offset >= first and v.base_offset <= last]
        records = buf[used[0].pos:used[-1].pos + used[-1].size]
        log.debug("share group %s: %s acquired %s-%d %s", group_id, member_id, topic.name, partition, acquired)
        return AcquiredPartition(topic_id, partition, records, acquired)

    def has_available(self, group_id: str, topic_id: uuid.UUID, partition: int) -> bool:
        sp = self.partitions.get((group_id, topic_id, partition))
        return sp is not None and sp.has_available()


def _session_for(sessions: dict[tuple[str, str], ShareSession], key: tuple[str, str], epoch: int) -> ShareSession:
    if epoch == INITIAL_SESSION_EPOCH:
        # a session already there is replaced, its records left acquired (Kafka's newContext)
        new = sessions[key] = ShareSession(key[1])
        return new
    s = sessions.get(key)
    if s is None:
        raise KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND, "Share session not found.")
    if epoch != FINAL_SESSION_EPOCH:
        if epoch != s.epoch:
            raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH, "Invalid share session epoch.")
        s.epoch += 1
    return s


def _listed(groups: Iterable[ShareGroup], states: Iterable[str], types: Iterable[str]) -> list[tuple[str, str, str, str]]:
    wanted_states = {s.strip().lower() for s in states}
    wanted_types = {t.strip().lower() for t in types}
    if wanted_types and "share" not in wanted_types:
        return []
    return [(g.group_id, "share", g.state, "share") for g in groups
            if not wanted_states or g.state.lower() in wanted_states]


def _subscribed_metadata(group: ShareGroup, topics: TopicsMetadata) -> dict[uuid.UUID, int]:
    """Partition count of every existing topic some member of `group` subscribes to."""
    out: dict[uuid.UUID, int] = {}
    for name in sorted({t for m in group.members.values() for t in m.subscribed}):
        topic = topics.get(name)
        if topic is not None:
            out[topic.topic_id] = len(topic.partitions)
    return out


def _reconcile(group: ShareGroup, member: ShareMember, changed: bool, topics: TopicsMetadata, interval_ms: int,
               now: int, records: list[CoordinatorRecord]) -> bool:
    """The group epoch, target assignment and `member`'s assignment after its heartbeat (Kafka:
    GroupMetadataManager.shareGroupHeartbeat), their records added to `records`; whether the
    member's assignment changed. `changed`: the member joined or changed its subscription."""
    gid = group.group_id
    if changed:  # Kafka: hasMemberSubscriptionChanged -> newShareGroupMemberSubscriptionRecord
        records.append(rec.member_subscription(gid, member.member_id, rack_id=member.rack_id, client_id=member.client_id,
                                               client_host=member.client_host, subscribed=member.subscribed))
    # the subscribed topics as they are now (a topic created or grown since counts)
    group.subscribed_metadata = _subscribed_metadata(group, topics)
    metadata_hash = _metadata_hash(group.subscribed_metadata)
    if changed or metadata_hash != group.metadata_hash:
        group.metadata_hash = metadata_hash
        group.group_epoch += 1
        records.append(rec.group_epoch(gid, group.group_epoch, metadata_hash))
    before = dict(group.target)
    if _maybe_assign(group, topics, interval_ms, now):
        # the members whose target changed, then the assignment epoch (TargetAssignmentBuilder)
        records += [rec.target_assignment_member(gid, mid, target) for mid, target in group.target.items()
                    if before.get(mid) != target]
        records.append(rec.target_assignment_metadata(gid, group.assignment_epoch, group.assigned_at_ms))
    if member.member_epoch == group.assignment_epoch:
        return False
    # a share member takes its target at once: nothing to revoke first (Kafka's share groups have
    # no revocation phase)
    previous = member.member_epoch
    member.assignment = group.target.get(member.member_id, {})
    member.member_epoch = group.assignment_epoch
    records.append(rec.current_assignment(gid, member.member_id, epoch=member.member_epoch, previous_epoch=previous,
                                          assigned=member.assignment))
    return True


def _leave(group: ShareGroup, member_id: str, topics: TopicsMetadata, now: int) -> list[CoordinatorRecord]:
    """`member_id` gone from the group; the records of it (Kafka's shareGroupFenceMember: the
    member's tombstones, the bumped epoch with the hash of the remaining subscriptions, and once
    the group is empty its assignment epoch with it)."""
    group.members.pop(member_id, None)
    group.target.pop(member_id, None)
    group.group_epoch += 1
    group.subscribed_metadata = _subscribed_metadata(group, topics)
    group.metadata_hash = _metadata_hash(group.subscribed_metadata)
    records = [*rec.member_tombstones(group.group_id, member_id),
               rec.group_epoch(group.group_id, group.group_epoch, group.metadata_hash)]
    if not group.members:
        group.assignment_epoch, group.assigned_at_ms = group.group_epoch, now
        records.append(rec.target_assignment_metadata(group.group_id, group.assignment_epoch, now))
    return records


def _metadata_hash(metadata: dict[uuid.UUID, int]) -> int:
    """A hash of the subscribed topics' partition counts (Kafka: ModernGroup.computeMetadataHash;
    ours is not Kafka's value, it only tells a change apart across a restart)."""
    if not metadata:
        return 0
    h = hashlib.sha256()
    for tid, count in sorted(metadata.items(), key=lambda kv: str(kv[0])):
        h.update(f"{tid}\0{count}\n".encode())
    return int.from_bytes(h.digest()[:8], "big", signed=True)


def _initialized(group: ShareGroup, topics: TopicsMetadata) -> list[CoordinatorRecord]:
    """The members' assigned share partitions are initialised (here in the heartbeat that
    assigns them; Kafka: initializeShareGroupState): the group's ShareGroupStatePartitionMetadata
    record when that added any. The cluster's metadata names the topics (a KRaft broker's own
    registry lacks those it holds no replica of)."""
    assigned: dict[uuid.UUID, tuple[str, list[int]]] = {}
    for m in group.members.values():
        for tid, parts in m.assignment.items():
            topic = topics.by_id(tid)
            if topic is not None:
                name, known = assigned.get(tid, (topic.name, []))
                assigned[tid] = (name, known + list(parts))
    new = {tid: (name, ps) for tid, (name, ps) in assigned.items()
           if tid not in group.initialized or not set(ps) <= set(group.initialized[tid][1])}
    return state_metadata.initialize(group, new)


def _uninitialized(group: ShareGroup, topic_id: uuid.UUID) -> list[CoordinatorRecord]:
    """The topic's share partitions are no longer the group's (a deleted topic, or a single
    broker's DeleteShareGroupOffsets; Kafka: maybeCleanupShareGroupState and
    completeDeleteShareGroupOffsets write the group's ShareGroupStatePartitionMetadata without it)."""
    return state_metadata.drop_topics(group, [topic_id])


def _maybe_assign(group: ShareGroup, topics: TopicsMetadata, interval_ms: int, now: int) -> bool:
    """A new target assignment when the group epoch moved on, at most once per `interval_ms`
    (group.share.assignment.interval.ms, KIP-1263: the changes within it are assigned together;
    until then members keep what they have). A joining member is assigned at once (interval 0):
    on Kafka the members of a new group wait for its share partitions to be initialised (seen:
    4.5 s) and then get them together; here a member joining a second after another would
    otherwise wait for its next heartbeat, 5 s, while the first takes every record."""
    if group.assignment_epoch == group.group_epoch:
        return False
    if group.assigned_at_ms and now < group.assigned_at_ms + interval_ms:
        return False
    subscriptions = {}
    for m in group.members.values():
        ids = (topics.get(name) for name in m.subscribed)
        subscriptions[m.member_id] = frozenset(t.topic_id for t in ids if t is not None)
    group.target = assign(subscriptions, group.subscribed_metadata,
                          {mid: group.target.get(mid, {}) for mid in group.members})
    group.assignment_epoch = group.group_epoch
    group.assigned_at_ms = now
    return True


def _reset_offset(policy: str, lg: Log, now: int) -> int:
    """Where a new share partition starts (share.auto.offset.reset: latest, earliest, by_duration:<ISO-8601>)."""
    policy = policy.strip().lower()
    if policy == "earliest":
        return lg.log_start_offset
    if policy.startswith("by_duration:"):
        found = lg.offset_for_timestamp(now - parse_duration_ms(policy.split(":", 1)[1]))
        return found.offset if found is not None else lg.high_watermark
    return lg.high_watermark


def _skipped(lg: Log, views: list[BatchView], offset: int, limit: int) -> set[int]:
    """Positions of the batches of aborted transactions among `views` (read_committed: never
    delivered), found as a read_committed consumer finds them (Kafka's SharePartition
    filterAbortedTransactionalAcquiredRecords follows the consumer's CompletedFetch): the aborted
    transactions in first-offset order; a producer becomes aborted when the next one of its
    aborted transactions starts at or before a batch's last offset, and stops being so at its
    abort marker. One producer may have aborted many transactions in the range: each is taken
    in turn."""
    pending = sorted(lg.aborted_transactions(offset, limit), key=lambda a: a.first_offset)
    aborted: set[int] = set()
    out: set[int] = set()
    i = 0
    for v in views:
        while i < len(pending) and pending[i].first_offset <= v.last_offset:
            aborted.add(pending[i].producer_id)
            i += 1
        if v.is_control:
            aborted.discard(v.producer_id)  # the marker ends the producer's transaction
        elif v.is_transactional and v.producer_id in aborted:
            out.add(v.pos)
    return out
