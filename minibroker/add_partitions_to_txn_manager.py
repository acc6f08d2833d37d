"""KIP-890 verification of a transactional Produce against a transaction coordinator on another
broker (Kafka: AddPartitionsToTxnManager, asked by ReplicaManager.handleProduceAppend).

Theory of operation. Before a partition leader appends a transactional batch of a producer that
has no transaction open in that partition yet, the transaction coordinator must say that the
partition is in the producer's ongoing transaction (Produce v3-11: AddPartitionsToTxn v4+ with
verify_only) or add it (Produce v12+, transactions v2: verify_only false, KIP-890 part 2). On one
broker the coordinator is asked in place (check_transactional_produce). On a cluster the
coordinator of the transactional id is the leader of its `__transaction_state` partition; when
that is another broker, `verify` sends it one AddPartitionsToTxn (v5, CLUSTER_ACTION) for the
request's partitions before the append, and the answers are what the in-place check would have
found (`remote` in check_transactional_produce). A coordinator that cannot be reached, or no
leader, is COORDINATOR_NOT_AVAILABLE (the producer gets NOT_ENOUGH_REPLICAS and retries, as Kafka
maps it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence

from minibroker.coordinator.runtime.coordinator_store import partition_for
from minibroker.metadata_cache import MetadataCache
from minibroker.network.node_connection import NodeConnection
from minibroker.replica_manager import ReplicaManager
from minibroker_protocol.apis import add_partitions_to_txn
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records.batch import InvalidBatch, iter_batches

log = logging.getLogger("minibroker.txn_verification")

TopicPartition = tuple[str, int]
TRANSACTION_TOPIC = "__transaction_state"


def transactional_producer(records: bytes | bytearray | memoryview | None) -> tuple[int, int] | None:
    """(producer id, epoch) of the first transactional data batch in `records` (headers only)."""
    if not records:
        return None
    try:
        for view in iter_batches(records):
            if view.magic >= 2 and view.is_transactional and not view.is_control:
                return view.producer_id, view.producer_epoch
    except InvalidBatch:
        return None  # the validator answers it
    return None


class AddPartitionsToTxnManager:
    """AddPartitionsToTxn to the transaction coordinators on other brokers, one connection each."""

    def __init__(self, node_id: int, metadata_cache: MetadataCache, replica_manager: ReplicaManager) -> None:
        self.node_id = node_id
        self.metadata_cache = metadata_cache
        self.replica_manager = replica_manager
        self._connections: dict[int, NodeConnection] = {}
        self._locks: dict[int, asyncio.Lock] = {}

    def coordinator_of(self, transactional_id: str) -> int | None:
        """The broker coordinating `transactional_id` when it is another one (-1: none now);
        None when this broker answers itself (one broker, or the coordinator here)."""
        if not self.replica_manager.brokers:
            return None
        image = self.metadata_cache.topic(TRANSACTION_TOPIC)
        if image is None or not image.partitions:
            return None  # not created yet: the local coordinator answers (COORDINATOR_NOT_AVAILABLE)
        p = image.partitions.get(partition_for(transactional_id, len(image.partitions)))
        leader = p.leader_id if p is not None else -1
        return None if leader == self.node_id else leader

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: Sequence[TopicPartition], *, add: bool, coordinator: int) -> dict[TopicPartition, int]:
        """The coordinator's answer for each partition (NONE: in the transaction, or added)."""
        endpoint = self.replica_manager.brokers.get(coordinator) if coordinator >= 0 else None
        if endpoint is None or endpoint.fenced:
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        A = add_partitions_to_txn.REQUEST
        by_topic: dict[str, list[int]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append(p)
        req = A(transactions=[A.AddPartitionsToTxnTransaction(
            transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
            verify_only=not add,
            topics=[A.AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in sorted(by_topic.items())])])
        async with self._locks.setdefault(coordinator, asyncio.Lock()):
            conn = self._connections.get(coordinator)
            try:
                if conn is None or (conn.host, conn.port) != (endpoint.host, endpoint.port) or not conn.connected:
                    if conn is not None:
                        await conn.close()
                    conn = self._connections[coordinator] = NodeConnection(
                        endpoint.host, endpoint.port, f"broker-{self.node_id}-add-partitions-to-txn")
                    await asyncio.ensure_future(conn.connect())  # its own task: asyncio.timeout needs one
                resp = await conn.request(add_partitions_to_txn.API, 5, req)
                assert isinstance(resp, add_partitions_to_txn.AddPartitionsToTxnResponse)
            except (OSError, EOFError, ConnectionError, TimeoutError, KafkaError) as e:
                log.info("AddPartitionsToTxn to broker %d failed: %s", coordinator, e)
                dropped = self._connections.pop(coordinator, None)
                if dropped is not None:
                    await dropped.close()
                return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if resp.error_code:
            return dict.fromkeys(partitions, resp.error_code)
        out: dict[TopicPartition, int] = {}
        for r in resp.results_by_transaction:
            for topic_result in r.topic_results:
                for pr in topic_result.results_by_partition:
                    out[(topic_result.name, pr.partition_index)] = pr.partition_error_code
        return {tp: out.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR) for tp in partitions}

    def partitions_to_verify(self, producer: tuple[int, int], entries: Iterable[tuple[TopicPartition, object]]
                             ) -> list[TopicPartition]:
        """The partitions led here whose producer has no transaction open in them yet."""
        out = []
        for tp, _ in entries:
            part = self.replica_manager.get_partition(*tp)
            if part is not None and part.is_leader and not part.has_ongoing_transaction(*producer):
                out.append(tp)
        return out

    async def close(self) -> None:
        for conn in self._connections.values():
            await conn.close()
        self._connections = {}


async def verify_remotely(manager: AddPartitionsToTxnManager, transactional_id: str,
                          entries: Sequence[tuple[TopicPartition, bytes | bytearray | memoryview | None]],
                          request_version: int) -> dict[TopicPartition, int] | None:
    """For a transactional Produce whose coordinator is another broker: that coordinator's answer
    for each partition needing it (Produce v12+ adds the partitions, older versions verify
    them); None when this broker's own coordinator answers (check_transactional_produce)."""
    coordinator = manager.coordinator_of(transactional_id)
    if coordinator is None:
        return None
    producer = next((p for _, records in entries if (p := transactional_producer(records)) is not None), None)
    if producer is None:
        return {}
    tps = manager.partitions_to_verify(producer, entries)
    if not tps:
        return {}
    return await manager.verify(transactional_id, producer[0], producer[1], tps, add=request_version >= 12,
                                coordinator=coordinator)
