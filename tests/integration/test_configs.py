"""DescribeConfigs / AlterConfigs / IncrementalAlterConfigs through three admin clients and over a
raw socket at every version; changes applied live and persisted across a restart."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigResource, ConfigSource, NewTopic
from confluent_kafka.admin import ConfigEntry as CEntry

from minibroker.testing import BrokerThread
from minibroker_protocol.apis import alter_configs, describe_configs, incremental_alter_configs
from minibroker_protocol.errors import ErrorCode

from .helpers import TIMEOUT, RawClient, create_topic, module_broker, unique


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory):
    with module_broker(tmp_path_factory, {"log.retention.hours": 100}) as broker:
        yield broker


def admin(b) -> AdminClient:
    return AdminClient({"bootstrap.servers": b.bootstrap})


def describe(a: AdminClient, kind: str, name: str) -> dict:
    r = ConfigResource(kind, name)
    return a.describe_configs([r])[r].result(TIMEOUT)


def incremental(a: AdminClient, kind: str, name: str, *entries: tuple[str, str | None, AlterConfigOpType]) -> None:
    r = ConfigResource(kind, name, incremental_configs=[CEntry(k, v, incremental_operation=op) for k, v, op in entries])
    a.incremental_alter_configs([r])[r].result(TIMEOUT)


def raw_incremental_default(b, key: str, value: str | None, op: AlterConfigOpType) -> None:
    R = incremental_alter_configs.REQUEST
    req = R(resources=[R.AlterConfigsResource(resource_type=4, resource_name="", configs=[
        R.AlterableConfig(name=key, config_operation=op.value, value=value)])], validate_only=False)
    with RawClient(b.bootstrap) as c:
        assert c.call(incremental_alter_configs.API, 1, req).responses[0].error_code == 0


def raw_describe_default(b) -> list[tuple[str, str | None, int]]:
    R = describe_configs.REQUEST
    req = R(resources=[R.DescribeConfigsResource(resource_type=4, resource_name="", configuration_keys=None)],
            include_synonyms=True, include_documentation=False)
    with RawClient(b.bootstrap) as c:
        res = c.call(describe_configs.API, 4, req).results[0]
    assert res.error_code == 0
    return [(e.name, e.value, e.config_source) for e in res.configs]


def topic_log_config(b, topic: str):
    return b.call(lambda br: br.get_log(topic, 0).config)


# ------------------------------------------------------------------------------ confluent-kafka


def test_confluent_describe_alter_incremental_redescribe(kafka_broker_module):
    a = admin(kafka_broker_module)
    t = unique("cfg")
    a.create_topics([NewTopic(t, 1, 1, config={"retention.ms": "3600000"})])[t].result(TIMEOUT)
    d = describe(a, "topic", t)
    assert d["retention.ms"].value == "3600000"
    assert d["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert d["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value and d["segment.bytes"].is_default
    # the broker's log.retention.hours is the static default of retention.ms, listed as a synonym
    assert "log.retention.hours" in d["retention.ms"].synonyms
    assert "cleanup.policy" in d and "max.message.bytes" in d and len(d) > 30

    incremental(a, "topic", t,
                ("cleanup.policy", "compact", AlterConfigOpType.APPEND),
                ("retention.ms", None, AlterConfigOpType.DELETE),
                ("segment.bytes", "1048576", AlterConfigOpType.SET))
    d = describe(a, "topic", t)
    assert d["cleanup.policy"].value == "delete,compact"
    assert d["retention.ms"].value == str(100 * 3600 * 1000)  # back to the broker's default
    assert d["retention.ms"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert d["segment.bytes"].value == "1048576"
    cfg = topic_log_config(kafka_broker_module, t)  # applied live to the open log
    assert cfg.segment_bytes == 1048576 and cfg.compact and cfg.delete

    incremental(a, "topic", t, ("cleanup.policy", "delete", AlterConfigOpType.SUBTRACT))
    assert describe(a, "topic", t)["cleanup.policy"].value == "compact"

    # AlterConfigs (legacy) replaces the whole set of overrides
    r = ConfigResource("topic", t, set_config={"max.message.bytes": "5000"})
    a.alter_configs([r])[r].result(TIMEOUT)
    d = describe(a, "topic", t)
    assert d["max.message.bytes"].value == "5000"
    assert d["cleanup.policy"].value == "delete" and d["segment.bytes"].is_default
    assert kafka_broker_module.call(lambda br: br.topics[t].overrides) == {"max.message.bytes": 5000}


def test_confluent_invalid_values(kafka_broker_module):
    a = admin(kafka_broker_module)
    t = unique("cfg-bad")
    create_topic(kafka_broker_module, t)
    r = ConfigResource("topic", t, incremental_configs=[
        CEntry("retention.ms", "-5", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(Exception) as e:
        a.incremental_alter_configs([r])[r].result(TIMEOUT)
    assert e.value.args[0].code() == ErrorCode.INVALID_CONFIG
    assert "Invalid value -5 for configuration retention.ms: Value must be at least -1" in str(e.value)
    r = ConfigResource("topic", t, incremental_configs=[
        CEntry("segment.bytes", "x", incremental_operation=AlterConfigOpType.APPEND)])
    with pytest.raises(Exception) as e:
        a.incremental_alter_configs([r])[r].result(TIMEOUT)
    assert "append is not allowed" in str(e.value)
    r = ConfigResource("topic", t, incremental_configs=[
        CEntry("no.such.key", "1", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(Exception) as e:
        a.incremental_alter_configs([r])[r].result(TIMEOUT)
    assert "Unknown topic config name: no.such.key" in str(e.value)
    assert kafka_broker_module.call(lambda br: br.topics[t].overrides) == {}
    r = ConfigResource("topic", unique("missing"))
    with pytest.raises(Exception) as e:
        a.describe_configs([r])[r].result(TIMEOUT)
    assert e.value.args[0].code() == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_confluent_validate_only_changes_nothing(kafka_broker_module):
    a = admin(kafka_broker_module)
    t = unique("cfg-vo")
    create_topic(kafka_broker_module, t)
    r = ConfigResource("topic", t, incremental_configs=[
        CEntry("retention.ms", "1234", incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([r], validate_only=True)[r].result(TIMEOUT)
    assert describe(a, "topic", t)["retention.ms"].value != "1234"


def test_confluent_broker_configs(kafka_broker_module):
    a = admin(kafka_broker_module)
    d = describe(a, "broker", "1")
    assert d["log.retention.hours"].value == "100"
    assert d["log.retention.hours"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert d["broker.id"].is_read_only and not d["log.retention.ms"].is_read_only
    incremental(a, "broker", "1", ("log.segment.bytes", "2097152", AlterConfigOpType.SET))
    try:
        d = describe(a, "broker", "1")
        assert d["log.segment.bytes"].value == "2097152"
        assert d["log.segment.bytes"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        # topics without their own segment.bytes follow the new broker default, live
        t = unique("cfg-brk")
        create_topic(kafka_broker_module, t)
        td = describe(a, "topic", t)["segment.bytes"]
        assert td.value == "2097152" and td.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        assert topic_log_config(kafka_broker_module, t).segment_bytes == 2097152
        r = ConfigResource("broker", "1", incremental_configs=[
            CEntry("num.network.threads", "7", incremental_operation=AlterConfigOpType.SET)])
        with pytest.raises(Exception) as e:
            a.incremental_alter_configs([r])[r].result(TIMEOUT)
        assert "Cannot update these configs dynamically: [num.network.threads]" in str(e.value)
        # the cluster-wide default resource (name "", which confluent-kafka cannot send) lists
        # only the dynamic defaults
        raw_incremental_default(kafka_broker_module, "log.cleaner.backoff.ms", "300", AlterConfigOpType.SET)
        # DYNAMIC_DEFAULT_BROKER_CONFIG; min.insync.replicas is there from the first start, as Kafka 4
        # records it at format (docs/differences.md#cluster-min-isr)
        assert raw_describe_default(kafka_broker_module) == [("log.cleaner.backoff.ms", "300", 3),
                                                             ("min.insync.replicas", "1", 3)]
        assert describe(a, "broker", "1")["log.cleaner.backoff.ms"].source == \
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    finally:
        incremental(a, "broker", "1", ("log.segment.bytes", None, AlterConfigOpType.DELETE))
        raw_incremental_default(kafka_broker_module, "log.cleaner.backoff.ms", None, AlterConfigOpType.DELETE)
    assert raw_describe_default(kafka_broker_module) == [("min.insync.replicas", "1", 3)]
    assert describe(a, "broker", "1")["log.segment.bytes"].is_default
    # another broker's id (clients send that to broker 7, so over a raw socket)
    R = describe_configs.REQUEST
    with RawClient(kafka_broker_module.bootstrap) as c:
        res = c.call(describe_configs.API, 4, R(resources=[
            R.DescribeConfigsResource(resource_type=4, resource_name="7", configuration_keys=None)],
            include_synonyms=False, include_documentation=False)).results[0]
    assert res.error_code == ErrorCode.INVALID_REQUEST
    assert res.error_message == "Unexpected broker id, expected 1 or empty string, but received 7"


# ------------------------------------------------------------------------------ kafka-python


def test_kafka_python_admin(kafka_broker_module):
    from kafka.admin import ConfigResource as KCR
    from kafka.admin import ConfigResourceType, KafkaAdminClient, NewPartitions

    t = unique("cfg-kp")
    create_topic(kafka_broker_module, t)
    a = KafkaAdminClient(bootstrap_servers=kafka_broker_module.bootstrap, request_timeout_ms=10000)
    try:
        resp = a.describe_configs([KCR(ConfigResourceType.TOPIC, t)], include_synonyms=True, config_filter="all")
        entries = resp["topic"][t]
        assert entries["cleanup.policy"]["value"] == "delete"
        assert entries["cleanup.policy"]["config_source"] == "DEFAULT_CONFIG"
        a.alter_configs([KCR(ConfigResourceType.TOPIC, t, configs={"retention.bytes": "123456"})])
        a.alter_configs([KCR(ConfigResourceType.TOPIC, t, configs={"cleanup.policy": ("APPEND", "compact")})])
        resp = a.describe_configs([KCR(ConfigResourceType.TOPIC, t)])  # only the modified keys
        entries = resp["topic"][t]
        assert {k: v["value"] for k, v in entries.items()} == {"retention.bytes": "123456",
                                                                "cleanup.policy": "delete,compact"}
        assert entries["retention.bytes"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        assert topic_log_config(kafka_broker_module, t).retention_bytes == 123456
        resp = a.describe_configs([KCR(ConfigResourceType.BROKER, "1")], config_filter="all")
        assert resp["broker"]["1"]["log.retention.hours"]["value"] == "100"
        # create partitions and produce to the new ones
        a.create_partitions({t: NewPartitions(3)})
    finally:
        a.close()
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=kafka_broker_module.bootstrap, enable_idempotence=False)
    try:
        md = [p.send(t, key=b"k", value=b"x%d" % i, partition=i).get(TIMEOUT) for i in range(3)]
    finally:
        p.close()
    assert [m.partition for m in md] == [0, 1, 2]
    assert kafka_broker_module.call(lambda br: br.get_log(t, 2).log_end_offset) == 1


# ------------------------------------------------------------------------------ aiokafka


def test_aiokafka_admin(kafka_broker_module):
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource as ACR
    from aiokafka.admin.config_resource import ConfigResourceType as ACRT

    t = unique("cfg-aio")
    create_topic(kafka_broker_module, t)

    async def go():
        a = AIOKafkaAdminClient(bootstrap_servers=kafka_broker_module.bootstrap)
        await a.start()
        try:
            await a.alter_configs([ACR(ACRT.TOPIC, t, configs={"retention.ms": "60000"})])
            resp = await a.describe_configs([ACR(ACRT.TOPIC, t)])
            broker_resp = await a.describe_configs([ACR(ACRT.BROKER, "1")])
            return resp, broker_resp
        finally:
            await a.close()

    resp, broker_resp = asyncio.run(go())
    entries = {e[0]: e[1] for e in resp[0].resources[0][4]}
    assert entries["retention.ms"] == "60000"
    assert topic_log_config(kafka_broker_module, t).retention_ms == 60000
    broker_entries = {e[0]: e[1] for e in broker_resp[0].resources[0][4]}
    assert broker_entries["log.retention.hours"] == "100"


# ------------------------------------------------------------------------------ raw protocol


@pytest.mark.parametrize("version", range(5))
def test_describe_configs_every_version(kafka_broker_module, version):
    t = unique("cfg-raw")
    create_topic(kafka_broker_module, t, configs={"retention.ms": "5000"})
    req = describe_configs.REQUEST(
        resources=[describe_configs.REQUEST.DescribeConfigsResource(resource_type=2, resource_name=t,
                                                                    configuration_keys=None)],
        include_synonyms=True, include_documentation=True)
    with RawClient(kafka_broker_module.bootstrap) as c:
        resp = c.call(describe_configs.API, version, req)
    res = resp.results[0]
    assert res.error_code == 0
    by = {e.name: e for e in res.configs}
    e = by["retention.ms"]
    assert e.value == "5000" and not e.read_only and not e.is_sensitive
    if version == 0:
        assert not e.is_default and by["segment.bytes"].is_default
    else:
        assert e.config_source == 1  # DYNAMIC_TOPIC_CONFIG
        assert [(s.name, s.source) for s in e.synonyms][:2] == [("retention.ms", 1), ("log.retention.hours", 4)]
    if version >= 3:
        assert e.config_type == 5 and e.documentation  # LONG, with its doc string
        assert by["cleanup.policy"].config_type == 7  # LIST


@pytest.mark.parametrize("version", range(3))
def test_alter_configs_every_version(kafka_broker_module, version):
    t = unique("cfg-alt")
    create_topic(kafka_broker_module, t)
    R = alter_configs.REQUEST
    req = R(resources=[R.AlterConfigsResource(resource_type=2, resource_name=t, configs=[
        R.AlterableConfig(name="retention.ms", value="777")])], validate_only=False)
    with RawClient(kafka_broker_module.bootstrap) as c:
        resp = c.call(alter_configs.API, version, req)
    assert resp.responses[0].error_code == 0
    assert kafka_broker_module.call(lambda br: br.topics[t].config["retention.ms"]) == 777


@pytest.mark.parametrize("version", range(2))
def test_incremental_alter_configs_every_version(kafka_broker_module, version):
    t = unique("cfg-inc")
    create_topic(kafka_broker_module, t)
    R = incremental_alter_configs.REQUEST
    req = R(resources=[
        R.AlterConfigsResource(resource_type=2, resource_name=t, configs=[
            R.AlterableConfig(name="cleanup.policy", config_operation=2, value="compact")]),
        R.AlterConfigsResource(resource_type=2, resource_name=unique("nope"), configs=[]),
        R.AlterConfigsResource(resource_type=8, resource_name="1", configs=[]),
    ], validate_only=False)
    with RawClient(kafka_broker_module.bootstrap) as c:
        resp = c.call(incremental_alter_configs.API, version, req)
    assert [r.error_code for r in resp.responses] == [0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                      ErrorCode.INVALID_REQUEST]
    bad = R(resources=[R.AlterConfigsResource(resource_type=2, resource_name="bad/name", configs=[])],
            validate_only=True)
    with RawClient(kafka_broker_module.bootstrap) as c:
        assert c.call(incremental_alter_configs.API, version, bad).responses[0].error_code == \
            ErrorCode.INVALID_TOPIC_EXCEPTION
    assert kafka_broker_module.call(lambda br: br.topics[t].config["cleanup.policy"]) == ["delete", "compact"]


# ------------------------------------------------------------------------------ persistence


def test_topic_and_broker_configs_survive_a_restart(tmp_path):
    data = tmp_path / "data"
    t = "persisted"
    with BrokerThread(data) as b1:
        a = admin(b1)
        a.create_topics([NewTopic(t, 1, 1)])[t].result(TIMEOUT)
        incremental(a, "topic", t, ("retention.bytes", "99999", AlterConfigOpType.SET))
        incremental(a, "broker", "1", ("log.retention.ms", "86400000", AlterConfigOpType.SET))
    with BrokerThread(data) as b2:
        a = admin(b2)
        d = describe(a, "topic", t)
        assert d["retention.bytes"].value == "99999"
        assert d["retention.ms"].value == "86400000"
        assert d["retention.ms"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        assert topic_log_config(b2, t).retention_bytes == 99999
        assert topic_log_config(b2, t).retention_ms == 86400000


def test_create_topics_with_configs_and_validate_only(kafka_broker_module):
    a = admin(kafka_broker_module)
    t = unique("ct")
    fut = a.create_topics([NewTopic(t, 2, 1, config={"segment.bytes": "10"})], validate_only=True)[t]
    with pytest.raises(Exception) as e:
        fut.result(TIMEOUT)
    assert e.value.args[0].code() == ErrorCode.INVALID_CONFIG
    assert "Invalid value 10 for configuration segment.bytes: Value must be at least 14" in str(e.value)
    a.create_topics([NewTopic(t, 2, 1, config={"cleanup.policy": "compact"})], validate_only=True)[t].result(TIMEOUT)
    assert t not in kafka_broker_module.call(lambda br: set(br.topics))
    a.create_topics([NewTopic(t, 2, 1, config={"cleanup.policy": "compact"})])[t].result(TIMEOUT)
    d = describe(a, "topic", t)
    assert d["cleanup.policy"].value == "compact"
    assert all(lg.config.compact for lg in kafka_broker_module.call(lambda br: list(br.topics[t].partitions.values())))
