"""ApiVersions: v0-5.

Behavior: lists every API this broker serves with the versions its handler states (the table
minibroker/handlers/api_table.py, generated from the handlers' `@handles` lines; without the
share-group APIs when group.share.enable=false), so nothing is advertised that is not served.
Produce is served, so advertised, from v0 (minibroker/handlers/produce.py): Kafka 4.0 removed v0-2
(KIP-896) but still advertises them (KAFKA-18659), since librdkafka before 2.10 (kcat 1.7 ships 2.0)
turns gzip, snappy and lz4 off unless the broker's Produce range includes v0.
A request at a version we do not know is answered by the dispatcher in the v0 form with
UNSUPPORTED_VERSION (KIP-511), and the client retries lower. The response header is always v0
(see minibroker_protocol.headers).

Version notes: v1 throttle time; v3 flexible, client software name/version (KIP-511) and feature
flags (KIP-584): the supported and finalized levels of minibroker/features.py, as Kafka 4 reports
them (the Java producer 4.x turns transactions v2 on from `transaction.version`). v4 only lets
SupportedFeatures.MinVersion be 0 (KAFKA-17011). v5 (KIP-1242): the client may name the cluster
and node it means to reach (both or neither, else INVALID_REQUEST, as Kafka's
`ApiVersionsRequest.isValid`); a name that is not this broker's cluster id and node id answers
REBOOTSTRAP_REQUIRED with no keys (KafkaApis.handleApiVersionsRequest), so a client whose
bootstrap address now reaches another cluster or node bootstraps again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from minibroker.handlers.registry import RequestContext, handles
from minibroker_protocol.apis import api_versions
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.schema import Versions

R = api_versions.RESPONSE
# KIP-511: software name and version must match this pattern, else INVALID_REQUEST.
_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


def advertised(served: Mapping[int, Versions]) -> list[api_versions.ApiVersionsResponse.ApiVersion]:
    """The ApiVersion entries for the served versions by api key, in api key order."""
    out = []
    for key in sorted(served):
        versions = served[key]
        out.append(R.ApiVersion(api_key=key, min_version=versions.lo, max_version=versions.hi))
    return out


@handles(api_versions.API, "0-5")
async def handle_api_versions(ctx: RequestContext, req: api_versions.ApiVersionsRequest) -> api_versions.ApiVersionsResponse:
    if ctx.version >= 5 and (req.cluster_id is None) != (req.node_id == -1):
        return R(error_code=ErrorCode.INVALID_REQUEST)  # KIP-1242: both or neither
    if ctx.version >= 3 and not (_SOFTWARE.match(req.client_software_name)
                                 and _SOFTWARE.match(req.client_software_version)):
        return R(error_code=ErrorCode.INVALID_REQUEST)
    if ctx.version >= 5 and req.cluster_id is not None and (
            req.cluster_id != ctx.services.cluster_id or req.node_id != ctx.services.node_id):
        return R(error_code=ErrorCode.REBOOTSTRAP_REQUIRED)
    if ctx.version < 3:
        return R(error_code=0, api_keys=advertised(ctx.services.served_versions))
    # the KIP-584 tagged fields: every supported feature; the finalized ones (level > 0)
    levels = ctx.services.feature_levels()
    return R(error_code=0, api_keys=advertised(ctx.services.served_versions),
             supported_features=[R.SupportedFeatureKey(name=n, min_version=lo, max_version=hi)
                                 for n, (lo, hi) in levels.supported.items()],
             finalized_features_epoch=levels.epoch,
             finalized_features=[R.FinalizedFeatureKey(name=n, max_version_level=level, min_version_level=level)
                                 for n, level in levels.finalized.items() if level > 0])
