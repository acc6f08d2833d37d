"""Telling the controller which log directory holds each replica (Kafka: AssignmentsManager, KIP-858).

`assign(topic_id, partition, directory_id)` queues an assignment; a task sends the queued ones in
one AssignReplicasToDirs (at most MAX_ASSIGNMENTS_PER_REQUEST, grouped by directory and topic,
with this broker's id and epoch) while none is in flight. A newer assignment of a partition
replaces a queued one. An assignment whose partition the current image no longer places on this
broker is dropped before sending (Kafka: Assignment.valid). A request-level failure (an
unreachable controller, STALE_BROKER_EPOCH...) or a partition's error puts the assignment back,
sent again after an exponential backoff (Kafka's STANDARD_BACKOFF: 100 ms doubling to 10 s)
unless a newer one replaced it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable

from minibroker.metadata.controller_channel import ControllerChannel, ControllerUnavailable
from minibroker.metadata.image import MetadataImage
from minibroker_protocol.apis import assign_replicas_to_dirs
from minibroker_protocol.errors import ErrorCode

log = logging.getLogger("minibroker.metadata")

MAX_ASSIGNMENTS_PER_REQUEST = 2250  # Kafka: AssignReplicasToDirsRequest.MAX_ASSIGNMENTS_PER_REQUEST
BACKOFF_INITIAL_S, BACKOFF_MAX_S = 0.1, 10.0

Key = tuple[uuid.UUID, int]


class AssignmentsManager:
    def __init__(self, channel: ControllerChannel, *, broker_id: int, broker_epoch: Callable[[], int],
                 image: Callable[[], MetadataImage]):
        self.channel = channel
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.image = image
        self.ready: dict[Key, uuid.UUID] = {}
        self.in_flight: dict[Key, uuid.UUID] = {}
        self._sender: asyncio.Task[None] | None = None
        self._failures = 0

    def assign(self, topic_id: uuid.UUID, partition: int, directory_id: uuid.UUID) -> None:
        key = (topic_id, partition)
        if self.ready.get(key) == directory_id or self.in_flight.get(key) == directory_id:
            return
        self.ready[key] = directory_id
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send_all(), name="assignments-sender")

    def _valid(self, key: Key) -> bool:
        topic = self.image().topics.get(key[0])
        reg = topic.partitions.get(key[1]) if topic is not None else None
        return reg is not None and self.broker_id in reg.replicas

    async def _send_all(self) -> None:
        while self.ready:
            batch: dict[Key, uuid.UUID] = {}
            for key in list(self.ready):
                if len(batch) >= MAX_ASSIGNMENTS_PER_REQUEST:
                    break
                d = self.ready.pop(key)
                if self._valid(key):
                    batch[key] = d
            if not batch:
                continue
            self.in_flight = batch
            try:
                failed = await self._send(batch)
            finally:
                self.in_flight = {}
            for key in failed:
                self.ready.setdefault(key, batch[key])  # unless a newer assignment came
            if failed:
                self._failures += 1
                await asyncio.sleep(min(BACKOFF_MAX_S, BACKOFF_INITIAL_S * 2 ** (self._failures - 1)))
            else:
                self._failures = 0

    async def _send(self, batch: dict[Key, uuid.UUID]) -> list[Key]:
        """Send one request; the keys to send again."""
        req = assign_replicas_to_dirs.REQUEST
        by_dir: dict[uuid.UUID, dict[uuid.UUID, list[int]]] = {}
        for (tid, p), d in batch.items():
            by_dir.setdefault(d, {}).setdefault(tid, []).append(p)
        msg = req(broker_id=self.broker_id, broker_epoch=self.broker_epoch(), directories=[
            req.DirectoryData(id=d, topics=[req.TopicData(topic_id=tid, partitions=[
                req.PartitionData(partition_index=p) for p in sorted(ps)]) for tid, ps in topics.items()])
            for d, topics in by_dir.items()])
        try:
            resp = await self.channel.send(assign_replicas_to_dirs.API, msg)
        except ControllerUnavailable as e:
            log.error("%d assignments failed; global error: %s. Retrying.", len(batch), e)
            return list(batch)
        assert isinstance(resp, assign_replicas_to_dirs.AssignReplicasToDirsResponse)
        if resp.error_code != ErrorCode.NONE:
            log.error("%d assignments failed; global error: Response-level error: %s. Retrying.", len(batch),
                      ErrorCode(resp.error_code).name)
            return list(batch)
        failed = set(batch)
        for rd in resp.directories:
            for t in rd.topics:
                for rp in t.partitions:
                    key = (t.topic_id, rp.partition_index)
                    if key not in batch:
                        continue
                    if rp.error_code == ErrorCode.NONE:
                        failed.discard(key)
                        log.info("Assigned %s-%d to directory %s", key[0], key[1], rd.id)
                    else:
                        log.error("error assigning %s-%d: %s.", key[0], key[1], ErrorCode(rp.error_code).name)
        return sorted(failed, key=str)

    async def close(self) -> None:
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
        await self.channel.close()
