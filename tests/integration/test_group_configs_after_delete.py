"""GROUP config resources outlive DeleteGroups, as on Kafka 4.4: KafkaApis.handleDeleteGroupsRequest ->
GroupCoordinatorService.deleteGroups deletes the share group's state, the streams topology
descriptions and the group's records, never its configs (they are ConfigRecords of the metadata
log; GroupConfigManager drops a group only when its last config is deleted, KAFKA-20288). A group
created again under the same id would find them. Real clients: confluent-kafka's AdminClient (configs,
DeleteGroups), Consumer and ShareConsumer (to make the groups). The cluster's side:
tests/cluster/test_coordinators_on_kraft.py; Kafka's: tests/reference/
test_group_configs_reference.py::test_group_configs_outlive_the_group_as_on_kafka."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient

from minibroker.testing import BrokerThread
from tests.helpers import TEST_OVERRIDES
from tests.integration.group_config_helpers import (
    delete_group,
    dynamic_group_configs,
    make_consumer_group,
    make_share_group,
    set_group_configs,
)
from tests.integration.helpers import create_topic, unique


def test_consumer_and_share_group_configs_outlive_delete_groups(tmp_path):
    data = tmp_path / "data"
    topic, consumer_group, share_group = unique("gcd"), unique("gcd-c"), unique("gcd-s")
    with BrokerThread(data, overrides=dict(TEST_OVERRIDES)) as b:
        create_topic(b, topic)
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        make_consumer_group(b.bootstrap, consumer_group, topic)
        make_share_group(b.bootstrap, share_group, topic)
        set_group_configs(admin, consumer_group, {"consumer.session.timeout.ms": "50000"})
        set_group_configs(admin, share_group, {"share.auto.offset.reset": "earliest",
                                               "share.record.lock.duration.ms": "20000"})
        for group in (consumer_group, share_group):
            delete_group(admin, group)
        groups = {g.group_id for g in admin.list_consumer_groups().result(30).valid}
        assert not groups & {consumer_group, share_group}, groups
        assert dynamic_group_configs(admin, consumer_group) == {"consumer.session.timeout.ms": "50000"}
        assert dynamic_group_configs(admin, share_group) == {"share.auto.offset.reset": "earliest",
                                                             "share.record.lock.duration.ms": "20000"}
    # still there after a restart (the single broker keeps them in *_group_configs.json)
    with BrokerThread(data, overrides=dict(TEST_OVERRIDES)) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        assert dynamic_group_configs(admin, share_group) == {"share.auto.offset.reset": "earliest",
                                                             "share.record.lock.duration.ms": "20000"}
