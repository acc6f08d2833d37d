"""The table the broker answers ApiVersions from (minibroker/handlers/api_table.py: api key ->
versions, handler module and function, share-group API) against what the handlers state with
`@handles`: the checked-in table must be what tools/gen_api_table.py renders from the handler
modules, every row must load a function marked with its key and versions, and no marked function
may be left out. A handler is imported by the first request of its key (issue 22), so a key in the
table that no handler serves, or a version range the handler does not serve, would be advertised
and then fail."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

import pytest

import minibroker.handlers as handlers_pkg
from minibroker.handlers.api_table import API_TABLE, ServedApi
from minibroker.handlers.registry import (
    ServedHandlers,
    handles,
    load_all,
    load_handler,
    marked,
    served_versions,
)
from minibroker_protocol.apis import api_versions
from minibroker_protocol.schema import Versions

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import gen_api_table  # noqa: E402


def test_the_checked_in_table_is_what_the_handlers_state() -> None:
    assert gen_api_table.TABLE.read_text() == gen_api_table.render(), "run python tools/gen_api_table.py"


def test_every_marked_handler_is_in_the_table_and_every_row_loads_it() -> None:
    marks = {}
    for mod in pkgutil.iter_modules(handlers_pkg.__path__):
        module = importlib.import_module(f"minibroker.handlers.{mod.name}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if (mark := marked(fn)) is not None and fn.__module__ == module.__name__:
                marks[mark[0].key] = (repr(mark[1]), mod.name, name)
    assert marks == {key: (repr(Versions(e.versions)), e.module, e.function) for key, e in API_TABLE.items()}
    handlers = load_all()
    assert set(handlers) == set(API_TABLE)
    for key, handler in handlers.items():
        entry = API_TABLE[key]
        assert handler.api.key == key and repr(handler.versions) == repr(Versions(entry.versions))
        assert handler.fn is getattr(importlib.import_module(f"minibroker.handlers.{entry.module}"), entry.function)


def test_the_share_group_apis_are_left_out_when_share_groups_are_off() -> None:
    kip932 = {76, 77, 78, 79, 90, 91, 92}
    assert {k for k, e in API_TABLE.items() if e.share_group} == kip932
    assert set(served_versions(share_groups=True)) == set(API_TABLE)
    assert set(served_versions(share_groups=False)) == set(API_TABLE) - kip932


def test_handles_only_marks_the_function() -> None:
    async def fn(ctx, req):  # type: ignore[no-untyped-def]
        return None

    assert handles(api_versions.API, "0-3")(fn) is fn
    api, versions = marked(fn) or (None, None)
    assert api is api_versions.API and repr(versions) == "0-3"
    with pytest.raises(ValueError, match="cannot serve"):
        handles(api_versions.API, "0-99")


def test_served_handlers_load_on_lookup_and_know_their_keys_from_the_table() -> None:
    without_fetch = {k: v for k, v in served_versions(share_groups=True).items() if k != 1}
    served = ServedHandlers(without_fetch)
    assert len(served) == len(without_fetch) and 1 not in served and 0 in served
    assert served.get(1) is None and served.get(9999) is None
    with pytest.raises(KeyError):
        served[1]
    produce = served[0]
    assert served.loaded == {0: produce} and produce.api.key == 0
    assert {k: (h.versions.lo, h.versions.hi) for k, h in served.items()} == {
        k: (v.lo, v.hi) for k, v in without_fetch.items()}


def test_a_handler_marked_with_other_versions_than_the_table_fails_to_load(monkeypatch) -> None:
    load_handler(18)
    monkeypatch.setitem(API_TABLE, 18, API_TABLE[18]._replace(versions="0-3"))
    with pytest.raises(RuntimeError, match="api 18 v0-3"):
        load_handler(18)
    monkeypatch.setitem(API_TABLE, 18, ServedApi("0-4", "api_versions", "advertised", False))
    with pytest.raises(RuntimeError, match="states nothing"):
        load_handler(18)


def test_docs_formats_states_the_served_versions() -> None:
    """docs/formats.md's "Versions served" table names each API's versions as the handlers do."""
    from minibroker_protocol.apis import BY_NAME

    text = (ROOT / "docs" / "formats.md").read_text()
    section = text.split("## Versions served", 1)[1].split("\n## ", 1)[0]
    table = next(chunk for chunk in section.split("\n\n") if chunk.startswith("| API | versions |"))
    rows = [line.split("|")[1:3] for line in table.splitlines() if "---" not in line]
    stated = {name.strip(): versions.strip() for name, versions in rows if name.strip() != "API"}
    assert len(stated) >= 6
    assert stated == {name: API_TABLE[BY_NAME[name].key].versions for name in stated}


def test_each_handler_module_header_names_the_versions_the_table_has() -> None:
    """The "vX-Y / Behavior / Version notes" header of a handler module names each API it serves
    with the versions its @handles states (the header is read; the decorator is the statement)."""
    import ast
    import re

    from minibroker_protocol.apis import api

    wrong = []
    for key, served in API_TABLE.items():
        path = ROOT / "minibroker" / "handlers" / f"{served.module}.py"
        header = (ast.get_docstring(ast.parse(path.read_text())) or "").split("\n\n", 1)[0]
        schema = api(key)
        assert schema is not None
        if not re.search(rf"\b{schema.name}:? v{re.escape(served.versions)}\b(?![-\d])", header):
            wrong.append(f"{path.name}: {schema.name} v{served.versions} not in {header!r}")
    assert not wrong, "\n".join(wrong)


FIRST_REQUEST_DESCRIBES_A_GROUP = r"""
import json, sys, tempfile
from minibroker.testing import BrokerThread
from minibroker_protocol.apis import describe_configs
from tests.helpers import TEST_OVERRIDES
from tests.integration.helpers import RawClient

DC = describe_configs.REQUEST
if sys.argv[1:] == ["share-first"]:
    import minibroker.handlers.share_groups  # a group kind's handler module in before handlers.configs
with BrokerThread(tempfile.mkdtemp(), overrides=dict(TEST_OVERRIDES)) as b, RawClient(b.bootstrap) as c:
    before = sorted(m for m in sys.modules if m.startswith("minibroker.handlers."))
    r = c.call(describe_configs.API, 4, DC(resources=[DC.DescribeConfigsResource(
        resource_type=32, resource_name="g", configuration_keys=None)], include_synonyms=False,
        include_documentation=False))
    print(json.dumps({"before": before, "error": r.results[0].error_code,
                      "names": sorted(e.name for e in r.results[0].configs)}))
"""


@pytest.mark.parametrize("first", ["", "share-first"])
def test_group_configs_are_described_when_no_group_handler_was_loaded_yet(first: str) -> None:
    """The consumer-group and share-group handler modules hold their GROUP config keys, which
    handlers.configs imports; with handlers loaded per key, a DescribeConfigs of a GROUP resource as
    the first request of a fresh broker must still list both kinds' keys, also when the share-group
    module came in before."""
    import json
    import subprocess

    out = subprocess.run([sys.executable, "-c", FIRST_REQUEST_DESCRIBES_A_GROUP, *([first] if first else [])], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert "minibroker.handlers.consumer_groups" not in seen["before"]
    assert ("minibroker.handlers.share_groups" in seen["before"]) == bool(first)
    assert seen["error"] == 0
    assert {"consumer.heartbeat.interval.ms", "share.record.lock.duration.ms"} <= set(seen["names"])
