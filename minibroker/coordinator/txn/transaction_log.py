"""__transaction_state: where the transaction coordinator's records live (Kafka: TransactionLog,
and the load/append parts of TransactionStateManager).

Theory of operation. Each change of a transactional id's state is one record in the partition
Utils.abs(transactionalId.hashCode()) % transaction.state.log.num.partitions:

    key   = int16 version (0) | TransactionLogKey   (transactional_id)
    value = int16 version (0) | TransactionLogValue (producer id and epoch, timeout, status,
            partitions grouped by topic (null when Empty), last update and start timestamps)
    null value: a tombstone (the transactional id expired)

Kafka writes value version 0 until transaction.version 1 is finalized, then version 1 (flexible,
with the previous and next producer ids and the client's transaction version as tagged fields);
the coordinator picks the version the same way (`value_version`). The topic is
created on first use, compacted, uncompressed, with transaction.state.log.segment.bytes
segments; its partition count is fixed once it exists. Records are appended through
`ReplicaManager.append` (coordinator origin, flush policy, fetch waiters woken) like any topic,
so `kafka-dump-log.sh
--transaction-log-decoder` reads our files. Loading replays every partition in log order; the
last record of each transactional id wins.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Iterator
from typing import Any

from minibroker.coordinator.group.records import partition_for
from minibroker.coordinator.txn.transaction_metadata import (
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
)
from minibroker.replica_manager import ReplicaManager
from minibroker.topics import Topic, TopicRegistry
from protocol import coordinator_records as cr
from protocol.codec import decode, encode
from protocol.records.batch import NO_PRODUCER_EPOCH
from protocol.records.v2 import Record, build_batch, decode_batches
from storage.log import AppendOrigin

log = logging.getLogger("minibroker.coordinator.transaction_log")

TOPIC = "__transaction_state"
KEY_VERSION = 0
VALUE_VERSION = 0  # transaction.version 0: the non-flexible value


def value_version(transaction_version: int) -> int:
    """TransactionLog.valueToBytes: the flexible value (1) once transaction.version >= 1."""
    return 1 if transaction_version >= 1 else 0
LOAD_READ_BYTES = 5 * 1024 * 1024  # Kafka: transaction.state.log.load.buffer.size


def key_bytes(transactional_id: str) -> bytes:
    return struct.pack(">h", KEY_VERSION) + bytes(encode(cr.TRANSACTION_LOG_KEY, KEY_VERSION,
                                                         cr.TRANSACTION_LOG_KEY(transactional_id=transactional_id)))


def value_bytes(t: TxnTransitMetadata, version: int = VALUE_VERSION) -> bytes:
    """TransactionLog.valueToBytes: partitions grouped by topic, null for Empty."""
    if t.txn_state == TransactionState.EMPTY and t.topic_partitions:
        raise RuntimeError(f"Transaction is not expected to have any partitions since its state is Empty: {t}")
    V = cr.TRANSACTION_LOG_VALUE
    partitions = None
    if t.txn_state != TransactionState.EMPTY:
        by_topic: dict[str, list[int]] = {}
        for topic, p in sorted(t.topic_partitions):
            by_topic.setdefault(topic, []).append(p)
        partitions = [V.PartitionsSchema(topic=topic, partition_ids=ids) for topic, ids in by_topic.items()]
    value = V(producer_id=t.producer_id, previous_producer_id=t.prev_producer_id,
              next_producer_id=t.next_producer_id, producer_epoch=t.producer_epoch,
              transaction_timeout_ms=t.txn_timeout_ms, transaction_status=int(t.txn_state),
              transaction_partitions=partitions, transaction_last_update_timestamp_ms=t.txn_last_update_timestamp,
              transaction_start_timestamp_ms=t.txn_start_timestamp,
              client_transaction_version=t.client_transaction_version)
    return struct.pack(">h", version) + bytes(encode(V, version, value))


def read_key(key: bytes | memoryview) -> str | None:
    """The transactional id of a record key, None for a key version this broker does not know."""
    buf = bytes(key)
    (version,) = struct.unpack_from(">h", buf, 0)
    if version != KEY_VERSION:
        return None
    return decode(cr.TRANSACTION_LOG_KEY, version, buf, 2).transactional_id


def read_value(transactional_id: str, value: bytes | memoryview | None) -> TransactionMetadata | None:
    """TransactionLog.readTxnRecordValue; None for a tombstone. ValueError for an unknown version."""
    if value is None:
        return None
    buf = bytes(value)
    (version,) = struct.unpack_from(">h", buf, 0)
    if version not in (0, 1):
        raise ValueError(f"Unknown version {version} from the transaction log message value")
    v = decode(cr.TRANSACTION_LOG_VALUE, version, buf, 2, exact=False)
    state = TransactionState(v.transaction_status)
    md = TransactionMetadata(transactional_id, v.producer_id, previous_producer_id=v.previous_producer_id,
                             next_producer_id=v.next_producer_id, producer_epoch=v.producer_epoch,
                             last_producer_epoch=NO_PRODUCER_EPOCH, txn_timeout_ms=v.transaction_timeout_ms,
                             state=state, txn_start_timestamp=v.transaction_start_timestamp_ms,
                             txn_last_update_timestamp=v.transaction_last_update_timestamp_ms,
                             client_transaction_version=v.client_transaction_version if version >= 1 else 0)
    if state != TransactionState.EMPTY:
        for ps in v.transaction_partitions or []:
            md.topic_partitions.update((ps.topic, p) for p in ps.partition_ids)
    return md


class TransactionLogStore:
    """Appends to and loads __transaction_state through the broker's logs."""

    def __init__(self, topics: TopicRegistry, replica_manager: ReplicaManager, num_partitions: int,
                 segment_bytes: int, min_isr: int) -> None:
        self.topics = topics
        self.replica_manager = replica_manager
        self.num_partitions = num_partitions
        self.segment_bytes = segment_bytes
        self.min_isr = min_isr

    def _overrides(self) -> dict[str, Any]:
        # TransactionStateManager.transactionTopicConfigs
        return {"cleanup.policy": ["compact"], "compression.type": "uncompressed",
                "segment.bytes": self.segment_bytes, "min.insync.replicas": self.min_isr,
                "unclean.leader.election.enable": False}

    def topic(self) -> Topic | None:
        topic = self.topics.get(TOPIC)
        if topic is not None:
            self.num_partitions = len(topic.partitions)
        return topic

    def ensure_topic(self) -> Topic:
        topic = self.topic()
        if topic is None:
            topic = self.topics.ensure_internal_topic(TOPIC, self.num_partitions, self._overrides())
            self.num_partitions = len(topic.partitions)
        return topic

    async def ensure_topic_async(self) -> Topic:
        """ensure_topic with the partition directories made off the loop."""
        topic = self.topic()
        if topic is not None:
            return topic
        # shielded: the creation outlives a request whose connection closes (see OffsetsStore)
        topic = await asyncio.shield(self.topics.ensure_internal_topic_async(TOPIC, self.num_partitions,
                                                                             self._overrides()))
        self.num_partitions = len(topic.partitions)
        return topic

    def partition_for(self, transactional_id: str) -> int:
        self.topic()
        return partition_for(transactional_id, self.num_partitions)

    def append(self, transactional_id: str, value: bytes | None, now: int) -> int:
        """Write one record to the transactional id's partition; returns its offset."""
        topic = self.ensure_topic()
        partition = partition_for(transactional_id, len(topic.partitions))
        lg = topic.partitions[partition]
        batch = build_batch([Record(key=key_bytes(transactional_id), value=value)], base_timestamp=now)
        return self.replica_manager.append(lg, batch, origin=AppendOrigin.COORDINATOR).first_offset

    def load(self) -> Iterator[tuple[int, str, TransactionMetadata | None]]:
        """(partition, transactional id, metadata or None for a tombstone) in log order."""
        topic = self.topic()
        if topic is None:
            return
        for partition in sorted(topic.partitions):
            lg = topic.partitions[partition]
            offset, end = lg.log_start_offset, lg.log_end_offset
            while offset < end:
                info = lg.read(offset, LOAD_READ_BYTES, max_offset=end)
                if info.region is None:
                    break
                progressed = False
                for batch in decode_batches(info.region.read_all()):
                    progressed = True
                    offset = batch.next_offset
                    if batch.is_control:
                        continue
                    for rec in batch.records:
                        if rec.key is None:
                            raise ValueError(f"Transaction state log's key should not be null ({TOPIC}-{partition})")
                        txn_id = read_key(rec.key)
                        if txn_id is None:
                            log.warning("Unknown message key while loading transaction state from %s-%d. "
                                        "Ignoring it.", TOPIC, partition)
                            continue
                        yield partition, txn_id, read_value(txn_id, rec.value)
                if not progressed:
                    break
