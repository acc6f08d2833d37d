"""The per-API ACL checks the handlers make, with Kafka's errors (Kafka: the authorize calls of
KafkaApis / AuthHelper). Each handler calls one of these in a line or two; without an authorizer
every check passes at the cost of one attribute test. docs/security.md has the table of APIs and
the operation each checks. This module registers no handler."""

from __future__ import annotations

from collections.abc import Iterable

from minibroker.handlers.registry import RequestContext
from minibroker.security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from minibroker_protocol.errors import ErrorCode, KafkaError

Op = AclOperation
_DENIED = {ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
           ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
           ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
           ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}


def require(ctx: RequestContext, op: AclOperation, rtype: ResourceType, name: str) -> None:
    """Raise Kafka's *_AUTHORIZATION_FAILED for the resource type unless `op` is allowed."""
    if ctx.services.authorizer.enabled and not ctx.authorized(op, rtype, name):
        raise KafkaError(_DENIED[rtype])


def denied(ctx: RequestContext, op: AclOperation, rtype: ResourceType, name: str) -> int:
    """0, or the error code for a request on the resource that `op` is not allowed on."""
    if ctx.services.authorizer.enabled and not ctx.authorized(op, rtype, name):
        return _DENIED[rtype]
    return 0


def group_denied(ctx: RequestContext, group_id: str, op: AclOperation = Op.READ) -> int:
    return denied(ctx, op, ResourceType.GROUP, group_id)


def topic_denied(ctx: RequestContext, name: str | None, op: AclOperation) -> bool:
    return name is not None and denied(ctx, op, ResourceType.TOPIC, name) != 0


def require_produce(ctx: RequestContext, transactional_id: str | None, topic: str) -> None:
    """Produce: WRITE on the transactional id (if any), then WRITE on the topic."""
    if ctx.services.authorizer.enabled:
        if transactional_id:
            require(ctx, Op.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)
        require(ctx, Op.WRITE, ResourceType.TOPIC, topic)


def may_create_topic(ctx: RequestContext, name: str) -> bool:
    """CREATE on the cluster or on the topic (Kafka: CreateTopics and Metadata's auto-create)."""
    return (not ctx.services.authorizer.enabled or ctx.authorized(Op.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
            or ctx.authorized(Op.CREATE, ResourceType.TOPIC, name))


def unreadable_topics(ctx: RequestContext, names: Iterable[str | None], op: AclOperation = Op.READ) -> set[str]:
    """The topics among `names` that `op` is not allowed on (Fetch: READ)."""
    if not ctx.services.authorizer.enabled:
        return set()
    return {n for n in set(names) if n is not None and topic_denied(ctx, n, op)}


def init_producer_id_denied(ctx: RequestContext, transactional_id: str | None) -> int:
    """InitProducerId: WRITE on the transactional id; an idempotent producer IDEMPOTENT_WRITE on the
    cluster or WRITE on some topic (Kafka 3.0+, KIP-679: authorizeByResourceType)."""
    auth = ctx.services.authorizer
    if not auth.enabled:
        return 0
    if transactional_id is not None:
        return denied(ctx, Op.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)
    principal, host = ctx.principal
    if ctx.authorized(Op.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME) or auth.authorize_any(
            principal, host, Op.WRITE, ResourceType.TOPIC):
        return 0
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def enabled(ctx: RequestContext) -> bool:
    return ctx.services.authorizer.enabled


def allowed(ctx: RequestContext, op: AclOperation, rtype: ResourceType, name: str) -> bool:
    """Whether `op` is allowed on the resource (always without an authorizer)."""
    return not ctx.services.authorizer.enabled or ctx.authorized(op, rtype, name)


def require_cluster(ctx: RequestContext, op: AclOperation) -> None:
    """Raise CLUSTER_AUTHORIZATION_FAILED unless `op` is allowed on the cluster (Kafka:
    AuthHelper.authorizeClusterOperation); the dispatcher answers with the API's error response."""
    require(ctx, op, ResourceType.CLUSTER, CLUSTER_NAME)


def cluster_denied(ctx: RequestContext, op: AclOperation) -> int:
    return denied(ctx, op, ResourceType.CLUSTER, CLUSTER_NAME)


def denied_topics(ctx: RequestContext, names: Iterable[str | None], op: AclOperation) -> set[str]:
    """The topics among `names` that `op` is not allowed on (Kafka: AuthHelper.filterByAuthorized,
    the complement)."""
    return unreadable_topics(ctx, names, op)


# Kafka's default texts of the authorization errors (Errors.*.message()), which some answers carry
# (ConfigHelper, the share-group APIs, getErrorResponse of an exception made from the code)
MESSAGES: dict[int, str] = {ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
            ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed."}
