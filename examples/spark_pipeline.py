"""A PySpark pipeline on Kafka topics: JSON events in, per-user totals out, batch and streaming.

    make run                                      # a broker on localhost:9092 (other terminal)
    .venv/bin/python examples/spark_pipeline.py   # needs the extra: pip install -e '.[spark]'

It uses Spark's own Kafka connector (format "kafka", spark-sql-kafka-0-10), which Spark resolves
from Maven Central on first start through spark.jars.packages (cached in ~/.cache/minibroker/ivy).

1. Produces --events sample JSON events ({"user": "u3", "amount": 12, ...}) to the input topic
   (skip with --events 0 to use a topic you fill yourself).
2. Batch: spark.read the whole input topic, count events and sum amounts per user, write one JSON
   record per user (key = user) to <output>-batch.
3. Streaming with Trigger.AvailableNow: the same aggregation as a streaming query that reads what
   is in the topic now, in micro-batches of at most --max-per-trigger records, writes the totals of
   the users each micro-batch changed (output mode "update") to <output>-stream, and stops. Run
   the script again and the query resumes from its checkpoint: only events produced since are
   read, and the totals it writes include them (the state is kept in the checkpoint).
4. Prints what each output topic holds (the last record per key).

The checkpoint outlives the broker's data: after `make clean` the query would find its offsets
gone and stop with Spark's data-loss error, so pass --fresh then.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

FORMAT = "kafka"
IVY_DIR = Path.home() / ".cache" / "minibroker" / "ivy"  # Spark's Ivy cache, outside the repo


def connector_package() -> str:
    """Spark's Kafka connector for the installed pyspark (Scala 2.13, as pyspark 4 ships)."""
    import pyspark

    return f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bootstrap", default="localhost:9092")
    ap.add_argument("--input", default="events")
    ap.add_argument("--output", default="user-totals")
    ap.add_argument("--events", type=int, default=1000, help="sample events to produce first (0: none)")
    ap.add_argument("--max-per-trigger", type=int, default=400)
    ap.add_argument("--checkpoint", default=str(Path(tempfile.gettempdir()) / "minibroker-example-checkpoint"),
                    help="the streaming query's checkpoint directory (kept between runs)")
    ap.add_argument("--fresh", action="store_true",
                    help="delete the checkpoint first (needed after the broker's data was wiped)")
    return ap.parse_args(argv)


def produce_sample_events(bootstrap: str, topic: str, n: int, seed: int | None = None) -> None:
    from confluent_kafka import Producer

    rnd = random.Random(seed)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    now = int(time.time() * 1000)
    for i in range(n):
        ev = {"user": f"u{rnd.randrange(5)}", "amount": rnd.randrange(1, 100), "ts": now + i}
        p.produce(topic, key=ev["user"], value=json.dumps(ev))
    if p.flush(30):
        raise RuntimeError("could not deliver the sample events")


def start_spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("minibroker-example")
             .config("spark.jars.packages", connector_package())
             .config("spark.jars.ivy", str(IVY_DIR))
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def user_totals(events):
    """JSON events -> one row per user, as Kafka records: key = user, value = JSON totals."""
    from pyspark.sql import functions as F

    parsed = events.select(F.from_json(F.col("value").cast("string"),
                                       "user STRING, amount LONG, ts LONG").alias("e")).select("e.*")
    totals = parsed.groupBy("user").agg(F.count("*").alias("events"), F.sum("amount").alias("total"))
    return totals.select(F.col("user").alias("key"), F.to_json(F.struct("user", "events", "total")).alias("value"))


def run_batch(spark, args: argparse.Namespace) -> None:
    events = (spark.read.format(FORMAT).option("kafka.bootstrap.servers", args.bootstrap)
              .option("subscribe", args.input).option("startingOffsets", "earliest").load())
    (user_totals(events).write.format(FORMAT).option("kafka.bootstrap.servers", args.bootstrap)
     .option("topic", f"{args.output}-batch").save())


def run_streaming(spark, args: argparse.Namespace) -> dict:
    events = (spark.readStream.format(FORMAT).option("kafka.bootstrap.servers", args.bootstrap)
              .option("subscribe", args.input).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", str(args.max_per_trigger)).load())
    query = (user_totals(events).writeStream.format(FORMAT)
             .option("kafka.bootstrap.servers", args.bootstrap).option("topic", f"{args.output}-stream")
             .option("checkpointLocation", args.checkpoint)
             .outputMode("update").trigger(availableNow=True).start())
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    return {"micro-batches": len(query.recentProgress),
            "rows read": sum(p["numInputRows"] for p in query.recentProgress),
            "end offsets": query.lastProgress["sources"][0]["endOffset"] if query.lastProgress else None}


def latest_per_key(spark, args: argparse.Namespace, topic: str) -> dict[str, dict]:
    """The last record per key of a topic (read back through Spark's connector)."""
    rows = (spark.read.format(FORMAT).option("kafka.bootstrap.servers", args.bootstrap)
            .option("subscribe", topic).load().select("key", "value", "partition", "offset").collect())
    out: dict[str, tuple[int, dict]] = {}
    for r in rows:
        key = bytes(r.key).decode()
        if key not in out or r.offset > out[key][0]:
            out[key] = (r.offset, json.loads(bytes(r.value)))
    return {k: v for k, (_, v) in sorted(out.items())}


def main(argv: list[str] | None = None, spark=None) -> dict:
    args = parse_args(argv)
    if args.fresh:
        shutil.rmtree(args.checkpoint, ignore_errors=True)
    if args.events:
        produce_sample_events(args.bootstrap, args.input, args.events)
        print(f"produced {args.events} events to {args.input}")
    own_session = spark is None
    spark = spark or start_spark()
    try:
        t = time.monotonic()
        run_batch(spark, args)
        print(f"batch: wrote per-user totals to {args.output}-batch in {time.monotonic() - t:.1f} s")
        t = time.monotonic()
        progress = run_streaming(spark, args)
        print(f"streaming (availableNow): {progress} in {time.monotonic() - t:.1f} s")
        result = {}
        for suffix in ("batch", "stream"):
            topic = f"{args.output}-{suffix}"
            result[suffix] = latest_per_key(spark, args, topic)
            print(f"{topic}:")
            for user, totals in result[suffix].items():
                print(f"  {user}: {totals}")
        return result
    finally:
        if own_session:
            spark.stop()


if __name__ == "__main__":
    main()
