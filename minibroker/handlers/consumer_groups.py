"""The KIP-848 consumer group APIs: ConsumerGroupHeartbeat v0-1, ConsumerGroupDescribe v0-1.

Behavior: the heartbeat is the whole protocol of a consumer-protocol member -- join (epoch 0),
stay (its epoch, owned partitions when they changed), leave (-1, or -2 for a static member) --
and the coordinator answers with the member's epoch and assignment
(minibroker/coordinator/consumer_group_manager.py). Advertising key 68 is what makes franz-go
use this protocol by default, and what `group.protocol=consumer` needs in librdkafka and the
Java client.

Version notes:
- ConsumerGroupHeartbeat: v0 the broker makes up the member id of a joining member; v1 (KIP-1082)
  the client makes it and an empty one is INVALID_REQUEST, and SubscribedTopicRegex (server-side
  regex, KIP-848) appears.
- ConsumerGroupDescribe: v1 adds each member's type (1: consumer protocol).
"""

from __future__ import annotations

from typing import Any

from minibroker.handlers.registry import RequestContext, handles
from protocol.apis import consumer_group_describe, consumer_group_heartbeat
from protocol.errors import ErrorCode


@handles(consumer_group_heartbeat.API, "0-1")
async def handle_consumer_group_heartbeat(ctx: RequestContext, req: Any) -> Any:
    coord = ctx.services.group_coordinator
    if coord is None or not coord.active:
        return consumer_group_heartbeat.RESPONSE(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    # the topic for the group's records must exist before the first one is written
    await coord.store.ensure_topic_async()
    return coord.consumer_groups.heartbeat(req, ctx.version, ctx.client_id or "", ctx.client_host)


@handles(consumer_group_describe.API, "0-1")
async def handle_consumer_group_describe(ctx: RequestContext, req: Any) -> Any:
    R = consumer_group_describe.RESPONSE
    coord = ctx.services.group_coordinator
    out = []
    for gid in req.group_ids:
        if coord is None or not coord.active:
            out.append(R.DescribedGroup(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, group_id=gid, group_state="",
                                        members=[]))
            continue
        g = coord.consumer_groups.describe(gid, ctx.version)
        if req.include_authorized_operations and g.error_code == 0:
            g.authorized_operations = _GROUP_OPERATIONS
        out.append(g)
    return R(groups=out)


# READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS as a bit set (Kafka: AclOperation codes
# 3, 6, 8, 10, 11): what a group resource allows, all of it without an authorizer.
_GROUP_OPERATIONS = sum(1 << op for op in (3, 6, 8, 10, 11))
