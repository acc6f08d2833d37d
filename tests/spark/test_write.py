"""Writes with Spark's own Kafka sink (the Java producer) to minibroker, batch and streaming, read
back row by row with a plain client (confluent-kafka)."""

from __future__ import annotations

import json
import time

from tests.spark.helpers import consume_all, create_topic, produce_events


def written_rows(spark, n: int):
    """n rows with every column the sink takes; "topic" names 'to-column' for even ids."""
    return spark.range(n).selectExpr(
        "concat('w', CAST(id AS STRING)) AS key",
        "CAST(to_json(named_struct('id', id, 'sq', id * id)) AS BINARY) AS value",
        "IF(id % 2 = 0, 'to-column', 'to-column-odd') AS topic",
        "CAST(id % 2 AS INT) AS partition",
        "array(named_struct('key', 'src', 'value', CAST('spark' AS BINARY))) AS headers",
        "id AS ignored_column",
    )


def expected(ids) -> list[tuple]:
    return sorted((i % 2, f"w{i}".encode(), json.dumps({"id": i, "sq": i * i}, separators=(",", ":")).encode(),
                   [("src", b"spark")]) for i in ids)


def plain(bootstrap: str, topic: str) -> list[tuple]:
    return sorted((p, k, v, h) for p, _o, k, v, h, _ts in consume_all(bootstrap, topic))


def test_batch_write_topic_column_and_option(spark, kafka_broker_module):
    bootstrap = kafka_broker_module.bootstrap
    for t in ("to-column", "to-column-odd", "to-option"):
        create_topic(bootstrap, t)
    df = written_rows(spark, 200)
    # The topic column routes each row; key, value, partition and headers columns are the record's.
    df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).save()
    assert plain(bootstrap, "to-column") == expected(range(0, 200, 2))
    assert plain(bootstrap, "to-column-odd") == expected(range(1, 200, 2))
    # The topic option wins over the column.
    df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", "to-option") \
        .mode("append").save()
    assert plain(bootstrap, "to-option") == expected(range(200))


def test_streaming_write_from_a_topic(spark, kafka_broker_module, tmp_path):
    bootstrap = kafka_broker_module.bootstrap
    create_topic(bootstrap, "stream-in")
    create_topic(bootstrap, "stream-out")
    base_ms = int(time.time() * 1000)
    produce_events(bootstrap, "stream-in", 0, 300, base_ms)

    def run() -> None:
        q = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", "stream-in").option("startingOffsets", "earliest")
             .option("includeHeaders", "true").load()
             .selectExpr("key", "upper(CAST(value AS STRING)) AS value", "partition", "headers")
             .writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("topic", "stream-out").option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(availableNow=True).start())
        q.awaitTermination(120)
        assert q.exception() is None

    def want(n: int) -> list[tuple]:
        return sorted((p, k, v.upper(), h) for p, _o, k, v, h, _ts in consume_all(bootstrap, "stream-in")
                      if int(k[1:]) < n)

    run()
    assert plain(bootstrap, "stream-out") == want(300)
    # Restarted, the query writes only what arrived since: every input record exactly once.
    produce_events(bootstrap, "stream-in", 300, 50, base_ms)
    run()
    assert plain(bootstrap, "stream-out") == want(350)
