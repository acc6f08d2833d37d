"""The leader's upkeep of a partition's ISR, a part of minibroker.partition.Partition (Kafka:
Partition.maybeExpandIsr, maybeShrinkIsr, submitAlterPartition, handleAlterPartitionUpdate,
checkEnoughReplicasReachOffset), in a module of its own to keep Partition readable.

The leader never changes the ISR itself: it proposes the new ISR with the partition epoch it
knows to the controller through the AlterPartitionManager and, until the answer comes, keeps
the proposal as `pending_isr` (Kafka: PendingExpandIsr / PendingShrinkIsr) — an expansion
already counts the new member for the high watermark, a shrink does not drop the member until
it is committed, so the HW never passes what the committed ISR has.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable

from minibroker.replica import AlterPartitionManager, LeaderAndIsr, Replica
from minibroker_protocol.errors import ErrorCode, KafkaError

logger = logging.getLogger("minibroker.partition")


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class IsrUpkeep:
    """The ISR half of a leader's Partition (mixed into it; the attributes are Partition's)."""

    __slots__ = ("partition_epoch", "pending_isr", "_alter_task")
    topic: str
    partition: int
    topic_id: uuid.UUID
    local_id: int
    leader_epoch: int
    partition_epoch: int  # Kafka: PartitionRegistration.partitionEpoch, bumped by every ISR change
    isr: tuple[int, ...]
    pending_isr: tuple[int, ...] | None  # an AlterPartition in flight: the ISR it proposes
    remote_replicas: dict[int, Replica]
    leader_epoch_start_offset: int
    replica_lag_time_max_ms: int
    min_insync_replicas: int
    alter_partition_manager: AlterPartitionManager | None
    broker_epochs: Callable[[int], int]
    _alter_task: asyncio.Task[None] | None

    # provided by Partition
    @property
    def is_leader(self) -> bool:
        raise NotImplementedError

    @property
    def high_watermark(self) -> int:
        raise NotImplementedError

    @property
    def log_end_offset(self) -> int:
        raise NotImplementedError

    def _set_isr(self, isr: tuple[int, ...]) -> None:
        raise NotImplementedError

    def maybe_increment_leader_hw(self, now_ms: int) -> bool:
        raise NotImplementedError

    def _notify(self) -> None:
        raise NotImplementedError

    def _eligible(self, broker_id: int) -> bool:
        raise NotImplementedError

    def maybe_expand_isr(self, replica: Replica, now_ms: int) -> None:
        """Propose adding a follower that reached the HW and this epoch's start (Kafka:
        Partition.maybeExpandIsr / isFollowerInSync)."""
        if self.pending_isr is not None or replica.broker_id in self.isr or not self.is_leader:
            return
        leo = replica.state.log_end_offset
        if leo >= self.high_watermark and leo >= self.leader_epoch_start_offset >= 0 \
                and self._eligible(replica.broker_id):
            self._propose(self.isr + (replica.broker_id,))

    def out_of_sync_replicas(self, now_ms: int) -> list[int]:
        """ISR members whose last caught-up time is older than replica.lag.time.max.ms (Kafka:
        Partition.getOutOfSyncReplicas)."""
        leo = self.log_end_offset
        return [b for b in self.isr if b != self.local_id and b in self.remote_replicas
                and not self.remote_replicas[b].is_caught_up(leo, now_ms, self.replica_lag_time_max_ms)]

    def maybe_shrink_isr(self, now_ms: int) -> bool:
        """Propose dropping the followers that fell behind (Kafka: Partition.maybeShrinkIsr); the
        HW keeps waiting for them until the controller committed the change."""
        if not self.is_leader or self.pending_isr is not None:
            return False
        gone = self.out_of_sync_replicas(now_ms)
        if not gone:
            return False
        logger.info("Shrinking ISR of %s-%d from %s to %s (out of sync: %s)", self.topic, self.partition,
                    self.isr, tuple(b for b in self.isr if b not in gone), gone)
        self._propose(tuple(b for b in self.isr if b not in gone))
        return True

    def _propose(self, new_isr: tuple[int, ...]) -> None:
        manager = self.alter_partition_manager
        if manager is None:
            return  # no controller to ask: the ISR stays as the metadata says
        proposal = LeaderAndIsr(self.local_id, self.leader_epoch,
                                tuple((b, self._fetch_epoch(b)) for b in new_isr), self.partition_epoch)
        self.pending_isr = new_isr
        self._alter_task = asyncio.get_running_loop().create_task(self._alter(manager, proposal))

    def _fetch_epoch(self, broker_id: int) -> int:
        r = self.remote_replicas.get(broker_id)
        if r is not None and r.state.broker_epoch is not None:
            return r.state.broker_epoch
        return self.broker_epochs(broker_id)

    async def _alter(self, manager: AlterPartitionManager, proposal: LeaderAndIsr) -> None:
        """Send the proposal and apply the answer (Kafka: Partition.handleAlterPartitionUpdate /
        handleAlterPartitionError): the committed ISR and partition epoch, unless the metadata
        already brought something newer; on an error the proposal is dropped and the next fetch
        or ISR check proposes again from the metadata's state."""
        try:
            committed = await manager.submit(self.topic_id, self.partition, proposal)
        except KafkaError as e:
            logger.info("AlterPartition of %s-%d to ISR %s failed: %s", self.topic, self.partition,
                        proposal.isr, e)
            if self.pending_isr == proposal.isr:
                self.pending_isr = None
            return
        except asyncio.CancelledError:
            raise
        except Exception:  # a broken channel must not kill the partition; the next check retries
            logger.exception("AlterPartition of %s-%d failed", self.topic, self.partition)
            if self.pending_isr == proposal.isr:
                self.pending_isr = None
            return
        if self.pending_isr == proposal.isr:
            self.pending_isr = None
        if committed.leader_epoch != self.leader_epoch or committed.partition_epoch < self.partition_epoch:
            return  # the metadata moved on meanwhile
        self.partition_epoch = committed.partition_epoch
        if committed.isr != self.isr:
            self._set_isr(committed.isr)
        self.maybe_increment_leader_hw(_wall_clock_ms())
        self._notify()  # an ISR change decides acks=all and min.insync.replicas waits

    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, int]:
        """For acks=all (Kafka: Partition.checkEnoughReplicasReachOffset): (done, error). Done
        once the HW passed the batch; then NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank
        below min.insync.replicas meanwhile. A broker that is no longer leader answers
        NOT_LEADER_OR_FOLLOWER."""
        if not self.is_leader:
            return True, ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.high_watermark >= required_offset:
            if len(self.isr) < self.min_insync_replicas:
                return True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
            return True, ErrorCode.NONE
        return False, ErrorCode.NONE
