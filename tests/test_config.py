"""minibroker.config: Kafka's keys, parsing, validation messages, synonyms and DescribeConfigs output."""

from __future__ import annotations

import dataclasses
import logging
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minibroker.config import (
    BROKER_CONFIGS,
    LONG_MAX,
    TOPIC_CONFIGS,
    BrokerConfig,
    ConfigError,
    ConfigSource,
    ConfigType,
    OpType,
    apply_incremental_ops,
    describe_broker_config,
    describe_topic_config,
    effective_topic_config,
    format_value,
    generate_cluster_id,
    parse_listeners,
    parse_value,
    record_version_for,
    to_log_config,
    validate_topic_config,
)
from minibroker.config.definitions import _java_double
from minibroker.config.kafka_dynamic import KAFKA_DYNAMIC_BROKER_KEYS
from minibroker.config.keys import KAFKA_KEYS_WITHOUT_EFFECT, UNDESCRIBED_BROKER_KEYS
from minibroker_protocol.errors import ErrorCode
from minibroker_storage.config import LogConfig

REPO = Path(__file__).resolve().parents[1]
WEEK_MS = 7 * 24 * 3600 * 1000
DEFAULT = int(ConfigSource.DEFAULT_CONFIG)
STATIC = int(ConfigSource.STATIC_BROKER_CONFIG)
TOPIC = int(ConfigSource.DYNAMIC_TOPIC_CONFIG)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "broker.yaml"
    path.write_text(text)
    return path


def by_name(entries):
    return {e.name: e for e in entries}


# --------------------------------------------------------------------------- tables


def test_every_default_passes_its_own_validator_and_type():
    for key in [*BROKER_CONFIGS.values(), *TOPIC_CONFIGS.values()]:
        if key.default is None:
            continue
        assert parse_value(key, key.default) == key.default, key.name
        # The default also survives the text round trip Kafka's persistence and DescribeConfigs use.
        assert parse_value(key, format_value(key, key.default)) == key.default, key.name


def test_topic_keys_cover_kafka_topic_config():
    expected = {
        "cleanup.policy", "compression.type", "compression.gzip.level", "compression.lz4.level",
        "compression.zstd.level", "delete.retention.ms", "errors.deadletterqueue.group.enable",  # KIP-1191
        "file.delete.delay.ms", "flush.messages", "flush.ms",
        "follower.replication.throttled.replicas", "index.interval.bytes", "leader.replication.throttled.replicas",
        "local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms", "max.message.bytes",
        "message.downconversion.enable", "message.format.version", "message.timestamp.after.max.ms",
        "message.timestamp.before.max.ms", "message.timestamp.difference.max.ms", "message.timestamp.type",
        "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas", "preallocate",
        "remote.log.copy.disable", "remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes",
        "retention.ms", "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
        "unclean.leader.election.enable",
        # Confluent Server's broker-side schema validation (minibroker.schema_registry.validation)
        "confluent.key.schema.validation", "confluent.value.schema.validation",
    }
    assert set(TOPIC_CONFIGS) == expected
    for key in TOPIC_CONFIGS.values():
        assert key.scope == "topic" and not key.read_only and key.doc
        for synonym in key.synonyms:
            assert synonym in BROKER_CONFIGS, (key.name, synonym)


def test_broker_keys_from_the_brief_exist():
    for name in (
        "node.id broker.id listeners advertised.listeners log.dirs log.dir num.partitions default.replication.factor "
        "auto.create.topics.enable log.segment.bytes log.roll.ms log.roll.hours log.retention.ms "
        "log.retention.minutes log.retention.hours log.retention.bytes log.retention.check.interval.ms "
        "log.index.size.max.bytes log.index.interval.bytes log.flush.interval.messages log.flush.interval.ms "
        "log.flush.scheduler.interval.ms log.flush.offset.checkpoint.interval.ms log.cleanup.policy "
        "log.cleaner.enable log.cleaner.min.cleanable.ratio log.cleaner.delete.retention.ms "
        "log.cleaner.min.compaction.lag.ms log.message.timestamp.type log.segment.delete.delay.ms "
        "message.max.bytes socket.request.max.bytes queued.max.requests compression.type min.insync.replicas "
        "delete.topic.enable offsets.topic.num.partitions offsets.topic.replication.factor "
        "offsets.retention.minutes offsets.retention.check.interval.ms offsets.commit.timeout.ms "
        "group.initial.rebalance.delay.ms group.min.session.timeout.ms group.max.session.timeout.ms "
        "group.max.size transaction.state.log.num.partitions transactional.id.expiration.ms "
        "transaction.max.timeout.ms transaction.abort.timed.out.transaction.cleanup.interval.ms "
        "producer.id.expiration.ms max.incremental.fetch.session.cache.slots fetch.max.bytes "
        "replica.lag.time.max.ms log.message.format.version connections.max.idle.ms cluster.id"
    ).split():
        assert name in BROKER_CONFIGS, name
        assert BROKER_CONFIGS[name].doc


def test_keys_without_effect_say_so_in_their_doc():
    """DescribeConfigs hands each key's doc to clients: a key minibroker accepts but does not act on
    says so, in one phrase, and the keys that work do not."""
    no_effect = {
        "broker": "num.network.threads num.io.threads num.recovery.threads.per.data.dir "
                  "log.flush.start.offset.checkpoint.interval.ms log.preallocate log.cleaner.threads "
                  "compression.gzip.level compression.lz4.level compression.zstd.level fetch.max.bytes "
                  "offsets.commit.timeout.ms unclean.leader.election.enable "
                  "log.local.retention.ms log.local.retention.bytes ssl.protocol ssl.endpoint.identification.algorithm "
                  "group.consumer.assignment.interval.ms leader.imbalance.per.broker.percentage",
        "topic": "compression.gzip.level compression.lz4.level compression.zstd.level preallocate "
                 "local.retention.bytes local.retention.ms remote.log.copy.disable remote.log.delete.on.disable "
                 "unclean.leader.election.enable",
    }
    for scope, table in (("broker", BROKER_CONFIGS), ("topic", TOPIC_CONFIGS)):
        expected = set(no_effect[scope].split())
        if scope == "broker":  # Kafka's dynamic keys minibroker only stores (config/kafka_dynamic.py)
            expected |= KAFKA_KEYS_WITHOUT_EFFECT
            assert KAFKA_KEYS_WITHOUT_EFFECT <= {row[0] for row in KAFKA_DYNAMIC_BROKER_KEYS}
        said = {name for name, key in table.items() if "no effect" in key.doc.lower()}
        assert said == expected, scope
        assert all("Accepted, no effect here: " in table[name].doc for name in said)
    for name in ("socket.listen.backlog.size", "connections.max.idle.ms", "queued.max.requests",
                 "queued.max.request.bytes", "max.connections", "max.connections.per.ip",
                 "max.connections.per.ip.overrides", "max.connection.creation.rate", "quota.window.num",
                 "quota.window.size.seconds", "socket.request.read.timeout.ms", "replica.lag.time.max.ms"):
        assert "no effect" not in BROKER_CONFIGS[name].doc.lower()
    assert (BROKER_CONFIGS["socket.listen.backlog.size"].default, BROKER_CONFIGS["connections.max.idle.ms"].default) \
        == (50, 600000)


# --------------------------------------------------------------------------- defaults


def test_defaults_without_a_file():
    b = BrokerConfig.load()
    assert b.node_id == 1 and b.get("broker.id") == 1
    assert (b.listener_host, b.listener_port) == ("127.0.0.1", 9092)
    assert (b.advertised_host, b.advertised_port) == ("127.0.0.1", 9092)
    assert b.get("advertised.listeners") is None
    assert b.data_dir == Path("data")
    # Kafka's defaults
    assert b.get("log.segment.bytes") == 1024**3
    assert b.get("log.retention.hours") == 168 and b.get("log.retention.ms") is None
    assert b.get("message.max.bytes") == 1048588
    assert b.get("socket.request.max.bytes") == 100 * 1024 * 1024
    assert b.get("offsets.topic.num.partitions") == 50
    assert b.get("log.cleanup.policy") == ["delete"]
    assert b.get("log.flush.interval.messages") == LONG_MAX
    # documented dev defaults
    assert b.get("group.initial.rebalance.delay.ms") == 0
    assert b.get("offsets.topic.replication.factor") == 1
    for name in BROKER_CONFIGS:
        assert b.source(name) == "DEFAULT_CONFIG"
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", b.cluster_id)


def test_topic_defaults_come_from_broker_defaults():
    d = BrokerConfig.load().topic_defaults()
    assert d["retention.ms"] == WEEK_MS
    assert d["segment.ms"] == WEEK_MS
    assert d["segment.bytes"] == 1024**3
    assert d["flush.ms"] == LONG_MAX  # log.flush.interval.ms unset -> log.flush.scheduler.interval.ms
    assert d["max.message.bytes"] == 1048588
    assert d["cleanup.policy"] == ["delete"]
    assert d["message.timestamp.type"] == "CreateTime"
    assert d["preallocate"] is False and d["message.downconversion.enable"] is True
    assert d["remote.storage.enable"] is False


def test_cluster_id_configured_or_generated():
    assert BrokerConfig.from_props({"cluster.id": "abc"}).cluster_id == "abc"
    ids = {generate_cluster_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)


# --------------------------------------------------------------------------- loading and precedence


def test_yaml_flat_and_nested_keys(tmp_path):
    path = write(tmp_path, "num.partitions: 3\nlog:\n  retention:\n    hours: 2\n  dirs: /var/mb\n")
    b = BrokerConfig.load(path)
    assert b.get("num.partitions") == 3
    assert b.get("log.retention.hours") == 2
    assert b.data_dir == Path("/var/mb")
    assert b.source("num.partitions") == "STATIC_BROKER_CONFIG"
    assert b.source("log.segment.bytes") == "DEFAULT_CONFIG"


def test_yaml_then_flags_then_overrides(tmp_path):
    path = write(tmp_path, "num.partitions: 3\nlog.dirs: from-yaml\nlisteners: PLAINTEXT://127.0.0.1:7000\n")
    b = BrokerConfig.load(path, ["num.partitions=5"], port=7001, data_dir="from-flag")
    assert b.get("num.partitions") == 5
    assert b.data_dir == Path("from-flag")
    assert (b.listener_host, b.listener_port) == ("127.0.0.1", 7001)  # host kept from the yaml listener
    b = BrokerConfig.load(path, ["log.dirs=from-override", "listeners=PLAINTEXT://127.0.0.1:7002"],
                          port=7001, data_dir="from-flag")
    assert b.data_dir == Path("from-override") and b.listener_port == 7002
    assert b.source("log.dirs") == "STATIC_BROKER_CONFIG"


def test_yaml_types_are_accepted_like_properties_text(tmp_path):
    path = write(tmp_path, "auto.create.topics.enable: false\nlog.cleanup.policy: [compact, delete]\n"
                           "log.message.format.version: '0.10.0'\nlog.cleaner.min.cleanable.ratio: 1\n"
                           "advertised.listeners:\n")
    b = BrokerConfig.load(path)
    assert b.get("auto.create.topics.enable") is False
    assert b.get("log.cleanup.policy") == ["compact", "delete"]
    assert b.get("log.message.format.version") == "0.10.0"
    assert b.get("log.cleaner.min.cleanable.ratio") == 1.0
    assert b.source("advertised.listeners") == "DEFAULT_CONFIG"  # an empty YAML value leaves the default


def test_host_port_make_listeners_and_advertised_follows():
    b = BrokerConfig.load(host="127.0.0.2", port=19092)
    assert b.get("listeners") == "PLAINTEXT://127.0.0.2:19092"
    assert b.source("listeners") == "STATIC_BROKER_CONFIG"
    assert (b.listener_host, b.listener_port) == ("127.0.0.2", 19092)
    assert (b.advertised_host, b.advertised_port) == ("127.0.0.2", 19092)


def test_explicit_advertised_listeners_win():
    b = BrokerConfig.load(overrides=["advertised.listeners=PLAINTEXT://broker.example:29092"], host="0.0.0.0", port=9092)
    assert (b.listener_host, b.listener_port) == ("0.0.0.0", 9092)
    assert (b.advertised_host, b.advertised_port) == ("broker.example", 29092)


def test_listener_parsing_rules():
    [e] = parse_listeners("plaintext://[::1]:9092")
    assert (e.listener_name, e.host, e.port) == ("PLAINTEXT", "::1", 9092)
    assert str(e) == "PLAINTEXT://[::1]:9092"
    [e] = parse_listeners("PLAINTEXT://:9092")
    assert e.host == ""  # every interface
    b = BrokerConfig.load(overrides=["listeners=INTERNAL://127.0.0.1:0",
                           "listener.security.protocol.map=INTERNAL:PLAINTEXT"])
    assert (b.listener_name, b.listener_port) == ("INTERNAL", 0)
    with pytest.raises(ConfigError, match="Unable to parse 127.0.0.1:9092 to a broker endpoint"):
        BrokerConfig.load(overrides=["listeners=127.0.0.1:9092"])
    with pytest.raises(ConfigError, match="No security protocol defined for listener FOO"):
        BrokerConfig.load(overrides=["listeners=FOO://127.0.0.1:9092"])
    # every security protocol is served since issue 19 part 2 (TLS); the keystore is checked when
    # the server starts (tests/broker/test_tls.py)
    [e] = BrokerConfig.load(overrides=["listeners=SSL://127.0.0.1:9093"]).listener_endpoints
    assert e.security_protocol == "SSL"
    with pytest.raises(ConfigError, match="nonroutable meta-address 0.0.0.0"):
        BrokerConfig.load(overrides=["advertised.listeners=PLAINTEXT://0.0.0.0:9092"])
    with pytest.raises(ConfigError, match="different name"):
        parse_listeners("PLAINTEXT://a:1,PLAINTEXT://b:2")


def test_log_dir_fallback_and_several_dirs():
    assert BrokerConfig.load(overrides=["log.dir=/tmp/x"]).data_dir == Path("/tmp/x")
    assert BrokerConfig.load(overrides=["log.dir=/tmp/x", "log.dirs=/tmp/y"]).data_dir == Path("/tmp/y")
    cfg = BrokerConfig.load(overrides=["log.dirs=/a, /b"])
    assert (cfg.data_dir, cfg.log_dirs) == (Path("/a"), [Path("/a"), Path("/b")])
    with pytest.raises(ConfigError, match="listed once"):
        BrokerConfig.load(overrides=["log.dirs=/a,/b,/a"])


def test_node_id_and_broker_id_follow_each_other():
    assert BrokerConfig.load(overrides=["broker.id=7"]).node_id == 7
    b = BrokerConfig.load(overrides=["node.id=4"])
    assert b.get("broker.id") == 4 and b.source("broker.id") == "STATIC_BROKER_CONFIG"
    with pytest.raises(ConfigError, match="You must set `node.id` to the same value as `broker.id`"):
        BrokerConfig.load(overrides=["node.id=1", "broker.id=2"])


def test_unknown_keys_are_logged_and_ignored(tmp_path, caplog):
    path = write(tmp_path, "zookeeper.connect: localhost:2181\nretention.ms: 5\n")
    with caplog.at_level(logging.WARNING, logger="minibroker.config"):
        b = BrokerConfig.load(path)
    assert b.unknown == {"zookeeper.connect": "localhost:2181", "retention.ms": 5}
    assert "zookeeper.connect" in caplog.text
    assert "log.retention.ms" in caplog.text  # the hint for a topic key
    with pytest.raises(KeyError):
        b.get("zookeeper.connect")


def test_kafkas_internal_keys_are_read_without_a_warning(tmp_path, caplog):
    path = write(tmp_path, "unclean.leader.election.interval.ms: 2000\n")
    with caplog.at_level(logging.WARNING, logger="minibroker.config"):
        b = BrokerConfig.load(path)
    assert b.unknown == {"unclean.leader.election.interval.ms": 2000}  # the controller reads it there
    assert "unclean.leader.election.interval.ms" not in caplog.text


def test_bad_files_and_overrides(tmp_path):
    with pytest.raises(ConfigError, match="Cannot read config file"):
        BrokerConfig.load(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        BrokerConfig.load(write(tmp_path, "a: [unclosed\n"))
    with pytest.raises(ConfigError, match="mapping"):
        BrokerConfig.load(write(tmp_path, "- a\n- b\n"))
    assert BrokerConfig.load(write(tmp_path, "")).get("num.partitions") == 1
    with pytest.raises(ConfigError, match="expected key=value"):
        BrokerConfig.load(overrides=["num.partitions"])


def test_repo_config_yaml_is_the_dev_config(caplog):
    with caplog.at_level(logging.WARNING, logger="minibroker.config"):
        b = BrokerConfig.load(REPO / "config.yaml", host="127.0.0.1", port=9092, data_dir="data")
    assert not caplog.records, caplog.text  # every key in it is one we know
    assert (b.listener_host, b.listener_port, b.data_dir) == ("127.0.0.1", 9092, Path("data"))
    assert b.get("num.partitions") == 1 and b.get("auto.create.topics.enable") is True
    assert b.source("group.initial.rebalance.delay.ms") == "STATIC_BROKER_CONFIG"


# --------------------------------------------------------------------------- validation messages


@pytest.mark.parametrize(("props", "message"), [
    ({"retention.ms": "-5"}, "Invalid value -5 for configuration retention.ms: Value must be at least -1"),
    ({"segment.bytes": "13"}, "Invalid value 13 for configuration segment.bytes: Value must be at least 14"),
    ({"min.cleanable.dirty.ratio": "1.5"},
     "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ({"min.cleanable.dirty.ratio": "-0.1"},
     "Invalid value -0.1 for configuration min.cleanable.dirty.ratio: Value must be at least 0"),
    ({"cleanup.policy": "delete,foo"},
     "Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete"),
    ({"compression.type": "brotli"},
     "Invalid value brotli for configuration compression.type: String must be one of: "
     "uncompressed, zstd, lz4, snappy, gzip, producer"),
    ({"message.timestamp.type": "createtime"},
     "Invalid value createtime for configuration message.timestamp.type: String must be one of: "
     "CreateTime, LogAppendTime"),
    ({"retention.ms": "1h"}, "Invalid value 1h for configuration retention.ms: Not a number of type LONG"),
    ({"segment.bytes": "2147483648"},
     "Invalid value 2147483648 for configuration segment.bytes: Not a number of type INT"),
    ({"preallocate": "yes"}, "Invalid value yes for configuration preallocate: Expected value to be either true or false"),
    ({"message.format.version": "0.7.0"},
     "Invalid value 0.7.0 for configuration message.format.version: Version 0.7.0 is not a valid version"),
    ({"compression.gzip.level": "0"},
     "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"),
    ({"leader.replication.throttled.replicas": "0:1,x"},
     "Invalid value [0:1, x] for configuration leader.replication.throttled.replicas: "
     "leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following "
     "format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."),
    ({"no.such.key": "1"}, "Unknown topic config name: no.such.key"),
    ({"retention.ms": None}, "Null value not supported for topic configs: retention.ms"),
    ({"remote.storage.enable": "true"},
     "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."),
    ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
     "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"),
])
def test_topic_validation_messages(props, message):
    with pytest.raises(ConfigError) as info:
        validate_topic_config(props)
    assert str(info.value) == message
    assert info.value.code == ErrorCode.INVALID_CONFIG


def test_validate_topic_config_parses():
    parsed = validate_topic_config({
        "retention.ms": " -1 ", "cleanup.policy": "compact, delete", "min.cleanable.dirty.ratio": "0.25",
        "preallocate": "TRUE", "leader.replication.throttled.replicas": "*", "message.format.version": "0.10.2",
    })
    assert parsed == {
        "retention.ms": -1, "cleanup.policy": ["compact", "delete"], "min.cleanable.dirty.ratio": 0.25,
        "preallocate": True, "leader.replication.throttled.replicas": ["*"], "message.format.version": "0.10.2",
    }
    assert validate_topic_config({"cleanup.policy": ""}) == {"cleanup.policy": []}


def test_cross_check_uses_broker_defaults():
    broker = BrokerConfig.load(overrides=["log.cleaner.max.compaction.lag.ms=100"])
    with pytest.raises(ConfigError, match=r"min.compaction.lag.ms \(200\) > max.compaction.lag.ms \(100\)"):
        validate_topic_config({"min.compaction.lag.ms": "200"}, broker)
    assert validate_topic_config({"min.compaction.lag.ms": "200"}) == {"min.compaction.lag.ms": 200}


@pytest.mark.parametrize(("override", "message"), [
    ("log.segment.bytes=10", "Invalid value 10 for configuration log.segment.bytes: Value must be at least 14"),
    ("num.partitions=0", "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
    ("log.roll.hours=0", "Invalid value 0 for configuration log.roll.hours: Value must be at least 1"),
    ("log.roll.ms=0", "log.roll.ms must be greater than or equal to 1"),
    ("log.retention.ms=0", "log.retention.ms must be unlimited (-1) or, greater than or equal to 1"),
    ("auto.create.topics.enable=1",
     "Invalid value 1 for configuration auto.create.topics.enable: Expected value to be either true or false"),
    ("offsets.topic.replication.factor=40000",
     "Invalid value 40000 for configuration offsets.topic.replication.factor: Not a number of type SHORT"),
    ("fetch.max.bytes=1000", "Invalid value 1000 for configuration fetch.max.bytes: Value must be at least 1024"),
])
def test_broker_validation_messages(override, message):
    with pytest.raises(ConfigError) as info:
        BrokerConfig.load(overrides=[override])
    assert str(info.value) == message


def test_yaml_value_of_the_wrong_type(tmp_path):
    with pytest.raises(ConfigError, match="num.partitions: Expected value to be a 32-bit integer, but it was a bool"):
        BrokerConfig.load(write(tmp_path, "num.partitions: true\n"))
    with pytest.raises(ConfigError, match="Expected value to be either true or false"):
        BrokerConfig.load(write(tmp_path, "auto.create.topics.enable: 1\n"))


# --------------------------------------------------------------------------- parsing properties


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_long_round_trips_through_text(n):
    key = TOPIC_CONFIGS["retention.bytes"]  # long, no validator
    assert parse_value(key, format_value(key, n)) == n
    assert parse_value(key, f"  {n}\t") == n


@given(st.integers().filter(lambda n: not -(2**31) <= n < 2**31))
def test_int_outside_32_bits_is_refused(n):
    with pytest.raises(ConfigError, match="Not a number of type INT"):
        parse_value(TOPIC_CONFIGS["index.interval.bytes"], str(n))


@given(st.lists(st.sampled_from(["compact", "delete"]), max_size=4))
def test_list_round_trips_through_text(items):
    key = TOPIC_CONFIGS["cleanup.policy"]
    assert parse_value(key, format_value(key, items)) == items
    assert parse_value(key, " , ".join(items)) == items


@given(st.floats(min_value=0, max_value=1))
def test_double_round_trips_through_java_text(x):
    key = TOPIC_CONFIGS["min.cleanable.dirty.ratio"]
    assert parse_value(key, format_value(key, x)) == x


@pytest.mark.parametrize(("x", "text"), [
    (0.5, "0.5"), (1.0, "1.0"), (0.0, "0.0"), (1234567.0, "1234567.0"), (1e7, "1.0E7"), (1e-4, "1.0E-4"),
    (0.001, "0.001"), (1.7976931348623157e308, "1.7976931348623157E308"), (-2.5e-9, "-2.5E-9"),
])
def test_java_double_text(x, text):
    assert _java_double(x) == text


@pytest.mark.parametrize(("version", "magic"), [
    ("0.8.0", 0), ("0.8.2", 0), ("0.9.0", 0), ("0.10.0", 1), ("0.10.0-IV0", 1), ("0.10.2", 1), ("0.10.2-IV0", 1),
    ("0.10.0.1", 1), ("0.11.0", 2), ("0.11.0-IV0", 2), ("2.8.0", 2), ("3.0-IV1", 2), ("4.0", 2),
    ("0.8.2.1", 0), ("0.9.0.1", 0), ("0.11.0.3", 2), ("1.0", 2), ("2.8.1", 2),
])
def test_record_version_for_message_format_version(version, magic):
    assert record_version_for(version) == magic


def test_bare_release_means_its_newest_production_version():
    # "3.3" is 3.3-IV3 (valid) and "4.1" is no release at all.
    validate_topic_config({"message.format.version": "3.3"})
    with pytest.raises(ConfigError, match="Version 4.1 is not a valid version"):
        validate_topic_config({"message.format.version": "4.1"})


# --------------------------------------------------------------------------- synonyms


@pytest.mark.parametrize(("overrides", "retention_ms"), [
    ([], WEEK_MS),
    (["log.retention.hours=1"], 3600 * 1000),
    (["log.retention.hours=1", "log.retention.minutes=2"], 2 * 60 * 1000),
    (["log.retention.hours=1", "log.retention.minutes=2", "log.retention.ms=1234"], 1234),
    (["log.retention.hours=-1"], -1),
    (["log.retention.ms=-7"], -1),  # any negative means forever
])
def test_retention_synonyms(overrides, retention_ms):
    assert BrokerConfig.load(overrides=overrides).topic_defaults()["retention.ms"] == retention_ms


def test_other_unit_synonyms():
    d = BrokerConfig.load(overrides=["log.roll.hours=2", "log.roll.jitter.hours=1",
                                     "log.flush.scheduler.interval.ms=3000"]).topic_defaults()
    assert d["segment.ms"] == 2 * 3600 * 1000
    assert d["segment.jitter.ms"] == 3600 * 1000
    assert d["flush.ms"] == 3000
    d = BrokerConfig.load(overrides=["log.roll.hours=2", "log.roll.ms=500", "log.roll.jitter.ms=7",
                                     "log.flush.interval.ms=40"]).topic_defaults()
    assert (d["segment.ms"], d["segment.jitter.ms"], d["flush.ms"]) == (500, 7, 40)


def test_same_name_and_renamed_synonyms():
    b = BrokerConfig.load(overrides=["message.max.bytes=2000", "log.cleanup.policy=compact",
                                     "log.cleaner.min.cleanable.ratio=0.1", "compression.type=lz4",
                                     "log.segment.delete.delay.ms=5"])
    d = b.topic_defaults()
    assert d["max.message.bytes"] == 2000
    assert d["cleanup.policy"] == ["compact"]
    assert d["min.cleanable.dirty.ratio"] == 0.1
    assert d["compression.type"] == "lz4"
    assert d["file.delete.delay.ms"] == 5


def test_effective_topic_config_overrides_win():
    b = BrokerConfig.load(overrides=["log.retention.hours=1"])
    eff = effective_topic_config(b, {"retention.ms": "1000", "cleanup.policy": ["compact"]})
    assert eff["retention.ms"] == 1000 and eff["cleanup.policy"] == ["compact"]
    assert eff["segment.bytes"] == 1024**3
    assert set(eff) == set(TOPIC_CONFIGS)
    assert effective_topic_config(b, {})["retention.ms"] == 3600 * 1000
    # topic_defaults hands out copies: mutating one does not change the broker's
    eff["cleanup.policy"].append("delete")
    assert b.topic_defaults()["cleanup.policy"] == ["delete"]


def test_to_log_config():
    b = BrokerConfig.load(overrides=["log.segment.bytes=1048576"])
    log_config = to_log_config(effective_topic_config(b, {"message.timestamp.difference.max.ms": "60000",
                                                          "message.timestamp.after.max.ms": "5"}))
    assert (log_config.segment_bytes, log_config.retention_ms) == (1048576, WEEK_MS)
    assert log_config.message_timestamp_before_max_ms == 60000  # the deprecated key fills an unset bound
    assert log_config.message_timestamp_after_max_ms == 5
    assert log_config.cleanup_policy == "delete" and log_config.record_version == 2


def test_to_log_config_defaults_are_storages():
    """The broker's defaults for topic keys are Kafka's, and so are LogConfig's: the same config."""
    assert to_log_config(effective_topic_config(BrokerConfig({}), {})) == LogConfig()


def test_to_log_config_hands_over_every_field():
    """Each LogConfig field follows its topic key: set every broker synonym to a non-default value and
    no field may keep storage's default (a field the broker forgot would silently keep it)."""
    b = BrokerConfig.load(overrides=[
        "log.segment.bytes=1048576", "log.roll.ms=1000", "log.roll.jitter.ms=10", "log.index.size.max.bytes=4096",
        "log.index.interval.bytes=100", "log.retention.ms=2000", "log.retention.bytes=10000",
        "log.flush.interval.messages=1", "log.flush.interval.ms=50", "message.max.bytes=1000",
        "log.message.timestamp.type=LogAppendTime", "log.message.timestamp.before.max.ms=7",
        "log.message.timestamp.after.max.ms=8", "log.segment.delete.delay.ms=9", "log.cleanup.policy=compact",
        "log.cleaner.delete.retention.ms=11", "log.cleaner.min.compaction.lag.ms=12",
        "log.cleaner.max.compaction.lag.ms=13", "log.cleaner.min.cleanable.ratio=0.25",
        "log.message.format.version=0.10.2", "compression.type=lz4",
    ])
    got, default = to_log_config(effective_topic_config(b, {})), LogConfig()
    same = [f.name for f in dataclasses.fields(LogConfig) if getattr(got, f.name) == getattr(default, f.name)]
    assert same == []
    assert got.compact and not got.delete and got.log_append_time and got.record_version == 1


def test_to_log_config_parses_strings_and_values_over_the_broker_defaults():
    b = BrokerConfig.load(overrides=["log.retention.ms=1000"])
    overrides = {"segment.bytes": "1048576", "cleanup.policy": ["compact", "delete"],
                 "message.timestamp.type": "LogAppendTime", "preallocate": "TRUE",
                 "min.cleanable.dirty.ratio": "0.25", "flush.messages": 1,
                 "leader.replication.throttled.replicas": "*"}
    effective = effective_topic_config(b, overrides)
    c = to_log_config(effective)
    assert (c.segment_bytes, c.retention_ms, c.flush_messages) == (1048576, 1000, 1)
    assert c.compact and c.delete and c.log_append_time and effective["preallocate"] is True
    assert c.min_cleanable_dirty_ratio == 0.25
    # written back as Kafka strings (DescribeConfigs, AlterConfigs) and parsed again: the same config
    text = {k: format_value(TOPIC_CONFIGS[k], effective[k]) for k in overrides}
    assert to_log_config(effective_topic_config(b, text)) == c


@pytest.mark.parametrize("props", [
    {"segment.bytes": "13"}, {"retention.ms": "-2"}, {"cleanup.policy": "shred"}, {"segment.ms": "soon"},
    {"message.timestamp.type": "WallClock"}, {"preallocate": "yes"}, {"min.cleanable.dirty.ratio": "2"},
    {"segment.bytes": str(2**31)}, {"no.such.key": "1"},
])
def test_bad_topic_values_are_invalid_config(props):
    for check in (validate_topic_config, lambda p: effective_topic_config(BrokerConfig({}), p)):
        with pytest.raises(ConfigError) as e:
            check(props)
        assert e.value.code == ErrorCode.INVALID_CONFIG


# --------------------------------------------------------------------------- DescribeConfigs


def test_describe_topic_sources_and_synonyms():
    b = BrokerConfig.load(overrides=["log.retention.hours=1"])
    entries = by_name(describe_topic_config(b, {"cleanup.policy": "compact"}))
    assert set(entries) == set(TOPIC_CONFIGS)

    e = entries["cleanup.policy"]  # set on the topic
    assert (e.value, e.source, e.is_default, e.read_only) == ("compact", TOPIC, False, False)
    assert e.synonyms == [("cleanup.policy", "compact", TOPIC), ("log.cleanup.policy", "delete", DEFAULT)]
    assert e.type == ConfigType.LIST and e.doc

    e = entries["retention.ms"]  # from the broker's static log.retention.hours
    assert (e.value, e.source, e.is_default) == ("3600000", STATIC, False)
    # Kafka 4.4 lists the default of the first broker synonym only (log.retention.ms: none);
    # docs/differences.md#retention-synonyms, fixed
    assert e.synonyms == [("log.retention.hours", "1", STATIC)]
    assert e.type == ConfigType.LONG

    e = entries["segment.bytes"]  # pure default
    assert (e.value, e.source, e.is_default) == ("1073741824", DEFAULT, True)
    assert e.synonyms == [("log.segment.bytes", "1073741824", DEFAULT)]
    assert e.type == ConfigType.INT

    e = entries["remote.storage.enable"]  # no broker synonym
    assert (e.value, e.source, e.synonyms, e.type) == ("false", DEFAULT, [], ConfigType.BOOLEAN)
    assert entries["min.cleanable.dirty.ratio"].value == "0.5"
    assert entries["min.cleanable.dirty.ratio"].type == ConfigType.DOUBLE
    assert entries["message.timestamp.type"].type == ConfigType.STRING


def test_describe_broker_sources_and_read_only():
    b = BrokerConfig.load(overrides=["log.retention.hours=1", "num.partitions=3"], host="127.0.0.1", port=9093)
    entries = by_name(describe_broker_config(b))
    assert set(entries) == set(BROKER_CONFIGS) - UNDESCRIBED_BROKER_KEYS  # Kafka's internal keys

    e = entries["num.partitions"]
    assert (e.value, e.source, e.read_only) == ("3", STATIC, True)
    assert e.synonyms == [("num.partitions", "3", STATIC), ("num.partitions", "1", DEFAULT)]

    e = entries["listeners"]
    assert (e.value, e.source, e.read_only) == ("PLAINTEXT://127.0.0.1:9093", STATIC, False)

    e = entries["log.retention.ms"]  # unset: null, and the hours synonym listed before it is dropped
    assert (e.value, e.source, e.is_default, e.synonyms, e.read_only) == (None, DEFAULT, True, [], False)

    e = entries["log.retention.hours"]
    assert (e.value, e.source) == ("1", STATIC)
    assert e.synonyms == [("log.retention.hours", "1", STATIC), ("log.retention.hours", "168", DEFAULT)]
    assert e.read_only  # only log.retention.ms is dynamic in Kafka

    assert entries["log.dirs"].read_only and entries["message.max.bytes"].read_only is False
    assert entries["offsets.topic.replication.factor"].type == ConfigType.SHORT
    assert entries["cluster.id"].value == b.cluster_id
    assert entries["broker.id"].value == "1"


# --------------------------------------------------------------------------- incremental alter


def test_incremental_ops():
    current = {"cleanup.policy": ["delete"], "retention.ms": 1000}
    out = apply_incremental_ops(current, [("cleanup.policy", OpType.APPEND, "compact"),
                                          ("retention.ms", OpType.DELETE, None),
                                          ("segment.bytes", OpType.SET, "1048576")])
    assert out == {"cleanup.policy": ["delete", "compact"], "segment.bytes": 1048576}
    out = apply_incremental_ops(out, [("cleanup.policy", OpType.SUBTRACT, "delete")])
    assert out["cleanup.policy"] == ["compact"]
    # APPEND to an unset list starts from the key's default
    assert apply_incremental_ops({}, [("cleanup.policy", 2, "compact")]) == {"cleanup.policy": ["delete", "compact"]}
    with pytest.raises(ConfigError, match="Config value append is not allowed for config key: retention.ms"):
        apply_incremental_ops({}, [("retention.ms", OpType.APPEND, "5")])
    with pytest.raises(ConfigError, match="Invalid value -9 for configuration retention.ms"):
        apply_incremental_ops({}, [("retention.ms", OpType.SET, "-9")])
