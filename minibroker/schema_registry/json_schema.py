"""JSON Schema: checked against its draft's meta-schema by `jsonschema` (the maintained Python
implementation of every draft), compared for compatibility by the rules of Confluent's
JsonSchemaDiff.

Theory of operation. A JSON Schema describes which documents are valid, so a reader can read
what a writer wrote when every document the writer's schema accepts, the reader's accepts too.
`_Diff` walks the two schemas side by side and reports Confluent's difference types where the
reader accepts less: a type narrowed or changed, a property added to an open content model (old
documents may hold anything under that name) or removed from a closed one, a required property
added, an enum narrowed, a pattern added or changed, a bound tightened (maxLength, minimum, ...),
additional properties or items closed. Widening changes are compatible and not reported. $ref is compared as a string
(references resolve to other subjects; a schema that changes what a $ref names is a new $ref); a
local $ref ("#/$defs/x") is followed.
This is a subset of Confluent's ~60 difference types: the ones above, recursively through
properties, items (and tuples) and additionalProperties; combined schemas (oneOf/anyOf/allOf) are
compared branch by branch by position, an untyped oneOf/anyOf has its branches' types; a changed `not` is
NOT_TYPE_EXTENDED.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import jsonschema
import jsonschema.exceptions
import jsonschema.validators

from minibroker.schema_registry import errors
from minibroker.schema_registry.schemas import JSON, Incompatibility, ParsedSchema, ResolvedReference

# bounds whose tightening refuses documents the writer allowed: key -> (difference type, tighter-is-larger)
_BOUNDS = {
    "maxLength": ("MAX_LENGTH_DECREASED", False), "minLength": ("MIN_LENGTH_INCREASED", True),
    "maximum": ("MAXIMUM_DECREASED", False), "minimum": ("MINIMUM_INCREASED", True),
    "exclusiveMaximum": ("EXCLUSIVE_MAXIMUM_DECREASED", False), "exclusiveMinimum": ("EXCLUSIVE_MINIMUM_INCREASED", True),
    "maxItems": ("MAX_ITEMS_DECREASED", False), "minItems": ("MIN_ITEMS_INCREASED", True),
    "maxProperties": ("MAX_PROPERTIES_DECREASED", False), "minProperties": ("MIN_PROPERTIES_INCREASED", True),
}
_ALL_TYPES = frozenset({"null", "boolean", "object", "array", "number", "string", "integer"})


class JsonSchema:
    schema_type = JSON

    def __init__(self, document: object) -> None:
        self.document = document

    @classmethod
    def parse(cls, text: str, references: Sequence[ResolvedReference] = ()) -> JsonSchema:
        try:
            document = json.loads(text)
        except ValueError as e:
            raise errors.invalid_schema(f"Invalid schema {text[:200]}, details: Invalid JSON: {e}") from None
        if not isinstance(document, dict | bool):
            raise errors.invalid_schema(f"Invalid schema {text[:200]}, details: a JSON Schema is an object or a boolean")
        try:
            # without $schema, draft-07 (Confluent's default), where "items" may be a list (tuples)
            jsonschema.validators.validator_for(document, default=jsonschema.Draft7Validator).check_schema(document)
        except jsonschema.exceptions.SchemaError as e:
            raise errors.invalid_schema(f"Invalid schema {text[:200]} with refs {[r.name for r in references]} of "
                                        f"type JSON, details: {e.message}") from None
        return cls(document)

    def canonical(self) -> str:
        return json.dumps(self.document, separators=(",", ":"), ensure_ascii=False)

    def normalized(self) -> str:
        return json.dumps(self.document, separators=(",", ":"), sort_keys=True, ensure_ascii=False)

    def incompatibilities(self, writer: ParsedSchema, *, reader_is_new: bool) -> list[Incompatibility]:
        if not isinstance(writer, JsonSchema):
            return [Incompatibility("TYPE_MISMATCH", f"Incompatible because of different schema type: "
                                                     f"{writer.schema_type} and {JSON}")]
        diff = _Diff("new" if reader_is_new else "old", self.document, writer.document)
        diff.compare(self.document, writer.document, "#")
        return diff.found


def _types(schema: dict[str, object]) -> frozenset[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return frozenset({t})
    if isinstance(t, list):
        return frozenset(x for x in t if isinstance(x, str))
    for combined in ("oneOf", "anyOf"):  # an untyped union: the types of its branches
        branches = schema.get(combined)
        if isinstance(branches, list) and branches and all(isinstance(b, dict) and "type" in b for b in branches):
            return frozenset().union(*(_types(b) for b in branches if isinstance(b, dict)))
    return _ALL_TYPES


def _pointer(root: object, ref: str) -> object | None:
    """The subschema a local $ref ("#/$defs/x") names in `root`, or None."""
    node = root
    for part in ref.removeprefix("#").strip("/").split("/") if ref != "#" else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _accepts(reader: frozenset[str], writer_type: str) -> bool:
    return writer_type in reader or (writer_type == "integer" and "number" in reader)


class _Diff:
    def __init__(self, reader_side: str, reader_root: object, writer_root: object) -> None:
        self.reader_side = reader_side
        self.roots = (reader_root, writer_root)
        self.found: list[Incompatibility] = []
        self._resolving: set[tuple[int, int]] = set()  # (reader, writer) pairs being compared through a $ref

    def _local(self, schema: object, root: object) -> object:
        """`schema` with its local $ref followed (a $ref to another subject stays as it is)."""
        for _ in range(32):  # a chain of local refs, bounded
            if not isinstance(schema, dict) or not str(schema.get("$ref", "")).startswith("#"):
                return schema
            target = _pointer(root, str(schema["$ref"]))
            if target is None:
                return schema
            schema = target
        return schema

    def add(self, kind: str, path: str, what: str) -> None:
        self.found.append(Incompatibility(kind, f"{what} at path '{path}' in the {self.reader_side} schema"))

    def compare(self, reader: object, writer: object, path: str) -> None:
        reader, writer = self._local(reader, self.roots[0]), self._local(writer, self.roots[1])
        if reader is True or reader == {} or writer is False:
            return  # the reader accepts everything, or the writer wrote nothing
        if reader is False:
            self.add("TYPE_CHANGED", path, "The schema accepts nothing")
            return
        if not isinstance(reader, dict) or not isinstance(writer, dict):
            return
        pair = (id(reader), id(writer))
        if pair in self._resolving:  # a recursive schema: this pair is being compared further up
            return
        self._resolving.add(pair)
        try:
            self._compare(reader, writer, path)
        finally:
            self._resolving.discard(pair)

    def _compare(self, reader: dict[str, object], writer: dict[str, object], path: str) -> None:
        if reader.get("$ref") != writer.get("$ref"):
            self.add("TYPE_CHANGED", path, f"The reference changed from {writer.get('$ref')} to {reader.get('$ref')}")
            return
        rt, wt = _types(reader), _types(writer)
        lost = {t for t in wt if not _accepts(rt, t)}
        if lost:
            kind = "TYPE_NARROWED" if all(_accepts(wt, t) for t in rt) else "TYPE_CHANGED"
            self.add(kind, path, f"The type {sorted(wt)} changed to {sorted(rt)}")
            return
        self._bounds(reader, writer, path)
        if "enum" in reader:
            r_enum, w_enum = reader.get("enum"), writer.get("enum")
            if not isinstance(w_enum, list) or not isinstance(r_enum, list) or any(v not in r_enum for v in w_enum):
                self.add("ENUM_ARRAY_NARROWED", path, "The enum lost values")
        if "not" in reader and reader.get("not") != writer.get("not"):
            self.add("NOT_TYPE_EXTENDED", path, "The schema excludes more (its 'not' changed)")
        if "const" in reader and reader.get("const") != writer.get("const"):
            self.add("TYPE_CHANGED", path, "The const changed")
        if "pattern" in reader and reader.get("pattern") != writer.get("pattern"):
            kind = "PATTERN_CHANGED" if "pattern" in writer else "PATTERN_ADDED"
            self.add(kind, path, f"The pattern is {reader.get('pattern')!r} (was {writer.get('pattern')!r})")
        if "object" in rt and "object" in wt:
            self._objects(reader, writer, path)
        if "array" in rt and "array" in wt:
            self._arrays(reader, writer, path)
        for combined in ("oneOf", "anyOf", "allOf"):
            r_branches, w_branches = reader.get(combined), writer.get(combined)
            if isinstance(r_branches, list) and isinstance(w_branches, list):
                if combined != "allOf" and len(r_branches) < len(w_branches):
                    self.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED", path, f"{combined} lost subschemas")
                for i, (r, w) in enumerate(zip(r_branches, w_branches, strict=False)):
                    self.compare(r, w, f"{path}/{combined}/{i}")

    def _bounds(self, reader: dict[str, object], writer: dict[str, object], path: str) -> None:
        for key, (kind, tighter_is_larger) in _BOUNDS.items():
            r, w = reader.get(key), writer.get(key)
            if not isinstance(r, int | float) or isinstance(r, bool):
                continue
            if not isinstance(w, int | float) or (r > w if tighter_is_larger else r < w):
                self.add(kind if isinstance(w, int | float) else kind.rsplit("_", 1)[0] + "_ADDED", path,
                         f"{key} is {r} (was {w})")

    def _objects(self, reader: dict[str, object], writer: dict[str, object], path: str) -> None:
        r_props = reader.get("properties") if isinstance(reader.get("properties"), dict) else {}
        w_props = writer.get("properties") if isinstance(writer.get("properties"), dict) else {}
        assert isinstance(r_props, dict) and isinstance(w_props, dict)
        r_extra, w_extra = reader.get("additionalProperties", True), writer.get("additionalProperties", True)
        for name, w_sub in w_props.items():
            where = f"{path}/properties/{name}"
            if name in r_props:
                self.compare(r_props[name], w_sub, where)
            elif r_extra is False:
                self.add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", where, f"The property '{name}' is removed")
            else:
                self.compare(r_extra, w_sub, where)
        for name in r_props:
            if name not in w_props:
                where = f"{path}/properties/{name}"
                if w_extra is not False:
                    self.add("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", where, f"The property '{name}' is added")
        r_req = reader.get("required") if isinstance(reader.get("required"), list) else []
        w_req = writer.get("required") if isinstance(writer.get("required"), list) else []
        assert isinstance(r_req, list) and isinstance(w_req, list)
        for name in r_req:
            if name not in w_req:
                self.add("REQUIRED_ATTRIBUTE_ADDED", f"{path}/required", f"The property '{name}' is now required")
        if r_extra is False and w_extra is not False:
            self.add("ADDITIONAL_PROPERTIES_REMOVED", path, "Additional properties are no longer allowed")
        elif isinstance(r_extra, dict) and w_extra is not False:
            self.compare(r_extra, w_extra if isinstance(w_extra, dict) else {}, f"{path}/additionalProperties")

    def _arrays(self, reader: dict[str, object], writer: dict[str, object], path: str) -> None:
        r_items, w_items = reader.get("items", True), writer.get("items", True)
        if isinstance(r_items, list) or isinstance(w_items, list):  # tuples (draft-07 "items": [...])
            if not (isinstance(r_items, list) and isinstance(w_items, list)):
                self.add("TYPE_CHANGED", f"{path}/items", "An array changed to a tuple or back")
                return
            # Confluent's ArraySchemaDiff: an item the reader adds reads what the writer's
            # additionalItems let it write there (anything when open: ITEM_ADDED_TO_OPEN_CONTENT_MODEL;
            # nothing when closed: compatible); an item the reader drops is read by its additionalItems
            # (refused when closed: ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL)
            w_extra, r_extra = writer.get("additionalItems", True), reader.get("additionalItems", True)
            for i in range(len(w_items), len(r_items)):
                if w_extra is True:
                    self.add("ITEM_ADDED_TO_OPEN_CONTENT_MODEL", f"{path}/items/{i}",
                             f"The tuple's item {i} was added, where the old schema allowed any item")
                elif isinstance(w_extra, dict):
                    self.compare(r_items[i], w_extra, f"{path}/items/{i}")
            for i in range(len(r_items), len(w_items)):
                if r_extra is False:
                    self.add("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL", f"{path}/items/{i}",
                             f"The tuple's item {i} was removed, and the new schema allows no more items")
                elif isinstance(r_extra, dict):
                    self.compare(r_extra, w_items[i], f"{path}/items/{i}")
            for i, (r, w) in enumerate(zip(r_items, w_items, strict=False)):
                self.compare(r, w, f"{path}/items/{i}")
            return
        if isinstance(r_items, dict | bool) and isinstance(w_items, dict | bool):
            if r_items is False and w_items is not False:
                self.add("ADDITIONAL_ITEMS_REMOVED", f"{path}/items", "Items are no longer allowed")
            else:
                self.compare(r_items, w_items if w_items is not True else {}, f"{path}/items")
