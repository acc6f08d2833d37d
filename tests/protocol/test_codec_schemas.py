"""Every schema in minibroker_protocol.apis at every valid version: random values drawn from the schema tree
survive encode -> decode -> encode byte for byte. And protocol/ stays sans-IO."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibroker_protocol.apis import APIS
from minibroker_protocol.codec import decode, encode
from minibroker_protocol.schema import Schema
from minibroker_protocol.types import DecodeError
from tests.protocol.strategies import message_strategy


def _cases():
    for api in APIS.values():
        for side, schema in (("request", api.request), ("response", api.response)):
            for version in schema.valid:
                yield pytest.param(schema, version, id=f"{api.name}-{side}-v{version}")


@pytest.mark.parametrize("schema,version", list(_cases()))
@given(data=st.data())
@settings(max_examples=int(os.environ.get("SCHEMA_EXAMPLES", "12")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_encode_decode_encode_is_identical(schema: Schema, version: int, data):
    flexible = version in schema.flexible
    obj = data.draw(message_strategy(schema.cls, schema.fields, version, flexible), label="message")
    first = bytes(encode(schema, version, obj))
    back = decode(schema, version, first)
    assert back == obj
    assert bytes(encode(schema, version, back)) == first
    # Any truncation is a DecodeError (never an IndexError or a silent short read).
    cut = data.draw(st.integers(0, len(first) - 1), label="cut") if first else None
    if cut is not None:
        with pytest.raises(DecodeError):
            decode(schema, version, first[:cut])


def test_every_api_and_version_is_covered():
    cases = list(_cases())
    assert len(APIS) >= 39
    assert len(cases) == sum(len(list(a.request.valid)) + len(list(a.response.valid)) for a in APIS.values())


def test_the_key_table_names_each_schema_module_by_its_own_key():
    """minibroker_protocol.apis.KEYS says which module to import for a key (a request header is read with its
    API's schema alone); every schema module under protocol/apis is in it under its API.key."""
    import importlib
    import pkgutil

    import minibroker_protocol.apis as apis

    on_disk = {m.name for m in pkgutil.iter_modules(apis.__path__)}
    assert set(apis.KEYS.values()) == on_disk
    for key, name in apis.KEYS.items():
        assert importlib.import_module(f"minibroker_protocol.apis.{name}").API.key == key, name
        assert apis.api(key) is APIS[key]
    assert apis.api(max(apis.KEYS) + 1) is None


# ------------------------------------------------------------------------- layering

PROTOCOL = Path(__file__).resolve().parents[2] / "protocol"
FORBIDDEN = {"asyncio", "socket", "selectors", "ssl", "aiofiles", "uvloop", "minibroker_storage", "minibroker"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.add(arg.value.split(".")[0])
    return found


def test_protocol_is_sans_io():
    files = sorted(PROTOCOL.rglob("*.py"))
    assert len(files) > 40  # the walk really sees the package
    offenders = {str(p.relative_to(PROTOCOL)): sorted(_imports(p) & FORBIDDEN) for p in files}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_import_check_can_fail(tmp_path):
    p = tmp_path / "bad.py"
    p.write_text("import asyncio.streams\nfrom minibroker_storage.log import Log\ndef f():\n    import socket\n")
    assert _imports(p) & FORBIDDEN == {"asyncio", "minibroker_storage", "socket"}
