"""The partitions this broker holds, their appends and the fetches waiting for them (Kafka:
ReplicaManager with its produce and fetch purgatories).

Theory of operation: the ReplicaManager owns a `Partition` (minibroker.partition) for every
partition whose log is on this broker; the metadata publisher (today the TopicRegistry) makes and
drops them (`publish_topic` / `remove_topic`). It is the one door to a partition's log:

* `append_records` — a Produce's partitions: lookup, validation once (minibroker_storage.log_validator), the
  KIP-890 verification for transactional batches only (on the batch headers the validator parsed,
  not parsed again), the append as leader, the topic's flush policy (an fsync off the loop when
  the topic sets one), metrics, and the fetches parked on the partition woken. acks=all parks in
  the produce purgatory until the high watermark passes the batch (DelayedProduce) or the
  request's timeout (REQUEST_TIMED_OUT); with the leader alone in the ISR it completes at once. An
  ISR smaller than min.insync.replicas is NOT_ENOUGH_REPLICAS before the append and
  NOT_ENOUGH_REPLICAS_AFTER_APPEND once the HW passed it. A partition this broker follows answers
  NOT_LEADER_OR_FOLLOWER with the leader it knows (KIP-951).
* `append` / `append_to_partition` — the coordinators' own records (synchronous, small).
* `fetch_messages` — a Fetch's reads (isolation level, max bytes, file regions for sendfile), and
  when too little is ready the DelayedFetch wait until an append or a HW move wakes it or the wait
  ends. A replica fetch (a follower's, `replica_id` >= 0) reads up to the LEO, its fetch offset
  becomes the follower's LEO here and may move the HW (minibroker.partition); a consumer reads up
  to the HW (read_committed: the LSO).
* `apply_delta` — the metadata's partition changes (Kafka: ReplicaManager.applyDelta): each
  partition this broker holds a replica of becomes leader or follower, the followers' fetchers
  (minibroker.replica_fetcher_manager) are started or stopped with it.

A partition the metadata never placed elsewhere has this broker as its ISR, so its high watermark
is its log end offset and a record is readable as soon as its append returns.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from minibroker.config.definitions import as_int
from minibroker.coordinator_elections import CoordinatorElectionListener, update_coordinators
from minibroker.delayed_produce import ProducePartitionResult, wait_for_replication
from minibroker.metadata_cache import PartitionImage, TopicImage
from minibroker.metrics import BrokerMetrics
from minibroker.partition import LogReadResult, Partition
from minibroker.quotas.replication_quota import ReplicationQuotas, emptied, record_leader_bytes
from minibroker.replica import AlterPartitionManager, BrokerEndpoint
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_storage.append_origin import AppendOrigin

if TYPE_CHECKING:  # minibroker_storage.log is imported by the first log opened, not at start (issue 22)
    from minibroker.replica_fetcher_manager import ReplicaFetcherManager
    from minibroker_protocol.records.batch import BatchView
    from minibroker_storage.log import Log, LogAppendInfo
    from minibroker_storage.log_manager import LogManager
    from minibroker_storage.log_validator import ValidatedRecords

log = logging.getLogger("minibroker.produce")
TopicPartition = tuple[str, int]
HW_NOT_SUPPORTED = (1 << 63) - 1  # Fetch v18 high_watermark default: the fetcher does not track it (KIP-1166)


class TransactionVerifier(Protocol):
    """KIP-890's check of a transactional Produce partition (Kafka: the ReplicaManager's
    AddPartitionsToTxnManager), called with the batch headers the validator parsed; raises the
    KafkaError to answer. The produce handler binds the transactional id and the coordinator
    (which is built only if a batch is transactional)."""

    def __call__(self, batches: Sequence[BatchView], topic: str, partition: int, lg: Partition) -> None: ...


class RecordSchemaValidator(Protocol):
    """Confluent Server's broker-side schema validation (confluent.key/value.schema.validation):
    raises INVALID_RECORD for records whose key or value is not framed with a schema id the
    registry knows for the topic's subject (minibroker.schema_registry.validation)."""

    def __call__(self, topic: str, partition: int, records: bytes | bytearray | memoryview, *, key: bool,
                 value: bool) -> None: ...


def _expire(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class FetchWaiters:
    """Long-polling fetches waiting for data, woken by appends (Kafka: DelayedFetch purgatory)."""

    def __init__(self) -> None:
        self._waiters: dict[TopicPartition, set[asyncio.Future[None]]] = {}

    def __len__(self) -> int:
        """How many fetches are parked (Kafka's purgatory size metric)."""
        return len({f for s in self._waiters.values() for f in s})

    async def wait(self, keys: Iterable[TopicPartition], timeout_s: float) -> None:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        keys = list(keys)
        for k in keys:
            self._waiters.setdefault(k, set()).add(fut)
        # A plain future and a call_later timer rather than asyncio.wait_for: on Python 3.11
        # wait_for waits on a second future released by a done-callback, so an append's wake-up
        # reached the fetch two loop iterations later instead of one (issue 22, end-to-end latency).
        timer = loop.call_later(timeout_s, _expire, fut)
        try:
            await fut
        finally:
            timer.cancel()
            for k in keys:
                s = self._waiters.get(k)
                if s is not None:
                    s.discard(fut)
                    if not s:
                        del self._waiters[k]

    def notify(self, key: TopicPartition) -> None:
        waiters = self._waiters.get(key)
        if waiters:
            for fut in list(waiters):
                if not fut.done():
                    fut.set_result(None)


@dataclass(frozen=True, slots=True)
class FetchReplica:
    """Who a replica fetch comes from (Fetch ReplicaState, or replica_id before v15)."""

    replica_id: int
    broker_epoch: int = -1


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(slots=True)
class FetchPartition:
    """One partition of a fetch (Kafka: FetchRequest.PartitionData). `error` set beforehand (an
    unknown topic id, a refused down-conversion) is answered without a read."""

    topic: str | None
    partition: int
    fetch_offset: int
    max_bytes: int
    known_high_watermark: int = HW_NOT_SUPPORTED  # Fetch v18 (KIP-1166)
    error: int = 0
    current_leader_epoch: int = -1  # the fetcher's idea of the leader epoch (KIP-320); -1: not checked
    last_fetched_epoch: int = -1  # the epoch of the fetcher's last batch, for the divergence check
    log_start_offset: int = -1  # a follower's log start offset


class DiskFaultHook(Protocol):
    """A slow or full disk (minibroker.faults.components.DiskFaults), consulted before each append
    of a Produce: it waits, or raises KAFKA_STORAGE_ERROR."""

    async def before_append(self, topic: str, partition: int) -> None: ...


class ReplicaManager:
    """The partitions of this broker and the one way to append to and read from them."""

    def __init__(self, metrics: BrokerMetrics, node_id: int = 0, *, now_ms: Callable[[], int] | None = None) -> None:
        self.node_id = node_id
        self.fetch_waiters = FetchWaiters()
        self.produce_waiters = FetchWaiters()  # acks=all, woken by HW and ISR moves (DelayedProduce)
        self.metrics = metrics  # bytes and messages in, counted where Kafka counts them (appendToLocalLog)
        self._partitions: dict[TopicPartition, Partition] = {}
        self.disk_fault: DiskFaultHook | None = None  # set while a disk fault is (minibroker.faults)
        self._now_ms = now_ms or _wall_clock_ms
        # replication, set by the broker's composition root (minibroker.server) or a test
        self.log_manager: LogManager | None = None  # logs for partitions the metadata places here
        self.alter_partition_manager: AlterPartitionManager | None = None
        self.fetcher_manager: ReplicaFetcherManager | None = None
        # builds the fetcher manager for the first partition followed (its module and the Fetch
        # schema are not imported by a broker that never follows: issue 22)
        self.fetcher_manager_factory: Callable[[], ReplicaFetcherManager] | None = None
        self.replica_lag_time_max_ms = 30_000
        self.replication_quotas = ReplicationQuotas(node_id)  # KIP-73 throttles, from the metadata image
        self.brokers: dict[int, BrokerEndpoint] = {}  # the metadata's brokers, for KIP-951 and the fetchers
        # set by the schema registry when it runs; a topic that asks for validation without it is refused
        self.record_schema_validator: RecordSchemaValidator | None = None
        # the coordinators, told of their partitions' elections by apply_delta (minibroker.coordinator_elections)
        self.coordinator_elections: CoordinatorElectionListener | None = None

    # -- the partitions (written by the metadata publisher) -------------------------------------
    def publish_topic(self, topic: TopicImage, logs: Mapping[int, Log]) -> None:
        """Make a leader Partition for each of the topic's logs (Kafka: ReplicaManager.applyDelta
        -> makeLeaders); an existing one keeps its log and takes the new leadership."""
        for p, lg in logs.items():
            image = topic.partitions.get(p)
            epoch = image.leader_epoch if image is not None else 0
            current = self._partitions.get((topic.name, p))
            if current is None or current.log is not lg:
                current = self._partitions[(topic.name, p)] = Partition(
                    topic.name, p, topic.topic_id, lg, image.leader_id if image is not None else self.node_id)
                current.log.high_watermark_follows_leo = True  # the ISR is this broker
            if not current.from_metadata:  # leadership from apply_delta is not the registry's
                current.leader_epoch = epoch
            self._configure(current, topic)

    def _configure(self, part: Partition, topic: TopicImage) -> None:
        part.is_internal = topic.is_internal
        part.min_insync_replicas = as_int("min.insync.replicas", topic.config.get("min.insync.replicas", 1))
        part.alter_partition_manager = self.alter_partition_manager
        part.replica_lag_time_max_ms = self.replica_lag_time_max_ms
        part.hw_listener = self._on_partition_change
        part.broker_epochs = self._broker_epoch
        part.broker_usable = self._broker_usable
        key_check = bool(topic.config.get("confluent.key.schema.validation", False))
        value_check = bool(topic.config.get("confluent.value.schema.validation", False))
        part.schema_validation = (key_check, value_check) if key_check or value_check else None

    def _broker_epoch(self, broker_id: int) -> int:
        b = self.brokers.get(broker_id)
        return b.broker_epoch if b is not None else -1

    def _broker_usable(self, broker_id: int) -> bool:
        b = self.brokers.get(broker_id)
        return b is not None and not b.fenced and not b.in_controlled_shutdown

    def _on_partition_change(self, part: Partition) -> None:
        # the HW or the ISR moved: consumers' fetches and acks=all produces re-check (Kafka:
        # tryCompleteDelayedFetch / tryCompleteDelayedProduce on a HW increment)
        tp = (part.topic, part.partition)
        self.fetch_waiters.notify(tp)
        self.produce_waiters.notify(tp)

    def remove_topic(self, topic: TopicImage) -> None:
        """Drop a deleted topic's partitions and wake the fetches parked on them (Kafka: stopReplicas)."""
        self._stop_replicas([(topic.name, p) for p in topic.partitions])

    def _stop_replicas(self, tps: Sequence[TopicPartition]) -> None:
        if self.fetcher_manager is not None:
            self.fetcher_manager.remove_fetcher_for_partitions(tps)
        for tp in tps:
            part = self._partitions.pop(tp, None)
            if part is not None:
                part.stop()
                self.fetch_waiters.notify(tp)
                self.produce_waiters.notify(tp)

    # -- the metadata's partition changes (Kafka: ReplicaManager.applyDelta) ----------------------
    def apply_delta(self, topics: Iterable[TopicImage], brokers: Mapping[int, BrokerEndpoint],
                    deleted: Iterable[TopicImage] = ()) -> None:
        """Apply changed topics of the metadata image: every partition with this broker among its
        replicas becomes leader (`Partition.make_leader`) or follower (`make_follower`, its fetcher
        pointed at the leader's endpoint in `brokers`, starting at its LEO); one no longer assigned
        here, or of a deleted topic, stops (the metadata publisher then deletes its log). The
        partition's log is created if missing (Kafka: Partition.createLogIfNotExists)."""
        self.brokers = dict(brokers)
        topics, deleted = list(topics), list(deleted)
        now = self._now_ms()
        followers: dict[TopicPartition, tuple[Partition, BrokerEndpoint]] = {}
        not_following: list[TopicPartition] = []
        stopped: list[TopicPartition] = []
        for topic in topics:
            for p, image in topic.partitions.items():
                tp = (topic.name, p)
                if self.node_id not in image.replicas:
                    if tp in self._partitions:
                        stopped.append(tp)
                    continue
                if self.log_manager is not None and tp in self.log_manager.offline_partitions:
                    not_following.append(tp)  # its directory failed (Kafka: HostedPartition.Offline, ignored)
                    continue
                part = self._partition_for(topic, p, image)
                self._configure(part, topic)
                if image.leader_id == self.node_id:
                    part.make_leader(image, now)
                    not_following.append(tp)
                else:
                    ckpt = self.log_manager.checkpointed_high_watermark(*tp) if self.log_manager else None
                    changed = part.make_follower(image, ckpt)
                    leader = self.brokers.get(image.leader_id)
                    if leader is None or image.leader_id < 0:
                        not_following.append(tp)  # no leader (offline): nothing to fetch from
                    elif changed:
                        followers[tp] = (part, leader)
                self.fetch_waiters.notify(tp)
                self.produce_waiters.notify(tp)
        for topic in deleted:
            stopped.extend((topic.name, p) for p in topic.partitions)
        self._stop_replicas(stopped)
        if self.fetcher_manager is None and followers and self.fetcher_manager_factory is not None:
            self.fetcher_manager = self.fetcher_manager_factory()
        if self.fetcher_manager is not None:
            self.fetcher_manager.remove_fetcher_for_partitions(not_following + list(followers))
            self.fetcher_manager.add_fetcher_for_partitions(followers)
        update_coordinators(self.node_id, topics, deleted, self.coordinator_elections)

    def _partition_for(self, topic: TopicImage, p: int, image: PartitionImage) -> Partition:
        tp = (topic.name, p)
        part = self._partitions.get(tp)
        if part is not None:
            return part
        lg = self.log_manager.get_log(topic.name, p) if self.log_manager is not None else None
        if lg is None:
            if self.log_manager is None:
                raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"no log manager to create {topic.name}-{p}")
            # a follower's epoch cache is filled from the leader's batches: no epoch assigned here
            lg = self.log_manager.create_log(topic.name, p, topic.topic_id, leader_epoch=-1)
        part = self._partitions[tp] = Partition(topic.name, p, topic.topic_id, lg, self.node_id, image.leader_epoch)
        return part

    def leader_of(self, topic: str | None, partition: int) -> tuple[int, int] | None:
        """(leader id, leader epoch) as this broker knows it (KIP-951's CurrentLeader)."""
        part = self._partitions.get((topic, partition)) if topic is not None else None
        return (part.leader_id, part.leader_epoch) if part is not None else None

    def local_broker_epoch(self) -> int:
        """This broker's epoch in the metadata (its registration), sent in replica fetches."""
        return self._broker_epoch(self.node_id)

    def on_follower_append(self, part: Partition) -> None:
        """The fetcher appended the leader's records here (fetches parked on this replica wake)."""
        self.fetch_waiters.notify((part.topic, part.partition))

    async def shutdown(self) -> None:
        """Stop the fetchers and the ISR proposals in flight (Kafka: ReplicaManager.shutdown)."""
        if self.fetcher_manager is not None:
            await self.fetcher_manager.shutdown()
            self.fetcher_manager = None
        for part in self._partitions.values():
            part.stop()

    async def run_isr_expiration(self) -> None:
        """Every replica.lag.time.max.ms / 2, each led partition drops the followers that fell
        behind (Kafka: the isr-expiration task -> Partition.maybeShrinkIsr)."""
        while True:
            await asyncio.sleep(self.replica_lag_time_max_ms / 2000)
            now = self._now_ms()
            for part in list(self._partitions.values()):
                if part.from_metadata and part.is_leader:
                    part.maybe_shrink_isr(now)

    def get_partition(self, topic: str | None, partition: int) -> Partition | None:
        """The partition if this broker holds it (Kafka: ReplicaManager.onlinePartition)."""
        return self._partitions.get((topic, partition)) if topic is not None else None

    def get_partition_or_error(self, topic: str | None, partition: int) -> Partition:
        p = self._partitions.get((topic, partition)) if topic is not None else None
        if p is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return p

    def partitions(self, topic: str) -> list[Partition]:
        """A topic's partitions here, by index."""
        return sorted((p for (t, _), p in self._partitions.items() if t == topic), key=lambda p: p.partition)

    def all_partitions(self) -> list[Partition]:
        """Every partition here, by topic and index (DescribeLogDirs, the console)."""
        return sorted(self._partitions.values(), key=lambda p: (p.topic, p.partition))

    # -- produce --------------------------------------------------------------------------------
    async def append_records(self, entries: Sequence[tuple[TopicPartition, bytes | bytearray | memoryview | None]],
                             *, required_acks: int, request_version: int,
                             verifier: TransactionVerifier | None = None,
                             timeout_ms: int = 30_000) -> list[ProducePartitionResult]:
        """Append a Produce's partitions, in order, then for acks=all wait until each one's HW
        passed its records or `timeout_ms` ends (Kafka: ReplicaManager.handleProduceAppend ->
        appendRecords -> appendToLocalLog -> Partition.appendRecordsToLeader, DelayedProduce).
        `verifier` checks transactional batches (KIP-890)."""
        results = [await self._append_one(tp, records, required_acks, request_version, verifier)
                   for tp, records in entries]
        if required_acks == -1:
            waiting = [r for r in results if r.waiting_on is not None]
            if waiting:
                await wait_for_replication(waiting, timeout_ms, self._partitions.get, self.produce_waiters.wait)
        return results

    async def _append_one(self, tp: TopicPartition, records: bytes | bytearray | memoryview | None,
                          required_acks: int, request_version: int, verifier: TransactionVerifier | None
                          ) -> ProducePartitionResult:
        part = self._partitions.get(tp)
        try:
            if part is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            if part.is_internal:
                raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {part.topic}")
            if not part.is_leader:
                raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                 f"Leader not local for partition {part.topic}-{part.partition} on broker {self.node_id}")
            if required_acks == -1 and len(part.isr) < part.min_insync_replicas:
                raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS,
                                 f"The size of the current ISR {len(part.isr)} is insufficient to satisfy the "
                                 f"min.isr requirement of {part.min_insync_replicas}")
            if records is None or len(records) == 0:
                raise KafkaError(ErrorCode.INVALID_RECORD, "Produce request has no records")
            if self.disk_fault is not None:
                await self.disk_fault.before_append(part.topic, part.partition)
            if part.schema_validation is not None:  # only topics that ask for it pay for it
                self._check_schemas(part, records, *part.schema_validation)
            verify = (functools.partial(verifier, topic=part.topic, partition=part.partition, lg=part)
                      if verifier is not None else None)
            info = part.append_records_to_leader(records, request_version=request_version, verify=verify)
            if not info.duplicate:
                self.metrics.appended(part.topic, info.valid_bytes, info.num_records)
            if part.needs_flush_policy():
                # flush.messages / flush.ms: a due fsync happens off the loop, before the answer and
                # before fetches see the records; the default policy costs no executor hop
                await asyncio.get_running_loop().run_in_executor(None, part.log.maybe_flush)
            self.fetch_waiters.notify(tp)
            result = ProducePartitionResult(info, None, info.log_start_offset)
            # acks=-1 waits in the produce purgatory (Kafka: DelayedProduce) until the HW passed
            # the records; with the leader alone in the ISR it already has. A retried duplicate
            # waits too, for the HW to pass the batch it repeats (Kafka: delayedProduceRequestRequired
            # counts it): an isolated leader must not acknowledge a retry of what it never committed
            if required_acks == -1 and not part.log.high_watermark_follows_leo \
                    and part.high_watermark <= info.last_offset:
                result.waiting_on = part
            return result
        except KafkaError as e:  # InvalidBatch and RecordValidationError are KafkaErrors with their code
            if e.code == ErrorCode.NOT_LEADER_OR_FOLLOWER and part is not None:
                return ProducePartitionResult(None, e, -1, (part.leader_id, part.leader_epoch))
            return ProducePartitionResult(None, e, part.log_start_offset if part is not None else -1)
        except OSError as failed:  # not `e`: mypyc types a name by its first except clause (KafkaError)
            log.error("append to %s-%d failed: %s", tp[0], tp[1], failed)
            if self.log_manager is not None and part is not None:
                self.log_manager.log_dir_failure(part.log, failed)  # Kafka: LogDirFailureChannel
            return ProducePartitionResult(None, KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, str(failed)), -1)

    def _check_schemas(self, part: Partition, records: bytes | bytearray | memoryview, key: bool, value: bool) -> None:
        if self.record_schema_validator is None:
            raise KafkaError(ErrorCode.INVALID_RECORD, f"Topic {part.topic} validates records against the schema "
                                                       "registry (confluent.*.schema.validation), which is not running "
                                                       "in this broker (schema.registry.port)")
        self.record_schema_validator(part.topic, part.partition, records, key=key, value=value)

    def append(self, lg: Log, records: bytes | bytearray | memoryview | ValidatedRecords, *,
               origin: str = AppendOrigin.CLIENT) -> LogAppendInfo:
        """The coordinators' records, on the loop: a due flush (flush.messages / flush.ms) is done
        here too (their records are small and their callers are synchronous)."""
        part = self._partitions.get((lg.topic, lg.partition))
        info = lg.append_as_leader(records, origin=origin, leader_epoch=part.leader_epoch if part is not None else 0)
        if part is not None and not lg.high_watermark_follows_leo:
            part.maybe_increment_leader_hw(self._now_ms())
        if not info.duplicate:
            self.metrics.appended(lg.topic, info.valid_bytes, info.num_records)
        lg.maybe_flush()
        self.fetch_waiters.notify((lg.topic, lg.partition))
        return info

    def append_to_partition(self, topic: str, partition: int, records: bytes | bytearray | memoryview, *,
                            origin: str = AppendOrigin.COORDINATOR) -> LogAppendInfo:
        """`append` addressed by topic-partition (Kafka: the coordinators' PartitionWriter)."""
        return self.append(self.get_partition_or_error(topic, partition).log, records, origin=origin)

    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        """DeleteRecords on one partition: the new low watermark; fetches parked there are woken."""
        low = self.get_partition_or_error(topic, partition).delete_records_on_leader(offset)
        self.fetch_waiters.notify((topic, partition))
        return low

    async def delete_records_and_wait(self, topic: str, partition: int, offset: int, timeout_ms: int) -> int:
        """DeleteRecords: the leader's log start moves at once; with followers the answer waits until
        theirs reached it too, or REQUEST_TIMED_OUT (Kafka: DelayedDeleteRecords)."""
        low = self.delete_records(topic, partition, offset)
        part = self.get_partition_or_error(topic, partition)
        if not part.remote_replicas:
            return low
        deadline = time.monotonic() + max(0, timeout_ms) / 1000
        while True:
            if self._partitions.get((topic, partition)) is not part or not part.is_leader:
                raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            low_watermark = part.low_watermark_if_leader()
            if low_watermark >= low:
                return low_watermark
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise KafkaError(ErrorCode.REQUEST_TIMED_OUT)
            await self.produce_waiters.wait([(topic, partition)], remaining)

    def wake(self, topic: str, partition: int) -> None:
        """Wake fetches parked on a partition whose state changed without an append (a deleted
        topic, a log truncated by DeleteRecords, a transaction marker moving the LSO)."""
        self.fetch_waiters.notify((topic, partition))

    # -- fetch ----------------------------------------------------------------------------------
    def read_from_local_log(self, parts: Sequence[FetchPartition], max_bytes: int, isolation_level: int,
                            replica: FetchReplica | None = None, *, read_from_purgatory: bool = False
                            ) -> tuple[list[LogReadResult], int]:
        """One read of every partition, in order, within `max_bytes`; the first that returns data
        gets at least one whole batch (KIP-74). Returns the results and the bytes read (Kafka:
        ReplicaManager.readFromLog). A follower's read (`replica`) goes to the LEO and then
        updates what the leader knows of that follower (Kafka: updateFollowerFetchState), so the
        HW in its answer is the one its fetch offset moved."""
        results: list[LogReadResult] = []
        total = 0
        get = self._partitions.get
        for fp in parts:
            if fp.error:
                results.append(LogReadResult(fp.error))
                continue
            part = get((fp.topic, fp.partition)) if fp.topic is not None else None
            if part is None:
                results.append(LogReadResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            limit = min(fp.max_bytes, max_bytes - total)
            try:
                if replica is None and not part.from_metadata and fp.current_leader_epoch < 0 \
                        and fp.last_fetched_epoch < 0:
                    result = part.read(fp.fetch_offset, limit, isolation_level, total == 0)  # the one-broker path
                else:
                    result = part.fetch_records(
                        fp.fetch_offset, limit, isolation_level, total == 0,
                        current_leader_epoch=fp.current_leader_epoch, last_fetched_epoch=fp.last_fetched_epoch,
                        # consumers read from leaders only (docs/differences.md#repl-fetch-from-follower)
                        from_follower=replica is not None, require_leader=True)
                    if replica is not None and replica.replica_id not in part.remote_replicas:
                        # Kafka 4.4 answers a fetch from a broker outside the replica set (one this
                        # leader has not yet learned was added, say) UNKNOWN_LEADER_EPOCH, so it
                        # retries (tests/reference/test_inter_broker_bad_input.py)
                        result = LogReadResult(ErrorCode.UNKNOWN_LEADER_EPOCH)
                    elif replica is not None and result.diverging_epoch is None:
                        if result.records is not None and self.replication_quotas.should_leader_throttle(
                                part.topic, part.partition, replica.replica_id in part.isr):
                            result.records = emptied(result.records)  # Kafka: readFromLog answers it empty
                        if not read_from_purgatory:  # once per fetch, as it came in (Kafka: DelayedFetch)
                            self.produce_waiters.notify((part.topic, part.partition))  # DelayedDeleteRecords
                            part.update_follower_fetch_state(replica.replica_id, fp.fetch_offset, fp.log_start_offset,
                                                             self._now_ms(), result.log_end_offset, replica.broker_epoch)
                        result.high_watermark = part.high_watermark
            except KafkaError as e:
                # Kafka answers a failed read with unknown offsets (ReplicaManager.createLogReadResult)
                result = LogReadResult(e.code)
            if result.records is not None:
                total += result.records.size
            results.append(result)
        return results, total

    async def fetch_messages(self, parts: Sequence[FetchPartition], *, max_bytes: int, min_bytes: int,
                             max_wait_ms: int, isolation_level: int,
                             replica: FetchReplica | None = None) -> list[LogReadResult]:
        """Read, and if fewer than `min_bytes` are ready park until an append or a HW move on one
        of the partitions or the end of `max_wait_ms` (Kafka: fetchMessages + DelayedFetch).
        `replica`: a follower's fetch (Fetch ReplicaState / replica_id)."""
        deadline = time.monotonic() + max(0, max_wait_ms) / 1000
        keys = [(fp.topic, fp.partition) for fp in parts if fp.topic]
        woken = False  # a fetch woken after the ISR shrank (KIP-858) must not bring its follower back
        while True:
            results, total = self.read_from_local_log(parts, max_bytes, isolation_level, replica,
                                                      read_from_purgatory=woken)
            remaining = deadline - time.monotonic()
            # A fetch of no partitions is answered at once ("does not require any data"): the Java
            # consumer closes its session with one, and waiting out max_wait_ms held every close().
            if total >= min_bytes or remaining <= 0 or not parts or any(r.error for r in results) \
                    or any(r.diverging_epoch is not None for r in results) \
                    or any(r.high_watermark > fp.known_high_watermark for fp, r in zip(parts, results, strict=True)):
                # (the last: KIP-1166, a fetcher behind on the high watermark is answered now: DelayedFetch)
                if replica is not None:
                    record_leader_bytes(self.replication_quotas, parts, results)
                return results
            await self.fetch_waiters.wait(keys, remaining)
            woken = True

    async def wait_for_data(self, keys: Iterable[TopicPartition], timeout_s: float) -> None:
        """Park until an append to one of `keys` or the timeout (share fetches' long poll)."""
        await self.fetch_waiters.wait(keys, timeout_s)

