"""PySpark pipelines on Kafka topics without Spark's Kafka connector (`pip install minibroker[spark]`).

Spark's own `format("kafka")` needs the spark-sql-kafka jars from Maven. This package is a Python
data source (PySpark >= 4.0) with the same columns and options under the format name "minikafka",
so a pipeline moves between the two by changing that one word:

    from minibroker.spark import register
    register(spark)
    df = (spark.read.format("minikafka")
          .option("kafka.bootstrap.servers", "localhost:9092").option("subscribe", "events").load())

Modules: options.py (option parsing, pure), offsets.py (offset JSON, rate limit, range planning,
pure), lookup.py (driver: partitions and offsets via AdminClient), consume.py (worker: one range
into Arrow batches), produce.py (worker: rows to Kafka), source.py (the pyspark classes).
"""

from __future__ import annotations

from typing import Any

from minibroker.spark.options import FORMAT

__all__ = ["FORMAT", "KafkaDataSource", "kafka_schema", "register"]


def register(spark: Any) -> str:
    """Register the data source with a SparkSession; returns the format name to use."""
    from minibroker.spark.source import KafkaDataSource

    spark.dataSource.register(KafkaDataSource)
    return FORMAT


def __getattr__(name: str) -> Any:
    # pyspark is imported on first use, so the pure modules (options, offsets) load without it.
    if name in ("KafkaDataSource", "kafka_schema"):
        from minibroker.spark import source

        return getattr(source, name)
    raise AttributeError(f"module 'minibroker.spark' has no attribute {name!r}")
