"""ApiVersions: v0-4.

Behavior: lists every API the broker serves with the version range its handler registered, so
nothing is advertised that is not served. A request at a version we do not know is answered by
the dispatcher in the v0 form with UNSUPPORTED_VERSION (KIP-511), and the client retries lower.
The response header is always v0 (see protocol.headers).

Version notes: v1 throttle time; v3 flexible, client software name/version (KIP-511) and feature
flags (KIP-584; we report none).
"""

from __future__ import annotations

import re
from typing import Any

from minibroker.handlers.registry import RequestContext, handles
from protocol.apis import api_versions
from protocol.errors import ErrorCode

R = api_versions.RESPONSE
# KIP-511: software name and version must match this pattern, else INVALID_REQUEST.
_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


@handles(api_versions.API, "0-4")
async def handle_api_versions(ctx: RequestContext, req: Any) -> Any:
    if ctx.version >= 3 and not (_SOFTWARE.match(req.client_software_name)
                                 and _SOFTWARE.match(req.client_software_version)):
        return R(error_code=ErrorCode.INVALID_REQUEST)
    keys = [R.ApiVersion(api_key=h.api.key, min_version=h.versions.lo, max_version=h.versions.hi)
            for h in sorted(ctx.broker.handlers.values(), key=lambda h: h.api.key)]
    return R(error_code=0, api_keys=keys)
