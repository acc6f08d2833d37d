"""Markers for partitions led by other brokers, sent to their leaders with WriteTxnMarkers (Kafka:
TransactionMarkerChannelManager's per-broker queues over its InterBrokerSendThread).

Theory of operation. On a cluster the transaction coordinator writes a decided transaction's
markers itself only where it leads the partition; every other partition's leader gets a
WriteTxnMarkers request (v1, CLUSTER_ACTION) with the producer id, epoch, result and coordinator
epoch, and appends the marker as its leader (minibroker.handlers.txn_markers). The leader is read
from the metadata (the MetadataCache the KRaft publisher keeps, each broker's inter-broker
endpoint from the ReplicaManager's brokers). A partition answered NOT_LEADER_OR_FOLLOWER, or a
broker that cannot be reached, is sent again after a short backoff at the leader the metadata
names then (Kafka: retried after a metadata update); one connection per broker, opened on first
use and dropped when it fails.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping

from minibroker.metadata_cache import MetadataCache
from minibroker.network.node_connection import NodeConnection
from minibroker.replica_manager import ReplicaManager
from minibroker_protocol.apis import write_txn_markers
from minibroker_protocol.errors import ErrorCode, KafkaError

log = logging.getLogger("minibroker.coordinator.transaction")

TopicPartition = tuple[str, int]


class TxnMarkerSender:
    """WriteTxnMarkers to other brokers, one connection per broker."""

    def __init__(self, node_id: int, metadata_cache: MetadataCache, replica_manager: ReplicaManager) -> None:
        self.node_id = node_id
        self.metadata_cache = metadata_cache
        self.replica_manager = replica_manager
        self._connections: dict[int, NodeConnection] = {}
        self._locks: dict[int, asyncio.Lock] = {}  # one request at a time per connection

    def leader(self, topic: str, partition: int) -> int:
        """The partition's leader as the metadata says (a replica here knows it too); -1 if none."""
        part = self.replica_manager.get_partition(topic, partition)
        if part is not None and part.from_metadata:
            return part.leader_id
        image = self.metadata_cache.topic(topic)
        p = image.partitions.get(partition) if image is not None else None
        return p.leader_id if p is not None else -1

    def is_cluster(self) -> bool:
        return bool(self.replica_manager.brokers)

    async def send(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                   partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Send the marker for `partitions` to their leaders: the error of each (NONE when written;
        NOT_LEADER_OR_FOLLOWER when there is no leader or it moved; NETWORK_EXCEPTION when the
        leader could not be reached)."""
        by_leader: dict[int, list[TopicPartition]] = {}
        out: dict[TopicPartition, int] = {}
        for tp in partitions:
            leader = self.leader(*tp)
            if leader < 0:
                out[tp] = ErrorCode.NOT_LEADER_OR_FOLLOWER
            else:
                by_leader.setdefault(leader, []).append(tp)
        for leader, tps in sorted(by_leader.items()):
            out.update(await self._send_to(leader, producer_id, producer_epoch, commit, coordinator_epoch, tps))
        return out

    async def _send_to(self, node: int, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                       tps: list[TopicPartition]) -> Mapping[TopicPartition, int]:
        endpoint = self.replica_manager.brokers.get(node)
        if endpoint is None or endpoint.fenced:
            return dict.fromkeys(tps, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        by_topic: dict[str, list[int]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(p)
        W = write_txn_markers.REQUEST
        req = W(markers=[W.WritableTxnMarker(
            producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=commit,
            coordinator_epoch=coordinator_epoch,
            topics=[W.WritableTxnMarkerTopic(name=t, partition_indexes=ps) for t, ps in sorted(by_topic.items())])])
        async with self._locks.setdefault(node, asyncio.Lock()):
            return await self._request(node, endpoint.host, endpoint.port, req, tps)

    async def _request(self, node: int, host: str, port: int, req: write_txn_markers.WriteTxnMarkersRequest,
                       tps: list[TopicPartition]) -> Mapping[TopicPartition, int]:
        conn = self._connections.get(node)
        try:
            if conn is None or (conn.host, conn.port) != (host, port) or not conn.connected:
                if conn is not None:
                    await conn.close()
                conn = self._connections[node] = NodeConnection(host, port,
                                                                f"broker-{self.node_id}-txn-marker-sender")
                await asyncio.ensure_future(conn.connect())  # its own task: asyncio.timeout needs one
            resp = await conn.request(write_txn_markers.API, 1, req)
            assert isinstance(resp, write_txn_markers.WriteTxnMarkersResponse)
        except (OSError, EOFError, ConnectionError, TimeoutError, KafkaError) as e:
            log.info("WriteTxnMarkers to broker %d failed: %s", node, e)
            dropped = self._connections.pop(node, None)
            if dropped is not None:
                await dropped.close()
            return dict.fromkeys(tps, ErrorCode.NETWORK_EXCEPTION)
        out: dict[TopicPartition, int] = {}
        for m in resp.markers:
            for t in m.topics:
                for p in t.partitions:
                    out[(t.name, p.partition_index)] = p.error_code
        return {tp: out.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR) for tp in tps}

    async def close(self) -> None:
        for conn in self._connections.values():
            await conn.close()
        self._connections = {}
