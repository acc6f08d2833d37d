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
