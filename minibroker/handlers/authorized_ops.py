"""KIP-430 authorized operations: the int32 bit fields that Metadata v8+, DescribeGroups v3+,
DescribeCluster, DescribeTopicPartitions, ConsumerGroupDescribe and ShareGroupDescribe carry when a
client asks for them (Kafka: AuthHelper.authorizedOperations, called from KafkaApis and
DescribeTopicPartitionsRequestHandler).

The field holds bit `code` for each AclOperation the requesting principal may perform on the
resource, drawn from the operations its type supports. Without an authorizer every supported
operation is allowed (Authorizer.authorize answers yes when disabled), so the set is the full one;
not asked for, the field keeps the schema default Integer.MIN_VALUE.

Which entries get a value follows Kafka: the resources that were described (no error, or in
Metadata and DescribeTopicPartitions a topic the principal may DESCRIBE that does not exist); an
entry refused for authorization keeps the default. This module registers no handler; each handler
calls it in one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.handlers.registry import RequestContext
from minibroker.security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from minibroker_protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker_protocol.apis import (
        consumer_group_describe,
        describe_groups,
        metadata,
        streams_group_describe,
    )

OMITTED = -(1 << 31)  # Integer.MIN_VALUE: the schema default, "not asked for"
# entries Kafka answers without describing the resource, so without operations
_NOT_DESCRIBED = frozenset({ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_TOPIC_ID})


def operations(ctx: RequestContext, rtype: ResourceType, name: str) -> int:
    """The bit field of the operations the client may perform on the resource."""
    principal, host = ctx.principal
    return ctx.services.authorizer.authorized_operations(principal, host, rtype, name)


def cluster(ctx: RequestContext) -> int:
    return operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)


def group(ctx: RequestContext, group_id: str) -> int:
    return operations(ctx, ResourceType.GROUP, group_id)


def topic(ctx: RequestContext, name: str) -> int:
    return operations(ctx, ResourceType.TOPIC, name)


def fill_topics(ctx: RequestContext, topics: list[metadata.MetadataResponse.MetadataResponseTopic]) -> None:
    """Set `topic_authorized_operations` on each described topic entry (Metadata's
    MetadataResponseTopic)."""
    for t in topics:
        if t.name is not None and t.error_code not in _NOT_DESCRIBED:
            t.topic_authorized_operations = operations(ctx, ResourceType.TOPIC, t.name)


def fill_metadata(ctx: RequestContext, req: metadata.MetadataRequest, resp: metadata.MetadataResponse) -> None:
    """Metadata v8+: topic operations when asked; v8-10 also the cluster's, which are 0 for a
    principal that may not DESCRIBE the cluster (Kafka: KafkaApis.handleTopicMetadataRequest)."""
    if ctx.version < 8:
        return
    if req.include_topic_authorized_operations:
        fill_topics(ctx, resp.topics)
    if ctx.version <= 10 and req.include_cluster_authorized_operations:
        resp.cluster_authorized_operations = (
            cluster(ctx) if ctx.authorized(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME) else 0)


def group_field(ctx: RequestContext, asked: bool, described: describe_groups.DescribeGroupsResponse.DescribedGroup
                | consumer_group_describe.ConsumerGroupDescribeResponse.DescribedGroup
                | streams_group_describe.StreamsGroupDescribeResponse.DescribedGroup) -> int:
    """DescribeGroups v3+, ConsumerGroupDescribe, ShareGroupDescribe: the `authorized_operations`
    of one group entry -- its operations when asked and the group was described without error,
    the default otherwise (Kafka sets them on the entries whose error code is NONE)."""
    return group(ctx, described.group_id) if asked and described.error_code == ErrorCode.NONE else OMITTED
