"""The produce purgatory: a Produce with acks=all waits here until its records are replicated
(Kafka: DelayedProduce, with ProducePartitionStatus as one partition's outcome).

Theory of operation: the ReplicaManager appends every partition of the request first, then hands
the results whose high watermark has not passed their records yet to `wait_for_replication`. It
re-checks them each time one of their partitions' HW or ISR moves (the ReplicaManager's produce
waiters are woken by the Partition's listener), as Kafka's purgatory re-checks on a HW increment,
until every one is done or the request's timeout ends.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from minibroker_protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:  # minibroker_storage.log is imported by the first log opened, not at start (issue 22)
    from minibroker.partition import Partition
    from minibroker_storage.log import LogAppendInfo

TopicPartition = tuple[str, int]


@dataclass(slots=True)
class ProducePartitionResult:
    """One Produce partition's outcome (Kafka: ProducePartitionResponse before it is encoded):
    the append's info, or the error to answer with the log start offset Kafka reports."""

    info: LogAppendInfo | None
    error: KafkaError | None
    log_start_offset: int
    current_leader: tuple[int, int] | None = None  # (leader id, epoch) with NOT_LEADER_OR_FOLLOWER (KIP-951)
    waiting_on: Partition | None = None  # acks=all: the partition whose HW must pass the records


async def wait_for_replication(pending: list[ProducePartitionResult], timeout_ms: int,
                               current: Callable[[TopicPartition], Partition | None],
                               wait: Callable[[list[TopicPartition], float], Awaitable[None]]) -> None:
    """Until the HW of every partition passed its batch, then the ISR is checked against
    min.insync.replicas (Kafka: Partition.checkEnoughReplicasReachOffset); what is left at the
    timeout gets REQUEST_TIMED_OUT. A partition that left this broker meanwhile (`current` no
    longer gives it) answers NOT_LEADER_OR_FOLLOWER. `wait` parks until one of the partitions
    changes or the time given passes."""
    deadline = time.monotonic() + max(0, timeout_ms) / 1000
    while pending:
        left = []
        for r in pending:
            part = r.waiting_on
            assert r.info is not None and part is not None
            if current((part.topic, part.partition)) is not part:
                done, error = True, int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            else:
                done, error = part.check_enough_replicas_reach_offset(r.info.last_offset + 1)
            if not done:
                left.append(r)
                continue
            r.waiting_on = None
            if error:
                r.error = KafkaError(error)
                r.info = None
        pending = left
        remaining = deadline - time.monotonic()
        if not pending:
            return
        if remaining <= 0:
            for r in pending:
                r.error = KafkaError(ErrorCode.REQUEST_TIMED_OUT)
                r.info = None
                r.waiting_on = None
            return
        await wait([(r.waiting_on.topic, r.waiting_on.partition) for r in pending if r.waiting_on is not None],
                   remaining)
