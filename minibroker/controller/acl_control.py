"""ACLs in the metadata log (Kafka: AclControlManager).

In KRaft mode the ACLs are the AccessControlEntryRecords of the metadata log, so every broker
decides on the same rules: a broker forwards CreateAcls and DeleteAcls here (after checking ALTER on
the cluster and that it has an authorizer, as Kafka's ControllerApis does with the Envelope's
principal), and its AclPublisher hands the image's ACLs to its authorizer.

CreateAcls: each creation is validated as Kafka's controller validates it (INVALID_REQUEST with
the same message); one that already exists is a success that writes nothing; a new one is an
AccessControlEntryRecord with a fresh id. DeleteAcls: each valid filter removes the ACLs it matches
(RemoveAccessControlEntryRecord by id) and lists them; an ACL two filters match is removed and
listed once, by the first (Kafka: deletedIds).
"""

from __future__ import annotations

import uuid

from minibroker.metadata.image import MetadataImage, acl_record
from minibroker.security.acl_requests import acl_filter, acl_from_creation
from minibroker.security.authorizer import validate_new_acl
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.apis import create_acls, delete_acls
from minibroker_protocol.apis.create_acls import CreateAclsRequest, CreateAclsResponse
from minibroker_protocol.apis.delete_acls import DeleteAclsRequest, DeleteAclsResponse
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.metadata_serde import ApiMessageAndVersion


def create_acls_records(image: MetadataImage, req: CreateAclsRequest
                        ) -> tuple[list[ApiMessageAndVersion], CreateAclsResponse]:
    C = create_acls.RESPONSE
    existing = set(image.acls.values())
    records: list[ApiMessageAndVersion] = []
    results = []
    for c in req.creations:
        acl = acl_from_creation(c)
        why = validate_new_acl(acl)
        if why is not None:
            results.append(C.AclCreationResult(error_code=ErrorCode.INVALID_REQUEST, error_message=why))
            continue
        if acl not in existing:
            existing.add(acl)
            records.append(ApiMessageAndVersion(acl_record(uuid.uuid4(), acl), 0))
        results.append(C.AclCreationResult(error_code=0, error_message=None))
    return records, C(throttle_time_ms=0, results=results)


def delete_acls_records(image: MetadataImage, req: DeleteAclsRequest
                        ) -> tuple[list[ApiMessageAndVersion], DeleteAclsResponse]:
    D = delete_acls.RESPONSE
    deleted: set[uuid.UUID] = set()
    records: list[ApiMessageAndVersion] = []
    results = []
    for raw in req.filters:
        f = acl_filter(raw)
        why = f.invalid_reason()
        if why is not None:
            results.append(D.DeleteAclsFilterResult(error_code=ErrorCode.INVALID_REQUEST, error_message=why,
                                                     matching_acls=[]))
            continue
        gone = [(i, a) for i, a in sorted(image.acls.items(), key=lambda kv: kv[1])
                if i not in deleted and f.matches(a)]
        for i, _ in gone:
            deleted.add(i)
            records.append(ApiMessageAndVersion(mr.REMOVE_ACCESS_CONTROL_ENTRY_RECORD(id=i), 0))
        results.append(D.DeleteAclsFilterResult(error_code=0, error_message=None, matching_acls=[
            D.DeleteAclsMatchingAcl(error_code=0, error_message=None, resource_type=a.resource_type,
                                    resource_name=a.resource_name, pattern_type=a.pattern_type,
                                    principal=a.principal, host=a.host, operation=a.operation,
                                    permission_type=a.permission) for _, a in gone]))
    return records, D(throttle_time_ms=0, filter_results=results)
