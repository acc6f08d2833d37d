"""One share partition: a share group's delivery state of one topic partition (KIP-932; Kafka's
SharePartition).

Theory of operation. Share consumers do not own partitions; they *acquire* records. The share
partition keeps a window of in-flight offsets, from the start offset (SPSO: every offset below it
is done) to the end offset (SPEO: the next offset never fetched yet). Each offset in the window has
a state — AVAILABLE, ACQUIRED (by one member, until its acquisition lock expires),
ACKNOWLEDGED or ARCHIVED — and a delivery count (how often it was acquired). A ShareFetch
acquires available offsets of the window first, then new ones past its end, up to a record limit;
an acknowledgement moves the member's acquired offsets to ACKNOWLEDGED (accept), ARCHIVED
(reject, or a gap), or back to AVAILABLE (release), or renews their lock (KIP-1222). A release or
a lock timeout on a record already delivered `delivery.count.limit` times archives it instead (the
poison-record guard). Whenever the offsets at the start of the window are done, the start moves
past them and they leave memory.

The dead-letter queue (KIP-1191): when the group has one (`dlq_enabled`), a rejected record and one
given up at the delivery-count limit go to ARCHIVING instead, are queued in `dlq_pending` with the
reason Kafka writes in the `__dlq.errors.message` header, and become ARCHIVED once the caller has
written them to the DLQ topic (`archive`), as Kafka's SharePartition.initiateDLQAndArchive. ARCHIVING
is not done: the start offset waits for it, and it is persisted (state 3), so that records caught
by a restart are sent again (Kafka's maybeResumeDlqArchiving).

We keep the window per offset (Kafka keeps it per batch and splits a batch into offsets only when
its records diverge); the states on the wire and in `__share_group_state` are the same. What is
persisted: the start offset and every non-done state batch (acquired is persisted as available:
after a restart nothing is acquired, and an acquired record comes back to be delivered again).

The clock is injected; nothing here does I/O: the caller (minibroker.coordinator.share.share_group)
reads the log, persists the state and wakes waiting fetches.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import IntEnum

from minibroker_protocol.errors import ErrorCode


class RecordState(IntEnum):
    """Kafka's RecordState ids (the persisted DeliveryState uses 0, 2 and 4)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVING = 3  # on its way to the dead-letter queue (KIP-1191)
    ARCHIVED = 4


# the __dlq.errors.message of each reason (Kafka's ShareGroupDLQManager.CLIENT_REJECT / DELIVERY_COUNT_EXCEEDED)
CLIENT_REJECT = "Offset rejected by client."
DELIVERY_COUNT_EXCEEDED = "Offset delivery count exceeded the threshold."


class AckType(IntEnum):
    """AcknowledgeTypes on the wire (Kafka's AcknowledgeType; 0 marks a gap in a batch)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


@dataclass(slots=True)
class InFlight:
    state: RecordState
    delivery_count: int = 0
    member_id: str | None = None
    lock_deadline_ms: int = 0


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """What acquisition needs to know of one log batch."""

    base_offset: int
    last_offset: int
    skip: bool = False  # a control batch or an aborted transaction's batch (read_committed): never delivered


@dataclass(slots=True)
class StateBatch:
    first_offset: int
    last_offset: int
    state: int
    delivery_count: int


@dataclass(slots=True)
class SharePartition:
    group_id: str
    topic: str
    partition: int
    start_offset: int
    delivery_count_limit: int = 5
    max_in_flight: int = 2000
    records: dict[int, InFlight] = field(default_factory=dict)
    end_offset: int = -1
    state_epoch: int = 0
    leader_epoch: int = -1  # the topic partition's leader epoch it was loaded at (a cluster's share-partition leader)
    dlq_enabled: bool = False  # the group has a dead-letter queue topic (and share.version >= 2)
    # (offset, delivery count, reason) of records gone ARCHIVING, for the caller to write to the DLQ
    dlq_pending: list[tuple[int, int, str]] = field(default_factory=list)
    # deliveries made and redeliveries seen, for the broker trace and tests
    log: list[tuple[str, str, int, int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.end_offset < self.start_offset:
            self.end_offset = self.start_offset

    # -- acquisition -------------------------------------------------------------------------
    def fetch_offset(self) -> int:
        """Where a read should start: the first available offset of the window, else its end."""
        for off in range(self.start_offset, self.end_offset):
            r = self.records.get(off)
            if r is not None and r.state is RecordState.AVAILABLE:
                return off
        return self.end_offset

    def has_available(self) -> bool:
        return any(r.state is RecordState.AVAILABLE for r in self.records.values())

    def acquire(self, member_id: str, batches: Iterable[BatchInfo], max_records: int, lock_ms: int,
                now_ms: int, limit_offset: int, *, whole_batches: bool = False,
                batch_size: int = 0) -> list[tuple[int, int, int]]:
        """Acquire up to `max_records` offsets of `batches` (in log order) below `limit_offset`
        for `member_id`; returns (first, last, delivery count) ranges.

        KIP-1206's acquire modes: with `whole_batches` (batch_optimized, the default) the limit
        is checked between log batches, a batch begun is acquired to its end (Kafka acquires a
        50-record batch for MaxRecords 30) and the acquired ranges are cut at the first batch
        boundary after each `batch_size` records (ShareFetch's BatchSize: how many records the
        client wants per acquired batch); otherwise (record_limit) exactly `max_records` at most,
        a log batch split where the limit falls."""
        acquired: list[tuple[int, int, int]] = []
        count = 0
        run = 0  # records in the last acquired range
        deadline = now_ms + lock_ms
        for b in batches:
            boundary = True
            for off in range(max(b.base_offset, self.start_offset), b.last_offset + 1):
                if off >= limit_offset or (count >= max_records and (boundary or not whole_batches)):
                    self._advance()
                    return acquired
                r = self.records.get(off)
                if off >= self.end_offset:
                    if self.end_offset - self.start_offset >= self.max_in_flight:
                        self._advance()
                        return acquired
                    if off > self.end_offset:  # offsets compacted away or between batches: nothing to deliver
                        for gap in range(self.end_offset, off):
                            self.records[gap] = InFlight(RecordState.ARCHIVED)
                    self.end_offset = off + 1
                    if b.skip:
                        self.records[off] = InFlight(RecordState.ARCHIVED)
                        continue
                    r = self.records[off] = InFlight(RecordState.AVAILABLE)
                elif r is None or r.state is not RecordState.AVAILABLE:
                    continue
                elif b.skip:
                    r.state = RecordState.ARCHIVED
                    continue
                r.state = RecordState.ACQUIRED
                r.delivery_count += 1
                r.member_id = member_id
                r.lock_deadline_ms = deadline
                count += 1
                cut = whole_batches and batch_size > 0 and boundary and run >= batch_size
                boundary = False
                if acquired and not cut and acquired[-1][1] == off - 1 and acquired[-1][2] == r.delivery_count:
                    acquired[-1] = (acquired[-1][0], off, r.delivery_count)
                    run += 1
                else:
                    acquired.append((off, off, r.delivery_count))
                    run = 1
        self._advance()
        return acquired

    # -- acknowledgement ---------------------------------------------------------------------
    def acknowledge(self, member_id: str, first: int, last: int, types: list[int], lock_ms: int,
                    now_ms: int, *, renew_enabled: bool = True) -> int:
        """Apply one acknowledgement batch; returns an error code (INVALID_RECORD_STATE when an
        offset is not acquired by this member, or for RENEW when the group's
        share.renew.acknowledge.enable is off (KIP-1222), checked before anything changes)."""
        if last < first or not types or (len(types) != 1 and len(types) != last - first + 1):
            return ErrorCode.INVALID_REQUEST
        if not renew_enabled and AckType.RENEW in types:
            return ErrorCode.INVALID_RECORD_STATE
        for off in range(first, last + 1):
            r = self.records.get(off)
            if r is None or r.state is not RecordState.ACQUIRED or r.member_id != member_id:
                return ErrorCode.INVALID_RECORD_STATE
        for i, off in enumerate(range(first, last + 1)):
            kind = types[0] if len(types) == 1 else types[i]
            r = self.records[off]
            if kind == AckType.ACCEPT:
                self._done(r, RecordState.ACKNOWLEDGED)
            elif kind == AckType.REJECT and self.dlq_enabled:
                self._done(r, RecordState.ARCHIVING)
                self.dlq_pending.append((off, r.delivery_count, CLIENT_REJECT))
            elif kind in (AckType.REJECT, AckType.GAP):
                self._done(r, RecordState.ARCHIVED)
            elif kind == AckType.RELEASE:
                self._release(off, r)
            elif kind == AckType.RENEW:
                r.lock_deadline_ms = now_ms + lock_ms
            else:
                return ErrorCode.INVALID_REQUEST
        self._advance()
        return ErrorCode.NONE

    def release_member(self, member_id: str) -> int:
        """Every record `member_id` holds goes back (its session closed or it left the group)."""
        n = 0
        for off, r in self.records.items():
            if r.state is RecordState.ACQUIRED and r.member_id == member_id:
                self._release(off, r)
                n += 1
        self._advance()
        return n

    def expire_locks(self, now_ms: int) -> int:
        """Acquisition locks past their deadline: the records go back (Kafka's AcquisitionLockTimerTask)."""
        n = 0
        for off, r in self.records.items():
            if r.state is RecordState.ACQUIRED and r.lock_deadline_ms <= now_ms:
                self._release(off, r)
                n += 1
        if n:
            self._advance()
        return n

    def _release(self, off: int, r: InFlight) -> None:
        r.member_id = None
        if r.delivery_count < self.delivery_count_limit:
            r.state = RecordState.AVAILABLE
        elif self.dlq_enabled:
            r.state = RecordState.ARCHIVING
            self.dlq_pending.append((off, r.delivery_count, DELIVERY_COUNT_EXCEEDED))
        else:
            r.state = RecordState.ARCHIVED

    def take_dlq_pending(self) -> list[tuple[int, int, str]]:
        """The records gone ARCHIVING since the last call, for the dead-letter queue."""
        out, self.dlq_pending = self.dlq_pending, []
        return out

    def archive(self, first: int, last: int) -> None:
        """Records written to the dead-letter queue (or given up on) are done: ARCHIVING -> ARCHIVED."""
        for off in range(first, last + 1):
            r = self.records.get(off)
            if r is not None and r.state is RecordState.ARCHIVING:
                r.state = RecordState.ARCHIVED
        self._advance()

    @staticmethod
    def _done(r: InFlight, state: RecordState) -> None:
        r.state, r.member_id = state, None

    def _advance(self) -> None:
        while self.start_offset < self.end_offset:
            r = self.records.get(self.start_offset)
            if r is None or r.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                self.records.pop(self.start_offset, None)
                self.start_offset += 1
            else:
                break

    # -- offsets moved by the log or by an admin ---------------------------------------------
    def reset(self, start_offset: int) -> None:
        """AlterShareGroupOffsets / a truncated log: the window starts afresh at `start_offset`."""
        self.records.clear()
        self.start_offset = self.end_offset = start_offset
        self.state_epoch += 1

    def move_start_to(self, log_start: int) -> None:
        """Offsets below the log start (retention, DeleteRecords) are gone: archived."""
        if log_start <= self.start_offset:
            return
        for off in range(self.start_offset, min(log_start, self.end_offset)):
            self.records.pop(off, None)
        self.start_offset = log_start
        self.end_offset = max(self.end_offset, log_start)
        self._advance()

    # -- persistence -------------------------------------------------------------------------
    def state_batches(self) -> list[StateBatch]:
        """The window as runs of equal (persisted state, delivery count); ACQUIRED is saved as
        AVAILABLE (after a restart no lock survives)."""
        out: list[StateBatch] = []
        for off in range(self.start_offset, self.end_offset):
            r = self.records.get(off)
            if r is None:
                continue
            state = RecordState.AVAILABLE if r.state is RecordState.ACQUIRED else r.state
            if out and out[-1].last_offset == off - 1 and out[-1].state == state \
                    and out[-1].delivery_count == r.delivery_count:
                out[-1].last_offset = off
            else:
                out.append(StateBatch(off, off, int(state), r.delivery_count))
        return out

    def restore(self, start_offset: int, batches: Iterable[StateBatch]) -> None:
        self.records.clear()
        self.start_offset = self.end_offset = start_offset
        for b in batches:
            for off in range(max(b.first_offset, start_offset), b.last_offset + 1):
                self.records[off] = InFlight(RecordState(b.state), b.delivery_count)
                self.end_offset = max(self.end_offset, off + 1)
                if b.state == RecordState.ARCHIVING:  # caught on its way to the DLQ: sent again
                    self.dlq_pending.append((off, b.delivery_count, DELIVERY_COUNT_EXCEEDED
                                             if b.delivery_count >= self.delivery_count_limit else CLIENT_REJECT))
        self._advance()

    def in_flight(self) -> Iterator[tuple[int, InFlight]]:
        for off in range(self.start_offset, self.end_offset):
            r = self.records.get(off)
            if r is not None:
                yield off, r
