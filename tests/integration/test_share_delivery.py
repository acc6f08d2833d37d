"""Issue 34's share-group scenarios (tests/reference/share_delivery.py, confluent-kafka's
ShareConsumer) against minibroker alone, for machines without Java: each must print what Apache
Kafka 4.4 prints (tests/reference/test_share_delivery.py runs them on both brokers)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.testing import BrokerThread
from tests.reference import share_delivery as sd

pytest.importorskip("confluent_kafka", minversion="2.16")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    with BrokerThread(tmp_path_factory.mktemp("share-delivery") / "data",
                      overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        yield b


@pytest.mark.parametrize("name", sorted(sd.EXPECTED))
def test_scenario_as_on_kafka(broker: BrokerThread, name: str) -> None:
    assert getattr(sd, name)(broker.bootstrap, f"it-{name}") == sd.EXPECTED[name]
