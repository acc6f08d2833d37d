"""Records in Confluent's wire format decoded to JSON through the registry's schemas (the console's
message browser shows them so).

Confluent's serializers frame a key or value as magic byte 0, the schema's id (4 bytes, big endian),
then the payload: Avro's binary encoding (Confluent: AbstractKafkaAvroSerializer), the JSON text
(KafkaJsonSchemaSerializer), or for Protobuf the message indexes then the message's bytes
(KafkaProtobufSerializer: a zigzag varint count, then that many zigzag varint indexes into the
file's messages and their nested ones; a single 0 stands for [0], the file's first message).

Decoding uses the same libraries the registry parses with: the `avro` package's DatumReader with
the writer's schema, `json`, and the `protobuf` package's dynamic messages from the registry's
FileDescriptorProto (its references and Google's well-known imports added to a pool of its own)
rendered by json_format as protobuf's canonical JSON mapping.
"""

from __future__ import annotations

import datetime
import decimal
import importlib
import io
import json
import uuid
from dataclasses import dataclass

import avro.errors
import avro.io
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.message import DecodeError, Message

from minibroker.schema_registry.avro_schema import AvroSchema
from minibroker.schema_registry.protobuf_schema import ProtobufSchema
from minibroker.schema_registry.registry import Registry
from minibroker.schema_registry.schemas import AVRO, JSON, PROTOBUF
from minibroker.schema_registry.state import SchemaVersion

MAGIC = 0
HEADER = 5  # magic byte and the 4-byte schema id


@dataclass(frozen=True)
class Decoded:
    """A framed key or value: its schema id, the versions holding it, and its JSON (or why not)."""

    schema_id: int
    schema_type: str | None  # None: the registry does not hold the id
    versions: tuple[tuple[str, int], ...]  # (subject, version), the topic's own subject first
    json: object = None
    message_type: str | None = None  # Protobuf: the message's full name the indexes chose
    error: str | None = None


def schema_id_of(data: bytes) -> int | None:
    """The schema id of a framed key or value, None when `data` is not in Confluent's format."""
    if len(data) < HEADER or data[0] != MAGIC:
        return None
    return int.from_bytes(data[1:HEADER], "big")


class WireFormatDecoder:
    """Decodes framed records with the registry's schemas, caching what it builds per schema id."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._pools: dict[int, descriptor_pool.DescriptorPool] = {}

    def decode(self, data: bytes, subject: str | None = None) -> Decoded | None:
        """`data` decoded, or None when it is not framed; `subject`: the one the topic's records use
        (TopicNameStrategy: `<topic>-value`), listed first among the versions holding the id."""
        schema_id = schema_id_of(data)
        if schema_id is None:
            return None
        self.registry.catch_up()
        holders = self.registry.state.holders(schema_id)
        holders.sort(key=lambda sv: (sv.subject != subject, sv.deleted, sv.subject, sv.version))
        versions = tuple((sv.subject, sv.version) for sv in holders)
        if not holders:
            return Decoded(schema_id, None, versions, error=f"the schema registry holds no schema with id {schema_id}")
        sv = holders[0]
        payload = data[HEADER:]
        try:
            if sv.schema_type == AVRO:
                return Decoded(schema_id, AVRO, versions, json=self._avro(sv, payload))
            if sv.schema_type == JSON:
                return Decoded(schema_id, JSON, versions, json=json.loads(payload.decode("utf-8")))
            name, value = self._protobuf(sv, payload)
            return Decoded(schema_id, PROTOBUF, versions, json=value, message_type=name)
        except (ValueError, TypeError, KeyError, IndexError, EOFError, DecodeError, avro.errors.AvroException) as e:
            # a payload that does not match its schema (or a schema that no longer parses): say why
            return Decoded(schema_id, sv.schema_type, versions,
                           error=f"the payload does not decode as {sv.schema_type} schema {schema_id}: "
                                 f"{type(e).__name__}: {e}")

    # -- Avro ------------------------------------------------------------------------------------
    def _avro(self, sv: SchemaVersion, payload: bytes) -> object:
        parsed = self.registry.parsed(sv)
        assert isinstance(parsed, AvroSchema)
        buf = io.BytesIO(payload)
        value = avro.io.DatumReader(parsed.schema).read(avro.io.BinaryDecoder(buf))
        if buf.tell() != len(payload):
            raise ValueError(f"{len(payload) - buf.tell()} bytes left after the record")
        return _avro_json(value)

    # -- Protobuf --------------------------------------------------------------------------------
    def _protobuf(self, sv: SchemaVersion, payload: bytes) -> tuple[str, object]:
        indexes, pos = _message_indexes(payload)
        parsed = self.registry.parsed(sv)
        assert isinstance(parsed, ProtobufSchema)
        pool = self._pools.get(sv.schema_id)
        if pool is None:
            pool = self._pools[sv.schema_id] = self._pool(sv, parsed)
        name = _message_name(parsed.descriptor, indexes)
        cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
        msg: Message = cls.FromString(payload[pos:])
        return name, json_format.MessageToDict(msg, preserving_proto_field_name=True)

    def _pool(self, sv: SchemaVersion, parsed: ProtobufSchema) -> descriptor_pool.DescriptorPool:
        """A pool of the schema's file and every file it imports: references first, then Google's."""
        pool = descriptor_pool.DescriptorPool()
        files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
        self._referenced(sv, files)
        main = descriptor_pb2.FileDescriptorProto()
        main.CopyFrom(parsed.descriptor)
        if not main.name or main.name in files:
            main.name = f"schema-{sv.schema_id}.proto"
        files[main.name] = main
        added: set[str] = set()

        def add(name: str) -> None:
            if name in added:
                return
            added.add(name)
            fdp = files.get(name) or _well_known(name)
            for dep in fdp.dependency:
                add(dep)
            pool.Add(fdp)

        add(main.name)
        return pool

    def _referenced(self, sv: SchemaVersion, files: dict[str, descriptor_pb2.FileDescriptorProto]) -> None:
        for ref in sv.references:
            versions = self.registry.state.versions(ref.subject, deleted=True)
            dep = (versions[-1] if versions and ref.version == -1
                   else next((v for v in versions if v.version == ref.version), None))
            if dep is None or ref.name in files:
                continue
            parsed = self.registry.parsed(dep)
            assert isinstance(parsed, ProtobufSchema)
            fdp = descriptor_pb2.FileDescriptorProto()
            fdp.CopyFrom(parsed.descriptor)
            fdp.name = ref.name  # the name the importing file's `import` says
            files[ref.name] = fdp
            self._referenced(dep, files)


def _well_known(name: str) -> descriptor_pb2.FileDescriptorProto:
    """A google/protobuf/*.proto or google/type/*.proto the schema imports without a reference
    (confluent-kafka skips Google's files): from the module the protobuf package or
    googleapis-common-protos generated for it."""
    if not name.startswith("google/") or not name.endswith(".proto"):
        raise KeyError(f"the import {name!r} is neither a reference of the schema nor one of Google's files")
    module = importlib.import_module(name[:-len(".proto")].replace("/", ".") + "_pb2")
    fdp = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(fdp)
    return fdp


def _zigzag_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(data) or shift > 28:
            raise ValueError("a message index varint runs past the payload")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def _message_indexes(payload: bytes) -> tuple[list[int], int]:
    """Confluent's message indexes at the start of a Protobuf payload, and where the message starts."""
    count, pos = _zigzag_varint(payload, 0)
    if count == 0:
        return [0], pos
    if count < 0 or count > 100:
        raise ValueError(f"{count} message indexes")
    indexes = []
    for _ in range(count):
        index, pos = _zigzag_varint(payload, pos)
        indexes.append(index)
    return indexes, pos


def _message_name(fdp: descriptor_pb2.FileDescriptorProto, indexes: list[int]) -> str:
    """The full name of the message the indexes walk to: the file's messages, then nested ones."""
    messages = fdp.message_type
    names = [fdp.package] if fdp.package else []
    for i in indexes:
        if not 0 <= i < len(messages):
            raise IndexError(f"message index {i} of {indexes}: the schema has {len(messages)} messages there")
        names.append(messages[i].name)
        messages = messages[i].nested_type
    return ".".join(names)


def _avro_json(value: object) -> object:
    """What the avro package reads, as JSON: bytes and fixed as Avro's JSON encoding writes them
    (one character per byte), logical types (decimal, dates, times, uuid) as their text."""
    if isinstance(value, dict):
        return {str(k): _avro_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_avro_json(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, (decimal.Decimal, datetime.date, datetime.time, datetime.datetime, uuid.UUID)):
        return str(value)
    if isinstance(value, float) and value != value:  # NaN is no JSON
        return "NaN"
    return value


__all__ = ["Decoded", "WireFormatDecoder", "schema_id_of"]
