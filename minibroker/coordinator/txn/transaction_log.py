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
segments; its partition count is fixed once it exists. Records are appended through the
coordinator runtime's store (runtime/coordinator_store.py, one path to `ReplicaManager.append`)
like any topic, so `kafka-dump-log.sh --transaction-log-decoder` reads our files. Loading replays
every partition in log order; the last record of each transactional id wins.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator

from minibroker.coordinator.runtime.coordinator_store import CoordinatorStore, TopicConfigs
from minibroker.coordinator.txn.transaction_metadata import (
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
)
from minibroker_protocol import coordinator_records as cr
from minibroker_protocol.codec import decode, encode
from minibroker_protocol.records.batch import NO_PRODUCER_EPOCH

log = logging.getLogger("minibroker.coordinator.transaction_log")

TOPIC = "__transaction_state"
KEY_VERSION = 0
VALUE_VERSION = 0  # transaction.version 0: the non-flexible value


def value_version(transaction_version: int) -> int:
    """TransactionLog.valueToBytes: the flexible value (1) once transaction.version >= 1."""
    return 1 if transaction_version >= 1 else 0


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


def topic_configs(segment_bytes: int, min_isr: int) -> TopicConfigs:
    """The configs __transaction_state is created with (TransactionStateManager.transactionTopicConfigs)."""
    return {"cleanup.policy": ["compact"], "compression.type": "uncompressed", "segment.bytes": segment_bytes,
            "min.insync.replicas": min_isr, "unclean.leader.election.enable": False}


def read_records(store: CoordinatorStore) -> Iterator[tuple[int, str, TransactionMetadata | None]]:
    """(partition, transactional id, metadata or None for a tombstone) of every partition, in log order."""
    for partition in store.partitions():
        yield from read_partition(store, partition)


def read_partition(store: CoordinatorStore, partition: int) -> Iterator[tuple[int, str, TransactionMetadata | None]]:
    """(partition, transactional id, metadata or None for a tombstone) of one partition, in log order."""
    for key, value in store.load_partition(partition):
        if key is None:
            raise ValueError(f"Transaction state log's key should not be null ({TOPIC}-{partition})")
        txn_id = read_key(key)
        if txn_id is None:
            log.warning("Unknown message key while loading transaction state from %s-%d. Ignoring it.", TOPIC, partition)
            continue
        yield partition, txn_id, read_value(txn_id, value)
