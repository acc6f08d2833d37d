"""The registry's state: every subject's versions, the schemas by id, configs and modes — the
replay of `_schemas` (schema_log.py), changed only by `apply`, one record at a time.

A version is soft deleted (`deleted` true: hidden unless asked for, still readable by id, its
version number not reused) or hard deleted (its record tombstoned: gone). An id names one schema
content (type, string, references); versions in any subject with that content share it, as in
Confluent, and the next new content gets the largest id seen plus one. A content keeps its id
after its last version is hard deleted: registered again, it gets the same id (Confluent's and
Karapace's behaviour; within one run of the broker, as the tombstoned record is compacted away).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, replace

from minibroker.schema_registry.schema_log import JsonObject
from minibroker.schema_registry.schemas import AVRO, SchemaReference

log = logging.getLogger("minibroker.schema_registry")

GLOBAL = None  # the key of the global config and mode
DEFAULT_COMPATIBILITY = "BACKWARD"
DEFAULT_MODE = "READWRITE"
# type, schema, references, metadata, rule set (the last two as canonical JSON, "" when absent):
# a schema with other metadata or rules is another content, with an id of its own (Confluent 7.4+)
ContentKey = tuple[str, str, tuple[SchemaReference, ...], str, str]


@dataclass(frozen=True)
class SchemaVersion:
    """One version of a subject (Confluent's SchemaValue)."""

    subject: str
    version: int
    schema_id: int
    schema_type: str
    schema: str
    references: tuple[SchemaReference, ...] = ()
    deleted: bool = False
    metadata: str = ""  # Confluent's data contract metadata {tags, properties, sensitive}, canonical JSON
    rule_set: str = ""  # and its ruleSet {migrationRules, domainRules}

    @property
    def content(self) -> ContentKey:
        return (self.schema_type, self.schema, self.references, self.metadata, self.rule_set)

    def to_record(self) -> JsonObject:
        value: JsonObject = {"subject": self.subject, "version": self.version, "id": self.schema_id,
                             "schema": self.schema, "deleted": self.deleted}
        if self.schema_type != AVRO:
            value["schemaType"] = self.schema_type
        value["references"] = [r.to_json() for r in self.references]
        if self.metadata:
            value["metadata"] = json.loads(self.metadata)
        if self.rule_set:
            value["ruleSet"] = json.loads(self.rule_set)
        return value


def canonical_json(value: object) -> str:
    """A metadata or ruleSet object as the one string compared and stored ("" for none or empty)."""
    if value is None or value == {}:
        return ""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _version_from(value: JsonObject) -> SchemaVersion | None:
    try:
        refs = value.get("references") or []
        assert isinstance(refs, list)
        return SchemaVersion(
            subject=str(value["subject"]), version=int(str(value["version"])), schema_id=int(str(value["id"])),
            schema_type=str(value.get("schemaType") or AVRO), schema=str(value["schema"]),
            references=tuple(SchemaReference(str(r["name"]), str(r["subject"]), int(r["version"])) for r in refs),
            deleted=bool(value.get("deleted", False)), metadata=canonical_json(value.get("metadata")),
            rule_set=canonical_json(value.get("ruleSet")))
    except (KeyError, ValueError, TypeError, AssertionError):
        return None


@dataclass
class RegistryState:
    subjects: dict[str, dict[int, SchemaVersion]] = field(default_factory=dict)
    by_id: dict[int, SchemaVersion] = field(default_factory=dict)  # the first version holding each id
    ids: dict[ContentKey, int] = field(default_factory=dict)
    max_id: int = 0
    compatibility: dict[str | None, str] = field(default_factory=dict)
    modes: dict[str | None, str] = field(default_factory=dict)

    # -- replay ----------------------------------------------------------------------------
    def apply(self, key: JsonObject, value: JsonObject | None) -> None:
        """One `_schemas` record (schema_log.py lists them)."""
        keytype = key.get("keytype")
        subject = key.get("subject")
        subject = str(subject) if subject is not None else None
        if keytype == "SCHEMA" and subject is not None:
            self._apply_schema(subject, int(str(key.get("version"))), value)
        elif keytype == "CONFIG":
            level = value.get("compatibilityLevel") if value is not None else None
            if level is None:
                self.compatibility.pop(subject, None)
            else:
                self.compatibility[subject] = str(level).upper()
        elif keytype == "MODE":
            mode = value.get("mode") if value is not None else None
            if mode is None:
                self.modes.pop(subject, None)
            else:
                self.modes[subject] = str(mode).upper()
        elif keytype == "DELETE_SUBJECT" and subject is not None and value is not None:
            upto = int(str(value.get("version", 0)))
            versions = self.subjects.get(subject, {})
            for v, sv in list(versions.items()):
                if v <= upto:
                    versions[v] = replace(sv, deleted=True)
        elif keytype == "CLEAR_SUBJECT" and subject is not None:
            for v in [v for v, sv in self.subjects.get(subject, {}).items() if sv.deleted]:
                self._apply_schema(subject, v, None)
        # NOOP and unknown key types (a newer registry's) change nothing here

    def _apply_schema(self, subject: str, version: int, value: JsonObject | None) -> None:
        versions = self.subjects.setdefault(subject, {})
        if value is None:  # hard delete
            gone = versions.pop(version, None)
            if not versions:
                del self.subjects[subject]
            if gone is not None:
                self._forget_id(gone)
            return
        sv = _version_from(value)
        if sv is None:
            log.warning("skipping a SCHEMA record of _schemas that does not parse: %r", value)
            return
        versions[version] = sv
        self.max_id = max(self.max_id, sv.schema_id)
        self.by_id.setdefault(sv.schema_id, sv)
        self.ids.setdefault(sv.content, sv.schema_id)

    def _forget_id(self, gone: SchemaVersion) -> None:
        holders = self.holders(gone.schema_id)
        if holders:
            self.by_id[gone.schema_id] = holders[0]
        else:  # unreadable by id now; the content keeps its id, should it be registered again (as Confluent)
            self.by_id.pop(gone.schema_id, None)

    # -- queries ---------------------------------------------------------------------------
    def holders(self, schema_id: int) -> list[SchemaVersion]:
        """Every version (soft-deleted ones too) whose schema has id `schema_id`, by subject and version."""
        return [sv for subject in sorted(self.subjects) for _, sv in sorted(self.subjects[subject].items())
                if sv.schema_id == schema_id]

    def versions(self, subject: str, *, deleted: bool = False) -> list[SchemaVersion]:
        return [sv for _, sv in sorted(self.subjects.get(subject, {}).items()) if deleted or not sv.deleted]

    def live_subjects(self, *, deleted: bool = False) -> list[str]:
        return sorted(s for s, vs in self.subjects.items() if vs and (deleted or any(not v.deleted for v in vs.values())))

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of the live versions whose references name subject `subject` version `version`."""
        return sorted({sv.schema_id for vs in self.subjects.values() for sv in vs.values() if not sv.deleted
                       and any(r.subject == subject and r.version == version for r in sv.references)})

    def compatibility_of(self, subject: str | None) -> str:
        return self.compatibility.get(subject) or self.compatibility.get(GLOBAL) or DEFAULT_COMPATIBILITY

    def mode_of(self, subject: str | None) -> str:
        return self.modes.get(subject) or self.modes.get(GLOBAL) or DEFAULT_MODE
