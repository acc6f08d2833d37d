"""What the three schema types have in common: a parsed schema, its references, and the
incompatibilities a compatibility check reports.

Theory of operation. A registered schema is a string and a type (AVRO, JSON, PROTOBUF; AVRO when
the request names none, as Confluent's) with references to other subjects' versions that its
names resolve against (Confluent: SchemaReference {name, subject, version}). `parse_schema`
(schema_types.py) hands the string and the already resolved references to the type's module, which parses it with
its maintained library (the `avro` package, `jsonschema`, protoc through grpcio-tools) and
answers what the registry needs: the string to store and compare (`canonical`, the same schema
sent twice gets one id), its normalized form (`normalize=true`), and the incompatibilities of a
reader with a writer, in Confluent's shape {errorType, description, additionalInfo}.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

AVRO, JSON, PROTOBUF = "AVRO", "JSON", "PROTOBUF"
SCHEMA_TYPES = (JSON, PROTOBUF, AVRO)  # GET /schemas/types answers them in this order, as Confluent


@dataclass(frozen=True)
class SchemaReference:
    """A name the schema uses (an Avro full name, a JSON $ref, a .proto import) and the subject
    version that defines it."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, str | int]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True)
class ResolvedReference:
    """A reference with the schema it names, ready for a parser (dependencies first)."""

    name: str
    schema_type: str
    schema: str


@dataclass(frozen=True)
class Incompatibility:
    """One reason a reader cannot read what a writer wrote (Confluent's Difference)."""

    error_type: str
    description: str
    additional_info: str = ""

    def __str__(self) -> str:
        # Confluent's rendering, which its clients and users grep for
        info = f", additionalInfo:'{self.additional_info}'" if self.additional_info else ""
        return f"{{errorType:'{self.error_type}', description:'{self.description}'{info}}}"


class ParsedSchema(Protocol):
    schema_type: str

    def canonical(self) -> str:
        """The string stored and compared: the same schema sent twice has the same one."""
        ...

    def normalized(self) -> str:
        """The string under `normalize=true` (Confluent: ParsedSchema.normalize)."""
        ...

    def incompatibilities(self, writer: ParsedSchema, *, reader_is_new: bool) -> list[Incompatibility]:
        """Why this schema, as a reader, cannot read data written with `writer` (empty: it can);
        `reader_is_new` says which of the two the messages call the new schema."""
        ...
