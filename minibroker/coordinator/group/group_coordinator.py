"""The group coordinator: classic consumer groups and committed offsets.

Theory of operation: one `GroupCoordinator` per broker owns every group (a single broker is the
coordinator of all __consumer_offsets partitions). It is the façade the handlers call (Kafka:
GroupCoordinatorService over a GroupCoordinatorShard); the work is split by job as in Kafka's
group-coordinator module:

- group_metadata_manager.py (`GroupMetadataManager`): JoinGroup / SyncGroup / Heartbeat / LeaveGroup,
  rebalances, generations and member sessions;
- offset_metadata_manager.py (`OffsetMetadataManager`): OffsetCommit, TxnOffsetCommit, OffsetFetch,
  OffsetDelete, offsets of deleted topics, offset expiry;
- group_responses.py: the wire answers built from that state;
- runtime/coordinator_store.py (`CoordinatorStore`): the records in __consumer_offsets.

This module starts and stops them, replays __consumer_offsets on start (groups come back with
their generation, members and assignments, Stable, members given a fresh session timeout;
offsets with their metadata and leader epochs), and does what spans both halves: deleting
groups and the periodic cleanup that expires offsets and then drops groups left empty.

Everything runs on the event loop. Records are appended synchronously through the store, so an
operation and its write are never interleaved with another operation.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Hashable, Iterable
from typing import TYPE_CHECKING

from minibroker.coordinator.coordinator_metadata_image import TopicsMetadata
from minibroker.coordinator.group.classic_group import ClassicGroup, GroupState
from minibroker.coordinator.group.consumer_group_manager import ConsumerGroupConfig, ConsumerGroupManager
from minibroker.coordinator.group.consumer_group_records import is_consumer_group_record
from minibroker.coordinator.group.group_events import GroupEvents
from minibroker.coordinator.group.group_metadata_manager import (
    ClientInfo,
    GroupConfig,
    GroupMetadataManager,
    append_error_to_response_error,
    write_records,
)
from minibroker.coordinator.group.group_migration import GroupMigration, MigrationPolicy
from minibroker.coordinator.group.group_responses import described_group, join_error, sync_error
from minibroker.coordinator.group.offset_metadata_manager import OffsetMetadataManager, TopicPartition
from minibroker.coordinator.group.records import (
    GroupMetadataRecord,
    OffsetAndMetadata,
    OffsetCommitRecord,
    decode_record,
    group_metadata_tombstone,
    offset_commit_tombstone,
)
from minibroker.coordinator.group.streams_group_manager import StreamsGroupConfig, StreamsGroupManager
from minibroker.coordinator.group.streams_group_records import record_type as streams_record_type
from minibroker.coordinator.runtime.coordinator_loader import LoadedRecord
from minibroker.coordinator.runtime.coordinator_store import CoordinatorStore
from minibroker.coordinator.runtime.keyed_timer import KeyedTimer
from minibroker.coordinator.runtime.partition_writer import CoordinatorRecord
from minibroker.coordinator.share import share_group_replay
from minibroker.coordinator.share.share_group_records import record_type as share_record_type
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_storage.clock import Clock, wall_clock_ms

if TYPE_CHECKING:
    from minibroker.coordinator.share.share_group import ShareGroup
    from minibroker_protocol.apis.describe_groups import DescribeGroupsResponse
    from minibroker_protocol.apis.heartbeat import HeartbeatRequest
    from minibroker_protocol.apis.join_group import JoinGroupRequest, JoinGroupResponse
    from minibroker_protocol.apis.leave_group import LeaveGroupRequest, LeaveGroupResponse
    from minibroker_protocol.apis.offset_commit import OffsetCommitRequest
    from minibroker_protocol.apis.sync_group import SyncGroupRequest, SyncGroupResponse
    from minibroker_protocol.apis.txn_offset_commit import TxnOffsetCommitRequest

__all__ = ["ClientInfo", "GroupConfig", "GroupCoordinator", "StreamsGroupConfig", "append_error_to_response_error"]

log = logging.getLogger("minibroker.coordinator.group")


class GroupCoordinator:
    """Classic groups and their committed offsets (one per broker)."""

    def __init__(self, config: GroupConfig, store: CoordinatorStore, *, now_ms: Clock = wall_clock_ms,
                 consumer_config: ConsumerGroupConfig | None = None, topics: TopicsMetadata | None = None) -> None:
        self.config = config
        self.store = store
        self.now_ms = now_ms
        self.membership = GroupMetadataManager(config, store, now_ms=now_ms)
        self.offset_manager = OffsetMetadataManager(config, store, self.membership, now_ms=now_ms)
        # KIP-848 consumer groups, side by side with the classic ones; a group id is one or the other
        self.consumer_groups = ConsumerGroupManager(
            consumer_config or ConsumerGroupConfig(), store, topics, now_ms=now_ms,
            classic_group_exists=self._classic_group_exists, drop_classic_group=self._drop_empty_classic_group)
        self.offset_manager.consumer_groups = self.consumer_groups
        # KIP-1071 streams groups (issue 35): a third kind, sharing the group id space and offsets
        self.streams_groups = StreamsGroupManager(
            StreamsGroupConfig(), now_ms=now_ms,
            other_group_exists=lambda gid: self._classic_group_exists(gid) is not None or gid in self.consumer_groups.groups,
            write=lambda gid, records: write_records(self.store, gid, records))
        self._topics = topics
        self.offset_manager.streams_groups = self.streams_groups
        # KIP-932 share groups as their records of __consumer_offsets left them: replayed here on
        # load, served (and written) by the share-group coordinator, which shares this dict
        self.share_groups: dict[str, ShareGroup] = {}
        # online migration between the two protocols (group.consumer.migration.policy)
        self.migration = GroupMigration(MigrationPolicy.parse(self.consumer_groups.config.migration_policy),
                                        self.membership, self.consumer_groups, topics)
        # one rebalance timeline for both kinds of group, off until a reader (the console) enables it
        self.events = GroupEvents(now_ms)
        self.membership.events = self.consumer_groups.events = self.events
        self._expiry_task: asyncio.Task[None] | None = None

    # -- state both halves share, for the handlers and inspection helpers -------------------
    @property
    def active(self) -> bool:
        return self.membership.active

    @property
    def groups(self) -> dict[str, ClassicGroup]:
        return self.membership.groups

    @property
    def offsets(self) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
        return self.offset_manager.offsets

    @property
    def pending_txn_offsets(self) -> dict[int, dict[str, dict[TopicPartition, OffsetAndMetadata]]]:
        return self.offset_manager.pending_txn_offsets

    @property
    def timer(self) -> KeyedTimer:
        return self.membership.timer

    # ----------------------------------------------------------------------------- lifecycle
    def _classic_group_exists(self, group_id: str) -> bool | None:
        """None: no classic group of that id; False: an empty one; True: one with members."""
        g = self.groups.get(group_id)
        if g is None or g.is_in(GroupState.DEAD):
            return None
        return bool(g.members) or not g.is_in(GroupState.EMPTY)

    def _drop_empty_classic_group(self, group_id: str) -> None:
        g = self.groups.get(group_id)
        if g is not None:
            write_records(self.store, group_id, [group_metadata_tombstone(group_id)])
            self.membership.drop_group(g)

    async def start(self) -> None:
        self.membership.timer = KeyedTimer(asyncio.get_running_loop())
        self.consumer_groups.timer = KeyedTimer(asyncio.get_running_loop())
        self.streams_groups.timer = KeyedTimer(asyncio.get_running_loop())
        self.load()
        self.membership.active = True
        self._expiry_task = asyncio.create_task(self._expire_offsets_periodically(),
                                                name="group-offsets-expiry")

    async def stop(self) -> None:
        self.membership.active = False
        if self._expiry_task is not None:
            self._expiry_task.cancel()
            try:
                await self._expiry_task
            except (asyncio.CancelledError, Exception):
                pass
            self._expiry_task = None
        self.membership.unload()
        self.consumer_groups.unload()
        self.streams_groups.unload()

    def load(self) -> None:
        """Rebuild groups and offsets from __consumer_offsets, every partition (one node leads them all)."""
        for partition in self.store.partitions():
            self.load_partition(partition)

    def load_partition(self, partition: int) -> None:
        """Replay one partition of __consumer_offsets (this broker became its leader; Kafka: the
        shard's replay): its groups come back with their members, its offsets with their metadata."""
        open_txns: dict[int, list[LoadedRecord]] = {}
        loaded = 0
        for key, value in self.store.load_partition(partition, open_txns):
            if key is None:
                continue  # a keyless record is no group's (Kafka's loader skips it too)
            try:
                if is_consumer_group_record(key):
                    loaded += 1
                    self.consumer_groups.replay(bytes(key), None if value is None else bytes(value))
                    continue
                if share_record_type(key) is not None:
                    loaded += 1
                    share_group_replay.replay(self.share_groups, bytes(key), None if value is None else bytes(value))
                    continue
                if streams_record_type(key) is not None:
                    loaded += 1
                    self.streams_groups.replay(bytes(key), None if value is None else bytes(value))
                    continue
                rec = decode_record(key, value)
                if rec is None:
                    continue
                loaded += 1
                if isinstance(rec, OffsetCommitRecord):
                    self.offset_manager.replay_offset(rec)
                elif isinstance(rec, GroupMetadataRecord):
                    self.membership.replay_group(rec)
            except ValueError as e:
                # One unreadable record must not keep the broker from starting; say which.
                log.error("Skipping a __consumer_offsets record while loading: %s", e)
        self.offset_manager.replay_open_transactions(
            {pid: [(k, v) for k, v in held if k is not None] for pid, held in open_txns.items()})
        for gid in (*self.consumer_groups.groups, *self.streams_groups.groups, *self.share_groups):
            # committed offsets made a "simple" classic group of a consumer group's id on replay
            g = self.groups.get(gid)
            if g is not None and not g.members and g.protocol_type is None:
                self.membership.drop_group(g)
        self.membership.start_sessions()
        self.consumer_groups.start_sessions()
        self.streams_groups.after_load({t.name: len(t.partitions) for t in self._topics.values()}
                                       if self._topics is not None else {})
        if loaded:
            log.info("Loaded %d group(s) and %d committed offset(s) from %d record(s) of __consumer_offsets-%d",
                     len(self.groups), sum(len(o) for o in self.offsets.values()), loaded, partition)

    def unload_partition(self, partition: int) -> None:
        """Forget the groups and offsets of `partition` (this broker no longer leads it; Kafka:
        GroupMetadataManager.onUnloaded): their timers stop, members parked in JoinGroup/SyncGroup
        are answered NOT_COORDINATOR and find the new coordinator."""
        def here(gid: str) -> bool:
            return self.store.partition_for(gid) == partition

        gids = {g for g in (*self.groups, *self.consumer_groups.groups, *self.offsets) if here(g)}

        def timer_of_gone_group(key: Hashable) -> bool:  # timer keys are (kind, group id, ...)
            return isinstance(key, tuple) and len(key) > 1 and key[1] in gids

        for timer in (self.membership.timer, self.consumer_groups.timer):
            timer.cancel_where(timer_of_gone_group)
        for gid in gids:
            group = self.groups.pop(gid, None)
            if group is not None:
                for member in group.members.values():
                    group.complete_join(member, join_error(member.member_id, ErrorCode.NOT_COORDINATOR))
                    group.complete_sync(member, sync_error(ErrorCode.NOT_COORDINATOR))
            self.consumer_groups.groups.pop(gid, None)
            self.offsets.pop(gid, None)
        self.streams_groups.forget(g for g in self.streams_groups.groups if here(g))
        for gid in [g for g in self.share_groups if here(g)]:
            del self.share_groups[gid]
        for by_group in self.pending_txn_offsets.values():
            for gid in [g for g in by_group if here(g)]:
                del by_group[gid]

    # ------------------------------------------------------------------ membership (delegated)
    def join_group(self, req: JoinGroupRequest, client: ClientInfo) -> asyncio.Future[JoinGroupResponse]:
        """Handle JoinGroup; the future resolves to the JoinGroup response (maybe much later).

        `req.rebalance_timeout_ms` must already be set (v0 has none: the handler uses the
        session timeout, as Kafka does)."""
        cg = self.consumer_groups.groups.get(req.group_id)
        if cg is not None:
            if cg.members:
                # a classic member of a consumer group (group_migration.py)
                fut: asyncio.Future[JoinGroupResponse] = asyncio.get_running_loop().create_future()
                fut.set_result(self.migration.join(cg, req, client) if self.active
                               else join_error(req.member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE))
                return fut
            # An empty consumer group gives way to the classic one (Kafka: the downgrade path).
            tombstones: list[CoordinatorRecord] = []
            self.consumer_groups.delete(req.group_id, tombstones)
        return self.membership.join_group(req, client)

    def sync_group(self, req: SyncGroupRequest) -> asyncio.Future[SyncGroupResponse]:
        """Handle SyncGroup; followers wait for the leader's assignment."""
        cg = self.consumer_groups.groups.get(req.group_id)
        if cg is not None and self.active:
            fut: asyncio.Future[SyncGroupResponse] = asyncio.get_running_loop().create_future()
            fut.set_result(self.migration.sync(cg, req))
            return fut
        return self.membership.sync_group(req)

    def heartbeat(self, req: HeartbeatRequest) -> int:
        """Handle Heartbeat; returns the error code."""
        cg = self.consumer_groups.groups.get(req.group_id)
        if cg is not None and self.active:
            return self.migration.heartbeat(cg, req)
        return self.membership.heartbeat(req)

    def leave_group(self, group_id: str, members: list[LeaveGroupRequest.MemberIdentity]
                    ) -> tuple[int, list[LeaveGroupResponse.MemberResponse]]:
        """Handle LeaveGroup (see GroupMetadataManager.leave_group)."""
        cg = self.consumer_groups.groups.get(group_id)
        if cg is not None and self.active:
            return self.migration.leave(cg, members)
        return self.membership.leave_group(group_id, members)

    # --------------------------------------------------------------------- offsets (delegated)
    def commit_offsets(self, req: OffsetCommitRequest, api_version: int,
                       topics: list[OffsetCommitRequest.OffsetCommitRequestTopic] | None = None
                       ) -> dict[TopicPartition, int]:
        """Handle OffsetCommit for `topics` (default: all of the request's)."""
        return self.offset_manager.commit_offsets(req, api_version, topics)

    def commit_transactional_offsets(self, req: TxnOffsetCommitRequest) -> dict[TopicPartition, int]:
        """Handle TxnOffsetCommit (the offsets count once the transaction commits)."""
        return self.offset_manager.commit_transactional_offsets(req)

    def complete_transaction(self, producer_id: int, partitions: Iterable[int], committed: bool) -> None:
        """A transaction marker was written to these __consumer_offsets partitions."""
        self.offset_manager.complete_transaction(producer_id, partitions, committed)

    def has_pending_transactional_offsets(self, group_id: str, topic: str, partition: int) -> bool:
        return self.offset_manager.has_pending_transactional_offsets(group_id, topic, partition)

    def fetch_offsets(self, group_id: str, topics: list[tuple[str, list[int]]] | None
                      ) -> tuple[int, list[tuple[str, list[tuple[int, OffsetAndMetadata | None]]]]]:
        """Handle OffsetFetch for one group (see OffsetMetadataManager.fetch_offsets)."""
        return self.offset_manager.fetch_offsets(group_id, topics)

    def committed(self, group_id: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        """The committed offset of one partition (for inspection helpers and tests)."""
        return self.offset_manager.committed(group_id, topic, partition)

    def delete_offsets(self, group_id: str, topics: list[tuple[str, list[int]]]
                       ) -> tuple[int, list[tuple[str, list[tuple[int, int]]]]]:
        """Handle OffsetDelete: (group error, [(topic, [(partition, error)])])."""
        return self.offset_manager.delete_offsets(group_id, topics)

    def on_partitions_deleted(self, topic: str, partitions: Iterable[int] | None = None) -> int:
        """Drop every group's committed offsets of a deleted topic (returns how many)."""
        return self.offset_manager.on_partitions_deleted(topic, partitions)

    # -------------------------------------------------------------------- List/Describe/Delete
    def list_groups(self, states: Iterable[str] = (), types: Iterable[str] = ()) -> list[tuple[str, str, str, str]]:
        """(group id, protocol type, state, type) of each group passing the filters (KIP-518,
        KIP-848: case-insensitive states; types "classic" and "consumer")."""
        wanted_states = {s.strip().lower() for s in states}
        wanted_types = {t.strip().lower() for t in types}
        out = []
        for entry in self.streams_groups.list_entries():
            if (not wanted_states or entry[2].lower() in wanted_states) and \
                    (not wanted_types or "streams" in wanted_types):
                out.append(entry)
        for entry in self.consumer_groups.list_entries():
            if (not wanted_states or entry[2].lower() in wanted_states) and \
                    (not wanted_types or "consumer" in wanted_types):
                out.append(entry)
        for g in self.groups.values():
            if g.is_in(GroupState.DEAD):
                continue
            if wanted_states and g.state.value.lower() not in wanted_states:
                continue
            if wanted_types and "classic" not in wanted_types:
                continue
            out.append((g.group_id, g.protocol_type or "", g.state.value, "classic"))
        return out

    def describe_group(self, group_id: str, include_authorized_operations: bool = False
                       ) -> DescribeGroupsResponse.DescribedGroup:
        """One DescribeGroups entry."""
        return described_group(group_id, self.groups.get(group_id), active=self.active,
                               include_authorized_operations=include_authorized_operations)

    def delete_groups(self, group_ids: list[str]) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        for gid in group_ids:
            if not self.active:
                out.append((gid, ErrorCode.COORDINATOR_NOT_AVAILABLE))
                continue
            if gid in self.streams_groups.groups:
                code = self.streams_groups.delete(gid)
                if code == ErrorCode.NONE:
                    write_records(self.store, gid, [offset_commit_tombstone(gid, t, p) for (t, p) in self.offsets.get(gid, {})])
                    self.offsets.pop(gid, None)
                out.append((gid, code))
                continue
            if gid in self.consumer_groups.groups:
                tombstones: list[CoordinatorRecord] = [offset_commit_tombstone(gid, t, p)
                                                       for (t, p) in self.offsets.get(gid, {})]
                try:
                    code = self.consumer_groups.delete(gid, tombstones)
                except KafkaError as e:
                    code = e.code
                if code == ErrorCode.NONE:
                    self.offsets.pop(gid, None)
                out.append((gid, code))
                continue
            group = self.groups.get(gid)
            if group is None or group.is_in(GroupState.DEAD):
                out.append((gid, ErrorCode.GROUP_ID_NOT_FOUND))
                continue
            if group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE):
                out.append((gid, ErrorCode.NON_EMPTY_GROUP))
                continue
            records: list[CoordinatorRecord] = [offset_commit_tombstone(gid, t, p) for (t, p) in self.offsets.get(gid, {})]
            records.append(group_metadata_tombstone(gid))
            try:
                write_records(self.store, gid, records)
            except KafkaError as e:
                out.append((gid, e.code))
                continue
            self._drop_group(group)
            out.append((gid, ErrorCode.NONE))
        return out

    def _drop_group(self, group: ClassicGroup) -> None:
        self.membership.drop_group(group)
        self.offsets.pop(group.group_id, None)

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
            expired = self.offset_manager.expired_offsets(group, offsets, now)
            records: list[CoordinatorRecord] = [offset_commit_tombstone(gid, t, p) for (t, p) in expired]
            # An Empty group left without offsets goes (Kafka: maybeDeleteGroup), unless a member id
            # handed out with MEMBER_ID_REQUIRED is about to come back with it.
            delete_group = (len(expired) == len(offsets) and group.is_in(GroupState.EMPTY)
                            and not group.pending_join_members)
            if delete_group:
                records.append(group_metadata_tombstone(gid))
            if not records:
                continue
            try:
                write_records(self.store, gid, records)
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
        return expired_total + self._cleanup_consumer_groups(now)

    def _cleanup_consumer_groups(self, now: int) -> int:
        """The same for KIP-848 consumer groups: expired offsets go, and an Empty group left with
        none goes with its records (Kafka: cleanupGroupMetadata -> maybeDeleteGroup)."""
        expired_total = 0
        for gid, g in list(self.consumer_groups.groups.items()):
            expired, all_expired = self.offset_manager.expired_consumer_group_offsets(gid, now)
            records: list[CoordinatorRecord] = [offset_commit_tombstone(gid, t, p) for (t, p) in expired]
            try:
                if all_expired and not g.members:
                    self.consumer_groups.delete(gid, records)
                    log.info("[GroupId %s] Group transitioned to Dead: empty, and no offsets left", gid)
                elif records:
                    write_records(self.store, gid, records)
                else:
                    continue
            except KafkaError as e:
                log.warning("Failed to expire offsets of group %s: %s", gid, e)
                continue
            offsets = self.offsets.get(gid, {})
            for key in expired:
                offsets.pop(key, None)
            if not offsets:
                self.offsets.pop(gid, None)
            expired_total += len(expired)
            if expired:
                log.info("Removed %d expired offsets of group %s", len(expired), gid)
        return expired_total
