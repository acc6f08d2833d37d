"""GROUP config resources (type 32) of consumer groups with Kafka's kafka-configs, on Apache Kafka
4.4 and minibroker at once: describe (the broker defaults), set, describe again, refused values
(below and above the broker's bounds, not a number), delete. The consumer.* lines and every
error must be the same; share.* keys come from the share groups, streams.* from the streams
groups (KIP-1071).
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration import group_config_helpers as gch
from tests.integration import streams_raw as sr
from tests.integration import streams_warmup_helpers as sgw
from tests.reference.helpers import BOOT, Pair, Side

# each test runs Kafka's kafka-configs (a JVM) a dozen times against both brokers: 40-90 s on a
# 2-core machine, minutes when it is loaded (the streams test passed pytest's 120 s default
# timeout in a fresh CI run at load 20)
pytestmark = pytest.mark.timeout(900)


def _consumer_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("consumer.")]


def test_consumer_group_configs_match_kafka(pair: Pair) -> None:
    group = f"gcfg-{uuid.uuid4().hex[:8]}"
    base = ["--bootstrap-server", BOOT, "--entity-type", "groups", "--entity-name", group]
    k, m = pair.stdout("kafka-configs", [*base, "--describe", "--all"])
    assert _consumer_lines(m) == _consumer_lines(k)
    assert any(line.startswith("consumer.session.timeout.ms=45000") for line in _consumer_lines(m))
    k, m = pair.stdout("kafka-configs", [*base, "--alter", "--add-config",
                                         "consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=6000"])
    assert m == k
    k, m = pair.stdout("kafka-configs", [*base, "--describe"])
    assert _consumer_lines(m) == _consumer_lines(k) and len(_consumer_lines(m)) == 2
    k, m = pair.stdout("kafka-configs", [*base, "--describe", "--all"])
    assert _consumer_lines(m) == _consumer_lines(k)
    assert "consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:" \
           "consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}" in m
    for bad in ("consumer.session.timeout.ms=1000", "consumer.session.timeout.ms=70000",
                "consumer.heartbeat.interval.ms=16000", "consumer.heartbeat.interval.ms=x",
                "consumer.assignment.interval.ms=-1", "consumer.assignment.interval.ms=100000"):
        ka, mi = pair.run("kafka-configs", [*base, "--alter", "--add-config", bad])
        assert (mi.returncode, mi.stdout) == (ka.returncode, ka.stdout), bad
        errors = [[line for line in r.stderr.splitlines() if "Exception:" in line][:1] for r in (ka, mi)]
        assert errors[1] == errors[0] and "InvalidConfigurationException" in errors[0][0], bad
    k, m = pair.stdout("kafka-configs", [*base, "--alter", "--delete-config", "consumer.session.timeout.ms"])
    assert m == k
    k, m = pair.stdout("kafka-configs", [*base, "--describe"])
    assert _consumer_lines(m) == _consumer_lines(k)
    assert [line.split()[0] for line in _consumer_lines(m)] == ["consumer.heartbeat.interval.ms=6000"]


def _share_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith(("share.", "errors."))]


def test_share_group_configs_match_kafka(pair: Pair) -> None:
    """The share.* keys (KIP-932, KIP-1222's renew switch, KIP-1240's record-lock limit and
    assignment interval) and KIP-1191's errors.deadletterqueue.* keys: described, set and refused
    as Kafka does."""
    group = f"gcfg-share-{uuid.uuid4().hex[:8]}"
    base = ["--bootstrap-server", BOOT, "--entity-type", "groups", "--entity-name", group]
    k, m = pair.stdout("kafka-configs", [*base, "--describe", "--all"])
    assert _share_lines(m) == _share_lines(k)
    assert any(line.startswith("errors.deadletterqueue.topic.name=") for line in _share_lines(m))
    k, m = pair.stdout("kafka-configs", [*base, "--alter", "--add-config",
                                         "errors.deadletterqueue.topic.name=dlq.x,share.renew.acknowledge.enable=false,"
                                         "share.partition.max.record.locks=500,share.assignment.interval.ms=2000"])
    assert m == k
    k, m = pair.stdout("kafka-configs", [*base, "--describe"])
    assert _share_lines(m) == _share_lines(k) and len(_share_lines(m)) == 4
    for bad in ("errors.deadletterqueue.topic.name=__x", "share.partition.max.record.locks=50",
                "share.partition.max.record.locks=5000", "share.assignment.interval.ms=20000",
                "share.renew.acknowledge.enable=maybe", "errors.deadletterqueue.copy.record.enable=yes"):
        ka, mi = pair.run("kafka-configs", [*base, "--alter", "--add-config", bad])
        assert (mi.returncode, mi.stdout) == (ka.returncode, ka.stdout), bad
        errors = [[line for line in r.stderr.splitlines() if "Exception:" in line][:1] for r in (ka, mi)]
        assert errors[1] == errors[0], bad


def _streams_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("streams.")]


def test_streams_group_configs_match_kafka(pair: Pair) -> None:
    """The streams.* keys (KIP-1071): the seven Kafka lists, the internal ones listed once set,
    set, refused (Kafka's ConfigDef and GroupConfig.validate messages) and deleted as Kafka does."""
    group = f"gcfg-streams-{uuid.uuid4().hex[:8]}"
    base = ["--bootstrap-server", BOOT, "--entity-type", "groups", "--entity-name", group]
    k, m = pair.stdout("kafka-configs", [*base, "--describe", "--all"])
    assert _streams_lines(m) == _streams_lines(k) and len(_streams_lines(m)) == 7
    assert "streams.assignor.name=sticky sensitive=false synonyms={DEFAULT_CONFIG:group.streams.assignors=sticky}" in m
    k, m = pair.stdout("kafka-configs", [*base, "--alter", "--add-config",
                                         "streams.session.timeout.ms=50000,streams.num.standby.replicas=1,"
                                         "streams.num.warmup.replicas=3,streams.rack.aware.assignment.tags=a,"
                                         "streams.assignor.offload.enable=false,streams.acceptable.recovery.lag=5,"
                                         "streams.task.offset.interval.ms=20000,streams.initial.rebalance.delay.ms=0"])
    assert m == k
    for args in (["--describe"], ["--describe", "--all"]):
        k, m = pair.stdout("kafka-configs", [*base, *args])
        assert _streams_lines(m) == _streams_lines(k), args
    assert len(_streams_lines(m)) == 11
    for bad in ("streams.session.timeout.ms=1000", "streams.session.timeout.ms=0", "streams.heartbeat.interval.ms=x",
                "streams.heartbeat.interval.ms=16000", "streams.num.standby.replicas=3",
                "streams.num.standby.replicas=-1", "streams.num.warmup.replicas=21",
                "streams.task.offset.interval.ms=100", "streams.task.offset.interval.ms=-1",
                "streams.acceptable.recovery.lag=x", "streams.assignor.name=foo",
                "streams.assignor.offload.enable=yes", "streams.assignment.interval.ms=20000", "streams.foo=1"):
        ka, mi = pair.run("kafka-configs", [*base, "--alter", "--add-config", bad])
        assert (mi.returncode, mi.stdout) == (ka.returncode, ka.stdout), bad
        errors = [[line for line in r.stderr.splitlines() if "Exception:" in line][:1] for r in (ka, mi)]
        assert errors[1] == errors[0] and "InvalidConfigurationException" in errors[0][0], bad
    k, m = pair.stdout("kafka-configs", [*base, "--alter", "--delete-config",
                                         "streams.num.warmup.replicas,streams.session.timeout.ms"])
    assert m == k
    k, m = pair.stdout("kafka-configs", [*base, "--describe", "--all"])
    assert _streams_lines(m) == _streams_lines(k) and len(_streams_lines(m)) == 10


def _standby_run(side: Side, group: str, source: str, changelog: str) -> tuple[int, int]:
    """Two processes join a stateful group whose GROUP configs say heartbeat 7000 ms and one standby
    replica; the heartbeat interval of the first answer, and the standby tasks once Stable."""
    base = ["--bootstrap-server", side.bootstrap, "--entity-type", "groups", "--entity-name", group]
    out = side.run("kafka-configs", [*base, "--alter", "--add-config",
                                     "streams.heartbeat.interval.ms=7000,streams.num.standby.replicas=1"])
    assert out.returncode == 0, out.stderr
    admin = AdminClient({"bootstrap.servers": side.bootstrap})
    for f in admin.create_topics([NewTopic(source, 2, 1),
                                  NewTopic(changelog, 2, 1, config={"cleanup.policy": "compact"})]).values():
        f.result(30)
    topo = sr.topology(source, changelog)
    a, c = (sr.StreamsMember(side.bootstrap, group, m, f"process-{m}", topo) for m in ("a", "c"))
    try:
        interval = a.beat().heartbeat_interval_ms
        settled = sr.settle([a, c], side.bootstrap, group)
        return interval, sum(len(t["partitions"]) for m in settled["members"]
                             for t in m["assignment"]["standby_tasks"])
    finally:
        a.leave()
        c.leave()
        a.close()
        c.close()


def test_streams_group_configs_act_on_the_group_as_on_kafka(pair: Pair) -> None:
    """The streams group coordinator applies the group's streams.heartbeat.interval.ms and
    streams.num.standby.replicas (each of the 2 stateful tasks gets a standby on the other process)."""
    tag = uuid.uuid4().hex[:8]
    runs = [_standby_run(side, f"gcfg-sg-{tag}", f"gcfg-sg-in-{tag}", f"gcfg-sg-{tag}-store-changelog")
            for side in (pair.kafka, pair.mini)]
    assert runs[1] == runs[0] == (7000, 2)


def _deleted_groups_configs(side: Side, tag: str) -> tuple[set[str], dict[str, dict[str, str]]]:
    """A consumer, a share and a streams group, each given GROUP configs, then deleted with
    DeleteGroups: the groups still listed, and each group's own configs as DescribeConfigs shows them."""
    topic = f"gcd-{tag}"
    groups = {f"gcd-c-{tag}": {"consumer.session.timeout.ms": "50000"},
              f"gcd-s-{tag}": {"share.auto.offset.reset": "earliest"},
              f"gcd-st-{tag}": {"streams.num.standby.replicas": "1", "streams.num.warmup.replicas": "3"}}
    consumer_group, share_group, streams_group = groups
    admin = AdminClient({"bootstrap.servers": side.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    gch.make_consumer_group(side.bootstrap, consumer_group, topic)
    gch.make_share_group(side.bootstrap, share_group, topic)
    member = sr.StreamsMember(side.bootstrap, streams_group, "m", "process-m", sr.topology(topic))
    try:
        member.beat()
        member.leave()
    finally:
        member.close()
    for group, values in groups.items():
        gch.set_group_configs(admin, group, values)
        gch.delete_group(admin, group)
    listed = {g.group_id for g in admin.list_consumer_groups().result(30).valid} & set(groups)
    return listed, {group: gch.dynamic_group_configs(admin, group) for group in groups}


def test_group_configs_outlive_the_group_as_on_kafka(pair: Pair) -> None:
    """Kafka 4.4's DeleteGroups (GroupCoordinatorService.deleteGroups) deletes a group's records and
    share state, never its GROUP configs (ConfigRecords): after the three kinds of group are
    deleted, DescribeConfigs shows the same configs on both brokers."""
    tag = uuid.uuid4().hex[:8]
    kafka, mini = (_deleted_groups_configs(side, tag) for side in (pair.kafka, pair.mini))
    assert mini == kafka
    assert kafka[0] == set() and kafka[1][f"gcd-s-{tag}"] == {"share.auto.offset.reset": "earliest"}
    assert kafka[1][f"gcd-st-{tag}"] == {"streams.num.standby.replicas": "1", "streams.num.warmup.replicas": "3"}


def test_streams_warmup_configs_act_as_on_kafka(pair: Pair) -> None:
    """streams.acceptable.recovery.lag and streams.task.offset.interval.ms come back in every
    heartbeat answer (v1's AcceptableRecoveryLag; v0's legacy field is 0), and streams.num.warmup.replicas
    hands out no warm-up task when a stateful task moves: Kafka 4.4's AssignmentRefiner.refine returns
    the target assignment (tests/integration/test_streams_group_warmups.py)."""
    tag = uuid.uuid4().hex[:8]
    runs = []
    for side in (pair.kafka, pair.mini):
        group, source = f"gcfg-sgw-{tag}", f"gcfg-sgw-in-{tag}"
        changelog = f"{group}-store-changelog"
        admin = AdminClient({"bootstrap.servers": side.bootstrap})
        for f in admin.create_topics([NewTopic(source, 2, 1),
                                      NewTopic(changelog, 2, 1, config={"cleanup.policy": "compact"})]).values():
            f.result(30)
        gch.set_group_configs(admin, group, sgw.WARMUP_CONFIGS)
        runs.append(sgw.warmup_run(side.bootstrap, group, source, changelog))
    assert runs[1] == runs[0] == sgw.EXPECTED
