"""One broker for the fault tests (a session's: the faults a test sets are removed by the test),
its console on a free port with /api/faults served (console.allow.faults)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minibroker.testing import BrokerThread
from tests.helpers import TEST_OVERRIDES


@pytest.fixture(scope="session")
def faults_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    overrides = {**TEST_OVERRIDES, "console.port": 0, "console.allow.faults": True,
                 # KIP-848 members heartbeat often, so a fault on their heartbeat fires soon
                 "group.consumer.heartbeat.interval.ms": 500, "group.consumer.min.heartbeat.interval.ms": 500}
    with BrokerThread(tmp_path_factory.mktemp("faults") / "data", overrides=overrides) as b:
        yield b
        assert b.faults.all() == [], "a test left a fault set"
