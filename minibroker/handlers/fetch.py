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

import time
import uuid
from typing import Any

from minibroker.fetch_sessions import FINAL_EPOCH, INITIAL_EPOCH, FetchSession, SessionPartition
from minibroker.handlers import authz, legacy
from minibroker.handlers.registry import RequestContext, handles
from minibroker.quotas.manager import quota_user
from minibroker.quotas.store import CONSUMER_BYTE_RATE
from minibroker.services import BrokerServices
from protocol.apis import fetch
from protocol.errors import ErrorCode, KafkaError
from protocol.schema import ZERO_UUID

READ_COMMITTED = 1
HW_NOT_SUPPORTED = (1 << 63) - 1  # v18 high_watermark default: the fetcher does not track it (KIP-1166)
EMPTY = b""  # a partition with no data gets empty records, not null, as Kafka sends
R = fetch.RESPONSE


class _Part:
    __slots__ = ("key", "fetch_offset", "max_bytes", "sp")

    def __init__(self, key: tuple[str, Any, int], fetch_offset: int, max_bytes: int,
                 sp: SessionPartition | None = None):
        self.key = key
        self.fetch_offset = fetch_offset
        self.max_bytes = max_bytes
        self.sp = sp


def _resolve_topic(services: BrokerServices, name: str | None, topic_id: uuid.UUID | None,
                   version: int) -> tuple[Any, uuid.UUID | None]:
    """(name, topic_id) for a requested topic; unknown ones keep what the client sent."""
    # the name is str | None (None for an unknown topic id): Any until the fetch rewrite keys by it
    if version >= 13:
        topic = services.topics.by_id(topic_id)
        return (topic.name if topic else None), topic_id
    topic = services.topics.get(name)
    return name, (topic.topic_id if topic else ZERO_UUID)


@handles(fetch.API, "0-18")
async def handle_fetch(ctx: RequestContext, req: fetch.FetchRequest) -> fetch.FetchResponse:
    services = ctx.services
    v = ctx.version
    cache = services.fetch_sessions
    session: FetchSession | None = None
    response_session_id = 0
    incremental = False

    # The high watermark each partition's fetcher knows (v18); -1 is "unknown", so behind any.
    known_hw: dict[tuple[str, Any, int], int] = {}

    def requested() -> list[_Part]:
        parts = []
        for t in req.topics:
            name, tid = _resolve_topic(services, t.topic, t.topic_id, v)
            for p in t.partitions:
                parts.append(_Part((name, tid, p.partition), p.fetch_offset, p.partition_max_bytes))
                if v >= 18 and p.high_watermark != HW_NOT_SUPPORTED:
                    known_hw[(name, tid, p.partition)] = p.high_watermark
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

    denied = authz.unreadable_topics(ctx, (p.key[0] for p in parts))  # READ per topic (Kafka: KafkaApis)
    parts, refused = [p for p in parts if p.key[0] not in denied], [p for p in parts if p.key[0] in denied]
    isolation = req.isolation_level
    max_bytes = req.max_bytes if v >= 3 else 0x7FFFFFFF
    if ctx.connection is not None:
        window = services.client_quotas.max_value_in_window(
            CONSUMER_BYTE_RATE, quota_user(ctx.connection.principal), ctx.client_id or "")
        if window is not None:  # KafkaApis caps a consumer's fetch at its quota's window
            max_bytes = min(max_bytes, int(window))
    deadline = time.monotonic() + max(0, req.max_wait_ms) / 1000
    while True:
        results, total = _read_all(services, parts, max_bytes, isolation, v)
        remaining = deadline - time.monotonic()
        # A fetch of no partitions is answered at once (Kafka: ReplicaManager.fetchMessages, "does
        # not require any data"): the Java consumer closes its session on close() with one, and
        # waiting out max_wait_ms there held every close() for 500 ms.
        if total >= req.min_bytes or remaining <= 0 or not parts or any(r[1] for r in results):
            break
        # KIP-1166: a fetcher behind on the high watermark is answered now (Kafka: DelayedFetch).
        if known_hw and any(data.high_watermark > known_hw.get(part.key, HW_NOT_SUPPORTED)
                            for part, _, data in results):
            break
        await services.replica_manager.wait_for_data([(k[0], k[2]) for k in (p.key for p in parts) if k[0]], remaining)

    by_topic: dict[tuple[str, Any], list[Any]] = {}
    metrics = services.metrics
    for part, err, data in results:
        if incremental and not _changed(part, err, data):
            continue
        name, tid, p = part.key
        if data.records is not EMPTY:
            metrics.fetched(name, len(data.records))  # Kafka: BytesOutPerSec, per topic
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
    return R(error_code=0, session_id=response_session_id, responses=responses)


def _changed(part: _Part, err: int, data: Any) -> bool:
    sp = part.sp
    if err or sp is None or data.records is not EMPTY:
        return True
    return (data.high_watermark, data.last_stable_offset, data.log_start_offset) != (
        sp.sent_hw, sp.sent_lso, sp.sent_log_start)


def _read_all(services: BrokerServices, parts: list[_Part], max_bytes: int, isolation: int, v: int
              ) -> tuple[list[tuple[_Part, int, Any]], int]:
    results: list[tuple[_Part, int, Any]] = []
    total = 0
    for part in parts:
        name, tid, p = part.key
        lg = services.topics.get_log(name, p) if name else None
        if lg is None:
            code = ErrorCode.UNKNOWN_TOPIC_ID if (v >= 13 and name is None) else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            results.append((part, code, R.PartitionData(partition_index=p, error_code=code, high_watermark=-1,
                                                        last_stable_offset=-1, log_start_offset=-1,
                                                        records=EMPTY)))
            continue
        limit = min(part.max_bytes, max_bytes - total)
        max_offset = lg.last_stable_offset if isolation == READ_COMMITTED else lg.high_watermark
        data = R.PartitionData(partition_index=p, error_code=0, high_watermark=lg.high_watermark,
                               last_stable_offset=lg.last_stable_offset, log_start_offset=lg.log_start_offset,
                               records=EMPTY)
        err = 0
        try:
            if v <= 3:
                _check_down_conversion(services, name, v)
            info = lg.read(part.fetch_offset, max(0, limit), max_offset=max_offset, min_one_batch=total == 0)
        except KafkaError as e:
            # Kafka answers a failed read with unknown offsets (ReplicaManager.createLogReadResult).
            err = data.error_code = e.code
            data.high_watermark = data.last_stable_offset = data.log_start_offset = -1
            data.aborted_transactions = None  # Kafka: null, not an empty list, on a failed read
        else:
            if info.region is not None and info.region.size:
                data.records = info.region
                if v <= 3:
                    try:
                        data.records = _old_format(services, name, info.region, v, part.fetch_offset)
                    except KafkaError as e:  # e.g. zstd cannot be down-converted
                        err = data.error_code = e.code
                        data.records = EMPTY
                total += len(data.records)
            if isolation == READ_COMMITTED:
                aborted = getattr(lg, "aborted_transactions", None)
                data.aborted_transactions = [
                    R.AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
                    for a in aborted(part.fetch_offset, max_offset)] if aborted else []
            else:
                data.aborted_transactions = None
        results.append((part, err, data))
    return results, total


def _check_down_conversion(services: BrokerServices, name: str, v: int) -> None:
    topic = services.topics.get(name)
    if (topic is not None and legacy.stored_magic(topic) > legacy.fetch_magic(v)
            and not topic.config.get("message.downconversion.enable", True)):
        raise KafkaError(ErrorCode.UNSUPPORTED_VERSION,
                         f"Conversion to message format {legacy.fetch_magic(v)} is disabled for {name}")


def _old_format(services: BrokerServices, name: str, region: Any, v: int, fetch_offset: int) -> Any:
    """Fetch v0-3: the region, or its bytes down-converted for a reader of an older magic."""
    topic = services.topics.get(name)
    stored = legacy.stored_magic(topic) if topic is not None else 2
    return legacy.fetch_records(region, stored=stored, version=v, fetch_offset=fetch_offset) or EMPTY
