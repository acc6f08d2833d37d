"""Warm-up settings of a streams group (KIP-1071) over the wire, as Kafka 4.4 treats them: the group's
`streams.acceptable.recovery.lag` and `streams.task.offset.interval.ms` are told to every member in
each StreamsGroupHeartbeat answer (GroupMetadataManager.streamsGroupHeartbeat; v0 has only the
legacy lag field, which Kafka leaves 0), and `streams.num.warmup.replicas` hands out no warm-up
task: Kafka 4.4's GroupMetadataManager.refineAssignment calls AssignmentRefiner.refine, which returns
the target assignment, and its StickyTaskAssignor assigns active and standby tasks only. Configs set
with confluent-kafka's AdminClient; the members speak raw heartbeats (tests/integration/streams_raw.py).
The same run on Kafka 4.4: tests/reference/test_group_configs_reference.py::
test_streams_warmup_configs_act_as_on_kafka."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient

from minibroker.testing import BrokerThread
from tests.helpers import TEST_OVERRIDES
from tests.integration import streams_raw as sr
from tests.integration.group_config_helpers import set_group_configs
from tests.integration.helpers import create_topic, unique
from tests.integration.streams_warmup_helpers import EXPECTED, WARMUP_CONFIGS, warmup_run


def test_warmup_configs_are_told_and_no_warmup_task_is_assigned(tmp_path):
    with BrokerThread(tmp_path / "data", overrides=dict(TEST_OVERRIDES)) as b:
        group, source = unique("sgw"), unique("sgw-in")
        changelog = f"{group}-store-changelog"
        create_topic(b, source, 2)
        create_topic(b, changelog, 2, {"cleanup.policy": "compact"})
        set_group_configs(AdminClient({"bootstrap.servers": b.bootstrap}), group, WARMUP_CONFIGS)
        assert warmup_run(b.bootstrap, group, source, changelog) == EXPECTED
        # without group configs: the group.streams.* broker defaults (Kafka's: 10000, 60000)
        other = unique("sgw-default")
        m = sr.StreamsMember(b.bootstrap, other, "d", "process-d", sr.topology(source), version=1)
        try:
            first = m.beat()
            assert (first.acceptable_recovery_lag, first.task_offset_interval_ms) == (10000, 60000)
        finally:
            m.leave()
            m.close()
