"""Committed offsets of classic groups (Kafka: OffsetMetadataManager).

Theory of operation: OffsetCommit writes OffsetCommit records to the group's __consumer_offsets
partition, then updates the cache OffsetFetch reads. TxnOffsetCommit (KIP-98) writes them in a
transactional batch of the producer and holds them aside until the transaction coordinator
reports the marker (`complete_transaction`): a COMMIT makes them visible, an ABORT drops them.
OffsetDelete and a deleted topic write tombstones. Expiry (offsets.retention.minutes) picks the
offsets past retention, counting from the commit or from when the group became Empty.

Commits are validated against the group's membership, which this manager reads from the
`GroupMetadataManager` it is given (as Kafka's OffsetMetadataManager is given its
GroupMetadataManager); membership never reads offsets.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from minibroker.coordinator.group.classic_group import ClassicGroup, GroupState
from minibroker.coordinator.group.consumer_group_manager import ConsumerGroupManager
from minibroker.coordinator.group.group_metadata_manager import (
    GroupConfig,
    GroupMetadataManager,
    write_records,
)
from minibroker.coordinator.group.records import (
    OffsetAndMetadata,
    OffsetCommitRecord,
    decode_record,
    offset_commit_record,
    offset_commit_tombstone,
)
from minibroker.coordinator.group.streams_group_manager import StreamsGroupManager
from minibroker.coordinator.runtime.coordinator_store import CoordinatorStore
from minibroker.coordinator.runtime.partition_writer import CoordinatorRecord
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_storage.clock import Clock

if TYPE_CHECKING:
    from minibroker_protocol.apis.offset_commit import OffsetCommitRequest
    from minibroker_protocol.apis.txn_offset_commit import TxnOffsetCommitRequest

log = logging.getLogger("minibroker.coordinator.group")

TopicPartition = tuple[str, int]


class _CommittedPartition(Protocol):
    """A partition of an OffsetCommit or TxnOffsetCommit request, as far as validation reads it."""

    @property
    def partition_index(self) -> int: ...
    @property
    def committed_metadata(self) -> str | None: ...


class _CommittedTopic(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> Sequence[_CommittedPartition]: ...


class OffsetMetadataManager:
    """Every group's committed offsets, and the transactional ones waiting for their marker."""

    def __init__(self, config: GroupConfig, store: CoordinatorStore, membership: GroupMetadataManager, *,
                 now_ms: Clock) -> None:
        self.config = config
        self.store = store
        self.membership = membership
        self.now_ms = now_ms
        self.offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        # TxnOffsetCommit offsets waiting for their transaction's marker: producer id -> group -> offsets
        self.pending_txn_offsets: dict[int, dict[str, dict[TopicPartition, OffsetAndMetadata]]] = {}
        # KIP-848 consumer groups: their commits are validated against member epochs there
        self.consumer_groups: ConsumerGroupManager | None = None
        # KIP-1071 streams groups: commits validated against member epochs too (issue 35)
        self.streams_groups: StreamsGroupManager | None = None

    def _is_consumer_group(self, group_id: str | None) -> bool:
        return self.consumer_groups is not None and group_id in self.consumer_groups.groups

    def _is_streams_group(self, group_id: str | None) -> bool:
        return self.streams_groups is not None and group_id in self.streams_groups.groups

    @property
    def groups(self) -> dict[str, ClassicGroup]:
        return self.membership.groups

    @property
    def active(self) -> bool:
        return self.membership.active

    def _write(self, group_id: str, records: list[CoordinatorRecord], producer_id: int = -1,
               producer_epoch: int = -1) -> None:
        write_records(self.store, group_id, records, producer_id, producer_epoch)

    def replay_offset(self, rec: OffsetCommitRecord) -> None:
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

    def replay_open_transactions(self, open_txns: dict[int, list[CoordinatorRecord]]) -> None:
        """Transactional offsets whose transaction had no marker yet when the log was loaded."""
        for pid, held in open_txns.items():
            for key, value in held:
                try:
                    rec = decode_record(key, value)
                except ValueError as e:
                    log.error("Skipping a transactional __consumer_offsets record while loading: %s", e)
                    continue
                if isinstance(rec, OffsetCommitRecord) and rec.value is not None:
                    if rec.group not in self.groups:  # a simple group, as replay_offset makes
                        self.groups[rec.group] = ClassicGroup(rec.group, current_state_timestamp=None)
                    self.pending_txn_offsets.setdefault(pid, {}).setdefault(rec.group, {})[
                        (rec.topic, rec.partition)] = rec.value

    def commit_offsets(self, req: OffsetCommitRequest, api_version: int,
                       topics: list[OffsetCommitRequest.OffsetCommitRequestTopic] | None = None
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
        created = False
        if self._is_streams_group(req.group_id):
            assert self.streams_groups is not None
            try:
                self.streams_groups.validate_offset_commit(req.group_id, req.member_id, generation)
            except KafkaError as e:
                return all_failed(e.code)
            return self._store_commits(req, topics, created, None)
        if self._is_consumer_group(req.group_id):
            assert self.consumer_groups is not None
            try:
                self.consumer_groups.validate_offset_commit(
                    req.group_id, req.member_id, generation, api_version, instance_id=req.group_instance_id,
                    partitions=self._checked_partitions(topics))
            except KafkaError as e:
                return all_failed(e.code)
            return self._store_commits(req, topics, created, None)
        group = self.groups.get(req.group_id)
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
            self.membership.reschedule_heartbeat(group, group.members[req.member_id])
        return self._store_commits(req, topics, created, group)

    def _checked_partitions(self, topics: Sequence[_CommittedTopic]) -> list[tuple[str, int]]:
        """The partitions a consumer group's member epoch is checked against: those whose metadata
        is not too large (Kafka answers those OFFSET_METADATA_TOO_LARGE before validating them)."""
        limit = self.config.offset_metadata_max_bytes
        return [(t.name, p.partition_index) for t in topics for p in t.partitions
                if p.committed_metadata is None or len(p.committed_metadata) <= limit]

    def _store_commits(self, req: OffsetCommitRequest, topics: list[OffsetCommitRequest.OffsetCommitRequestTopic],
                       created: bool, group: ClassicGroup | None
                       ) -> dict[tuple[str, int], int]:
        requested = [(t.name, p.partition_index) for t in topics for p in t.partitions]
        now = self.now_ms()
        retention = req.retention_time_ms  # -1 (the default) outside v2-4
        expire = None if retention == -1 else now + retention
        results: dict[tuple[str, int], int] = {}
        records: list[CoordinatorRecord] = []
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
            return dict.fromkeys(requested, e.code)
        if created and group is not None:
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
    def commit_transactional_offsets(self, req: TxnOffsetCommitRequest) -> dict[tuple[str, int], int]:
        """TxnOffsetCommit (OffsetMetadataManager.commitTransactionalOffset): the offsets are
        written in a transactional batch of the producer and take effect when the transaction
        coordinator writes the COMMIT marker (`complete_transaction`)."""
        requested = [(t.name, p.partition_index) for t in req.topics for p in t.partitions]
        if not self.active:
            return dict.fromkeys(requested, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        group = self.groups.get(req.group_id)
        created = False
        if self._is_streams_group(req.group_id):
            assert self.streams_groups is not None
            try:
                self.streams_groups.validate_offset_commit(req.group_id, req.member_id, req.generation_id_or_member_epoch)
            except KafkaError as e:
                return dict.fromkeys(requested, e.code)
        elif self._is_consumer_group(req.group_id):
            assert self.consumer_groups is not None
            try:
                self.consumer_groups.validate_offset_commit(
                    req.group_id, req.member_id, req.generation_id_or_member_epoch, 5, transactional=True,
                    instance_id=req.group_instance_id, partitions=self._checked_partitions(req.topics))
            except KafkaError as e:
                return dict.fromkeys(requested, e.code)
        elif group is None:
            if req.generation_id_or_member_epoch >= 0:
                return dict.fromkeys(requested, ErrorCode.ILLEGAL_GENERATION)
            group = ClassicGroup(req.group_id, current_state_timestamp=self.now_ms())
            created = True
        if group is not None and not self._is_consumer_group(req.group_id) and not self._is_streams_group(req.group_id):
            try:
                self._validate_offset_commit(group, req.member_id, req.group_instance_id, req.generation_id_or_member_epoch,
                                             transactional=True)
            except KafkaError as e:
                return dict.fromkeys(requested, e.code)
        now = self.now_ms()
        results: dict[tuple[str, int], int] = {}
        records: list[CoordinatorRecord] = []
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
        if created and group is not None:
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
            live = (group is not None and not group.is_in(GroupState.DEAD)) or self._is_consumer_group(group_id) \
            or self._is_streams_group(group_id)
            if committed and live:
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
        known = (group is not None and not group.is_in(GroupState.DEAD)) or self._is_consumer_group(group_id) \
            or self._is_streams_group(group_id)
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

    def delete_offsets(self, group_id: str, topics: list[tuple[str, list[int]]]
                       ) -> tuple[int, list[tuple[str, list[tuple[int, int]]]]]:
        """Handle OffsetDelete: (group error, [(topic, [(partition, error)])])."""
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        group = self.groups.get(group_id)
        subscribed: Callable[[str], bool]
        if self._is_consumer_group(group_id) or self._is_streams_group(group_id):
            owner = self.consumer_groups if self._is_consumer_group(group_id) else self.streams_groups
            assert owner is not None
            subscribed = lambda topic: owner.is_subscribed_to_topic(group_id, topic)  # noqa: E731
        elif group is None or group.is_in(GroupState.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, []
        elif not group.is_in(GroupState.EMPTY) and not group.uses_consumer_protocol():
            return ErrorCode.NON_EMPTY_GROUP, []
        else:
            subscribed = group.is_subscribed_to_topic
        offsets = self.offsets.get(group_id, {})
        records: list[CoordinatorRecord] = []
        deleted: list[tuple[str, int]] = []
        result = []
        for topic, partitions in topics:
            if subscribed(topic):
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

    def expired_consumer_group_offsets(self, group_id: str, now: int) -> tuple[list[tuple[str, int]], bool]:
        """A KIP-848 consumer group's offsets past retention, and whether that is all of them and
        no transaction still holds offsets of the group (then an Empty group may go). Kafka 4.4
        (ConsumerGroup.offsetExpirationCondition, OffsetMetadataManager.cleanupExpiredOffsets):
        an offset of a topic no member subscribes to expires `offsets.retention.minutes` after its
        commit (or at the expire timestamp an OffsetCommit v1 asked for), whatever the group's
        state; offsets a pending transaction also writes stay."""
        assert self.consumer_groups is not None
        retention = self.config.offsets_retention_ms
        expired: list[tuple[str, int]] = []
        all_expired = True
        for (topic, partition), om in self.offsets.get(group_id, {}).items():
            if self.consumer_groups.is_subscribed_to_topic(group_id, topic):
                all_expired = False
                continue
            if om.expire_timestamp_ms is not None:
                due = now >= om.expire_timestamp_ms
            else:
                due = now - om.commit_timestamp_ms >= retention
            if due and not self.has_pending_transactional_offsets(group_id, topic, partition):
                expired.append((topic, partition))
            else:
                all_expired = False
        if any(group_id in by_group for by_group in self.pending_txn_offsets.values()):
            all_expired = False
        return expired, all_expired

    def expired_offsets(self, group: ClassicGroup, offsets: dict[tuple[str, int], OffsetAndMetadata],
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
