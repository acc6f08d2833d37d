"""The console's schema registry pages and the message browser decoding records by their schema
ids (issue 36).

A broker with the console and the registry on; confluent-kafka's SchemaRegistryClient and its
Avro, JSON Schema and Protobuf serializers register the schemas and produce the records (their
Confluent wire format: magic 0, the 4-byte id, the payload; Protobuf with its message indexes);
the console's JSON and a real browser (Debian's chromium through Playwright) must show each record
as the JSON it was produced from, with the subject and version of its schema.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import (
    Metadata,
    MetadataProperties,
    MetadataTags,
    Schema,
    SchemaRegistryClient,
)
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from minibroker.testing import BrokerThread
from tests.console.helpers import CHROMIUM, CHROMIUM_ARGS, CONSOLE_OVERRIDES, console_url, get, get_json
from tests.integration.helpers import create_topic, module_broker, unique
from tests.schema_registry.helpers import record, registry_url

pytestmark = pytest.mark.timeout(240)

PAYMENT_V1 = record("Payment", {"name": "id", "type": "string"}, {"name": "amount", "type": "double"},
                    namespace="shop")
PAYMENT_V2 = record("Payment", {"name": "id", "type": "string"}, {"name": "amount", "type": "double"},
                    {"name": "currency", "type": "string", "default": "EUR"},
                    {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
                    {"name": "raw", "type": ["null", "bytes"], "default": None}, namespace="shop")
ORDER_JSON = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
                         "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}}})


@pytest.fixture(scope="module")
def broker(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    with module_broker(tmp_path_factory, {**CONSOLE_OVERRIDES, "schema.registry.port": 0}) as b:
        yield b


@pytest.fixture(scope="module")
def url(broker: BrokerThread) -> str:
    return console_url(broker)


@pytest.fixture(scope="module")
def client(broker: BrokerThread) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": registry_url(broker)})


def _produce(broker: BrokerThread, topic: str, values: list[bytes | None], keys: list[bytes | None] | None = None) -> None:
    create_topic(broker, topic)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i, v in enumerate(values):
        p.produce(topic, value=v, key=keys[i] if keys else None, partition=0)
        p.flush(30)  # one record a batch: the page's batches are the records
    assert p.flush(30) == 0


def _values(url: str, topic: str) -> list[dict[str, Any]]:
    view = get_json(f"{url}/api/topics/{topic}/0/messages?offset=0&limit=50")
    return [r["value"] for b in view["batches"] for r in b["records"]]


@pytest.fixture(scope="module")
def avro_topic(broker: BrokerThread, client: SchemaRegistryClient) -> str:
    """Two versions of an Avro subject, records of each, a record with an id the registry lacks,
    and one not framed at all."""
    topic = unique("payments")
    client.set_compatibility(f"{topic}-value", "FULL")
    v1 = AvroSerializer(client, PAYMENT_V1)
    v2 = AvroSerializer(client, PAYMENT_V2)
    ctx = SerializationContext(topic, MessageField.VALUE)
    _produce(broker, topic, [
        v1({"id": "p-1", "amount": 9.5}, ctx),
        v2({"id": "p-2", "amount": 12.25, "currency": "GBP", "tags": ["gift", "é"], "raw": b"\x00\xff"}, ctx),
        b"\x00\x00\x00\x27\x0f" + b"\x02",  # schema id 9999
        b"plain text",
    ], keys=[b"k1", b"k2", None, None])
    return topic


def test_avro_records_decode_with_their_versions(url: str, avro_topic: str, client: SchemaRegistryClient) -> None:
    v1 = client.get_version(f"{avro_topic}-value", 1)
    v2 = client.get_version(f"{avro_topic}-value", 2)
    values = _values(url, avro_topic)
    assert len(values) == 4
    first, second, unknown, plain = values
    assert first["schema"] == {"schema_id": v1.schema_id, "schema_type": "AVRO", "subject": f"{avro_topic}-value",
                               "version": 1, "message_type": None, "json": {"id": "p-1", "amount": 9.5},
                               "error": None}
    assert second["schema"]["version"] == 2 and second["schema"]["schema_id"] == v2.schema_id
    # bytes as Avro's JSON encoding writes them: one character per byte
    assert second["schema"]["json"] == {"id": "p-2", "amount": 12.25, "currency": "GBP", "tags": ["gift", "é"],
                                        "raw": "\u0000\u00ff"}
    assert unknown["schema"]["schema_id"] == 9999 and unknown["schema"]["subject"] is None
    assert unknown["schema"]["error"] == "the schema registry holds no schema with id 9999"
    assert "schema" not in plain and plain["text"] == "plain text"


def test_json_schema_and_protobuf_records_decode(broker: BrokerThread, url: str, client: SchemaRegistryClient,
                                                 tmp_path_factory: Any) -> None:
    from grpc_tools import protoc

    topic = unique("orders")
    ctx = SerializationContext(topic, MessageField.VALUE)
    js = JSONSerializer(ORDER_JSON, client)
    # Protobuf: a file of two messages, the second with a nested one, so the indexes are [1] and [1, 0]
    out = tmp_path_factory.mktemp("proto")
    name = f"shipping_{unique('p').replace('-', '_')}"
    (out / f"{name}.proto").write_text(
        'syntax = "proto3";\npackage logistics;\nmessage Unused { int32 x = 1; }\n'
        "message Shipment { string sku = 1; int64 parcels = 2; repeated string stops = 3;\n"
        "  message Leg { string from = 1; string to = 2; } Leg first_leg = 4; }\n")
    assert protoc.main(["protoc", f"-I{out}", f"--python_out={out}", f"{name}.proto"]) == 0
    sys.path.insert(0, str(out))
    try:
        pb = importlib.import_module(f"{name}_pb2")
    finally:
        sys.path.remove(str(out))
    proto_topic = unique("shipments")
    pctx = SerializationContext(proto_topic, MessageField.VALUE)
    ship = ProtobufSerializer(pb.Shipment, client, {"use.deprecated.format": False})
    _produce(broker, topic, [js({"sku": "tea", "qty": 3}, ctx)])
    shipment = pb.Shipment(sku="cup", parcels=2, stops=["a", "b"])
    shipment.first_leg.to = "b"
    framed = ship(shipment, pctx)
    assert framed[5:7] == b"\x02\x02"  # Confluent's message indexes: one index, 1 (zigzag varints)
    # a nested message, framed by hand as KafkaProtobufSerializer frames one (confluent-kafka's
    # serializer with use.latest.version looks nested messages up by their short name and fails):
    # two indexes, [1, 0]
    leg = pb.Shipment.Leg(**{"from": "x", "to": "y"})
    _produce(broker, proto_topic, [framed, framed[:5] + b"\x04\x02\x00" + leg.SerializeToString()])

    (order,) = _values(url, topic)
    assert order["schema"]["schema_type"] == "JSON" and order["schema"]["subject"] == f"{topic}-value"
    assert order["schema"]["json"] == {"sku": "tea", "qty": 3}
    whole, part = _values(url, proto_topic)
    assert whole["schema"]["message_type"] == "logistics.Shipment" and whole["schema"]["error"] is None
    # protobuf's JSON mapping: int64 as a string, the proto field names kept
    assert whole["schema"]["json"] == {"sku": "cup", "parcels": "2", "stops": ["a", "b"], "first_leg": {"to": "b"}}
    assert part["schema"]["message_type"] == "logistics.Shipment.Leg"
    assert part["schema"]["json"] == {"from": "x", "to": "y"}
    assert part["schema"]["schema_id"] == whole["schema"]["schema_id"]


def test_protobuf_with_a_reference_and_a_well_known_import_decodes(broker: BrokerThread, url: str,
                                                                   client: SchemaRegistryClient,
                                                                   tmp_path_factory: Any) -> None:
    """The serializer registers the imported file as a subject of its own and references it; the
    decoder builds its pool from that reference and Google's timestamp.proto (not registered)."""
    from grpc_tools import protoc

    out = tmp_path_factory.mktemp("proto-refs")
    tag = unique("r").replace("-", "_")
    (out / f"money_{tag}.proto").write_text('syntax = "proto3";\npackage fin;\n'
                                            "message Money { string currency = 1; int64 cents = 2; }\n")
    (out / f"invoice_{tag}.proto").write_text(
        f'syntax = "proto3";\npackage fin;\nimport "money_{tag}.proto";\nimport "google/protobuf/timestamp.proto";\n'
        "message Invoice { string number = 1; Money total = 2; google.protobuf.Timestamp issued = 3; }\n")
    include = str(Path(protoc.__file__).with_name("_proto"))
    assert protoc.main(["protoc", f"-I{out}", f"-I{include}", f"--python_out={out}", f"money_{tag}.proto",
                        f"invoice_{tag}.proto"]) == 0
    sys.path.insert(0, str(out))
    try:
        pb = importlib.import_module(f"invoice_{tag}_pb2")
    finally:
        sys.path.remove(str(out))
    topic = unique("invoices")
    ser = ProtobufSerializer(pb.Invoice, client, {"use.deprecated.format": False})
    invoice = pb.Invoice(number="A-1")
    invoice.total.currency, invoice.total.cents = "EUR", 1250
    invoice.issued.seconds = 1_700_000_000
    _produce(broker, topic, [ser(invoice, SerializationContext(topic, MessageField.VALUE))])
    assert client.get_latest_version(f"{topic}-value").schema.references  # the import became a reference
    (value,) = _values(url, topic)
    assert value["schema"]["error"] is None, value["schema"]
    assert value["schema"]["message_type"] == "fin.Invoice"
    assert value["schema"]["json"] == {"number": "A-1", "total": {"currency": "EUR", "cents": "1250"},
                                       "issued": "2023-11-14T22:13:20Z"}


def test_registry_pages_json(url: str, avro_topic: str, client: SchemaRegistryClient) -> None:
    subject = f"{avro_topic}-value"
    overview = get_json(f"{url}/api/schema-registry")
    assert overview["compatibility"] == "BACKWARD" and overview["mode"] == "READWRITE"
    row = next(s for s in overview["subjects"] if s["subject"] == subject)
    v2 = client.get_version(subject, 2)
    assert (row["versions"], row["latest_version"], row["latest_id"], row["schema_type"], row["compatibility"],
            row["compatibility_set"]) == (2, 2, v2.schema_id, "AVRO", "FULL", True)
    detail = get_json(f"{url}/api/schema-registry/subjects/{subject}")
    assert [(v["version"], v["deleted"]) for v in detail["versions"]] == [(1, False), (2, False)]
    version = get_json(f"{url}/api/schema-registry/subjects/{subject}/versions/2")
    assert json.loads(version["schema"]) == json.loads(v2.schema.schema_str)
    assert version["pretty"].startswith('{\n  "type": "record"')
    by_id = get_json(f"{url}/api/schema-registry/schemas/{v2.schema_id}")
    assert (by_id["subject"], by_id["version"]) == (subject, 2)
    status, _, body = get(f"{url}/api/schema-registry/subjects/{subject}/versions/7")
    assert status == 404 and "Version 7 not found" in json.loads(body)["error"]
    status, _, body = get(f"{url}/schema-registry/subjects/no-such-subject")
    assert status == 404 and "Subject &#x27;no-such-subject&#x27; not found." in body


def test_soft_deleted_version_is_listed_and_still_decodes(broker: BrokerThread, url: str,
                                                          client: SchemaRegistryClient) -> None:
    topic = unique("soft")
    subject = f"{topic}-value"
    ser = AvroSerializer(client, PAYMENT_V1)
    key_ser = AvroSerializer(client, '"string"')  # a framed key: decoded by <topic>-key
    _produce(broker, topic, [ser({"id": "s", "amount": 1.0}, SerializationContext(topic, MessageField.VALUE))],
             keys=[key_ser("order-7", SerializationContext(topic, MessageField.KEY))])
    client.register_schema(subject, Schema(PAYMENT_V2, "AVRO", metadata=Metadata(
        tags=MetadataTags({}), properties=MetadataProperties({"owner": "shop"}), sensitive=[])))
    client.delete_version(subject, 1)
    detail = get_json(f"{url}/api/schema-registry/subjects/{subject}")
    assert [(v["version"], v["deleted"]) for v in detail["versions"]] == [(1, True), (2, False)]
    view = get_json(f"{url}/api/topics/{topic}/0/messages?offset=0")
    (rec,) = [r for b in view["batches"] for r in b["records"]]
    assert (rec["value"]["schema"]["version"], rec["value"]["schema"]["json"]) == (1, {"id": "s", "amount": 1.0})
    assert (rec["key"]["schema"]["subject"], rec["key"]["schema"]["json"]) == (f"{topic}-key", "order-7")
    # the version's page shows its data contract metadata
    v2 = get_json(f"{url}/api/schema-registry/subjects/{subject}/versions/2")
    assert v2["metadata"]["properties"] == {"owner": "shop"} and v2["rule_set"] is None
    status, _, body = get(f"{url}/schema-registry/subjects/{subject}/versions/2")
    assert status == 200 and 'data-field="metadata"' in body and "&quot;owner&quot;: &quot;shop&quot;" in body


def test_console_without_the_registry_says_it_is_off(tmp_path_factory: Any) -> None:
    with module_broker(tmp_path_factory, CONSOLE_OVERRIDES) as b:
        url = console_url(b)
        status, _, body = get(f"{url}/api/schema-registry")
        assert status == 404 and "the schema registry is off" in json.loads(body)["error"]
        topic = unique("framed")
        _produce(b, topic, [b"\x00\x00\x00\x00\x01\x02"])
        (value,) = _values(url, topic)
        assert "schema" not in value  # framed, but no registry to decode it: bytes as they are


# -- a real browser --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def page() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.skip("chromium is not installed (.ci/run installs Debian's package)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser.new_page(viewport={"width": 1280, "height": 900})
        browser.close()


def test_browser_walks_subjects_versions_and_decoded_messages(page: Any, url: str, avro_topic: str,
                                                              client: SchemaRegistryClient, tmp_path: Any) -> None:
    subject = f"{avro_topic}-value"
    v1 = client.get_version(subject, 1)
    page.goto(f"{url}/")
    page.click('header a[href="/schema-registry"]')
    assert page.locator(f'[data-subject="{subject}"][data-field="compatibility"]').inner_text() == "FULL"
    assert page.locator('[data-field="compatibility"]').first.inner_text() == "BACKWARD"  # the global level
    assert page.locator(f'[data-subject="{subject}"][data-field="versions"]').inner_text() == "2"
    page.screenshot(path=str(tmp_path / "subjects.png"), full_page=True)
    page.click(f'[data-subject="{subject}"][data-field="subject"] a')
    assert page.locator('[data-field="compatibility"]').inner_text() == "FULL"
    assert page.locator('[data-version="1"][data-field="id"]').inner_text() == str(v1.schema_id)
    page.click('[data-version="2"][data-field="version"] a')
    text = page.locator('pre[data-field="schema"]').inner_text()
    assert json.loads(text)["fields"][2] == {"name": "currency", "type": "string", "default": "EUR"}
    page.screenshot(path=str(tmp_path / "version.png"), full_page=True)
    # the message browser: the decoded JSON beside the schema that decoded it, linked
    page.goto(f"{url}/topics/{avro_topic}/0/messages?offset=0")
    decoded = page.locator('pre[data-field="decoded"]')
    assert decoded.count() == 2
    assert json.loads(decoded.first.inner_text()) == {"id": "p-1", "amount": 9.5}
    ref = page.locator('[data-field="schema"]').first.inner_text()
    assert ref == f"schema id {v1.schema_id} AVRO {subject} v1"
    assert "holds no schema with id 9999" in page.locator('[data-field="decode-error"]').inner_text()
    page.screenshot(path=str(tmp_path / "messages.png"), full_page=True)
    page.locator(f'a[href="/schema-registry/subjects/{subject}/versions/1"]').first.click()
    assert page.locator('[data-field="id"]').inner_text() == str(v1.schema_id)
    assert len(list(tmp_path.glob("*.png"))) == 3
