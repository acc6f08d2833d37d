"""One transactional id's state and its legal transitions (Kafka: TransactionMetadata,
TxnTransitMetadata, TransactionState).

Theory of operation. A change is made in two steps, as in Kafka: `prepare_*` checks the
transition and returns the target (`TxnTransitMetadata`) while marking it pending; the
coordinator writes the target to __transaction_state and only then `complete_transition`
applies it. A pending transition makes concurrent requests answer CONCURRENT_TRANSACTIONS.

    Empty ──AddPartitions──> Ongoing ──EndTxn──> PrepareCommit ──markers──> CompleteCommit
      ^                         │ (timeout, fence)  PrepareAbort  ──markers──> CompleteAbort
      └──── InitProducerId ─────┴──────── (from Empty/Complete*: epoch + 1) ──────┘

`PrepareEpochFence` is never written: fencing an open transaction (InitProducerId from a new
instance, or the transaction timeout) bumps the epoch and goes straight on to PrepareAbort.
State ids and names are Kafka's (written in TransactionLogValue.transaction_status, shown by
DescribeTransactions and ListTransactions).

Transactions v2 (KIP-890 part 2, `client_transaction_version` 2: EndTxn v5, Produce v12,
TxnOffsetCommit v5): PrepareCommit/PrepareAbort carry the producer epoch + 1 (the markers are
written with it, so a late write of the ended transaction is below the partition's epoch and
refused), and the client goes on with the epoch EndTxn answers. When that bump would exhaust the
epoch, the transition names the next producer id, which Complete* switches to (epoch 0). With v0/1
the epoch changes at InitProducerId and fencing only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum

from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records.batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

SHORT_MAX = 32767


class TransactionState(IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display_name(self) -> str:
        return _NAMES[self]

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        for state, n in _NAMES.items():
            if n == name:
                return state
        return None

    @property
    def is_expiration_allowed(self) -> bool:
        return self in (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)


_NAMES = {
    TransactionState.EMPTY: "Empty", TransactionState.ONGOING: "Ongoing",
    TransactionState.PREPARE_COMMIT: "PrepareCommit", TransactionState.PREPARE_ABORT: "PrepareAbort",
    TransactionState.COMPLETE_COMMIT: "CompleteCommit", TransactionState.COMPLETE_ABORT: "CompleteAbort",
    TransactionState.DEAD: "Dead", TransactionState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}

S = TransactionState
_VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    # transactions v2 may abort when nothing was added (Kafka 4: TransactionState.PREPARE_ABORT)
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}

TopicPartition = tuple[str, int]


def is_epoch_exhausted(epoch: int) -> bool:
    """Short.MAX_VALUE stays free so that the coordinator can always fence (TransactionMetadata)."""
    return epoch >= SHORT_MAX - 1


@dataclass(frozen=True, slots=True)
class TxnTransitMetadata:
    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    txn_state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    client_transaction_version: int = 0


def supports_epoch_bump(transaction_version: int) -> bool:
    """Transactions v2: the epoch is bumped at the end of every transaction (TransactionVersion)."""
    return transaction_version >= 2


@dataclass(slots=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    txn_timeout_ms: int = 60000
    state: TransactionState = TransactionState.EMPTY
    topic_partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    pending_state: TransactionState | None = None
    has_failed_epoch_fence: bool = False
    client_transaction_version: int = 0  # of the client that made the last transition

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT)

    # -- prepare ---------------------------------------------------------------------------
    def _prepare(self, state: TransactionState, producer_id: int, epoch: int, last_epoch: int, timeout_ms: int,
                 partitions: frozenset[TopicPartition], start_ts: int, update_ts: int, *,
                 next_producer_id: int = NO_PRODUCER_ID, tv: int = 0) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise RuntimeError(f"Preparing transaction state transition to {state.display_name} while it already "
                               f"has a pending state {self.pending_state.display_name}")
        if producer_id < 0:
            raise ValueError(f"Illegal new producer id {producer_id}")
        if state != S.DEAD and epoch < 0:
            raise ValueError(f"Illegal new producer epoch {epoch}")
        if self.state not in _VALID_PREVIOUS[state]:
            raise RuntimeError(f"Preparing transaction state transition to {state.display_name} failed since the "
                               f"target state is not a valid previous state of the current state "
                               f"{self.state.display_name}")
        self.pending_state = state
        return TxnTransitMetadata(producer_id, self.producer_id, next_producer_id, epoch, last_epoch, timeout_ms,
                                  state, partitions, start_ts, update_ts, tv)

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        if self.producer_epoch == SHORT_MAX:
            raise RuntimeError("Cannot fence producer with epoch equal to Short.MaxValue since this would overflow")
        # a fence whose write failed already bumped the epoch (never returned to a client): not again
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(S.PREPARE_EPOCH_FENCE, self.producer_id, bumped, NO_PRODUCER_EPOCH, self.txn_timeout_ms,
                             frozenset(self.topic_partitions), self.txn_start_timestamp,
                             self.txn_last_update_timestamp)

    def prepare_increment_producer_epoch(self, timeout_ms: int, expected_epoch: int | None,
                                         now: int) -> TxnTransitMetadata:
        """InitProducerId on an idle transactional id; PRODUCER_FENCED for a stale expected epoch."""
        if self.is_producer_epoch_exhausted:
            raise RuntimeError(f"Cannot allocate any more producer epochs for producerId {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch  # the producer recovers after an error (KIP-360)
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch  # a retry of a bump that succeeded
        else:
            raise KafkaError(ErrorCode.PRODUCER_FENCED,
                             f"Expected producer epoch {expected_epoch} does not match current producer epoch "
                             f"{self.producer_epoch} or previous producer epoch {self.last_producer_epoch}")
        return self._prepare(S.EMPTY, self.producer_id, epoch, last, timeout_ms, frozenset(), -1, now)

    def prepare_producer_id_rotation(self, new_producer_id: int, timeout_ms: int, now: int,
                                     record_last_epoch: bool) -> TxnTransitMetadata:
        if self.has_pending_transaction:
            raise RuntimeError("Cannot rotate producer ids while a transaction is still pending")
        return self._prepare(S.EMPTY, new_producer_id, 0, self.producer_epoch if record_last_epoch
                             else NO_PRODUCER_EPOCH, timeout_ms, frozenset(), -1, now)

    def prepare_add_partitions(self, added: set[TopicPartition], now: int, tv: int = 0) -> TxnTransitMetadata:
        start = now if self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT) else self.txn_start_timestamp
        return self._prepare(S.ONGOING, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(self.topic_partitions | added), start, now, tv=tv)

    def prepare_abort_or_commit(self, state: TransactionState, now: int, *, tv: int = 0, bump: bool = False,
                                next_producer_id: int = NO_PRODUCER_ID,
                                no_partition_added: bool = False) -> TxnTransitMetadata:
        """PrepareCommit/PrepareAbort; `bump` (transactions v2, not a fence): with the epoch + 1."""
        epoch, last = ((self.producer_epoch + 1, self.producer_epoch) if bump
                       else (self.producer_epoch, self.last_producer_epoch))
        # v2 may abort a transaction that added nothing: its start is now (Kafka does the same)
        start = now if no_partition_added else self.txn_start_timestamp
        return self._prepare(state, self.producer_id, epoch, last, self.txn_timeout_ms,
                             frozenset(self.topic_partitions), start, now, next_producer_id=next_producer_id, tv=tv)

    def prepare_complete(self, now: int) -> TxnTransitMetadata:
        state = S.COMPLETE_COMMIT if self.state == S.PREPARE_COMMIT else S.COMPLETE_ABORT
        self.has_failed_epoch_fence = False  # the fence (if any) is in the log now
        tv = self.client_transaction_version
        if supports_epoch_bump(tv) and self.next_producer_id != NO_PRODUCER_ID:
            # the bump exhausted the epoch: the markers are written, the next producer id takes over
            return self._prepare(state, self.next_producer_id, 0, self.producer_epoch, self.txn_timeout_ms,
                                 frozenset(), self.txn_start_timestamp, now, tv=tv)
        return self._prepare(state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(), self.txn_start_timestamp, now, tv=tv)

    def prepare_dead(self) -> TxnTransitMetadata:
        return self._prepare(S.DEAD, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(), self.txn_start_timestamp,
                             self.txn_last_update_timestamp)

    # -- complete --------------------------------------------------------------------------
    def complete_transition(self, t: TxnTransitMetadata) -> None:
        """Apply a prepared transition once its record is in the log (TransactionMetadata.completeTransitionTo)."""
        if self.pending_state is None or self.pending_state != t.txn_state:
            raise RuntimeError(f"TransactionalId {self.transactional_id} completing transition to "
                               f"{t.txn_state.display_name} while its pending state is {self.pending_state}")
        to = t.txn_state
        if to == S.EMPTY:
            bump_ok = t.producer_epoch == self.producer_epoch + 1 or (
                t.producer_epoch == 0 and t.producer_id != self.producer_id)
            if (self.producer_epoch != t.producer_epoch and not bump_ok) or t.topic_partitions \
                    or t.txn_start_timestamp != -1:
                self._fail(t)
            self.txn_timeout_ms = t.txn_timeout_ms
            self.producer_epoch = t.producer_epoch
            self.last_producer_epoch = t.last_producer_epoch
            self.producer_id = t.producer_id
            self.previous_producer_id = t.prev_producer_id
        elif to == S.ONGOING:
            if not self._same_producer(t) or not self.topic_partitions <= t.topic_partitions \
                    or self.txn_timeout_ms != t.txn_timeout_ms:
                self._fail(t)
            self.txn_start_timestamp = t.txn_start_timestamp
            self.topic_partitions |= t.topic_partitions
        elif to in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            bumped = t.producer_epoch != self.producer_epoch
            same = self._same_producer(t) or (bumped and t.last_producer_epoch == self.producer_epoch
                                              and t.producer_id == self.producer_id)
            if not same or set(self.topic_partitions) != set(t.topic_partitions) \
                    or self.txn_timeout_ms != t.txn_timeout_ms:
                self._fail(t)
            self.txn_start_timestamp = t.txn_start_timestamp  # v2: an abort of nothing starts now
            self.producer_epoch = t.producer_epoch
            self.last_producer_epoch = t.last_producer_epoch
            self.next_producer_id = t.next_producer_id
        elif to in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT):
            rotated = t.producer_id != self.producer_id and t.producer_id == self.next_producer_id \
                and t.producer_epoch == 0
            if not (self._same_producer(t) or rotated) or self.txn_timeout_ms != t.txn_timeout_ms \
                    or t.txn_start_timestamp == -1:
                self._fail(t)
            self.txn_start_timestamp = t.txn_start_timestamp
            self.topic_partitions.clear()
            if rotated:
                self.previous_producer_id = self.producer_id
                self.producer_id = t.producer_id
                self.producer_epoch = 0
                self.last_producer_epoch = t.last_producer_epoch
            self.next_producer_id = NO_PRODUCER_ID
        else:  # PrepareEpochFence and Dead are never completed
            self._fail(t)
        self.client_transaction_version = t.client_transaction_version
        self.txn_last_update_timestamp = t.txn_last_update_timestamp
        self.pending_state = None
        self.state = to

    def _same_producer(self, t: TxnTransitMetadata) -> bool:
        return t.producer_epoch == self.producer_epoch and t.producer_id == self.producer_id

    def _fail(self, t: TxnTransitMetadata) -> None:
        raise RuntimeError(f"TransactionalId {self.transactional_id} failed transition to state {t} due to "
                           "unexpected metadata")

    def describe(self) -> str:
        return (f"TransactionMetadata(transactionalId={self.transactional_id}, producerId={self.producer_id}, "
                f"producerEpoch={self.producer_epoch}, state={self.state.display_name}, "
                f"partitions={sorted(self.topic_partitions)})")


def list_transaction_states(txns: Iterable[TransactionMetadata], states: Iterable[str], producer_ids: Iterable[int],
                            duration_ms: int, now: int) -> tuple[list[str], list[TransactionMetadata]]:
    """ListTransactions' filter (TransactionStateManager.listTransactionStates): the state names
    it does not know, and the live transactions in one of `states`, of one of `producer_ids`,
    open longer than `duration_ms` (each filter applies only when given)."""
    wanted: set[TransactionState] = set()
    unknown: list[str] = []
    names = list(states)
    for name in names:
        state = TransactionState.from_name(name)
        if state is None:
            unknown.append(name)
        else:
            wanted.add(state)
    pids = set(producer_ids)
    out = []
    for md in txns:
        if md.state == TransactionState.DEAD:
            continue
        if pids and md.producer_id not in pids:
            continue
        if names and md.state not in wanted:
            continue
        if duration_ms >= 0 and now - md.txn_start_timestamp <= duration_ms:
            continue
        out.append(md)
    return unknown, out
