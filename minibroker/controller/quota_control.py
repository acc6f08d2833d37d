"""Client quotas in the metadata log (Kafka: ClientQuotaControlManager).

A broker forwards AlterClientQuotas here (after checking ALTER_CONFIGS on the cluster); the request
is decided as a single broker decides it (minibroker.quotas.alterations), and each key set or
removed is a ClientQuotaRecord, which every broker's QuotaPublisher hands to its quota store (the
limits its quota manager enforces).
"""

from __future__ import annotations

from minibroker.metadata.image import MetadataImage, quota_record
from minibroker.quotas import alterations
from minibroker_protocol.apis.alter_client_quotas import AlterClientQuotasRequest, AlterClientQuotasResponse
from minibroker_protocol.metadata_serde import ApiMessageAndVersion


def alter_client_quotas(image: MetadataImage, req: AlterClientQuotasRequest
                        ) -> tuple[list[ApiMessageAndVersion], AlterClientQuotasResponse]:
    changes, response = alterations.plan(req)
    if req.validate_only:
        return [], response
    return [ApiMessageAndVersion(quota_record(entity, key, value), 0)
            for entity, ops in changes for key, value in ops.items()], response
