"""The group APIs: FindCoordinator v0-6, JoinGroup v0-9, SyncGroup v0-5, Heartbeat v0-4,
LeaveGroup v0-5, OffsetCommit v0-10, OffsetFetch v0-10, ListGroups v0-5, DescribeGroups v0-6,
DeleteGroups v0-3, OffsetDelete v0.

Behavior: this broker coordinates every group and, until a transaction coordinator says
otherwise, every transactional id, so FindCoordinator answers with itself (creating
__consumer_offsets on the first group lookup, as Kafka does). The handlers translate between
wire versions and the coordinator (minibroker/coordinator/group/group_coordinator.py), which holds
the state machine; JoinGroup and SyncGroup requests stay parked until the rebalance answers them.
OffsetCommit refuses partitions of topics that do not exist (UNKNOWN_TOPIC_OR_PARTITION) before
the coordinator sees them, as KafkaApis does.

Version notes:
- FindCoordinator: v1 key type (0 group, 1 transaction) and error message; v3 flexible; v4 batched
  keys (KIP-699); v6 share-state key type 2 (KIP-932: "group:topicId:partition", refused
  with INVALID_REQUEST below v6 or when malformed, as Kafka does).
- JoinGroup: v0 has no rebalance timeout (the session timeout stands in, as in Kafka); v4
  MEMBER_ID_REQUIRED (KIP-394); v5 group.instance.id (KIP-345); v6 flexible; v7 protocol type
  in the response, name nullable; v8 reason; v9 skip_assignment for a static leader.
- SyncGroup: v3 instance id; v4 flexible; v5 protocol type and name, both required.
- LeaveGroup: v0-2 one member id; v3 batched members by id or instance id; v4 flexible; v5 reason.
- OffsetCommit: v0 was ZooKeeper-backed in Kafka; here it is stored like v1. v1 per-partition
  commit timestamp; v2-4 retention time; v6 leader epoch; v7 instance id; v8 flexible; v9 an
  unknown group with a generation is GROUP_ID_NOT_FOUND instead of ILLEGAL_GENERATION; v10 (Kafka 4.2,
  KIP-848) names topics by id in request and response, an unknown id being UNKNOWN_TOPIC_ID.
- DeleteGroups: v2 flexible; v3 an error message per group (null here, as Kafka 4.4 leaves it for
  the errors this broker answers).
- OffsetFetch: v0 read ZooKeeper in Kafka; here it reads the same store as v1. v1-7 one group
  (v2+ null topics = all, top-level error); v5 leader epoch; v7 require_stable; v8 several groups;
  v9 member id and epoch (KIP-848: a consumer group's member must read at its epoch, else the group
  answers UNKNOWN_MEMBER_ID / STALE_MEMBER_EPOCH with no topics, as Kafka 4.4 does);
  v10 topics by id (an unknown id: UNKNOWN_TOPIC_ID per partition; with null topics, offsets of
  topics that no longer exist are left out, as they have no id to name them by).
- ListGroups: v4 state filter (KIP-518); v5 type filter (KIP-848: "classic" and "consumer" groups).
- DescribeGroups: v3 authorized operations; v4 instance ids; v5 flexible; v6 (KIP-1043) a group
  that does not exist is GROUP_ID_NOT_FOUND with a message (older versions: state Dead, no error);
  a KIP-848 consumer group id is answered the same way ("Group G is not a classic group.").
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, TypeAlias

# The group modules come with this handler module (loaded by the first group request, not at start:
# issue 22); the coordinator itself is built when first needed (minibroker.coordinators).
from minibroker.coordinator.group.classic_group import ClientInfo, GroupState
from minibroker.coordinator.group.group_metadata_manager import append_error_to_response_error
from minibroker.coordinator.runtime.coordinator_store import partition_for
from minibroker.coordinator.share.share_coordinator_shard import parse_coordinator_key
from minibroker.handlers import authorized_ops, authz
from minibroker.handlers.registry import RequestContext, handles
from minibroker.services import BrokerServices
from minibroker_protocol.apis import (
    delete_groups,
    describe_groups,
    find_coordinator,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    sync_group,
)
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.schema import ZERO_UUID

if TYPE_CHECKING:
    from minibroker.coordinator.group.group_coordinator import GroupCoordinator
    from minibroker.coordinator.group.records import OffsetAndMetadata

    _Offset: TypeAlias = "OffsetAndMetadata | _Pending | None"  # _Pending: a placeholder, see below
    # [(topic, [(partition, offset)])], as GroupCoordinator.fetch_offsets answers
    _GroupOffsets = list[tuple[str, list[tuple[int, _Offset]]]]
    _FetchTopics = list[offset_fetch.OffsetFetchRequest.OffsetFetchRequestTopics] | list[
        offset_fetch.OffsetFetchRequest.OffsetFetchRequestTopic]

GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = 0, 1, 2
# Kafka's default text of INVALID_REQUEST (Errors.INVALID_REQUEST), which its unbatched
# FindCoordinator answer carries for a share key
_INVALID_REQUEST_TEXT = ("This most likely occurs because of a request being malformed by the client library or "
                         "the message was sent to an incompatible broker. See the broker logs for more details.")


def _coordinator(ctx: RequestContext) -> GroupCoordinator | None:
    coord = ctx.services.group_coordinator
    return coord if coord is not None and coord.active else None


def _not_here(coord: GroupCoordinator, group_id: str) -> int:
    """NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS when this broker does not (yet) coordinate
    the group: its __consumer_offsets partition is led elsewhere, or is being loaded."""
    return coord.store.coordinator_error(group_id)


async def _committed(ctx: RequestContext, coord: GroupCoordinator, group_id: str) -> int:
    """Wait until the group's writes are replicated (the HW of its __consumer_offsets partition
    passed them, bounded by offsets.commit.timeout.ms), as Kafka's runtime answers a write only
    then; NONE, or the write's error as the group APIs answer it
    (GroupCoordinatorService.handleOperationException: NOT_ENOUGH_REPLICAS(_AFTER_APPEND) and
    REQUEST_TIMED_OUT -> COORDINATOR_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER -> NOT_COORDINATOR)."""
    code = await coord.store.wait_replicated(group_id, ctx.services.config.get("offsets.commit.timeout.ms"))
    if code == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return append_error_to_response_error(code)


def _client(ctx: RequestContext) -> ClientInfo:
    return ClientInfo(client_id=ctx.client_id or "", client_host=ctx.client_host, api_version=ctx.version)


# ------------------------------------------------------------------------------ FindCoordinator
def _find(ctx: RequestContext, key: str, key_type: int) -> tuple[int, str | None]:
    if key_type in (GROUP_KEY, TRANSACTION_KEY) and (denied := authz.denied(  # DESCRIBE on the group / txn id
            ctx, authz.Op.DESCRIBE, authz.ResourceType.GROUP if key_type == GROUP_KEY else
            authz.ResourceType.TRANSACTIONAL_ID, key)):
        return denied, None
    if key_type == GROUP_KEY:
        coord = _coordinator(ctx)
        if coord is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        try:
            coord.store.ensure_topic()
        except KafkaError as e:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, e.message
        return ErrorCode.NONE, None
    if key_type == TRANSACTION_KEY:
        txn = ctx.services.txn_coordinator
        if txn is None or not txn.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        try:
            txn.ensure_topic()  # __transaction_state is created on the first lookup, as in Kafka
        except KafkaError as e:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, e.message
        return ErrorCode.NONE, None
    if key_type == SHARE_KEY:
        # KIP-932: share-state keys ("group:topicId:partition") are valid from v6 on; Kafka answers
        # an older version or a malformed key with INVALID_REQUEST and an empty message.
        if ctx.version < 6 or parse_coordinator_key(key) is None:
            return ErrorCode.INVALID_REQUEST, "" if ctx.version >= 4 else _INVALID_REQUEST_TEXT
        try:
            ctx.services.share_groups.store.ensure_topic()
        except KafkaError as e:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, e.message
        return ErrorCode.NONE, ""
    return ErrorCode.INVALID_REQUEST, f"Unsupported coordinator key type {key_type}"


@handles(find_coordinator.API, "0-6")
async def handle_find_coordinator(ctx: RequestContext, req: find_coordinator.FindCoordinatorRequest) -> find_coordinator.FindCoordinatorResponse:
    R = find_coordinator.RESPONSE
    services = ctx.services
    coord = _coordinator(ctx)
    if req.key_type == GROUP_KEY and coord is not None:
        try:
            await coord.store.ensure_topic_async()
        except KafkaError:
            pass  # _find answers COORDINATOR_NOT_AVAILABLE with the reason
    txn = services.txn_coordinator
    if req.key_type == TRANSACTION_KEY and txn is not None and txn.active:
        try:
            await txn.ensure_topic_async()
        except KafkaError:
            pass
    if req.key_type == SHARE_KEY and ctx.version >= 6:
        try:
            await ctx.services.share_groups.store.ensure_topic_async()
        except KafkaError:
            pass
    host, port = ctx.advertised
    if ctx.version >= 4:
        out = []
        for key in req.coordinator_keys:
            error, msg = _find(ctx, key, req.key_type)
            node, h, p = _located(ctx, key, req.key_type, (services.node_id, host, port))
            ok = error == ErrorCode.NONE and node >= 0
            if error == ErrorCode.NONE and not ok:
                error = ErrorCode.COORDINATOR_NOT_AVAILABLE
            out.append(R.Coordinator(key=key, node_id=node if ok else -1,
                                     host=h if ok else "", port=p if ok else -1, error_code=error, error_message=msg))
        return R(coordinators=out)
    error, msg = _find(ctx, req.key, req.key_type)
    node, host, port = _located(ctx, req.key, req.key_type, (services.node_id, host, port))
    if error == ErrorCode.NONE and node < 0:
        error = ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error != ErrorCode.NONE:
        return R(error_code=error, error_message=msg, node_id=-1, host="", port=-1)
    return R(error_code=0, error_message=None, node_id=node, host=host, port=port)


_COORDINATOR_TOPICS = {GROUP_KEY: "__consumer_offsets", TRANSACTION_KEY: "__transaction_state",
                      SHARE_KEY: "__share_group_state"}  # KIP-932: the share coordinator (issue 29)


def _located(ctx: RequestContext, key: str, key_type: int, here: tuple[int, str, int]) -> tuple[int, str, int]:
    """On a KRaft cluster, the leader of the key's coordinator partition (Kafka: the coordinator
    is the partition's leader); (-1, "", -1) while it has none. Alone: this broker."""
    cache = ctx.services.metadata_cache
    topic = cache.topic(_COORDINATOR_TOPICS.get(key_type))
    if not cache.brokers or topic is None:
        return here
    part = topic.partitions.get(partition_for(key, topic.num_partitions))
    listener = (ctx.connection.listener if ctx.connection is not None else None) or ctx.services.config.listener_name
    endpoint = cache.broker_endpoint(part.leader_id, listener) if part is not None else None
    if part is None or endpoint is None:
        return -1, "", -1
    return part.leader_id, endpoint[0], endpoint[1]


# ------------------------------------------------------------------------------------ JoinGroup
@handles(join_group.API, "0-9")
async def handle_join_group(ctx: RequestContext, req: join_group.JoinGroupRequest) -> join_group.JoinGroupResponse:
    if ctx.version == 0:
        req.rebalance_timeout_ms = req.session_timeout_ms
    coord = _coordinator(ctx)
    if denied := authz.group_denied(ctx, req.group_id):  # READ on the group
        resp = join_group.RESPONSE(error_code=denied, member_id=req.member_id)
    elif coord is None:
        resp = join_group.RESPONSE(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id=req.member_id)
    elif code := _not_here(coord, req.group_id):
        resp = join_group.RESPONSE(error_code=code, member_id=req.member_id)
    else:
        resp = await coord.join_group(req, _client(ctx))
        if not resp.error_code and (code := await _committed(ctx, coord, req.group_id)):
            resp = join_group.RESPONSE(error_code=code, member_id=req.member_id)
    if ctx.version < 7 and resp.protocol_name is None:
        resp.protocol_name = ""  # nullable only from v7
    return resp


# ------------------------------------------------------------------------------------ SyncGroup
@handles(sync_group.API, "0-5")
async def handle_sync_group(ctx: RequestContext, req: sync_group.SyncGroupRequest) -> sync_group.SyncGroupResponse:
    R = sync_group.RESPONSE
    if ctx.version >= 5 and (req.protocol_type is None or req.protocol_name is None):
        return R(error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL)  # Kafka: both are mandatory from v5
    coord = _coordinator(ctx)
    if denied := authz.group_denied(ctx, req.group_id):
        return R(error_code=denied)
    if coord is None:
        return R(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if code := _not_here(coord, req.group_id):
        return R(error_code=code)
    resp = await coord.sync_group(req)
    if not resp.error_code and (code := await _committed(ctx, coord, req.group_id)):
        return R(error_code=code)
    return resp


# ------------------------------------------------------------------------------------ Heartbeat
@handles(heartbeat.API, "0-4")
async def handle_heartbeat(ctx: RequestContext, req: heartbeat.HeartbeatRequest) -> heartbeat.HeartbeatResponse:
    coord = _coordinator(ctx)
    error = authz.group_denied(ctx, req.group_id) or (
        ErrorCode.COORDINATOR_NOT_AVAILABLE if coord is None else _not_here(coord, req.group_id)
        or coord.heartbeat(req))
    return heartbeat.RESPONSE(error_code=error)


# ----------------------------------------------------------------------------------- LeaveGroup
@handles(leave_group.API, "0-5")
async def handle_leave_group(ctx: RequestContext, req: leave_group.LeaveGroupRequest) -> leave_group.LeaveGroupResponse:
    R = leave_group.RESPONSE
    if ctx.version < 3:
        members = [leave_group.REQUEST.MemberIdentity(member_id=req.member_id, group_instance_id=None)]
    else:
        members = req.members
    coord = _coordinator(ctx)
    if denied := authz.group_denied(ctx, req.group_id):
        return R(error_code=denied)
    if coord is None:
        return R(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if code := _not_here(coord, req.group_id):
        return R(error_code=code)
    error, responses = coord.leave_group(req.group_id, members)
    if not error and (code := await _committed(ctx, coord, req.group_id)):
        return R(error_code=code)
    if ctx.version < 3:
        # One member and no per-member errors before v3: its error is the response's.
        if error == ErrorCode.NONE:
            error = next((r.error_code for r in responses if r.error_code), ErrorCode.NONE)
        return R(error_code=error)
    return R(error_code=error, members=responses)


# --------------------------------------------------------------------------------- OffsetCommit
@handles(offset_commit.API, "0-10")
async def handle_offset_commit(ctx: RequestContext, req: offset_commit.OffsetCommitRequest) -> offset_commit.OffsetCommitResponse:
    R = offset_commit.RESPONSE
    services = ctx.services
    errors: dict[tuple[str, int], int] = {}
    valid = []
    # v10: topics come by id; None marks an id no topic has (UNKNOWN_TOPIC_ID for its partitions)
    names = [_name_of(services, t.topic_id) if ctx.version >= 10 else t.name for t in req.topics]
    for t, name in zip(req.topics, names, strict=True):
        if name is None:
            continue
        topic = services.metadata_cache.topic(name)
        refused = authz.group_denied(ctx, req.group_id) or (  # READ on the group, then on the topic
            ErrorCode.TOPIC_AUTHORIZATION_FAILED if authz.topic_denied(ctx, name, authz.Op.READ) else 0)
        known = [p for p in t.partitions if topic is not None and p.partition_index in topic.partitions
                 and not refused]
        for p in t.partitions:
            if refused or topic is None or p.partition_index not in topic.partitions:
                errors[(name, p.partition_index)] = refused or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if known:
            valid.append(offset_commit.REQUEST.OffsetCommitRequestTopic(name=name, partitions=known))
    if valid:
        coord = _coordinator(ctx)
        code = ErrorCode.COORDINATOR_NOT_AVAILABLE if coord is None else _not_here(coord, req.group_id)
        if code:
            for t in valid:
                for p in t.partitions:
                    errors[(t.name, p.partition_index)] = code
        else:
            assert coord is not None
            committed = coord.commit_offsets(req, ctx.version, valid)
            # the answer waits until the commit is replicated (Kafka: the runtime's write completes at the HW)
            if any(c == ErrorCode.NONE for c in committed.values()) and (
                    code := await _committed(ctx, coord, req.group_id)):
                committed = {tp: c or code for tp, c in committed.items()}
            errors.update(committed)
    return R(topics=[
        R.OffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=[
            R.OffsetCommitResponsePartition(
                partition_index=p.partition_index,
                error_code=ErrorCode.UNKNOWN_TOPIC_ID if name is None else errors[(name, p.partition_index)])
            for p in t.partitions])
        for t, name in zip(req.topics, names, strict=True)
    ])


def _name_of(services: BrokerServices, topic_id: uuid.UUID) -> str | None:
    return services.metadata_cache.topic_name(topic_id)


def _id_of(services: BrokerServices, name: str) -> uuid.UUID:
    return services.metadata_cache.topic_id(name) or ZERO_UUID


# ---------------------------------------------------------------------------------- OffsetFetch
def _fetch_group(ctx: RequestContext, coord: GroupCoordinator | None, group_id: str,
                 topics: _FetchTopics | None) -> tuple[int, _GroupOffsets]:
    """The group's offsets of `topics` (None: all), as (error, [(topic, [(partition, offset)])]).
    Topics the client may not DESCRIBE are left out of an all-topics answer, and answered
    TOPIC_AUTHORIZATION_FAILED after the others when asked by name (KafkaApis.fetchOffsetsForGroup)."""
    hidden = authz.denied_topics(ctx, (t.name for t in topics or ()), authz.Op.DESCRIBE)
    wanted = None if topics is None else [(t.name, list(t.partition_indexes)) for t in topics if t.name not in hidden]
    if coord is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
    if code := _not_here(coord, group_id):
        return code, []
    error, offsets = coord.fetch_offsets(group_id, wanted)
    found: _GroupOffsets = [(name, list(parts)) for name, parts in offsets]
    if topics is None and authz.enabled(ctx):
        unseen = authz.denied_topics(ctx, (name for name, _ in found), authz.Op.DESCRIBE)
        found = [(name, parts) for name, parts in found if name not in unseen]
    elif hidden and not error:
        found += [(t.name, [(p, _REFUSED) for p in t.partition_indexes])
                               for t in topics or () if t.name in hidden]
    return error, found


@handles(offset_fetch.API, "0-10")
async def handle_offset_fetch(ctx: RequestContext, req: offset_fetch.OffsetFetchRequest) -> offset_fetch.OffsetFetchResponse:
    R = offset_fetch.RESPONSE
    coord = _coordinator(ctx)
    v = ctx.version
    stable = v >= 7 and req.require_stable
    if v >= 8:
        groups = []
        for g in req.groups:
            wanted, resolved = g.topics, []
            if v >= 10 and wanted is not None:  # topics by id: ask the coordinator for the known ones by name
                resolved = [(t, _name_of(ctx.services, t.topic_id)) for t in wanted]
                wanted = [offset_fetch.REQUEST.OffsetFetchRequestTopics(name=n, partition_indexes=t.partition_indexes)
                          for t, n in resolved if n is not None]
            refused = authz.group_denied(ctx, g.group_id, authz.Op.DESCRIBE)
            if not refused and v >= 9 and coord is not None and coord.active:
                # KIP-848: a consumer-protocol member reads at its member epoch
                code = coord.consumer_groups.validate_offset_fetch(g.group_id, g.member_id, g.member_epoch)
                if code:
                    groups.append(R.OffsetFetchResponseGroup(group_id=g.group_id, error_code=code, topics=[]))
                    continue
            error, topics = (refused, []) if refused else _fetch_group(ctx, coord, g.group_id, wanted)
            if stable:
                topics = _unstable(coord, g.group_id, topics)
            rows = [
                R.OffsetFetchResponseTopics(name=name, topic_id=_id_of(ctx.services, name), partitions=[
                    R.OffsetFetchResponsePartitions(
                        partition_index=p, committed_offset=om.offset if om else -1,
                        committed_leader_epoch=om.leader_epoch if om else -1,
                        metadata=om.metadata if om else "", error_code=_partition_error(om, 0))
                    for p, om in parts])
                for name, parts in topics]
            if v >= 10 and g.topics is None:
                rows = [r for r in rows if r.topic_id != ZERO_UUID]  # a deleted topic has no id to answer with
            elif v >= 10 and not error:
                rows = _in_request_order(R, resolved, rows)
            groups.append(R.OffsetFetchResponseGroup(group_id=g.group_id, error_code=error, topics=rows))
        return R(groups=groups)
    topics_req = req.topics
    if v < 2 and topics_req is None:
        topics_req = []
    refused = authz.group_denied(ctx, req.group_id, authz.Op.DESCRIBE)
    error, topics = (refused, []) if refused else _fetch_group(ctx, coord, req.group_id, topics_req)
    if stable:
        topics = _unstable(coord, req.group_id, topics)
    if error and topics_req:
        # Before v2 there is no top-level error: each requested partition carries it.
        topics = [(t.name, [(p, None) for p in t.partition_indexes]) for t in topics_req]
    part_error = error if v < 2 else 0
    return R(error_code=error, topics=[
        R.OffsetFetchResponseTopic(name=name, partitions=[
            R.OffsetFetchResponsePartition(
                partition_index=p, committed_offset=om.offset if om else -1,
                committed_leader_epoch=om.leader_epoch if om else -1,
                metadata=om.metadata if om else "", error_code=_partition_error(om, part_error))
            for p, om in parts])
        for name, parts in topics])


def _in_request_order(R: offset_fetch._OffsetFetchResponseSchema,
                      resolved: list[tuple[offset_fetch.OffsetFetchRequest.OffsetFetchRequestTopics, str | None]],
                      rows: list[offset_fetch.OffsetFetchResponse.OffsetFetchResponseTopics]
                      ) -> list[offset_fetch.OffsetFetchResponse.OffsetFetchResponseTopics]:
    """v10: the coordinator answered the known topics in request order; put an UNKNOWN_TOPIC_ID row
    for each unknown id back where it was asked."""
    known = iter(rows)
    return [next(known) if name is not None else R.OffsetFetchResponseTopics(topic_id=t.topic_id, partitions=[
        R.OffsetFetchResponsePartitions(partition_index=p, committed_offset=-1, committed_leader_epoch=-1,
                                        metadata="", error_code=ErrorCode.UNKNOWN_TOPIC_ID)
        for p in t.partition_indexes]) for t, name in resolved]


_UNSTABLE = ErrorCode.UNSTABLE_OFFSET_COMMIT


class _Pending:
    """Stands for an offset that a transaction has written but not committed yet."""

    offset = leader_epoch = -1
    metadata = ""


_PENDING = _Pending()
_REFUSED = _Pending()  # a partition of a topic the client may not DESCRIBE


def _partition_error(om: _Offset, default: int) -> int:
    if om is _PENDING:
        return _UNSTABLE
    return ErrorCode.TOPIC_AUTHORIZATION_FAILED if om is _REFUSED else default


def _unstable(coord: GroupCoordinator | None, group_id: str, topics: _GroupOffsets) -> _GroupOffsets:
    """require_stable (KIP-447): a partition with transactional offsets awaiting their marker
    answers UNSTABLE_OFFSET_COMMIT, so that the consumer waits instead of reading an offset
    the transaction is about to replace (OffsetMetadataManager.fetchOffsets)."""
    pending = getattr(coord, "has_pending_transactional_offsets", None)
    if coord is None or pending is None:
        return topics
    return [(name, [(p, _PENDING if om is not _REFUSED and pending(group_id, name, p) else om) for p, om in parts])
            for name, parts in topics]


# ------------------------------------------------------------------------------------ ListGroups
@handles(list_groups.API, "0-5")
async def handle_list_groups(ctx: RequestContext, req: list_groups.ListGroupsRequest) -> list_groups.ListGroupsResponse:
    R = list_groups.RESPONSE
    coord = _coordinator(ctx)
    if coord is None:
        return R(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    listed = coord.list_groups(req.states_filter or (), req.types_filter or ())
    listed += ctx.services.share_groups.list_groups(req.states_filter or (), req.types_filter or ())  # KIP-932
    if authz.cluster_denied(ctx, authz.Op.DESCRIBE):
        # without DESCRIBE on the cluster, only the groups the client may DESCRIBE (KafkaApis)
        listed = [g for g in listed if not authz.group_denied(ctx, g[0], authz.Op.DESCRIBE)]
    return R(error_code=0, groups=[
        R.ListedGroup(group_id=gid, protocol_type=ptype, group_state=state, group_type=gtype)
        for gid, ptype, state, gtype in listed])


# -------------------------------------------------------------------------------- DescribeGroups
@handles(describe_groups.API, "0-6")
async def handle_describe_groups(ctx: RequestContext, req: describe_groups.DescribeGroupsRequest) -> describe_groups.DescribeGroupsResponse:
    R = describe_groups.RESPONSE
    coord = _coordinator(ctx)
    include_ops = bool(req.include_authorized_operations)
    out, refused = [], []
    for gid in req.groups:
        if code := authz.group_denied(ctx, gid, authz.Op.DESCRIBE):
            # Kafka lists the refused groups first, then the coordinator's answers
            refused.append(R.DescribedGroup(error_code=code, group_id=gid, group_state="", protocol_type="",
                                            protocol_data="", members=[]))
        elif coord is None:
            out.append(R.DescribedGroup(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, group_id=gid,
                                        group_state="", protocol_type="", protocol_data="", members=[]))
        elif ctx.version >= 6 and ctx.services.share_groups.describe(gid) is not None:
            # a share group is not a classic group (Kafka: GroupMetadataManager.describeGroups)
            out.append(R.DescribedGroup(error_code=ErrorCode.GROUP_ID_NOT_FOUND, group_id=gid,
                                        error_message=f"Group {gid} is not a classic group.",
                                        group_state="", protocol_type="", protocol_data="", members=[]))
        else:
            group = coord.describe_group(gid, include_ops)
            if ctx.version >= 6 and group.error_code == 0 and group.group_state == GroupState.DEAD.value:
                # Kafka 4.0 (KIP-1043) reports a missing group as an error from v6 on; before, a
                # client could only tell it by the Dead state (GroupMetadataManager.describeGroups).
                # A KIP-848 consumer group is not a classic group: Dead before v6 too.
                group.error_code = ErrorCode.GROUP_ID_NOT_FOUND
                # so is a KIP-1071 streams group
                not_classic = gid in coord.consumer_groups.groups or gid in coord.streams_groups.groups
                group.error_message = (f"Group {gid} is not a classic group." if not_classic
                                       else f"Group {gid} not found.")
            group.authorized_operations = authorized_ops.group_field(ctx, ctx.version >= 3 and include_ops, group)
            out.append(group)
    return R(groups=refused + out)


# ---------------------------------------------------------------------------------- DeleteGroups
@handles(delete_groups.API, "0-3")
async def handle_delete_groups(ctx: RequestContext, req: delete_groups.DeleteGroupsRequest) -> delete_groups.DeleteGroupsResponse:
    R = delete_groups.RESPONSE
    coord = _coordinator(ctx)
    # DELETE on each group; the refused ones are answered after the others (KafkaApis)
    refused = [g for g in dict.fromkeys(req.groups_names) if authz.group_denied(ctx, g, authz.Op.DELETE)]
    names = [g for g in req.groups_names if g not in refused]
    if coord is None:
        results: list[tuple[str, int]] = [(g, ErrorCode.COORDINATOR_NOT_AVAILABLE) for g in names]
    else:
        share = ctx.services.share_groups
        classic = [g for g in names if share.describe(g) is None]
        codes = dict(coord.delete_groups(classic))
        for g in names:
            if g not in codes:  # KIP-932: a share group's state goes through the persister on a cluster
                admin = share.state_admin
                codes[g] = await admin.delete_share_group(g) if admin is not None else share.delete_group(g)
        results = [(g, codes[g]) for g in names]
    results += [(g, ErrorCode.GROUP_AUTHORIZATION_FAILED) for g in refused]
    return R(results=[R.DeletableGroupResult(group_id=g, error_code=e) for g, e in results])


# ---------------------------------------------------------------------------------- OffsetDelete
@handles(offset_delete.API, "0")
async def handle_offset_delete(ctx: RequestContext, req: offset_delete.OffsetDeleteRequest) -> offset_delete.OffsetDeleteResponse:
    R = offset_delete.RESPONSE
    # DELETE on the group (a top-level error), then READ on each topic (per partition; KafkaApis)
    if code := authz.group_denied(ctx, req.group_id, authz.Op.DELETE):
        return R(error_code=code)
    coord = _coordinator(ctx)
    if coord is None:
        return R(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    services = ctx.services
    unknown: dict[tuple[str, int], int] = {}
    unreadable = authz.denied_topics(ctx, (t.name for t in req.topics), authz.Op.READ)
    wanted = []
    for t in req.topics:
        if t.name in unreadable:
            unknown.update(((t.name, p.partition_index), ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in t.partitions)
            continue
        topic = services.metadata_cache.topic(t.name)
        parts = []
        for p in t.partitions:
            if topic is None or p.partition_index not in topic.partitions:
                unknown[(t.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                parts.append(p.partition_index)
        if parts:
            wanted.append((t.name, parts))
    error, results = coord.delete_offsets(req.group_id, wanted)
    if error:
        return R(error_code=error)
    errors = {(t, p): e for t, parts in results for p, e in parts}
    errors.update(unknown)
    return R(error_code=0, topics=[
        R.OffsetDeleteResponseTopic(name=t.name, partitions=[
            R.OffsetDeleteResponsePartition(partition_index=p.partition_index,
                                            error_code=errors.get((t.name, p.partition_index), 0))
            for p in t.partitions])
        for t in req.topics])
