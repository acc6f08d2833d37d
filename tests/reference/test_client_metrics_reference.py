"""Client metrics config resources (KIP-714) and ListConfigResources (74), against Kafka 4.4:
Kafka's own `kafka-client-metrics` tool (create with --alter, --list, --describe, refused values)
gives the same output on both brokers, and raw ListConfigResources v0/v1 list the same resources
(BROKER_LOGGER apart: docs/differences.md#api-versions).
"""

from __future__ import annotations

from typing import Any

import pytest

from minibroker_protocol.apis import (
    create_topics,
    describe_configs,
    incremental_alter_configs,
    list_config_resources,
)
from minibroker_protocol.errors import ErrorCode
from tests.reference.differential import Differential
from tests.reference.helpers import BOOT, Pair

CM = ["--bootstrap-server", BOOT]
LCR = list_config_resources.API


@pytest.fixture(scope="module")
def subscriptions(pair: Pair) -> Pair:
    for args in (["--alter", "--name", "cm-a", "--metrics",
                  "org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator.rebalance.latency.max",
                  "--interval", "1000", "--match", "client_id=abc.*,client_software_name=kafka-python"],
                 ["--alter", "--name", "cm-b", "--metrics", "org.apache.kafka.producer."]):
        k, m = pair.stdout("kafka-client-metrics", CM + args)
        assert k == m
    return pair


def test_list_and_describe(subscriptions: Pair) -> None:
    for args in (["--list"], ["--describe", "--name", "cm-a"], ["--describe"], ["--describe", "--name", "none-such"]):
        k, m = subscriptions.stdout("kafka-client-metrics", CM + args)
        assert k == m, args
    k, _ = subscriptions.stdout("kafka-client-metrics", CM + ["--list"])
    assert k.split() == ["cm-a", "cm-b"]


@pytest.mark.parametrize("args", [["--interval", "5"], ["--match", "nokey=5"], ["--interval", "3600001"]])
def test_refused_values(subscriptions: Pair, args: list[str]) -> None:
    k, m = subscriptions.run("kafka-client-metrics", CM + ["--alter", "--name", "cm-bad", *args])
    assert k.returncode == m.returncode == 1
    assert k.stdout == m.stdout and k.stdout.startswith("Error while executing client metrics command")


def test_update_then_delete_a_key(subscriptions: Pair, differential: Differential) -> None:
    IAC = incremental_alter_configs.REQUEST
    body = IAC(validate_only=False, resources=[IAC.AlterConfigsResource(
        resource_type=16, resource_name="cm-b", configs=[
            IAC.AlterableConfig(name="interval.ms", config_operation=0, value="2000"),
            IAC.AlterableConfig(name="metrics", config_operation=1, value=None)])])
    assert not differential.compare(incremental_alter_configs.API, 1, body)
    k, m = subscriptions.stdout("kafka-client-metrics", CM + ["--describe", "--name", "cm-b"])
    assert k == m and "interval.ms=2000" in m and "metrics=\n" in m + "\n"


def test_describe_configs_raw(subscriptions: Pair, differential: Differential) -> None:
    DC = describe_configs.REQUEST
    for name in ("cm-a", "none-such", ""):
        body = DC(resources=[DC.DescribeConfigsResource(resource_type=16, resource_name=name, configuration_keys=None)],
                  include_synonyms=True, include_documentation=True)
        diff = differential.compare(describe_configs.API, 4, body)
        assert not diff, (name, diff)


def _resources(d: Differential, bootstrap: str, version: int, types: list[int]) -> Any:
    return d.call_one(bootstrap, LCR, version, list_config_resources.REQUEST(resource_types=types))


@pytest.mark.parametrize("types", [[], [16], [2, 4, 16, 32], [2], [3], [0]])
def test_list_config_resources(subscriptions: Pair, differential: Differential, types: list[int]) -> None:
    CT = create_topics.REQUEST
    differential.call(create_topics.API, 7, CT(topics=[CT.CreatableTopic(
        name="lcr-topic", num_partitions=1, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=10_000, validate_only=False))
    k, m = (_resources(differential, b, 1, types) for b in (differential.kafka, differential.mini))
    assert k["error_code"] == m["error_code"]
    if k["error_code"]:
        assert m["error_code"] == ErrorCode.UNSUPPORTED_VERSION and m["config_resources"] == []
        return

    def as_set(r: dict[str, Any], own_id: str | None = None) -> set[tuple[int, str]]:
        # BROKER_LOGGER: Kafka lists its broker ids, minibroker has no loggers (documented)
        return {(c["resource_type"], "<node>" if c["resource_type"] in (4, 8) else c["resource_name"])
                for c in r["config_resources"] if c["resource_type"] != 8}

    # topics: both sessions' brokers hold what the other tests made; compare ours and the internal ones
    def filtered(s: set[tuple[int, str]]) -> set[tuple[int, str]]:
        return {x for x in s if x[0] != 2 or x[1] == "lcr-topic" or x[1].startswith("__consumer")}

    assert filtered(as_set(k)) == filtered(as_set(m))
    if types in ([], [16]):
        assert {n for t, n in as_set(m) if t == 16} >= {"cm-a", "cm-b"}


def test_list_config_resources_v0(subscriptions: Pair, differential: Differential) -> None:
    k, m = (_resources(differential, b, 0, []) for b in (differential.kafka, differential.mini))
    assert k == m
    assert {c["resource_name"] for c in m["config_resources"]} >= {"cm-a", "cm-b"}
