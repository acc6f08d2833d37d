"""The KIP-1071 streams group APIs: StreamsGroupHeartbeat v0-1, StreamsGroupDescribe v0-1,
StreamsGroupTopologyDescriptionUpdate v0 (KIP-1331).

Behavior: the heartbeat is the whole protocol of a Kafka Streams member started with
`group.protocol=streams` -- join with the topology (epoch 0), stay, leave (-1, or -2 for a static
member) -- and the coordinator answers with the member's epoch, its active/standby/warm-up tasks
and the group's status (minibroker/coordinator/group/streams_group_manager.py). Before the
heartbeat runs, the internal topics the topology needs (repartition and changelog topics with the
partition counts the coordinator derived) are created here, as Kafka's coordinator has them
created (KIP-1071: the broker, not the client, creates them); a failed creation shows in the
response's MISSING_INTERNAL_TOPICS status.

Version notes:
- StreamsGroupHeartbeat: v1 (KIP-1331) adds TopologyDescriptionRequired (always false here: no
  topology description plugin) and the int64 AcceptableRecoveryLag.
- StreamsGroupTopologyDescriptionUpdate v0: served as Kafka 4.4 serves it without
  group.streams.topology.description.plugin.class (its default): UNSUPPORTED_VERSION with Kafka's
  message for every request, the group and member not looked at.
- StreamsGroupDescribe: v1 adds TopologyDescription (null; status NOT_STORED when asked for)
  and AssignorName ("sticky", the only assignor).
"""

from __future__ import annotations

import logging

from minibroker.features import STREAMS_VERSION
from minibroker.handlers import authorized_ops, authz
from minibroker.handlers.registry import RequestContext, handles
from minibroker_protocol.apis import (
    streams_group_describe,
    streams_group_heartbeat,
    streams_group_topology_description_update,
)
from minibroker_protocol.errors import ErrorCode, KafkaError

log = logging.getLogger("minibroker.handlers.streams_groups")

TOPOLOGY_DESCRIPTION_NOT_REQUESTED = 0
TOPOLOGY_DESCRIPTION_NOT_STORED = 1


def _streams_enabled(ctx: RequestContext) -> bool:
    """streams.version >= 1 finalized (Kafka: KafkaApis.isStreamsGroupProtocolEnabled, checked
    before anything else): a cluster formatted with streams.version=0 serves no streams group."""
    return ctx.services.feature_levels().finalized.get(STREAMS_VERSION, 0) >= 1


@handles(streams_group_heartbeat.API, "0-1")
async def handle_streams_group_heartbeat(ctx: RequestContext, req: streams_group_heartbeat.StreamsGroupHeartbeatRequest
                                         ) -> streams_group_heartbeat.StreamsGroupHeartbeatResponse:
    R = streams_group_heartbeat.RESPONSE
    if not _streams_enabled(ctx):
        return R(error_code=ErrorCode.UNSUPPORTED_VERSION)
    if code := authz.group_denied(ctx, req.group_id):
        return R(error_code=code)
    coord = ctx.services.group_coordinator
    if coord is None or not coord.active:
        return R(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    await coord.store.ensure_topic_async()
    topics = ctx.services.topics
    # the partitions in the cluster's metadata, not this broker's replicas (CoordinatorMetadataImage)
    partitions_of = {t.name: t.num_partitions for t in ctx.services.metadata_cache.topics()}
    if req.member_epoch >= 0:
        for name, (n, configs) in coord.streams_groups.topics_to_create(req, partitions_of).items():
            try:
                overrides = topics.check_new_topic(name, n, ctx.services.config.get("default.replication.factor"),
                                                   dict(configs))
                await topics.create_async(name, n, overrides)
                partitions_of[name] = n  # made with n (a KRaft broker holds only its replicas of them)
            except KafkaError as e:
                log.warning("Streams group %s: creating internal topic %s failed: %s", req.group_id, name, e)
    return coord.streams_groups.heartbeat(req, ctx.client_id or "", ctx.client_host, partitions_of)


@handles(streams_group_describe.API, "0-1")
async def handle_streams_group_describe(ctx: RequestContext, req: streams_group_describe.StreamsGroupDescribeRequest
                                        ) -> streams_group_describe.StreamsGroupDescribeResponse:
    R = streams_group_describe.RESPONSE
    if not _streams_enabled(ctx):
        return R(groups=[R.DescribedGroup(error_code=ErrorCode.UNSUPPORTED_VERSION, group_id=gid, group_state="",
                                          members=[]) for gid in req.group_ids])
    coord = ctx.services.group_coordinator
    out = []
    for gid in req.group_ids:
        if code := authz.group_denied(ctx, gid, authz.Op.DESCRIBE):
            out.append(R.DescribedGroup(error_code=code, group_id=gid, group_state="", members=[]))
            continue
        if coord is None or not coord.active:
            out.append(R.DescribedGroup(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, group_id=gid, group_state="",
                                        members=[]))
            continue
        g = coord.streams_groups.describe(gid)
        if g.error_code == ErrorCode.NONE:
            g.authorized_operations = authorized_ops.group_field(ctx, req.include_authorized_operations, g)
            g.topology_description_status = (TOPOLOGY_DESCRIPTION_NOT_STORED
                                              if ctx.version >= 1 and req.include_topology_description
                                              else TOPOLOGY_DESCRIPTION_NOT_REQUESTED)
        out.append(g)
    return R(groups=out)


@handles(streams_group_topology_description_update.API, "0")
async def handle_streams_group_topology_description_update(
        ctx: RequestContext, req: streams_group_topology_description_update.StreamsGroupTopologyDescriptionUpdateRequest
) -> streams_group_topology_description_update.StreamsGroupTopologyDescriptionUpdateResponse:
    """Kafka 4.4 with no StreamsGroupTopologyDescriptionPlugin (KIP-1331) refuses every push, for any
    group, member or epoch; the heartbeat never asks for one (TopologyDescriptionRequired false)."""
    R = streams_group_topology_description_update.RESPONSE
    if code := authz.group_denied(ctx, req.group_id):
        return R(error_code=code)
    return R(error_code=ErrorCode.UNSUPPORTED_VERSION,
             error_message="The broker has no streams group topology description plugin configured.")
