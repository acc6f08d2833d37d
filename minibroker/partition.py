"""One partition this broker holds a replica of (Kafka: kafka.cluster.Partition).

Theory of operation: a `Partition` pairs a partition's `Log` with what the cluster says of it:
the leader, its epoch, the partition epoch, the replica set and the in-sync replicas. A partition
the metadata never placed on other brokers has this node as its replica set and ISR, and its high
watermark is its log end offset. The metadata makes it leader or follower (`make_leader`,
`make_follower`, Kafka's names): as leader it tracks each follower (minibroker.replica), moves the
high watermark to the smallest LEO over the ISR (`maybe_increment_leader_hw`), and proposes ISR
shrinks and expansions to the controller through the AlterPartitionManager; as follower its log
takes the leader's batches (minibroker.replica_fetcher) and its HW is min(leader's HW, own LEO). The `ReplicaManager` owns the partitions (`get_partition`); the
handlers, the console and the coordinators' stores reach a partition's log only through them, so
that what a client can see of a log (high watermark, last stable offset, what a fetch may read)
is decided in one place.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from minibroker.partition_isr import IsrUpkeep
from minibroker.replica import AlterPartitionManager, Replica
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_storage.append_origin import AppendOrigin

if TYPE_CHECKING:  # minibroker_storage.log is imported by the first log opened, not at start (issue 22)
    from minibroker.metadata_cache import PartitionImage
    from minibroker_protocol.records.batch import BatchView
    from minibroker_storage.config import LogConfig
    from minibroker_storage.file_region import FileRegion
    from minibroker_storage.log import Log, LogAppendInfo, OffsetAndTimestamp, TimestampAndOffset
    from minibroker_storage.producer_state import ProducerStateEntry
    from minibroker_storage.segments import LogSegments
    from minibroker_storage.txn_index import AbortedTxn

logger = logging.getLogger("minibroker.partition")
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
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset): the fetcher must truncate (KIP-320)
    log_end_offset: int = -1


class Partition(IsrUpkeep):
    """A partition's log with its leader, leader epoch, replicas and ISR (Kafka: Partition)."""

    __slots__ = ("topic", "partition", "topic_id", "log", "leader_id", "leader_epoch", "replicas", "isr",
                 "is_internal", "min_insync_replicas", "local_id", "remote_replicas",
                 "leader_epoch_start_offset", "from_metadata", "alter_partition_manager",
                 "replica_lag_time_max_ms", "hw_listener", "broker_epochs", "broker_usable", "schema_validation")

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
        self.local_id = node_id
        self.partition_epoch = 0
        self.remote_replicas: dict[int, Replica] = {}  # leader only: the followers' state
        self.pending_isr: tuple[int, ...] | None = None
        self.leader_epoch_start_offset = -1  # the LEO when this broker became leader of this epoch
        self.from_metadata = False  # made leader or follower by ReplicaManager.apply_delta
        self.alter_partition_manager: AlterPartitionManager | None = None
        self.replica_lag_time_max_ms = 30_000
        self.hw_listener: Callable[[Partition], None] | None = None  # told when the HW or the ISR moved
        self.broker_epochs: Callable[[int], int] = _no_epoch  # the metadata's epoch of a broker
        self.broker_usable: Callable[[int], bool] = _usable  # registered, not fenced, not shutting down
        self._alter_task: asyncio.Task[None] | None = None
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

    def has_ongoing_transaction(self, producer_id: int, producer_epoch: int | None = None) -> bool:
        return self.log.has_ongoing_transaction(producer_id, producer_epoch)

    def producers(self) -> dict[int, ProducerStateEntry]:
        """The active producers' state (DescribeProducers, the console)."""
        return self.log.producer_state.producers

    # -- append -----------------------------------------------------------------------------------
    def append_records_to_leader(self, records: bytes | bytearray | memoryview, *, origin: str = AppendOrigin.CLIENT,
                                 request_version: int | None = None,
                                 verify: Callable[[Sequence[BatchView]], None] | None = None) -> LogAppendInfo:
        """Validate (minibroker_storage.log_validator, once) and append as leader (Kafka:
        Partition.appendRecordsToLeader -> UnifiedLog.appendAsLeader)."""
        lg = self.log
        validated = lg.validate(records, origin=origin, request_version=request_version, verify=verify)
        info = lg.append_as_leader(validated, leader_epoch=self.leader_epoch, origin=origin)
        if not lg.high_watermark_follows_leo:  # followers: the HW may move (a smaller ISR)
            self.maybe_increment_leader_hw(time.time_ns() // 1_000_000)
        return info

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
            # nothing read, nothing to skip: an empty list without a walk of the transaction
            # index, as Kafka's LocalLog.emptyFetchDataInfo answers (every parked fetch reads so)
            result.aborted_transactions = ([] if result.records is None
                                           else lg.aborted_transactions(fetch_offset, max_offset))
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
        if self.from_metadata and not self.is_leader:  # Kafka: fetchOnlyFromLeader
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1
        current = self.leader_epoch if self.from_metadata else self.latest_log_epoch()
        if 0 <= current_leader_epoch < current:
            return ErrorCode.FENCED_LEADER_EPOCH, -1, -1
        if current_leader_epoch > current:
            return ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1
        epoch, end = self.log.end_offset_for_epoch(leader_epoch)
        return ErrorCode.NONE, epoch, end

    def low_watermark_if_leader(self) -> int:
        """The smallest log start offset over this leader and its followers on usable brokers
        (Kafka: Partition.lowWatermarkIfLeader; a follower that has not fetched yet counts as -1)."""
        low = self.log.log_start_offset
        for b, r in self.remote_replicas.items():
            if self.broker_usable(b) and r.state.log_start_offset < low:
                low = r.state.log_start_offset
        return low

    def delete_records_on_leader(self, offset: int) -> int:
        """Move the log start offset up to `offset`; returns the new low watermark (Kafka:
        Partition.deleteRecordsOnLeader). A compact-only topic refuses (POLICY_VIOLATION)."""
        lg = self.log
        if self.from_metadata and not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"Leader not local for partition {self.topic}-{self.partition} on broker {self.local_id}")
        if not lg.config.delete:
            raise KafkaError(ErrorCode.POLICY_VIOLATION,
                             f"Records of partition {self.topic}-{self.partition} can not be deleted due "
                             "to the configured policy")
        return lg.delete_records_before(offset)

    # -- replication (Kafka: Partition.makeLeader / makeFollower and the leader's ISR upkeep) --------
    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_id

    def _set_isr(self, isr: tuple[int, ...]) -> None:
        self.isr = isr
        # the leader alone in the replica set: every append is committed at once (minibroker_storage.log);
        # with followers, even out of the ISR, the append path asks maybe_increment_leader_hw
        self.log.high_watermark_follows_leo = self.is_leader and isr == (self.local_id,) and not self.remote_replicas

    def _accept(self, image: PartitionImage) -> bool:
        """Whether a metadata change is newer than what this partition holds (Kafka skips a
        registration with an older partition epoch: an AlterPartition answer got here first)."""
        if self.from_metadata and (image.leader_epoch < self.leader_epoch or (
                image.leader_epoch == self.leader_epoch and image.partition_epoch < self.partition_epoch)):
            logger.info("%r: skipped a state change to leader epoch %d, partition epoch %d (older)", self,
                        image.leader_epoch, image.partition_epoch)
            return False
        return True

    def make_leader(self, image: PartitionImage, now_ms: int) -> bool:
        """Become (or stay) the leader the metadata names (Kafka: Partition.makeLeader). A new
        leader epoch starts at the LEO in the epoch cache; the followers' states are reset (ISR
        members count as caught up now); the HW may move at once if the ISR is smaller. Returns
        whether this is a new leader epoch."""
        if not self._accept(image):
            return False
        lg = self.log
        is_new_epoch = not self.from_metadata or image.leader_epoch > self.leader_epoch or not self.is_leader
        was_leader = self.from_metadata and self.is_leader
        self.from_metadata = True
        self.leader_id = self.local_id
        self.leader_epoch = image.leader_epoch
        self.partition_epoch = image.partition_epoch
        self.replicas = image.replicas
        self.pending_isr = None
        if is_new_epoch:
            self.leader_epoch_start_offset = lg.log_end_offset
            lg.maybe_assign_epoch_start_offset(image.leader_epoch, lg.log_end_offset)
        old = self.remote_replicas
        self.remote_replicas = {}
        for b in image.replicas:
            if b == self.local_id:
                continue
            r = old.get(b)
            if r is None:
                r = Replica(b)
                r.reset(now_ms, is_new_leader=True, in_sync=b in image.isr)
            elif is_new_epoch:  # Kafka resets the followers' states with each new leader epoch only
                r.reset(now_ms, is_new_leader=not was_leader, in_sync=b in image.isr)
            self.remote_replicas[b] = r
        self._set_isr(image.isr)
        self.maybe_increment_leader_hw(now_ms)
        return is_new_epoch

    def make_follower(self, image: PartitionImage, checkpointed_hw: int | None = None) -> bool:
        """Follow the leader the metadata names (Kafka: Partition.makeFollower). The HW is the
        one checkpointed (first time) or the one held, never above the LEO. Returns whether the
        leader or its epoch changed (the fetcher then starts over, truncating first)."""
        if not self._accept(image):
            return False
        changed = not self.from_metadata or image.leader_id != self.leader_id or image.leader_epoch != self.leader_epoch
        first = not self.from_metadata
        self.from_metadata = True
        self.leader_id = image.leader_id
        self.leader_epoch = image.leader_epoch
        self.partition_epoch = image.partition_epoch
        self.replicas = image.replicas
        self.remote_replicas = {}
        self.pending_isr = None
        self.leader_epoch_start_offset = -1
        self._set_isr(image.isr)
        lg = self.log
        if first and checkpointed_hw is not None:
            lg.update_high_watermark(checkpointed_hw)
        else:
            lg.update_high_watermark(lg.high_watermark)  # clamp to the LEO
        return changed

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The ISR, with a replica being added already counted (Kafka: PendingExpandIsr's
        maximalIsr: the HW waits for it as soon as the expansion is proposed)."""
        pending = self.pending_isr
        if pending is not None and len(pending) > len(self.isr):
            return pending
        return self.isr

    def check_leader_epoch(self, current_leader_epoch: int, require_leader: bool) -> None:
        """Kafka: Partition.localLogWithEpochOrThrow: a requester's epoch older than ours is
        fenced, a newer one unknown (our metadata is behind); -1 is "not checked"."""
        if current_leader_epoch >= 0:
            if current_leader_epoch < self.leader_epoch:
                raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH,
                                 f"The leader epoch {current_leader_epoch} is older than the current "
                                 f"{self.leader_epoch} of {self.topic}-{self.partition}")
            if current_leader_epoch > self.leader_epoch:
                raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH,
                                 f"The leader epoch {current_leader_epoch} is newer than the current "
                                 f"{self.leader_epoch} of {self.topic}-{self.partition}")
        if require_leader and not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"Leader not local for partition {self.topic}-{self.partition} on broker {self.local_id}")

    def fetch_records(self, fetch_offset: int, max_bytes: int, isolation_level: int, min_one_batch: bool, *,
                      current_leader_epoch: int, last_fetched_epoch: int, from_follower: bool,
                      require_leader: bool) -> LogReadResult:
        """A fetch with epochs or from a follower (Kafka: Partition.fetchRecords): the epoch
        check, then the divergence check of KIP-320 — if the log's end for the requester's last
        fetched epoch is before its fetch offset (or that epoch is unknown here), no records but
        the epoch and end offset to truncate to — then the read: up to the LEO for a follower,
        the HW / LSO for a consumer."""
        self.check_leader_epoch(current_leader_epoch, require_leader)
        lg = self.log
        if last_fetched_epoch >= 0:
            epoch, end = lg.end_offset_for_epoch(last_fetched_epoch)
            if epoch < last_fetched_epoch or end < fetch_offset:
                return LogReadResult(0, None, lg.high_watermark, lg.last_stable_offset, lg.log_start_offset,
                                     None, (epoch, end), lg.log_end_offset)
        if not from_follower:
            result = self.read(fetch_offset, max_bytes, isolation_level, min_one_batch)
            result.log_end_offset = lg.log_end_offset
            return result
        leo = lg.log_end_offset
        info = lg.read(fetch_offset, max(0, max_bytes), max_offset=leo, min_one_batch=min_one_batch)
        region = info.region if info.region is not None and info.region.size else None
        return LogReadResult(0, region, lg.high_watermark, lg.last_stable_offset, lg.log_start_offset, None, None, leo)

    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int, log_start_offset: int,
                                    fetch_time_ms: int, leader_end_offset: int, broker_epoch: int) -> bool:
        """A follower's fetch (Kafka: Partition.updateFollowerFetchState): its state, then an ISR
        expansion if it caught up, then the HW. Returns whether the HW moved. A fetch from a
        broker that is not in the replica set changes nothing."""
        replica = self.remote_replicas.get(replica_id)
        if replica is None:
            return False
        replica.update_fetch_state(fetch_offset, log_start_offset, fetch_time_ms, leader_end_offset, broker_epoch)
        self.maybe_expand_isr(replica, fetch_time_ms)
        return self.maybe_increment_leader_hw(fetch_time_ms)

    def maybe_increment_leader_hw(self, now_ms: int) -> bool:
        """HW = the smallest LEO over the (maximal) ISR, moving only up (Kafka:
        Partition.maybeIncrementLeaderHW). A follower outside the ISR that is caught up and
        about to join also holds it back, as Kafka's shouldWaitForReplicaToJoinIsr does. (KIP-966's
        strict min ISR, the HW held under min.insync.replicas, is not applied: docs/differences.md
        #kraft-elections.)"""
        if not self.is_leader:
            return False
        lg = self.log
        new_hw = lg.log_end_offset
        isr = self.maximal_isr
        leader_leo = new_hw
        for b, r in self.remote_replicas.items():
            leo = r.state.log_end_offset
            if leo < new_hw and (b in isr or (
                    r.is_caught_up(leader_leo, now_ms, self.replica_lag_time_max_ms) and self._eligible(b))):
                new_hw = leo
        if new_hw > lg.high_watermark and lg.maybe_increment_high_watermark(new_hw):
            self._notify()
            return True
        return False

    def _notify(self) -> None:
        if self.hw_listener is not None:
            self.hw_listener(self)

    def _eligible(self, broker_id: int) -> bool:
        """Kafka: Partition.isReplicaIsrEligible: an assigned replica on a broker the metadata
        has unfenced and not shutting down, fetching with the broker epoch the metadata has
        (KIP-903: a fetch of an earlier incarnation does not count)."""
        if broker_id not in self.replicas or not self.broker_usable(broker_id):
            return False
        r = self.remote_replicas.get(broker_id)
        registered = self.broker_epochs(broker_id)
        seen = r.state.broker_epoch if r is not None else None
        return registered < 0 or seen is None or seen < 0 or seen == registered

    def stop(self) -> None:
        """No longer a replica here (Kafka: stopReplica): the proposal in flight is dropped."""
        if self._alter_task is not None:
            self._alter_task.cancel()
            self._alter_task = None


def _no_epoch(broker_id: int) -> int:
    return -1


def _usable(broker_id: int) -> bool:
    return True


_NEVER = 1 << 62  # flush.messages / flush.ms at Kafka's default (Long.MAX_VALUE): page cache only
