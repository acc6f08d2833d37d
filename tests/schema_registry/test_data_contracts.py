"""Confluent's data contracts on the registry (issue 36): metadata and rule sets registered with a
schema, stored in `_schemas`, answered back, inherited by the next version, part of a schema's
identity, and found by `GET /subjects/{s}/metadata` — driven by confluent-kafka's own client and
its AvroSerializer's `use.latest.with.metadata`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.schema_registry import (
    Metadata,
    MetadataProperties,
    MetadataTags,
    Rule,
    RuleKind,
    RuleMode,
    RuleSet,
    Schema,
    SchemaRegistryClient,
)
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from minibroker.testing import BrokerThread
from tests.integration.helpers import module_broker, stored_records, unique
from tests.schema_registry.helpers import REGISTRY_OVERRIDES, call, record, registry_url

V1 = record("User", {"name": "name", "type": "string"}, namespace="dc")
V2 = record("User", {"name": "name", "type": "string"}, {"name": "age", "type": "int", "default": 0}, namespace="dc")
V3 = record("User", {"name": "name", "type": "string"}, {"name": "age", "type": "int", "default": 0},
            {"name": "email", "type": ["null", "string"], "default": None}, namespace="dc")


def metadata(**props: str) -> Metadata:
    return Metadata(tags=MetadataTags({}), properties=MetadataProperties(props), sensitive=[])


RULES = RuleSet(migration_rules=[], encoding_rules=[], domain_rules=[
    Rule("checkAge", "", RuleKind.CONDITION, RuleMode.WRITE, "CEL", None, None, "message.age >= 0", None, None, False)])


@pytest.fixture(scope="module")
def broker(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    with module_broker(tmp_path_factory, REGISTRY_OVERRIDES) as b:
        yield b


@pytest.fixture(scope="module")
def client(broker: BrokerThread) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": registry_url(broker)})


def test_metadata_and_rules_are_stored_answered_and_inherited(broker: BrokerThread, client: SchemaRegistryClient) -> None:
    subject = unique("dc-value")
    sid = client.register_schema(subject, Schema(V1, "AVRO", metadata=metadata(owner="team-a", major="1"),
                                                 rule_set=RULES))
    got = client.get_latest_version(subject)
    assert got.schema.metadata == metadata(owner="team-a", major="1") and got.schema.rule_set == RULES
    by_id = client.get_schema(sid)
    assert by_id.metadata == metadata(owner="team-a", major="1") and by_id.rule_set == RULES
    # in _schemas as Confluent writes them: "metadata" and "ruleSet" beside the schema
    (stored,) = [json.loads(r.value) for r in stored_records(broker, "_schemas")
                 if r.value and json.loads(r.key).get("subject") == subject]
    assert stored["metadata"]["properties"] == {"owner": "team-a", "major": "1"}
    assert stored["ruleSet"]["domainRules"][0]["expr"] == "message.age >= 0"
    # the next version without them inherits the previous version's (Confluent 7.4's behaviour)
    client.register_schema(subject, Schema(V2, "AVRO"))
    v2 = client.get_version(subject, 2)  # (the client caches "latest")
    assert (v2.version, v2.schema.metadata, v2.schema.rule_set) == (2, metadata(owner="team-a", major="1"), RULES)


def test_metadata_is_part_of_the_identity(client: SchemaRegistryClient) -> None:
    subject = unique("ident-value")
    a = client.register_schema(subject, Schema(V1, "AVRO", metadata=metadata(major="1")))
    assert client.register_schema(subject, Schema(V1, "AVRO", metadata=metadata(major="1"))) == a
    b = client.register_schema(subject, Schema(V1, "AVRO", metadata=metadata(major="2")))
    assert b != a
    assert client.get_versions(subject) == [1, 2]
    # a look-up without metadata finds the latest version of that text; with metadata, the matching one
    assert client.lookup_schema(subject, Schema(V1, "AVRO")).version == 2
    assert client.lookup_schema(subject, Schema(V1, "AVRO", metadata=metadata(major="1"))).version == 1


def test_latest_with_metadata_and_the_serializer(broker: BrokerThread, client: SchemaRegistryClient) -> None:
    topic = unique("lwm")
    subject = f"{topic}-value"
    client.register_schema(subject, Schema(V1, "AVRO", metadata=metadata(**{"application.major.version": "1"})))
    v2_id = client.register_schema(subject, Schema(V2, "AVRO"))  # inherits major version 1
    v3_id = client.register_schema(subject, Schema(V3, "AVRO", metadata=metadata(**{"application.major.version": "2"})))
    assert client.get_latest_with_metadata(subject, {"application.major.version": "1"}).version == 2
    assert client.get_latest_with_metadata(subject, {"application.major.version": "2"}).schema_id == v3_id
    with pytest.raises(SchemaRegistryError) as e:
        client.get_latest_with_metadata(subject, {"application.major.version": "3"})
    assert (e.value.http_status_code, e.value.error_code) == (404, 40403)
    status, body = call("GET", f"{registry_url(broker)}/subjects/{unique('none')}/metadata?key=a&value=b")
    assert (status, body["error_code"]) == (404, 40401)
    # a producer pinned to major version 1 writes with v2's id, not the latest (v3)
    ser = AvroSerializer(client, None, conf={"auto.register.schemas": False,
                                             "use.latest.with.metadata": {"application.major.version": "1"}})
    framed = ser({"name": "ann", "age": 3}, SerializationContext(topic, MessageField.VALUE))
    assert framed[0] == 0 and int.from_bytes(framed[1:5], "big") == v2_id


def test_bad_metadata_is_refused(broker: BrokerThread) -> None:
    status, body = call("POST", f"{registry_url(broker)}/subjects/{unique('bad')}/versions",
                        {"schema": V1, "metadata": ["not", "an", "object"]})
    assert (status, body["error_code"]) == (422, 422)
