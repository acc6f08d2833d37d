"""One SparkSession for all Spark tests, and a broker with a 2-partition topic of 1 000 JSON events.

pyspark, pyarrow and a JDK are required (the `spark` extra): a missing one is an error, not a skip.
Workers run this interpreter (PYSPARK_PYTHON) so they import minibroker from the same venv, and
Spark binds to 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass

import pytest

from minibroker.testing import BrokerThread
from tests.conftest import TEST_OVERRIDES

EVENTS = "events"
N_EVENTS = 1000
STEP_MS = 10  # event i has timestamp base_ms + i * STEP_MS and goes to partition i % 2


@dataclass
class EventTopic:
    bootstrap: str
    topic: str
    base_ms: int

    def ts(self, i: int) -> int:
        return self.base_ms + i * STEP_MS


def event(i: int) -> dict:
    return {"i": i, "user": f"u{i % 7}", "amount": i % 13}


def produce_events(bootstrap: str, topic: str, first: int, count: int, base_ms: int) -> None:
    """Events first..first+count-1: key k<i>, JSON value, header n=<i>, partition i % 2."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    failures: list = []
    for i in range(first, first + count):
        p.produce(topic, key=f"k{i}", value=json.dumps(event(i)), partition=i % 2,
                  timestamp=base_ms + i * STEP_MS, headers=[("n", str(i).encode())],
                  on_delivery=lambda err, _m: err and failures.append(err))
    assert p.flush(30) == 0
    assert not failures, failures


def create_topic(bootstrap: str, topic: str, partitions: int = 2) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)


@pytest.fixture(scope="session")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from minibroker.spark import register

    started = time.monotonic()
    session = (SparkSession.builder.master("local[2]").appName("minibroker-tests")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.streaming.stopTimeout", "30s")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    print(f"SparkSession started in {time.monotonic() - started:.1f} s")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    with BrokerThread(tmp_path_factory.mktemp("spark-broker"), overrides=dict(TEST_OVERRIDES)) as b:
        yield b


@pytest.fixture(scope="module")
def events(kafka) -> EventTopic:
    base_ms = (int(time.time() * 1000) // 1000) * 1000 - 3_600_000
    create_topic(kafka.bootstrap, EVENTS)
    produce_events(kafka.bootstrap, EVENTS, 0, N_EVENTS, base_ms)
    return EventTopic(kafka.bootstrap, EVENTS, base_ms)
