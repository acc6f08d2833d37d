"""The transaction coordinator (Kafka: TransactionCoordinator, TransactionStateManager,
TransactionMarkerChannelManager), for a single broker.

Theory of operation. This broker coordinates every transactional id. Each id's state
(txn/transaction_metadata.py) changes in two steps: the target state is prepared,
written to __transaction_state (txn/transaction_log.py), and applied once written.

- InitProducerId: a new id gets a producer id (from the broker's ProducerIdManager) and epoch
  0; an existing one gets its epoch bumped (KIP-360 rules for a producer that names its old id
  and epoch), or a new producer id when the epoch is exhausted. If a transaction is open it is
  aborted first with the epoch bumped (fencing the old producer), and the caller is answered
  CONCURRENT_TRANSACTIONS so that its retry bumps the epoch once more, as Kafka does.
- AddPartitionsToTxn / AddOffsetsToTxn add partitions (for AddOffsetsToTxn: the group's
  __consumer_offsets partition) and make the state Ongoing; `verify_partitions` answers whether
  partitions are in the transaction (KIP-890 verification: the produce path and TxnOffsetCommit
  ask it before the first transactional write of a producer to a partition).
- Transactions v2 (KIP-890 part 2; the cluster finalizes transaction.version 2, see
  minibroker/features.py): Produce v12 and TxnOffsetCommit v5 add their partition themselves
  (`add_partitions` with the client's transaction version 2), and EndTxn v5 bumps the epoch:
  PrepareCommit/PrepareAbort and the markers carry epoch + 1, which EndTxn answers. A retried
  EndTxn (the old epoch, the transaction already ended) answers the new epoch again; an abort
  may end a transaction that added nothing. The coordinator's own aborts (fence, timeout) bump
  the epoch once, with the cluster's transaction version recorded, so a v2 client's abort after a
  timeout is taken as the retry of that abort.
- EndTxn writes PrepareCommit/PrepareAbort, answers, and completes the transaction: a COMMIT or
  ABORT control batch is appended to every partition of the transaction (Kafka sends
  WriteTxnMarkers to the partition leaders; here they are local appends), the group
  coordinator is told for __consumer_offsets partitions, and CompleteCommit/CompleteAbort is
  written (txn/transaction_marker_channel_manager.py). Markers that cannot be written yet (a
  storage error) are retried by the periodic
  task; meanwhile the transactional id answers CONCURRENT_TRANSACTIONS.
- Transactions open longer than their transaction.timeout.ms are aborted by the periodic task
  (every transaction.abort.timed.out.transaction.cleanup.interval.ms), fencing the producer;
  idle transactional ids expire after transactional.id.expiration.ms (a tombstone is written).
- On start the state is replayed from __transaction_state; transactions found in
  PrepareCommit/PrepareAbort (a crash between the decision and the markers) are completed by
  writing their markers again, so a transaction is never left half committed.

Everything runs on the event loop, and each operation and its writes happen without an await
in between, so no two requests interleave inside a transition. The coordinator epoch written
in markers is 0: the leader epoch of every partition of this single broker.

The periodic task also expires idle producer ids in every partition's producer state (Kafka's
PeriodicProducerExpirationCheck, every producer.id.expiration.check.interval.ms).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from minibroker.config import BrokerConfig
from minibroker.coordinator.group.group_coordinator import GroupCoordinator
from minibroker.coordinator.group.records import TOPIC as OFFSETS_TOPIC
from minibroker.coordinator.runtime.coordinator_store import CoordinatorStore
from minibroker.coordinator.txn.producer_id_manager import ProducerIdManager
from minibroker.coordinator.txn.transaction_log import (
    TOPIC,
    key_bytes,
    read_partition,
    value_bytes,
    value_version,
)
from minibroker.coordinator.txn.transaction_marker_channel_manager import TransactionMarkerChannelManager
from minibroker.coordinator.txn.transaction_metadata import (
    SHORT_MAX,
    TopicPartition,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
    list_transaction_states,
    supports_epoch_bump,
)
from minibroker.coordinator.txn.txn_marker_sender import TxnMarkerSender
from minibroker.partition import Partition
from minibroker.replica_manager import ReplicaManager
from minibroker.topics import Topic, TopicRegistry
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records.batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, BatchView
from minibroker_storage.clock import Clock, wall_clock_ms
from minibroker_storage.log_manager import LogManager

log = logging.getLogger("minibroker.coordinator.transaction")

S = TransactionState


@dataclass(frozen=True)
class TransactionConfig:
    transactional_id_expiration_ms: int = 7 * 24 * 3600 * 1000
    transaction_max_timeout_ms: int = 15 * 60 * 1000
    num_partitions: int = 50
    segment_bytes: int = 100 * 1024 * 1024
    min_isr: int = 1
    abort_timed_out_interval_ms: int = 10000
    remove_expired_interval_ms: int = 3600 * 1000
    producer_id_expiration_ms: int = 24 * 3600 * 1000
    producer_id_expiration_check_interval_ms: int = 600000
    # the cluster's finalized transaction.version: what the coordinator's own aborts use
    transaction_version: int = 2

    @classmethod
    def from_broker_config(cls, cfg: BrokerConfig, transaction_version: int = 2) -> TransactionConfig:
        return cls(
            transaction_version=transaction_version,
            transactional_id_expiration_ms=cfg.get("transactional.id.expiration.ms"),
            transaction_max_timeout_ms=cfg.get("transaction.max.timeout.ms"),
            num_partitions=cfg.get("transaction.state.log.num.partitions"),
            segment_bytes=cfg.get("transaction.state.log.segment.bytes"),
            min_isr=cfg.get("transaction.state.log.min.isr"),
            abort_timed_out_interval_ms=cfg.get("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
            remove_expired_interval_ms=cfg.get("transaction.remove.expired.transaction.cleanup.interval.ms"),
            producer_id_expiration_ms=cfg.get("producer.id.expiration.ms"),
            producer_id_expiration_check_interval_ms=cfg.get("producer.id.expiration.check.interval.ms"),
        )


# how long a __transaction_state write waits for its replication (Kafka: request.timeout.ms's default)
WRITE_TIMEOUT_MS = 30_000


async def replicated(store: CoordinatorStore, transactional_id: str) -> int:
    """Until the transactional id's __transaction_state writes are replicated (the HW passed
    them; Kafka: TransactionStateManager.appendTransactionToLog with acks=-1 and
    request.timeout.ms): NONE, or the append error as the transaction APIs answer it."""
    code = await store.wait_replicated(transactional_id, WRITE_TIMEOUT_MS)
    return append_error_to_coordinator_error(code) if code else ErrorCode.NONE


def append_error_to_coordinator_error(code: int) -> int:
    """TransactionStateManager.appendTransactionToLog's translation of append errors."""
    if code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return code


def verification_error_for_produce(code: int, generic_error_supported: bool) -> int:
    """The error a write whose verification failed answers (AddPartitionsToTxnManager and
    ReplicaManager.handleProduceAppend): clients handle INVALID_PRODUCER_EPOCH rather than
    PRODUCER_FENCED here, retry on NOT_ENOUGH_REPLICAS, and only know TRANSACTION_ABORTABLE
    from Produce v11 / TxnOffsetCommit v5."""
    if code == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if code == ErrorCode.TRANSACTION_ABORTABLE and not generic_error_supported:
        return ErrorCode.INVALID_TXN_STATE
    if code in (ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NETWORK_EXCEPTION, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR):
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return code


class TransactionCoordinator:
    """Every transactional id of the broker (one per broker)."""

    def __init__(self, config: TransactionConfig, store: CoordinatorStore, producer_ids: ProducerIdManager,
                 topics: TopicRegistry, replica_manager: ReplicaManager, groups: GroupCoordinator,
                 log_manager: LogManager, *, now_ms: Clock = wall_clock_ms,
                 marker_sender: TxnMarkerSender | None = None) -> None:
        self.config = config
        self.store = store
        self.producer_ids = producer_ids
        self.topics = topics  # the partitions markers are written to
        self.replica_manager = replica_manager
        self.groups = groups  # told when a marker lands in __consumer_offsets (TxnOffsetCommit)
        self.log_manager = log_manager  # every partition log, for producer id expiration
        self.now_ms = now_ms
        self.txns: dict[str, TransactionMetadata] = {}
        self.active = False
        self.markers = TransactionMarkerChannelManager(topics, replica_manager, groups, now_ms=now_ms,
                                                       write_complete=self._append, sender=marker_sender,
                                                       partition_for=store.partition_for)
        self._tasks: list[asyncio.Task[None]] = []

    # ------------------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        self.load()
        self.active = True
        self._complete_loaded_transactions()
        c = self.config
        self._tasks = [
            asyncio.create_task(self._every(c.abort_timed_out_interval_ms, self.abort_timed_out_transactions),
                                name="transaction-abort"),
            asyncio.create_task(self._every(c.remove_expired_interval_ms, self.remove_expired_transactional_ids),
                                name="transactionalId-expiration"),
            asyncio.create_task(self._every(c.producer_id_expiration_check_interval_ms, self.expire_producers),
                                name="producer-id-expiration"),
        ]

    async def stop(self) -> None:
        self.active = False
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self._tasks = []

    async def _every(self, interval_ms: int, fn: Callable[[], None]) -> None:
        while True:
            await asyncio.sleep(max(interval_ms, 10) / 1000)
            try:
                fn()
            except Exception:
                log.exception("%s failed", getattr(fn, "__name__", fn))

    def load(self) -> None:
        """Replay __transaction_state, every partition (one node leads them all)."""
        for partition in self.store.partitions():
            self.load_partition(partition)

    def load_partition(self, partition: int) -> None:
        """Replay one partition of __transaction_state (this broker became its leader): the last
        record of each transactional id wins; once started, its decided transactions get their markers."""
        count = 0
        for _, txn_id, md in read_partition(self.store, partition):
            count += 1
            if md is None:
                self.txns.pop(txn_id, None)
            else:
                self.txns[txn_id] = md
        if self.txns:
            self.producer_ids.ensure_above(max(max(md.producer_id, md.previous_producer_id)
                                               for md in self.txns.values()))
        if count:
            log.info("Loaded %d transactional id(s) from %d record(s) of %s-%d", len(self.txns), count, TOPIC, partition)
        if self.active:
            self._complete_loaded_transactions()

    def unload_partition(self, partition: int) -> None:
        """Forget the transactional ids of `partition` (this broker no longer leads it); their
        producers find the new coordinator (NOT_COORDINATOR) and retry there."""
        for txn_id in [t for t in self.txns if self.store.partition_for(t) == partition]:
            del self.txns[txn_id]
            self.markers.forget(txn_id)

    def _complete_loaded_transactions(self) -> None:
        """Transactions decided before a restart get their markers (TransactionStateManager.loadTransactions...)."""
        now = self.now_ms()
        for txn_id, md in list(self.txns.items()):
            if md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                log.info("Completing %s of transactional id %s (producer %d, epoch %d) after loading",
                         md.state.display_name, txn_id, md.producer_id, md.producer_epoch)
                self.markers.send_markers(md, md.state == S.PREPARE_COMMIT, md.prepare_complete(now))

    # ------------------------------------------------------------------------------ writing
    def _append(self, md: TransactionMetadata, transit: TxnTransitMetadata) -> int:
        """Write a prepared transition and apply it; an error code (and the pending state
        cleared) if the write failed."""
        try:
            value = value_bytes(transit, value_version(self.config.transaction_version))
            self.store.append(md.transactional_id, [(key_bytes(md.transactional_id), value)], timestamp=self.now_ms())
        except KafkaError as e:
            md.pending_state = None
            log.info("Appending %s for transactional id %s failed: %s", transit.txn_state.display_name,
                     md.transactional_id, e)
            return append_error_to_coordinator_error(e.code)
        except OSError as e:
            md.pending_state = None
            log.error("Appending to %s for transactional id %s failed: %s", TOPIC, md.transactional_id, e)
            return ErrorCode.NOT_COORDINATOR
        md.complete_transition(transit)
        return ErrorCode.NONE

    def ensure_topic(self) -> Topic:
        return self.store.ensure_topic()

    async def ensure_topic_async(self) -> Topic:
        return await self.store.ensure_topic_async()

    def _check_timeout(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.config.transaction_max_timeout_ms

    # ----------------------------------------------------------------------- InitProducerId
    async def init_producer_id(self, transactional_id: str, timeout_ms: int,
                               expected: tuple[int, int] | None) -> tuple[int, int, int]:
        """(error, producer id, epoch) for a transactional InitProducerId."""
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if transactional_id == "":
            return ErrorCode.INVALID_REQUEST, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if not self._check_timeout(timeout_ms):
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if self.store.topic() is None:
            await self.ensure_topic_async()
        if code := self.store.coordinator_error(transactional_id):  # led elsewhere, or loading
            return code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        code = self._init_producer_id(transactional_id, timeout_ms, expected)
        if not code:
            code = await replicated(self.store, transactional_id)
        if code:
            return code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        md = self.txns[transactional_id]
        log.info("Initialized transactionalId %s with producerId %d and producer epoch %d on partition %s-%d",
                 transactional_id, md.producer_id, md.producer_epoch, TOPIC, self.store.partition_for(transactional_id))
        return ErrorCode.NONE, md.producer_id, md.producer_epoch

    def _init_producer_id(self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None) -> int:
        now = self.now_ms()
        md = self.txns.get(transactional_id)
        if md is None:
            try:
                pid = self.producer_ids.generate_producer_id()
            except KafkaError as e:
                return e.code
            md = self.txns[transactional_id] = TransactionMetadata(
                transactional_id, pid, txn_timeout_ms=timeout_ms, txn_last_update_timestamp=now)
        if md.pending_transition_in_progress:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if expected is not None and not (
                md.producer_epoch == NO_PRODUCER_EPOCH or expected[0] == md.producer_id
                or (expected[0] == md.previous_producer_id and expected[1] >= 32766)):
            return ErrorCode.PRODUCER_FENCED
        if md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if md.state == S.ONGOING:
            # fence the current producer by aborting its transaction with a bumped epoch; the
            # client retries and its retry bumps the epoch again (TransactionCoordinator)
            transit = md.prepare_fence_producer_epoch()
            code, _, _ = self._end_transaction(transactional_id, transit.producer_id, transit.producer_epoch, False,
                                               from_client=False, tv=self.config.transaction_version)
            return code or ErrorCode.CONCURRENT_TRANSACTIONS
        if md.state not in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            raise RuntimeError(f"Found transactionalId {transactional_id} with state {md.state.display_name}")
        try:
            if md.is_producer_epoch_exhausted and (expected is None or expected[1] == md.producer_epoch):
                transit = md.prepare_producer_id_rotation(self.producer_ids.generate_producer_id(), timeout_ms, now,
                                                          expected is not None)
            else:
                transit = md.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected[1],
                                                              now)
        except KafkaError as e:
            return e.code
        return self._append(md, transit)

    # -------------------------------------------------------------------- AddPartitionsToTxn
    def _validate_producer(self, transactional_id: str | None, producer_id: int, epoch: int
                           ) -> tuple[int, TransactionMetadata | None]:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, None
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        if code := self.store.coordinator_error(transactional_id):
            return code, None
        md = self.txns.get(transactional_id)
        if md is None or md.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if md.producer_epoch != epoch:
            return ErrorCode.PRODUCER_FENCED, None
        return ErrorCode.NONE, md

    def add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                       partitions: Iterable[TopicPartition], tv: int = 0) -> int:
        """AddPartitionsToTxn / AddOffsetsToTxn (handleAddPartitionsToTransaction); `tv` 2 for the
        implicit adds of transactions v2 (Produce v12, TxnOffsetCommit v5)."""
        code, md = self._validate_producer(transactional_id, producer_id, epoch)
        if md is None:
            return code
        added = set(partitions)
        if md.pending_transition_in_progress or md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if md.state == S.ONGOING and added <= md.topic_partitions:
            return ErrorCode.NONE
        return self._append(md, md.prepare_add_partitions(added, self.now_ms(), tv))

    def verify_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                          partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Whether each partition is in the ongoing transaction (handleVerifyPartitionsInTransaction):
        NONE or TRANSACTION_ABORTABLE, or one error for all."""
        parts = list(partitions)
        code, md = self._validate_producer(transactional_id, producer_id, epoch)
        if md is not None and md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            code = ErrorCode.CONCURRENT_TRANSACTIONS
        if code:
            return dict.fromkeys(parts, code)
        assert md is not None
        return {tp: ErrorCode.NONE if tp in md.topic_partitions else ErrorCode.TRANSACTION_ABORTABLE for tp in parts}

    def offsets_partition(self, group_id: str) -> TopicPartition:
        return OFFSETS_TOPIC, self.groups.store.partition_for(group_id)

    # ---------------------------------------------------------------------------- EndTxn
    def end_transaction(self, transactional_id: str, producer_id: int, epoch: int, commit: bool) -> int:
        """EndTxn v0-4 (transactions v0/1): the error."""
        return self._end_transaction(transactional_id, producer_id, epoch, commit, from_client=True, tv=0)[0]

    def end_transaction_and_epoch(self, transactional_id: str, producer_id: int, epoch: int, commit: bool,
                                  tv: int) -> tuple[int, int, int]:
        """EndTxn with the client's transaction version: (error, producer id, epoch) -- with
        transactions v2 (EndTxn v5) the id and the bumped epoch the client goes on with."""
        return self._end_transaction(transactional_id, producer_id, epoch, commit, from_client=True, tv=tv)

    def _end_transaction(self, transactional_id: str, producer_id: int, epoch: int, commit: bool, *,
                         from_client: bool, tv: int) -> tuple[int, int, int]:
        none = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        if not transactional_id:
            return (ErrorCode.INVALID_REQUEST, *none)
        if not self.active:
            return (ErrorCode.COORDINATOR_NOT_AVAILABLE, *none)
        if code := self.store.coordinator_error(transactional_id):
            return (code, *none)
        md = self.txns.get(transactional_id)
        if md is None:
            return (ErrorCode.INVALID_PRODUCER_ID_MAPPING, *none)
        fencing = md.pending_state == S.PREPARE_EPOCH_FENCE
        # the fence bumps the epoch once whatever the version (Kafka 4.4 does too)
        v2 = supports_epoch_bump(tv) and not fencing
        state = md.state
        retry_on_bump = retry_on_overflow = False
        if v2:
            # the epoch was bumped by the EndTxn being retried; or that bump exhausted it and
            # the next producer id took over
            md_v2 = supports_epoch_bump(md.client_transaction_version)
            retry_on_bump = md_v2 and md.producer_epoch == epoch + 1
            retry_on_overflow = (md_v2 and md.previous_producer_id == producer_id and epoch == SHORT_MAX - 1
                                 and md.producer_epoch == 0)
            if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                valid = retry_on_bump
            elif state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
                valid = retry_on_bump or retry_on_overflow or epoch == md.producer_epoch
            else:
                valid = epoch == md.producer_epoch
        else:
            # transaction.version 0/1: a client must use the current epoch; the coordinator's own
            # abort (fence, timeout) comes with the bumped one
            valid = (not from_client or epoch == md.producer_epoch) and epoch >= md.producer_epoch
        is_retry = retry_on_bump or retry_on_overflow
        if md.producer_id != producer_id and not retry_on_overflow:
            return (ErrorCode.INVALID_PRODUCER_ID_MAPPING, *none)
        if not valid:
            return (ErrorCode.PRODUCER_FENCED, *none)
        if md.pending_transition_in_progress and not fencing:
            return (ErrorCode.CONCURRENT_TRANSACTIONS, *none)
        current = (ErrorCode.NONE, md.producer_id, md.producer_epoch)
        if state == S.ONGOING:
            target, nothing_added = (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT), False
        elif state == S.COMPLETE_COMMIT:
            if commit:
                return current if is_retry or not v2 else (self._invalid_transition(md, commit), *none)
            if not v2 or is_retry:
                return (self._invalid_transition(md, commit), *none)
            target, nothing_added = S.PREPARE_ABORT, True
        elif state == S.COMPLETE_ABORT:
            if commit:
                return (self._invalid_transition(md, commit), *none)
            if not v2 or is_retry:
                return current
            target, nothing_added = S.PREPARE_ABORT, True
        elif state == S.PREPARE_COMMIT:
            return (ErrorCode.CONCURRENT_TRANSACTIONS, *none) if commit else (self._invalid_transition(md, commit),
                                                                               *none)
        elif state == S.PREPARE_ABORT:
            return (ErrorCode.CONCURRENT_TRANSACTIONS, *none) if not commit else (self._invalid_transition(md, commit),
                                                                                   *none)
        elif state == S.EMPTY:
            if commit or not v2:
                return (self._invalid_transition(md, commit), *none)
            target, nothing_added = S.PREPARE_ABORT, True  # v2: abort what was never begun
        else:
            raise RuntimeError(f"Found transactionalId {transactional_id} with state {state.display_name}")
        next_producer_id = NO_PRODUCER_ID
        if v2 and md.is_producer_epoch_exhausted:
            try:
                next_producer_id = self.producer_ids.generate_producer_id()
            except KafkaError as e:
                return (e.code, *none)
        if fencing:
            md.pending_state = None
            md.producer_epoch = epoch
            md.last_producer_epoch = NO_PRODUCER_EPOCH
        transit = md.prepare_abort_or_commit(target, self.now_ms(), tv=tv, bump=v2, next_producer_id=next_producer_id,
                                             no_partition_added=nothing_added)
        code = self._append(md, transit)
        if code:
            if fencing:
                md.has_failed_epoch_fence = True  # the bumped epoch was never returned: keep it
            return (code, *none)
        answer = ((ErrorCode.NONE, next_producer_id, 0) if next_producer_id != NO_PRODUCER_ID
                  else (ErrorCode.NONE, md.producer_id, md.producer_epoch))
        # the decision is in the log: the client may be answered; the markers follow at once
        self.markers.send_markers(md, commit, md.prepare_complete(self.now_ms()))
        return answer

    @staticmethod
    def _invalid_transition(md: TransactionMetadata, commit: bool) -> int:
        log.debug("TransactionalId %s's state is %s, but received transaction marker result to send: %s",
                  md.transactional_id, md.state.display_name, "COMMIT" if commit else "ABORT")
        return ErrorCode.INVALID_TXN_STATE

    # -------------------------------------------------------------------- periodic work
    def abort_timed_out_transactions(self) -> None:
        """Abort transactions open past their timeout, fencing their producer (abortTimedOutTransactions)."""
        self.markers.retry(self.txns)
        now = self.now_ms()
        for txn_id, md in list(self.txns.items()):
            if md.pending_transition_in_progress or md.state != S.ONGOING:
                continue
            if md.txn_start_timestamp + md.txn_timeout_ms >= now:
                continue
            transit = md.prepare_fence_producer_epoch()
            code, _, _ = self._end_transaction(txn_id, transit.producer_id, transit.producer_epoch, False,
                                               from_client=False, tv=self.config.transaction_version)
            if code:
                log.warning("Rollback of ongoing transaction for transactionalId %s failed due to error %s",
                            txn_id, code)
            else:
                log.info("Completed rollback of ongoing transaction for transactionalId %s due to timeout", txn_id)

    def remove_expired_transactional_ids(self) -> None:
        """Tombstone idle transactional ids (TransactionStateManager.removeExpiredTransactionalIds)."""
        now = self.now_ms()
        for txn_id, md in list(self.txns.items()):
            if md.pending_transition_in_progress or not md.state.is_expiration_allowed:
                continue
            if md.txn_last_update_timestamp > now - self.config.transactional_id_expiration_ms:
                continue
            md.prepare_dead()
            try:
                self.store.append(txn_id, [(key_bytes(txn_id), None)], timestamp=now)
            except (KafkaError, OSError) as e:
                md.pending_state = None
                log.warning("Failed to remove expired transactionalId %s: %s", txn_id, e)
                continue
            del self.txns[txn_id]
            log.info("Removed expired transactionalId %s", txn_id)

    def expire_producers(self) -> None:
        now = self.now_ms()
        for lg in list(self.log_manager.logs().values()):
            lg.producer_state.producer_id_expiration_ms = self.config.producer_id_expiration_ms
            lg.remove_expired_producers(now)

    # ------------------------------------------------------------------------- tooling
    def describe(self, transactional_id: str) -> tuple[int, TransactionMetadata | None]:
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, None
        md = self.txns.get(transactional_id)
        if md is None or md.state == S.DEAD:
            return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None
        return ErrorCode.NONE, md

    def list_transactions(self, states: Iterable[str], producer_ids: Iterable[int], duration_ms: int = -1
                          ) -> tuple[int, list[str], list[TransactionMetadata]]:
        """(error, unknown state filters, matching transactions) (listTransactionStates)."""
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, [], []
        unknown, out = list_transaction_states(self.txns.values(), states, producer_ids, duration_ms, self.now_ms())
        return ErrorCode.NONE, unknown, out


# ------------------------------------------------------------------------ the produce path
def check_transactional_produce(coordinator: TransactionCoordinator | None, transactional_id: str | None,
                                batches: list[BatchView], topic: str, partition: int, lg: Partition,
                                version: int, remote: Mapping[TopicPartition, int] | None = None) -> None:
    """Before a Produce partition is appended: transactional batches of a producer that has no
    transaction open in this partition yet must belong to a partition of its ongoing
    transaction (KIP-890 verification; Kafka asks the coordinator with AddPartitionsToTxn
    verify_only). From Produce v12 (transactions v2, KIP-890 part 2) the write adds its partition
    to the transaction instead, as AddPartitionsToTxn would (Kafka's AddPartitionsToTxnManager
    with the ADD_PARTITION operation). `batches` are the headers of the transactional batches,
    parsed once by the log's validator (the ReplicaManager calls this only when there are some).
    `remote`: the answers of the coordinator on another broker, asked before the append
    (minibroker.add_partitions_to_txn_manager). Raises KafkaError with the error the client expects."""
    txn_producers = {(v.producer_id, v.producer_epoch) for v in batches}
    if not txn_producers:
        return
    if transactional_id is None:
        # KafkaApis.handleProduceRequest: transactional records need an authorized transactional id
        raise KafkaError(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                         "Transactional records were sent without a transactional id")
    if len(txn_producers) > 1:
        raise KafkaError(ErrorCode.INVALID_PRODUCER_ID_MAPPING, "Transactional records contained more than one "
                                                                "producer ID")
    ((pid, epoch),) = txn_producers
    if lg.has_ongoing_transaction(pid, epoch):  # a bumped epoch (v2): a new transaction, verified
        return
    code: int
    if remote is not None:
        code = remote.get((topic, partition), ErrorCode.COORDINATOR_NOT_AVAILABLE)
    elif coordinator is None:
        code = ErrorCode.COORDINATOR_NOT_AVAILABLE
    elif version >= 12:
        code = coordinator.add_partitions(transactional_id, pid, epoch, [(topic, partition)], tv=2)
    else:
        code = coordinator.verify_partitions(transactional_id, pid, epoch, [(topic, partition)])[(topic, partition)]
    if code:
        final = verification_error_for_produce(code, generic_error_supported=version > 10)
        message = ("Partition was not added to the transaction" if final == ErrorCode.INVALID_TXN_STATE
                   else None)
        if final == ErrorCode.NOT_ENOUGH_REPLICAS:
            message = f"Unable to verify the partition has been added to the transaction. Underlying error: {code}"
        raise KafkaError(final, message)
