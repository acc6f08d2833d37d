"""The example pipeline's Avro variant (examples/spark_avro_pipeline.py, issue 36) end to end, twice:
events produced with confluent-kafka's AvroSerializer through minibroker's schema registry, read
by Spark with spark-avro's from_avro using the schema fetched from the registry, totals written
back as Confluent-framed Avro and read with confluent-kafka's AvroDeserializer."""

from __future__ import annotations

import importlib.util
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient

from minibroker.testing import BrokerThread
from tests.helpers import ROOT, TEST_OVERRIDES
from tests.spark.helpers import create_topic

# a SparkSession starts a JVM (and, the first time, Ivy fetches spark-avro): slow on a loaded machine
pytestmark = pytest.mark.timeout(900)


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("spark_avro_pipeline", ROOT / "examples" / "spark_avro_pipeline.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def registry_broker(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    with BrokerThread(tmp_path_factory.mktemp("spark-avro-broker"),
                      overrides={**TEST_OVERRIDES, "schema.registry.port": 0}) as b:
        yield b


def expected_totals(events: list[dict]) -> dict[str, dict]:
    acc: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for ev in events:
        acc[ev["user"]][0] += 1
        acc[ev["user"]][1] += ev["amount"]
    return {u: {"user": u, "events": n, "total": s} for u, (n, s) in sorted(acc.items())}


def test_avro_pipeline_batch_and_available_now(spark: Any, registry_broker: BrokerThread, tmp_path: Any,
                                               capsys: Any) -> None:
    example = load_example()
    server = registry_broker._inner.server
    assert server is not None and server.schema_registry is not None
    registry = server.schema_registry.url
    bootstrap = registry_broker.bootstrap
    create_topic(bootstrap, "avro-events")  # two partitions
    args = ["--bootstrap", bootstrap, "--registry", registry, "--input", "avro-events", "--output", "avro-totals",
            "--checkpoint", str(tmp_path / "ckpt"), "--events", "0", "--max-per-trigger", "200"]
    ns = example.parse_args(args)
    events = example.produce_sample_events(ns, 300, seed=1)
    first = example.main(args, spark=spark)
    expected = expected_totals(events)
    assert sum(t["events"] for t in expected.values()) == 300
    assert first == {"batch": expected, "stream": expected}
    assert "'micro-batches': 2, 'rows read': 300" in capsys.readouterr().out

    # what Spark wrote is Confluent's wire format with the totals' registered id
    client = SchemaRegistryClient({"url": registry})
    latest = client.get_latest_version("avro-totals-batch-value")
    assert (latest.version, latest.schema.schema_type) == (1, "AVRO")
    assert client.get_latest_version("avro-events-value").schema_id != latest.schema_id

    # 200 more: the streaming query resumes from its checkpoint and reads only them; totals cover 500
    events += example.produce_sample_events(ns, 200, seed=2)
    second = example.main(args, spark=spark)
    expected = expected_totals(events)
    assert sum(t["events"] for t in expected.values()) == 500
    assert second == {"batch": expected, "stream": expected}
    assert "'micro-batches': 1, 'rows read': 200" in capsys.readouterr().out
