"""The ACL checks of the requests a KRaft broker forwards to the controller (Kafka: the
authorize calls of ControllerApis, made there on the Envelope's principal).

Kafka's broker wraps a forwarded request in an Envelope with the client's principal, and the
controller authorizes it against the ACLs of the metadata log. minibroker's broker makes the same
checks itself before forwarding, against the same ACLs (its authorizer holds the image's, see
minibroker.metadata.acl_publisher), so the client sees Kafka's answers while the controller stays
free of principals: a request refused as a whole raises the error the dispatcher answers with the
API's error response; a request refused for some of its topics or resources forwards the rest and
answers the refused ones with Kafka's per-item error, in the request's order. Without an
authorizer every check is one attribute test and the request goes as it came.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

from minibroker.handlers import authz
from minibroker.handlers.registry import RequestContext
from minibroker.quotas import alterations as quota_alterations
from minibroker.security import scram_alterations
from minibroker.security.acl_requests import (
    CLUSTER_DENIED,
    NO_AUTHORIZER,
    create_acls_refused,
    delete_acls_refused,
)
from minibroker_protocol.apis import (
    alter_client_quotas,
    alter_partition_reassignments,
    alter_user_scram_credentials,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_topics,
    elect_leaders,
    incremental_alter_configs,
    list_partition_reassignments,
    unregister_broker,
    unregister_controller,
    update_features,
)
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.schema import Message

Forward = Callable[[Message], Awaitable[Message]]
ZERO_UUID = uuid.UUID(int=0)

# the APIs refused as a whole without `op` on the cluster (ControllerApis: ElectLeaders,
# UpdateFeatures, UnregisterBroker, UnregisterController and the reassignment APIs ALTER,
# ListPartitionReassignments DESCRIBE)
_CLUSTER_OPS = {elect_leaders.API.key: authz.Op.ALTER, update_features.API.key: authz.Op.ALTER,
                alter_partition_reassignments.API.key: authz.Op.ALTER,
                list_partition_reassignments.API.key: authz.Op.DESCRIBE,
                unregister_broker.API.key: authz.Op.ALTER, unregister_controller.API.key: authz.Op.ALTER}
# config resource types (Kafka: ConfigResource.Type) whose ALTER_CONFIGS is the cluster's
_CLUSTER_CONFIG_TYPES = (4, 8, 16)  # BROKER, BROKER_LOGGER, CLIENT_METRICS
_TOPIC, _GROUP = 2, 32


async def authorized_forward(ctx: RequestContext, api_key: int, request: Message, forward: Forward) -> Message:
    """`forward(request)` with what the client may not do taken out and answered as Kafka answers it."""
    if isinstance(request, create_acls.CreateAclsRequest | delete_acls.DeleteAclsRequest):
        return await _acls(ctx, request, forward)
    if not authz.enabled(ctx):
        return await forward(request)
    if (op := _CLUSTER_OPS.get(api_key)) is not None:
        authz.require_cluster(ctx, op)
        return await forward(request)
    if isinstance(request, alter_user_scram_credentials.AlterUserScramCredentialsRequest):
        if code := authz.cluster_denied(ctx, authz.Op.ALTER):
            return scram_alterations.refused(request, code, ctx.client_id)
        return await forward(request)
    if isinstance(request, alter_client_quotas.AlterClientQuotasRequest):
        if code := authz.cluster_denied(ctx, authz.Op.ALTER_CONFIGS):
            return quota_alterations.refused(request, code, authz.MESSAGES[code])
        return await forward(request)
    if isinstance(request, create_topics.CreateTopicsRequest):
        return await _create_topics(ctx, request, forward)
    if isinstance(request, delete_topics.DeleteTopicsRequest):
        return await _delete_topics(ctx, request, forward)
    if isinstance(request, create_partitions.CreatePartitionsRequest):
        return await _create_partitions(ctx, request, forward)
    if isinstance(request, incremental_alter_configs.IncrementalAlterConfigsRequest):
        return await _alter_configs(ctx, request, forward)
    return await forward(request)


def config_resource_refusal(ctx: RequestContext, resource_type: int, name: str) -> tuple[int, str | None] | None:
    """ALTER_CONFIGS on a config resource (Kafka: ControllerApis.authorizeAlterResource): a
    refused topic or group answers the error's default text, a refused cluster resource none."""
    if resource_type in _CLUSTER_CONFIG_TYPES:
        code = authz.cluster_denied(ctx, authz.Op.ALTER_CONFIGS)
    elif resource_type == _TOPIC:
        code = authz.denied(ctx, authz.Op.ALTER_CONFIGS, authz.ResourceType.TOPIC, name)
    elif resource_type == _GROUP:
        code = authz.denied(ctx, authz.Op.ALTER_CONFIGS, authz.ResourceType.GROUP, name)
    else:
        return None
    if not code:
        return None
    return code, authz.MESSAGES[code] if resource_type in (_TOPIC, _GROUP) else None


async def _acls(ctx: RequestContext, req: create_acls.CreateAclsRequest | delete_acls.DeleteAclsRequest,
                forward: Forward) -> Message:
    """ALTER on the cluster, then an authorizer at all (Kafka's AclApis / ControllerApis answer
    each item CLUSTER_AUTHORIZATION_FAILED, then SECURITY_DISABLED)."""
    refused = authz.cluster_denied(ctx, authz.Op.ALTER)
    code, message = ((refused, CLUSTER_DENIED) if refused else
                     (ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER) if not authz.enabled(ctx) else (0, ""))
    if not code:
        return await forward(req)
    if isinstance(req, create_acls.CreateAclsRequest):
        return create_acls_refused(req, code, message)
    return delete_acls_refused(req, code, message)


async def _create_topics(ctx: RequestContext, req: create_topics.CreateTopicsRequest, forward: Forward) -> Message:
    # a name listed twice goes on to the controller, which answers it INVALID_REQUEST before any
    # authorization (ControllerApis.createTopics)
    names = [t.name for t in req.topics]
    refused = {t.name for t in req.topics if names.count(t.name) == 1 and not authz.may_create_topic(ctx, t.name)}
    if not refused:
        return await forward(req)
    R = create_topics.RESPONSE
    kept = [t for t in req.topics if t.name not in refused]
    answered: list[create_topics.CreateTopicsResponse.CreatableTopicResult] = []
    throttle = 0
    if kept:
        resp = await forward(create_topics.REQUEST(topics=kept, timeout_ms=req.timeout_ms,
                                                   validate_only=req.validate_only))
        assert isinstance(resp, create_topics.CreateTopicsResponse)
        answered, throttle = list(resp.topics), resp.throttle_time_ms
    by_name = {r.name: r for r in answered}
    out = []
    for name in dict.fromkeys(names):
        if name in refused:
            out.append(R.CreatableTopicResult(name=name, topic_id=ZERO_UUID, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                              error_message="Authorization failed.", num_partitions=-1,
                                              replication_factor=-1, configs=[] if ctx.version >= 5 else None))
        elif name in by_name:
            out.append(by_name[name])
    return R(throttle_time_ms=throttle, topics=out)


async def _delete_topics(ctx: RequestContext, req: delete_topics.DeleteTopicsRequest, forward: Forward) -> Message:
    cache = ctx.services.metadata_cache
    wanted = ([(t.name, t.topic_id) for t in req.topics] if ctx.version >= 6
              else [(n, None) for n in req.topic_names])

    def name_of(name: str | None, topic_id: uuid.UUID | None) -> str | None:
        topic = cache.topic_by_id(topic_id) if name is None and topic_id is not None else None
        return name if name is not None else (topic.name if topic is not None else None)

    refused = [i for i, (n, tid) in enumerate(wanted) if authz.topic_denied(ctx, name_of(n, tid), authz.Op.DELETE)]
    if not refused:
        return await forward(req)
    R = delete_topics.RESPONSE
    kept = [i for i in range(len(wanted)) if i not in refused]
    answered: list[delete_topics.DeleteTopicsResponse.DeletableTopicResult] = []
    if kept:
        sub = (delete_topics.REQUEST(topics=[req.topics[i] for i in kept], topic_names=[], timeout_ms=req.timeout_ms)
               if ctx.version >= 6 else
               delete_topics.REQUEST(topics=[], topic_names=[req.topic_names[i] for i in kept],
                                     timeout_ms=req.timeout_ms))
        resp = await forward(sub)
        assert isinstance(resp, delete_topics.DeleteTopicsResponse)
        answered = list(resp.responses)
    it = iter(answered)
    out = []
    for i, (n, tid) in enumerate(wanted):
        if i in refused:
            out.append(R.DeletableTopicResult(name=n, topic_id=tid or ZERO_UUID,
                                              error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message=None))
        elif (r := next(it, None)) is not None:
            out.append(r)
    return R(throttle_time_ms=0, responses=out)


async def _create_partitions(ctx: RequestContext, req: create_partitions.CreatePartitionsRequest,
                             forward: Forward) -> Message:
    refused = {t.name for t in req.topics if authz.topic_denied(ctx, t.name, authz.Op.ALTER)}
    if not refused:
        return await forward(req)
    R = create_partitions.RESPONSE
    kept = [t for t in req.topics if t.name not in refused]
    by_name: dict[str, create_partitions.CreatePartitionsResponse.CreatePartitionsTopicResult] = {}
    if kept:
        resp = await forward(create_partitions.REQUEST(topics=kept, timeout_ms=req.timeout_ms,
                                                       validate_only=req.validate_only))
        assert isinstance(resp, create_partitions.CreatePartitionsResponse)
        by_name = {r.name: r for r in resp.results}
    out = [R.CreatePartitionsTopicResult(name=t.name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                         error_message=None) if t.name in refused else by_name[t.name]
           for t in req.topics if t.name in refused or t.name in by_name]
    return R(throttle_time_ms=0, results=out)


async def _alter_configs(ctx: RequestContext, req: incremental_alter_configs.IncrementalAlterConfigsRequest,
                         forward: Forward) -> Message:
    refusals = [config_resource_refusal(ctx, r.resource_type, r.resource_name) for r in req.resources]
    if not any(refusals):
        return await forward(req)
    R = incremental_alter_configs.RESPONSE
    kept = [r for r, no in zip(req.resources, refusals, strict=True) if no is None]
    answered: list[incremental_alter_configs.IncrementalAlterConfigsResponse.AlterConfigsResourceResponse] = []
    if kept:
        resp = await forward(incremental_alter_configs.REQUEST(resources=kept, validate_only=req.validate_only))
        assert isinstance(resp, incremental_alter_configs.IncrementalAlterConfigsResponse)
        answered = list(resp.responses)
    it = iter(answered)
    out = []
    for r, no in zip(req.resources, refusals, strict=True):
        if no is not None:
            out.append(R.AlterConfigsResourceResponse(error_code=no[0], error_message=no[1],
                                                      resource_type=r.resource_type, resource_name=r.resource_name))
        elif (a := next(it, None)) is not None:
            out.append(a)
    return R(throttle_time_ms=0, responses=out)
