"""confluent-kafka's own schema registry client and serializers against minibroker's registry
(issue 36): Avro, JSON Schema and Protobuf round trips through the broker, evolutions with
Confluent's statuses and codes, references, soft delete then re-register, and a restart that
keeps every id."""

from __future__ import annotations

import base64
import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2

from minibroker.testing import BrokerThread
from tests.integration.helpers import confluent_consume, create_topic, module_broker, unique
from tests.schema_registry.helpers import REGISTRY_OVERRIDES, call, record, registry_url

USER = record("User", {"name": "name", "type": "string"}, {"name": "age", "type": "int"}, namespace="example")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    with module_broker(tmp_path_factory, REGISTRY_OVERRIDES) as b:
        yield b


@pytest.fixture(scope="module")
def client(broker: BrokerThread) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": registry_url(broker)})


def round_trip(broker: BrokerThread, serialize: Any, deserialize: Any, values: list[Any]) -> list[Any]:
    """Produce `values` serialized through the registry, consume them back, deserialize."""
    topic = unique("sr")
    create_topic(broker, topic)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for v in values:
        producer.produce(topic, serialize(v, SerializationContext(topic, MessageField.VALUE)))
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique("g"),
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        msgs = confluent_consume(consumer, len(values))
    finally:
        consumer.close()
    for m in msgs:  # Confluent's wire format: magic byte 0, a 4-byte schema id, the payload
        assert m.value()[0] == 0
    return [deserialize(m.value(), SerializationContext(topic, MessageField.VALUE)) for m in msgs]


def test_avro_round_trip(broker: BrokerThread, client: SchemaRegistryClient) -> None:
    values = [{"name": "ada", "age": 36}, {"name": "alan", "age": 41}]
    got = round_trip(broker, AvroSerializer(client, USER), AvroDeserializer(client), values)
    assert got == values
    subjects = client.get_subjects()
    latest = [client.get_latest_version(s) for s in subjects]
    assert any(json.loads(r.schema.schema_str) == json.loads(USER) for r in latest)


def test_json_schema_round_trip(broker: BrokerThread, client: SchemaRegistryClient) -> None:
    schema = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
                         "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
                         "required": ["id"]})
    values = [{"id": 1, "item": "tea"}, {"id": 2, "item": "cake"}]
    got = round_trip(broker, JSONSerializer(schema, client), JSONDeserializer(schema, schema_registry_client=client),
                     values)
    assert got == values


@pytest.fixture(scope="module")
def proto_module(tmp_path_factory: Any) -> Any:
    """A _pb2 module compiled from .proto text by protoc (grpcio-tools), as a user's build would."""
    from grpc_tools import protoc

    out = tmp_path_factory.mktemp("proto")
    name = f"reading_{unique('p').replace('-', '_')}"
    (out / f"{name}.proto").write_text('syntax = "proto3";\npackage sensors;\n'
                                       "message Reading { string sensor = 1; double value = 2; int64 at = 3; }\n")
    assert protoc.main(["protoc", f"-I{out}", f"--python_out={out}", f"{name}.proto"]) == 0
    sys.path.insert(0, str(out))
    try:
        return importlib.import_module(f"{name}_pb2")
    finally:
        sys.path.remove(str(out))


def test_protobuf_round_trip(broker: BrokerThread, client: SchemaRegistryClient, proto_module: Any) -> None:
    reading = proto_module.Reading
    values = [reading(sensor="t1", value=21.5, at=1), reading(sensor="t2", value=-3.0, at=2)]
    ser = ProtobufSerializer(reading, client, {"use.deprecated.format": False})
    de = ProtobufDeserializer(reading, {"use.deprecated.format": False})
    got = round_trip(broker, ser, de, values)
    assert got == values
    # the registry parsed the serializer's base64 descriptor: it answers the message by name
    sid = client.register_schema(unique("proto-value"), Schema(ser._schema.schema_str, "PROTOBUF"))
    assert client.get_schema(sid, fmt="serialized").schema_str == ser._schema.schema_str


def test_protobuf_with_an_import_registers_its_dependency(broker: BrokerThread, client: SchemaRegistryClient,
                                                          tmp_path_factory: Any) -> None:
    """A message importing a well-known type: the serializer's descriptor names the import, and the
    registry takes it without the file (protoc ships it)."""
    from grpc_tools import protoc

    out = tmp_path_factory.mktemp("proto-import")
    name = f"stamped_{unique('p').replace('-', '_')}"
    (out / f"{name}.proto").write_text('syntax = "proto3";\npackage stamps;\nimport "google/protobuf/timestamp.proto";\n'
                                       "message Stamped { string what = 1; google.protobuf.Timestamp at = 2; }\n")
    include = str(Path(protoc.__file__).with_name("_proto"))
    assert protoc.main(["protoc", f"-I{out}", f"-I{include}", f"--python_out={out}", f"{name}.proto"]) == 0
    sys.path.insert(0, str(out))
    try:
        stamped = importlib.import_module(f"{name}_pb2").Stamped
    finally:
        sys.path.remove(str(out))
    value = stamped(what="tea")
    value.at.seconds = 1_700_000_000
    ser = ProtobufSerializer(stamped, client, {"use.deprecated.format": False})
    de = ProtobufDeserializer(stamped, {"use.deprecated.format": False})
    assert round_trip(broker, ser, de, [value]) == [value]
    # the well-known import is not registered as a reference (the client skips Google's built-ins);
    # the registry answers the descriptor with its import
    sid = client.register_schema(unique("stamped-value"), Schema(ser._schema.schema_str, "PROTOBUF"))
    fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(
        client.get_schema(sid, fmt="serialized").schema_str))
    assert list(fdp.dependency) == ["google/protobuf/timestamp.proto"]


def test_compatible_and_incompatible_evolution(client: SchemaRegistryClient) -> None:
    subject = unique("evolve-value")
    v1 = client.register_schema(subject, Schema(USER, "AVRO"))
    compatible = record("User", {"name": "name", "type": "string"}, {"name": "age", "type": "int"},
                        {"name": "email", "type": ["null", "string"], "default": None}, namespace="example")
    v2 = client.register_schema(subject, Schema(compatible, "AVRO"))
    assert v2 == v1 + 1 or v2 > v1
    assert client.get_versions(subject) == [1, 2]
    incompatible = record("User", {"name": "name", "type": "string"}, {"name": "age", "type": "int"},
                          {"name": "email", "type": "string"}, {"name": "phone", "type": "string"},
                          namespace="example")
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema(subject, Schema(incompatible, "AVRO"))
    assert (e.value.http_status_code, e.value.error_code) == (409, 409)
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in e.value.error_message and "'phone'" in e.value.error_message
    assert not client.test_compatibility(subject, Schema(incompatible, "AVRO"))
    assert client.test_compatibility(subject, Schema(compatible, "AVRO"))
    # the same schema again: its id, no new version
    assert client.register_schema(subject, Schema(compatible, "AVRO")) == v2
    assert client.get_versions(subject) == [1, 2]
    # NONE lets it in
    client.set_compatibility(subject, "NONE")
    assert client.get_compatibility(subject) == "NONE"
    client.register_schema(subject, Schema(incompatible, "AVRO"))
    assert client.get_versions(subject) == [1, 2, 3]


def test_same_schema_in_two_subjects_has_one_id(client: SchemaRegistryClient) -> None:
    schema = record("Shared", {"name": "x", "type": "long"})
    a = client.register_schema(unique("a-value"), Schema(schema, "AVRO"))
    b = client.register_schema(unique("b-value"), Schema(json.dumps(json.loads(schema), indent=2), "AVRO"))
    assert a == b
    other = client.register_schema(unique("c-value"), Schema(record("Other", {"name": "x", "type": "long"}), "AVRO"))
    assert other > a


def test_avro_references(broker: BrokerThread, client: SchemaRegistryClient) -> None:
    address_subject = unique("address")
    address = record("Address", {"name": "street", "type": "string"}, namespace="example")
    client.register_schema(address_subject, Schema(address, "AVRO"))
    person = record("Person", {"name": "name", "type": "string"}, {"name": "home", "type": "example.Address"},
                    namespace="example")
    refs = [SchemaReference("example.Address", address_subject, 1)]
    subject = f"{unique('person')}-value"
    pid = client.register_schema(subject, Schema(person, "AVRO", refs))
    got = client.get_latest_version(subject)
    assert got.schema_id == pid and [(r.name, r.subject, r.version) for r in got.schema.references] == [
        ("example.Address", address_subject, 1)]
    url = registry_url(broker)
    assert call("GET", f"{url}/subjects/{address_subject}/versions/1/referencedby") == (200, [pid])
    # a referenced version cannot be deleted (42206); the reference must exist (42201)
    status, body = call("DELETE", f"{url}/subjects/{address_subject}/versions/1")
    assert (status, body["error_code"]) == (422, 42206)
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema(unique("p2"), Schema(person, "AVRO", [SchemaReference("example.Address", "nope", 1)]))
    assert e.value.error_code == 42201
    # without the reference the name is unknown
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema(unique("p3"), Schema(person, "AVRO"))
    assert e.value.error_code == 42201
    # serializers resolve references through the registry
    ser = AvroSerializer(client, Schema(person, "AVRO", refs), conf={"auto.register.schemas": False,
                                                                     "use.latest.version": True},
                         )
    topic_subject = subject.removesuffix("-value")
    ctx = SerializationContext(topic_subject, MessageField.VALUE)
    value = {"name": "ada", "home": {"street": "St James's Square"}}
    assert AvroDeserializer(client)(ser(value, ctx), ctx) == value


def test_soft_delete_then_register_again(broker: BrokerThread, client: SchemaRegistryClient) -> None:
    subject = unique("soft-value")
    sid = client.register_schema(subject, Schema(USER, "AVRO"))
    assert client.delete_subject(subject) == [1]
    assert subject not in client.get_subjects()
    url = registry_url(broker)
    assert call("GET", f"{url}/subjects?deleted=true")[1].count(subject) == 1
    assert call("GET", f"{url}/subjects/{subject}/versions?deleted=true") == (200, [1])
    status, body = call("DELETE", f"{url}/subjects/{subject}")
    assert (status, body["error_code"]) == (404, 40404)
    # registered again (a client without the first one's cache): the same id, a new version (the
    # soft-deleted one keeps its number)
    assert SchemaRegistryClient({"url": url}).register_schema(subject, Schema(USER, "AVRO")) == sid
    assert client.get_versions(subject) == [2]
    # hard delete needs the soft delete first
    status, body = call("DELETE", f"{url}/subjects/{subject}?permanent=true")
    assert (status, body["error_code"]) == (404, 40405)
    assert client.delete_subject(subject) == [2]
    assert client.delete_subject(subject, permanent=True) == [1, 2]
    status, body = call("GET", f"{url}/subjects/{subject}/versions?deleted=true")
    assert (status, body["error_code"]) == (404, 40401)
    # the content keeps its id
    assert SchemaRegistryClient({"url": url}).register_schema(subject, Schema(USER, "AVRO")) == sid


def test_restart_keeps_every_id(tmp_path: Path) -> None:
    data = tmp_path / "data"
    schemas = {f"s{i}-value": record(f"R{i}", {"name": "f", "type": "int"}) for i in range(5)}
    with BrokerThread(data, overrides=REGISTRY_OVERRIDES) as b:
        c = SchemaRegistryClient({"url": registry_url(b)})
        ids = {s: c.register_schema(s, Schema(text, "AVRO")) for s, text in schemas.items()}
        c.set_compatibility("s0-value", "FULL")
        c.set_compatibility(level="NONE")
        c.delete_version("s1-value", 1)
        c.update_mode("s2-value", "READONLY")
    with BrokerThread(data, overrides=REGISTRY_OVERRIDES) as b:
        c = SchemaRegistryClient({"url": registry_url(b)})
        for s, text in schemas.items():
            if s != "s1-value":
                got = c.get_latest_version(s)
                assert (got.schema_id, json.loads(got.schema.schema_str)) == (ids[s], json.loads(text))
            assert json.loads(c.get_schema(ids[s]).schema_str) == json.loads(text)
        assert c.get_compatibility("s0-value") == "FULL" and c.get_compatibility() == "NONE"
        assert "s1-value" not in c.get_subjects()
        assert c.get_mode("s2-value") == "READONLY"
        new_id = c.register_schema("s9-value", Schema(record("New", {"name": "g", "type": "int"}), "AVRO"))
        assert new_id == max(ids.values()) + 1
        assert c.register_schema("other-value", Schema(schemas["s3-value"], "AVRO")) == ids["s3-value"]
