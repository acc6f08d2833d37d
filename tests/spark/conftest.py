"""One SparkSession for the Spark tests, with Spark's own Kafka connector, and a broker with a
2-partition topic of 1 000 JSON events.

The connector (`spark-sql-kafka-0-10`, the version of the installed pyspark) comes through
`spark.jars.packages`: Spark's Ivy resolves it and its dependencies from Maven Central into
~/.cache/minibroker/ivy (tests/spark/helpers.py), outside the repo. pyspark and a JDK are
required (the `spark` extra): a missing one is an error, not a skip. Spark binds to 127.0.0.1 only.
"""

from __future__ import annotations

import os
import sys
import time

import pytest
from filelock import FileLock

from minibroker.testing import BrokerThread
from tests.helpers import TEST_OVERRIDES
from tests.spark.helpers import (
    EVENTS,
    IVY_DIR,
    N_EVENTS,
    EventTopic,
    create_topic,
    produce_events,
    spark_builder,
)


@pytest.fixture(scope="session")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    started = time.monotonic()
    # Spark's Ivy resolves the connector into IVY_DIR when the JVM starts: one start at a time on
    # this machine (another checkout's test run, say), so that two resolvers do not write the same
    # jar at once
    IVY_DIR.mkdir(parents=True, exist_ok=True)
    with FileLock(str(IVY_DIR) + ".lock"):
        session = spark_builder("minibroker-tests").getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    # A query with no new data reports progress this often (Spark's default is 10 s), so that a test
    # sees a streaming query's first offsets settle without sleeping.
    session.conf.set("spark.sql.streaming.noDataProgressEventInterval", "100ms")
    print(f"SparkSession (with the Kafka connector) started in {time.monotonic() - started:.1f} s")
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
