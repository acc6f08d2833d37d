"""The partitions this broker holds, their appends and the fetches waiting for them (Kafka:
ReplicaManager with its produce and fetch purgatories).

Theory of operation: the ReplicaManager owns a `Partition` (minibroker.partition) for every
partition whose log is on this broker; the metadata publisher (today the TopicRegistry) makes and
drops them (`publish_topic` / `remove_topic`). It is the one door to a partition's log:

* `append_records` — a Produce's partitions: lookup, validation once (storage.log_validator), the
  KIP-890 verification for transactional batches only (on the batch headers the validator parsed,
  not parsed again), the append as leader, the topic's flush policy (an fsync off the loop when
  the topic sets one), metrics, and the fetches parked on the partition woken. acks=all would park
  in the produce purgatory until the ISR caught up; with one replica it completes at once, and
  min.insync.replicas > 1 cannot be met (NOT_ENOUGH_REPLICAS, checked before the append).
* `append` / `append_to_partition` — the coordinators' own records (synchronous, small).
* `fetch_messages` — a Fetch's reads (isolation level, max bytes, file regions for sendfile), and
  when too little is ready the DelayedFetch wait until an append wakes it or the wait ends.

On a single node the high watermark is the log end offset, so a record is readable by fetches as
soon as its append returns.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from minibroker.config.definitions import as_int
from minibroker.metadata_cache import TopicImage
from minibroker.metrics import BrokerMetrics
from minibroker.partition import LogReadResult, Partition
from protocol.errors import ErrorCode, KafkaError
from storage.append_origin import AppendOrigin

if TYPE_CHECKING:  # storage.log is imported by the first log opened, not at start (issue 22)
    from protocol.records.batch import BatchView
    from storage.log import Log, LogAppendInfo
    from storage.log_validator import ValidatedRecords

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


@dataclass(slots=True)
class ProducePartitionResult:
    """One Produce partition's outcome (Kafka: ProducePartitionResponse before it is encoded):
    the append's info, or the error to answer with the log start offset Kafka reports."""

    info: LogAppendInfo | None
    error: KafkaError | None
    log_start_offset: int


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


class ReplicaManager:
    """The partitions of this broker and the one way to append to and read from them."""

    def __init__(self, metrics: BrokerMetrics, node_id: int = 0) -> None:
        self.node_id = node_id
        self.fetch_waiters = FetchWaiters()
        self.metrics = metrics  # bytes and messages in, counted where Kafka counts them (appendToLocalLog)
        self._partitions: dict[TopicPartition, Partition] = {}
        # set by the schema registry when it runs; a topic that asks for validation without it is refused
        self.record_schema_validator: RecordSchemaValidator | None = None

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
            current.leader_epoch = epoch
            current.is_internal = topic.is_internal
            current.min_insync_replicas = as_int("min.insync.replicas", topic.config.get("min.insync.replicas", 1))
            key_check = bool(topic.config.get("confluent.key.schema.validation", False))
            value_check = bool(topic.config.get("confluent.value.schema.validation", False))
            current.schema_validation = (key_check, value_check) if key_check or value_check else None

    def remove_topic(self, topic: TopicImage) -> None:
        """Drop a deleted topic's partitions and wake the fetches parked on them (Kafka: stopReplicas)."""
        for p in list(topic.partitions):
            if self._partitions.pop((topic.name, p), None) is not None:
                self.fetch_waiters.notify((topic.name, p))

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
                             verifier: TransactionVerifier | None = None) -> list[ProducePartitionResult]:
        """Append a Produce's partitions, in order, each answered when its acks are met (Kafka:
        ReplicaManager.handleProduceAppend -> appendRecords -> appendToLocalLog ->
        Partition.appendRecordsToLeader). `verifier` checks transactional batches (KIP-890)."""
        return [await self._append_one(tp, records, required_acks, request_version, verifier)
                for tp, records in entries]

    async def _append_one(self, tp: TopicPartition, records: bytes | bytearray | memoryview | None,
                          required_acks: int, request_version: int, verifier: TransactionVerifier | None
                          ) -> ProducePartitionResult:
        part = self._partitions.get(tp)
        try:
            if part is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            if part.is_internal:
                raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {part.topic}")
            if required_acks == -1 and len(part.isr) < part.min_insync_replicas:
                raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS,
                                 f"The size of the current ISR {len(part.isr)} is insufficient to satisfy the "
                                 f"min.isr requirement of {part.min_insync_replicas}")
            if records is None or len(records) == 0:
                raise KafkaError(ErrorCode.INVALID_RECORD, "Produce request has no records")
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
            # acks=-1 would wait here in the produce purgatory (Kafka: DelayedProduce) until the
            # ISR has the records; the ISR is this broker, so the high watermark is past them.
            return ProducePartitionResult(info, None, info.log_start_offset)
        except KafkaError as e:  # InvalidBatch and RecordValidationError are KafkaErrors with their code
            return ProducePartitionResult(None, e, part.log_start_offset if part is not None else -1)
        except OSError as e:
            log.error("append to %s-%d failed: %s", tp[0], tp[1], e)
            return ProducePartitionResult(None, KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, str(e)), -1)

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
        info = lg.append_as_leader(records, origin=origin)
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

    def wake(self, topic: str, partition: int) -> None:
        """Wake fetches parked on a partition whose state changed without an append (a deleted
        topic, a log truncated by DeleteRecords, a transaction marker moving the LSO)."""
        self.fetch_waiters.notify((topic, partition))

    # -- fetch ----------------------------------------------------------------------------------
    def read_from_local_log(self, parts: Sequence[FetchPartition], max_bytes: int, isolation_level: int
                            ) -> tuple[list[LogReadResult], int]:
        """One read of every partition, in order, within `max_bytes`; the first that returns data
        gets at least one whole batch (KIP-74). Returns the results and the bytes read (Kafka:
        ReplicaManager.readFromLog)."""
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
            try:
                result = part.read(fp.fetch_offset, min(fp.max_bytes, max_bytes - total), isolation_level,
                                   total == 0)
            except KafkaError as e:
                # Kafka answers a failed read with unknown offsets (ReplicaManager.createLogReadResult)
                result = LogReadResult(e.code)
            if result.records is not None:
                total += result.records.size
            results.append(result)
        return results, total

    async def fetch_messages(self, parts: Sequence[FetchPartition], *, max_bytes: int, min_bytes: int,
                             max_wait_ms: int, isolation_level: int) -> list[LogReadResult]:
        """Read, and if fewer than `min_bytes` are ready park until an append to one of the
        partitions or the end of `max_wait_ms` (Kafka: fetchMessages + DelayedFetch)."""
        deadline = time.monotonic() + max(0, max_wait_ms) / 1000
        keys = [(fp.topic, fp.partition) for fp in parts if fp.topic]
        while True:
            results, total = self.read_from_local_log(parts, max_bytes, isolation_level)
            remaining = deadline - time.monotonic()
            # A fetch of no partitions is answered at once ("does not require any data"): the Java
            # consumer closes its session with one, and waiting out max_wait_ms held every close().
            if total >= min_bytes or remaining <= 0 or not parts or any(r.error for r in results):
                return results
            # KIP-1166: a fetcher behind on the high watermark is answered now (Kafka: DelayedFetch).
            if any(r.high_watermark > fp.known_high_watermark for fp, r in zip(parts, results, strict=True)):
                return results
            await self.fetch_waiters.wait(keys, remaining)

    async def wait_for_data(self, keys: Iterable[TopicPartition], timeout_s: float) -> None:
        """Park until an append to one of `keys` or the timeout (share fetches' long poll)."""
        await self.fetch_waiters.wait(keys, timeout_s)

