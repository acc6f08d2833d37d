"""The PySpark pipeline's Avro variant: Avro events in through the schema registry, per-user totals
out as Avro through it, batch and streaming.

    make run                                           # a broker on localhost:9092, registry on 8081
    .venv/bin/python examples/spark_avro_pipeline.py   # needs the extras: '.[spark,registry]'

Spark reads Confluent-framed Avro with spark-avro's `from_avro` (org.apache.spark:spark-avro, at
pyspark's version, resolved from Maven Central through spark.jars.packages like the Kafka connector
and cached in ~/.cache/minibroker/ivy). spark-avro knows nothing of a registry: the schema comes
from minibroker's registry (Confluent's REST API, through confluent-kafka's SchemaRegistryClient),
and the 5-byte Confluent header (magic 0, the schema id) is cut off before decoding and put back
(with the output schema's id) after encoding, which is what Confluent's serializers read and write.

1. Produces --events sample events with confluent-kafka's AvroSerializer (subject <input>-value,
   schema shop.Event {user, amount, ts}; skip with --events 0).
2. Fetches the latest version of <input>-value and registers shop.UserTotals under
   <output>-batch-value and <output>-stream-value.
3. Batch: spark.read the input, from_avro each value with the fetched schema, count and sum per
   user, to_avro the totals, write them to <output>-batch (key = user). Avro needs the writer's
   schema to decode: records framed with another id than the fetched one are skipped (a pipeline
   over an evolving subject would read each id with its own schema).
4. Streaming with Trigger.AvailableNow, the same aggregation, output mode "update", to
   <output>-stream, from a checkpoint (run again: only new events are read).
5. Reads both outputs back with confluent-kafka's AvroDeserializer (the last record per key).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path

FORMAT = "kafka"
IVY_DIR = Path.home() / ".cache" / "minibroker" / "ivy"  # Spark's Ivy cache, outside the repo
MAGIC = b"\x00"

EVENT = json.dumps({"type": "record", "name": "Event", "namespace": "shop", "fields": [
    {"name": "user", "type": "string"}, {"name": "amount", "type": "long"}, {"name": "ts", "type": "long"}]})
TOTALS = json.dumps({"type": "record", "name": "UserTotals", "namespace": "shop", "fields": [
    {"name": "user", "type": "string"}, {"name": "events", "type": "long"}, {"name": "total", "type": "long"}]})


def packages() -> str:
    """Spark's Kafka connector and spark-avro for the installed pyspark (Scala 2.13, as pyspark 4 ships)."""
    import pyspark

    v = pyspark.__version__
    return f"org.apache.spark:spark-sql-kafka-0-10_2.13:{v},org.apache.spark:spark-avro_2.13:{v}"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bootstrap", default="localhost:9092")
    ap.add_argument("--registry", default="http://localhost:8081")
    ap.add_argument("--input", default="avro-events")
    ap.add_argument("--output", default="avro-user-totals")
    ap.add_argument("--events", type=int, default=1000, help="sample events to produce first (0: none)")
    ap.add_argument("--max-per-trigger", type=int, default=400)
    ap.add_argument("--checkpoint", default=str(Path(tempfile.gettempdir()) / "minibroker-avro-example-checkpoint"))
    ap.add_argument("--fresh", action="store_true", help="delete the checkpoint first")
    return ap.parse_args(argv)


def produce_sample_events(args: argparse.Namespace, n: int, seed: int | None = None) -> list[dict]:
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    serialize = AvroSerializer(SchemaRegistryClient({"url": args.registry}), EVENT)
    ctx = SerializationContext(args.input, MessageField.VALUE)
    rnd = random.Random(seed)
    p = Producer({"bootstrap.servers": args.bootstrap, "linger.ms": 5})
    now = int(time.time() * 1000)
    events = []
    for i in range(n):
        ev = {"user": f"u{rnd.randrange(5)}", "amount": rnd.randrange(1, 100), "ts": now + i}
        p.produce(args.input, key=ev["user"], value=serialize(ev, ctx))
        events.append(ev)
    if p.flush(30):
        raise RuntimeError("could not deliver the sample events")
    return events


def start_spark():
    import os
    import sys

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("minibroker-avro-example")
             .config("spark.jars.packages", packages())
             .config("spark.jars.ivy", str(IVY_DIR))
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def confluent_header(schema_id: int) -> bytes:
    return MAGIC + schema_id.to_bytes(4, "big")


def user_totals(events, event_schema: str, event_id: int, totals_id: int):
    """Confluent-framed Avro events -> one row per user: key = user, value = Confluent-framed Avro totals."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro, to_avro

    header = confluent_header(event_id)
    framed = events.where(F.substring("value", 1, 5) == F.lit(header))  # written with the fetched schema
    payload = F.expr("substring(value, 6, length(value) - 5)")
    parsed = framed.select(from_avro(payload, event_schema, {"mode": "FAILFAST"}).alias("e")).select("e.*")
    totals = parsed.groupBy("user").agg(F.count("*").alias("events"), F.sum("amount").alias("total"))
    # the field order and types of shop.UserTotals: to_avro writes the struct as that record
    value = F.concat(F.lit(confluent_header(totals_id)), to_avro(F.struct("user", "events", "total"), TOTALS))
    return totals.select(F.col("user").alias("key"), value.alias("value"))


def schemas(args: argparse.Namespace) -> tuple[str, int, dict[str, int]]:
    """The input subject's latest schema and id, and the ids of the totals' schema in the output subjects."""
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    client = SchemaRegistryClient({"url": args.registry})
    latest = client.get_latest_version(f"{args.input}-value")
    ids = {suffix: client.register_schema(f"{args.output}-{suffix}-value", Schema(TOTALS, "AVRO"))
           for suffix in ("batch", "stream")}
    return latest.schema.schema_str, latest.schema_id, ids


def run_batch(spark, args: argparse.Namespace, event_schema: str, event_id: int, totals_id: int) -> None:
    events = (spark.read.format(FORMAT).option("kafka.bootstrap.servers", args.bootstrap)
              .option("subscribe", args.input).option("startingOffsets", "earliest").load())
    (user_totals(events, event_schema, event_id, totals_id).write.format(FORMAT)
     .option("kafka.bootstrap.servers", args.bootstrap).option("topic", f"{args.output}-batch").save())


def run_streaming(spark, args: argparse.Namespace, event_schema: str, event_id: int, totals_id: int) -> dict:
    events = (spark.readStream.format(FORMAT).option("kafka.bootstrap.servers", args.bootstrap)
              .option("subscribe", args.input).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", str(args.max_per_trigger)).load())
    query = (user_totals(events, event_schema, event_id, totals_id).writeStream.format(FORMAT)
             .option("kafka.bootstrap.servers", args.bootstrap).option("topic", f"{args.output}-stream")
             .option("checkpointLocation", args.checkpoint)
             .outputMode("update").trigger(availableNow=True).start())
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    return {"micro-batches": len(query.recentProgress),
            "rows read": sum(p["numInputRows"] for p in query.recentProgress)}


def latest_per_key(args: argparse.Namespace, topic: str) -> dict[str, dict]:
    """The last record per key of a topic, read by confluent-kafka and its AvroDeserializer (the
    writer's schema fetched by the id each record carries)."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    deserialize = AvroDeserializer(SchemaRegistryClient({"url": args.registry}))
    ctx = SerializationContext(topic, MessageField.VALUE)
    c = Consumer({"bootstrap.servers": args.bootstrap, "group.id": "avro-example-check",
                  "enable.partition.eof": True, "enable.auto.commit": False})
    parts = c.list_topics(topic, timeout=10).topics[topic].partitions
    c.assign([TopicPartition(topic, p, 0) for p in parts])
    out: dict[str, dict] = {}
    eof: set[int] = set()
    deadline = time.monotonic() + 60
    while len(eof) < len(parts) and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            eof.add(m.partition())
            continue
        out[m.key().decode()] = deserialize(m.value(), ctx)
    c.close()
    return dict(sorted(out.items()))


def main(argv: list[str] | None = None, spark=None) -> dict:
    args = parse_args(argv)
    if args.fresh:
        shutil.rmtree(args.checkpoint, ignore_errors=True)
    if args.events:
        produce_sample_events(args, args.events)
        print(f"produced {args.events} Avro events to {args.input}")
    event_schema, event_id, totals_ids = schemas(args)
    print(f"{args.input}-value: schema id {event_id}; totals: ids {totals_ids}")
    own_session = spark is None
    spark = spark or start_spark()
    try:
        t = time.monotonic()
        run_batch(spark, args, event_schema, event_id, totals_ids["batch"])
        print(f"batch: wrote per-user totals to {args.output}-batch in {time.monotonic() - t:.1f} s")
        t = time.monotonic()
        progress = run_streaming(spark, args, event_schema, event_id, totals_ids["stream"])
        print(f"streaming (availableNow): {progress} in {time.monotonic() - t:.1f} s")
        result = {}
        for suffix in ("batch", "stream"):
            topic = f"{args.output}-{suffix}"
            result[suffix] = latest_per_key(args, topic)
            print(f"{topic}:")
            for user, totals in result[suffix].items():
                print(f"  {user}: {totals}")
        return result
    finally:
        if own_session:
            spark.stop()


if __name__ == "__main__":
    main()
