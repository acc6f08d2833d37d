"""Dead-letter-queue writes to partitions led by other brokers (KIP-1191, on a KRaft cluster).

Theory of operation. A share-partition leader writes the records its groups give up on to the
group's DLQ topic (share_group_dlq.py). On one broker every partition is local; on a cluster the
DLQ partition a record goes to (`source partition % DLQ partitions`) may be led by another broker,
so its append cannot go through this broker's ReplicaManager. Kafka's share-partition leader
produces DLQ records with a client of its own inside the broker; this sender does the same: a
Produce (acks=all, as Kafka's) to the leader the metadata names, one connection per broker. The
partition count and the leader come from the metadata cache (this broker's TopicRegistry holds only
the partitions it has replicas of). NOT_LEADER_OR_FOLLOWER, an unknown leader and a lost
connection are tried again after a short backoff while the metadata catches up with a move, up to
RETRY_DEADLINE_S; the last error is then the DLQ manager's (it archives regardless, as Kafka's).
"""

from __future__ import annotations

import asyncio
import logging
import time

from minibroker.metadata_cache import MetadataCache
from minibroker.network.node_connection import NodeConnection
from minibroker.replica_manager import ReplicaManager
from minibroker_protocol.apis import produce
from minibroker_protocol.errors import ErrorCode, KafkaError

log = logging.getLogger("minibroker.coordinator.share_group_dlq")

PRODUCE_VERSION = 12  # topic names (v13 names topics by id; either is Kafka's)
ACKS_ALL = -1
TIMEOUT_MS = 30_000  # Kafka: the producer's request.timeout.ms
RETRY_BACKOFF_S = 0.2
RETRY_DEADLINE_S = 30.0
RETRIABLE = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
                       ErrorCode.NETWORK_EXCEPTION, ErrorCode.REQUEST_TIMED_OUT,
                       ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})


class DLQSender:
    """Produces DLQ batches to the partitions this broker does not lead."""

    def __init__(self, metadata_cache: MetadataCache, replica_manager: ReplicaManager) -> None:
        self.metadata_cache = metadata_cache
        self.replica_manager = replica_manager
        self._connections: dict[int, NodeConnection] = {}

    def partition_count(self, topic: str) -> int | None:
        t = self.metadata_cache.topic(topic)
        return t.num_partitions if t is not None and t.num_partitions else None

    def is_local_leader(self, topic: str, partition: int) -> bool:
        part = self.replica_manager.get_partition(topic, partition)
        return part is not None and part.leader_id == self.replica_manager.node_id

    async def produce(self, topic: str, partition: int, batch: bytes) -> None:
        """Append `batch` on the partition's leader with acks=all; raises KafkaError."""
        deadline = time.monotonic() + RETRY_DEADLINE_S
        while True:
            code = await self._produce_once(topic, partition, batch)
            if code == ErrorCode.NONE:
                return
            if code not in RETRIABLE or time.monotonic() + RETRY_BACKOFF_S > deadline:
                raise KafkaError(code, f"DLQ produce to {topic}-{partition} failed: {ErrorCode(code).name}")
            await asyncio.sleep(RETRY_BACKOFF_S)

    async def _produce_once(self, topic: str, partition: int, batch: bytes) -> int:
        image = self.metadata_cache.partition(topic, partition)
        if image is None or image.leader_id < 0:
            return ErrorCode.LEADER_NOT_AVAILABLE
        leader = self.replica_manager.brokers.get(image.leader_id)
        if leader is None:
            return ErrorCode.LEADER_NOT_AVAILABLE
        P = produce.REQUEST
        req = P(transactional_id=None, acks=ACKS_ALL, timeout_ms=TIMEOUT_MS, topic_data=[P.TopicProduceData(
            name=topic, partition_data=[P.PartitionProduceData(index=partition, records=batch)])])
        try:
            conn = await self._connection(leader.node_id, leader.host, leader.port)
            resp = await asyncio.wait_for(conn.request(produce.API, PRODUCE_VERSION, req), TIMEOUT_MS / 1000 + 5)
        except (OSError, EOFError, ConnectionError, TimeoutError, KafkaError) as e:
            log.info("DLQ produce to %s-%d on broker %d failed: %s", topic, partition, leader.node_id, e)
            await self._drop(leader.node_id)
            return ErrorCode.NETWORK_EXCEPTION
        assert isinstance(resp, produce.ProduceResponse)
        for t in resp.responses:
            for p in t.partition_responses:
                return int(p.error_code)
        return ErrorCode.UNKNOWN_SERVER_ERROR

    async def _connection(self, node_id: int, host: str, port: int) -> NodeConnection:
        conn = self._connections.get(node_id)
        if conn is not None and conn.connected and (conn.host, conn.port) == (host, port):
            return conn
        if conn is not None:
            await conn.close()
        conn = self._connections[node_id] = NodeConnection(
            host, port, f"broker-{self.replica_manager.node_id}-share-group-dlq")
        await asyncio.ensure_future(conn.connect())  # its own task: asyncio.timeout needs one
        return conn

    async def _drop(self, node_id: int) -> None:
        conn = self._connections.pop(node_id, None)
        if conn is not None:
            await conn.close()

    async def close(self) -> None:
        for node_id in list(self._connections):
            await self._drop(node_id)
