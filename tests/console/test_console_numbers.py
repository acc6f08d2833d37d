"""The console's numbers against Kafka's own tools run on the same broker (issue 31, item 8): a
group's partitions without a commit (kafka-consumer-groups lists them with `-`), config values and
their sources as kafka-configs prints them, and the data dir's usage as `du` counts it."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from minibroker.testing import BrokerThread
from reference import kafka_reference as kr
from tests.console.helpers import CONSOLE_OVERRIDES, console_url, get_json
from tests.integration.helpers import Deadline, create_topic, module_broker, unique


@pytest.fixture(scope="module")
def broker(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    why = kr.missing_prerequisites()
    if why is not None:
        pytest.skip(f"REFERENCE TOOLS UNAVAILABLE: {why}")
    with module_broker(tmp_path_factory, CONSOLE_OVERRIDES) as b:
        yield b


def _tool(name: str, args: list[str]) -> str:
    r = kr.run_tool(name, args, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_partitions_assigned_without_a_commit_are_listed_as_kafka_lists_them(broker: BrokerThread) -> None:
    topic, group = unique("lagged"), unique("lag-group")
    create_topic(broker, topic, 3)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(30):
        p.produce(topic, value=b"v%d" % i, partition=i % 3)
    assert p.flush(10) == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    try:
        c.subscribe([topic])
        deadline = Deadline(30)
        while not c.assignment():
            assert deadline, "no assignment"
            c.poll(0.2)
        # one partition committed (4 of its 10 read), two assigned and never committed
        c.commit(offsets=[TopicPartition(topic, 0, 4)], asynchronous=False)
        url = console_url(broker)
        rows = {o["partition"]: o for o in get_json(f"{url}/api/groups/{group}")["offsets"] if o["topic"] == topic}
        listed = {g["group_id"]: g for g in get_json(f"{url}/api/groups")}[group]
        described = _tool("kafka-consumer-groups", ["--bootstrap-server", broker.bootstrap, "--describe",
                                                    "--group", group])
    finally:
        c.close()
    # Kafka's tool: GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
    kafka_rows = {}
    for line in described.splitlines():
        f = line.split()
        if len(f) >= 6 and f[0] == group and f[1] == topic:
            kafka_rows[int(f[2])] = (f[3], f[4], f[5])
    assert set(kafka_rows) == set(rows) == {0, 1, 2}
    for part, row in rows.items():
        committed = "-" if row["committed"] is None else str(row["committed"])
        lag = "-" if row["lag"] is None else str(row["lag"])
        assert (committed, str(row["log_end_offset"]), lag) == kafka_rows[part]
    assert kafka_rows[0] == ("4", "10", "6")
    assert listed["lag"] == 6 and listed["uncommitted"] == 2


def test_config_values_and_sources_are_what_kafka_configs_prints(broker: BrokerThread) -> None:
    topic = unique("configured")
    create_topic(broker, topic, 1, {"cleanup.policy": "compact,delete", "message.downconversion.enable": "false",
                                    "retention.ms": "600000"})
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    # a per-broker dynamic min.insync.replicas: its source is what the two must agree on
    res = ConfigResource(ResourceType.BROKER, str(broker.broker.node_id),
                         incremental_configs=[ConfigEntry("min.insync.replicas", "1",
                                                          incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([res])[res].result(30)
    url = console_url(broker)
    shown = get_json(f"{url}/api/topics/{topic}")["overrides"]
    printed = _tool("kafka-configs", ["--bootstrap-server", broker.bootstrap, "--describe", "--entity-type",
                                      "topics", "--entity-name", topic])
    # "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:...}"
    kafka = dict(re.findall(r"^\s+([\w.]+)=(\S*) sensitive=", printed, re.M))
    assert kafka == shown, (kafka, shown)
    assert shown["message.downconversion.enable"] == "false" and shown["cleanup.policy"] == "compact,delete"
    listed = {t["name"]: t for t in get_json(f"{url}/api/topics")}[topic]
    assert listed["overrides"] == kafka
    console_cfg = {e["name"]: e for e in get_json(f"{url}/api/cluster")["config"]}
    printed = _tool("kafka-configs", ["--bootstrap-server", broker.bootstrap, "--describe", "--all",
                                      "--entity-type", "brokers", "--entity-name", str(broker.broker.node_id)])
    m = re.search(r"^\s+min\.insync\.replicas=(\S+) sensitive=\w+ synonyms=\{(\w+):", printed, re.M)
    assert m is not None, printed[-2000:]
    assert m.group(2) == "DYNAMIC_BROKER_CONFIG"
    assert (console_cfg["min.insync.replicas"]["value"], console_cfg["min.insync.replicas"]["source"]) == \
        (m.group(1), m.group(2))


def test_data_dir_usage_counts_what_the_disk_holds(broker: BrokerThread) -> None:
    for i in range(4):
        create_topic(broker, unique(f"small{i}"), 2)
    data_dir = str(broker.broker.log_manager.data_dir)
    shown = get_json(f"{console_url(broker)}/api/cluster")["data_dir_bytes"]
    du = int(subprocess.run(["du", "-s", "--block-size=1", data_dir], capture_output=True, text=True,
                            check=True).stdout.split()[0])
    apparent = sum(os.path.getsize(os.path.join(r, f)) for r, _d, fs in os.walk(data_dir) for f in fs)
    # every partition preallocates 10 MiB of sparse index and time index: gigabytes of apparent size
    # against a few megabytes on disk; the console shows the latter (du counts directories too)
    assert apparent > 20 * 1024 * 1024
    assert shown <= du and shown > du // 4, (shown, du)
    assert shown < apparent // 10
