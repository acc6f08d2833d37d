"""The registry's operations (Confluent's KafkaSchemaRegistry): register, look up, delete,
compatibility, config and mode, each checked against the state, written to `_schemas`, then applied.

Theory of operation. Parsing runs off the loop (`parse_async`, `warm`: the avro package's parser
is quadratic in a record's fields, about 5 s for a 1 MB record, which must not stall the broker);
then an operation runs on the broker's event loop from its checks to its write without awaiting
anything, so two requests never interleave there: two concurrent registrations of the same schema
are one after the other, the second finds the first's id. A change is written first
and applied to the state only once `_schemas` has it (the state is always the replay of the topic):
a write that fails changes nothing and answers 50001.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from minibroker.schema_registry import compatibility, errors
from minibroker.schema_registry.schema_log import JsonObject, SchemaLog, schema_key, subject_key
from minibroker.schema_registry.schema_types import parse_schema
from minibroker.schema_registry.schemas import ParsedSchema, ResolvedReference, SchemaReference
from minibroker.schema_registry.state import GLOBAL, RegistryState, SchemaVersion

MODES = ("READWRITE", "READONLY", "IMPORT")
log = logging.getLogger("minibroker.schema_registry")


@dataclass(frozen=True)
class NewSchema:
    """A schema as a request sends it."""

    schema: str
    schema_type: str
    references: tuple[SchemaReference, ...] = ()
    metadata: str = ""  # canonical JSON (state.canonical_json), "" when the request has none
    rule_set: str = ""


class Registry:
    def __init__(self, schema_log: SchemaLog) -> None:
        self.log = schema_log
        self.state = RegistryState()
        self.position = 0  # the offset of `_schemas` the state has read up to
        self._topic_id: object = None  # of the `_schemas` the state was read from
        self._parsed: dict[int, ParsedSchema] = {}  # by id: a stored schema is parsed once
        # (type, normalized form, references) -> id, for the schemas parsed so far: the same schema
        # stored in another rendering keeps its id
        self._normal_ids: dict[tuple[str, str, tuple[SchemaReference, ...], str, str], int] = {}

    def catch_up(self) -> int:
        """Apply the records of `_schemas` from `position` to its end (all of them at start); how many.
        If the topic was deleted (and made anew, or not), the state is rebuilt from what it holds now,
        as Confluent's registry knows only what _schemas holds."""
        topic_id, end = self.log.topic_id(), self.log.end_offset()
        if topic_id != self._topic_id or end < self.position:
            if self._topic_id is not None:
                log.warning("_schemas was deleted or replaced: the registry's state is read anew from it")
            self.state, self.position, self._topic_id = RegistryState(), 0, topic_id
            self._parsed.clear()
            self._normal_ids.clear()
        if self.position >= end:
            return 0
        n = 0
        for next_offset, key, value in self.log.read_from(self.position):
            try:
                self.state.apply(key, value)
            except (ValueError, TypeError, KeyError, AttributeError) as e:  # another writer's odd record
                log.warning("skipping a record of _schemas before offset %d: %s (%r -> %r)", next_offset, e, key, value)
            self.position = next_offset
            n += 1
        return n

    def _write(self, records: list[tuple[bytes, JsonObject | None]]) -> None:
        """Append to `_schemas`, then apply by reading it back: the state is the replay of the topic."""
        self.catch_up()
        self.log.write(records)
        self.catch_up()

    # -- parsing ----------------------------------------------------------------------------
    def resolve(self, references: Sequence[SchemaReference], seen: frozenset[tuple[str, int]] = frozenset()
                ) -> list[ResolvedReference]:
        """The referenced schemas, their own references first (a reference to a missing version is 42201)."""
        out: list[ResolvedReference] = []
        for ref in references:
            if (ref.subject, ref.version) in seen:
                continue
            if ref.version == -1:  # "latest" (Confluent accepts it in a reference)
                latest = self.state.versions(ref.subject)
                sv = latest[-1] if latest else None
            else:
                sv = self.state.subjects.get(ref.subject, {}).get(ref.version)
            if sv is None:
                raise errors.invalid_schema(f"Invalid schema: the reference {ref.name} names subject "
                                            f"'{ref.subject}' version {ref.version}, which does not exist")
            out += self.resolve(sv.references, seen | {(ref.subject, ref.version)})
            out.append(ResolvedReference(ref.name, sv.schema_type, sv.schema))
        return out

    def check_size(self, new: NewSchema) -> None:
        """A schema that `_schemas` could not hold is refused (42209) before it is parsed."""
        self.log.check_fits(len(json.dumps(new.schema)))

    async def parse_async(self, new: NewSchema) -> ParsedSchema:
        """`new` parsed on a worker thread (its references resolved here, on the loop)."""
        references = self.resolve(new.references)
        return await asyncio.get_running_loop().run_in_executor(None, parse_schema, new.schema_type, new.schema,
                                                                references)

    async def warm(self, subject: str) -> None:
        """Parse, on a worker thread, the live versions of `subject` not parsed yet (a check reads them)."""
        todo = [sv for sv in self.state.versions(subject) if sv.schema_id not in self._parsed]
        if todo:
            await asyncio.get_running_loop().run_in_executor(None, lambda: [self.parsed(sv) for sv in todo])

    def parsed(self, sv: SchemaVersion) -> ParsedSchema:
        cached = self._parsed.get(sv.schema_id)
        if cached is None:
            cached = self._parsed[sv.schema_id] = parse_schema(sv.schema_type, sv.schema, self.resolve(sv.references))
            self._normal_ids.setdefault((sv.schema_type, cached.normalized(), sv.references, sv.metadata, sv.rule_set),
                                        sv.schema_id)
        return cached

    def _same_schema(self, sv: SchemaVersion, new: NewSchema, parsed: ParsedSchema) -> bool:
        """`sv` holds the schema `new` is, in whatever rendering (another registry wrote it to _schemas
        with its own spacing or key order: Confluent as Avro Java renders it)."""
        return (sv.schema_type, sv.references, sv.metadata, sv.rule_set) == (
            new.schema_type, new.references, new.metadata, new.rule_set) and (
            self.parsed(sv).normalized() == parsed.normalized())

    def _string(self, parsed: ParsedSchema, subject: str, normalize: bool) -> str:
        return parsed.normalized() if normalize else parsed.canonical()

    # -- subjects and versions -----------------------------------------------------------------
    def versions(self, subject: str, *, deleted: bool = False) -> list[SchemaVersion]:
        versions = self.state.versions(subject, deleted=deleted)
        if not versions:
            raise errors.subject_not_found(subject)
        return versions

    def version(self, subject: str, version: str, *, deleted: bool = False) -> SchemaVersion:
        """`version`: a number, "latest" or -1 (the latest)."""
        number = parse_version(version)
        versions = self.versions(subject, deleted=deleted)
        if number == -1:
            return versions[-1]
        for sv in versions:
            if sv.version == number:
                return sv
        raise errors.version_not_found(number)

    def register(self, subject: str, new: NewSchema, parsed: ParsedSchema, *, normalize: bool = False,
                 schema_id: int | None = None, version: int | None = None) -> int:
        """POST /subjects/{subject}/versions: the schema's id, new or existing (`parsed`: `new` parsed)."""
        self.catch_up()  # what other writers appended while `new` was parsed
        mode = self.state.mode_of(subject)
        if mode == "READONLY":
            raise errors.operation_not_permitted(f"Subject {subject} is in read-only mode")
        if (schema_id is not None or version is not None) and mode != "IMPORT":
            if schema_id is not None and schema_id >= 0:
                raise errors.operation_not_permitted(f"Subject {subject} is not in import mode")
        text = self._string(parsed, subject, normalize)
        live = self.state.versions(subject)
        if live:  # metadata and rules not given are the previous version's (Confluent: maybePopulateFromPrevious)
            new = replace(new, metadata=new.metadata or live[-1].metadata, rule_set=new.rule_set or live[-1].rule_set)
        content = (new.schema_type, text, new.references, new.metadata, new.rule_set)
        for sv in live:
            if (sv.content == content or self._same_schema(sv, new, parsed)) and (
                    schema_id is None or schema_id < 0 or schema_id == sv.schema_id):
                return sv.schema_id
        if mode != "IMPORT":
            level = self.state.compatibility_of(subject)
            olds = [(sv.version, sv.schema, self.parsed(sv)) for sv in live]
            messages = compatibility.check(level, parsed, olds)
            if messages:
                raise errors.incompatible(f"Schema being registered is incompatible with an earlier schema for "
                                          f"subject \"{subject}\", details: [{', '.join(messages)}]")
        known = self.state.ids.get(content)
        if known is None:
            known = self._normal_ids.get((new.schema_type, parsed.normalized(), new.references, new.metadata,
                                          new.rule_set))
        if schema_id is not None and schema_id >= 0:
            holder = self.state.by_id.get(schema_id)
            if holder is not None and holder.content != content:
                raise errors.invalid_id(f"Overwrite new schema with id {schema_id} is not permitted.")
            new_id = schema_id
        else:
            new_id = known if known is not None else self.state.max_id + 1
        every = self.state.subjects.get(subject, {})
        number = version if version is not None and version > 0 else max(every, default=0) + 1
        if number in every:
            raise errors.invalid_version(str(number))
        sv = SchemaVersion(subject, number, new_id, new.schema_type, text, new.references,
                           metadata=new.metadata, rule_set=new.rule_set)
        self._write([(schema_key(subject, number), sv.to_record())])
        self._parsed.setdefault(new_id, parsed)
        self._normal_ids.setdefault((new.schema_type, parsed.normalized(), new.references, new.metadata,
                                     new.rule_set), new_id)
        return new_id

    def lookup(self, subject: str, new: NewSchema, parsed: ParsedSchema, *, normalize: bool = False,
               deleted: bool = False) -> SchemaVersion:
        """POST /subjects/{subject}: the version of `subject` holding this schema."""
        versions = self.versions(subject, deleted=deleted)
        for text in dict.fromkeys((self._string(parsed, subject, normalize), parsed.canonical(), new.schema)):
            for sv in reversed(versions):
                if sv.content[:3] == (new.schema_type, text, new.references) and self._same_contract(sv, new):
                    return sv
        if normalize:  # stored un-normalized: compare the normalized forms of both
            target = parsed.normalized()
            for sv in reversed(versions):
                if (sv.schema_type == new.schema_type and self._same_contract(sv, new)
                        and self.parsed(sv).normalized() == target):
                    return sv
        raise errors.schema_not_found()

    @staticmethod
    def _same_contract(sv: SchemaVersion, new: NewSchema) -> bool:
        """A look-up without metadata or rules matches any version's; with them, only equal ones."""
        return (not new.metadata or new.metadata == sv.metadata) and (not new.rule_set or new.rule_set == sv.rule_set)

    def latest_with_metadata(self, subject: str, properties: dict[str, str], *, deleted: bool = False) -> SchemaVersion:
        """GET /subjects/{subject}/metadata: the latest version whose metadata properties hold every pair."""
        versions = self.versions(subject, deleted=deleted)
        for sv in reversed(versions):
            props = (json.loads(sv.metadata).get("properties") or {}) if sv.metadata else {}
            if all(props.get(k) == v for k, v in properties.items()):
                return sv
        raise errors.RegistryError(404, 40403, f"Schema not found: no version of subject '{subject}' has the metadata "
                                               f"{properties}")

    def delete_subject(self, subject: str, *, permanent: bool = False) -> list[int]:
        self._writable(subject)
        every = self.state.versions(subject, deleted=True)
        if not every:
            raise errors.subject_not_found(subject)
        live = [sv for sv in every if not sv.deleted]
        if permanent:
            if live:
                raise errors.subject_not_soft_deleted(subject)
            self._write([(schema_key(subject, sv.version), None) for sv in every])
            return [sv.version for sv in every]
        if not live:
            raise errors.subject_soft_deleted(subject)
        for sv in live:
            self._not_referenced(sv)
        latest = live[-1].version
        self._write([(subject_key("DELETE_SUBJECT", subject), {"subject": subject, "version": latest})])
        return [sv.version for sv in live]

    def delete_version(self, subject: str, version: str, *, permanent: bool = False) -> int:
        self._writable(subject)
        number = parse_version(version)
        every = self.versions(subject, deleted=True)
        if number == -1:
            live = [sv for sv in every if not sv.deleted]
            if not live:
                raise errors.subject_not_found(subject)
            number = live[-1].version
        sv = next((v for v in every if v.version == number), None)
        if sv is None:
            raise errors.version_not_found(number)
        self._not_referenced(sv)
        if permanent:
            if not sv.deleted:
                raise errors.version_not_soft_deleted(subject, number)
            self._write([(schema_key(subject, number), None)])
        else:
            if sv.deleted:
                raise errors.version_soft_deleted(subject, number)
            self._write([(schema_key(subject, number), replace(sv, deleted=True).to_record())])
        return number

    def _not_referenced(self, sv: SchemaVersion) -> None:
        if self.state.referenced_by(sv.subject, sv.version):
            raise errors.reference_exists(f"One or more references exist to the schema {{magic=1,keytype=SCHEMA,"
                                          f"subject={sv.subject},version={sv.version}}}.")

    def _writable(self, subject: str | None) -> None:
        if self.state.mode_of(subject) == "READONLY":
            raise errors.operation_not_permitted(f"Subject {subject} is in read-only mode")

    # -- compatibility, config, mode ---------------------------------------------------------
    def test_compatibility(self, subject: str, parsed: ParsedSchema, version: str | None) -> list[str]:
        """POST /compatibility/subjects/{subject}/versions[/{version}]: the reasons it is not (empty: it is)."""
        level = self.state.compatibility_of(subject)
        if version is None:
            olds = [(sv.version, sv.schema, self.parsed(sv)) for sv in self.state.versions(subject)]
            return compatibility.check(level, parsed, olds)
        # a missing version is 40402 whether or not the subject exists; "latest" of a subject
        # without live versions is 40401 (as Karapace answers, checked against Confluent's)
        number = parse_version(version)
        live = self.state.versions(subject)
        if number == -1 and not live:
            raise errors.subject_not_found(subject)
        sv = next((v for v in live if v.version == number), live[-1] if number == -1 and live else None)
        if sv is None:
            raise errors.version_not_found(number)
        # against one version: the level's direction, without its transitivity
        return compatibility.check(level.removesuffix("_TRANSITIVE"), parsed, [(sv.version, sv.schema, self.parsed(sv))])

    def set_compatibility(self, subject: str | None, level: str) -> None:
        if level.upper() not in compatibility.LEVELS:
            raise errors.invalid_compatibility_level()
        self._write([(subject_key("CONFIG", subject), {"compatibilityLevel": level.upper()})])

    def delete_compatibility(self, subject: str | None) -> str:
        previous = self.state.compatibility_of(subject)
        if subject is not None and subject not in self.state.compatibility:
            raise errors.subject_compatibility_not_configured(subject)
        self._write([(subject_key("CONFIG", subject), None)])
        return previous

    def set_mode(self, subject: str | None, mode: str, *, force: bool = False) -> None:
        mode = mode.upper()
        if mode not in MODES:
            raise errors.invalid_mode(mode)
        if mode == "IMPORT" and not force:
            has = self.state.versions(subject, deleted=True) if subject is not None else self.state.subjects
            if has:
                raise errors.operation_not_permitted("Cannot import since found existing subjects")
        self._write([(subject_key("MODE", subject), {"mode": mode})])

    def delete_mode(self, subject: str) -> str:
        if subject not in self.state.modes:
            raise errors.subject_mode_not_configured(subject)
        previous = self.state.modes[subject]
        self._write([(subject_key("MODE", subject), None)])
        return previous


def parse_version(version: str) -> int:
    """A version in a path: 1..2^31-1, "latest", or -1 for the latest (42202 otherwise)."""
    if version == "latest":
        return -1
    try:
        number = int(version)
    except ValueError:
        raise errors.invalid_version(version) from None
    if number == -1 or 1 <= number <= 2**31 - 1:
        return number
    raise errors.invalid_version(version)


__all__ = ["GLOBAL", "MODES", "NewSchema", "Registry", "parse_version"]
