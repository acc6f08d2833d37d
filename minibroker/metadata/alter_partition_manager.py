"""A partition leader's ISR proposals, sent to the controller (Kafka: DefaultAlterPartitionManager, KIP-497).

`submit(topic_id, partition, proposal)` queues the leader's proposal and returns a future of
what the controller committed. Proposals go in batches: one AlterPartition (v3 when the controller
serves it: each ISR member with the broker epoch the leader saw, KIP-903) carries every proposal
queued while the previous request was in flight, with this broker's id and epoch. Each partition's
answer completes its future: its new leadership state, or the KafkaError the controller answered
for it (INVALID_UPDATE_VERSION, FENCED_LEADER_EPOCH, INELIGIBLE_REPLICA, NOT_LEADER_OR_FOLLOWER...).
A request-level error (STALE_BROKER_EPOCH, an unreachable controller) fails the whole batch; the
leader proposes again from its state. A second proposal for a partition already in flight is refused
with OPERATION_NOT_ATTEMPTED, as Kafka's.

The proposal type is the replication side's `LeaderAndIsr` (minibroker.replica).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable

from minibroker.metadata.controller_channel import ControllerChannel, ControllerUnavailable
from minibroker.replica import LeaderAndIsr
from minibroker_protocol.apis import alter_partition
from minibroker_protocol.errors import ErrorCode, KafkaError

log = logging.getLogger("minibroker.metadata")


Key = tuple[uuid.UUID, int]


class ControllerAlterPartitionManager:
    def __init__(self, channel: ControllerChannel, *, broker_id: int, broker_epoch: Callable[[], int]):
        self.channel = channel
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self._pending: dict[Key, tuple[LeaderAndIsr, asyncio.Future[LeaderAndIsr]]] = {}
        self._in_flight: set[Key] = set()
        self._sender: asyncio.Task[None] | None = None

    def submit(self, topic_id: uuid.UUID, partition: int, leader_and_isr: LeaderAndIsr) -> asyncio.Future[LeaderAndIsr]:
        future: asyncio.Future[LeaderAndIsr] = asyncio.get_running_loop().create_future()
        key = (topic_id, partition)
        if key in self._pending or key in self._in_flight:
            future.set_exception(KafkaError(ErrorCode.OPERATION_NOT_ATTEMPTED,
                                            f"An AlterPartition request for {topic_id}-{partition} is in flight"))
            return future
        self._pending[key] = (leader_and_isr, future)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send_batches(), name="alter-partition-sender")
        return future

    async def _send_batches(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, {}
            self._in_flight = set(batch)
            try:
                await self._send(batch)
            finally:
                self._in_flight = set()

    async def _send(self, batch: dict[Key, tuple[LeaderAndIsr, asyncio.Future[LeaderAndIsr]]]) -> None:
        req = alter_partition.REQUEST
        topics: dict[uuid.UUID, list[alter_partition.AlterPartitionRequest.PartitionData]] = {}
        for (tid, p), (proposal, _) in batch.items():
            topics.setdefault(tid, []).append(req.PartitionData(
                partition_index=p, leader_epoch=proposal.leader_epoch, partition_epoch=proposal.partition_epoch,
                leader_recovery_state=proposal.leader_recovery_state, new_isr=list(proposal.isr),
                new_isr_with_epochs=[req.BrokerState(broker_id=b, broker_epoch=e) for b, e in proposal.isr_with_epochs]))
        msg = req(broker_id=self.broker_id, broker_epoch=self.broker_epoch(),
                  topics=[req.TopicData(topic_id=tid, partitions=parts) for tid, parts in topics.items()])
        try:
            resp = await self.channel.send(alter_partition.API, msg)
        except ControllerUnavailable as e:
            self._fail(batch, KafkaError(ErrorCode.REQUEST_TIMED_OUT, str(e)))
            return
        assert isinstance(resp, alter_partition.AlterPartitionResponse)
        if resp.error_code != ErrorCode.NONE:
            self._fail(batch, KafkaError(resp.error_code, "AlterPartition failed"))
            return
        answered: set[Key] = set()
        for t in resp.topics:
            for part in t.partitions:
                key = (t.topic_id, part.partition_index)
                entry = batch.get(key)
                if entry is None or entry[1].done():
                    continue
                answered.add(key)
                if part.error_code != ErrorCode.NONE:
                    entry[1].set_exception(KafkaError(part.error_code, f"AlterPartition of {key[0]}-{key[1]}"))
                else:
                    entry[1].set_result(LeaderAndIsr(part.leader_id, part.leader_epoch, tuple((b, -1) for b in part.isr),
                                                     part.partition_epoch, part.leader_recovery_state))
        self._fail({k: v for k, v in batch.items() if k not in answered},
                   KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "the controller did not answer for this partition"))

    @staticmethod
    def _fail(batch: dict[Key, tuple[LeaderAndIsr, asyncio.Future[LeaderAndIsr]]], error: KafkaError) -> None:
        for _, future in batch.values():
            if not future.done():
                future.set_exception(error)

    async def close(self) -> None:
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
        self._fail(self._pending, KafkaError(ErrorCode.REQUEST_TIMED_OUT, "closing"))
        await self.channel.close()
