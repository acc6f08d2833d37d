"""Confluent's REST API over HTTP (issue 36): routes and their answers, config and mode, and bad
input — malformed schemas (42201), unknown subjects and versions, a 10 MB schema, deeply nested
JSON, concurrent registrations of one schema — each a clear error, nothing half-written."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from minibroker.testing import BrokerThread
from tests.integration.helpers import module_broker, unique
from tests.schema_registry.helpers import (
    CONTENT_TYPE,
    REGISTRY_OVERRIDES,
    call,
    record,
    registry_url,
    schemas_end_offset,
)

AVRO = record("R", {"name": "a", "type": "int"})


@pytest.fixture(scope="module")
def broker(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    with module_broker(tmp_path_factory, REGISTRY_OVERRIDES) as b:
        yield b


@pytest.fixture(scope="module")
def url(broker: BrokerThread) -> str:
    return registry_url(broker)


def register(url: str, subject: str, schema: str, schema_type: str = "AVRO", **extra: Any) -> tuple[int, Any]:
    return call("POST", f"{url}/subjects/{subject}/versions", {"schema": schema, "schemaType": schema_type, **extra})


def test_routes_answer_confluents_shapes(url: str) -> None:
    subject = unique("shapes")
    assert call("GET", f"{url}/") == (200, {})
    assert call("GET", f"{url}/schemas/types") == (200, ["JSON", "PROTOBUF", "AVRO"])
    status, body = register(url, subject, AVRO)
    assert status == 200 and set(body) == {"id"}
    sid = body["id"]
    assert call("GET", f"{url}/subjects/{subject}/versions") == (200, [1])
    expected = {"subject": subject, "version": 1, "id": sid, "schema": call("GET", f"{url}/subjects/{subject}/versions/1")[1]["schema"]}
    assert json.loads(expected["schema"]) == json.loads(AVRO) and ", " not in expected["schema"]
    assert call("GET", f"{url}/subjects/{subject}/versions/1") == (200, expected)
    assert call("GET", f"{url}/subjects/{subject}/versions/latest") == (200, expected)
    assert call("GET", f"{url}/subjects/{subject}/versions/-1") == (200, expected)
    assert call("GET", f"{url}/subjects/{subject}/versions/1/schema") == (200, json.loads(AVRO))
    assert call("GET", f"{url}/schemas/ids/{sid}") == (200, {"schema": expected["schema"]})
    assert call("GET", f"{url}/schemas/ids/{sid}/schema") == (200, json.loads(AVRO))
    assert call("GET", f"{url}/schemas/ids/{sid}/versions") == (200, [{"subject": subject, "version": 1}])
    assert call("GET", f"{url}/schemas/ids/{sid}/subjects") == (200, [subject])
    assert call("GET", f"{url}/subjects/{subject}/versions/1/referencedby") == (200, [])
    # lookup: the version holding a schema, whitespace aside
    assert call("POST", f"{url}/subjects/{subject}", {"schema": json.dumps(json.loads(AVRO), indent=4)}) == (
        200, expected)
    assert subject in call("GET", f"{url}/subjects")[1]
    assert call("GET", f"{url}/subjects?subjectPrefix={subject[:-3]}")[1] == [subject]
    assert any(s["subject"] == subject for s in call("GET", f"{url}/schemas?subjectPrefix={subject}")[1])
    # a JSON and a Protobuf schema carry their type
    status, body = register(url, unique("json"), '{"type":"string"}', "JSON")
    assert status == 200 and call("GET", f"{url}/schemas/ids/{body['id']}")[1]["schemaType"] == "JSON"


def test_unknown_things_have_confluents_codes(url: str) -> None:
    subject = unique("known")
    register(url, subject, AVRO)
    cases = [
        ("GET", f"/subjects/{unique('nope')}/versions", 404, 40401, "Subject '"),
        ("GET", f"/subjects/{subject}/versions/9", 404, 40402, "Version 9 not found."),
        ("GET", f"/subjects/{subject}/versions/abc", 422, 42202, "is not a valid version id"),
        ("GET", f"/subjects/{subject}/versions/0", 422, 42202, "is not a valid version id"),
        ("GET", "/schemas/ids/987654", 404, 40403, "Schema 987654 not found"),
        ("GET", "/config/never-configured", 404, 40408, "does not have subject-level compatibility configured"),
        ("GET", "/mode/never-configured", 404, 40409, "does not have subject-level mode configured"),
        ("GET", "/no/such/route", 404, 404, "HTTP 404"),
        ("PUT", "/schemas/types", 405, 405, "HTTP 405"),
    ]
    for method, path, status, code, text in cases:
        got_status, body = call(method, url + path, {} if method == "PUT" else None)
        assert (got_status, body["error_code"]) == (status, code), (path, body)
        assert text in body["message"], (path, body)
    status, body = call("POST", f"{url}/subjects/{subject}", {"schema": record("Other", {"name": "b", "type": "int"})})
    assert (status, body) == (404, {"error_code": 40403, "message": "Schema not found"})


@pytest.mark.parametrize("schema_type, schema, reason", [
    ("AVRO", '{"type": "record"}', "Name None must be a string"),
    ("AVRO", "{not json", "Expecting property name"),
    ("AVRO", record("R", {"name": "a", "type": "no.such.Type"}), "no.such.Type"),
    ("JSON", '{"type": 5}', "is not valid"),
    ("JSON", "[1, 2", "Invalid JSON"),
    ("PROTOBUF", 'syntax = "proto3";\nmessage M { strin a = 1; }', "\"strin\" is not defined"),
    ("PROTOBUF", "message {", "Expected"),
])
def test_malformed_schemas_are_42201(broker: BrokerThread, url: str, schema_type: str, schema: str, reason: str) -> None:
    before = schemas_end_offset(broker)
    status, body = register(url, unique("bad"), schema, schema_type)
    assert (status, body["error_code"]) == (422, 42201), body
    assert reason in body["message"], body
    assert schemas_end_offset(broker) == before  # nothing written


def test_a_10_mb_schema_is_refused_whole(broker: BrokerThread, url: str) -> None:
    # a valid Avro record of ~10 MB: more than _schemas takes in one record (max.message.bytes)
    fields = [{"name": f"field_{i:07d}", "type": "string", "doc": "x" * 40} for i in range(150_000)]
    schema = json.dumps({"type": "record", "name": "Huge", "fields": fields})
    assert len(schema) > 10_000_000
    subject = unique("huge")
    before = schemas_end_offset(broker)
    status, body = register(url, subject, schema)
    assert (status, body["error_code"]) == (422, 42209), body
    assert "max.message.bytes" in body["message"]
    assert schemas_end_offset(broker) == before
    assert call("GET", f"{url}/subjects/{subject}/versions")[1]["error_code"] == 40401
    assert register(url, subject, AVRO)[0] == 200  # the registry goes on


def test_deeply_nested_json(broker: BrokerThread, url: str) -> None:
    before = schemas_end_offset(broker)
    status, body = call("POST", f"{url}/subjects/{unique('deep')}/versions", raw=b"[" * 200_000 + b"]" * 200_000)
    assert (status, body["error_code"]) == (422, 422) and "nested too deeply" in body["message"]
    deep_schema = '{"type":"array","items":' * 20_000 + '"int"' + "}" * 20_000  # < 1 MB
    status, body = register(url, unique("deep"), deep_schema)
    assert (status, body["error_code"]) == (422, 42201) and "nested too deeply" in body["message"], body
    status, body = call("POST", f"{url}/subjects/{unique('deep')}/versions", raw=b"{not json")
    assert (status, body["error_code"]) == (400, 400)
    assert schemas_end_offset(broker) == before


def test_concurrent_registrations_of_one_schema_get_one_id(url: str) -> None:
    subject = unique("race")
    schema = record("Race", {"name": "r", "type": "string"})
    results: list[tuple[int, Any]] = []
    barrier = threading.Barrier(16)

    def go() -> None:
        barrier.wait(30)
        results.append(register(url, subject, schema))

    threads = [threading.Thread(target=go) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 16 and {s for s, _ in results} == {200}
    assert len({b["id"] for _, b in results}) == 1
    assert call("GET", f"{url}/subjects/{subject}/versions") == (200, [1])


def test_config(url: str) -> None:
    assert call("GET", f"{url}/config")[1] == {"compatibilityLevel": "BACKWARD"}
    subject = unique("cfg")
    assert call("PUT", f"{url}/config/{subject}", {"compatibility": "full"}) == (200, {"compatibility": "FULL"})
    assert call("GET", f"{url}/config/{subject}") == (200, {"compatibilityLevel": "FULL"})
    other = unique("cfg")
    assert call("GET", f"{url}/config/{other}?defaultToGlobal=true") == (200, {"compatibilityLevel": "BACKWARD"})
    status, body = call("PUT", f"{url}/config/{subject}", {"compatibility": "SIDEWAYS"})
    assert (status, body["error_code"]) == (422, 42203)
    assert call("DELETE", f"{url}/config/{subject}") == (200, {"compatibilityLevel": "FULL", "compatibility": "FULL"})
    assert call("GET", f"{url}/config/{subject}")[1]["error_code"] == 40408


def test_modes(broker: BrokerThread, url: str) -> None:
    assert call("GET", f"{url}/mode") == (200, {"mode": "READWRITE"})
    subject = unique("ro")
    register(url, subject, AVRO)
    assert call("PUT", f"{url}/mode/{subject}", {"mode": "READONLY"}) == (200, {"mode": "READONLY"})
    status, body = register(url, subject, record("R", {"name": "a", "type": "int"}, {"name": "b", "type": "int",
                                                                                      "default": 0}))
    assert (status, body["error_code"]) == (422, 42205)
    status, body = call("DELETE", f"{url}/subjects/{subject}")
    assert (status, body["error_code"]) == (422, 42205)
    status, body = call("PUT", f"{url}/mode/{subject}", {"mode": "SOMETIMES"})
    assert (status, body["error_code"]) == (422, 42204)
    assert call("DELETE", f"{url}/mode/{subject}") == (200, {"mode": "READONLY"})
    assert call("GET", f"{url}/mode/{subject}?defaultToGlobal=true") == (200, {"mode": "READWRITE"})
    # IMPORT: a subject with versions needs force; then ids and versions come from the request
    imported = unique("import")
    assert call("PUT", f"{url}/mode/{imported}", {"mode": "IMPORT"}) == (200, {"mode": "IMPORT"})
    status, body = register(url, imported, record("Imported", {"name": "x", "type": "int"}), id=5000, version=7)
    assert (status, body) == (200, {"id": 5000})
    assert call("GET", f"{url}/subjects/{imported}/versions") == (200, [7])
    status, body = register(url, imported, record("Clash", {"name": "x", "type": "int"}), id=5000, version=8)
    assert (status, body["error_code"]) == (422, 42207)
    call("DELETE", f"{url}/mode/{imported}")
    status, body = register(url, unique("plain"), record("P", {"name": "x", "type": "int"}), id=6000)
    assert (status, body["error_code"]) == (422, 42205)


def test_normalize(url: str) -> None:
    subject = unique("norm")
    a = json.dumps({"type": "object", "properties": {"x": {"type": "string"}}, "title": "T"})
    b = json.dumps({"title": "T", "properties": {"x": {"type": "string"}}, "type": "object"})
    first = register(url, subject, a, "JSON")[1]["id"]
    assert call("POST", f"{url}/subjects/{subject}?normalize=true", {"schema": b, "schemaType": "JSON"})[1]["id"] == first
    status, body = call("POST", f"{url}/subjects/{subject}", {"schema": b, "schemaType": "JSON"})
    assert (status, body["error_code"]) == (404, 40403)
    # registered normalized: the same normalized content gets one id, whatever the key order
    s2 = unique("norm")
    n1 = call("POST", f"{url}/subjects/{s2}/versions?normalize=true", {"schema": a, "schemaType": "JSON"})[1]["id"]
    n2 = call("POST", f"{url}/subjects/{s2}/versions?normalize=true", {"schema": b, "schemaType": "JSON"})[1]["id"]
    assert n1 == n2 and call("GET", f"{url}/subjects/{s2}/versions")[1] == [1]


def test_version_deletes(url: str) -> None:
    subject = unique("del")
    register(url, subject, AVRO)
    register(url, subject, record("R", {"name": "a", "type": "int"}, {"name": "b", "type": "int", "default": 1}))
    assert call("DELETE", f"{url}/subjects/{subject}/versions/1?permanent=true")[1]["error_code"] == 40407
    assert call("DELETE", f"{url}/subjects/{subject}/versions/1") == (200, 1)
    assert call("DELETE", f"{url}/subjects/{subject}/versions/1")[1]["error_code"] == 40406
    assert call("GET", f"{url}/subjects/{subject}/versions/1")[1]["error_code"] == 40402
    assert call("GET", f"{url}/subjects/{subject}/versions/1?deleted=true")[1]["version"] == 1
    assert call("GET", f"{url}/subjects/{subject}/versions") == (200, [2])
    assert call("GET", f"{url}/subjects/{subject}/versions?deleted=true") == (200, [1, 2])
    assert call("DELETE", f"{url}/subjects/{subject}/versions/1?permanent=true") == (200, 1)
    assert call("GET", f"{url}/subjects/{subject}/versions?deleted=true") == (200, [2])
    assert call("DELETE", f"{url}/subjects/{subject}/versions/latest") == (200, 2)
    assert subject not in call("GET", f"{url}/subjects")[1]
    assert subject in call("GET", f"{url}/subjects?deleted=true")[1]
    assert subject in call("GET", f"{url}/subjects?deletedOnly=true")[1]


def test_content_type_and_error_body_of_every_answer(url: str) -> None:
    req = urllib.request.Request(f"{url}/subjects", headers={"Accept": CONTENT_TYPE})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.headers["Content-Type"].startswith(CONTENT_TYPE)


def test_records_another_writer_appends_to_schemas_are_served(broker: BrokerThread, url: str) -> None:
    """Confluent's and Karapace's readers tail _schemas; so does this one: a record in Confluent's
    format produced by a client (a restore tool, another registry) is state from the next request."""
    subject = unique("external")
    key = json.dumps({"keytype": "SCHEMA", "subject": subject, "version": 1, "magic": 1}, separators=(",", ":"))
    value = json.dumps({"subject": subject, "version": 1, "id": 777_777, "schema": '"string"', "deleted": False})
    p = Producer({"bootstrap.servers": broker.bootstrap})
    p.produce("_schemas", key=key, value=value)
    assert p.flush(30) == 0
    status, body = call("GET", f"{url}/subjects/{subject}/versions/1")
    assert status == 200 and body["id"] == 777_777 and body["schema"] == '"string"'
    status, body = register(url, unique("after"), record("After", {"name": "z", "type": "int"}))
    assert status == 200 and body["id"] == 777_778


@pytest.mark.parametrize("accept, status, answered_as", [
    ("application/json", 200, "application/json"),
    ("application/vnd.schemaregistry+json; q=0.9, application/vnd.schemaregistry.v2+json; q=0.1", 200,
     "application/vnd.schemaregistry+json"),
    ("text/html, *; q=.2", 200, CONTENT_TYPE),
    ("application/*", 200, CONTENT_TYPE),
    ("application/vnd.schemaregistry.v2+json", 406, None),
    ("text/*", 406, None),
])
def test_content_negotiation(url: str, accept: str, status: int, answered_as: str | None) -> None:
    req = urllib.request.Request(f"{url}/subjects", headers={"Accept": accept})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            got_status, ctype = r.status, r.headers["Content-Type"]
    except urllib.error.HTTPError as e:
        got_status, ctype = e.code, e.headers["Content-Type"]
        assert json.loads(e.read())["error_code"] == 406
    assert got_status == status
    if answered_as:
        assert ctype.startswith(answered_as)


def test_a_body_that_is_not_json_is_415(url: str) -> None:
    status, body = call("PUT", f"{url}/config", raw=b'{"compatibility": "BACKWARD"}', content_type="text/html")
    assert (status, body["error_code"]) == (415, 415)
    assert call("PUT", f"{url}/config", raw=b'{"compatibility": "BACKWARD"}',
                content_type="application/octet-stream")[0] == 200


def test_odd_records_in_schemas_are_skipped(broker: BrokerThread, url: str) -> None:
    """Records another writer appends that are not a registry's (no JSON, no keytype, a SCHEMA key
    without a version, a value that does not parse) are skipped; the registry goes on."""
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for key, value in [(b"not json", b"{}"), (b'{"no":"keytype"}', b"{}"),
                       (b'{"keytype":"SCHEMA","subject":"odd","magic":1}', b'{"subject":"odd"}'),
                       (b'{"keytype":"SCHEMA","subject":"odd","version":1,"magic":1}', b'{"version":"x"}'),
                       (b'{"keytype":"CONFIG","subject":"odd","magic":0}', b"[1, 2]")]:
        p.produce("_schemas", key=key, value=value)
    assert p.flush(30) == 0
    assert call("GET", f"{url}/subjects")[0] == 200
    status, body = register(url, unique("after-odd"), record("AfterOdd", {"name": "z", "type": "int"}))
    assert status == 200 and "id" in body


def test_a_schema_another_registry_rendered_differently_keeps_its_id(broker: BrokerThread, url: str) -> None:
    """Confluent writes an Avro schema as Avro Java renders it (fields' "name" before "type"); the
    same schema registered here, rendered otherwise, is that version and that id, not a new one."""
    subject = unique("rendered")
    java = '{"type":"record","name":"Java","fields":[{"name":"a","type":"int"},{"name":"b","type":"string"}]}'
    key = json.dumps({"keytype": "SCHEMA", "subject": subject, "version": 1, "magic": 1}, separators=(",", ":"))
    value = json.dumps({"subject": subject, "version": 1, "id": 888_888, "schema": java, "deleted": False})
    p = Producer({"bootstrap.servers": broker.bootstrap})
    p.produce("_schemas", key=key, value=value)
    assert p.flush(30) == 0
    ours = json.dumps({"fields": [{"type": "int", "name": "a"}, {"type": "string", "name": "b"}], "name": "Java",
                       "type": "record"}, indent=2)
    assert register(url, subject, ours) == (200, {"id": 888_888})
    assert call("GET", f"{url}/subjects/{subject}/versions") == (200, [1])
    assert register(url, unique("elsewhere"), ours) == (200, {"id": 888_888})  # in another subject too


def test_protobuf_text_references(url: str) -> None:
    dep_subject = unique("dep")
    dep = 'syntax = "proto3";\npackage shared;\nmessage Money { int64 units = 1; string currency = 2; }\n'
    assert register(url, dep_subject, dep, "PROTOBUF")[0] == 200
    main = 'syntax = "proto3";\npackage shop;\nimport "shared/money.proto";\nmessage Order { shared.Money total = 1; }\n'
    refs = [{"name": "shared/money.proto", "subject": dep_subject, "version": 1}]
    status, body = register(url, unique("order"), main, "PROTOBUF", references=refs)
    assert status == 200, body
    assert call("GET", f"{url}/subjects/{dep_subject}/versions/1/referencedby") == (200, [body["id"]])
    status, body = register(url, unique("order"), main, "PROTOBUF")  # the import cannot be found
    assert (status, body["error_code"]) == (422, 42201) and "shared/money.proto" in body["message"], body


def test_offset_and_limit(url: str) -> None:
    prefix = unique("page")
    for i in range(4):
        register(url, f"{prefix}-{i}", record(f"P{i}", {"name": "x", "type": "int"}))
    assert call("GET", f"{url}/subjects?subjectPrefix={prefix}&offset=1&limit=2")[1] == [f"{prefix}-1", f"{prefix}-2"]
    assert call("GET", f"{url}/subjects?subjectPrefix={prefix}&offset=3&limit=-1")[1] == [f"{prefix}-3"]
    assert call("GET", f"{url}/subjects?limit=x")[1]["error_code"] == 422


def test_schemas_deleted_under_the_registry(tmp_path_factory: Any) -> None:
    """Deleting _schemas (DeleteTopics) empties the registry, as with Confluent's: the state is what
    the topic holds; registrations go on into the topic made anew, and are read back."""
    with module_broker(tmp_path_factory, REGISTRY_OVERRIDES) as b:
        url = registry_url(b)
        assert register(url, "before", AVRO)[0] == 200
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.delete_topics(["_schemas"])["_schemas"].result(30)
        assert call("GET", f"{url}/subjects") == (200, [])
        status, body = register(url, "after", record("After", {"name": "a", "type": "int"}))
        assert status == 200
        assert call("GET", f"{url}/subjects") == (200, ["after"])
        assert call("GET", f"{url}/subjects/after/versions/1")[1]["id"] == body["id"]


def test_writes_go_to_the_leader_of_schemas(tmp_path_factory: Any) -> None:
    """When another node leads _schemas-0 (the cluster's leadership move, set here on the partition
    as the metadata publisher would), this registry still reads and answers writes 50003; nothing is
    written."""
    with module_broker(tmp_path_factory, REGISTRY_OVERRIDES) as b:
        url = registry_url(b)
        sid = register(url, "led", AVRO)[1]["id"]
        b.call(lambda br: setattr(br.replica_manager.get_partition("_schemas", 0), "leader_id", 99))
        before = schemas_end_offset(b)
        status, body = register(url, "led", record("R", {"name": "a", "type": "int"}, {"name": "b", "type": "int",
                                                                                      "default": 0}))
        assert (status, body["error_code"]) == (500, 50003) and "node 99" in body["message"], body
        assert schemas_end_offset(b) == before
        assert call("GET", f"{url}/subjects/led/versions/1")[1]["id"] == sid  # reads are served


def test_fixed_while_running_karapaces_tests(url: str) -> None:
    """What Karapace's API tests found: odd subject names in paths, includeSubjects, a reference to
    version -1 (latest), google/type imports, Avro stored as Avro renders it."""
    for odd in ('a{b', 'c}d', 'e"f', "g'h", "i:j", "k/l"):
        subject = unique(odd)
        path = urllib.parse.quote(subject, safe="")
        assert register(url, path, '{"type": "string"}')[0] == 200, subject
        got = call("GET", f"{url}/subjects/{path}/versions/1")[1]
        assert got["subject"] == subject and got["schema"] == '"string"'  # {"type": "string"} is "string"
        sid = got["id"]
    assert subject in call("GET", f"{url}/schemas/ids/{sid}?includeSubjects=true")[1]["subjects"]
    dep = unique("latest-dep")
    register(url, dep, record("Dep", {"name": "d", "type": "int"}, namespace="x"))
    refs = [{"name": "x.Dep", "subject": dep, "version": -1}]
    assert register(url, unique("uses-latest"), record("Uses", {"name": "u", "type": "x.Dep"}), references=refs)[0] == 200
    proto = ('syntax = "proto3";\nimport "google/type/date.proto";\nmessage Born { google.type.Date on = 1; }\n')
    assert register(url, unique("born"), proto, "PROTOBUF")[0] == 200
