"""The project's own broker fixture on top of the minibroker plugin's (kafka_broker,
kafka_broker_isolated, kafka_broker_session): `kafka_broker_process`, brokers in a subprocess
(for SIGTERM and kill -9). Names and scopes: tests/README.md."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers import BrokerProcess


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
