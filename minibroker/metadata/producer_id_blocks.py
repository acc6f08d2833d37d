"""A KRaft broker's producer id blocks, from the controller (Kafka: RPCProducerIdManager, KIP-730).

The controller grants blocks of ids (AllocateProducerIds with this broker's id and epoch) and
records each in the metadata log, so no two brokers and no two runs hand out the same id. The
broker asks for a block in the background: one as soon as it is registered, the next when the
current one is consumed (`ProducerIdManager.block_source` calls this object when it needs a block).
While no block is ready the call raises COORDINATOR_LOAD_IN_PROGRESS, which InitProducerId answers
and clients retry, as Kafka's broker does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from minibroker.metadata.controller_channel import ControllerChannel, ControllerUnavailable
from minibroker_protocol.apis import allocate_producer_ids
from minibroker_protocol.errors import ErrorCode, KafkaError

log = logging.getLogger("minibroker.metadata")
RETRY_BACKOFF_S = 0.1


class ControllerProducerIdBlocks:
    def __init__(self, channel: ControllerChannel, *, broker_id: int, broker_epoch: Callable[[], int]):
        self.channel = channel
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self._ready: tuple[int, int] | None = None
        self._fetching: asyncio.Task[None] | None = None

    def prefetch(self) -> None:
        """Ask the controller for the next block unless one is ready or on its way."""
        if self._ready is None and (self._fetching is None or self._fetching.done()):
            self._fetching = asyncio.get_running_loop().create_task(self._fetch(), name="producer-id-block")

    def __call__(self) -> tuple[int, int]:
        block, self._ready = self._ready, None
        self.prefetch()  # the one after this
        if block is None:
            raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "Producer id block not yet available")
        return block

    async def _fetch(self) -> None:
        while self._ready is None:
            epoch = self.broker_epoch()
            if epoch >= 0:
                try:
                    resp = await self.channel.send(allocate_producer_ids.API, allocate_producer_ids.REQUEST(
                        broker_id=self.broker_id, broker_epoch=epoch))
                except ControllerUnavailable as e:
                    log.info("AllocateProducerIds failed: %s", e)
                else:
                    assert isinstance(resp, allocate_producer_ids.AllocateProducerIdsResponse)
                    if resp.error_code == ErrorCode.NONE and resp.producer_id_len > 0:
                        self._ready = (resp.producer_id_start, resp.producer_id_start + resp.producer_id_len - 1)
                        return
                    log.info("AllocateProducerIds answered %s", ErrorCode(resp.error_code).name)
            await asyncio.sleep(RETRY_BACKOFF_S)

    async def close(self) -> None:
        if self._fetching is not None:
            self._fetching.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._fetching
        await self.channel.close()
