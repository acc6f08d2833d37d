"""Shared fixtures: an in-process broker per test, and a broker in a subprocess (for kill -9)."""

from __future__ import annotations

import pytest

from minibroker.testing import BrokerThread
from tests.helpers import TEST_OVERRIDES, BrokerProcess


@pytest.fixture
def broker(tmp_path):
    """A fresh broker on an ephemeral port in a temp dir, in this process."""
    with BrokerThread(tmp_path / "data", overrides=dict(TEST_OVERRIDES)) as b:
        yield b


@pytest.fixture
def broker_process(tmp_path):
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
