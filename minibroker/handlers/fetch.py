"""Fetch: v0-18.

Behavior:
- Reads each requested partition from its fetch offset, bounded by the partition's max bytes and
  the request's max bytes, in whole batches; the first partition that returns data gets at least
  one whole batch even if it is larger than the limits (KIP-74). Reading from the middle of a
  batch returns the whole batch (clients skip the records before their offset).
- read_uncommitted reads up to the high watermark; read_committed up to the last stable offset.
- Long poll: when fewer than `min_bytes` are ready and `max_wait_ms` > 0, the request waits until
  an append to one of its partitions wakes it, or the wait ends (Kafka's DelayedFetch). A fetch
  of no partitions at all (a session's close, an empty session) is answered at once, as Kafka's.
- Record bytes are not read into Python: each partition's data is a `FileRegion` of one segment
  file, which the connection sends with sendfile.
- Incremental fetch sessions (KIP-227), see minibroker.fetch_sessions.
- A fetcher that says which high watermark it knows (v18, KIP-1166) and knows an older one than
  the leader's is answered at once instead of long-polling, so it learns the new high watermark
  without waiting for new data. Consumers never send it (absent means "not supported").
- Replica fetches (a follower: ReplicaState.replica_id >= 0 from v15, replica_id before) need
  CLUSTER_ACTION on the cluster when an authorizer is on (else TOPIC_AUTHORIZATION_FAILED per
  partition, as Kafka), read up to the log end offset and move the follower's state and the HW
  (minibroker.replica_manager). current_leader_epoch is checked (FENCED_LEADER_EPOCH /
  UNKNOWN_LEADER_EPOCH), last_fetched_epoch gets a DivergingEpoch when the fetcher's log went
  another way (KIP-320); a partition this broker does not lead answers NOT_LEADER_OR_FOLLOWER with
  the leader it knows and, from v16, that leader's endpoint (KIP-951).

Version notes: v4 adds isolation level and the last stable offset; v5 log start offset; v7
sessions; v11 rack id / preferred replica; v12 flexible; v13 topic ids replace names; v15 replica
state moves to a tagged field; v16 node endpoints; v17 replica directory id; v18 the fetcher's known
high watermark (tagged, KIP-1166).
v0-3 (removed in Kafka 4.0, KIP-896; kept here, issue 7): v0-1 readers get magic 0, v2-3 magic 1
(Kafka's KafkaApis rule: by the topic's stored format); newer data is down-converted in memory,
losing zero-copy (minibroker.handlers.legacy); message.downconversion.enable=false answers
UNSUPPORTED_VERSION instead. v1 throttle time; v3 the request's max bytes (KIP-74).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from minibroker.fetch_sessions import FINAL_EPOCH, INITIAL_EPOCH, FetchSession, PartitionKey, SessionPartition
from minibroker.handlers import authz, legacy
from minibroker.handlers.registry import RequestContext, handles
from minibroker.partition import LogReadResult
from minibroker.quotas.manager import quota_user
from minibroker.quotas.store import CONSUMER_BYTE_RATE
from minibroker.replica_manager import HW_NOT_SUPPORTED, FetchPartition, FetchReplica
from minibroker.services import BrokerServices
from minibroker_protocol.apis import fetch
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.schema import ZERO_UUID

if TYPE_CHECKING:
    from minibroker_storage.file_region import FileRegion

EMPTY = b""  # a partition with no data gets empty records, not null, as Kafka sends
R = fetch.RESPONSE


class _Part:
    __slots__ = ("key", "fetch_offset", "max_bytes", "sp")

    def __init__(self, key: PartitionKey, fetch_offset: int, max_bytes: int,
                 sp: SessionPartition | None = None):
        self.key = key
        self.fetch_offset = fetch_offset
        self.max_bytes = max_bytes
        self.sp = sp


def _resolve_topic(services: BrokerServices, name: str | None, topic_id: uuid.UUID | None, version: int
                   ) -> tuple[str | None, uuid.UUID | None]:
    """(name, topic_id) for a requested topic; unknown ones keep what the client sent."""
    cache = services.metadata_cache
    if version >= 13:
        return cache.topic_name(topic_id), topic_id
    return name, (cache.topic_id(name) if name is not None else None) or ZERO_UUID


@handles(fetch.API, "0-18")
async def handle_fetch(ctx: RequestContext, req: fetch.FetchRequest) -> fetch.FetchResponse:
    services = ctx.services
    v = ctx.version
    cache = services.fetch_sessions
    session: FetchSession | None = None
    response_session_id = 0
    incremental = False

    # The high watermark each partition's fetcher knows (v18); -1 is "unknown", so behind any.
    known_hw: dict[PartitionKey, int] = {}
    # (current leader epoch, last fetched epoch, log start offset) where the fetcher sent any (v9+ / v12+)
    epochs: dict[PartitionKey, tuple[int, int, int]] = {}

    def requested() -> list[_Part]:
        parts = []
        for t in req.topics:
            name, tid = _resolve_topic(services, t.topic, t.topic_id, v)
            for p in t.partitions:
                parts.append(_Part((name, tid, p.partition), p.fetch_offset, p.partition_max_bytes))
                if v >= 18 and p.high_watermark != HW_NOT_SUPPORTED:
                    known_hw[(name, tid, p.partition)] = p.high_watermark
                if v >= 9 and (p.current_leader_epoch >= 0 or (v >= 12 and p.last_fetched_epoch >= 0)
                               or (v >= 5 and p.log_start_offset >= 0)):
                    epochs[(name, tid, p.partition)] = (p.current_leader_epoch,
                                                        p.last_fetched_epoch if v >= 12 else -1, p.log_start_offset)
        return parts

    if v >= 7 and req.session_epoch != FINAL_EPOCH:
        if req.session_epoch == INITIAL_EPOCH:
            if req.session_id:
                cache.remove(req.session_id)
            session = cache.new_session()
            parts = requested()
            if session is not None:
                response_session_id = session.session_id
                for part in parts:
                    part.sp = session.partitions[part.key] = SessionPartition(part.fetch_offset, part.max_bytes)
        else:
            try:
                session = cache.get(req.session_id, req.session_epoch)
            except KafkaError as e:
                return R(error_code=e.code, session_id=0, responses=[])
            incremental = True
            response_session_id = session.session_id
            # Adds and updates first, then removals: a partition both sent and forgotten is
            # forgotten (Kafka: FetchSession.update).
            for part in requested():
                sp = session.partitions.get(part.key)
                if sp is None:
                    sp = session.partitions[part.key] = SessionPartition(part.fetch_offset, part.max_bytes)
                else:
                    sp.fetch_offset, sp.max_bytes = part.fetch_offset, part.max_bytes
            for t in req.forgotten_topics_data:
                name, tid = _resolve_topic(services, t.topic, t.topic_id, v)
                for p in t.partitions:
                    session.partitions.pop((name, tid, p), None)
            parts = [_Part(k, sp.fetch_offset, sp.max_bytes, sp) for k, sp in session.partitions.items()]
            session.epoch += 1
    else:
        if v >= 7 and req.session_id:
            cache.remove(req.session_id)
        parts = requested()

    replica = _replica(req, v)
    if replica is not None:  # a follower: CLUSTER_ACTION instead of READ per topic (Kafka: KafkaApis)
        denied = ({p.key[0] for p in parts if p.key[0] is not None}
                  if authz.cluster_denied(ctx, authz.Op.CLUSTER_ACTION) else set())
    else:
        denied = authz.unreadable_topics(ctx, (p.key[0] for p in parts))  # READ per topic (Kafka: KafkaApis)
    parts, refused = [p for p in parts if p.key[0] not in denied], [p for p in parts if p.key[0] in denied]
    isolation = req.isolation_level
    max_bytes = req.max_bytes if v >= 3 else 0x7FFFFFFF
    if ctx.connection is not None and replica is None:  # followers are not consumers (replication quotas are not here)
        window = services.client_quotas.max_value_in_window(
            CONSUMER_BYTE_RATE, quota_user(ctx.connection.principal), ctx.client_id or "")
        if window is not None:  # KafkaApis caps a consumer's fetch at its quota's window
            max_bytes = min(max_bytes, int(window))
    # the reads, and the DelayedFetch wait, in the ReplicaManager (Kafka: fetchMessages)
    fetches = [_fetch_partition(services, part, v, known_hw) for part in parts]
    if epochs:
        for fp, part in zip(fetches, parts, strict=True):
            fp.current_leader_epoch, fp.last_fetched_epoch, fp.log_start_offset = epochs.get(part.key, (-1, -1, -1))
    reads = await services.replica_manager.fetch_messages(
        fetches, max_bytes=max_bytes, min_bytes=req.min_bytes, max_wait_ms=req.max_wait_ms, isolation_level=isolation,
        replica=replica)
    results = [(part, _partition_data(services, part, read, v)) for part, read in zip(parts, reads, strict=True)]
    leaders: set[int] = set()

    by_topic: dict[tuple[str | None, uuid.UUID | None], list[fetch.FetchResponse.PartitionData]] = {}
    metrics = services.metrics
    for part, data in results:
        if incremental and not _changed(part, data.error_code, data):
            continue
        name, tid, p = part.key
        records = data.records  # never None here: _partition_data sets EMPTY, a region or bytes
        if records is not EMPTY and records is not None and name is not None and replica is None:
            metrics.fetched(name, len(records))  # Kafka: BytesOutPerSec, per topic, without replication
        if data.error_code in _LEADER_ERRORS and v >= 12:
            leader = services.replica_manager.leader_of(name, p)
            if leader is not None:  # KIP-951 (Kafka sends CurrentLeader from v12, endpoints from v16)
                data.current_leader = R.LeaderIdAndEpoch(leader_id=leader[0], leader_epoch=leader[1])
                leaders.add(leader[0])
        by_topic.setdefault((name, tid), []).append(data)
        if part.sp is not None:
            part.sp.sent_hw, part.sp.sent_lso, part.sp.sent_log_start = (
                data.high_watermark, data.last_stable_offset, data.log_start_offset)
    for part in refused:
        by_topic.setdefault(part.key[:2], []).append(R.PartitionData(
            partition_index=part.key[2], error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, high_watermark=-1,
            last_stable_offset=-1, log_start_offset=-1, records=EMPTY))
    responses = [R.FetchableTopicResponse(topic=name or "", topic_id=tid or ZERO_UUID, partitions=plist)
                 for (name, tid), plist in by_topic.items()]
    resp = R(error_code=0, session_id=response_session_id, responses=responses)
    if leaders and v >= 16:
        brokers = services.replica_manager.brokers
        resp.node_endpoints = [R.NodeEndpoint(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                               for n in sorted(leaders) if (b := brokers.get(n)) is not None]
    return resp


_LEADER_ERRORS = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)


def _replica(req: fetch.FetchRequest, v: int) -> FetchReplica | None:
    """The follower a replica fetch comes from (ReplicaState from v15, replica_id before)."""
    if v >= 15:
        state = req.replica_state
        return FetchReplica(state.replica_id, state.replica_epoch) if state.replica_id >= 0 else None
    return FetchReplica(req.replica_id) if req.replica_id >= 0 else None


def _changed(part: _Part, err: int, data: fetch.FetchResponse.PartitionData) -> bool:
    sp = part.sp
    if err or sp is None or data.records is not EMPTY or data.diverging_epoch.end_offset >= 0:
        return True
    return (data.high_watermark, data.last_stable_offset, data.log_start_offset) != (
        sp.sent_hw, sp.sent_lso, sp.sent_log_start)


def _fetch_partition(services: BrokerServices, part: _Part, v: int, known_hw: dict[PartitionKey, int]
                     ) -> FetchPartition:
    name, _, p = part.key
    fp = FetchPartition(name, p, part.fetch_offset, part.max_bytes,
                        known_hw.get(part.key, HW_NOT_SUPPORTED) if known_hw else HW_NOT_SUPPORTED)
    if name is None:
        fp.error = ErrorCode.UNKNOWN_TOPIC_ID if v >= 13 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    elif v <= 3 and services.replica_manager.get_partition(name, p) is not None:
        try:
            _check_down_conversion(services, name, v)
        except KafkaError as e:
            fp.error = e.code
    return fp


def _partition_data(services: BrokerServices, part: _Part, read: LogReadResult, v: int
                    ) -> fetch.FetchResponse.PartitionData:
    """The wire form of one partition's read; v0-3 readers get the records down-converted."""
    name, _, p = part.key
    data = R.PartitionData(partition_index=p, error_code=read.error, high_watermark=read.high_watermark,
                           last_stable_offset=read.last_stable_offset, log_start_offset=read.log_start_offset,
                           records=EMPTY)
    if read.diverging_epoch is not None:
        data.diverging_epoch = R.EpochEndOffset(epoch=read.diverging_epoch[0], end_offset=read.diverging_epoch[1])
    if read.error:
        # Kafka: unknown offsets and null aborted transactions on a failed read (createLogReadResult);
        # a partition that is not here was never read: its aborted transactions stay the empty list
        if read.error not in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID):
            data.aborted_transactions = None
        return data
    region = read.records
    if region is not None:
        data.records = region
        if v <= 3 and name is not None:
            try:
                data.records = _old_format(services, name, region, v, part.fetch_offset, part.max_bytes)
            except KafkaError as e:  # e.g. zstd cannot be down-converted
                data.error_code = e.code
                data.records = EMPTY
    aborted = read.aborted_transactions
    data.aborted_transactions = None if aborted is None else [
        R.AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset) for a in aborted]
    return data


def _check_down_conversion(services: BrokerServices, name: str, v: int) -> None:
    topic = services.metadata_cache.topic(name)
    if (topic is not None and legacy.stored_magic(topic) > legacy.fetch_magic(v)
            and not topic.config.get("message.downconversion.enable", True)):
        raise KafkaError(ErrorCode.UNSUPPORTED_VERSION,
                         f"Conversion to message format {legacy.fetch_magic(v)} is disabled for {name}")


def _old_format(services: BrokerServices, name: str, region: FileRegion, v: int, fetch_offset: int,
                max_bytes: int) -> FileRegion | bytes:
    """Fetch v0-3: the region, or its bytes down-converted for a reader of an older magic."""
    topic = services.metadata_cache.topic(name)
    stored = legacy.stored_magic(topic) if topic is not None else 2
    return legacy.fetch_records(region, stored=stored, version=v, fetch_offset=fetch_offset,
                                max_bytes=max_bytes) or EMPTY
