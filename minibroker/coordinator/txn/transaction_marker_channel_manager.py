"""Writing a decided transaction's markers (Kafka: TransactionMarkerChannelManager): the partitions
this broker leads as local appends (the WriteTxnMarkers a leader would handle), the others sent to
their leaders with WriteTxnMarkers (minibroker.coordinator.txn.txn_marker_sender).

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

import asyncio
import logging
from collections.abc import Callable

from minibroker.coordinator.group.group_coordinator import GroupCoordinator
from minibroker.coordinator.group.records import TOPIC as OFFSETS_TOPIC
from minibroker.coordinator.txn.transaction_log import TOPIC as TRANSACTION_TOPIC
from minibroker.coordinator.txn.transaction_metadata import TransactionMetadata, TxnTransitMetadata
from minibroker.coordinator.txn.txn_marker_sender import TxnMarkerSender
from minibroker.replica_manager import ReplicaManager
from minibroker.topics import TopicRegistry
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records.v2 import ControlType, build_control_batch
from minibroker_storage.clock import Clock
from minibroker_storage.log import AppendOrigin

log = logging.getLogger("minibroker.coordinator.transaction")

COORDINATOR_EPOCH = 0  # a single broker's: its __transaction_state partitions have no leader epoch


class TransactionMarkerChannelManager:
    """Writes the markers of decided transactions, then their Complete* record."""

    REMOTE_ATTEMPTS = 20  # sends of a remote marker before leaving it to the periodic retry
    REMOTE_BACKOFF_S = 0.25  # between them: the metadata names the new leader meanwhile

    def __init__(self, topics: TopicRegistry, replica_manager: ReplicaManager, groups: GroupCoordinator, *,
                 now_ms: Clock, write_complete: Callable[[TransactionMetadata, TxnTransitMetadata], int],
                 sender: TxnMarkerSender | None = None, partition_for: Callable[[str], int] | None = None) -> None:
        self.topics = topics  # the partitions markers are written to
        self.partition_for = partition_for  # transactional id -> its __transaction_state partition
        self.replica_manager = replica_manager
        self.groups = groups  # told when a marker lands in __consumer_offsets (TxnOffsetCommit)
        self.now_ms = now_ms
        self.write_complete = write_complete  # writes and applies Complete*; an error code if it failed
        self.incomplete: dict[str, tuple[bool, TxnTransitMetadata]] = {}  # markers still to write
        self.sender = sender  # WriteTxnMarkers to other brokers' partitions (a cluster)
        self._in_flight: dict[str, asyncio.Task[None]] = {}  # transactional id -> its remote markers being sent

    def forget(self, transactional_id: str) -> None:
        self.incomplete.pop(transactional_id, None)
        task = self._in_flight.pop(transactional_id, None)
        if task is not None:
            task.cancel()

    def send_markers(self, md: TransactionMetadata, commit: bool, complete: TxnTransitMetadata) -> None:
        """Write the marker to every partition still in the transaction, then Complete*."""
        if md.transactional_id in self._in_flight:
            return  # its remote markers are being sent; that task completes the transaction
        kind = ControlType.COMMIT if commit else ControlType.ABORT
        offsets_partitions: set[int] = set()
        failed = False
        remote: list[tuple[str, int]] = []
        for topic, partition in sorted(md.topic_partitions):
            lg = self.topics.get_log(topic, partition)
            if not self._leads(topic, partition):
                remote.append((topic, partition))  # led by another broker: WriteTxnMarkers there
                continue
            if lg is not None:
                # the transaction's producer id and epoch (PrepareCommit/PrepareAbort's): with
                # transactions v2 the bumped epoch, and the old id when Complete* rotates it
                batch = build_control_batch(kind, producer_id=md.producer_id, producer_epoch=md.producer_epoch,
                                            coordinator_epoch=self.coordinator_epoch(md.transactional_id),
                                            timestamp=self.now_ms())
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
        if remote:
            if self.sender is None:
                log.warning("The %s markers of %s for %s are for other brokers' partitions and no sender is set",
                            kind.name, md.transactional_id, remote)
                self.incomplete[md.transactional_id] = (commit, complete)
                return
            self._in_flight[md.transactional_id] = asyncio.ensure_future(
                self._send_remote(md, commit, complete, remote))
            return
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

    async def _send_remote(self, md: TransactionMetadata, commit: bool, complete: TxnTransitMetadata,
                           remote: list[tuple[str, int]]) -> None:
        """Send the markers of `remote` to their leaders until each is written (or refused for
        good), then go on with the transaction's completion (Kafka: TransactionMarkerRequest
        completion handler -> Complete* once no partition is left)."""
        assert self.sender is not None
        txn_id = md.transactional_id
        left = list(remote)
        try:
            for attempt in range(self.REMOTE_ATTEMPTS):
                if attempt:
                    await asyncio.sleep(self.REMOTE_BACKOFF_S)
                results = await self.sender.send(md.producer_id, md.producer_epoch, commit,
                                                 self.coordinator_epoch(md.transactional_id), left)
                retry = []
                for tp, code in results.items():
                    if code in (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_PRODUCER_EPOCH,
                                ErrorCode.TRANSACTION_COORDINATOR_FENCED):
                        # written; or a deleted partition, a newer epoch or coordinator: no marker to write
                        if code:
                            log.error("The marker of %s was refused by %s-%d: error %d", txn_id, tp[0], tp[1], code)
                        md.topic_partitions.discard(tp)
                    else:
                        retry.append(tp)
                left = retry
                if not left:
                    break
                log.info("Markers of %s for %s not written yet (%s), retrying", txn_id, left,
                         sorted({results[tp] for tp in left}))
        finally:
            self._in_flight.pop(txn_id, None)
        if left:
            self.incomplete[txn_id] = (commit, complete)  # the periodic retry sends them again
            return
        self.send_markers(md, commit, complete)  # the local ones are done: Complete*

    def coordinator_epoch(self, transactional_id: str) -> int:
        """The epoch markers carry: the leader epoch of the id's __transaction_state partition (Kafka:
        TransactionStateManager's coordinatorEpoch, the epoch the partition was loaded at), so that a
        partition leader fences the markers of a coordinator that lost the partition to another
        broker, and accepts those of one that got it back (ProducerStateManager compares them)."""
        if self.partition_for is None:
            return COORDINATOR_EPOCH
        part = self.replica_manager.get_partition(TRANSACTION_TOPIC, self.partition_for(transactional_id))
        return part.leader_epoch if part is not None and part.from_metadata else COORDINATOR_EPOCH

    def _leads(self, topic: str, partition: int) -> bool:
        """Whether this broker may write `topic`-`partition`'s marker: its leader, or a single
        broker's partition (or a deleted one, which needs no marker)."""
        part = self.replica_manager.get_partition(topic, partition)
        if part is not None:
            return part.is_leader or not part.from_metadata
        t = self.topics.get(topic)
        if self.sender is not None and self.sender.is_cluster():
            return self.sender.leader(topic, partition) == self.replica_manager.node_id or (
                t is None and self.sender.metadata_cache.topic(topic) is None)  # deleted: no marker
        return t is None or not self.replica_manager.brokers or partition in t.partitions

    def retry(self, txns: dict[str, TransactionMetadata]) -> None:
        """Send again the markers (or Complete records) that could not be written yet."""
        for txn_id, (commit, complete) in list(self.incomplete.items()):
            if txn_id in self._in_flight:
                continue
            md = txns.get(txn_id)
            if md is None:
                self.incomplete.pop(txn_id, None)
                continue
            self.send_markers(md, commit, complete)
