"""What the console shows of the registry: subjects, versions, schema texts, compatibility levels
and modes, and records decoded by their schema ids, as plain JSON-able dicts (the console renders
them; /api/schema-registry serves them as they are).

Read from the registry's state, replayed from `_schemas` (caught up first: another registry or a
restore tool may have written since); nothing here writes. Soft-deleted versions are listed and
marked, as `?deleted=true` lists them in Confluent's API: their ids still decode records.
"""

from __future__ import annotations

import json
from typing import TypedDict

from minibroker.schema_registry.errors import RegistryError
from minibroker.schema_registry.registry import Registry, parse_version
from minibroker.schema_registry.state import GLOBAL, SchemaVersion
from minibroker.schema_registry.wire_format import Decoded, WireFormatDecoder


class NotInRegistry(LookupError):
    """A subject, version or id the registry does not hold (the console answers 404)."""


class ReferenceRow(TypedDict):
    name: str
    subject: str
    version: int


class VersionRow(TypedDict):
    subject: str
    version: int
    id: int
    schema_type: str
    deleted: bool
    references: list[ReferenceRow]


class SubjectRow(TypedDict):
    subject: str
    versions: int  # live ones
    latest_version: int | None
    latest_id: int | None
    schema_type: str | None
    compatibility: str  # the level that applies
    compatibility_set: bool  # set on the subject (else the global one applies)
    mode: str
    deleted: bool  # every version soft-deleted


class RegistryOverview(TypedDict):
    url: str
    compatibility: str  # the global level
    mode: str
    subjects: list[SubjectRow]
    schemas: int  # ids held
    max_id: int
    position: int  # the offset of _schemas read up to


class SubjectView(TypedDict):
    subject: str
    compatibility: str
    compatibility_set: bool
    mode: str
    mode_set: bool
    versions: list[VersionRow]


class VersionView(TypedDict):
    subject: str
    version: int
    id: int
    schema_type: str
    deleted: bool
    schema: str  # as stored
    pretty: str  # indented when it is JSON (Avro, JSON Schema); a .proto text as it is
    references: list[ReferenceRow]
    referenced_by: list[int]
    also_in: list[VersionRow]  # other versions holding the same id
    versions: list[int]  # the subject's version numbers, soft-deleted too
    metadata: object  # Confluent's data contract metadata and rule set, as registered (None: none)
    rule_set: object


def _pretty(sv: SchemaVersion) -> str:
    try:
        return json.dumps(json.loads(sv.schema), indent=2, ensure_ascii=False)
    except ValueError:
        return sv.schema  # .proto text, or a base64 descriptor


def _row(sv: SchemaVersion) -> VersionRow:
    return {"subject": sv.subject, "version": sv.version, "id": sv.schema_id, "schema_type": sv.schema_type,
            "deleted": sv.deleted, "references": [{"name": r.name, "subject": r.subject, "version": r.version}
                                                  for r in sv.references]}


class RegistryBrowser:
    def __init__(self, registry: Registry, url: str) -> None:
        self.registry = registry
        self.url = url
        self.decoder = WireFormatDecoder(registry)

    def overview(self) -> RegistryOverview:
        self.registry.catch_up()
        st = self.registry.state
        rows: list[SubjectRow] = []
        for subject in st.live_subjects(deleted=True):
            live = st.versions(subject)
            latest = live[-1] if live else None
            rows.append({"subject": subject, "versions": len(live),
                         "latest_version": latest.version if latest else None,
                         "latest_id": latest.schema_id if latest else None,
                         "schema_type": latest.schema_type if latest else None,
                         "compatibility": st.compatibility_of(subject), "compatibility_set": subject in st.compatibility,
                         "mode": st.mode_of(subject), "deleted": latest is None})
        return {"url": self.url, "compatibility": st.compatibility_of(GLOBAL), "mode": st.mode_of(GLOBAL),
                "subjects": rows, "schemas": len(st.by_id), "max_id": st.max_id, "position": self.registry.position}

    def subject(self, subject: str) -> SubjectView:
        self.registry.catch_up()
        st = self.registry.state
        every = st.versions(subject, deleted=True)
        if not every:
            raise NotInRegistry(f"Subject '{subject}' not found.")
        return {"subject": subject, "compatibility": st.compatibility_of(subject),
                "compatibility_set": subject in st.compatibility, "mode": st.mode_of(subject),
                "mode_set": subject in st.modes, "versions": [_row(sv) for sv in every]}

    def version(self, subject: str, version: str) -> VersionView:
        self.registry.catch_up()
        try:
            number = parse_version(version)
            sv = self.registry.version(subject, version, deleted=number != -1)
        except RegistryError as e:
            raise NotInRegistry(e.message) from None
        st = self.registry.state
        return {"subject": sv.subject, "version": sv.version, "id": sv.schema_id, "schema_type": sv.schema_type,
                "deleted": sv.deleted, "schema": sv.schema, "pretty": _pretty(sv),
                "references": _row(sv)["references"], "referenced_by": st.referenced_by(sv.subject, sv.version),
                "also_in": [_row(h) for h in st.holders(sv.schema_id) if (h.subject, h.version) != (subject, sv.version)],
                "versions": [v.version for v in st.versions(subject, deleted=True)],
                "metadata": json.loads(sv.metadata) if sv.metadata else None,
                "rule_set": json.loads(sv.rule_set) if sv.rule_set else None}

    def schema(self, schema_id: int) -> VersionView:
        """The first version holding `schema_id` (what GET /schemas/ids/{id} answers)."""
        self.registry.catch_up()
        sv = self.registry.state.by_id.get(schema_id)
        if sv is None:
            raise NotInRegistry(f"Schema {schema_id} not found")
        return self.version(sv.subject, str(sv.version))

    def decode(self, data: bytes, subject: str | None) -> Decoded | None:
        """A key or value in Confluent's wire format as JSON; None when it is not framed so.
        `subject`: the topic's (TopicNameStrategy), preferred among the versions holding the id."""
        return self.decoder.decode(data, subject)
