"""ACLs and ACL filters from the CreateAcls / DescribeAcls / DeleteAcls messages (Kafka:
AclCreation / AclBindingFilter conversions of AclControlManager and AclApis), shared by the
broker's handlers and the controller: a code this side does not know becomes UNKNOWN, which the
validation then names, as Kafka's does."""

from __future__ import annotations

from enum import IntEnum
from typing import TypeVar

from minibroker.security.authorizer import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from minibroker_protocol.apis import create_acls, delete_acls, describe_acls

_E = TypeVar("_E", bound=IntEnum)


def enum_or_unknown(cls: type[_E], v: int) -> _E:
    try:
        return cls(v)
    except ValueError:
        return cls(0)  # UNKNOWN


def acl_from_creation(c: create_acls.CreateAclsRequest.AclCreation) -> AclBinding:
    return AclBinding(enum_or_unknown(ResourceType, c.resource_type), c.resource_name,
                      enum_or_unknown(PatternType, c.resource_pattern_type), c.principal, c.host,
                      enum_or_unknown(AclOperation, c.operation), enum_or_unknown(AclPermissionType, c.permission_type))


def acl_filter(r: describe_acls.DescribeAclsRequest | delete_acls.DeleteAclsRequest.DeleteAclsFilter) -> AclBindingFilter:
    return AclBindingFilter(enum_or_unknown(ResourceType, r.resource_type_filter), r.resource_name_filter,
                            enum_or_unknown(PatternType, r.pattern_type_filter), r.principal_filter, r.host_filter,
                            enum_or_unknown(AclOperation, r.operation),
                            enum_or_unknown(AclPermissionType, r.permission_type))


NO_AUTHORIZER = "No Authorizer is configured."
CLUSTER_DENIED = "Cluster authorization failed."


def create_acls_refused(req: create_acls.CreateAclsRequest, code: int, message: str) -> create_acls.CreateAclsResponse:
    """Every creation answered `code` (CLUSTER_AUTHORIZATION_FAILED, SECURITY_DISABLED: AclApis)."""
    C = create_acls.RESPONSE
    return C(throttle_time_ms=0, results=[C.AclCreationResult(error_code=code, error_message=message)
                                          for _ in req.creations])


def delete_acls_refused(req: delete_acls.DeleteAclsRequest, code: int, message: str) -> delete_acls.DeleteAclsResponse:
    """Every filter answered `code`, nothing matched."""
    D = delete_acls.RESPONSE
    return D(throttle_time_ms=0, filter_results=[
        D.DeleteAclsFilterResult(error_code=code, error_message=message, matching_acls=[]) for _ in req.filters])
