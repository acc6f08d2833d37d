"""The project's own broker fixture on top of the minibroker plugin's (kafka_broker,
kafka_broker_isolated, kafka_broker_session): `kafka_broker_process`, brokers in a subprocess
(for SIGTERM and kill -9). Names and scopes: tests/README.md."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers import BrokerProcess

# `make test` runs the suite on pytest-xdist workers with `--dist loadgroup --no-loadscope-reorder`
# (Makefile): each file is one unit of work, except the directories below, which run whole on one
# worker, and the units are handed out in the order this hook leaves them, longest first.
# tests/spark is one unit: its SparkSession (a JVM, the Kafka connector resolved through Ivy) is
# session-scoped, so one worker starts it once instead of each worker its own.
_WHOLE_DIRS = ("tests/spark",)
# The slowest directories first, so that the last units handed out are short ones and the workers
# finish about together: an estimate; in the first two-worker fresh CI (41 min) 24 of the 25
# slowest tests were in tests/reference, the other in tests/cluster.
_SLOW_FIRST = ("tests/reference", "tests/spark", "tests/cluster", "tests/java", "tests/replication",
               "tests/faults", "tests/integration", "tests/console", "tests/go", "tests/tools")


def _unit(item: pytest.Item) -> str:
    path = item.nodeid.split("::", 1)[0]
    return next((d for d in _WHOLE_DIRS if path.startswith(d + "/")), path)


def _rank(unit: str) -> int:
    return next((i for i, d in enumerate(_SLOW_FIRST) if unit == d or unit.startswith(d + "/")), len(_SLOW_FIRST))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("dist", "no") != "loadgroup":
        return
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(_unit(item)))
    first = {}
    for item in items:
        first.setdefault(_unit(item), len(first))
    items.sort(key=lambda item: (_rank(_unit(item)), first[_unit(item)]))  # stable: a unit's own order kept


_PYCACHE_PREFIX: list[tuple[str, str]] = []  # (the prefix, PYTHONDONTWRITEBYTECODE's value)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Python children of the tests (brokers, cluster nodes, tools) share one bytecode
    cache under a temporary directory. With PYTHONDONTWRITEBYTECODE set (as on CI), every child
    compiled each module it imported from source: some 0.5 s of CPU per broker process, 2 s per
    four-process cluster start. The checkout itself gets no __pycache__ (PYTHONPYCACHEPREFIX)."""
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
        prefix = tempfile.mkdtemp(prefix="minibroker-pycache-")
        _PYCACHE_PREFIX.append((prefix, os.environ.pop("PYTHONDONTWRITEBYTECODE")))
        os.environ["PYTHONPYCACHEPREFIX"] = prefix


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    for prefix, dont_write in _PYCACHE_PREFIX:
        os.environ["PYTHONDONTWRITEBYTECODE"] = dont_write
        os.environ.pop("PYTHONPYCACHEPREFIX", None)
        shutil.rmtree(prefix, ignore_errors=True)


@pytest.fixture
def kafka_broker_process(tmp_path: Path) -> Iterator[Callable[..., BrokerProcess]]:
    """A factory of `BrokerProcess`es on tmp_path/data; any still running after the test is killed."""
    procs: list[BrokerProcess] = []

    def make(**kw) -> BrokerProcess:
        p = BrokerProcess(tmp_path / "data", **kw)
        procs.append(p)
        return p

    yield make
    for p in procs:
        if p.proc is not None and p.proc.poll() is None:
            p.proc.kill()
            p.proc.wait(10)
