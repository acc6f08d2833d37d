"""What the schema registry tests share: a broker with the registry on, and HTTP helpers (urllib:
no client library of ours) that return Confluent's status and body as they come."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from minibroker.testing import BrokerThread

REGISTRY_OVERRIDES = {"schema.registry.port": 0}
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def registry_url(b: BrokerThread) -> str:
    server = b._inner.server
    assert server is not None and server.schema_registry is not None
    return server.schema_registry.url


def call(method: str, url: str, body: Any = None, *, raw: bytes | None = None,
         content_type: str = CONTENT_TYPE) -> tuple[int, Any]:
    """(status, decoded JSON body) of one request; error statuses are returned, not raised."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            assert r.headers.get("Content-Type", "").startswith(CONTENT_TYPE), r.headers
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        assert e.headers.get("Content-Type", "").startswith(CONTENT_TYPE), e.headers
        return e.code, json.loads(e.read() or b"null")


def record(name: str, *fields: dict[str, Any], namespace: str | None = None) -> str:
    """An Avro record schema's text."""
    schema: dict[str, Any] = {"type": "record", "name": name, "fields": list(fields)}
    if namespace:
        schema["namespace"] = namespace
    return json.dumps(schema)


def schemas_end_offset(b: BrokerThread) -> int:
    return b.call(lambda br: br.get_log("_schemas", 0).log_end_offset if br.get_log("_schemas", 0) else 0)
