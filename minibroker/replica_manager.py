"""Appends to partitions and the fetches waiting for them (Kafka: ReplicaManager + DelayedFetch).

Theory of operation: every write to a partition log — a client's Produce, a coordinator's
record in `__consumer_offsets` or `__transaction_state`, a transaction marker — goes through
`ReplicaManager.append`, which appends as leader, applies the topic's flush policy
(`flush.messages` / `flush.ms`; page cache otherwise) and then wakes the long-polling fetches
parked on that partition. On a single node the high watermark is the log end offset, so a
record is readable by fetches as soon as this returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING

from minibroker.metrics import BrokerMetrics
from storage.append_origin import AppendOrigin

if TYPE_CHECKING:  # storage.log is imported by the first log opened, not at start (issue 22)
    from storage.log import Log, LogAppendInfo
    from storage.log_validator import ValidatedRecords

_NEVER = 1 << 62  # flush.messages / flush.ms at Kafka's default (Long.MAX_VALUE): page cache only

TopicPartition = tuple[str, int]


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


class ReplicaManager:
    """The one place that appends to a partition, flushes per policy and wakes fetch waiters."""

    def __init__(self, metrics: BrokerMetrics) -> None:
        self.fetch_waiters = FetchWaiters()
        self.metrics = metrics  # bytes and messages in, counted where Kafka counts them (appendToLocalLog)

    def append(self, lg: Log, records: bytes | bytearray | memoryview | ValidatedRecords, *,
               origin: str = AppendOrigin.CLIENT) -> LogAppendInfo:
        """Append on the loop; a due flush (flush.messages / flush.ms) is done here too (the
        coordinators' records are small and their callers are synchronous)."""
        info = lg.append_as_leader(records, origin=origin)
        if not info.duplicate:
            self.metrics.appended(lg.topic, info.valid_bytes, info.num_records)
        lg.maybe_flush()
        self.fetch_waiters.notify((lg.topic, lg.partition))
        return info

    async def append_async(self, lg: Log, records: bytes | bytearray | memoryview | ValidatedRecords, *,
                           origin: str = AppendOrigin.CLIENT) -> LogAppendInfo:
        """Append for a Produce: a topic with a flush policy fsyncs off the loop before the
        answer (and before fetches see the records); the default policy costs no executor hop."""
        info = lg.append_as_leader(records, origin=origin)
        if not info.duplicate:
            self.metrics.appended(lg.topic, info.valid_bytes, info.num_records)
        config = lg.config
        if config.flush_messages < _NEVER or config.flush_ms < _NEVER:
            await asyncio.get_running_loop().run_in_executor(None, lg.maybe_flush)
        self.fetch_waiters.notify((lg.topic, lg.partition))
        return info

    def wake(self, topic: str, partition: int) -> None:
        """Wake fetches parked on a partition whose state changed without an append (a deleted
        topic, a log truncated by DeleteRecords, a transaction marker moving the LSO)."""
        self.fetch_waiters.notify((topic, partition))

    async def wait_for_data(self, keys: Iterable[TopicPartition], timeout_s: float) -> None:
        await self.fetch_waiters.wait(keys, timeout_s)
