"""The table the broker answers ApiVersions from (minibroker.handlers.registry.SERVED: api key ->
versions, handler module) against what the handler modules register with `@handles`: every handler
module imported, the two must be the same keys, versions and modules. A handler is imported by the
first request of its key (issue 22), so a key in the table that no module registers, or a version
range the table states and the handler does not serve, would be advertised and then fail."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import minibroker.handlers as handlers_pkg
from minibroker.handlers.registry import (
    HANDLERS,
    SERVED,
    SERVED_VERSIONS,
    ServedHandlers,
    load_all,
    load_handler,
)
from protocol.schema import Versions


def test_the_table_is_what_the_handler_modules_register() -> None:
    for mod in pkgutil.iter_modules(handlers_pkg.__path__):
        importlib.import_module(f"minibroker.handlers.{mod.name}")
    registered = {key: (repr(h.versions), h.fn.__module__.removeprefix("minibroker.handlers."))
                  for key, h in HANDLERS.items()}
    table = {key: (repr(Versions(versions)), module) for key, (versions, module) in SERVED.items()}
    assert registered == table
    assert load_all() is HANDLERS
    for key in SERVED:
        assert load_handler(key) is HANDLERS[key]


def test_served_handlers_load_on_lookup_and_know_their_keys_from_the_table() -> None:
    without_fetch = {k: v for k, v in SERVED_VERSIONS.items() if k != 1}
    served = ServedHandlers(without_fetch)
    assert len(served) == len(without_fetch) and 1 not in served and 0 in served
    assert served.get(1) is None and served.get(9999) is None
    with pytest.raises(KeyError):
        served[1]
    produce = served[0]
    assert served.loaded == {0: produce} and produce.api.key == 0
    assert {k: (h.versions.lo, h.versions.hi) for k, h in served.items()} == {
        k: (v.lo, v.hi) for k, v in without_fetch.items()}


def test_a_handler_registered_at_other_versions_than_the_table_fails_to_load(monkeypatch) -> None:
    load_handler(18)
    monkeypatch.setitem(SERVED_VERSIONS, 18, Versions("0-3"))
    with pytest.raises(RuntimeError, match="ApiVersions"):
        load_handler(18)


FIRST_REQUEST_DESCRIBES_A_GROUP = r"""
import json, sys, tempfile
from minibroker.testing import BrokerThread
from protocol.apis import describe_configs
from tests.helpers import TEST_OVERRIDES
from tests.integration.helpers import RawClient

DC = describe_configs.REQUEST
if sys.argv[1:] == ["share-first"]:
    import minibroker.handlers.share_groups  # imports handlers.configs (its keys registered) first
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
    """The consumer-group and share-group handler modules register their GROUP config keys with
    handlers.configs; with handlers loaded per key, a DescribeConfigs of a GROUP resource as the
    first request of a fresh broker must still list both kinds' keys (registry.LOADED_WITH), also
    when handlers.configs came in with the share-group module before."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", FIRST_REQUEST_DESCRIBES_A_GROUP, *([first] if first else [])], cwd=root, capture_output=True,
                         text=True, timeout=60, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert "minibroker.handlers.consumer_groups" not in seen["before"]
    assert ("minibroker.handlers.share_groups" in seen["before"]) == bool(first)
    assert seen["error"] == 0
    assert {"consumer.heartbeat.interval.ms", "share.record.lock.duration.ms"} <= set(seen["names"])
