"""GROUP config resources of consumer groups (KIP-848) over the wire: IncrementalAlterConfigs on
resource type 32 sets `consumer.heartbeat.interval.ms` / `consumer.session.timeout.ms`; the
group's members are told the new interval at their next heartbeat; the values survive a restart
(consumer_group_configs.json). Kafka's own tool against both brokers: tests/reference/
test_group_configs_reference.py."""

from __future__ import annotations

import uuid

from minibroker.testing import BrokerThread
from minibroker_protocol.apis import consumer_group_heartbeat, describe_configs, incremental_alter_configs
from minibroker_protocol.errors import ErrorCode as E
from tests.helpers import TEST_OVERRIDES
from tests.integration.helpers import RawClient, create_topic

GROUP = 32
IA, DC, HB = incremental_alter_configs.REQUEST, describe_configs.REQUEST, consumer_group_heartbeat.REQUEST


def _alter(c: RawClient, group: str, **values: str | None) -> tuple[int, str | None]:
    r = c.call(incremental_alter_configs.API, 1, IA(resources=[IA.AlterConfigsResource(
        resource_type=GROUP, resource_name=group, configs=[
            IA.AlterableConfig(name=k.replace("_", "."), config_operation=0 if v is not None else 1, value=v)
            for k, v in values.items()])], validate_only=False))
    return r.responses[0].error_code, r.responses[0].error_message


def _describe(c: RawClient, group: str) -> dict[str, tuple[str, int]]:
    r = c.call(describe_configs.API, 4, DC(resources=[DC.DescribeConfigsResource(
        resource_type=GROUP, resource_name=group, configuration_keys=None)], include_synonyms=False,
        include_documentation=False))
    assert r.results[0].error_code == 0
    return {e.name: (e.value, e.config_source) for e in r.results[0].configs if e.name.startswith("consumer.")}


def test_group_configs_reach_members_and_survive_a_restart(tmp_path):
    group, topic = f"gc-{uuid.uuid4().hex[:6]}", f"gct-{uuid.uuid4().hex[:6]}"
    data = tmp_path / "data"
    with BrokerThread(data, overrides=dict(TEST_OVERRIDES)) as b:
        create_topic(b, topic, 1)
        with RawClient(b.bootstrap) as c:
            join = c.call(consumer_group_heartbeat.API, 1, HB(
                group_id=group, member_id=uuid.uuid4().hex[:22], member_epoch=0, rebalance_timeout_ms=30000,
                subscribed_topic_names=[topic], topic_partitions=[]))
            assert (join.error_code, join.heartbeat_interval_ms) == (0, 5000)
            assert _describe(c, group)["consumer.heartbeat.interval.ms"] == ("5000", 5)  # DEFAULT_CONFIG
            assert _alter(c, group, consumer_heartbeat_interval_ms="7000",
                          consumer_session_timeout_ms="50000") == (0, None)
            code, message = _alter(c, group, consumer_session_timeout_ms="1000")
            assert (code, message) == (E.INVALID_CONFIG, "consumer.session.timeout.ms must be in the range "
                                                         "45000 to 60000 inclusive.")
            again = c.call(consumer_group_heartbeat.API, 1, HB(
                group_id=group, member_id=join.member_id, member_epoch=join.member_epoch))
            assert (again.error_code, again.heartbeat_interval_ms) == (0, 7000)
            assert b.call(lambda broker: broker.group_coordinator.consumer_groups.session_timeout_ms(group)) == 50000
    with BrokerThread(data, overrides=dict(TEST_OVERRIDES)) as b, RawClient(b.bootstrap) as c:
        shown = _describe(c, group)
        assert shown["consumer.heartbeat.interval.ms"] == ("7000", 8)  # GROUP_CONFIG
        assert shown["consumer.session.timeout.ms"] == ("50000", 8)
        assert _alter(c, group, consumer_session_timeout_ms=None) == (0, None)  # DELETE
        assert _describe(c, group)["consumer.session.timeout.ms"] == ("45000", 5)


def test_append_and_subtract_of_a_group_key_answer_kafkas_controller_message(tmp_path):
    """No group key is a LIST to Kafka's controller (KafkaConfigSchema.isSplittable), which answers
    before looking at the key (the cluster's side: tests/reference/test_kafka_cluster_reference.py)."""
    with BrokerThread(tmp_path / "data", overrides=dict(TEST_OVERRIDES)) as b, RawClient(b.bootstrap) as c:
        for op, name, key in ((2, "APPEND", "consumer.session.timeout.ms"),
                              (3, "SUBTRACT", "streams.rack.aware.assignment.tags"), (2, "APPEND", "no.such.key")):
            r = c.call(incremental_alter_configs.API, 1, IA(resources=[IA.AlterConfigsResource(
                resource_type=GROUP, resource_name="g", configs=[IA.AlterableConfig(
                    name=key, config_operation=op, value="1")])], validate_only=False))
            assert (r.responses[0].error_code, r.responses[0].error_message) == (
                E.INVALID_CONFIG, f"Can't {name} to key {key} because its type is not LIST."), key
