"""Replaying the metadata log's batches into a delta (Kafka: MetadataBatchLoader), with the
metadata transactions of KIP-868.

Kafka's controller writes some groups of records between a BeginTransactionRecord and an
EndTransactionRecord (its bootstrap records, for one: ActivationRecordsGenerator), and a controller
that becomes active over a log ending inside such a group writes an AbortTransactionRecord. What
is between Begin and End is one change: a broker must not publish half of it, and must forget all
of it when it is aborted. So the records of an open transaction are held here, replayed into the
delta at End, dropped at Abort; they may span fetches. A transaction record where none belongs
(End or Abort without Begin, Begin inside one) is Kafka's "unexpected transaction state" fault:
logged and the log goes on, as Kafka's broker does with its metadata-loading faults.

What a record does to the image is MetadataDelta.replay's job; the record types it keeps nothing of
are named in `NOT_KEPT` with why, so that every type Kafka 4.4 writes is either applied or named.
"""

from __future__ import annotations

import logging

from minibroker.metadata.image import MetadataDelta
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.metadata_serde import ApiMessageAndVersion, MetadataBatch

log = logging.getLogger("minibroker.metadata")

# record types a broker's image keeps nothing of, and why (checked by tests/broker/test_metadata_batch_loader.py)
NOT_KEPT: dict[type, str] = {
    mr.NoOpRecord: "the controller's heartbeat in the log (KIP-835): it only moves the offset",
    mr.ZkMigrationStateRecord: "ZooKeeper migration is gone from Kafka 4; a KRaft-born cluster writes NONE",
}
TRANSACTION_RECORDS = (mr.BeginTransactionRecord, mr.EndTransactionRecord, mr.AbortTransactionRecord)


class MetadataBatchLoader:
    """The transaction state between batches, and what goes into each delta."""

    def __init__(self, node_id: int):
        self.node_id = node_id
        self._pending: list[ApiMessageAndVersion] | None = None  # an open transaction's records
        self._begin_offset = -1
        self._not_kept_logged: set[type] = set()

    @property
    def in_transaction(self) -> bool:
        return self._pending is not None

    def reset(self) -> None:
        """A snapshot replaces the image: an open transaction of the log before it is moot."""
        self._pending = None

    def replay(self, delta: MetadataDelta, batch: MetadataBatch) -> int:
        """Replay one data batch; the number of records read from it."""
        n = 0
        for offset, rec in enumerate(batch.records, batch.base_offset):
            if not isinstance(rec, ApiMessageAndVersion):
                continue
            n += 1
            m = rec.message
            if isinstance(m, TRANSACTION_RECORDS):
                self._transaction(delta, m, offset)
            elif self._pending is not None:
                self._pending.append(rec)
            else:
                self._apply(delta, rec)
        return n

    def _transaction(self, delta: MetadataDelta, m: object, offset: int) -> None:
        if isinstance(m, mr.BeginTransactionRecord):
            if self._pending is not None:
                log.error("broker %d: metadata transaction begun at offset %d while the one of offset %d is open; "
                          "its %d records are dropped", self.node_id, offset, self._begin_offset, len(self._pending))
            self._pending, self._begin_offset = [], offset
        elif self._pending is None:
            log.error("broker %d: %s at metadata offset %d outside a transaction; ignored",
                      self.node_id, type(m).__name__, offset)
        elif isinstance(m, mr.EndTransactionRecord):
            pending, self._pending = self._pending, None
            for rec in pending:
                self._apply(delta, rec)
        else:
            assert isinstance(m, mr.AbortTransactionRecord)
            log.info("broker %d: metadata transaction of offset %d aborted (%s): its %d records are dropped",
                     self.node_id, self._begin_offset, m.reason, len(self._pending))
            self._pending = None

    def _apply(self, delta: MetadataDelta, rec: ApiMessageAndVersion) -> None:
        t = type(rec.message)
        if t in NOT_KEPT:
            if t not in self._not_kept_logged:
                self._not_kept_logged.add(t)
                log.log(logging.DEBUG if t is mr.NoOpRecord else logging.INFO, "broker %d: %s not kept: %s",
                        self.node_id, t.__name__, NOT_KEPT[t])
            return
        delta.replay(rec)
