"""Avro schemas: parsed by the `avro` package (Apache Avro's own Python implementation) and checked
with its ReaderWriterCompatibilityChecker, the port of Avro Java's SchemaCompatibility that
Confluent's registry calls and that Karapace uses too.

The stored string is the schema as Avro renders it (Avro Java's Schema.toString, which Confluent
stores; here the avro package's to_json), compact: the same schema sent with other spacing, key
order or `{"type": "string"}` for `"string"` gets the same id; `normalize=true` also sorts the keys
of every object. References are Avro named types defined by other subjects:
they are parsed first into the same `Names`, so the schema can use them by full name.
The descriptions of incompatibilities are Confluent's (AvroSchema's compatibility messages).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import avro.errors
from avro.compatibility import (
    ReaderWriterCompatibilityChecker,
    SchemaCompatibilityType,
    SchemaIncompatibilityType,
)
from avro.name import Names
from avro.schema import Schema, make_avsc_object

from minibroker.schema_registry import errors
from minibroker.schema_registry.schemas import AVRO, Incompatibility, ParsedSchema, ResolvedReference


def _compact(value: object, *, sort_keys: bool = False) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=sort_keys, ensure_ascii=False)


class AvroSchema:
    schema_type = AVRO

    def __init__(self, schema: Schema, document: object) -> None:
        self.schema = schema
        self.document = document  # the schema as Avro writes it (Avro Java's Schema.toString, in Python)

    @classmethod
    def parse(cls, text: str, references: Sequence[ResolvedReference] = ()) -> AvroSchema:
        names = Names(validate_names=True)
        try:
            for ref in references:
                if ref.schema_type == AVRO:
                    make_avsc_object(json.loads(ref.schema), names)
            document = json.loads(text)
            # Avro Java (and so Confluent) takes a bare name of a type already defined as that type
            named = names.get_name(document, None) if isinstance(document, str) and references else None
            schema: Schema = named if named is not None else make_avsc_object(document, names)
            # the stored form, as Confluent stores Avro's own rendering: {"type":"string"} is "string";
            # the referenced types are written by name (parsed into names of their own first)
            ref_names = Names(validate_names=True)
            for ref in references:
                if ref.schema_type == AVRO:
                    make_avsc_object(json.loads(ref.schema), ref_names)
            rendered = schema.to_json(ref_names)
        except (ValueError, TypeError, AttributeError, KeyError, avro.errors.AvroException) as e:
            raise errors.invalid_schema(f"Invalid schema {text[:200]} with refs {[r.name for r in references]} "
                                        f"of type AVRO, details: {e}") from None
        return cls(schema, rendered)

    def canonical(self) -> str:
        return _compact(self.document)

    def normalized(self) -> str:
        return _compact(self.document, sort_keys=True)

    def incompatibilities(self, writer: ParsedSchema, *, reader_is_new: bool) -> list[Incompatibility]:
        if not isinstance(writer, AvroSchema):
            return [Incompatibility("TYPE_MISMATCH", f"Incompatible because of different schema type: "
                                                     f"{writer.schema_type} and {AVRO}")]
        result = ReaderWriterCompatibilityChecker().get_compatibility(self.schema, writer.schema)
        if result.compatibility is not SchemaCompatibilityType.incompatible:
            return []
        reader_side, writer_side = ("new", "old") if reader_is_new else ("old", "new")
        path = sorted(result.locations)[0] if result.locations else "/"
        messages = sorted(result.messages)
        out = []
        for kind in dict.fromkeys(result.incompatibilities):  # each kind once, in the checker's order
            out.append(_describe(kind, path, messages[0] if messages else "", reader_side, writer_side))
        return out


def _describe(kind: SchemaIncompatibilityType, path: str, info: str, reader: str, writer: str) -> Incompatibility:
    """Confluent's wording of each of Avro's incompatibility types."""
    name = kind.name.upper()
    if kind is SchemaIncompatibilityType.name_mismatch:
        text = f"The name of the schema has changed (path '{path}')"
    elif kind is SchemaIncompatibilityType.fixed_size_mismatch:
        text = f"The size of FIXED type field at path '{path}' in the {reader} schema does not match with the {writer} schema"
    elif kind is SchemaIncompatibilityType.missing_enum_symbols:
        text = f"The {reader} schema is missing enum symbols '{info}' at path '{path}' in the {writer} schema"
    elif kind is SchemaIncompatibilityType.reader_field_missing_default_value:
        text = (f"The field '{info}' at path '{path}' in the {reader} schema has no default value and is missing in "
                f"the {writer} schema")
    elif kind is SchemaIncompatibilityType.type_mismatch:
        text = f"The type (path '{path}') of a field in the {reader} schema does not match with the {writer} schema"
    else:  # missing_union_branch
        text = f"The {reader} schema is missing a type inside a union field at path '{path}' in the {writer} schema"
    return Incompatibility(name, text, info)
