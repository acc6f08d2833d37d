"""One SparkSession for all Spark tests, and a broker with a 2-partition topic of 1 000 JSON events.

pyspark, pyarrow and a JDK are required (the `spark` extra): a missing one is an error, not a skip.
Workers run this interpreter (PYSPARK_PYTHON) so they import minibroker from the same venv, and
Spark binds to 127.0.0.1 only.
"""

from __future__ import annotations

import os
import sys
import time

import pytest

from minibroker.testing import BrokerThread
from tests.helpers import TEST_OVERRIDES
from tests.spark.helpers import EVENTS, N_EVENTS, EventTopic, create_topic, produce_events


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
def kafka_broker_module(tmp_path_factory):
    with BrokerThread(tmp_path_factory.mktemp("spark-broker"), overrides=dict(TEST_OVERRIDES)) as b:
        yield b


@pytest.fixture(scope="module")
def events(kafka_broker_module) -> EventTopic:
    base_ms = (int(time.time() * 1000) // 1000) * 1000 - 3_600_000
    create_topic(kafka_broker_module.bootstrap, EVENTS)
    produce_events(kafka_broker_module.bootstrap, EVENTS, 0, N_EVENTS, base_ms)
    return EventTopic(kafka_broker_module.bootstrap, EVENTS, base_ms)
