"""Where a share-partition leader keeps its delivery state (KIP-932; Kafka's Persister,
DefaultStatePersister and PersisterStateManager).

Theory of operation. A share partition (minibroker.coordinator.share.share_partition) lives on the
leader of its topic partition; its state lives with the share coordinator, the leader of the
`__share_group_state` partition of the key "group:topicId:partition". On one broker both are this
process, and `LocalPersister` writes the share coordinator's shard directly (what minibroker always
did). On a KRaft cluster `DefaultStatePersister` sends the share coordinator's inter-broker APIs:
InitializeShareGroupState when a share partition is first made, ReadShareGroupState when this
broker becomes its leader, WriteShareGroupState after every change (the start offset and the
window's state batches, with the partition's state and leader epochs so that an older leader is
fenced), DeleteShareGroupState when the group or its offsets go.

Finding the coordinator: FindCoordinator v6 with key type SHARE, asked of this broker (Kafka asks
the least loaded node; every broker answers from the same metadata), then the request to the
node it names, one connection per node. NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS and a node that cannot be reached make the persister find the
coordinator again after an exponential backoff (Kafka's PersisterStateManager.BackoffManager:
from `RETRY_BACKOFF_MS`, doubling up to `RETRY_BACKOFF_MAX_MS`), until `RETRY_DEADLINE_MS`
passes; the error is then the caller's. The local case is sent over the network too, as Kafka's
PersisterStateManager does (its NetworkClient has no short cut either): one code path.

Writes of one share partition are sent one at a time, in the order they were made (each carries
the whole window, so the last one written is the state). `write` does not wait: the share
partition's state machine is synchronous; a handler that must answer only once the state is
persisted (ShareAcknowledge, the acknowledgements of a ShareFetch) awaits `flush` of the keys it
touched, as Kafka's SharePartition completes an acknowledgement only when its write did.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from minibroker.coordinator.share.share_coordinator_shard import (
    PersistedState,
    ShareCoordinatorShard,
    ShareKey,
    coordinator_key,
)
from minibroker.coordinator.share.share_partition import StateBatch
from minibroker.network.node_connection import NodeConnection
from minibroker_protocol.apis import (
    delete_share_group_state,
    find_coordinator,
    initialize_share_group_state,
    read_share_group_state,
    read_share_group_state_summary,
    write_share_group_state,
)
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.schema import Api, Message

log = logging.getLogger("minibroker.coordinator.share_persister")

SHARE_KEY_TYPE = 2  # FindCoordinator's CoordinatorType.SHARE
RETRY_BACKOFF_MS = 100
RETRY_BACKOFF_MAX_MS = 2_000
RETRY_DEADLINE_MS = 60_000  # a killed coordinator is fenced after broker.session.timeout.ms, then re-elected
REQUEST_TIMEOUT_S = 30.0  # Kafka: the persister's request.timeout.ms
RETRIABLE = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                       ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NETWORK_EXCEPTION,
                       ErrorCode.REQUEST_TIMED_OUT})


@dataclass(frozen=True, slots=True)
class WriteState:
    """What one WriteShareGroupState carries for a share partition."""

    start_offset: int
    state_epoch: int
    leader_epoch: int
    batches: list[StateBatch]


@dataclass(frozen=True, slots=True)
class StateSummary:
    """What ReadShareGroupStateSummary answers for a share partition."""

    start_offset: int
    state_epoch: int
    leader_epoch: int
    delivery_complete_count: int  # records of the window acknowledged or archived; -1 unknown


class LocalPersister:
    """One broker: the share coordinator's shard is this process's (Kafka has no such short cut;
    a single minibroker broker always wrote its state this way)."""

    remote = False

    def __init__(self, shard: ShareCoordinatorShard) -> None:
        self.shard = shard

    def write(self, key: ShareKey, state: WriteState) -> None:
        self.shard.write(key, state.start_offset, state.state_epoch, state.batches, state.batches)

    def delete(self, key: ShareKey) -> None:
        self.shard.delete(key)

    async def flush(self, keys: Iterable[ShareKey]) -> dict[ShareKey, int]:
        return dict.fromkeys(keys, ErrorCode.NONE)

    async def close(self) -> None:
        """Nothing to close: the shard is the coordinator's."""


class DefaultStatePersister:
    """The share coordinator's APIs sent to whichever broker leads the key's state partition."""

    remote = True

    def __init__(self, node_id: int, endpoint: Callable[[], tuple[str, int] | None]) -> None:
        self.node_id = node_id
        self._endpoint = endpoint  # this broker's own listener, to ask FindCoordinator of
        self._connections: dict[tuple[str, int], NodeConnection] = {}
        self._locks: dict[tuple[str, int], asyncio.Lock] = {}  # one request at a time per connection
        # per share partition: the chain of its writes (each waits for the one before)
        self._tails: dict[ShareKey, asyncio.Task[int]] = {}

    # -- the share partition's calls --------------------------------------------------------
    def write(self, key: ShareKey, state: WriteState) -> None:
        """Queue a write behind the share partition's earlier ones."""
        before = self._tails.get(key)
        self._tails[key] = asyncio.ensure_future(self._chained(before, self._write_now(key, state)))

    def delete(self, key: ShareKey) -> None:
        before = self._tails.get(key)
        self._tails[key] = asyncio.ensure_future(self._chained(before, self._delete_now(key)))

    async def flush(self, keys: Iterable[ShareKey]) -> dict[ShareKey, int]:
        """Wait for the writes queued so far of `keys`: the error of each share partition's last."""
        out: dict[ShareKey, int] = {}
        for key in keys:
            tail = self._tails.get(key)
            out[key] = await asyncio.shield(tail) if tail is not None else ErrorCode.NONE
        return out

    async def initialize(self, key: ShareKey, start_offset: int, state_epoch: int) -> int:
        Init = initialize_share_group_state.REQUEST
        req = Init(group_id=key[0], topics=[Init.InitializeStateData(topic_id=key[1], partitions=[
            Init.PartitionData(partition=key[2], state_epoch=state_epoch, start_offset=start_offset)])])
        code, _ = await self._send(key, initialize_share_group_state.API, 0, req)
        return code

    async def read(self, key: ShareKey, leader_epoch: int) -> tuple[int, PersistedState | None]:
        """(NONE, the state), (UNKNOWN_TOPIC_OR_PARTITION, None) when the coordinator holds none,
        or another error."""
        R = read_share_group_state.REQUEST
        req = R(group_id=key[0], topics=[R.ReadStateData(topic_id=key[1], partitions=[
            R.PartitionData(partition=key[2], leader_epoch=leader_epoch)])])
        code, part = await self._send(key, read_share_group_state.API, 0, req)
        if code != ErrorCode.NONE or not isinstance(part, read_share_group_state.RESPONSE.PartitionResult):
            return code, None
        return code, PersistedState(part.start_offset, part.state_epoch, [
            StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in part.state_batches])

    async def read_summary(self, key: ShareKey) -> tuple[int, StateSummary | None]:
        """The group coordinator's look at a share partition's state (ReadShareGroupStateSummary v1,
        which fences no leader): (NONE, the summary), (UNKNOWN_TOPIC_OR_PARTITION, None) when the
        coordinator holds none, or another error."""
        R = read_share_group_state_summary.REQUEST
        req = R(group_id=key[0], topics=[R.ReadStateSummaryData(topic_id=key[1], partitions=[
            R.PartitionData(partition=key[2], leader_epoch=-1)])])
        code, part = await self._send(key, read_share_group_state_summary.API, 1, req)
        if code != ErrorCode.NONE or not isinstance(part, read_share_group_state_summary.RESPONSE.PartitionResult):
            return code, None
        return code, StateSummary(part.start_offset, part.state_epoch, part.leader_epoch,
                                  part.delivery_complete_count)

    async def delete_state(self, key: ShareKey) -> int:
        """DeleteShareGroupState of `key`, behind the writes queued before it: its error."""
        self.delete(key)
        return (await self.flush([key]))[key]

    async def close(self) -> None:
        for task in self._tails.values():
            task.cancel()
        for conn in self._connections.values():
            await conn.close()
        self._connections = {}

    # -- sending ----------------------------------------------------------------------------
    @staticmethod
    async def _chained(before: asyncio.Task[int] | None, then: Awaitable[int]) -> int:
        if before is not None:
            try:
                await before
            except Exception:
                pass
        return await then

    async def _write_now(self, key: ShareKey, state: WriteState) -> int:
        W = write_share_group_state.REQUEST
        req = W(group_id=key[0], topics=[W.WriteStateData(topic_id=key[1], partitions=[W.PartitionData(
            partition=key[2], state_epoch=state.state_epoch, leader_epoch=state.leader_epoch,
            start_offset=state.start_offset, delivery_complete_count=-1,
            state_batches=[W.StateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                        delivery_state=b.state, delivery_count=b.delivery_count)
                           for b in state.batches])])])
        code, _ = await self._send(key, write_share_group_state.API, 0, req)
        if code != ErrorCode.NONE:
            log.warning("WriteShareGroupState of %s failed: %s", coordinator_key(key), ErrorCode(code).name)
        return code

    async def _delete_now(self, key: ShareKey) -> int:
        D = delete_share_group_state.REQUEST
        req = D(group_id=key[0], topics=[D.DeleteStateData(topic_id=key[1], partitions=[
            D.PartitionData(partition=key[2])])])
        code, _ = await self._send(key, delete_share_group_state.API, 0, req)
        return code

    async def _send(self, key: ShareKey, api: Api, version: int, req: Message
                    ) -> tuple[int, Message | None]:
        """Send `req` to the key's share coordinator, finding it again on a retriable error:
        (the partition's error code, its result)."""
        deadline = time.monotonic() + RETRY_DEADLINE_MS / 1000
        backoff = RETRY_BACKOFF_MS
        while True:
            code: int = ErrorCode.COORDINATOR_NOT_AVAILABLE
            part: Message | None = None
            where = await self._find_coordinator(key)
            if where is not None:
                try:
                    resp = await self._request(where, api, version, req)
                    code, part = _partition_result(resp)
                except (OSError, EOFError, ConnectionError, TimeoutError, KafkaError) as e:
                    log.info("%s to %s:%d failed: %s", api.name, where[0], where[1], e)
                    await self._drop(where)
                    code = ErrorCode.NETWORK_EXCEPTION
            if code not in RETRIABLE or time.monotonic() + backoff / 1000 > deadline:
                return code, part
            await asyncio.sleep(backoff / 1000)
            backoff = min(backoff * 2, RETRY_BACKOFF_MAX_MS)

    async def _find_coordinator(self, key: ShareKey) -> tuple[str, int] | None:
        here = self._endpoint()
        if here is None:
            return None
        req = find_coordinator.REQUEST(key_type=SHARE_KEY_TYPE, coordinator_keys=[coordinator_key(key)])
        try:
            resp = await self._request(here, find_coordinator.API, 6, req)
        except (OSError, EOFError, ConnectionError, TimeoutError, KafkaError) as e:
            log.info("FindCoordinator failed: %s", e)
            await self._drop(here)
            return None
        assert isinstance(resp, find_coordinator.FindCoordinatorResponse)
        c = resp.coordinators[0] if resp.coordinators else None
        if c is None or c.error_code != ErrorCode.NONE or c.node_id < 0:
            return None
        return c.host, c.port

    async def _request(self, where: tuple[str, int], api: Api, version: int, req: Message) -> Message:
        async with self._locks.setdefault(where, asyncio.Lock()):
            conn = self._connections.get(where)
            if conn is None or not conn.connected:
                if conn is not None:
                    await conn.close()
                conn = self._connections[where] = NodeConnection(where[0], where[1],
                                                                 f"broker-{self.node_id}-share-persister")
                await asyncio.ensure_future(conn.connect())  # its own task: asyncio.timeout needs one
            # wait_for, not asyncio.timeout: a handler's coroutine may not run in a task of its own
            return await asyncio.wait_for(conn.request(api, version, req), REQUEST_TIMEOUT_S)

    async def _drop(self, where: tuple[str, int]) -> None:
        conn = self._connections.pop(where, None)
        if conn is not None:
            await conn.close()


def _partition_result(resp: Message) -> tuple[int, Message | None]:
    """The one partition's (error code, result) of a share-state response."""
    for result in getattr(resp, "results", []):
        for part in result.partitions:
            return part.error_code, part
    return ErrorCode.UNKNOWN_SERVER_ERROR, None
