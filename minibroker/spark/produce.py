"""Writing rows to Kafka on a worker, with the column rules of Spark's KafkaWriter.

Columns: `value` (string or binary, required), `key` (string or binary), `topic` (string; the
`topic` option overrides it), `headers` (array<struct<key: string, value: binary>>) and `partition`
(int); other columns are ignored. Delivery is at least once, as with Spark's sink: a task waits
for every record's acknowledgement and fails on the first delivery error, so a retried task or
micro-batch may write some records twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from minibroker.spark.options import SinkConfig

Record = tuple[str, Any, Any, list[tuple[str, Any]] | None, int | None]

FLUSH_S = 1.0


def records_from_columns(cols: Mapping[str, list[Any]], n: int, default_topic: str | None) -> Iterator[Record]:
    """Records from column lists (as from `RecordBatch.to_pydict()` or gathered rows)."""
    topics = cols.get("topic")
    keys = cols.get("key")
    values = cols["value"]
    headers = cols.get("headers")
    partitions = cols.get("partition")
    for i in range(n):
        topic = default_topic if default_topic is not None else (topics[i] if topics is not None else None)
        if topic is None:
            raise ValueError("null topic present in the data. Use the topic option for setting a topic.")
        hs = headers[i] if headers is not None else None
        yield (topic,
               keys[i] if keys is not None else None,
               values[i],
               [(h["key"], h["value"]) for h in hs] if hs else None,
               partitions[i] if partitions is not None else None)


def produce_all(cfg: SinkConfig, records: Iterable[Record]) -> int:
    """Send every record and wait for all acknowledgements; returns how many were written."""
    from confluent_kafka import KafkaException, Producer

    producer = Producer(dict(cfg.producer))
    failures: list[Any] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(err)

    n = 0
    for topic, key, value, headers, partition in records:
        if failures:
            break
        kwargs: dict[str, Any] = {"key": key, "value": value, "on_delivery": on_delivery}
        if headers:
            kwargs["headers"] = headers
        if partition is not None:
            kwargs["partition"] = partition
        while True:
            try:
                producer.produce(topic, **kwargs)
                break
            except BufferError:
                producer.poll(0.1)  # the local queue is full: serve delivery reports, retry
        producer.poll(0)
        n += 1
    # Every queued record ends delivered or failed within librdkafka's message.timeout.ms.
    while len(producer) > 0:
        producer.flush(FLUSH_S)
    if failures:
        raise KafkaException(failures[0])
    return n
