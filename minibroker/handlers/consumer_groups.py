"""The KIP-848 consumer group APIs: ConsumerGroupHeartbeat v0-1, ConsumerGroupDescribe v0-1.

Behavior: the heartbeat is the whole protocol of a consumer-protocol member -- join (epoch 0),
stay (its epoch, owned partitions when they changed), leave (-1, or -2 for a static member) --
and the coordinator answers with the member's epoch and assignment
(minibroker/coordinator/group/consumer_group_manager.py). Advertising key 68 is what makes franz-go
use this protocol by default, and what `group.protocol=consumer` needs in librdkafka and the
Java client.

GROUP config resources (type 32): the consumer.* keys (`consumer.session.timeout.ms`,
`consumer.heartbeat.interval.ms`, and `consumer.assignment.interval.ms` without effect) are described and altered here, for handlers/configs.py
(minibroker/coordinator/group/consumer_group_configs.py holds and persists them).

Version notes:
- ConsumerGroupHeartbeat: v0 the broker makes up the member id of a joining member; v1 (KIP-1082)
  the client makes it and an empty one is INVALID_REQUEST, and SubscribedTopicRegex (server-side
  regex, KIP-848) appears.
- ConsumerGroupDescribe: v1 adds each member's type (1: consumer protocol).
"""

from __future__ import annotations

from minibroker.config import ConfigEntry, ConfigSource, ConfigType, OpType
from minibroker.coordinator.group.consumer_group_configs import BROKER_KEYS, GROUP_KEYS, ConsumerGroupConfigs
from minibroker.handlers import authorized_ops, authz
from minibroker.handlers.registry import RequestContext, handles
from minibroker.services import BrokerServices
from minibroker_protocol.apis import consumer_group_describe, consumer_group_heartbeat
from minibroker_protocol.errors import ErrorCode, KafkaError


@handles(consumer_group_heartbeat.API, "0-1")
async def handle_consumer_group_heartbeat(ctx: RequestContext, req: consumer_group_heartbeat.ConsumerGroupHeartbeatRequest) -> consumer_group_heartbeat.ConsumerGroupHeartbeatResponse:
    # READ on the group, then DESCRIBE on every subscribed topic name (KafkaApis, Kafka 4.1+)
    if code := authz.group_denied(ctx, req.group_id):
        return consumer_group_heartbeat.RESPONSE(error_code=code)
    if req.subscribed_topic_names and authz.denied_topics(ctx, req.subscribed_topic_names, authz.Op.DESCRIBE):
        return consumer_group_heartbeat.RESPONSE(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    coord = ctx.services.group_coordinator
    if coord is None or not coord.active:
        return consumer_group_heartbeat.RESPONSE(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    # the topic for the group's records must exist before the first one is written
    await coord.store.ensure_topic_async()
    if code := coord.store.coordinator_error(req.group_id):  # led elsewhere, or loading
        return consumer_group_heartbeat.RESPONSE(error_code=code)
    may_describe = None
    if authz.enabled(ctx):  # a regex subscription gets only the topics the member may DESCRIBE
        def may_describe(topic: str) -> bool:
            return authz.allowed(ctx, authz.Op.DESCRIBE, authz.ResourceType.TOPIC, topic)
    resp = coord.consumer_groups.heartbeat(req, ctx.version, ctx.client_id or "", ctx.client_host, may_describe)
    if not resp.error_code:  # answered once its records are replicated (Kafka: the runtime's write)
        code = await coord.store.wait_replicated(req.group_id, ctx.services.config.get("offsets.commit.timeout.ms"))
        if code:
            return consumer_group_heartbeat.RESPONSE(error_code=ErrorCode.NOT_COORDINATOR
                                                     if code == ErrorCode.NOT_LEADER_OR_FOLLOWER
                                                     else ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return resp


@handles(consumer_group_describe.API, "0-1")
async def handle_consumer_group_describe(ctx: RequestContext, req: consumer_group_describe.ConsumerGroupDescribeRequest) -> consumer_group_describe.ConsumerGroupDescribeResponse:
    R = consumer_group_describe.RESPONSE
    coord = ctx.services.group_coordinator
    out, refused = [], []
    for gid in req.group_ids:
        if code := authz.group_denied(ctx, gid, authz.Op.DESCRIBE):
            refused.append(R.DescribedGroup(error_code=code, group_id=gid, group_state="", members=[]))
            continue
        if coord is None or not coord.active:
            out.append(R.DescribedGroup(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, group_id=gid, group_state="",
                                        members=[]))
            continue
        g = coord.consumer_groups.describe(gid, ctx.version)
        g.authorized_operations = authorized_ops.group_field(ctx, req.include_authorized_operations, g)  # KIP-430
        out.append(g)
    return R(groups=[_hide_undescribable(ctx, R, g) for g in refused + out])


def _hide_undescribable(ctx: RequestContext, R: consumer_group_describe._ConsumerGroupDescribeResponseSchema,
                        g: consumer_group_describe.ConsumerGroupDescribeResponse.DescribedGroup
                        ) -> consumer_group_describe.ConsumerGroupDescribeResponse.DescribedGroup:
    """A group whose members' assignments name a topic the client may not DESCRIBE is answered
    TOPIC_AUTHORIZATION_FAILED without members (KafkaApis.handleConsumerGroupDescribe, Kafka 4.1+)."""
    if not authz.enabled(ctx) or not g.members:
        return g
    names = {tp.topic_name for m in g.members for a in (m.assignment, m.target_assignment) if a is not None
             for tp in a.topic_partitions}
    if not authz.denied_topics(ctx, names, authz.Op.DESCRIBE):
        return g
    return R.DescribedGroup(group_id=g.group_id, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, group_state="",
                            error_message=UNDESCRIBABLE_TOPICS, members=[])


UNDESCRIBABLE_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


# --------------------------------------------------------------------- GROUP config resources
class _ConsumerGroupConfigs:
    """consumer.* keys of GROUP resources (Kafka's GroupConfig), for handlers/configs.py."""

    def group_keys(self) -> frozenset[str]:
        return GROUP_KEYS

    def describe_group(self, services: BrokerServices, group: str) -> list[ConfigEntry]:
        store = services.consumer_group_configs
        own = store.configs.get(group, {})
        out = []
        for name in sorted(GROUP_KEYS):
            # synonyms as Kafka lists them: the group's own value, then the broker default it overrides
            broker_key = BROKER_KEYS[name][0]
            synonyms: list[tuple[str, str | None, int]] = [
                (broker_key, str(services.config.get(broker_key)), int(ConfigSource.DEFAULT_CONFIG))]
            if name in own:
                synonyms.insert(0, (name, str(own[name]), int(ConfigSource.GROUP_CONFIG)))
            out.append(ConfigEntry(name=name, value=str(store.value(group, name, services.config)),
                                   source=ConfigSource.GROUP_CONFIG if name in own else ConfigSource.DEFAULT_CONFIG,
                                   is_default=name not in own, read_only=False, sensitive=False,
                                   synonyms=synonyms, type=ConfigType.INT))
        return out

    def alter_group(self, services: BrokerServices, group: str, ops: list[tuple[str, int, str | None]],
                    replace: bool, validate_only: bool) -> None:
        store = services.consumer_group_configs
        configs = {} if replace else dict(store.configs.get(group, {}))
        for name, op, value in ops:
            if OpType(op) is OpType.SET:
                if value is not None:
                    configs[name] = ConsumerGroupConfigs.validate(name, value, services.config)
            elif OpType(op) is OpType.DELETE:
                configs.pop(name, None)
            else:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Config value append is not allowed for config key: {name}")
        if not validate_only:
            store.set(group, configs)


# the consumer.* keys of GROUP resources, read by handlers/configs.py (GROUP_CONFIG_PROVIDERS)
GROUP_CONFIGS = _ConsumerGroupConfigs()
