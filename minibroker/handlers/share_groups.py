"""Share groups (KIP-932): ShareGroupHeartbeat v1, ShareGroupDescribe v1, ShareFetch v1-2,
ShareAcknowledge v1-2, DescribeShareGroupOffsets v0-1, AlterShareGroupOffsets v0,
DeleteShareGroupOffsets v0 (Kafka 4.4's versions; v0 of the first four was the early-access
protocol, removed in 4.1).

Behavior (Kafka: KafkaApis.handleShareFetchRequest / handleShareAcknowledgeRequest, the group
coordinator's share-group paths); the state machine is minibroker.coordinator.share.share_group:
- ShareGroupHeartbeat joins (epoch 0, client-chosen member id), heartbeats, leaves (epoch -1);
  the answer carries the assignment when it changed or the request was a full one.
- ShareFetch first applies the acknowledgements it carries (each partition's outcome in
  acknowledge_error_code), then (unless v2's IsRenewAck marks it as carrying only acknowledgements,
  KIP-1222: MaxBytes, MinBytes, MaxRecords and MaxWaitMs must then be 0) acquires up to max_records records across the session's
  partitions and waits up to max_wait_ms while none is available. Every partition with records,
  an error or an acknowledgement outcome is answered; records are whole log batches, and
  `acquired_records` says which offsets of them this member holds (with their delivery counts).
- ShareAcknowledge applies acknowledgements; session epoch -1 closes the session and releases
  what the member still holds. So does closing the connection that opened the session (epoch 0).
- The share-partition start offsets (DescribeShareGroupOffsets) are the SPSO of each share
  partition; AlterShareGroupOffsets moves them (the group must be empty), DeleteShareGroupOffsets
  forgets a topic's share partitions (the group must be empty).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING

from minibroker.config import ConfigEntry, ConfigSource, ConfigType, OpType

# the share coordinator's module comes with this handler module (the first share-group request, or
# a GROUP config resource through handlers/configs.py; not at start: issue 22)
from minibroker.coordinator.share.share_group import (
    FINAL_SESSION_EPOCH,
    INITIAL_SESSION_EPOCH,
    AcquiredPartition,
)
from minibroker.coordinator.share.share_group_configs import (
    BOOLEAN_KEYS,
    GROUP_DEFAULTS,
    GROUP_KEYS,
    STRING_KEYS,
    validate_group_config,
)
from minibroker.coordinator.share.share_group_state_admin import NO_OFFSETS_TO_DELETE, ShareGroupStateAdmin
from minibroker.coordinator.share.share_group_state_admin import lag as share_lag
from minibroker.handlers import authorized_ops, authz
from minibroker.handlers.registry import Channel, RequestContext, handles
from minibroker.services import BrokerServices
from minibroker_protocol.apis import (
    alter_share_group_offsets,
    delete_share_group_offsets,
    describe_share_group_offsets,
    share_acknowledge,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
)
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.schema import ZERO_UUID

if TYPE_CHECKING:
    from minibroker.coordinator.share.share_group import ShareGroupCoordinator, ShareSession

# The share-group coordinator is built when first needed and its module imported by the functions
# that use it, not at start-up (issue 22: about 7 ms of a broker's start).

ASSIGNOR = "simple"
DEFAULT_MAX_RECORDS = 500
RECORD_LIMIT = 1  # ShareFetch's ShareAcquireMode (KIP-1206): 0 batch_optimized, 1 record_limit
RENEW = 4  # the RENEW acknowledge type (KIP-1222)


def _coord(ctx: RequestContext) -> ShareGroupCoordinator:
    return ctx.services.share_groups


_TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED


def _unreadable_ids(ctx: RequestContext, ids: Iterable[uuid.UUID]) -> set[uuid.UUID]:
    """The topic ids among `ids` whose topic the client may not READ (share consumers need READ on
    each topic they fetch or acknowledge: KafkaApis.handleShareFetchRequest)."""
    if not authz.enabled(ctx):
        return set()
    topics = ctx.services.metadata_cache
    out = set()
    for tid in set(ids):
        t = topics.topic_by_id(tid)
        if t is not None and authz.topic_denied(ctx, t.name, authz.Op.READ):
            out.add(tid)
    return out


# --------------------------------------------------------------------------- ShareGroupHeartbeat
@handles(share_group_heartbeat.API, "1")
async def handle_share_group_heartbeat(ctx: RequestContext, req: share_group_heartbeat.ShareGroupHeartbeatRequest) -> share_group_heartbeat.ShareGroupHeartbeatResponse:
    R = share_group_heartbeat.RESPONSE
    # READ on the group, then DESCRIBE on every subscribed topic (KafkaApis)
    code = authz.group_denied(ctx, req.group_id)
    if not code and req.subscribed_topic_names and authz.denied_topics(ctx, req.subscribed_topic_names,
                                                                       authz.Op.DESCRIBE):
        code = _TOPIC_DENIED
    if code:
        return R(error_code=code, member_id=None, member_epoch=0, heartbeat_interval_ms=0)
    if ctx.services.feature_levels().finalized.get("share.version", 0) < 1:
        # share.version finalized at 0 (a cluster formatted so): Kafka's group coordinator refuses
        return R(error_code=ErrorCode.UNSUPPORTED_VERSION, member_id=None, member_epoch=0, heartbeat_interval_ms=0)
    coord = _coord(ctx)
    if coord.manager is not None and req.group_id and (code := _not_group_coordinator(ctx, req.group_id)):
        return R(error_code=code, member_id=None, member_epoch=0, heartbeat_interval_ms=0)
    interval = int(coord.group_config(req.group_id, "share.heartbeat.interval.ms")) if req.group_id else 0
    if req.subscribed_topic_names is not None and req.group_id:
        await coord.store.ensure_topic_async()  # made off the loop once, before a partition needs it
    try:
        member, send = coord.heartbeat(req.group_id, req.member_id, req.member_epoch, req.rack_id,
                                       req.subscribed_topic_names, ctx.client_id or "", ctx.client_host)
    except KafkaError as e:
        return R(error_code=e.code, error_message=e.message, member_id=None, member_epoch=-1,
                 heartbeat_interval_ms=0)
    if member is None:
        return R(error_code=0, member_id=req.member_id, member_epoch=req.member_epoch, heartbeat_interval_ms=0)
    assignment = None
    if send:
        assignment = R.Assignment(topic_partitions=[
            R.TopicPartitions(topic_id=tid, partitions=parts) for tid, parts in sorted(member.assignment.items())])
    return R(error_code=0, member_id=member.member_id, member_epoch=member.member_epoch,
             heartbeat_interval_ms=interval, assignment=assignment)


# --------------------------------------------------------------------------- ShareGroupDescribe
@handles(share_group_describe.API, "1")
async def handle_share_group_describe(ctx: RequestContext, req: share_group_describe.ShareGroupDescribeRequest) -> share_group_describe.ShareGroupDescribeResponse:
    R = share_group_describe.RESPONSE
    coord = _coord(ctx)
    topics = ctx.services.metadata_cache
    out, refused = [], []
    for gid in req.group_ids:
        if code := authz.group_denied(ctx, gid, authz.Op.DESCRIBE):  # answered first, as Kafka
            refused.append(R.DescribedGroup(error_code=code, group_id=gid, group_state="", group_epoch=0,
                                            assignment_epoch=0, assignor_name="", members=[]))
            continue
        group = coord.describe(gid)
        if group is None:
            out.append(R.DescribedGroup(error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                                        error_message=f"Group {gid} not found.", group_id=gid, group_state="Dead",
                                        group_epoch=-1, assignment_epoch=-1, assignor_name="", members=[]))
            continue
        members = []
        for m in group.members.values():
            tps = []
            for tid, parts in sorted(m.assignment.items()):
                t = topics.topic_by_id(tid)
                tps.append(R.TopicPartitions(topic_id=tid, topic_name=t.name if t else "", partitions=parts))
            members.append(R.Member(member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                                    client_id=m.client_id, client_host=m.client_host,
                                    subscribed_topic_names=m.subscribed,
                                    assignment=R.Assignment(topic_partitions=tps)))
        hidden = authz.denied_topics(ctx, (tp.topic_name for m in members for tp in m.assignment.topic_partitions),
                                     authz.Op.DESCRIBE)
        if hidden:
            # an assignment names a topic the client may not DESCRIBE (KafkaApis, Kafka 4.1+)
            out.append(R.DescribedGroup(error_code=_TOPIC_DENIED, error_message=UNDESCRIBABLE_TOPICS, group_id=gid,
                                        group_state="", group_epoch=0, assignment_epoch=0, assignor_name="",
                                        members=[]))
            continue
        ops = authorized_ops.group(ctx, gid) if req.include_authorized_operations else authorized_ops.OMITTED
        out.append(R.DescribedGroup(authorized_operations=ops, error_code=0, group_id=gid, group_state=group.state,
                                    group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                                    assignor_name=ASSIGNOR, members=members))
    return R(groups=refused + out)


UNDESCRIBABLE_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


# ----------------------------------------------------------------------------------- ShareFetch
def _apply_acks(coord: ShareGroupCoordinator, group: str, member: str,
                topics: list[share_fetch.ShareFetchRequest.FetchTopic] | list[
                    share_acknowledge.ShareAcknowledgeRequest.AcknowledgeTopic],
                unreadable: set[uuid.UUID], version: int, renew: bool,
                blocked: dict[tuple[uuid.UUID, int], int]) -> dict[tuple[uuid.UUID, int], int]:
    outcomes: dict[tuple[uuid.UUID, int], int] = {}
    # KafkaApis.validateAcknowledgementBatches: types up to RENEW from v2 (KIP-1222), and RENEW
    # only in a request marked IsRenewAck; otherwise the partition is INVALID_REQUEST
    max_type = RENEW if version >= 2 else RENEW - 1
    for t in topics:
        for p in t.partitions:
            types = [k for b in p.acknowledgement_batches for k in b.acknowledge_types]
            if p.acknowledgement_batches and (t.topic_id, p.partition_index) in blocked:
                outcomes[(t.topic_id, p.partition_index)] = blocked[(t.topic_id, p.partition_index)]
            elif p.acknowledgement_batches and t.topic_id in unreadable:
                outcomes[(t.topic_id, p.partition_index)] = _TOPIC_DENIED
            elif any(not 0 <= k <= max_type for k in types) or (RENEW in types and not renew):
                outcomes[(t.topic_id, p.partition_index)] = ErrorCode.INVALID_REQUEST
            elif p.acknowledgement_batches:
                outcomes[(t.topic_id, p.partition_index)] = coord.acknowledge(
                    group, member, t.topic_id, p.partition_index, p.acknowledgement_batches)
    return outcomes


@handles(share_fetch.API, "1-2")
async def handle_share_fetch(ctx: RequestContext, req: share_fetch.ShareFetchRequest) -> share_fetch.ShareFetchResponse:
    R = share_fetch.RESPONSE
    coord = _coord(ctx)
    group, member = req.group_id or "", req.member_id or ""
    if code := authz.group_denied(ctx, group):  # READ on the group: a top-level error (KafkaApis)
        return R(error_code=code, acquisition_lock_timeout_ms=0, responses=[])
    lock_ms = coord.lock_ms(group) if group else 0
    renew_only = ctx.version >= 2 and req.is_renew_ack  # KIP-1222: acknowledgements only, nothing fetched
    if renew_only and (unset := _renew_fields_set(req)):
        return R(error_code=ErrorCode.INVALID_REQUEST, error_message=unset + "if isRenewAck is true.",
                 acquisition_lock_timeout_ms=0, responses=[])
    try:
        if coord.manager is None:  # on a cluster the share-partition leader does not know the members (Kafka's neither)
            coord.check_member(group, member)
        session = coord.session_for(group, member, req.share_session_epoch)
    except KafkaError as e:
        return R(error_code=e.code, error_message=e.message, acquisition_lock_timeout_ms=lock_ms, responses=[])
    if req.share_session_epoch == INITIAL_SESSION_EPOCH and ctx.connection is not None:
        _bind_to_connection(coord, ctx.connection, group, session)
    if req.share_session_epoch == INITIAL_SESSION_EPOCH and any(
            p.acknowledgement_batches for t in req.topics for p in t.partitions):
        return R(error_code=ErrorCode.INVALID_REQUEST, error_message="Acknowledge data present on initial epoch",
                 acquisition_lock_timeout_ms=lock_ms, responses=[])
    unreadable = _unreadable_ids(ctx, [t.topic_id for t in req.topics] + [tid for tid, _ in session.partitions])
    blocked = await _on_leaders(coord, group, [(t.topic_id, p.partition_index) for t in req.topics for p in t.partitions]
                                + list(session.partitions))
    acks = await _persisted(coord, group, _apply_acks(coord, group, member, req.topics, unreadable, ctx.version,
                                                      renew_only, blocked))
    results: list[AcquiredPartition] = []
    if req.share_session_epoch == FINAL_SESSION_EPOCH:
        coord.close_session(group, member)
    elif not renew_only:
        for t in req.topics:
            for p in t.partitions:
                session.partitions[(t.topic_id, p.partition_index)] = None
        for forgotten in req.forgotten_topics_data:
            for pi in forgotten.partitions:
                session.partitions.pop((forgotten.topic_id, pi), None)
        # partitions of topics the client may not READ are answered, not fetched
        results = [AcquiredPartition(tid, index, b"", [], _TOPIC_DENIED, None) for tid, index in session.partitions
                   if tid in unreadable]
        results += [AcquiredPartition(tid, index, b"", [], code, None) for (tid, index), code in blocked.items()
                    if tid not in unreadable]
        results += await _acquire(ctx, coord, group, member, {k: None for k in session.partitions
                                                              if k[0] not in unreadable and k not in blocked}, req)
    by_topic: dict[uuid.UUID, dict[int, share_fetch.ShareFetchResponse.PartitionData]] = {}
    leader = R.LeaderIdAndEpoch(leader_id=ctx.services.node_id, leader_epoch=0)
    for (tid, index), code in acks.items():
        by_topic.setdefault(tid, {})[index] = R.PartitionData(partition_index=index, error_code=0, acknowledge_error_code=code,
                                                          current_leader=leader, records=b"", acquired_records=[])
    for r in results:
        data = by_topic.setdefault(r.topic_id, {}).get(r.partition)
        if data is None:
            data = by_topic[r.topic_id][r.partition] = R.PartitionData(
                partition_index=r.partition, acknowledge_error_code=0, current_leader=leader)
        data.error_code, data.error_message = r.error_code, r.error_message
        data.records = r.records
        data.acquired_records = [R.AcquiredRecords(first_offset=a, last_offset=b, delivery_count=c)
                                 for a, b, c in r.acquired]
    return R(error_code=0, acquisition_lock_timeout_ms=lock_ms, responses=[
        R.ShareFetchableTopicResponse(topic_id=tid, partitions=list(parts.values()))
        for tid, parts in by_topic.items()], node_endpoints=[])


async def _on_leaders(coord: ShareGroupCoordinator, group: str,
                      partitions: list[tuple[uuid.UUID, int]]) -> dict[tuple[uuid.UUID, int], int]:
    """On a cluster, the partitions this broker cannot serve now (not their leader:
    NOT_LEADER_OR_FOLLOWER, as Kafka's SharePartitionManager; or their state could not be read),
    the others loaded from their share coordinator (coordinator/share/share_partition_manager.py)."""
    return await coord.manager.prepare(group, partitions) if coord.manager is not None else {}


async def _persisted(coord: ShareGroupCoordinator, group: str,
                     acks: dict[tuple[uuid.UUID, int], int]) -> dict[tuple[uuid.UUID, int], int]:
    """Each acknowledgement's outcome once its state is written (on a cluster, to the share
    coordinator: Kafka's SharePartition completes an acknowledgement when its persister write did)."""
    done = await coord.persister.flush([(group, tid, p) for (tid, p), code in acks.items() if code == ErrorCode.NONE])
    for (_g, tid, p), code in done.items():
        if code != ErrorCode.NONE:
            acks[(tid, p)] = code
    return acks


def _not_group_coordinator(ctx: RequestContext, group_id: str) -> int:
    """NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS when this broker does not lead the group's
    __consumer_offsets partition (a cluster's share group lives with its group coordinator, as Kafka's)."""
    gc = ctx.services.group_coordinator
    return gc.store.coordinator_error(group_id) if gc is not None else ErrorCode.COORDINATOR_NOT_AVAILABLE


def _renew_fields_set(req: share_fetch.ShareFetchRequest) -> str:
    """What a renew-only ShareFetch must leave at 0, as KafkaApis.handleShareFetchRequest words it."""
    return "".join(f"{name} must be set to 0," for name, value in (
        ("maxBytes", req.max_bytes), ("minBytes", req.min_bytes), ("maxRecords", req.max_records),
        ("maxWaitMs", req.max_wait_ms)) if value != 0)


def _bind_to_connection(coord: ShareGroupCoordinator, conn: Channel, group: str, session: ShareSession) -> None:
    """The session lives as long as the connection that opened it (Kafka: ShareSessionCache's
    connection-disconnect listener): a consumer killed while it holds records hands them on when
    its socket closes, not when their locks expire."""
    key = id(conn)  # the connection holds the callback, so the key is not reused while it lives
    if coord.bind_connection(key, group, session):
        conn.add_close_callback(lambda: coord.connection_closed(key))


async def _acquire(ctx: RequestContext, coord: ShareGroupCoordinator, group: str, member: str,
                   partitions: dict[tuple[uuid.UUID, int], None],
                   req: share_fetch.ShareFetchRequest) -> list[AcquiredPartition]:
    """Acquire across the session's partitions; park until something is available or the wait ends."""
    max_records = req.max_records if req.max_records > 0 else DEFAULT_MAX_RECORDS
    # KIP-1206: ShareAcquireMode 0 (batch_optimized, and every v1 request) acquires whole log
    # batches, cut into acquired ranges of about BatchSize records; 1 (record_limit) stops at MaxRecords
    whole_batches = req.share_acquire_mode != RECORD_LIMIT
    deadline = time.monotonic() + max(0, req.max_wait_ms) / 1000
    # the session's partitions are taken in an order rotated by the session epoch, so that one
    # partition does not always fill the fetch (Kafka's PartitionRotateStrategy, round robin)
    order = list(partitions)
    if order:
        shift = max(0, req.share_session_epoch) % len(order)
        order = order[shift:] + order[:shift]
    while True:
        results: list[AcquiredPartition] = []
        left, bytes_left = max_records, req.max_bytes
        for tid, p in order:
            if left <= 0 or bytes_left <= 0:
                break
            r = coord.acquire(group, member, tid, p, left, bytes_left, whole_batches=whole_batches,
                              batch_size=req.batch_size)
            if r is not None:
                results.append(r)
                left -= sum(b - a + 1 for a, b, _ in r.acquired)
                bytes_left -= len(r.records)
        remaining = deadline - time.monotonic()
        if results or remaining <= 0 or (group, member) not in coord.sessions:
            return results
        keys = []
        for tid, p in partitions:
            name = ctx.services.metadata_cache.topic_name(tid)
            if name is not None:
                keys.append((name, p))
        await ctx.services.replica_manager.wait_for_data(keys, remaining)


# ----------------------------------------------------------------------------- ShareAcknowledge
@handles(share_acknowledge.API, "1-2")
async def handle_share_acknowledge(ctx: RequestContext, req: share_acknowledge.ShareAcknowledgeRequest) -> share_acknowledge.ShareAcknowledgeResponse:
    R = share_acknowledge.RESPONSE
    coord = _coord(ctx)
    group, member = req.group_id or "", req.member_id or ""
    if code := authz.group_denied(ctx, group):  # READ on the group: a top-level error (KafkaApis)
        return R(error_code=code, acquisition_lock_timeout_ms=0, responses=[])
    lock_ms = coord.lock_ms(group) if group else 0
    try:
        if coord.manager is None:
            coord.check_member(group, member)
        if req.share_session_epoch == INITIAL_SESSION_EPOCH:
            raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH, "Acknowledge cannot open a share session.")
        coord.session_for(group, member, req.share_session_epoch)
    except KafkaError as e:
        if not (e.code == ErrorCode.UNKNOWN_MEMBER_ID and req.share_session_epoch == FINAL_SESSION_EPOCH):
            return R(error_code=e.code, error_message=e.message, acquisition_lock_timeout_ms=lock_ms, responses=[])
    blocked = await _on_leaders(coord, group, [(t.topic_id, p.partition_index) for t in req.topics for p in t.partitions])
    acks = await _persisted(coord, group, _apply_acks(
        coord, group, member, req.topics, _unreadable_ids(ctx, [t.topic_id for t in req.topics]),
        ctx.version, ctx.version >= 2 and req.is_renew_ack, blocked))
    if req.share_session_epoch == FINAL_SESSION_EPOCH:
        coord.close_session(group, member)
    leader = R.LeaderIdAndEpoch(leader_id=ctx.services.node_id, leader_epoch=0)
    by_topic: dict[uuid.UUID, list[share_acknowledge.ShareAcknowledgeResponse.PartitionData]] = {}
    for (tid, p), code in acks.items():
        by_topic.setdefault(tid, []).append(R.PartitionData(partition_index=p, error_code=code, current_leader=leader))
    return R(error_code=0, acquisition_lock_timeout_ms=lock_ms, responses=[
        R.ShareAcknowledgeTopicResponse(topic_id=tid, partitions=parts) for tid, parts in by_topic.items()],
        node_endpoints=[])


# --------------------------------------------------------------------- share-group offsets admin
@handles(describe_share_group_offsets.API, "0-1")
async def handle_describe_share_group_offsets(ctx: RequestContext, req: describe_share_group_offsets.DescribeShareGroupOffsetsRequest) -> describe_share_group_offsets.DescribeShareGroupOffsetsResponse:
    R = describe_share_group_offsets.RESPONSE
    coord = _coord(ctx)
    topics = ctx.services.metadata_cache
    out = []
    for g in req.groups:
        if code := authz.group_denied(ctx, g.group_id, authz.Op.DESCRIBE):
            out.append(R.DescribeShareGroupOffsetsResponseGroup(group_id=g.group_id, topics=[], error_code=code))
            continue
        if coord.state_admin is not None and (code := _not_group_coordinator(ctx, g.group_id)):
            out.append(R.DescribeShareGroupOffsetsResponseGroup(group_id=g.group_id, topics=[], error_code=code))
            continue
        if coord.describe(g.group_id) is None:
            out.append(R.DescribeShareGroupOffsetsResponseGroup(
                group_id=g.group_id, topics=[], error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                error_message=f"Group {g.group_id} not found."))
            continue
        wanted: list[tuple[str, list[int] | None]]
        if g.topics is None and coord.state_admin is not None:
            # a cluster's: the initialised share partitions of the group's
            # ShareGroupStatePartitionMetadata (Kafka: describeShareGroupAllOffsets)
            named = {topics.topic_name(tid): ps for tid, ps in coord.state_admin.topics(g.group_id).items()}
            wanted = [(n, ps) for n, ps in sorted(named.items()) if n is not None]
        elif g.topics is None:  # every topic with a share partition of this group
            names: dict[str, list[int]] = {}
            for (gid, tid, p) in sorted(coord.partitions, key=lambda k: (str(k[1]), k[2])):
                t = topics.topic_by_id(tid)
                if gid == g.group_id and t is not None:
                    names.setdefault(t.name, []).append(p)
            wanted = [(n, ps) for n, ps in sorted(names.items())]
        else:
            wanted = [(t.topic_name, list(t.partitions)) for t in g.topics]
        # topics the client may not DESCRIBE: left out of an all-topics answer, refused after the
        # others when named (KafkaApis.describeShareGroupOffsetsForGroup)
        hidden = authz.denied_topics(ctx, (n for n, _ in wanted), authz.Op.DESCRIBE)
        refused = [R.DescribeShareGroupOffsetsResponseTopic(topic_name=n, topic_id=ZERO_UUID, partitions=[
            R.DescribeShareGroupOffsetsResponsePartition(
                partition_index=p, start_offset=-1, leader_epoch=0, lag=-1, error_code=_TOPIC_DENIED,
                error_message=authz.MESSAGES[_TOPIC_DENIED]) for p in ps or []])
            for n, ps in wanted if n in hidden and g.topics is not None]
        wanted = [(n, ps) for n, ps in wanted if n not in hidden]
        rtopics = []
        for name, parts in wanted:
            topic = topics.topic(name)
            rparts = []
            for p in parts or []:
                sp = coord.partition_state(g.group_id, topic.topic_id, p) if topic else None
                if topic is None or p not in topic.partitions:
                    rparts.append(R.DescribeShareGroupOffsetsResponsePartition(
                        partition_index=p, start_offset=-1, leader_epoch=-1,
                        error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        error_message="This server does not host this topic-partition."))
                    continue
                if coord.state_admin is not None:  # a cluster's: through the persister (ReadShareGroupStateSummary)
                    rparts.append(await _summary_partition(ctx, coord.state_admin, g.group_id, topic.topic_id, name, p))
                    continue
                part = ctx.services.replica_manager.get_partition_or_error(name, p)
                start = sp.start_offset if sp is not None else -1
                lag = -1
                if sp is not None:
                    done = sum(1 for _, r in sp.in_flight() if r.state.name in ("ACKNOWLEDGED", "ARCHIVED"))
                    lag = max(0, part.high_watermark - start - done)
                rparts.append(R.DescribeShareGroupOffsetsResponsePartition(
                    partition_index=p, start_offset=start, leader_epoch=0 if sp else -1, lag=lag, error_code=0))
            rtopics.append(R.DescribeShareGroupOffsetsResponseTopic(
                topic_name=name, topic_id=topic.topic_id if topic else ZERO_UUID, partitions=rparts))
        out.append(R.DescribeShareGroupOffsetsResponseGroup(group_id=g.group_id, topics=rtopics + refused,
                                                            error_code=0))
    return R(groups=out)


async def _summary_partition(ctx: RequestContext, admin: ShareGroupStateAdmin, group_id: str, topic_id: uuid.UUID,
                             name: str, p: int) -> describe_share_group_offsets.DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponsePartition:
    """One partition of DescribeShareGroupOffsets from its share coordinator's summary (Kafka's group
    coordinator: ReadShareGroupStateSummary, then the lag from the partition's high watermark)."""
    R = describe_share_group_offsets.RESPONSE
    code, summary = await admin.summary(group_id, topic_id, p)
    if code != ErrorCode.NONE:
        return R.DescribeShareGroupOffsetsResponsePartition(partition_index=p, start_offset=-1, leader_epoch=-1,
                                                            lag=-1, error_code=code)
    part = ctx.services.replica_manager.get_partition(name, p)  # a replica's: the HW it last heard of
    return R.DescribeShareGroupOffsetsResponsePartition(
        partition_index=p, start_offset=summary.start_offset if summary is not None else -1,
        leader_epoch=summary.leader_epoch if summary is not None else -1,
        lag=share_lag(summary, part.high_watermark if part is not None else None), error_code=0)


def _require_empty(coord: ShareGroupCoordinator, group_id: str) -> None:
    group = coord.describe(group_id)
    if group is None:
        raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
    if group.members:
        raise KafkaError(ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")


@handles(alter_share_group_offsets.API, "0")
async def handle_alter_share_group_offsets(ctx: RequestContext, req: alter_share_group_offsets.AlterShareGroupOffsetsRequest) -> alter_share_group_offsets.AlterShareGroupOffsetsResponse:
    R = alter_share_group_offsets.RESPONSE
    coord = _coord(ctx)
    if code := authz.group_denied(ctx, req.group_id):  # READ on the group, then READ on each topic
        return R(error_code=code, error_message=authz.MESSAGES[code], responses=[])
    if coord.state_admin is not None and (code := _not_group_coordinator(ctx, req.group_id)):
        return R(error_code=code, responses=[])
    try:
        _require_empty(coord, req.group_id)
    except KafkaError as e:
        return R(error_code=e.code, error_message=e.message, responses=[])
    await coord.store.ensure_topic_async()
    if coord.state_admin is not None:  # a cluster's: InitializeShareGroupState through the persister
        return await _alter_through_persister(ctx, coord.state_admin, req)
    out = []
    for t in req.topics:
        topic = ctx.services.metadata_cache.topic(t.topic_name)
        parts = []
        if authz.topic_denied(ctx, t.topic_name, authz.Op.READ):
            parts = [R.AlterShareGroupOffsetsResponsePartition(
                partition_index=p.partition_index, error_code=_TOPIC_DENIED,
                error_message=authz.MESSAGES[_TOPIC_DENIED]) for p in t.partitions]
            out.append(R.AlterShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name, topic_id=topic.topic_id if topic else ZERO_UUID, partitions=parts))
            continue
        for p in t.partitions:
            if topic is None or p.partition_index not in topic.partitions:
                parts.append(R.AlterShareGroupOffsetsResponsePartition(
                    partition_index=p.partition_index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    error_message="This server does not host this topic-partition."))
                continue
            part = ctx.services.replica_manager.get_partition_or_error(topic.name, p.partition_index)
            offset = min(max(p.start_offset, part.log_start_offset), part.high_watermark)
            coord.alter_start_offset(req.group_id, topic.topic_id, topic.name, p.partition_index, offset)
            parts.append(R.AlterShareGroupOffsetsResponsePartition(partition_index=p.partition_index, error_code=0))
        out.append(R.AlterShareGroupOffsetsResponseTopic(
            topic_name=t.topic_name, topic_id=topic.topic_id if topic else ZERO_UUID, partitions=parts))
    return R(error_code=0, responses=out)


async def _alter_through_persister(ctx: RequestContext, admin: ShareGroupStateAdmin,
                                   req: alter_share_group_offsets.AlterShareGroupOffsetsRequest
                                   ) -> alter_share_group_offsets.AlterShareGroupOffsetsResponse:
    """A cluster's AlterShareGroupOffsets (Kafka: GroupMetadataManager.alterShareGroupOffsets, then
    the persister's InitializeShareGroupState; share_group_state_admin.py)."""
    R = alter_share_group_offsets.RESPONSE
    wanted: dict[uuid.UUID, tuple[str, dict[int, int]]] = {}
    for t in req.topics:
        topic = ctx.services.metadata_cache.topic(t.topic_name)
        if topic is not None and not authz.topic_denied(ctx, t.topic_name, authz.Op.READ):
            known = {p.partition_index: p.start_offset for p in t.partitions if p.partition_index in topic.partitions}
            if known:
                wanted.setdefault(topic.topic_id, (topic.name, {}))[1].update(known)
    try:
        codes = await admin.alter(req.group_id, wanted)
    except KafkaError as e:
        return R(error_code=e.code, error_message=e.message, responses=[])
    out = []
    for t in req.topics:
        topic = ctx.services.metadata_cache.topic(t.topic_name)
        if authz.topic_denied(ctx, t.topic_name, authz.Op.READ):
            parts = [R.AlterShareGroupOffsetsResponsePartition(
                partition_index=p.partition_index, error_code=_TOPIC_DENIED,
                error_message=authz.MESSAGES[_TOPIC_DENIED]) for p in t.partitions]
        else:
            parts = []
            for p in t.partitions:
                code = codes.get((topic.topic_id, p.partition_index)) if topic is not None else None
                parts.append(R.AlterShareGroupOffsetsResponsePartition(
                    partition_index=p.partition_index, error_code=code) if code is not None
                    else R.AlterShareGroupOffsetsResponsePartition(
                        partition_index=p.partition_index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        error_message="This server does not host this topic-partition."))
        out.append(R.AlterShareGroupOffsetsResponseTopic(
            topic_name=t.topic_name, topic_id=topic.topic_id if topic else ZERO_UUID, partitions=parts))
    return R(error_code=0, responses=out)


@handles(delete_share_group_offsets.API, "0")
async def handle_delete_share_group_offsets(ctx: RequestContext, req: delete_share_group_offsets.DeleteShareGroupOffsetsRequest) -> delete_share_group_offsets.DeleteShareGroupOffsetsResponse:
    R = delete_share_group_offsets.RESPONSE
    coord = _coord(ctx)
    if code := authz.group_denied(ctx, req.group_id, authz.Op.DELETE):  # DELETE on the group
        return R(error_code=code, error_message=authz.MESSAGES[code], responses=[])
    # READ on each topic: the refused ones are answered first (KafkaApis)
    hidden = authz.denied_topics(ctx, (t.topic_name for t in req.topics), authz.Op.READ)
    refused = [R.DeleteShareGroupOffsetsResponseTopic(topic_name=t.topic_name, topic_id=ZERO_UUID,
                                                      error_code=_TOPIC_DENIED,
                                                      error_message=authz.MESSAGES[_TOPIC_DENIED])
               for t in req.topics if t.topic_name in hidden]
    if coord.state_admin is not None and (code := _not_group_coordinator(ctx, req.group_id)):
        return R(error_code=code, responses=[])
    try:
        _require_empty(coord, req.group_id)
    except KafkaError as e:
        return R(error_code=e.code, error_message=e.message, responses=[])
    if coord.state_admin is not None:  # a cluster's: DeleteShareGroupState through the persister
        return await _delete_through_persister(ctx, coord.state_admin, req, refused, hidden)
    out = refused
    for t in req.topics:
        if t.topic_name in hidden:
            continue
        topic = ctx.services.metadata_cache.topic(t.topic_name)
        if topic is None:
            out.append(R.DeleteShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name, topic_id=ZERO_UUID, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                error_message="This server does not host this topic-partition."))
            continue
        coord.delete_offsets(req.group_id, topic.topic_id)
        out.append(R.DeleteShareGroupOffsetsResponseTopic(topic_name=t.topic_name, topic_id=topic.topic_id,
                                                          error_code=ErrorCode.NONE))
    return R(error_code=0, responses=out)


async def _delete_through_persister(ctx: RequestContext, admin: ShareGroupStateAdmin,
                                    req: delete_share_group_offsets.DeleteShareGroupOffsetsRequest,
                                    refused: list[delete_share_group_offsets.DeleteShareGroupOffsetsResponse.DeleteShareGroupOffsetsResponseTopic],
                                    hidden: set[str]) -> delete_share_group_offsets.DeleteShareGroupOffsetsResponse:
    """A cluster's DeleteShareGroupOffsets (Kafka: initiateDeleteShareGroupOffsets, the persister's
    DeleteShareGroupState, completeDeleteShareGroupOffsets): only topics whose share partitions
    the group's ShareGroupStatePartitionMetadata has are deleted, the others answer
    UNKNOWN_TOPIC_OR_PARTITION; the deleted ones first, then the errors (GroupCoordinatorShard)."""
    R = delete_share_group_offsets.RESPONSE
    unknown, known = [], []
    for t in req.topics:
        if t.topic_name in hidden:
            continue
        topic = ctx.services.metadata_cache.topic(t.topic_name)
        if topic is None:
            unknown.append(R.DeleteShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name, topic_id=ZERO_UUID, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                error_message="This server does not host this topic-partition."))
        else:
            known.append((topic.topic_id, topic.name, len(topic.partitions)))
    try:
        codes, nothing = await admin.delete_offsets(req.group_id, known)
    except KafkaError as e:
        return R(error_code=e.code, error_message=e.message, responses=[])
    names = {tid: name for tid, name, _ in known}
    done = [R.DeleteShareGroupOffsetsResponseTopic(topic_name=names[tid], topic_id=tid, error_code=0)
            for tid, code in codes.items() if code == ErrorCode.NONE]
    failed = [R.DeleteShareGroupOffsetsResponseTopic(topic_name=names[tid], topic_id=tid, error_code=code)
              for tid, code in codes.items() if code != ErrorCode.NONE]
    none = [R.DeleteShareGroupOffsetsResponseTopic(topic_name=name, topic_id=ZERO_UUID,
                                                   error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                   error_message=NO_OFFSETS_TO_DELETE) for name in nothing]
    return R(error_code=0, responses=refused + done + unknown + none + failed)


# --------------------------------------------------------------------- GROUP config resources
class _ShareGroupConfigs:
    """share.* keys of GROUP resources (Kafka's GroupConfig), for handlers/configs.py."""

    def group_keys(self) -> frozenset[str]:
        return frozenset(GROUP_KEYS)

    def describe_group(self, services: BrokerServices, group: str) -> list[ConfigEntry]:
        coord = services.share_groups
        own = coord.group_configs.get(group, {})
        out = []
        for name in sorted(GROUP_KEYS):
            ctype = (ConfigType.STRING if name in STRING_KEYS else ConfigType.BOOLEAN if name in BOOLEAN_KEYS
                     else ConfigType.INT)
            set_here = name in own
            # synonyms as Kafka lists them: the group's own value, then the default it overrides (the
            # broker key's, or the group key's own default when it has no broker key)
            default_key = GROUP_KEYS[name] or name
            default = str(services.config.get(default_key)) if GROUP_KEYS[name] else GROUP_DEFAULTS[name]
            synonyms: list[tuple[str, str | None, int]] = [(default_key, default, int(ConfigSource.DEFAULT_CONFIG))]
            if set_here:
                synonyms.insert(0, (name, own[name], int(ConfigSource.GROUP_CONFIG)))
            out.append(ConfigEntry(name=name, value=coord.group_config(group, name),
                                   source=ConfigSource.GROUP_CONFIG if set_here else ConfigSource.DEFAULT_CONFIG,
                                   is_default=not set_here, read_only=False, sensitive=False, synonyms=synonyms,
                                   type=ctype))
        return out

    def alter_group(self, services: BrokerServices, group: str, ops: list[tuple[str, int, str | None]],
                    replace: bool, validate_only: bool) -> None:
        coord = services.share_groups
        configs = {} if replace else dict(coord.group_configs.get(group, {}))
        for name, op, value in ops:
            if OpType(op) is OpType.SET:
                validate_group_config(name, value, services.config)
                if value is not None:
                    configs[name] = value
            elif OpType(op) is OpType.DELETE:
                configs.pop(name, None)
            else:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Config value append is not allowed for config key: {name}")
        if not validate_only:
            coord.set_group_configs(group, configs)


# the share.* keys of GROUP resources, read by handlers/configs.py (GROUP_CONFIG_PROVIDERS)
GROUP_CONFIGS = _ShareGroupConfigs()
