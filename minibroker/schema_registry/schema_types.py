"""`parse_schema`: a schema string of a type, parsed by that type's module (see schemas.py)."""

from __future__ import annotations

from collections.abc import Sequence

from minibroker.schema_registry import errors
from minibroker.schema_registry.avro_schema import AvroSchema
from minibroker.schema_registry.json_schema import JsonSchema
from minibroker.schema_registry.protobuf_schema import ProtobufSchema
from minibroker.schema_registry.schemas import AVRO, JSON, PROTOBUF, ParsedSchema, ResolvedReference


def parse_schema(schema_type: str, schema: str, references: Sequence[ResolvedReference] = ()) -> ParsedSchema:
    """Parse `schema` of `schema_type`; raises RegistryError 42201 with the parser's reason."""
    try:
        if schema_type == AVRO:
            return AvroSchema.parse(schema, references)
        if schema_type == JSON:
            return JsonSchema.parse(schema, references)
        if schema_type == PROTOBUF:
            return ProtobufSchema.parse(schema, references)
    except RecursionError:
        raise errors.invalid_schema(f"Invalid {schema_type} schema: nested too deeply") from None
    raise errors.RegistryError(422, 422, f"Invalid schema type {schema_type}")
