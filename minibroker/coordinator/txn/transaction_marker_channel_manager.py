"""Writing a decided transaction's markers (Kafka: TransactionMarkerChannelManager, with the
WriteTxnMarkers a partition leader would handle done here as local appends).

Theory of operation: once PrepareCommit/PrepareAbort is written, a COMMIT or ABORT control batch
goes to every partition of the transaction, with the transaction's producer id and epoch (the
bumped epoch with transactions v2) and coordinator epoch 0 (the leader epoch of every partition
of this single broker); a marker moves the partition's LSO, so the append wakes read_committed
fetches. The group coordinator is told when markers land in __consumer_offsets (TxnOffsetCommit's
offsets become visible or are dropped). Only when every marker is written is Complete* written
(`write_complete`, the coordinator's transition write). A marker or Complete record that cannot
be written yet (a storage error) is kept in `incomplete` and retried by the coordinator's
periodic task; meanwhile the transactional id answers CONCURRENT_TRANSACTIONS.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from minibroker.coordinator.group.group_coordinator import GroupCoordinator
from minibroker.coordinator.group.records import TOPIC as OFFSETS_TOPIC
from minibroker.coordinator.txn.transaction_metadata import TransactionMetadata, TxnTransitMetadata
from minibroker.replica_manager import ReplicaManager
from minibroker.topics import TopicRegistry
from protocol.errors import ErrorCode, KafkaError
from protocol.records.v2 import ControlType, build_control_batch
from storage.clock import Clock
from storage.log import AppendOrigin

log = logging.getLogger("minibroker.coordinator.transaction")

COORDINATOR_EPOCH = 0


class TransactionMarkerChannelManager:
    """Writes the markers of decided transactions, then their Complete* record."""

    def __init__(self, topics: TopicRegistry, replica_manager: ReplicaManager, groups: GroupCoordinator, *,
                 now_ms: Clock, write_complete: Callable[[TransactionMetadata, TxnTransitMetadata], int]) -> None:
        self.topics = topics  # the partitions markers are written to
        self.replica_manager = replica_manager
        self.groups = groups  # told when a marker lands in __consumer_offsets (TxnOffsetCommit)
        self.now_ms = now_ms
        self.write_complete = write_complete  # writes and applies Complete*; an error code if it failed
        self.incomplete: dict[str, tuple[bool, TxnTransitMetadata]] = {}  # markers still to write

    def forget(self, transactional_id: str) -> None:
        self.incomplete.pop(transactional_id, None)

    def send_markers(self, md: TransactionMetadata, commit: bool, complete: TxnTransitMetadata) -> None:
        """Write the marker to every partition still in the transaction, then Complete*."""
        kind = ControlType.COMMIT if commit else ControlType.ABORT
        offsets_partitions: set[int] = set()
        failed = False
        for topic, partition in sorted(md.topic_partitions):
            lg = self.topics.get_log(topic, partition)
            if not self._leads(topic, partition):
                # led by another broker: Kafka sends it WriteTxnMarkers there; not done yet
                # (docs/differences.md#repl-txn-markers), so the transaction stays decided but
                # incomplete and is retried, never completed without its marker
                log.warning("The %s marker of %s for %s-%d is for another broker's partition: not written yet",
                            kind.name, md.transactional_id, topic, partition)
                failed = True
                continue
            if lg is not None:
                # the transaction's producer id and epoch (PrepareCommit/PrepareAbort's): with
                # transactions v2 the bumped epoch, and the old id when Complete* rotates it
                batch = build_control_batch(kind, producer_id=md.producer_id, producer_epoch=md.producer_epoch,
                                            coordinator_epoch=COORDINATOR_EPOCH, timestamp=self.now_ms())
                try:
                    # The marker moves the partition's LSO: appending wakes read_committed fetches.
                    # Not through the runtime's partition writer: a marker is the partition
                    # leader's append (Kafka: WriteTxnMarkers -> ReplicaManager.appendRecords).
                    self.replica_manager.append(lg, batch, origin=AppendOrigin.COORDINATOR)
                except KafkaError as e:
                    if e.code not in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED):
                        log.warning("Writing the %s marker of %s to %s-%d failed, will retry: %s", kind.name,
                                    md.transactional_id, topic, partition, e)
                        failed = True
                        continue
                    # a newer producer epoch or coordinator owns this partition's state (Kafka
                    # stops sending this marker then)
                    log.error("The %s marker of %s was refused by %s-%d: %s", kind.name, md.transactional_id,
                              topic, partition, e)
                except OSError as e:
                    log.warning("Writing the %s marker of %s to %s-%d failed, will retry: %s", kind.name,
                                md.transactional_id, topic, partition, e)
                    failed = True
                    continue
                if topic == OFFSETS_TOPIC:
                    offsets_partitions.add(partition)
            # a deleted partition needs no marker (Kafka: UNKNOWN_TOPIC_OR_PARTITION drops it)
            md.topic_partitions.discard((topic, partition))
        if offsets_partitions:
            self.groups.complete_transaction(md.producer_id, offsets_partitions, commit)
        if failed:
            self.incomplete[md.transactional_id] = (commit, complete)
            return
        self.incomplete.pop(md.transactional_id, None)
        code = self.write_complete(md, complete)
        if code:
            # markers are in every partition; the Complete record is retried (its pending state kept)
            md.pending_state = complete.txn_state
            self.incomplete[md.transactional_id] = (commit, complete)
            return
        log.debug("Completed %s of transactional id %s", "commit" if commit else "abort", md.transactional_id)

    def _leads(self, topic: str, partition: int) -> bool:
        """Whether this broker may write `topic`-`partition`'s marker: its leader, or a single
        broker's partition (or a deleted one, which needs no marker)."""
        part = self.replica_manager.get_partition(topic, partition)
        if part is not None:
            return part.is_leader or not part.from_metadata
        t = self.topics.get(topic)
        return t is None or not self.replica_manager.brokers or partition in t.partitions

    def retry(self, txns: dict[str, TransactionMetadata]) -> None:
        """Send again the markers (or Complete records) that could not be written yet."""
        for txn_id, (commit, complete) in list(self.incomplete.items()):
            md = txns.get(txn_id)
            if md is None:
                self.incomplete.pop(txn_id, None)
                continue
            self.send_markers(md, commit, complete)
