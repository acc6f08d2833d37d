"""Confluent's Schema Registry REST API over a `Registry` (Confluent's rest.resources: SubjectsResource,
SubjectVersionsResource, SchemasResource, CompatibilityResource, ConfigResource, ModeResource).

Every answer is JSON with content type application/vnd.schemaregistry.v1+json; every failure
the body {"error_code", "message"} (errors.py), unknown paths and methods included. Query flags
are read as Confluent reads them ("true", case-insensitively; clients send Python's "True").
A body is read whole up to `MAX_BODY` and parsed with the standard library's json (a document
nested too deeply is a 422, not a crash).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from aiohttp import web

from minibroker.schema_registry import errors
from minibroker.schema_registry.protobuf_schema import ProtobufSchema
from minibroker.schema_registry.registry import GLOBAL, NewSchema, Registry
from minibroker.schema_registry.schemas import AVRO, SCHEMA_TYPES, ParsedSchema, SchemaReference
from minibroker.schema_registry.state import RegistryState, SchemaVersion, canonical_json

log = logging.getLogger("minibroker.schema_registry")
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
MAX_BODY = 32 * 1024 * 1024  # a body this large is refused before it is read (413)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
T = TypeVar("T")


def reply(body: object, status: int = 200) -> web.Response:
    return web.Response(status=status, body=json.dumps(body, ensure_ascii=False).encode(), content_type=CONTENT_TYPE)


# what a client may accept, in the registry's order of preference, and the bodies it reads as JSON
RESPONSE_TYPES = (CONTENT_TYPE, "application/vnd.schemaregistry+json", "application/json")
REQUEST_TYPES = frozenset({*RESPONSE_TYPES, "application/octet-stream", ""})


def negotiate(accept: str) -> str | None:
    """The response type for an Accept header (None: 406), by its q values then our preference."""
    if not accept.strip():
        return CONTENT_TYPE
    ranges: list[tuple[float, int, str]] = []
    for i, part in enumerate(accept.split(",")):
        media, *params = (x.strip() for x in part.split(";"))
        q = 1.0
        for param in params:
            if param.startswith("q="):
                try:
                    q = float(param[2:])
                except ValueError:
                    q = 0.0
        ranges.append((-q, i, media.lower()))
    for neg_q, _, media in sorted(ranges):
        if neg_q == 0:
            continue
        if media in ("*", "*/*", "application/*") or media.startswith("*/"):
            return CONTENT_TYPE
        if media in RESPONSE_TYPES:
            return media
    return None


def page(request: web.Request, items: list[T]) -> list[T]:
    """Confluent's `offset` and `limit` on list answers (limit -1 or absent: all)."""
    try:
        offset = max(int(request.query.get("offset", "0")), 0)
        limit = int(request.query.get("limit", "-1"))
    except ValueError:
        raise errors.RegistryError(422, 422, "offset and limit must be integers") from None
    return items[offset:] if limit < 0 else items[offset:offset + limit]


def flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "false").lower() == "true"


@web.middleware
async def confluent_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except errors.RegistryError as e:
        return reply({"error_code": e.code, "message": e.message}, e.status)
    except web.HTTPException as e:  # unknown route, wrong method, body too large: Confluent's shape too
        if e.status < 400:
            raise
        return reply({"error_code": e.status, "message": f"HTTP {e.status} {e.reason}"}, e.status)
    except Exception as e:
        log.exception("schema registry: %s %s failed", request.method, request.path)
        return reply({"error_code": 50001, "message": f"Error in the backend data store: {e}"}, 500)


async def read_json(request: web.Request) -> dict[str, object]:
    text = await request.text()
    try:
        body = json.loads(text) if text.strip() else {}
    except RecursionError:
        raise errors.RegistryError(422, 422, "Unprocessable entity: the request body is nested too deeply") from None
    except ValueError as e:
        raise errors.RegistryError(400, 400, f"Unexpected character in the request body: {e}") from None
    if not isinstance(body, dict):
        raise errors.RegistryError(422, 422, "Unprocessable entity: the request body is not a JSON object")
    return body


def new_schema(body: dict[str, object]) -> NewSchema:
    schema = body.get("schema")
    if not isinstance(schema, str) or not schema:
        raise errors.invalid_schema("Empty schema" if not schema else "The schema must be a string")
    schema_type = str(body.get("schemaType") or AVRO).upper()
    if schema_type not in SCHEMA_TYPES:
        raise errors.RegistryError(422, 422, f"Invalid schemaType {body.get('schemaType')}")
    refs = body.get("references") or []
    if not isinstance(refs, list):
        raise errors.RegistryError(422, 422, "references must be a list")
    try:
        references = tuple(SchemaReference(str(r["name"]), str(r["subject"]), int(r["version"])) for r in refs)
    except (KeyError, TypeError, ValueError):
        raise errors.RegistryError(422, 422, "A reference needs a name, a subject and a version") from None
    contract = []
    for name in ("metadata", "ruleSet"):  # Confluent's data contracts (7.4+): stored and answered as sent
        value = body.get(name)
        if value is not None and not isinstance(value, dict):
            raise errors.RegistryError(422, 422, f"{name} must be an object")
        contract.append(canonical_json(value))
    return NewSchema(schema, schema_type, references, contract[0], contract[1])


def optional_int(body: dict[str, object], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    try:
        return int(str(value))
    except ValueError:
        raise errors.RegistryError(422, 422, f"{name} must be an integer") from None


class RegistryApi:
    """The routes; each handler maps the request onto a Registry operation and renders its result."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    @property
    def state(self) -> RegistryState:
        return self.registry.state  # replaced whole if _schemas is deleted (Registry.catch_up)

    @web.middleware
    async def caught_up(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Every request reads the state after the records other writers appended to `_schemas`,
        and is answered in the content type its Accept header prefers (Confluent's content
        negotiation: 406 when it accepts none of the registry's types, 415 for a body that is not JSON)."""
        answer_as = negotiate(request.headers.get("Accept", ""))
        if answer_as is None:
            raise errors.RegistryError(406, 406, "HTTP 406 Not Acceptable")
        if request.can_read_body and request.content_type not in REQUEST_TYPES:
            raise errors.RegistryError(415, 415, "HTTP 415 Unsupported Media Type")
        self.registry.catch_up()
        response = await handler(request)
        if isinstance(response, web.Response) and answer_as != CONTENT_TYPE:
            response.content_type = answer_as
        return response

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/", self.root),
            web.get("/contexts", self.contexts),
            web.get("/schemas", self.schemas),
            web.get("/schemas/types", self.schema_types),
            web.get("/schemas/ids/{id}", self.schema_by_id),
            web.get("/schemas/ids/{id}/schema", self.raw_schema_by_id),
            web.get("/schemas/ids/{id}/versions", self.versions_of_id),
            web.get("/schemas/ids/{id}/subjects", self.subjects_of_id),
            web.get("/subjects", self.subjects),
            web.post("/subjects/{subject:[^/]+}", self.lookup),
            web.delete("/subjects/{subject:[^/]+}", self.delete_subject),
            web.get("/subjects/{subject:[^/]+}/versions", self.list_versions),
            web.get("/subjects/{subject:[^/]+}/metadata", self.latest_with_metadata),
            web.post("/subjects/{subject:[^/]+}/versions", self.register),
            web.get("/subjects/{subject:[^/]+}/versions/{version}", self.get_version),
            web.get("/subjects/{subject:[^/]+}/versions/{version}/schema", self.raw_version),
            web.get("/subjects/{subject:[^/]+}/versions/{version}/referencedby", self.referenced_by),
            web.delete("/subjects/{subject:[^/]+}/versions/{version}", self.delete_version),
            web.post("/compatibility/subjects/{subject:[^/]+}/versions", self.compatibility),
            web.post("/compatibility/subjects/{subject:[^/]+}/versions/{version}", self.compatibility),
            web.get("/config", self.get_config),
            web.put("/config", self.put_config),
            web.delete("/config", self.delete_config),
            web.get("/config/{subject:[^/]+}", self.get_config),
            web.put("/config/{subject:[^/]+}", self.put_config),
            web.delete("/config/{subject:[^/]+}", self.delete_config),
            web.get("/mode", self.get_mode),
            web.put("/mode", self.put_mode),
            web.get("/mode/{subject:[^/]+}", self.get_mode),
            web.put("/mode/{subject:[^/]+}", self.put_mode),
            web.delete("/mode/{subject:[^/]+}", self.delete_mode),
        ]

    # -- rendering ---------------------------------------------------------------------------
    def _schema_text(self, sv: SchemaVersion, fmt: str | None) -> str:
        if fmt == "serialized" and sv.schema_type == "PROTOBUF":
            parsed = self.registry.parsed(sv)
            if isinstance(parsed, ProtobufSchema):
                return parsed.serialized()
        return sv.schema

    def _version_body(self, sv: SchemaVersion, fmt: str | None = None) -> dict[str, object]:
        body: dict[str, object] = {"subject": sv.subject, "version": sv.version, "id": sv.schema_id}
        if sv.schema_type != AVRO:
            body["schemaType"] = sv.schema_type
        if sv.references:
            body["references"] = [r.to_json() for r in sv.references]
        self._contract(body, sv)
        body["schema"] = self._schema_text(sv, fmt)
        return body

    @staticmethod
    def _contract(body: dict[str, object], sv: SchemaVersion) -> None:
        if sv.metadata:
            body["metadata"] = json.loads(sv.metadata)
        if sv.rule_set:
            body["ruleSet"] = json.loads(sv.rule_set)

    def _by_id(self, request: web.Request) -> SchemaVersion:
        raw = request.match_info["id"]
        try:
            schema_id = int(raw)
        except ValueError:  # Confluent's {id} is an int path parameter: no such route
            raise errors.RegistryError(404, 404, "HTTP 404 Not Found") from None
        sv = self.state.by_id.get(schema_id)
        if sv is None:
            raise errors.schema_not_found(schema_id)
        return sv

    # -- schemas -----------------------------------------------------------------------------
    async def root(self, request: web.Request) -> web.Response:
        return reply({})

    async def contexts(self, request: web.Request) -> web.Response:
        return reply(["."])  # the default context only (KIP-less Confluent contexts are not modelled)

    async def schema_types(self, request: web.Request) -> web.Response:
        return reply(list(SCHEMA_TYPES))

    async def schemas(self, request: web.Request) -> web.Response:
        prefix = request.query.get("subjectPrefix", "")
        deleted, latest_only = flag(request, "deleted"), flag(request, "latestOnly")
        out = []
        for subject in self.state.live_subjects(deleted=deleted):
            if subject.startswith(prefix):
                versions = self.state.versions(subject, deleted=deleted)
                out += [self._version_body(sv) for sv in (versions[-1:] if latest_only else versions)]
        return reply(page(request, out))

    async def schema_by_id(self, request: web.Request) -> web.Response:
        sv = self._by_id(request)
        body: dict[str, object] = {}
        if sv.schema_type != AVRO:
            body["schemaType"] = sv.schema_type
        if sv.references:
            body["references"] = [r.to_json() for r in sv.references]
        self._contract(body, sv)
        body["schema"] = self._schema_text(sv, request.query.get("format"))
        if flag(request, "includeSubjects"):
            body["subjects"] = sorted({h.subject for h in self.state.holders(sv.schema_id) if not h.deleted})
        return reply(body)

    async def raw_schema_by_id(self, request: web.Request) -> web.Response:
        return self._raw(self._by_id(request), request.query.get("format"))

    def _raw(self, sv: SchemaVersion, fmt: str | None) -> web.Response:
        text = self._schema_text(sv, fmt)
        return web.Response(status=200, body=text.encode(), content_type=CONTENT_TYPE)

    async def versions_of_id(self, request: web.Request) -> web.Response:
        sv = self._by_id(request)
        deleted = flag(request, "deleted")
        return reply(page(request, [{"subject": h.subject, "version": h.version}
                                    for h in self.state.holders(sv.schema_id) if deleted or not h.deleted]))

    async def subjects_of_id(self, request: web.Request) -> web.Response:
        sv = self._by_id(request)
        deleted = flag(request, "deleted")
        return reply(page(request, sorted({h.subject for h in self.state.holders(sv.schema_id)
                                           if deleted or not h.deleted})))

    # -- subjects ----------------------------------------------------------------------------
    async def subjects(self, request: web.Request) -> web.Response:
        prefix = request.query.get("subjectPrefix", "")
        if flag(request, "deletedOnly"):
            live = set(self.state.live_subjects())
            names = [s for s in self.state.live_subjects(deleted=True) if s not in live]
        else:
            names = self.state.live_subjects(deleted=flag(request, "deleted"))
        return reply(page(request, [s for s in names if s.startswith(prefix)]))

    async def _parsed(self, request: web.Request, body: dict[str, object]) -> tuple[NewSchema, ParsedSchema]:
        """The request's schema, its size checked, parsed off the loop, with the subject's versions parsed too."""
        new = new_schema(body)
        self.registry.check_size(new)
        parsed = await self.registry.parse_async(new)
        await self.registry.warm(request.match_info["subject"])
        return new, parsed

    async def lookup(self, request: web.Request) -> web.Response:
        subject = request.match_info["subject"]
        new, parsed = await self._parsed(request, await read_json(request))
        sv = self.registry.lookup(subject, new, parsed, normalize=flag(request, "normalize"),
                                  deleted=flag(request, "deleted"))
        return reply(self._version_body(sv))

    async def delete_subject(self, request: web.Request) -> web.Response:
        return reply(self.registry.delete_subject(request.match_info["subject"], permanent=flag(request, "permanent")))

    async def list_versions(self, request: web.Request) -> web.Response:
        versions = self.registry.versions(request.match_info["subject"], deleted=flag(request, "deleted"))
        return reply(page(request, [sv.version for sv in versions]))

    async def register(self, request: web.Request) -> web.Response:
        body = await read_json(request)
        new, parsed = await self._parsed(request, body)
        schema_id = self.registry.register(request.match_info["subject"], new, parsed,
                                           normalize=flag(request, "normalize"), schema_id=optional_int(body, "id"),
                                           version=optional_int(body, "version"))
        return reply({"id": schema_id})

    async def get_version(self, request: web.Request) -> web.Response:
        sv = self.registry.version(request.match_info["subject"], request.match_info["version"],
                                   deleted=flag(request, "deleted"))
        return reply(self._version_body(sv, request.query.get("format")))

    async def raw_version(self, request: web.Request) -> web.Response:
        sv = self.registry.version(request.match_info["subject"], request.match_info["version"],
                                   deleted=flag(request, "deleted"))
        return self._raw(sv, request.query.get("format"))

    async def latest_with_metadata(self, request: web.Request) -> web.Response:
        keys, values = request.query.getall("key", []), request.query.getall("value", [])
        if len(keys) != len(values):
            raise errors.bad_request("each key needs a value", 400)
        sv = self.registry.latest_with_metadata(request.match_info["subject"], dict(zip(keys, values, strict=True)),
                                                deleted=flag(request, "deleted"))
        return reply(self._version_body(sv, request.query.get("format")))

    async def referenced_by(self, request: web.Request) -> web.Response:
        sv = self.registry.version(request.match_info["subject"], request.match_info["version"])
        return reply(self.state.referenced_by(sv.subject, sv.version))

    async def delete_version(self, request: web.Request) -> web.Response:
        return reply(self.registry.delete_version(request.match_info["subject"], request.match_info["version"],
                                                  permanent=flag(request, "permanent")))

    async def compatibility(self, request: web.Request) -> web.Response:
        _, parsed = await self._parsed(request, await read_json(request))
        messages = self.registry.test_compatibility(request.match_info["subject"], parsed,
                                                    request.match_info.get("version"))
        body: dict[str, object] = {"is_compatible": not messages}
        if messages or flag(request, "verbose"):  # the reasons whenever it is not (Karapace too)
            body["messages"] = messages
        return reply(body)

    # -- config and mode ---------------------------------------------------------------------
    async def get_config(self, request: web.Request) -> web.Response:
        subject = request.match_info.get("subject", GLOBAL)
        if subject is not None and subject not in self.state.compatibility and not flag(request, "defaultToGlobal"):
            raise errors.subject_compatibility_not_configured(subject)
        return reply({"compatibilityLevel": self.state.compatibility_of(subject)})

    async def put_config(self, request: web.Request) -> web.Response:
        body = await read_json(request)
        level = body.get("compatibility", body.get("compatibilityLevel"))
        if not isinstance(level, str):
            raise errors.invalid_compatibility_level()
        self.registry.set_compatibility(request.match_info.get("subject", GLOBAL), level)
        return reply({"compatibility": level.upper()})

    async def delete_config(self, request: web.Request) -> web.Response:
        previous = self.registry.delete_compatibility(request.match_info.get("subject", GLOBAL))
        # the level removed; under both names clients read (Confluent's Config, Karapace's answer)
        return reply({"compatibilityLevel": previous, "compatibility": previous})

    async def get_mode(self, request: web.Request) -> web.Response:
        subject = request.match_info.get("subject", GLOBAL)
        if subject is not None and subject not in self.state.modes and not flag(request, "defaultToGlobal"):
            raise errors.subject_mode_not_configured(subject)
        return reply({"mode": self.state.mode_of(subject)})

    async def put_mode(self, request: web.Request) -> web.Response:
        body = await read_json(request)
        mode = body.get("mode")
        if not isinstance(mode, str):
            raise errors.invalid_mode(str(mode))
        self.registry.set_mode(request.match_info.get("subject", GLOBAL), mode, force=flag(request, "force"))
        return reply({"mode": mode.upper()})

    async def delete_mode(self, request: web.Request) -> web.Response:
        return reply({"mode": self.registry.delete_mode(request.match_info["subject"])})
