"""The data source: Spark's Python Data Source API around the pieces of this package.

    spark.dataSource.register(KafkaDataSource)
    spark.read.format("minikafka").option("kafka.bootstrap.servers", b).option("subscribe", t).load()

Driver: `partitions()` and the stream reader's offset calls look up partitions and offsets
(lookup.py) and plan ranges (offsets.py). Workers: `read()` consumes one range (consume.py),
`write()` produces rows (produce.py). Spark pickles readers and writers to ship them, so they
hold only parsed options; Kafka clients are created inside each call and closed there.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from minibroker.spark import consume, offsets, produce
from minibroker.spark.lookup import OffsetLookup
from minibroker.spark.options import (
    FORMAT,
    INCLUDE_HEADERS,
    CaseInsensitiveOptions,
    SinkConfig,
    SourceConfig,
    sink_config,
    source_config,
)

try:  # 4.2+: read limits and Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow
except ImportError:  # 4.0 / 4.1
    ReadAllAvailable = ReadMaxRows = None  # type: ignore[assignment,misc]
    SupportsTriggerAvailableNow = object  # type: ignore[assignment,misc]

log = logging.getLogger(__name__)

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


def kafka_schema(include_headers: bool) -> StructType:
    """Spark's Kafka source schema (KafkaRecordToRowConverter.kafkaSchema)."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


def _arrow_schema(schema: StructType) -> Any:
    import inspect

    from pyspark.sql.pandas.types import to_arrow_schema

    # The exact Arrow schema Spark checks batches against (plan_data_source_read): timestamps
    # as microseconds in UTC. 4.0/4.1 spell that timestamp_utc=True (the default), later ones
    # timezone="UTC".
    if "timezone" in inspect.signature(to_arrow_schema).parameters:
        return to_arrow_schema(schema, timezone="UTC")
    return to_arrow_schema(schema)


class KafkaInputPartition(InputPartition):
    """One Spark task: records [from_offset, until_offset) of topic-partition."""

    def __init__(self, r: offsets.OffsetRange):
        super().__init__((r.topic, r.partition, r.from_offset, r.until_offset))
        self.range = r


def _check_losses(planned: offsets.Planned, fail: bool) -> None:
    for message in planned.losses:
        consume.report_data_loss(message, fail)


class KafkaDataSource(DataSource):
    """Spark's Kafka source and sink (same columns and options) over confluent-kafka."""

    def __init__(self, options: Any):
        super().__init__(options)
        self.opts = CaseInsensitiveOptions(options)

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        return kafka_schema(self.opts.get_bool(INCLUDE_HEADERS, False))

    def reader(self, schema: StructType) -> DataSourceReader:
        self._check_read_schema(schema)
        return KafkaBatchReader(source_config(self.opts, streaming=False), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        self._check_read_schema(schema)
        return KafkaStreamReader(source_config(self.opts, streaming=True), schema)

    def _check_read_schema(self, schema: StructType) -> None:
        if schema != self.schema():
            raise ValueError("Kafka source has a fixed schema and cannot be set with a custom one")

    def writer(self, schema: StructType, overwrite: bool) -> KafkaBatchWriter:
        if overwrite:
            # Kafka is append-only; Spark's sink refuses Overwrite too.
            raise ValueError("Save mode Overwrite not allowed for Kafka. Allowed save modes are Append "
                             "and ErrorIfExists (the latter is Spark's kafka format only: use append here).")
        cfg = sink_config(self.opts)
        check_write_schema(schema, cfg.topic)
        return KafkaBatchWriter(cfg, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> KafkaStreamWriter:
        cfg = sink_config(self.opts)
        check_write_schema(schema, cfg.topic)
        return KafkaStreamWriter(cfg, schema)


# ---- reading ----

class KafkaBatchReader(DataSourceReader):
    def __init__(self, cfg: SourceConfig, schema: StructType):
        self.cfg = cfg
        self.schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        assert self.cfg.ending is not None
        lookup = OffsetLookup(self.cfg.admin)
        tps = lookup.assigned(self.cfg.strategy)
        start = lookup.resolve(self.cfg.starting, tps, starting=True)
        end = lookup.resolve(self.cfg.ending, tps, starting=False)
        ranges = []
        for tp in sorted(end):
            if start[tp] > end[tp]:
                raise ValueError(f"The start offset {start[tp]} is greater than the end offset {end[tp]} "
                                 f"for {tp[0]}-{tp[1]}")
            ranges.append(offsets.OffsetRange(tp[0], tp[1], start[tp], end[tp]))
        parts = [KafkaInputPartition(r) for r in offsets.split_ranges(ranges, self.cfg.min_partitions)]
        # Spark needs at least one partition to plan a scan; an empty range reads nothing.
        return parts or [KafkaInputPartition(offsets.OffsetRange("", 0, 0, 0))]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, KafkaInputPartition)
        yield from consume.read_range(self.cfg, partition.range, _arrow_schema(self.schema))


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over offsets `{"topic": {"0": next_offset}}`, restartable from the checkpoint.

    Spark keeps the offsets of each micro-batch in the checkpoint's offset log before it reads,
    and on restart replans the last uncommitted batch from the same start/end, so a restart
    neither loses nor repeats records on the read side.
    """

    def __init__(self, cfg: SourceConfig, schema: StructType):
        self.cfg = cfg
        self.schema = schema
        self._lookup: OffsetLookup | None = None
        self._available_now: offsets.PartitionOffsets | None = None
        # The end of the last micro-batch Spark planned: the start of the next one, which
        # Spark 4.0/4.1 do not pass to latestOffset().
        self._planned_end: offsets.PartitionOffsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        # The AdminClient stays in the driver; workers get options only.
        return {**self.__dict__, "_lookup": None}

    @property
    def lookup(self) -> OffsetLookup:
        if self._lookup is None:
            self._lookup = OffsetLookup(self.cfg.admin)
        return self._lookup

    def initialOffset(self) -> dict:
        lk = self.lookup
        start = lk.resolve(self.cfg.starting, lk.assigned(self.cfg.strategy), starting=True)
        return offsets.to_json(start)

    def prepareForTriggerAvailableNow(self) -> None:
        # Fix the target now: records produced after this point belong to the next run.
        lk = self.lookup
        self._available_now = lk.latest(lk.assigned(self.cfg.strategy))

    def getDefaultReadLimit(self) -> Any:
        if self.cfg.max_offsets_per_trigger is not None and ReadMaxRows is not None:
            return ReadMaxRows(self.cfg.max_offsets_per_trigger)
        return ReadAllAvailable() if ReadAllAvailable is not None else None

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        if self._available_now is not None:
            latest = dict(self._available_now)
        else:
            lk = self.lookup
            latest = lk.latest(lk.assigned(self.cfg.strategy))
        if start is None:
            # Spark 4.0/4.1 pass neither start nor limit: cap from the end of the last batch Spark
            # planned. Before any (the first batch of a run) the start is unknown: no cap, since
            # capping from a guess could end below Spark's real start.
            known = self._planned_end
            cap = self.cfg.max_offsets_per_trigger
        else:
            known = offsets.from_json(start)
            cap = limit.max_rows if ReadMaxRows is not None and isinstance(limit, ReadMaxRows) else None
        end = latest
        if cap is not None and known is not None:
            end = offsets.rate_limit(cap, known, latest, self.lookup.earliest)
        return offsets.to_json(end)

    def reportLatestOffset(self) -> dict | None:
        return None

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        self._saw_end(offsets.from_json(end))
        planned = offsets.plan_ranges(offsets.from_json(start), offsets.from_json(end), self.lookup.earliest,
                                      self.cfg.min_partitions)
        _check_losses(planned, self.cfg.fail_on_data_loss)
        return [KafkaInputPartition(r) for r in planned.ranges]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, KafkaInputPartition)
        yield from consume.read_range(self.cfg, partition.range, _arrow_schema(self.schema))

    def commit(self, end: dict) -> None:
        # Offsets live in Spark's checkpoint; nothing is committed to Kafka (as in Spark's source).
        self._saw_end(offsets.from_json(end))

    def _saw_end(self, end: offsets.PartitionOffsets) -> None:
        # Commits trail planning, so keep the furthest end per partition.
        seen = dict(self._planned_end or {})
        for tp, off in end.items():
            seen[tp] = max(off, seen.get(tp, off))
        self._planned_end = seen

    def stop(self) -> None:
        self._lookup = None


# ---- writing ----

def check_write_schema(schema: StructType, topic_option: str | None) -> None:
    """The column checks of Spark's KafkaWriter.validateQuery."""
    types: dict[str, DataType] = {f.name: f.dataType for f in schema.fields}

    def is_string_or_binary(t: DataType) -> bool:
        return isinstance(t, (StringType, BinaryType))

    if topic_option is None:
        if "topic" not in types:
            raise ValueError("topic option required when no 'topic' attribute is present. "
                             "Use the topic option for setting a topic.")
        if not isinstance(types["topic"], StringType):
            raise ValueError("Topic type must be a string")
    if "key" in types and not is_string_or_binary(types["key"]):
        raise ValueError("key attribute type must be a string or binary")
    if "value" not in types:
        raise ValueError("Required attribute 'value' not found")
    if not is_string_or_binary(types["value"]):
        raise ValueError("value attribute type must be a string or binary")
    if "headers" in types and not _headers_type_ok(types["headers"]):
        raise ValueError("headers attribute type must be an array of struct<key: string, value: binary>")
    if "partition" in types and not isinstance(types["partition"], IntegerType):
        raise ValueError("partition attribute type must be an int")


def _headers_type_ok(t: DataType) -> bool:
    if not isinstance(t, ArrayType) or not isinstance(t.elementType, StructType):
        return False
    inner = {f.name: f.dataType for f in t.elementType.fields}
    return (set(inner) == {"key", "value"} and isinstance(inner["key"], StringType)
            and isinstance(inner["value"], BinaryType))


_WRITE_COLUMNS = ("topic", "key", "value", "headers", "partition")


class KafkaCommitMessage(WriterCommitMessage):
    def __init__(self, records: int):
        self.records = records


class KafkaBatchWriter(DataSourceArrowWriter):
    def __init__(self, cfg: SinkConfig, schema: StructType):
        self.cfg = cfg
        self.columns = [c for c in _WRITE_COLUMNS if c in schema.fieldNames()]

    def write(self, iterator: Iterator[Any]) -> KafkaCommitMessage:
        def records() -> Iterator[produce.Record]:
            for batch in iterator:
                cols = batch.select(self.columns).to_pydict()
                yield from produce.records_from_columns(cols, batch.num_rows, self.cfg.topic)

        return KafkaCommitMessage(produce.produce_all(self.cfg, records()))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        total = sum(m.records for m in messages if isinstance(m, KafkaCommitMessage))
        log.info("wrote %d records to Kafka", total)


class KafkaStreamWriter(DataSourceStreamWriter):
    """Each micro-batch's rows produced at least once (Spark's Kafka sink guarantees the same)."""

    def __init__(self, cfg: SinkConfig, schema: StructType):
        self.cfg = cfg
        self.columns = [c for c in _WRITE_COLUMNS if c in schema.fieldNames()]

    def write(self, iterator: Iterator[Any]) -> KafkaCommitMessage:
        def records() -> Iterator[produce.Record]:
            for row in iterator:
                cols = {c: [_plain(row[c])] for c in self.columns}
                yield from produce.records_from_columns(cols, 1, self.cfg.topic)

        return KafkaCommitMessage(produce.produce_all(self.cfg, records()))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass


def _plain(v: Any) -> Any:
    """Row values as produce() takes them: bytearray → bytes, header Rows → dicts."""
    if isinstance(v, bytearray):
        return bytes(v)
    if isinstance(v, list):
        return [{"key": h["key"], "value": _plain(h["value"])} for h in v]
    return v
