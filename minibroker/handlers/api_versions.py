"""ApiVersions: v0-4.

Behavior: lists every API this broker serves with the version range its handler registered (the
table minibroker.handlers.registry.SERVED, checked against the registrations), so nothing is
advertised that is not served -- with Kafka 4.0's one exception: Produce is advertised
from v0 although v0-2 are refused (KAFKA-18659). librdkafka before 2.10 (kcat 1.7 ships 2.0)
turns gzip, snappy and lz4 off unless the broker's Produce range includes v0, and then sends
every batch uncompressed; clients pick the highest common version, so none sends v0-2 because
of it, and one that does has its connection closed, as Kafka does.
A request at a version we do not know is answered by the dispatcher in the v0 form with
UNSUPPORTED_VERSION (KIP-511), and the client retries lower. The response header is always v0
(see protocol.headers).

Version notes: v1 throttle time; v3 flexible, client software name/version (KIP-511) and feature
flags (KIP-584): the supported and finalized levels of minibroker/features.py, as Kafka 4 reports
them (the Java producer 4.x turns transactions v2 on from `transaction.version`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from minibroker import features
from minibroker.handlers.registry import RequestContext, handles
from protocol.apis import api_versions, produce
from protocol.errors import ErrorCode
from protocol.schema import Versions

R = api_versions.RESPONSE
# KIP-511: software name and version must match this pattern, else INVALID_REQUEST.
_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


# Advertised minimum versions below what the handler serves: {api key: version} (KAFKA-18659).
ADVERTISED_MIN_VERSION = {produce.API.key: 0}


def advertised(served: Mapping[int, Versions]) -> list[api_versions.ApiVersionsResponse.ApiVersion]:
    """The ApiVersion entries for the served versions by api key, in api key order."""
    out = []
    for key in sorted(served):
        versions = served[key]
        lo = min(versions.lo, ADVERTISED_MIN_VERSION.get(key, versions.lo))
        out.append(R.ApiVersion(api_key=key, min_version=lo, max_version=versions.hi))
    return out


@handles(api_versions.API, "0-4")
async def handle_api_versions(ctx: RequestContext, req: api_versions.ApiVersionsRequest) -> api_versions.ApiVersionsResponse:
    if ctx.version >= 3 and not (_SOFTWARE.match(req.client_software_name)
                                 and _SOFTWARE.match(req.client_software_version)):
        return R(error_code=ErrorCode.INVALID_REQUEST)
    if ctx.version < 3:
        return R(error_code=0, api_keys=advertised(ctx.services.served_versions))
    # the KIP-584 tagged fields: every supported feature; the finalized ones (level > 0)
    fs = list(features.FEATURES.values())
    return R(error_code=0, api_keys=advertised(ctx.services.served_versions),
             supported_features=[R.SupportedFeatureKey(name=f.name, min_version=f.min_version,
                                                       max_version=f.max_version) for f in fs],
             finalized_features_epoch=features.FINALIZED_FEATURES_EPOCH,
             finalized_features=[R.FinalizedFeatureKey(name=f.name, max_version_level=f.level,
                                                       min_version_level=f.level) for f in fs if f.level > 0])
