"""A FastStream application (faststream[kafka], on aiokafka) against minibroker (issue 35): a
consumer-producer pipeline written and run as FastStream's documentation shows it, a module with
a `KafkaBroker`, a `FastStream` app and a subscriber whose return value a publisher sends on,
started with `faststream run module:app`. Orders in, typed by pydantic, totals out, each exactly
once and keyed as they came; then the app is stopped with SIGINT, as one stops it by hand.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer

from minibroker.testing import BrokerThread
from tests.integration.helpers import create_topic, module_broker, unique

faststream = pytest.importorskip("faststream")

APP = '''
import os

from pydantic import BaseModel

from faststream import FastStream
from faststream.kafka import KafkaBroker

broker = KafkaBroker(os.environ["BOOTSTRAP"])
app = FastStream(broker)


class Order(BaseModel):
    id: int
    qty: int
    price: float


class Total(BaseModel):
    id: int
    total: float


@broker.subscriber(os.environ["IN_TOPIC"], group_id=os.environ["GROUP"], auto_offset_reset="earliest")
@broker.publisher(os.environ["OUT_TOPIC"])
async def price(order: Order) -> Total:
    return Total(id=order.id, total=order.qty * order.price)
'''
N = 50


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    with module_broker(tmp_path_factory) as b:
        yield b


def run_pipeline(bootstrap: str, tmp: Path, in_topic: str, out_topic: str) -> list[dict[str, float]]:
    """Start the documented app, send N orders, read N totals, stop the app; the totals by id."""
    (tmp / "orders_app.py").write_text(APP)
    env = {**os.environ, "BOOTSTRAP": bootstrap, "IN_TOPIC": in_topic, "OUT_TOPIC": out_topic,
           "GROUP": unique("faststream"), "PYTHONPATH": f"{tmp}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cli = Path(sys.executable).parent / "faststream"
    log = (tmp / "app.log").open("w")
    app = subprocess.Popen([str(cli), "run", "orders_app:app"], cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        for i in range(N):
            producer.send(in_topic, json.dumps({"id": i, "qty": i % 7 + 1, "price": 2.5}).encode())
        producer.flush(30)
        producer.close()
        consumer = KafkaConsumer(out_topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                 consumer_timeout_ms=1000, group_id=unique("check"))
        got: list[dict[str, float]] = []
        deadline = time.monotonic() + 120
        while len(got) < N and time.monotonic() < deadline:
            assert app.poll() is None, (tmp / "app.log").read_text()
            got += [json.loads(r.value) for r in consumer]
        consumer.close()
        assert len(got) == N, (len(got), (tmp / "app.log").read_text()[-2000:])
        return sorted(got, key=lambda t: t["id"])
    finally:
        app.send_signal(signal.SIGINT)
        try:
            app.wait(30)
        except subprocess.TimeoutExpired:
            app.kill()
            app.wait(10)
        log.close()


def expected() -> list[dict[str, float]]:
    return [{"id": i, "total": (i % 7 + 1) * 2.5} for i in range(N)]


def test_faststream_pipeline(broker: BrokerThread, tmp_path: Path) -> None:
    in_topic, out_topic = unique("orders"), unique("totals")
    create_topic(broker, in_topic, 3)
    create_topic(broker, out_topic, 1)
    assert run_pipeline(broker.bootstrap, tmp_path, in_topic, out_topic) == expected()
