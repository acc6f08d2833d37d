"""Groups and their GROUP config resources through real clients (confluent-kafka's AdminClient,
Consumer and ShareConsumer), for the tests that a group's configs outlive DeleteGroups on one broker
(tests/integration/test_group_configs_after_delete.py) and on a cluster
(tests/cluster/test_coordinators_on_kraft.py)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, KafkaException, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

from minibroker_protocol.apis import list_groups
from tests.integration.helpers import RawClient


def set_group_configs(admin: AdminClient, group: str, values: dict[str, str]) -> None:
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in values.items()])
    for f in admin.incremental_alter_configs([resource]).values():
        f.result(30)


def dynamic_group_configs(admin: AdminClient, group: str) -> dict[str, str]:
    """The keys the group sets itself (DYNAMIC_GROUP_CONFIG), as DescribeConfigs shows them."""
    [f] = admin.describe_configs([ConfigResource(ConfigResource.Type.GROUP, group)]).values()
    return {name: e.value for name, e in f.result(30).items() if e.source == ConfigSource.GROUP_CONFIG.value}


def make_consumer_group(boot: str, group: str, topic: str) -> None:
    """An Empty group with a committed offset (what DeleteGroups then deletes)."""
    c = Consumer({"bootstrap.servers": boot, "group.id": group, "enable.auto.commit": False})
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                c.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
                return
            except KafkaException as e:  # a fresh Kafka makes and loads __consumer_offsets first
                if not e.args[0].retriable() and e.args[0].code() != KafkaError.NOT_COORDINATOR \
                        or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        c.close()


def make_share_group(boot: str, group: str, topic: str) -> None:
    """A share group: a ShareConsumer joins it (ShareGroupHeartbeat) and leaves."""
    c = ShareConsumer({"bootstrap.servers": boot, "group.id": group})
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            c.poll(0.5)
            if group in _share_groups(boot):
                break
    finally:
        c.close()


def _share_groups(boot: str) -> set[str]:
    """ListGroups v5 filtered to share groups, asked of every broker of `boot` (each lists the groups
    it coordinates; confluent-kafka 2.16's AdminClient has no share type to filter on)."""
    found: set[str] = set()
    for address in boot.split(","):
        with RawClient(address) as c:
            r = c.call(list_groups.API, 5, list_groups.REQUEST(states_filter=[], types_filter=["share"]))
        found |= {g.group_id for g in r.groups}
    return found


def delete_group(admin: AdminClient, group: str) -> None:
    """DeleteGroups, retried while a member that just left is still counted (NON_EMPTY_GROUP)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            admin.delete_consumer_groups([group])[group].result(30)
            return
        except Exception as e:  # KafkaException(NON_EMPTY_GROUP) until the leave is seen
            if time.monotonic() > deadline:
                raise AssertionError(f"{group} not deleted: {e}") from e
            time.sleep(0.5)
