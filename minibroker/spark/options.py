"""The options of Spark's Kafka source and sink, parsed the way Spark parses them.

Spark's `KafkaSourceProvider` defines the option names, their defaults and the checks that fail a
query before it starts; this module gives the same names the same meaning so a pipeline moves
between `format("kafka")` and our format by changing one word. Everything here is pure: it takes
a case-insensitive mapping of option strings and returns plain values, or raises `ValueError`
with the message Spark's `IllegalArgumentException` would carry.

Offsets and partitions use one vocabulary throughout the package:
  TopicPartition = (topic, partition) and a "partition offset map" is dict[TopicPartition, int];
  -2 means earliest and -1 latest, as in Spark's JSON (`KafkaOffsetRangeLimit.EARLIEST/LATEST`).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

TopicPartition = tuple[str, int]

FORMAT = "minikafka"  # the data source's name in spark.read.format(...)

EARLIEST = -2
LATEST = -1

# Option names as Spark spells them; lookups are case-insensitive (Spark's CaseInsensitiveMap).
BOOTSTRAP = "kafka.bootstrap.servers"
SUBSCRIBE, SUBSCRIBE_PATTERN, ASSIGN = "subscribe", "subscribePattern", "assign"
STRATEGY_KEYS = (SUBSCRIBE, SUBSCRIBE_PATTERN, ASSIGN)
STARTING_OFFSETS, ENDING_OFFSETS = "startingOffsets", "endingOffsets"
STARTING_BY_TIMESTAMP, ENDING_BY_TIMESTAMP = "startingOffsetsByTimestamp", "endingOffsetsByTimestamp"
STARTING_TIMESTAMP, ENDING_TIMESTAMP = "startingTimestamp", "endingTimestamp"
STARTING_BY_TIMESTAMP_STRATEGY = "startingOffsetsByTimestampStrategy"
FAIL_ON_DATA_LOSS = "failOnDataLoss"
MIN_PARTITIONS = "minPartitions"
MAX_OFFSETS_PER_TRIGGER = "maxOffsetsPerTrigger"
INCLUDE_HEADERS = "includeHeaders"
POLL_TIMEOUT_MS = "kafkaConsumer.pollTimeoutMs"
GROUP_ID_PREFIX = "groupIdPrefix"
TOPIC = "topic"

# Spark's default poll timeout is spark.network.timeout (120 s).
DEFAULT_POLL_TIMEOUT_MS = 120_000

# Topics Kafka keeps for itself; Spark's pattern subscription lists topics without them
# (Admin.listTopics() leaves internal topics out by default).
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


class CaseInsensitiveOptions(Mapping[str, str]):
    """Read-only view of options that finds `startingOffsets` under any spelling.

    Spark hands Python data sources a case-insensitive dict; `dict(options)` would lower-case the
    keys, so this keeps lookups case-insensitive without losing that property in copies.
    """

    def __init__(self, options: Mapping[str, str] | None = None):
        self._items: dict[str, tuple[str, str]] = {}
        for k, v in (options or {}).items():
            self._items[k.lower()] = (k, str(v))

    def __getitem__(self, key: str) -> str:
        return self._items[key.lower()][1]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def get_bool(self, key: str, default: bool) -> bool:
        if key not in self:
            return default
        v = self[key].strip().lower()
        if v not in ("true", "false"):
            raise ValueError(f"Option '{key}' must be 'true' or 'false', got '{self[key]}'")
        return v == "true"

    def get_int(self, key: str) -> int | None:
        if key not in self:
            return None
        try:
            return int(self[key].strip())
        except ValueError:
            raise ValueError(f"Option '{key}' must be an integer, got '{self[key]}'") from None

    def with_prefix(self, prefix: str) -> dict[str, str]:
        """Options whose key starts with `prefix` (any case), with the prefix removed."""
        n = len(prefix)
        return {orig[n:]: v for low, (orig, v) in self._items.items() if low.startswith(prefix.lower())}


# ---- which partitions: subscribe / subscribePattern / assign (Spark's ConsumerStrategy) ----

@dataclass(frozen=True)
class Subscribe:
    topics: tuple[str, ...]

    def select(self, cluster: Mapping[str, int]) -> list[TopicPartition]:
        return [(t, p) for t in self.topics if t in cluster for p in range(cluster[t])]


@dataclass(frozen=True)
class SubscribePattern:
    pattern: str

    def select(self, cluster: Mapping[str, int]) -> list[TopicPartition]:
        # Java's Pattern.matcher(topic).matches() is a whole-string match.
        rx = re.compile(self.pattern)
        return [(t, p) for t in sorted(cluster) if t not in INTERNAL_TOPICS and rx.fullmatch(t)
                for p in range(cluster[t])]


@dataclass(frozen=True)
class Assign:
    partitions: tuple[TopicPartition, ...]

    def select(self, cluster: Mapping[str, int]) -> list[TopicPartition]:
        # Spark's AssignStrategy returns the partitions as given, existing or not.
        return list(self.partitions)


Strategy = Subscribe | SubscribePattern | Assign


def parse_strategy(opts: CaseInsensitiveOptions) -> Strategy:
    given = [k for k in STRATEGY_KEYS if k in opts]
    if not given:
        raise ValueError("One of the following options must be specified for Kafka source: "
                         "subscribe, subscribepattern, assign. See the docs for more details.")
    if len(given) > 1:
        raise ValueError("Only one of the following options can be specified for Kafka source: "
                         "subscribe, subscribepattern, assign. See the docs for more details.")
    key, value = given[0], opts[given[0]]
    if key == SUBSCRIBE:
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise ValueError(f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'")
        return Subscribe(topics)
    if key == SUBSCRIBE_PATTERN:
        if not value.strip():
            raise ValueError("Pattern to subscribe is empty as specified value for option "
                             f"'subscribePattern' is '{value}'")
        try:
            re.compile(value.strip())
        except re.error as e:
            raise ValueError(f"Invalid subscribePattern '{value}': {e}") from None
        return SubscribePattern(value.strip())
    if not value.strip().startswith("{"):
        raise ValueError(f"No topicpartitions to assign as specified value for option 'assign' is '{value}'")
    return Assign(tuple(parse_partitions_json(value)))


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        obj = None
    if not isinstance(obj, dict):
        raise ValueError(f"Expected e.g. {what}, got {text}")
    return obj


def parse_partitions_json(text: str) -> list[TopicPartition]:
    """`{"topicA":[0,1],"topicB":[2,4]}` (Spark's JsonUtils.partitions)."""
    obj = _json_object(text, '{"topicA":[0,1],"topicB":[0,1]}')
    out: list[TopicPartition] = []
    for topic, parts in obj.items():
        if not isinstance(parts, list) or not all(isinstance(p, int) for p in parts):
            raise ValueError(f'Expected e.g. {{"topicA":[0,1],"topicB":[0,1]}}, got {text}')
        out.extend((topic, p) for p in parts)
    return out


def parse_partition_offsets_json(text: str) -> dict[TopicPartition, int]:
    """`{"topicA":{"0":23,"1":-1}}` (Spark's JsonUtils.partitionOffsets); also timestamps."""
    example = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
    obj = _json_object(text, example)
    out: dict[TopicPartition, int] = {}
    for topic, parts in obj.items():
        if not isinstance(parts, dict):
            raise ValueError(f"Expected e.g. {example}, got {text}")
        for p, off in parts.items():
            try:
                out[(topic, int(p))] = int(off)
            except (TypeError, ValueError):
                raise ValueError(f"Expected e.g. {example}, got {text}") from None
    return out


# ---- where to start / end (Spark's KafkaOffsetRangeLimit) ----

@dataclass(frozen=True)
class EarliestLimit:
    pass


@dataclass(frozen=True)
class LatestLimit:
    pass


@dataclass(frozen=True)
class SpecificOffsets:
    offsets: dict[TopicPartition, int]


@dataclass(frozen=True)
class SpecificTimestamps:
    timestamps: dict[TopicPartition, int]
    latest_if_no_match: bool  # startingOffsetsByTimestampStrategy=latest


@dataclass(frozen=True)
class GlobalTimestamp:
    timestamp: int
    latest_if_no_match: bool


OffsetLimit = EarliestLimit | LatestLimit | SpecificOffsets | SpecificTimestamps | GlobalTimestamp


def parse_offset_limit(opts: CaseInsensitiveOptions, timestamp_key: str, by_timestamp_key: str,
                       offsets_key: str, default: OffsetLimit) -> OffsetLimit:
    """One end of the range, by Spark's order of preference: the global timestamp, the timestamps
    per partition, then startingOffsets/endingOffsets, then the default."""
    strategy = opts.get(STARTING_BY_TIMESTAMP_STRATEGY, "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise ValueError(f"{STARTING_BY_TIMESTAMP_STRATEGY} must be 'error' or 'latest', got '{strategy}'")
    latest_if_no_match = strategy == "latest"
    if timestamp_key in opts:
        ts = opts[timestamp_key].strip()
        try:
            return GlobalTimestamp(int(ts), latest_if_no_match)
        except ValueError:
            raise ValueError(f"Expected a single long value, got {ts}") from None
    if by_timestamp_key in opts:
        return SpecificTimestamps(parse_partition_offsets_json(opts[by_timestamp_key].strip()),
                                  latest_if_no_match)
    if offsets_key in opts:
        v = opts[offsets_key].strip()
        if v.lower() == "latest":
            return LatestLimit()
        if v.lower() == "earliest":
            return EarliestLimit()
        return SpecificOffsets(parse_partition_offsets_json(v))
    return default


# ---- the whole source configuration ----

@dataclass(frozen=True)
class SourceConfig:
    """Everything a reader needs, parsed once on the driver and pickled to the workers."""

    strategy: Strategy
    starting: OffsetLimit
    ending: OffsetLimit | None  # None for streaming
    fail_on_data_loss: bool
    include_headers: bool
    min_partitions: int | None
    max_offsets_per_trigger: int | None
    poll_timeout_ms: int
    consumer: dict[str, str]  # librdkafka settings for the workers' consumers
    admin: dict[str, str]  # librdkafka settings for the driver's offset look-ups


_UNSUPPORTED_CONSUMER_KEYS = {
    "auto.offset.reset": (
        "Kafka option 'auto.offset.reset' is not supported. Instead set the source option "
        "'startingOffsets' to 'earliest' or 'latest' to specify where to start."),
    "key.deserializer": (
        "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte arrays. "
        "Use DataFrame operations to explicitly deserialize the keys."),
    "value.deserializer": (
        "Kafka option 'value.deserializer' is not supported as values are deserialized as byte "
        "arrays. Use DataFrame operations to explicitly deserialize the values."),
    "enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported",
    "interceptor.classes": "Kafka option 'interceptor.classes' is not supported",
}


def _kafka_params(opts: CaseInsensitiveOptions) -> dict[str, str]:
    if BOOTSTRAP not in opts:
        raise ValueError(f"Option '{BOOTSTRAP}' must be specified for configuring Kafka consumer")
    return {k.lower(): v for k, v in opts.with_prefix("kafka.").items()}


def source_config(options: Mapping[str, str], *, streaming: bool) -> SourceConfig:
    """Parse and check the read options (Spark's validateBatchOptions / validateStreamOptions)."""
    opts = options if isinstance(options, CaseInsensitiveOptions) else CaseInsensitiveOptions(options)
    if streaming:
        if ENDING_OFFSETS in opts:
            raise ValueError("ending offset not valid in streaming queries")
        if ENDING_BY_TIMESTAMP in opts:
            raise ValueError("ending timestamp not valid in streaming queries")
    strategy = parse_strategy(opts)
    min_partitions = opts.get_int(MIN_PARTITIONS)
    if min_partitions is not None and min_partitions <= 0:
        raise ValueError("minPartitions must be positive")
    max_per_trigger = opts.get_int(MAX_OFFSETS_PER_TRIGGER)
    if max_per_trigger is not None and max_per_trigger <= 0:
        raise ValueError("maxOffsetsPerTrigger must be positive")
    params = _kafka_params(opts)
    for key, message in _UNSUPPORTED_CONSUMER_KEYS.items():
        if key in params:
            raise ValueError(message)

    starting = parse_offset_limit(opts, STARTING_TIMESTAMP, STARTING_BY_TIMESTAMP, STARTING_OFFSETS,
                                  LatestLimit() if streaming else EarliestLimit())
    ending: OffsetLimit | None = None
    if not streaming:
        ending = parse_offset_limit(opts, ENDING_TIMESTAMP, ENDING_BY_TIMESTAMP, ENDING_OFFSETS,
                                    LatestLimit())
        _check_batch_limits(starting, ending)

    # Each query reads with a group id of its own that never joins or commits (Spark's
    # batchUniqueGroupId / streamingUniqueGroupId); a user-set kafka.group.id wins.
    prefix = opts.get(GROUP_ID_PREFIX, "spark-kafka-source" if streaming else "spark-kafka-relation")
    group_id = params.pop("group.id", None) or f"{prefix}-{uuid.uuid4()}-executor"
    # Spark's consumers use Kafka's Java default read_uncommitted; librdkafka's is read_committed.
    params.setdefault("isolation.level", "read_uncommitted")
    consumer = {
        **params,
        "group.id": group_id,
        "enable.auto.commit": "false",
        "enable.auto.offset.store": "false",
        # Executors do only what the driver planned: a start below the log start offset is data
        # loss, not a silent jump (Spark sets auto.offset.reset=none on executors).
        "auto.offset.reset": "error",
        "enable.partition.eof": "true",
    }
    admin = {k: v for k, v in params.items() if k in _ADMIN_KEYS or k.startswith(_ADMIN_PREFIXES)}
    admin["bootstrap.servers"] = params["bootstrap.servers"]
    return SourceConfig(
        strategy=strategy, starting=starting, ending=ending,
        fail_on_data_loss=opts.get_bool(FAIL_ON_DATA_LOSS, True),
        include_headers=opts.get_bool(INCLUDE_HEADERS, False),
        min_partitions=min_partitions, max_offsets_per_trigger=max_per_trigger if streaming else None,
        poll_timeout_ms=opts.get_int(POLL_TIMEOUT_MS) or DEFAULT_POLL_TIMEOUT_MS,
        consumer=consumer, admin=admin,
    )


# Settings that matter to the driver's AdminClient (connection and security); consumer-only
# settings would only make librdkafka warn there.
_ADMIN_KEYS = {"bootstrap.servers", "client.id", "isolation.level", "socket.timeout.ms",
               "request.timeout.ms", "client.dns.lookup", "broker.address.family"}
_ADMIN_PREFIXES = ("security.", "sasl.", "ssl.", "socket.", "metadata.", "reconnect.", "retry.")


def _check_batch_limits(starting: OffsetLimit, ending: OffsetLimit) -> None:
    if isinstance(starting, LatestLimit):
        raise ValueError("starting offset can't be latest for batch queries on Kafka")
    if isinstance(starting, SpecificOffsets):
        for tp, off in starting.offsets.items():
            if off == LATEST:
                raise ValueError(f"startingOffsets for {_tp_str(tp)} can't be latest for batch queries on Kafka")
    if isinstance(ending, EarliestLimit):
        raise ValueError("ending offset can't be earliest for batch queries on Kafka")
    if isinstance(ending, SpecificOffsets):
        for tp, off in ending.offsets.items():
            if off == EARLIEST:
                raise ValueError(f"ending offset for {_tp_str(tp)} can't be earliest for batch queries on Kafka")
    pairs: list[tuple[dict[TopicPartition, int], dict[TopicPartition, int]]] = []
    if isinstance(starting, SpecificOffsets) and isinstance(ending, SpecificOffsets):
        pairs.append((starting.offsets, ending.offsets))
    if isinstance(starting, SpecificTimestamps) and isinstance(ending, SpecificTimestamps):
        pairs.append((starting.timestamps, ending.timestamps))
    for start, end in pairs:
        if start.keys() != end.keys():
            raise ValueError("Different topic partitions in starting and ending offsets: "
                             f"{sorted(start)} vs {sorted(end)}")
        for tp, s in start.items():
            if s > end[tp] >= 0 and s >= 0:
                raise ValueError(f"The start offset {s} is greater than the end offset {end[tp]} "
                                 f"for {_tp_str(tp)}")


def _tp_str(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


# ---- the sink ----

@dataclass(frozen=True)
class SinkConfig:
    topic: str | None  # the topic option; overrides a topic column (Spark's KafkaWriter)
    producer: dict[str, str]


def sink_config(options: Mapping[str, str]) -> SinkConfig:
    """Parse the write options (Spark's kafkaParamsForProducer)."""
    opts = options if isinstance(options, CaseInsensitiveOptions) else CaseInsensitiveOptions(options)
    params = _kafka_params(opts)
    for key in ("key.serializer", "value.serializer"):
        if key in params:
            raise ValueError(f"Kafka option '{key}' is not supported as "
                             f"{key.split('.')[0]}s are serialized as byte arrays.")
    # Java's default partitioner hashes keys with murmur2; librdkafka's default is CRC32, so a
    # keyed record would land elsewhere than with format("kafka"). Keep Java's placement.
    params.setdefault("partitioner", "murmur2_random")
    # Java producers are idempotent by default (Kafka 3.0+), so Spark's sink is; librdkafka's is
    # not. Like Java (KIP-679), settings that conflict with it leave it off unless asked for.
    conflicts = (params.get("acks", "all").strip().lower() not in ("all", "-1")
                 or params.get("retries", "1").strip() == "0"
                 or int(params.get("max.in.flight.requests.per.connection", "5")) > 5)
    if not conflicts:
        params.setdefault("enable.idempotence", "true")
    topic = opts[TOPIC].strip() if TOPIC in opts else None
    return SinkConfig(topic=topic or None, producer=params)
