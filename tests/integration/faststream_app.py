"""The FastStream application of tests/integration/test_faststream.py and its expected totals, run by that
test and by tests/reference/test_stream_apps_reference.py against both brokers."""


from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer

from tests.integration.helpers import unique

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


