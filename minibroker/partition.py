"""One partition this broker holds a replica of (Kafka: kafka.cluster.Partition).

Theory of operation: a `Partition` pairs a partition's `Log` with what the cluster says of it:
the leader, its epoch, the replica set and the in-sync replicas. On this single-node broker the
replica set and the ISR are this node and the high watermark is the log end offset; the cluster
issue gives them real members. The `ReplicaManager` owns the partitions (`get_partition`); the
handlers, the console and the coordinators' stores reach a partition's log only through them, so
that what a client can see of a log (high watermark, last stable offset, what a fetch may read)
is decided in one place.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode, KafkaError
from storage.append_origin import AppendOrigin

if TYPE_CHECKING:  # storage.log is imported by the first log opened, not at start (issue 22)
    from protocol.records.batch import BatchView
    from storage.config import LogConfig
    from storage.file_region import FileRegion
    from storage.log import Log, LogAppendInfo, OffsetAndTimestamp, TimestampAndOffset
    from storage.producer_state import ProducerStateEntry
    from storage.segments import LogSegments
    from storage.txn_index import AbortedTxn

READ_UNCOMMITTED, READ_COMMITTED = 0, 1  # Fetch / ListOffsets isolation_level


@dataclass(slots=True)
class LogReadResult:
    """What a fetch read of one partition found (Kafka: LogReadResult): the records as a file
    region (sent with sendfile, never read into Python), the offsets a client is told, and the
    aborted transactions a read_committed reader must skip. `error` set: offsets are -1."""

    error: int = 0
    records: FileRegion | None = None
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    aborted_transactions: list[AbortedTxn] | None = None


class Partition:
    """A partition's log with its leader, leader epoch, replicas and ISR (Kafka: Partition)."""

    __slots__ = ("topic", "partition", "topic_id", "log", "leader_id", "leader_epoch", "replicas", "isr",
                 "is_internal", "min_insync_replicas", "schema_validation")

    def __init__(self, topic: str, partition: int, topic_id: uuid.UUID, log: Log, node_id: int,
                 leader_epoch: int = 0) -> None:
        self.topic = topic
        self.partition = partition
        self.topic_id = topic_id
        self.log = log  # Kafka: Partition.log; only the ReplicaManager and this class call it
        self.leader_id = node_id
        self.leader_epoch = leader_epoch
        self.replicas: tuple[int, ...] = (node_id,)
        self.isr: tuple[int, ...] = (node_id,)  # one replica: the ISR is the leader, HW = LEO
        self.is_internal = False  # the topic's, set by the ReplicaManager from the metadata
        self.min_insync_replicas = 1  # the topic's min.insync.replicas, likewise
        # (key, value) when the topic sets confluent.key/value.schema.validation (the schema registry checks them)
        self.schema_validation: tuple[bool, bool] | None = None

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.partition}, leader={self.leader_id}, epoch={self.leader_epoch})"

    # -- offsets and state ------------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        return self.log.last_stable_offset

    @property
    def first_unstable_offset(self) -> int | None:
        return self.log.first_unstable_offset

    @property
    def recovery_point(self) -> int:
        return self.log.recovery_point

    @property
    def config(self) -> LogConfig:
        return self.log.config

    @property
    def segments(self) -> LogSegments:
        """The log's segments, for the console's inspector (read only)."""
        return self.log.segments

    @property
    def num_segments(self) -> int:
        return self.log.num_segments

    def size_in_bytes(self) -> int:
        return self.log.size_in_bytes()

    def latest_log_epoch(self) -> int:
        """The newest leader epoch in the log's epoch cache, 0 if none (OffsetForLeaderEpoch and
        DescribeTopicPartitions answer it)."""
        epoch = self.log.latest_epoch
        return 0 if epoch is None else epoch

    def has_ongoing_transaction(self, producer_id: int) -> bool:
        return self.log.has_ongoing_transaction(producer_id)

    def producers(self) -> dict[int, ProducerStateEntry]:
        """The active producers' state (DescribeProducers, the console)."""
        return self.log.producer_state.producers

    # -- append -----------------------------------------------------------------------------------
    def append_records_to_leader(self, records: bytes | bytearray | memoryview, *, origin: str = AppendOrigin.CLIENT,
                                 request_version: int | None = None,
                                 verify: Callable[[Sequence[BatchView]], None] | None = None) -> LogAppendInfo:
        """Validate (storage.log_validator, once) and append as leader (Kafka:
        Partition.appendRecordsToLeader -> UnifiedLog.appendAsLeader)."""
        lg = self.log
        validated = lg.validate(records, origin=origin, request_version=request_version, verify=verify)
        return lg.append_as_leader(validated, leader_epoch=self.leader_epoch, origin=origin)

    def needs_flush_policy(self) -> bool:
        """True when the topic sets flush.messages / flush.ms (an fsync may be due after appends)."""
        config = self.log.config
        return config.flush_messages < _NEVER or config.flush_ms < _NEVER

    # -- reads ------------------------------------------------------------------------------------
    def read(self, fetch_offset: int, max_bytes: int, isolation_level: int, min_one_batch: bool) -> LogReadResult:
        """Whole batches from `fetch_offset`, up to the high watermark (read_uncommitted) or the
        last stable offset (read_committed) (Kafka: Partition.fetchRecords -> readRecords)."""
        lg = self.log
        lso = lg.last_stable_offset
        hw = lg.high_watermark
        max_offset = lso if isolation_level == READ_COMMITTED else hw
        result = LogReadResult(0, None, hw, lso, lg.log_start_offset)
        info = lg.read(fetch_offset, max(0, max_bytes), max_offset=max_offset, min_one_batch=min_one_batch)
        if info.region is not None and info.region.size:
            result.records = info.region
        if isolation_level == READ_COMMITTED:
            result.aborted_transactions = lg.aborted_transactions(fetch_offset, max_offset)
        return result

    def aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        return self.log.aborted_transactions(fetch_offset, upper_bound_offset)

    def offset_for_timestamp(self, timestamp: int) -> OffsetAndTimestamp | None:
        """The first offset whose timestamp is at or after `timestamp` (ListOffsets)."""
        return self.log.offset_for_timestamp(timestamp)

    def max_timestamp_and_offset(self) -> TimestampAndOffset | None:
        return self.log.max_timestamp_and_offset()

    def legacy_fetch_offsets_before(self, timestamp: int, max_num_offsets: int) -> list[int]:
        """ListOffsets v0 (Kafka: Partition.legacyFetchOffsetsForTimestamp)."""
        return self.log.legacy_fetch_offsets_before(timestamp, max_num_offsets)

    def last_offset_for_leader_epoch(self, current_leader_epoch: int, leader_epoch: int) -> tuple[int, int, int]:
        """(error, epoch, end offset) for OffsetForLeaderEpoch (Kafka:
        Partition.lastOffsetForLeaderEpoch): the client's current epoch is fenced when older
        than ours, unknown when newer."""
        current = self.latest_log_epoch()
        if 0 <= current_leader_epoch < current:
            return ErrorCode.FENCED_LEADER_EPOCH, -1, -1
        if current_leader_epoch > current:
            return ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1
        epoch, end = self.log.end_offset_for_epoch(leader_epoch)
        return ErrorCode.NONE, epoch, end

    def delete_records_on_leader(self, offset: int) -> int:
        """Move the log start offset up to `offset`; returns the new low watermark (Kafka:
        Partition.deleteRecordsOnLeader). A compact-only topic refuses (POLICY_VIOLATION)."""
        lg = self.log
        if not lg.config.delete:
            raise KafkaError(ErrorCode.POLICY_VIOLATION,
                             f"Records of partition {self.topic}-{self.partition} can not be deleted due "
                             "to the configured policy")
        return lg.delete_records_before(offset)


_NEVER = 1 << 62  # flush.messages / flush.ms at Kafka's default (Long.MAX_VALUE): page cache only
