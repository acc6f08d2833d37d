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
from xdist.scheduler import LoadScopeScheduling

from tests.helpers import BrokerProcess

# `make test` runs the suite on two pytest-xdist workers (`-n 2 --dist loadfile
# --no-loadscope-reorder`, Makefile) with the scheduler below: each file is one unit of work, except
# the directories below, which run whole on one worker, and the units are handed out in the order
# the workers' collection leaves them, slowest first.
# tests/spark is one unit: its SparkSession (a JVM, the Kafka connector resolved through Ivy) is
# session-scoped, so one worker starts it once instead of each worker its own.
# (Not `--dist loadgroup` with xdist_group marks: pytest 9 derives a node's id from its own fields,
# so the `@group` suffix pytest-xdist 3.8 writes into `item._nodeid` is lost and every test became
# its own unit, module fixtures started once per worker and tests of one module split between them.)
_WHOLE_DIRS = ("tests/spark",)
# The slowest directories first, so that the last units handed out are short ones and the workers
# finish about together: an estimate; in the first two-worker fresh CI (41 min) 24 of the 25
# slowest tests were in tests/reference, the other in tests/cluster.
_SLOW_FIRST = ("tests/reference", "tests/spark", "tests/cluster", "tests/java", "tests/replication",
               "tests/faults", "tests/integration", "tests/console", "tests/go", "tests/tools")


def _unit(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return next((d for d in _WHOLE_DIRS if path.startswith(d + "/")), path)


def _rank(unit: str) -> int:
    return next((i for i, d in enumerate(_SLOW_FIRST) if unit == d or unit.startswith(d + "/")), len(_SLOW_FIRST))


class _UnitScheduling(LoadScopeScheduling):
    """pytest-xdist's scope scheduling with this suite's units as the scopes."""

    def _split_scope(self, nodeid: str) -> str:
        return _unit(nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> LoadScopeScheduling | None:
    if config.getoption("dist", "no") != "loadfile":
        return None  # xdist's own choice
    return _UnitScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):  # not an xdist worker: the files' own order
        return
    first: dict[str, int] = {}
    for item in items:
        first.setdefault(_unit(item.nodeid), len(first))
    items.sort(key=lambda item: (_rank(_unit(item.nodeid)), first[_unit(item.nodeid)]))  # stable: a unit's own order kept


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
