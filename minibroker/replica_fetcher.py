"""A follower's fetcher of the partitions one leader broker leads (Kafka: ReplicaFetcherThread
on AbstractFetcherThread), an asyncio task instead of a thread.

Theory of operation. The task holds one connection to the leader (minibroker.network.
node_connection) and a `PartitionFetchState` per partition: the fetch offset (the log end
offset), the leader epoch it believes current. Each round sends one replica Fetch for every
partition that is not backing off: ReplicaState(replica_id, broker epoch) from v15 (replica_id
before), current_leader_epoch, last_fetched_epoch (the log's latest epoch, KIP-320/595: the
leader checks the follower's log against its own and answers a DivergingEpoch when they went
different ways), the follower's log start offset and its high watermark (v18, KIP-1166, so the
leader answers at once when the follower's HW is behind). Sessionless (epoch -1): every
partition is sent each time. The leader long-polls (replica.fetch.wait.max.ms) when it has
nothing new.

Per partition of the answer:
* records: appended as they are (`Log.append_as_follower`: batch headers checked, no record
  decoded, the leader's offsets and epochs kept), then the follower's HW = min(leader's HW, own
  LEO) (Kafka: ReplicaFetcherThread.processPartitionData);
* a DivergingEpoch (epoch E, end offset O): the truncation offset is found as Kafka's
  AbstractFetcherThread.getOffsetTruncationState does — if this log knows epoch E, truncate to
  min(O, the end of E here, LEO); if it only knows older epochs, truncate to the end of the
  largest one below E and fetch again (the leader may answer another DivergingEpoch: KIP-279's
  rounds); with no epoch at all, to min(O, LEO);
* OFFSET_OUT_OF_RANGE: the fetch offset is below the leader's log start (the log is restarted
  there, `truncate_fully_and_start_at`) or above its end (truncated to it), the leader's offsets
  asked with ListOffsets as a replica (Kafka: handleOutOfRangeError);
* NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_*: the
  partition backs off (replica.fetch.backoff.ms) until the metadata moves it elsewhere.
A broken connection backs the whole fetcher off and reconnects.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from minibroker.network.node_connection import NodeConnection
from minibroker.partition import Partition
from minibroker.quotas.replication_quota import ReplicationQuotas
from minibroker.replica import BrokerEndpoint
from minibroker_protocol.apis import fetch, list_offsets
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.schema import Message

logger = logging.getLogger("minibroker.replica_fetcher")
TopicPartition = tuple[str, int]
FINAL_EPOCH = -1  # a sessionless fetch (KIP-227)
_BACKOFF_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH,
                             ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.OFFSET_NOT_AVAILABLE})


class FetchFaultHook(Protocol):
    """A fault that cuts this follower off from its leader (minibroker.faults.network_kinds):
    given the partitions a round would fetch, the ones that still get through; it raises
    ConnectionError (a failed fetch) or waits (a fetch left unanswered) when none does."""

    async def partitions_through(self, follower: int, leader: int, ready: Mapping[TopicPartition, PartitionFetchState]
                                 ) -> Mapping[TopicPartition, PartitionFetchState]: ...


@dataclass(frozen=True, slots=True)
class FetcherConfig:
    """The follower's fetch settings, Kafka's defaults (replica.fetch.*)."""

    max_wait_ms: int = 500  # replica.fetch.wait.max.ms
    min_bytes: int = 1  # replica.fetch.min.bytes
    max_bytes: int = 10 * 1024 * 1024  # replica.fetch.response.max.bytes
    partition_max_bytes: int = 1024 * 1024  # replica.fetch.max.bytes
    backoff_ms: int = 1000  # replica.fetch.backoff.ms
    fetch_version: int = 18  # the highest Fetch version this fetcher sends


@dataclass(slots=True)
class PartitionFetchState:
    """One partition's place in the fetch (Kafka: PartitionFetchState)."""

    partition: Partition
    current_leader_epoch: int
    delayed_until: float = 0.0  # loop time before which the partition is not fetched
    last_error: int = 0
    lag: int = -1  # the leader's HW minus this replica's LEO after the last fetch; -1: unknown (KIP-73)


@dataclass(slots=True)
class _Round:
    """What one Fetch asked, to read its answer back."""

    by_key: dict[tuple[uuid.UUID | str, int], TopicPartition] = field(default_factory=dict)


class ReplicaFetcherThread:
    """Fetches for this broker, as follower, the partitions `source` leads."""

    def __init__(self, node_id: int, source: BrokerEndpoint, *, broker_epoch: Callable[[], int],
                 on_append: Callable[[Partition], None], config: FetcherConfig | None = None,
                 fault: Callable[[], FetchFaultHook | None] | None = None,
                 quotas: ReplicationQuotas | None = None) -> None:
        self.node_id = node_id
        self.quotas = quotas  # the follower throttle (KIP-73); None: never throttled
        self._fault = fault  # the fetcher manager's fault hook (None without a fault: one call per round)
        self.source = source
        self.config = config or FetcherConfig()
        self._broker_epoch = broker_epoch
        self._on_append = on_append
        self.partitions: dict[TopicPartition, PartitionFetchState] = {}
        self._changed = asyncio.Event()
        self._running = asyncio.Event()  # cleared: paused (a test's lagging follower)
        self._running.set()
        self._conn: NodeConnection | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopped = False
        self._idle = asyncio.Event()  # set between rounds
        self._idle.set()
        self.fetches = 0  # rounds answered, for tests and the console

    def __repr__(self) -> str:
        return f"ReplicaFetcherThread(leader={self.source.node_id}, partitions={sorted(self.partitions)})"

    # -- partitions (Kafka: addPartitions / removePartitions) -----------------------------------------
    def add_partitions(self, states: Mapping[TopicPartition, PartitionFetchState]) -> None:
        self.partitions.update(states)
        self._changed.set()

    def remove_partitions(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            self.partitions.pop(tp, None)
        self._changed.set()

    # -- life ------------------------------------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self.run(), name=f"ReplicaFetcherThread-{self.node_id}-from-{self.source.node_id}")

    async def shutdown(self) -> None:
        task, self._task = self._task, None
        self._stopped = True
        if task is not None:
            while not task.done():
                task.cancel()
                await asyncio.wait([task], timeout=1.0)
            if not task.cancelled() and task.exception() is not None:
                logger.warning("fetcher %d -> %d ended with %r", self.node_id, self.source.node_id, task.exception())
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    async def pause(self) -> None:
        """Stop fetching; returns once the round in flight (a long poll) is done, so nothing the
        leader writes from now on reaches this follower (tests: a follower falling behind)."""
        self._running.clear()
        await self._idle.wait()

    def resume(self) -> None:
        self._running.set()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._stopped:
            await self._running.wait()
            if not self.partitions:
                self._changed.clear()
                await self._changed.wait()
                continue
            self._idle.clear()
            try:
                await self.do_work(loop.time())
            except (TimeoutError, OSError, ConnectionError, asyncio.IncompleteReadError, KafkaError) as e:
                # KafkaError: the leader speaks no Fetch version of ours, or refused ApiVersions
                logger.info("fetcher %d -> %d: %s; reconnecting in %d ms", self.node_id, self.source.node_id, e,
                            self.config.backoff_ms)
                if self._conn is not None:
                    await self._conn.close()
                    self._conn = None
                await asyncio.sleep(self.config.backoff_ms / 1000)
            except Exception:  # a bad answer must not end the fetcher (Kafka's thread logs and goes on)
                logger.exception("fetcher %d -> %d failed; retrying in %d ms", self.node_id, self.source.node_id,
                                 self.config.backoff_ms)
                if self._conn is not None:
                    await self._conn.close()
                    self._conn = None
                await asyncio.sleep(self.config.backoff_ms / 1000)
            finally:
                self._idle.set()

    async def _connection(self) -> NodeConnection:
        conn = self._conn
        if conn is None or not conn.connected:
            conn = NodeConnection(self.source.host, self.source.port,
                                  f"broker-{self.node_id}-fetcher-0")
            await conn.connect()
            self._conn = conn
        return conn

    # -- one round (Kafka: AbstractFetcherThread.maybeFetch / processFetchRequest) ----------------------
    async def do_work(self, now: float) -> None:
        ready = {tp: st for tp, st in self.partitions.items() if st.delayed_until <= now}
        if not ready:
            wake = min(st.delayed_until for st in self.partitions.values())
            self._changed.clear()
            try:
                async with asyncio.timeout(max(0.0, wake - now)):
                    await self._changed.wait()
            except TimeoutError:
                pass
            return
        hook = self._fault() if self._fault is not None else None
        if hook is not None:
            ready = dict(await hook.partitions_through(self.node_id, self.source.node_id, ready))
            if not ready:  # all cut: the hook waited until the cut changed
                return
        if self.quotas is not None:  # Kafka: ReplicaFetcherThread.buildFetch leaves throttled partitions out
            q = self.quotas
            ready = {tp: st for tp, st in ready.items() if not q.should_follower_throttle(*tp, st.lag == 0)}
            if not ready:  # Kafka: an empty fetch backs off replica.fetch.backoff.ms
                await asyncio.sleep(self.config.backoff_ms / 1000)
                return
        conn = await self._connection()
        version = conn.version_for(fetch.API, self.config.fetch_version)
        request, round_ = self._build_fetch(ready, version)
        resp = await conn.request(fetch.API, version, request)
        self.fetches += 1
        assert isinstance(resp, fetch.FetchResponse)
        if resp.error_code:
            raise ConnectionError(f"Fetch answered {_name(resp.error_code)}")
        for topic in resp.responses:
            for pd in topic.partitions:
                tp = round_.by_key.get((topic.topic_id if version >= 13 else topic.topic, pd.partition_index))
                st = self.partitions.get(tp) if tp is not None else None
                if tp is None or st is None or st is not ready.get(tp):  # removed or replaced meanwhile
                    continue
                await self._process_partition(conn, tp, st, pd)

    def _build_fetch(self, ready: Mapping[TopicPartition, PartitionFetchState], version: int
                     ) -> tuple[fetch.FetchRequest, _Round]:
        R = fetch.REQUEST
        cfg = self.config
        by_topic: dict[str, list[fetch.FetchRequest.FetchPartition]] = {}
        ids: dict[str, uuid.UUID] = {}
        round_ = _Round()
        for (topic, p), st in ready.items():
            part = st.partition
            lg = part.log
            epoch = lg.latest_epoch
            by_topic.setdefault(topic, []).append(R.FetchPartition(
                partition=p, current_leader_epoch=st.current_leader_epoch, fetch_offset=lg.log_end_offset,
                last_fetched_epoch=-1 if epoch is None else epoch, log_start_offset=lg.log_start_offset,
                partition_max_bytes=cfg.partition_max_bytes, high_watermark=lg.high_watermark))
            ids[topic] = part.topic_id
            round_.by_key[(part.topic_id if version >= 13 else topic, p)] = (topic, p)
        req = R(replica_id=self.node_id if version < 15 else -1, max_wait_ms=cfg.max_wait_ms,
                min_bytes=cfg.min_bytes, max_bytes=cfg.max_bytes, isolation_level=0, session_id=0,
                session_epoch=FINAL_EPOCH,
                topics=[R.FetchTopic(topic=t, topic_id=ids[t], partitions=ps) for t, ps in by_topic.items()])
        if version >= 15:
            req.replica_state = R.ReplicaState(replica_id=self.node_id, replica_epoch=self._broker_epoch())
        return req, round_

    async def _process_partition(self, conn: NodeConnection, tp: TopicPartition, st: PartitionFetchState,
                                 pd: fetch.FetchResponse.PartitionData) -> None:
        part = st.partition
        lg = part.log
        err = pd.error_code
        try:
            if err == ErrorCode.NONE:
                div = pd.diverging_epoch
                if div.end_offset >= 0 or div.epoch >= 0:
                    self._truncate_on_divergence(tp, part, div.epoch, div.end_offset)
                    return
                records = pd.records
                if records is not None and len(records):
                    info = lg.append_as_follower(records)  # type: ignore[arg-type]
                    if info is not None:
                        self._on_append(part)
                    if self.quotas is not None and self.quotas.follower.is_throttled(*tp):
                        self.quotas.follower.record(len(records))
                # Kafka: ReplicaFetcherThread.processPartitionData: the follower's HW, then the
                # leader's log start offset (DeleteRecords, retention) if the HW has passed it
                lg.update_high_watermark(min(pd.high_watermark, lg.log_end_offset))
                st.lag = max(0, pd.high_watermark - lg.log_end_offset)
                if lg.log_start_offset < pd.log_start_offset <= lg.high_watermark:
                    lg.increment_log_start_offset(pd.log_start_offset, "LeaderOffsetIncremented")
                st.last_error = 0
                return
            if err == ErrorCode.OFFSET_OUT_OF_RANGE:
                await self._handle_out_of_range(conn, tp, part)
                return
        except KafkaError as e:
            logger.warning("fetcher %d: %s-%d: %s", self.node_id, tp[0], tp[1], e)
            err = e.code
        if err != st.last_error:
            logger.info("fetcher %d: %s-%d answered %s by leader %d; backing off", self.node_id, tp[0], tp[1],
                        _name(err), self.source.node_id)
        st.last_error = err
        st.delayed_until = asyncio.get_running_loop().time() + self.config.backoff_ms / 1000

    def _truncate_on_divergence(self, tp: TopicPartition, part: Partition, leader_epoch: int,
                                leader_end_offset: int) -> None:
        """Kafka: AbstractFetcherThread.truncateOnFetchResponse / getOffsetTruncationState."""
        lg = part.log
        leo = lg.log_end_offset
        if leader_epoch < 0:
            target = min(max(leader_end_offset, 0), leo)
        else:
            epoch, end = lg.end_offset_for_epoch(leader_epoch)
            if epoch < 0:  # no epoch at or below the leader's here
                target = min(leader_end_offset, leo)
            elif epoch != leader_epoch:  # only older epochs: cut to the end of ours and ask again
                target = min(end, leo)
            else:
                target = min(leader_end_offset, end, leo)
        logger.info("fetcher %d: truncating %s-%d to %d after DivergingEpoch(epoch=%d, end_offset=%d) from leader %d",
                    self.node_id, tp[0], tp[1], target, leader_epoch, leader_end_offset, self.source.node_id)
        lg.truncate_to(target)
        lg.update_high_watermark(min(lg.high_watermark, lg.log_end_offset))

    async def _handle_out_of_range(self, conn: NodeConnection, tp: TopicPartition, part: Partition) -> None:
        """Kafka: AbstractFetcherThread.handleOutOfRangeError / fetchOffsetAndTruncate."""
        lg = part.log
        leader_end = await self._leader_offset(conn, tp, part, -1)
        if leader_end < lg.log_end_offset:
            lg.truncate_to(leader_end)
            return
        leader_start = await self._leader_offset(conn, tp, part, -2)
        if lg.log_end_offset < leader_start:
            lg.truncate_fully_and_start_at(leader_start)

    async def _leader_offset(self, conn: NodeConnection, tp: TopicPartition, part: Partition, timestamp: int) -> int:
        version = conn.version_for(list_offsets.API, 9)
        R = list_offsets.REQUEST
        req = R(replica_id=self.node_id, isolation_level=0, topics=[R.ListOffsetsTopic(name=tp[0], partitions=[
            R.ListOffsetsPartition(partition_index=tp[1], current_leader_epoch=part.leader_epoch,
                                   timestamp=timestamp)])])
        resp: Message = await conn.request(list_offsets.API, version, req)
        assert isinstance(resp, list_offsets.ListOffsetsResponse)
        p = resp.topics[0].partitions[0]
        if p.error_code:
            raise KafkaError(p.error_code, f"ListOffsets of {tp[0]}-{tp[1]} from leader {self.source.node_id}")
        return p.offset


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)
