"""A broker following the metadata log (Kafka: the KRaft observer, MetadataLoader and its publishers,
BrokerMetadataPublisher).

Theory of operation. The broker fetches `__cluster_metadata-0` from the controller as an observer
(Fetch v13+ with the metadata topic id, its node id as replica id, the last fetched epoch) and
long-polls for what comes next. Each answer's batches are replayed into a MetadataDelta over the
current image; when the answer is replayed the new image is made and every publisher gets
`on_metadata_update(delta, image)` (one call per fetch answer, Kafka publishes per committed batch
or group of batches). A publisher is what the broker does with metadata: the replica manager
becoming leader or follower from `delta.local_changes(node_id)` (minibroker.replica_manager's
apply_delta, wired by the server), the metadata cache handlers read. `highest_offset` is what the
broker's heartbeats report. The log is followed from the start at every broker start (Kafka's
brokers keep a copy of it and its snapshots on disk; not yet done here). A broker behind the
controller's log start gets the latest snapshot (FetchSnapshot) as a whole new image; that delta
lists every partition as changed but no deleted topic (a publisher that must drop what the snapshot
no longer has compares the old image with the new one).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

from minibroker.metadata.controller_channel import ControllerChannel, ControllerUnavailable
from minibroker.metadata.image import MetadataDelta, MetadataImage
from minibroker.metadata.metadata_batch_loader import MetadataBatchLoader
from minibroker.raft.metadata_log import METADATA_TOPIC, METADATA_TOPIC_ID
from minibroker_protocol.apis import fetch, fetch_snapshot
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.metadata_serde import (
    MetadataBatch,
    MetadataParseError,
    decode_metadata_batch,
    read_metadata_batches,
)
from minibroker_protocol.records.v2 import DecodedBatch, decode_batches

log = logging.getLogger("minibroker.metadata")

FETCH_MAX_WAIT_MS = 500  # Kafka: controller.quorum.fetch.timeout.ms bounds it; observers poll like this
FETCH_MAX_BYTES = 8 * 1024 * 1024


class MetadataPublisher(Protocol):
    """What a broker does with each new image (Kafka: MetadataPublisher)."""

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None: ...


class MetadataLoader:
    def __init__(self, channel: ControllerChannel, *, node_id: int, cluster_id: str):
        self.channel = channel
        self.node_id, self.cluster_id = node_id, cluster_id
        self.image = MetadataImage()
        self.publishers: list[MetadataPublisher] = []
        self.batches = MetadataBatchLoader(node_id)
        self.next_offset = 0
        # an empty log's end is epoch 0 (Kafka: ReplicatedLog.endOffset()); Kafka's controller
        # refuses a Fetch whose LastFetchedEpoch is negative or above its CurrentLeaderEpoch
        # (KafkaRaftClient.handleFetchRequest: INVALID_REQUEST)
        self.last_fetched_epoch = 0
        self.high_watermark = 0
        self.leader_epoch = 0  # learned from the answers' CurrentLeader (FENCED_LEADER_EPOCH at first)
        self._task: asyncio.Task[None] | None = None
        self._running = False
        self._advanced = asyncio.Condition()
        # set once the image reached the high watermark the controller answered (Kafka: the
        # broker's initial catch-up, before it serves clients)
        self.caught_up = asyncio.Event()

    @property
    def highest_offset(self) -> int:
        """The last offset replayed (-1 before any): the broker's heartbeats report it."""
        return self.next_offset - 1

    def add_publisher(self, publisher: MetadataPublisher) -> None:
        self.publishers.append(publisher)

    def start(self) -> None:
        self._running = True
        self._task = asyncio.create_task(self._run(), name="metadata-loader")

    async def stop(self) -> None:
        self._running = False
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.channel.close()

    async def wait_for_offset(self, offset: int, timeout: float) -> bool:
        """Wait until the image includes `offset`; False on timeout."""
        async with self._advanced:
            try:
                async with asyncio.timeout(timeout):
                    await self._advanced.wait_for(lambda: self.highest_offset >= offset)
            except TimeoutError:
                return False
        return True

    async def _run(self) -> None:
        backoff = 0.05
        while self._running:
            try:
                await self.fetch_once()
                backoff = 0.05
            except ControllerUnavailable as e:
                log.info("broker %d: metadata fetch failed (%s)", self.node_id, e)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 1.0)

    async def fetch_once(self, max_wait_ms: int = FETCH_MAX_WAIT_MS) -> int:
        """One Fetch of the metadata log; the number of records replayed."""
        req = fetch.REQUEST
        msg = req(cluster_id=self.cluster_id, replica_id=self.node_id, max_wait_ms=max_wait_ms, min_bytes=1,
                  max_bytes=FETCH_MAX_BYTES, isolation_level=0, session_id=0, session_epoch=-1,
                  replica_state=req.ReplicaState(replica_id=self.node_id, replica_epoch=-1),
                  # epochs of 0 before any is known: Kafka's raft leader refuses a negative
                  # last fetched epoch, or one above the current leader epoch (INVALID_REQUEST)
                  topics=[req.FetchTopic(topic_id=METADATA_TOPIC_ID, partitions=[req.FetchPartition(
                      partition=0, current_leader_epoch=max(self.leader_epoch, 0), fetch_offset=self.next_offset,
                      last_fetched_epoch=max(self.last_fetched_epoch, 0), log_start_offset=-1,
                      partition_max_bytes=FETCH_MAX_BYTES)])],
                  forgotten_topics_data=[], rack_id="")
        resp = await self.channel.send(fetch.API, msg, timeout=max_wait_ms / 1000 + 30)
        assert isinstance(resp, fetch.FetchResponse)
        if resp.error_code != ErrorCode.NONE:
            raise ControllerUnavailable(f"metadata fetch answered {ErrorCode(resp.error_code).name}")
        (topic,) = resp.responses
        (part,) = topic.partitions
        if part.current_leader.leader_epoch >= 0:
            self.leader_epoch = part.current_leader.leader_epoch
        # the quorum's leader as this answer names it (KIP-595; its endpoint by KIP-853's NodeEndpoints):
        # every channel of this broker goes to it (minibroker.metadata.controller_nodes)
        leader = part.current_leader.leader_id
        endpoint = next(((e.host, e.port) for e in resp.node_endpoints if e.node_id == leader), None)
        self.channel.nodes.on_leader(leader, endpoint)
        if part.error_code in (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH):
            return 0  # the epoch just learned goes in the next Fetch (Kafka: an observer's first answers)
        if part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            # a voter that is not the leader: the next fetch goes where it pointed, or to the next voter
            if leader < 0 or leader == self.channel.nodes.leader_id and self.channel.nodes.target() == (
                    self.channel.host, self.channel.port):
                self.channel.nodes.on_failure((self.channel.host, self.channel.port))
            await asyncio.sleep(0.05)
            return 0
        if part.error_code != ErrorCode.NONE:
            raise ControllerUnavailable(f"metadata fetch answered {ErrorCode(part.error_code).name}")
        self.high_watermark = part.high_watermark
        if part.snapshot_id.end_offset >= 0:  # behind the leader's log start: its snapshot first
            return await self._load_snapshot(part.snapshot_id.end_offset, part.snapshot_id.epoch)
        data = part.records
        if not data:
            if self.next_offset >= self.high_watermark:
                self.caught_up.set()
            return 0
        raw = data if isinstance(data, bytes | bytearray | memoryview) else data.read_all()
        replayed, held_back = await self.replay_committed(raw)
        if held_back and not replayed:
            await asyncio.sleep(0.01)  # the voters' next fetches commit it: not a busy loop meanwhile
        return replayed

    async def replay_committed(self, raw: bytes | bytearray | memoryview) -> tuple[int, bool]:
        """Replay the batches of a Fetch answer that the high watermark covers and publish the new
        image; (records replayed, whether a batch past the high watermark was held back).

        A quorum leader sends observers what it has, committed or not (Kafka's KafkaRaftClient
        reads UNCOMMITTED for every fetcher), and a new leader may truncate what was not committed;
        so only what the high watermark covers is replayed (Kafka: the listeners' handleCommit) and
        the rest is fetched again. The loader then never holds a record a new leader drops."""
        delta = MetadataDelta(self.image)
        replayed = 0
        held_back = False
        for decoded in decode_batches(raw):
            if decoded.last_offset < self.next_offset:
                continue
            if decoded.last_offset >= self.high_watermark:
                held_back = True
                break
            batch = self._read(decoded)
            if batch is not None and not batch.is_control:
                replayed += self.batches.replay(delta, batch)
            self.next_offset = decoded.last_offset + 1
            self.last_fetched_epoch = decoded.partition_leader_epoch
        self.image = delta.apply(self.next_offset - 1, self.last_fetched_epoch)
        await self._publish(delta)
        return replayed, held_back

    async def _load_snapshot(self, end_offset: int, epoch: int) -> int:
        """FetchSnapshot the whole snapshot, slice by slice, and make it the image (Kafka: an observer
        loading a snapshot when the leader's log no longer has its fetch offset, KIP-630)."""
        req = fetch_snapshot.REQUEST
        data = bytearray()
        size = None
        while size is None or len(data) < size:
            msg = req(cluster_id=self.cluster_id, replica_id=self.node_id, max_bytes=FETCH_MAX_BYTES, topics=[
                req.TopicSnapshot(name=METADATA_TOPIC, partitions=[req.PartitionSnapshot(
                    partition=0, current_leader_epoch=self.leader_epoch, position=len(data),
                    snapshot_id=req.SnapshotId(end_offset=end_offset, epoch=epoch))])])
            resp = await self.channel.send(fetch_snapshot.API, msg)
            assert isinstance(resp, fetch_snapshot.FetchSnapshotResponse)
            (part,) = resp.topics[0].partitions if resp.error_code == ErrorCode.NONE else (None,)
            if part is None or part.error_code != ErrorCode.NONE:
                code = resp.error_code if part is None else part.error_code
                raise ControllerUnavailable(f"FetchSnapshot answered {ErrorCode(code).name}")
            chunk = part.unaligned_records
            raw = chunk if isinstance(chunk, bytes | bytearray | memoryview) else chunk.read_all()
            if not raw and part.size > len(data):
                raise ControllerUnavailable("FetchSnapshot returned no bytes")
            data += raw
            size = part.size
        delta = MetadataDelta(MetadataImage())  # a snapshot is the whole state, not a change
        self.batches.reset()
        replayed = 0
        for batch in read_metadata_batches(bytes(data)):
            if not batch.is_control:
                replayed += self.batches.replay(delta, batch)
        self.next_offset, self.last_fetched_epoch = end_offset, epoch
        self.image = delta.apply(end_offset - 1, epoch)
        await self._publish(delta)
        return replayed

    def _read(self, decoded: DecodedBatch) -> MetadataBatch | None:
        """The batch's records; None (logged) for one this broker cannot read, which is skipped:
        Kafka's MetadataLoader reports a fault and goes on with the next batch."""
        try:
            return decode_metadata_batch(decoded)
        except MetadataParseError as e:
            log.error("broker %d: metadata batch at offsets %d-%d skipped: %s", self.node_id,
                      decoded.base_offset, decoded.last_offset, e)
            return None

    async def _publish(self, delta: MetadataDelta) -> None:
        if self.next_offset >= self.high_watermark:
            self.caught_up.set()
        for p in self.publishers:
            try:
                p.on_metadata_update(delta, self.image)
            except Exception:
                log.exception("broker %d: a metadata publisher failed", self.node_id)
        async with self._advanced:
            self._advanced.notify_all()
