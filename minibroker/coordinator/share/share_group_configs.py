"""The share.* and errors.deadletterqueue.* keys of GROUP config resources (Kafka 4.4's GroupConfig).

Each key maps to the broker key giving its default (Kafka's ALL_GROUP_CONFIG_SYNONYMS) or to None
when the default is the group key's own (GROUP_DEFAULTS). Values are checked as Kafka's
GroupConfig.validate checks them: a type, the bounds the broker allows a group
(`group.share.{min,max}.*`), and KIP-1191's rule that a dead-letter queue topic name never starts
with `__`. KIP-1240 made the record-lock limit and the assignment interval group configs too, and
KIP-1222 the switch for the RENEW acknowledgement.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from minibroker.config import BrokerConfig
from minibroker_protocol.errors import ErrorCode, KafkaError

AUTO_OFFSET_RESET = "share.auto.offset.reset"
ISOLATION_LEVEL = "share.isolation.level"
RECORD_LOCK_DURATION_MS = "share.record.lock.duration.ms"
DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
PARTITION_MAX_RECORD_LOCKS = "share.partition.max.record.locks"
ASSIGNMENT_INTERVAL_MS = "share.assignment.interval.ms"
RENEW_ACKNOWLEDGE_ENABLE = "share.renew.acknowledge.enable"
DLQ_TOPIC_NAME = "errors.deadletterqueue.topic.name"
DLQ_COPY_RECORD_ENABLE = "errors.deadletterqueue.copy.record.enable"

# group key -> the broker key giving its default (None: GROUP_DEFAULTS has it)
GROUP_KEYS: dict[str, str | None] = {
    AUTO_OFFSET_RESET: None,
    ISOLATION_LEVEL: None,
    RECORD_LOCK_DURATION_MS: "group.share.record.lock.duration.ms",
    "share.session.timeout.ms": "group.share.session.timeout.ms",
    "share.heartbeat.interval.ms": "group.share.heartbeat.interval.ms",
    DELIVERY_COUNT_LIMIT: "group.share.delivery.count.limit",
    PARTITION_MAX_RECORD_LOCKS: "group.share.partition.max.record.locks",
    ASSIGNMENT_INTERVAL_MS: "group.share.assignment.interval.ms",
    RENEW_ACKNOWLEDGE_ENABLE: None,
    DLQ_TOPIC_NAME: None,
    DLQ_COPY_RECORD_ENABLE: None,
}
GROUP_DEFAULTS = {AUTO_OFFSET_RESET: "latest", ISOLATION_LEVEL: "read_uncommitted",
                  RENEW_ACKNOWLEDGE_ENABLE: "true", DLQ_TOPIC_NAME: "", DLQ_COPY_RECORD_ENABLE: "false"}
STRING_KEYS = frozenset({AUTO_OFFSET_RESET, ISOLATION_LEVEL, DLQ_TOPIC_NAME})
BOOLEAN_KEYS = frozenset({RENEW_ACKNOWLEDGE_ENABLE, DLQ_COPY_RECORD_ENABLE})

# Kafka's broker bounds of the group values it has no broker key for here
# (group.share.{min,max}.partition.max.record.locks, group.share.{min,max}.assignment.interval.ms)
_FIXED_BOUNDS = {DELIVERY_COUNT_LIMIT: (2, 10), PARTITION_MAX_RECORD_LOCKS: (100, 4000),
                 ASSIGNMENT_INTERVAL_MS: (0, 15000)}
# GroupConfig's ConfigDef Range.atLeast of the INT keys
_AT_LEAST = {RECORD_LOCK_DURATION_MS: 1000, DELIVERY_COUNT_LIMIT: 2, PARTITION_MAX_RECORD_LOCKS: 100,
             ASSIGNMENT_INTERVAL_MS: 0}
_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


def parse_duration_ms(text: str) -> int:
    """An ISO-8601 duration (Java's Duration.parse subset: PnDTnHnMn.nS) in milliseconds."""
    m = _DURATION.match(text.strip().upper())
    if m is None or text.strip().upper() in ("P", "PT"):
        raise ValueError(f"not an ISO-8601 duration: {text}")
    d, h, mi, s = (m.group(i) for i in range(1, 5))
    return int(((int(d or 0) * 24 + int(h or 0)) * 60 + int(mi or 0)) * 60_000 + float(s or 0) * 1000)


def config_value(own: dict[str, str], broker: BrokerConfig, name: str) -> str:
    """A group's value of `name`: its own (`own`), else the broker key's, else Kafka's default."""
    value = own.get(name)
    if value is not None:
        return value
    broker_key = GROUP_KEYS[name]
    return str(broker.get(broker_key)) if broker_key else GROUP_DEFAULTS[name]


def store_group_configs(path: Path, configs: dict[str, dict[str, str]]) -> None:
    """Every group's own values, written whole (a crash leaves the old file or the new one)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(configs, sort_keys=True))
    tmp.replace(path)


def parse_bool(value: str) -> bool:
    return value.strip().lower() == "true"


def validate_group_config(name: str, value: str | None, broker: BrokerConfig) -> None:
    """Kafka's GroupConfig validation for the share keys we serve (INVALID_CONFIG on failure)."""
    if name not in GROUP_KEYS:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {name}")
    if value is None:
        return
    if name == AUTO_OFFSET_RESET:
        # Kafka 4.4's ShareGroupAutoOffsetResetStrategy.Validator: one message for any value it cannot parse
        v = value.strip().lower()
        try:
            if v not in ("earliest", "latest"):
                if not v.startswith("by_duration:"):
                    raise ValueError(value)
                parse_duration_ms(value.split(":", 1)[1])
        except ValueError:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {name}: Invalid value "
                             f"`{value}` for configuration {name}. The value must be either 'earliest', 'latest' or "
                             "of the format 'by_duration:<PnDTnHnMn.nS>'.") from None
        return
    if name == ISOLATION_LEVEL:
        if value.strip().lower() not in ("read_committed", "read_uncommitted"):
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {name}: "
                             "String must be one of: read_committed, read_uncommitted")
        return
    if name == DLQ_TOPIC_NAME:
        if value.startswith("__"):  # KIP-1191: never an internal topic
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"{name}: DLQ topic name must not start with '__'")
        return
    if name in BOOLEAN_KEYS:
        if value.strip().lower() not in ("true", "false"):
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {name}: "
                             "Expected value to be either true or false")
        return
    try:
        n = int(value)
    except ValueError:
        raise KafkaError(ErrorCode.INVALID_CONFIG,
                         f"Invalid value {value} for configuration {name}: Not a number of type INT") from None
    least = _AT_LEAST.get(name, 1)  # GroupConfig's ConfigDef checks this first, with its own words
    if n < least:
        raise KafkaError(ErrorCode.INVALID_CONFIG,
                         f"Invalid value {value} for configuration {name}: Value must be at least {least}")
    bounds = {
        RECORD_LOCK_DURATION_MS: (broker.get("group.share.min.record.lock.duration.ms"),
                                  broker.get("group.share.max.record.lock.duration.ms")),
        **_FIXED_BOUNDS,
    }.get(name, (1, 1 << 31))
    if not bounds[0] <= n <= bounds[1]:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"{name} must be in the range {bounds[0]} to {bounds[1]} inclusive.")  # validateIntRange
