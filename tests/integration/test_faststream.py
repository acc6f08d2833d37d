"""A FastStream application (faststream[kafka], on aiokafka) against minibroker (issue 35): a
consumer-producer pipeline written and run as FastStream's documentation shows it, a module with
a `KafkaBroker`, a `FastStream` app and a subscriber whose return value a publisher sends on,
started with `faststream run module:app`. Orders in, typed by pydantic, totals out, each exactly
once and keyed as they came; then the app is stopped with SIGINT, as one stops it by hand.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from minibroker.testing import BrokerThread
from tests.integration.faststream_app import expected, run_pipeline
from tests.integration.helpers import create_topic, module_broker, unique

faststream = pytest.importorskip("faststream")

@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    with module_broker(tmp_path_factory) as b:
        yield b


def test_faststream_pipeline(broker: BrokerThread, tmp_path: Path) -> None:
    in_topic, out_topic = unique("orders"), unique("totals")
    create_topic(broker, in_topic, 3)
    create_topic(broker, out_topic, 1)
    assert run_pipeline(broker.bootstrap, tmp_path, in_topic, out_topic) == expected()
