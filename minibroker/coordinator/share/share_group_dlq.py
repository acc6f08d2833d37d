"""The share-group dead-letter queue (KIP-1191; Kafka's ShareGroupDLQStateManager).

Theory of operation. A share partition moves a record it gives up on (rejected by a consumer, or
released / timed out at the delivery-count limit) to ARCHIVING when its group names a DLQ topic in
`errors.deadletterqueue.topic.name` and the cluster's `share.version` is 2 or more. The coordinator
hands those records here (`enqueue`); one writer task per broker takes them in order and, for each
range:

- checks the DLQ topic as Kafka's ProduceRequestHandler.validateDlqTopic does: a name that does not
  start with `__`, has the broker's `errors.deadletterqueue.topic.name.prefix` (`dlq.` by default;
  "" for any), and is a topic with `errors.deadletterqueue.group.enable=true` or, with
  `errors.deadletterqueue.auto.create.topics.enable`, one this broker creates (the broker's
  partition count, that config and `message.timestamp.type=CreateTime`, as Kafka's CreateTopics);
- writes one record per offset to DLQ partition `source partition % DLQ partitions`, stamped now
  (CreateTime, no compression, no producer id), with Kafka's headers as UTF-8 text:
  `__dlq.errors.topic`, `__dlq.errors.partition`, `__dlq.errors.offset`, `__dlq.errors.group`,
  `__dlq.errors.delivery.count`, `__dlq.errors.message` (the reason); the original key and value
  only when the group sets `errors.deadletterqueue.copy.record.enable` (else both null), read from
  the source log (a record no longer there is written with the headers alone);
- appends with acks=all through the ReplicaManager, as Kafka's ProduceRequest; on a cluster a DLQ
  partition led by another broker gets a Produce with acks=all sent to its leader (dlq_sender.py).

Whatever happens (a refused topic, a failed write), the records become ARCHIVED afterwards (the
`done` callback): Kafka logs "Failed to write to DLQ, proceeding to ARCHIVED regardless".
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from minibroker.config.topic import validate_topic_config
from minibroker.coordinator.share.dlq_sender import DLQSender
from minibroker.replica_manager import ReplicaManager
from minibroker.topics import Topic, TopicRegistry
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records.batch import iter_batches
from minibroker_protocol.records.v2 import Record, build_batch, iter_batch_records
from minibroker_storage.clock import Clock

log = logging.getLogger("minibroker.coordinator.share_group_dlq")

TOPIC_CONFIG = "errors.deadletterqueue.group.enable"
PREFIX_CONFIG = "errors.deadletterqueue.topic.name.prefix"
AUTO_CREATE_CONFIG = "errors.deadletterqueue.auto.create.topics.enable"
HEADER_TOPIC = "__dlq.errors.topic"
HEADER_PARTITION = "__dlq.errors.partition"
HEADER_OFFSET = "__dlq.errors.offset"
HEADER_GROUP = "__dlq.errors.group"
HEADER_DELIVERY_COUNT = "__dlq.errors.delivery.count"
HEADER_MESSAGE = "__dlq.errors.message"
_PRODUCE_VERSION = 13  # the appends validate as the newest Produce (Kafka: ApiKeys.PRODUCE.latestVersion())
_READ_BYTES = 1 << 20  # Kafka's DLQ_MAX_FETCH_BYTES per read of the source log


@dataclass(frozen=True, slots=True)
class DLQRecordParameter:
    """One range of a share partition's records bound for the DLQ (Kafka's ShareGroupDLQRecordParameter)."""

    group_id: str
    topic_id: uuid.UUID
    partition: int
    first_offset: int
    last_offset: int
    delivery_count: int
    cause: str


def ranges(group_id: str, topic_id: uuid.UUID, partition: int,
           pending: Iterable[tuple[int, int, str]]) -> list[DLQRecordParameter]:
    """Pending (offset, delivery count, reason) entries as contiguous ranges of one count and reason."""
    out: list[DLQRecordParameter] = []
    for off, count, cause in sorted(pending):
        last = out[-1] if out else None
        if last is not None and last.last_offset == off - 1 and last.delivery_count == count and last.cause == cause:
            out[-1] = DLQRecordParameter(group_id, topic_id, partition, last.first_offset, off, count, cause)
        else:
            out.append(DLQRecordParameter(group_id, topic_id, partition, off, off, count, cause))
    return out


class ShareGroupDLQManager:
    """Writes the ranges it is given to their group's DLQ topic, one at a time, in order."""

    def __init__(self, topics: TopicRegistry, replica_manager: ReplicaManager,
                 group_config: Callable[[str, str], str], now_ms: Clock) -> None:
        self.topics = topics
        self.replica_manager = replica_manager
        self.group_config = group_config  # (group id, key) -> the group's value
        self.now_ms = now_ms
        self._lock = asyncio.Lock()  # FIFO: ranges are written in the order they were enqueued
        self._tasks: set[asyncio.Task[None]] = set()
        self.written = 0  # DLQ records appended, for the console and tests
        self.sender: DLQSender | None = None  # a cluster's: to DLQ partitions led elsewhere

    def enqueue(self, param: DLQRecordParameter, done: Callable[[DLQRecordParameter], None]) -> None:
        """Write `param`'s records to the DLQ, then call `done` (also when it could not)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a synchronous caller in a test): nothing can be written
            done(param)
            return
        task = loop.create_task(self._run(param, done), name="share-group-dlq")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Wait for every range enqueued so far (shutdown, tests)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _run(self, param: DLQRecordParameter, done: Callable[[DLQRecordParameter], None]) -> None:
        async with self._lock:
            try:
                await self._write(param)
            except Exception as e:  # Kafka archives regardless; the reason goes to the log
                log.error("Failed to write to DLQ, proceeding to ARCHIVED regardless: %s (%s)", e, param)
            finally:
                done(param)

    async def _write(self, p: DLQRecordParameter) -> None:
        name = self.group_config(p.group_id, "errors.deadletterqueue.topic.name")
        dlq = await self._dlq_topic(p.group_id, name)
        source = self.topics.by_id(p.topic_id)
        source_name = source.name if source is not None else str(p.topic_id)
        copy = self.group_config(p.group_id, "errors.deadletterqueue.copy.record.enable").strip().lower() == "true"
        originals = self._originals(source, p) if copy else {}
        now = self.now_ms()
        records = []
        for i, off in enumerate(range(p.first_offset, p.last_offset + 1)):
            key, value = originals.get(off, (None, None))
            headers: list[tuple[str, bytes | None]] = [
                (HEADER_TOPIC, source_name.encode()), (HEADER_PARTITION, str(p.partition).encode()),
                (HEADER_OFFSET, str(off).encode()), (HEADER_GROUP, p.group_id.encode()),
                (HEADER_DELIVERY_COUNT, str(p.delivery_count).encode()), (HEADER_MESSAGE, p.cause.encode())]
            records.append(Record(offset_delta=i, key=key, value=value, headers=headers))
        # a cluster's broker holds only some of the DLQ topic's partitions: the count is the metadata's
        count = (self.sender.partition_count(dlq.name) if self.sender is not None else None) or len(dlq.partitions)
        target = p.partition % count
        batch = build_batch(records, base_timestamp=now)
        if self.sender is not None and not self.sender.is_local_leader(dlq.name, target):
            await self.sender.produce(dlq.name, target, batch)  # led by another broker (dlq_sender.py)
        else:
            [result] = await self.replica_manager.append_records([((dlq.name, target), batch)], required_acks=-1,
                                                                 request_version=_PRODUCE_VERSION)
            if result.error is not None:
                raise result.error
        self.written += len(records)
        log.debug("share group %s: %s-%d %d-%d written to DLQ %s-%d", p.group_id, source_name, p.partition,
                  p.first_offset, p.last_offset, dlq.name, target)

    async def _dlq_topic(self, group_id: str, name: str) -> Topic:
        """The group's DLQ topic, checked (and created) as Kafka's validateDlqTopic / createTopicBuilder."""
        if not name:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Configured DLQ topic name in share group: {group_id} is empty.")
        if name.startswith("__"):
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Configured DLQ topic name in share group: {group_id} "
                                                       f"cannot start with __, topic: {name}.")
        topic = self.topics.get(name)
        if topic is not None and not topic.config.get(TOPIC_CONFIG):
            raise KafkaError(ErrorCode.INVALID_CONFIG, "DLQ is not enabled on configured DLQ topic for share group: "
                                                       f"{group_id}, topic: {name}.")
        broker = self.topics.config  # the broker config in force: the DLQ keys are dynamic ones
        if topic is None and not broker.get(AUTO_CREATE_CONFIG):
            raise KafkaError(ErrorCode.INVALID_CONFIG, "DLQ topic does not exist and auto create is disabled on "
                                                       f"cluster for share group: {group_id}, topic: {name}.")
        prefix = str(broker.get(PREFIX_CONFIG) or "")
        if prefix and not name.startswith(prefix):
            raise KafkaError(ErrorCode.INVALID_CONFIG, "Configured DLQ topic name does not comply with the DLQ topic "
                                                       f"prefix in share group: {group_id}, topic: {name}, prefix: "
                                                       f"{prefix}.")
        if topic is None:
            topic = await self.topics.create_async(name, int(broker.get("num.partitions")),
                                                   validate_topic_config({TOPIC_CONFIG: "true",
                                                                          "message.timestamp.type": "CreateTime"}))
        return topic

    def _originals(self, source: Topic | None, p: DLQRecordParameter) -> dict[int, tuple[bytes | None, bytes | None]]:
        """Key and value of the source records (Kafka's ShareGroupDLQRecordFetcher); offsets no
        longer in the log (retention, DeleteRecords, compaction) are simply missing."""
        lg = self.topics.get_log(source.name, p.partition) if source is not None else None
        out: dict[int, tuple[bytes | None, bytes | None]] = {}
        if lg is None:
            return out
        offset = max(p.first_offset, lg.log_start_offset)
        while offset <= p.last_offset and offset < lg.high_watermark:
            info = lg.read(offset, _READ_BYTES, max_offset=lg.high_watermark, min_one_batch=True)
            if info.region is None or not info.region.size:
                break
            buf = info.region.read_all()
            start = offset
            for view in iter_batches(buf):
                if view.magic == 2 and not view.is_control:
                    for r in iter_batch_records(buf, view.pos):
                        if p.first_offset <= r.offset <= p.last_offset:
                            out[r.offset] = (r.key, r.value)
                offset = max(offset, view.last_offset + 1)
            if offset == start:  # nothing read past it: give up on the rest
                break
        return out
