"""Differential tests, part 2: DescribeConfigs (topic and broker, with synonyms and documentation),
IncrementalAlterConfigs/AlterConfigs with every dynamic broker key Kafka 4.4 accepts.

Differences allowed here are each listed in docs/differences.md (topic-config-keys,
broker-config-keys, per-listener-ssl, cluster-min-isr) and asserted to be present.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from minibroker.config.kafka_dynamic import KAFKA_DYNAMIC_BROKER_KEYS, per_broker_only
from minibroker.config.keys import BROKER_CONFIGS
from minibroker_protocol.apis import create_topics, describe_configs, incremental_alter_configs
from tests.reference.differential import Differential, differences, drop, normalise

DC = describe_configs.API
IAC = incremental_alter_configs.API
CT = create_topics.API
TOPIC, BROKER = 2, 4

TOPIC_ONLY_KAFKA = {"max.decompressed.message.bytes",
                    "remote.copy.lag.bytes", "remote.copy.lag.ms"}
TOPIC_ONLY_MINIBROKER = {"message.downconversion.enable", "message.format.version",
                         "confluent.key.schema.validation", "confluent.value.schema.validation",
                         "message.timestamp.difference.max.ms"}
# docs/differences.md#topic-config-keys
TOPIC_VALUE_DIFFERENCES = {"message.timestamp.after.max.ms"}

# docs/differences.md#broker-config-keys: keys both describe whose entry differs, and why
BROKER_ENTRY_DIFFERENCES = {
    "advertised.listeners": "address; Kafka's launcher sets it (STATIC), read-only in Kafka per listener",
    "listeners": "address",
    "log.dir": "directory",
    "log.dirs": "directory",
    "listener.security.protocol.map": "Kafka's launcher adds CONTROLLER; ours lists Kafka's 3.x default",
    "node.id": "set in Kafka's server.properties (STATIC)",
    "broker.id": "follows node.id here",
    "offsets.topic.replication.factor": "dev default 1 (Kafka's launcher sets 1 statically)",
    "transaction.state.log.replication.factor": "dev default 1",
    "transaction.state.log.min.isr": "dev default 1",
    "group.initial.rebalance.delay.ms": "both set 0; its DEFAULT synonym shows our dev default",
    "num.recovery.threads.per.data.dir": "dev default 1 (Kafka 4: 2)",
    "num.network.threads": "read-only: minibroker has no network threads",
    "sasl.enabled.mechanisms": "read-only: the SASL listeners take it at start (issue 19)",
    "queued.max.request.bytes": "docs/differences.md#queued-max-request-bytes-default",
    "socket.send.buffer.bytes": "docs/differences.md#socket-buffers-default",
    "socket.receive.buffer.bytes": "docs/differences.md#socket-buffers-default",
    "share.coordinator.state.topic.min.isr": "dev default 1, as the other internal topics",
    "share.coordinator.state.topic.replication.factor": "dev default 1, as the other internal topics",
    "log.message.timestamp.after.max.ms": "docs/differences.md#topic-config-keys",
    # Kafka's launcher sets its node's roles and quorum in server.properties (STATIC); a minibroker
    # without process.roles is the combined node of one it always was (docs/differences.md#kraft-roles)
    "process.roles": "set in Kafka's server.properties; unset here",
    "controller.quorum.voters": "set in Kafka's server.properties; unset here",
    "controller.listener.names": "set in Kafka's server.properties; unset here",
}


# Kafka lets a client change these at runtime; minibroker does not (docs/differences.md#broker-config-keys):
# no network threads, and the SASL/TLS listeners (issue 19) take their keys at start
SSL_STATIC = {k for k, key in BROKER_CONFIGS.items() if k.startswith("ssl.") and key.read_only}
READ_ONLY_HERE = {"num.network.threads", "sasl.enabled.mechanisms"} | SSL_STATIC
BROKER_ENTRY_DIFFERENCES.update({k: "read-only: the TLS listeners take it at start (issue 19)"
                                 for k in SSL_STATIC - {"ssl.principal.mapping.rules"}})  # read-only in both


def _describe(resource_type: int, name: str, keys: list[str] | None = None) -> Any:
    R = DC.request
    return R(resources=[R.DescribeConfigsResource(resource_type=resource_type, resource_name=name,
                                                 configuration_keys=keys)],
             include_synonyms=True, include_documentation=True)


def _configs(resp: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in resp["results"][0]["configs"]}


@pytest.fixture(scope="module")
def described_topic(differential: Differential) -> str:
    name = "dc-topic"
    R = CT.request
    body = R(topics=[R.CreatableTopic(name=name, num_partitions=1, replication_factor=1, configs=[
        R.CreatableTopicConfig(name="retention.ms", value="12345"),
        R.CreatableTopicConfig(name="cleanup.policy", value="compact"),
        R.CreatableTopicConfig(name="max.message.bytes", value="2000000")])], timeout_ms=10000)
    k, m = differential.call(CT, 7, body)
    assert k["topics"][0]["error_code"] in (0, 36) and m["topics"][0]["error_code"] in (0, 36)
    # Kafka answers CreateTopics once the controller has the topic; its broker's metadata may
    # lag under load, and DescribeConfigs then answers UNKNOWN_TOPIC_OR_PARTITION (no configs)
    deadline = time.monotonic() + 30
    while True:
        k, m = differential.call(DC, 4, _describe(TOPIC, name))
        if k["results"][0]["error_code"] == 0 and m["results"][0]["error_code"] == 0:
            return name
        assert time.monotonic() < deadline, (k["results"][0], m["results"][0])
        time.sleep(0.1)


@pytest.mark.parametrize("version", [1, 4])
def test_describe_topic_configs(differential: Differential, described_topic: str, version: int) -> None:
    k, m = differential.call(DC, version, _describe(TOPIC, described_topic))
    kc, mc = _configs(k), _configs(m)
    assert set(kc) - set(mc) == TOPIC_ONLY_KAFKA
    assert set(mc) - set(kc) == TOPIC_ONLY_MINIBROKER
    # documentation texts are ours (config/keys.py: they say what minibroker does)
    ignore = ["documentation"]
    shared = sorted(set(kc) & set(mc) - TOPIC_VALUE_DIFFERENCES)
    diffs = differences(drop(normalise([kc[n] for n in shared]), ignore),
                        drop(normalise([mc[n] for n in shared]), ignore))
    assert diffs == [], "\n".join(diffs)
    for n in TOPIC_VALUE_DIFFERENCES:
        assert kc[n] != mc[n], f"{n} is now the same on both: update docs/differences.md"
    assert k["results"][0]["error_code"] == m["results"][0]["error_code"] == 0
    assert k["results"][0]["error_message"] == m["results"][0]["error_message"]


def test_describe_topic_configs_named_keys_and_errors(differential: Differential, described_topic: str) -> None:
    differential.assert_same(DC, 4, _describe(TOPIC, described_topic, ["retention.ms", "cleanup.policy"]),
                             ignore=["documentation"])
    differential.assert_same(DC, 4, _describe(TOPIC, "dc-no-such-topic"))
    differential.assert_same(DC, 4, _describe(TOPIC, "bad name!"))


def test_describe_broker_configs(differential: Differential) -> None:
    k, m = differential.call(DC, 4, _describe(BROKER, "1"))
    kc, mc = _configs(k), _configs(m)
    # every key minibroker describes but Kafka does not: ours only (cluster.id) or removed in Kafka 4
    # (console.* and cluster.id are minibroker's own keys; the others Kafka 4 removed or never had)
    assert set(mc) - set(kc) == {"cluster.id", "log.message.downconversion.enable", "log.message.format.version",
                                 "log.message.timestamp.difference.max.ms", "producer.id.expiration.check.interval.ms",
                                 "console.host", "console.port", "console.allow.writes", "console.allow.faults",
                                 "schema.registry.port", "schema.registry.host",
                                 "socket.request.read.timeout.ms", "group.share.enable",
                                 # minibroker's stand-in for sasl.server.callback.handler.class (OAUTHBEARER)
                                 "sasl.server.callback.handler.python",
                                 # the authorizer's keys: Kafka's StandardAuthorizer reads them from the
                                 # broker's properties, but KafkaConfig does not define them, so Kafka
                                 # does not describe them (docs/differences.md, broker config)
                                 "super.users", "allow.everyone.if.no.acl.found",
                                 # accepted here, not described by Kafka 4.4: the old alias of
                                 # delegation.token.secret.key, and the balance threshold its KRaft
                                 # controller does not use (ours neither)
                                 "delegation.token.master.key", "leader.imbalance.per.broker.percentage"}
    shared = sorted(set(kc) & set(mc) - set(BROKER_ENTRY_DIFFERENCES))
    assert len(shared) > 100
    ignore = ["documentation"]
    diffs = differences(drop(normalise([kc[n] for n in shared]), ignore),
                        drop(normalise([mc[n] for n in shared]), ignore))
    assert diffs == [], "\n".join(diffs)
    for n in BROKER_ENTRY_DIFFERENCES:
        assert n in kc and n in mc and kc[n] != mc[n], f"{n}: no longer differs, update the list and the docs"
    # every key Kafka lets a client change at runtime, minibroker describes as changeable too
    kafka_dynamic = {n for n, c in kc.items() if not c["read_only"]}
    mini_static = {n for n in kafka_dynamic if mc.get(n, {"read_only": True})["read_only"]}
    assert mini_static == READ_ONLY_HERE & kafka_dynamic


def test_kafka_dynamic_broker_keys_are_listed(differential: Differential) -> None:
    """config/kafka_dynamic.py is exactly Kafka's dynamic broker keys that config/keys.py does not
    model otherwise, with Kafka's types and defaults."""
    k = differential.call_one(differential.kafka, DC, 4, _describe(BROKER, "1"))
    types = {1: "boolean", 2: "string", 3: "int", 4: "short", 5: "long", 6: "double", 7: "list", 8: "class",
             9: "password"}
    ours = {row[0]: row for row in KAFKA_DYNAMIC_BROKER_KEYS}
    for c in k["results"][0]["configs"]:
        if c["name"] in ours:
            assert ours[c["name"]] == (c["name"], types[c["config_type"]], c["value"], c["is_sensitive"])
            assert not c["read_only"]
        elif not c["read_only"]:
            assert c["name"] in BROKER_CONFIGS, f"Kafka's dynamic key {c['name']} is unknown here"
    assert set(ours) <= {c["name"] for c in k["results"][0]["configs"]}


def _alter(name: str, configs: list[tuple[str, int, str | None]], validate_only: bool) -> Any:
    R = IAC.request
    return R(resources=[R.AlterConfigsResource(resource_type=BROKER, resource_name=name, configs=[
        R.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in configs])],
        validate_only=validate_only)


# docs/differences.md#per-listener-ssl: Kafka wants these with a listener prefix
_PER_LISTENER = re.compile(r"^ssl\.(keystore|truststore|key)\.")


@pytest.mark.parametrize("resource", ["1", ""])
def test_kafka_dynamic_broker_keys_accepted(differential: Differential, resource: str) -> None:
    """Every dynamic broker key Kafka accepts, at its Kafka default, is accepted here too
    (validate_only: nothing changes on either broker)."""
    keys = [(n, 0, v if v is not None else ("x" if t == "string" else None))
            for n, t, v, _ in KAFKA_DYNAMIC_BROKER_KEYS if not _PER_LISTENER.match(n) and n not in READ_ONLY_HERE]
    keys = [kv for kv in keys if kv[2] is not None]
    assert len(keys) > 40
    differential.assert_same(IAC, 1, _alter(resource, [kv for kv in keys if resource or not per_broker_only(kv[0])],
                                            validate_only=True))
    if not resource:  # the security keys only per broker, on both (the messages list them in hash order)
        k, m = differential.call(IAC, 1, _alter(resource, keys, validate_only=True))
        assert k["responses"][0]["error_code"] == m["responses"][0]["error_code"] == 42
        prefix = "Cannot update these configs at default cluster level, broker id must be specified: ["
        assert k["responses"][0]["error_message"].startswith(prefix)
        assert m["responses"][0]["error_message"].startswith(prefix)
    k, m = differential.call(IAC, 1, _alter(resource, [("ssl.keystore.type", 0, "PKCS12")], validate_only=True))
    differential.assert_same(IAC, 1, _alter(resource, [("ssl.keystore.type", 0, "PKCS12")], validate_only=True))


def test_kafka_dynamic_broker_key_is_kept_and_described(differential: Differential) -> None:
    """The issue's example: sasl.kerberos.min.time.before.relogin set on broker 1 is accepted,
    described as a DYNAMIC_BROKER_CONFIG with the value set, and deleted again, on both."""
    key = "sasl.kerberos.min.time.before.relogin"
    try:
        differential.assert_same(IAC, 1, _alter("1", [(key, 0, "61000")], validate_only=False))
        for _ in range(100):  # Kafka applies it through its metadata log, a moment later
            k, m = differential.call(DC, 4, _describe(BROKER, "1", [key]))
            if _configs(k)[key]["value"] == "61000":
                break
            time.sleep(0.05)
        ke, me = _configs(k)[key], _configs(m)[key]
        assert (ke["value"], ke["config_source"]) == (me["value"], me["config_source"]) == ("61000", 2)
        assert drop(normalise(ke), ["documentation"]) == drop(normalise(me), ["documentation"])
        assert "no effect here" in me["documentation"]
    finally:
        differential.assert_same(IAC, 1, _alter("1", [(key, 1, None)], validate_only=False))
    for _ in range(100):
        k, m = differential.call(DC, 4, _describe(BROKER, "1", [key]))
        if _configs(k)[key]["config_source"] == 5:
            break
        time.sleep(0.05)
    assert _configs(k)[key]["config_source"] == _configs(m)[key]["config_source"] == 5


def test_alter_configs_errors(differential: Differential) -> None:
    # docs/differences.md#unknown-broker-key: Kafka takes a key nobody knows; minibroker refuses it
    k, m = differential.call(IAC, 1, _alter("1", [("no.such.key", 0, "1")], validate_only=True))
    assert (k["responses"][0]["error_code"], m["responses"][0]["error_code"]) == (0, 42)
    differential.assert_same(IAC, 1, _alter("1", [("log.retention.ms", 0, "abc")], validate_only=True))
    differential.assert_same(IAC, 1, _alter("1", [("log.dirs", 0, "/x")], validate_only=True))
    differential.assert_same(IAC, 1, _alter("1", [("message.max.bytes", 0, "-5")], validate_only=True))
    # docs/differences.md#broker-id-message: Kafka 4.4 says "expected 1, but received 2"
    k, m = differential.call(IAC, 1, _alter("2", [("log.retention.ms", 0, "1000")], validate_only=True))
    assert k["responses"][0]["error_code"] == m["responses"][0]["error_code"] == 42
