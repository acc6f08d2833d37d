"""DescribeAcls v1-3, CreateAcls v1-3, DeleteAcls v1-3 (v0 is gone from Kafka 4's definitions).

Behavior as Kafka's KafkaApis/AclApis: DescribeAcls needs DESCRIBE on the CLUSTER, Create/DeleteAcls
ALTER on it (else CLUSTER_AUTHORIZATION_FAILED, for the request or each item); without an
authorizer every answer is SECURITY_DISABLED; an ACL or filter with an UNKNOWN/ANY where a value
is needed is INVALID_REQUEST with the controller's message (minibroker.security.authorizer).
"""

from __future__ import annotations

import logging

from minibroker.handlers.registry import RequestContext, handles
from minibroker.security.acl_requests import (
    CLUSTER_DENIED,
    NO_AUTHORIZER,
    acl_filter,
    acl_from_creation,
    create_acls_refused,
    delete_acls_refused,
)
from minibroker.security.authorizer import CLUSTER_NAME, AclOperation, ResourceType, validate_new_acl
from minibroker_protocol.apis import create_acls, delete_acls, describe_acls
from minibroker_protocol.errors import ErrorCode

log = logging.getLogger("minibroker.security")



def _cluster_allowed(ctx: RequestContext, op: AclOperation) -> bool:
    return ctx.authorized(op, ResourceType.CLUSTER, CLUSTER_NAME)


R = describe_acls.RESPONSE


@handles(describe_acls.API, "1-3")
async def handle_describe_acls(ctx: RequestContext, req: describe_acls.DescribeAclsRequest) -> describe_acls.DescribeAclsResponse:
    auth = ctx.services.authorizer
    if not _cluster_allowed(ctx, AclOperation.DESCRIBE):
        return R(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=CLUSTER_DENIED, resources=[])
    if not auth.enabled:
        return R(error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER, resources=[])
    f = acl_filter(req)
    why = f.invalid_reason()
    if why is not None:
        return R(error_code=ErrorCode.INVALID_REQUEST, error_message=why, resources=[])
    by_pattern: dict[tuple[int, str, int], list[describe_acls.DescribeAclsResponse.AclDescription]] = {}
    for a in auth.describe(f):
        by_pattern.setdefault((a.resource_type, a.resource_name, a.pattern_type), []).append(
            R.AclDescription(principal=a.principal, host=a.host, operation=a.operation,
                             permission_type=a.permission))
    return R(error_code=0, error_message=None, resources=[
        R.DescribeAclsResource(resource_type=rt, resource_name=name, pattern_type=pt, acls=acls)
        for (rt, name, pt), acls in by_pattern.items()])


C = create_acls.RESPONSE


@handles(create_acls.API, "1-3")
async def handle_create_acls(ctx: RequestContext, req: create_acls.CreateAclsRequest) -> create_acls.CreateAclsResponse:
    auth = ctx.services.authorizer
    if not _cluster_allowed(ctx, AclOperation.ALTER):
        return create_acls_refused(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED)
    if not auth.enabled:
        return create_acls_refused(req, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    results, valid = [], []
    for c in req.creations:
        acl = acl_from_creation(c)
        why = validate_new_acl(acl)
        if why is None:
            valid.append(acl)
            results.append(C.AclCreationResult(error_code=0, error_message=None))
        else:
            results.append(C.AclCreationResult(error_code=ErrorCode.INVALID_REQUEST, error_message=why))
    if valid:
        auth.create(valid)
        log.info("%s created ACLs: %s", ctx.principal[0], valid)
    return C(results=results)


D = delete_acls.RESPONSE


@handles(delete_acls.API, "1-3")
async def handle_delete_acls(ctx: RequestContext, req: delete_acls.DeleteAclsRequest) -> delete_acls.DeleteAclsResponse:
    auth = ctx.services.authorizer

    if not _cluster_allowed(ctx, AclOperation.ALTER):
        return delete_acls_refused(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED)
    if not auth.enabled:
        return delete_acls_refused(req, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    filters = [acl_filter(f) for f in req.filters]
    valid = [f for f in filters if f.invalid_reason() is None]
    removed = iter(auth.delete(valid))
    results = []
    for f in filters:
        why = f.invalid_reason()
        if why is not None:
            results.append(D.DeleteAclsFilterResult(error_code=ErrorCode.INVALID_REQUEST, error_message=why,
                                                     matching_acls=[]))
            continue
        gone = next(removed)
        results.append(D.DeleteAclsFilterResult(error_code=0, error_message=None, matching_acls=[
            D.DeleteAclsMatchingAcl(error_code=0, error_message=None, resource_type=a.resource_type,
                                    resource_name=a.resource_name, pattern_type=a.pattern_type,
                                    principal=a.principal, host=a.host, operation=a.operation,
                                    permission_type=a.permission) for a in gone]))
    if any(r.matching_acls for r in results):
        log.info("%s deleted %d ACLs", ctx.principal[0], sum(len(r.matching_acls) for r in results))
    return D(filter_results=results)
