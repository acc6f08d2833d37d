"""Reading one offset range on a worker: confluent-kafka in, Arrow record batches out.

Each Spark task reads [from_offset, until_offset) of one partition with a consumer of its own that
is assigned the partition (no group join, no commits). The range ends at the first record at or
past `until_offset`, or at a partition-EOF event at or past it, which is how a range that ends in
transaction markers or compacted-away offsets is finished: those offsets have no record.

Data loss follows Spark's `failOnDataLoss`: a start below the log start offset (retention) or
above the log end (a recreated topic) fails the task, or with failOnDataLoss=false the task
resumes at the earliest offset still there. A range that makes no progress for
kafkaConsumer.pollTimeoutMs fails, as in Spark.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

from minibroker.spark.offsets import OffsetRange
from minibroker.spark.options import SourceConfig

log = logging.getLogger(__name__)

BATCH_ROWS = 8192  # rows per Arrow batch handed to Spark
POLL_S = 0.2  # one consume() call; short so progress and timeouts are checked often

# Java's TimestampType ids, which Spark exposes in `timestampType`; librdkafka numbers them
# NOT_AVAILABLE=0, CREATE_TIME=1, LOG_APPEND_TIME=2.
TIMESTAMP_TYPE = {0: -1, 1: 0, 2: 1}


class DataLossError(RuntimeError):
    """Records the query should have read are gone (Spark: IllegalStateException + failOnDataLoss hint)."""


FAIL_HINT = (" Some data may have been lost because they are not available in Kafka any more; either the "
             "data was aged out by Kafka or the topic may have been deleted before all the data in the "
             "topic was processed. If you don't want your streaming query to fail on such cases, set the "
             "source option \"failOnDataLoss\" to \"false\".")


def report_data_loss(message: str, fail: bool) -> None:
    if fail:
        raise DataLossError(message + "." + FAIL_HINT)
    log.warning("%s. Some data may have been lost; failOnDataLoss=false, so the query goes on.", message)


class _Columns:
    """Column buffers for one Arrow batch of Spark's Kafka schema."""

    def __init__(self, include_headers: bool):
        self.include_headers = include_headers
        self.clear()

    def clear(self) -> None:
        self.key: list[bytes | None] = []
        self.value: list[bytes | None] = []
        self.offset: list[int] = []
        self.ts_us: list[int] = []
        self.ts_type: list[int] = []
        self.headers: list[list[dict[str, Any]] | None] = []

    def add(self, msg: Any) -> None:
        self.key.append(msg.key())
        self.value.append(msg.value())
        self.offset.append(msg.offset())
        kind, ms = msg.timestamp()
        self.ts_us.append(ms * 1000)
        self.ts_type.append(TIMESTAMP_TYPE.get(kind, -1))
        if self.include_headers:
            hs = msg.headers()
            self.headers.append([{"key": k, "value": v} for k, v in hs] if hs else [])

    def __len__(self) -> int:
        return len(self.offset)

    def batch(self, schema: Any, topic: str, partition: int) -> Any:
        import pyarrow as pa

        n = len(self)
        cols = {
            "key": self.key, "value": self.value, "topic": [topic] * n, "partition": [partition] * n,
            "offset": self.offset, "timestamp": self.ts_us, "timestampType": self.ts_type,
        }
        if self.include_headers:
            cols["headers"] = self.headers
        arrays = [pa.array(cols[f.name], type=f.type) for f in schema]
        out = pa.RecordBatch.from_arrays(arrays, schema=schema)
        self.clear()
        return out


def read_range(cfg: SourceConfig, r: OffsetRange, schema: Any) -> Iterator[Any]:
    """Yield pyarrow RecordBatches (matching `schema`) with the records of range `r`."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    if r.until_offset <= r.from_offset:
        return
    # Errors a consumer recovers from by itself (reconnects, leader moves): keep polling.
    transient = {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT,
                 KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE}
    consumer = Consumer(dict(cfg.consumer))
    cols = _Columns(cfg.include_headers)
    try:
        next_offset = r.from_offset
        consumer.assign([TopicPartition(r.topic, r.partition, next_offset)])
        last_progress = time.monotonic()
        while next_offset < r.until_offset:
            msgs = consumer.consume(num_messages=min(r.until_offset - next_offset, BATCH_ROWS), timeout=POLL_S)
            done = False
            for m in msgs:
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        eof_at = m.offset()
                        if eof_at is not None and eof_at >= r.until_offset:
                            done = True
                        continue
                    if err.code() == KafkaError._AUTO_OFFSET_RESET or err.code() == KafkaError.OFFSET_OUT_OF_RANGE:
                        resume = _out_of_range(consumer, r, next_offset, cfg.fail_on_data_loss)
                        if resume is None:
                            done = True
                            break
                        next_offset = resume
                        consumer.assign([TopicPartition(r.topic, r.partition, next_offset)])
                        last_progress = time.monotonic()
                        break
                    if err.retriable() or err.code() in transient:
                        continue  # bounded by the poll timeout below
                    raise RuntimeError(f"Kafka error reading {r.topic}-{r.partition} at offset {next_offset}: {err}")
                off = m.offset()
                if off is None:
                    continue  # only error events lack an offset, and those were handled above
                if off >= r.until_offset:
                    done = True
                    break
                if off < next_offset:
                    continue  # already read (a re-delivery after a seek)
                cols.add(m)
                next_offset = off + 1
                last_progress = time.monotonic()
                if len(cols) >= BATCH_ROWS:
                    yield cols.batch(schema, r.topic, r.partition)
            if done:
                break
            if time.monotonic() - last_progress > cfg.poll_timeout_ms / 1000:
                raise TimeoutError(f"Cannot fetch record for offset {next_offset} of {r.topic}-{r.partition} "
                                   f"in {cfg.poll_timeout_ms} milliseconds")
        if len(cols):
            yield cols.batch(schema, r.topic, r.partition)
    finally:
        consumer.close()


def _out_of_range(consumer: Any, r: OffsetRange, next_offset: int, fail: bool) -> int | None:
    """The offset to go on from after `next_offset` turned out not to exist, or None to stop."""
    from confluent_kafka import TopicPartition

    low, high = consumer.get_watermark_offsets(TopicPartition(r.topic, r.partition), timeout=30.0)
    if next_offset < low:
        report_data_loss(f"Cannot fetch offset {next_offset} of {r.topic}-{r.partition}: the earliest "
                         f"available offset is {low}", fail)
        return low if low < r.until_offset else None
    report_data_loss(f"Cannot fetch offset {next_offset} of {r.topic}-{r.partition}: the partition ends "
                     f"at {high}", fail)
    return None
