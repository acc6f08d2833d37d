"""ListConfigResources: v0-1 (KIP-714, KIP-1142).

Behavior (Kafka: KafkaApis.handleListConfigResources): DESCRIBE_CONFIGS on the cluster, else
CLUSTER_AUTHORIZATION_FAILED. The resources of each asked type: TOPIC every topic (internal ones
too), BROKER this node's id, CLIENT_METRICS the subscriptions (minibroker/client_metrics.py; what
`kafka-client-metrics --list` prints), GROUP the groups that have GROUP configs set (not every
group). An empty list asks for every supported type; a type outside them answers UNSUPPORTED_VERSION
with no resources, as Kafka does. BROKER_LOGGER (8) is accepted and lists nothing: minibroker has
no log4j loggers to configure (docs/differences.md#api-versions), where Kafka lists the broker ids.

Version notes: v0 was ListClientMetricsResources: client metrics only, no type field; v1 adds the
resource types asked for and each resource's type.
"""

from __future__ import annotations

from minibroker.handlers import authz
from minibroker.handlers.registry import RequestContext, handles
from minibroker_protocol.apis import list_config_resources
from minibroker_protocol.errors import ErrorCode

R = list_config_resources.RESPONSE
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32  # ConfigResource.Type ids
SUPPORTED = (GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC)  # in the order Kafka lists them


@handles(list_config_resources.API, "0-1")
async def handle_list_config_resources(ctx: RequestContext, req: list_config_resources.ListConfigResourcesRequest) -> list_config_resources.ListConfigResourcesResponse:
    if code := authz.cluster_denied(ctx, authz.Op.DESCRIBE_CONFIGS):
        return R(error_code=code)
    asked = [CLIENT_METRICS] if ctx.version == 0 else (list(req.resource_types) or list(SUPPORTED))
    if any(t not in SUPPORTED for t in asked):
        return R(error_code=ErrorCode.UNSUPPORTED_VERSION)
    services = ctx.services
    out: list[tuple[str, int]] = []
    for rtype in SUPPORTED:
        if rtype not in asked:
            continue
        if rtype == GROUP:
            groups = set(services.consumer_group_configs.configs)
            groups.update(g for g, c in services.coordinators.streams_group_configs.configs.items() if c)
            share = services.coordinators.share_if_built
            if share is not None:
                groups.update(g for g, c in share.group_configs.items() if c)
            out += [(g, GROUP) for g in sorted(groups)]
        elif rtype == CLIENT_METRICS:
            out += [(n, CLIENT_METRICS) for n in services.client_metrics.names()]
        elif rtype == BROKER:
            out.append((str(services.node_id), BROKER))
        elif rtype == TOPIC:
            out += [(t, TOPIC) for t in sorted(services.metadata_cache.topic_names())]
    return R(error_code=0, config_resources=[R.ConfigResource(resource_name=n, resource_type=t) for n, t in out])
