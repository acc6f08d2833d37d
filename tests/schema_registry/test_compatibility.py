"""The compatibility matrix (issue 36): each evolution under each of the seven levels, asked of the
registry over HTTP (POST /compatibility/subjects/{s}/versions?verbose=true) after the history was
registered under NONE, and the registration's own answer (409/409 or an id) for the same pair.
Expectations are Confluent's semantics: BACKWARD = the new schema reads the latest version's data,
FORWARD = the latest version reads the new schema's data, FULL = both, _TRANSITIVE = against every
version, NONE = no check."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.helpers import module_broker, unique
from tests.schema_registry.helpers import REGISTRY_OVERRIDES, call, record, registry_url

LEVELS = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE", "NONE")


def f(name: str, type_: Any, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, **extra}


def obj(props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> str:
    schema: dict[str, Any] = {"type": "object", "properties": props, **extra}
    if required:
        schema["required"] = required
    return json.dumps(schema)


def proto(body: str, package: str = "m") -> str:
    return f'syntax = "proto3";\npackage {package};\n{body}\n'


# name -> (schema type, history oldest first, candidate, the levels under which the candidate is compatible,
#          an error type the verbose answer names when it is not)
ALL = set(LEVELS)
MATRIX: dict[str, tuple[str, list[str], str, set[str], str]] = {
    "avro add field without default": (
        "AVRO", [record("R", f("a", "int"))], record("R", f("a", "int"), f("b", "string")),
        {"FORWARD", "FORWARD_TRANSITIVE", "NONE"}, "READER_FIELD_MISSING_DEFAULT_VALUE"),
    "avro add field with default": (
        "AVRO", [record("R", f("a", "int"))], record("R", f("a", "int"), f("b", "string", default="x")), ALL, ""),
    "avro remove field without default": (
        "AVRO", [record("R", f("a", "int"), f("b", "string"))], record("R", f("a", "int")),
        {"BACKWARD", "BACKWARD_TRANSITIVE", "NONE"}, "READER_FIELD_MISSING_DEFAULT_VALUE"),
    "avro remove field with default": (
        "AVRO", [record("R", f("a", "int"), f("b", "string", default=""))], record("R", f("a", "int")), ALL, ""),
    "avro widen int to long": (
        "AVRO", [record("R", f("a", "int"))], record("R", f("a", "long")),
        {"BACKWARD", "BACKWARD_TRANSITIVE", "NONE"}, "TYPE_MISMATCH"),
    "avro rename record": (
        "AVRO", [record("R", f("a", "int"))], record("S", f("a", "int")), {"NONE"}, "NAME_MISMATCH"),
    "avro enum symbol added": (
        "AVRO", [record("R", f("e", {"type": "enum", "name": "E", "symbols": ["A", "B"]}))],
        record("R", f("e", {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]})),
        {"BACKWARD", "BACKWARD_TRANSITIVE", "NONE"}, "MISSING_ENUM_SYMBOLS"),
    "avro union branch removed": (
        "AVRO", [record("R", f("u", ["null", "string", "int"]))], record("R", f("u", ["null", "string"])),
        {"FORWARD", "FORWARD_TRANSITIVE", "NONE"}, "MISSING_UNION_BRANCH"),
    # the latest version allows it, the first does not: only the transitive levels see that
    "avro transitive": (
        "AVRO", [record("R", f("f", "int")), record("R")], record("R", f("f", "string", default="")),
        {"BACKWARD", "FORWARD", "FULL", "NONE"}, "TYPE_MISMATCH"),
    "json add property to open model": (
        "JSON", [obj({"a": {"type": "string"}})], obj({"a": {"type": "string"}, "b": {"type": "integer"}}),
        {"FORWARD", "FORWARD_TRANSITIVE", "NONE"}, "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"),
    "json add property to closed model": (
        "JSON", [obj({"a": {"type": "string"}}, additionalProperties=False)],
        obj({"a": {"type": "string"}, "b": {"type": "integer"}}, additionalProperties=False),
        {"BACKWARD", "BACKWARD_TRANSITIVE", "NONE"}, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"),
    "json narrow number to integer": (
        "JSON", [obj({"a": {"type": "number"}})], obj({"a": {"type": "integer"}}),
        {"FORWARD", "FORWARD_TRANSITIVE", "NONE"}, "TYPE_NARROWED"),
    "json require a property": (
        "JSON", [obj({"a": {"type": "string"}})], obj({"a": {"type": "string"}}, ["a"]),
        {"FORWARD", "FORWARD_TRANSITIVE", "NONE"}, "REQUIRED_ATTRIBUTE_ADDED"),
    "json maxLength decreased": (
        "JSON", [obj({"a": {"type": "string", "maxLength": 10}})], obj({"a": {"type": "string", "maxLength": 5}}),
        {"FORWARD", "FORWARD_TRANSITIVE", "NONE"}, "MAX_LENGTH_DECREASED"),
    "json local $ref followed": (
        "JSON", [json.dumps({"type": "array", "items": {"$ref": "#/$defs/n"}, "$defs": {"n": {"type": "integer"}}})],
        json.dumps({"type": "array", "items": {"type": "integer"}}), ALL, ""),
    "json array to tuple": (
        "JSON", [json.dumps({"type": "array", "items": {"type": "integer"}})],
        json.dumps({"type": "array", "items": [{"type": "integer"}]}), {"NONE"}, "TYPE_CHANGED"),
    "json item added to an open tuple": (
        "JSON", [json.dumps({"type": "array", "items": [{"type": "integer"}]})],
        json.dumps({"type": "array", "items": [{"type": "integer"}, {"type": "integer"}]}),
        {"FORWARD", "FORWARD_TRANSITIVE", "NONE"}, "ITEM_ADDED_TO_OPEN_CONTENT_MODEL"),
    "json item added to a closed tuple": (
        "JSON", [json.dumps({"type": "array", "items": [{"type": "integer"}], "additionalItems": False})],
        json.dumps({"type": "array", "items": [{"type": "integer"}, {"type": "integer"}], "additionalItems": False}),
        {"BACKWARD", "BACKWARD_TRANSITIVE", "NONE"}, "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"),
    "json untyped oneOf to its one type": (
        "JSON", [json.dumps({"oneOf": [{"type": "string"}]})], json.dumps({"type": "string"}), ALL, ""),
    "protobuf add field": (
        "PROTOBUF", [proto("message M { string a = 1; }")], proto("message M { string a = 1; int64 b = 2; }"),
        ALL, ""),
    "protobuf int32 to int64": (
        "PROTOBUF", [proto("message M { int32 a = 1; }")], proto("message M { int64 a = 1; }"), ALL, ""),
    "protobuf int32 to string": (
        "PROTOBUF", [proto("message M { int32 a = 1; }")], proto("message M { string a = 1; }"), {"NONE"},
        "FIELD_SCALAR_KIND_CHANGED"),
    "protobuf scalar to message": (
        "PROTOBUF", [proto("message N { int32 x = 1; }\nmessage M { int32 a = 1; }")],
        proto("message N { int32 x = 1; }\nmessage M { N a = 1; }"), {"NONE"}, "FIELD_KIND_CHANGED"),
    "protobuf message removed": (
        "PROTOBUF", [proto("message M { int32 a = 1; }\nmessage Gone { int32 x = 1; }")],
        proto("message M { int32 a = 1; }"), {"FORWARD", "FORWARD_TRANSITIVE", "NONE"}, "MESSAGE_REMOVED"),
    "protobuf package changed": (
        "PROTOBUF", [proto("message M { int32 a = 1; }")], proto("message M { int32 a = 1; }", package="n"),
        {"NONE"}, "PACKAGE_CHANGED"),
}


@pytest.fixture(scope="module")
def url(tmp_path_factory: Any) -> Iterator[str]:
    with module_broker(tmp_path_factory, REGISTRY_OVERRIDES) as b:
        yield registry_url(b)


def _body(schema_type: str, schema: str) -> dict[str, str]:
    return {"schema": schema, "schemaType": schema_type}


@pytest.mark.parametrize("case", sorted(MATRIX))
def test_compatibility_matrix(url: str, case: str) -> None:
    schema_type, history, candidate, compatible_under, error_type = MATRIX[case]
    subject = unique("matrix")
    assert call("PUT", f"{url}/config/{subject}", {"compatibility": "NONE"}) == (200, {"compatibility": "NONE"})
    for schema in history:
        status, body = call("POST", f"{url}/subjects/{subject}/versions", _body(schema_type, schema))
        assert status == 200, body
    got = {}
    for level in LEVELS:
        assert call("PUT", f"{url}/config/{subject}", {"compatibility": level})[0] == 200
        status, body = call("POST", f"{url}/compatibility/subjects/{subject}/versions?verbose=true",
                            _body(schema_type, candidate))
        assert status == 200, body
        got[level] = body["is_compatible"]
        if not body["is_compatible"]:
            assert error_type in " ".join(body["messages"]), (level, body)
            assert f"{{compatibility: '{level}'}}" in body["messages"]
    assert {level for level, ok in got.items() if ok} == compatible_under, got
    # registering answers the same: 409/409 where incompatible (checked under the strictest level
    # that refuses, and the level that accepts)
    for level in (LEVELS if len(history) > 1 else ("FULL_TRANSITIVE", "NONE")):
        call("PUT", f"{url}/config/{subject}", {"compatibility": level})
        status, body = call("POST", f"{url}/compatibility/subjects/{subject}/versions/latest",
                            _body(schema_type, candidate))
        assert status == 200
    call("PUT", f"{url}/config/{subject}", {"compatibility": "FULL_TRANSITIVE"})
    status, body = call("POST", f"{url}/subjects/{subject}/versions", _body(schema_type, candidate))
    if "FULL_TRANSITIVE" in compatible_under:
        assert status == 200 and "id" in body
    else:
        assert (status, body["error_code"]) == (409, 409) and error_type in body["message"], body
        assert f'subject "{subject}"' in body["message"]


def test_against_one_version(url: str) -> None:
    """POST /compatibility/subjects/{s}/versions/{v}: that version only, in the level's direction."""
    subject = unique("one")
    call("PUT", f"{url}/config/{subject}", {"compatibility": "NONE"})
    call("POST", f"{url}/subjects/{subject}/versions", {"schema": record("R", f("f", "int"))})
    call("POST", f"{url}/subjects/{subject}/versions", {"schema": record("R")})
    call("PUT", f"{url}/config/{subject}", {"compatibility": "BACKWARD_TRANSITIVE"})
    candidate = {"schema": record("R", f("f", "string", default=""))}
    assert call("POST", f"{url}/compatibility/subjects/{subject}/versions/2", candidate) == (200, {"is_compatible": True})
    status, body = call("POST", f"{url}/compatibility/subjects/{subject}/versions/1", candidate)
    assert status == 200 and body["is_compatible"] is False and "TYPE_MISMATCH" in body["messages"][0]
    assert call("POST", f"{url}/compatibility/subjects/{subject}/versions/latest", candidate)[1]["is_compatible"]
    status, body = call("POST", f"{url}/compatibility/subjects/{subject}/versions/7", candidate)
    assert (status, body["error_code"]) == (404, 40402)
    # a missing version is 40402 even of a missing subject; "latest" of nothing is 40401
    status, body = call("POST", f"{url}/compatibility/subjects/{unique('none')}/versions/1", candidate)
    assert (status, body["error_code"]) == (404, 40402)
    status, body = call("POST", f"{url}/compatibility/subjects/{unique('none')}/versions/latest", candidate)
    assert (status, body["error_code"]) == (404, 40401)
    # a subject with no versions yet: anything is compatible
    assert call("POST", f"{url}/compatibility/subjects/{unique('empty')}/versions", candidate) == (
        200, {"is_compatible": True})
