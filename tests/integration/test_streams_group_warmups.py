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

WARMUP_CONFIGS = {"streams.acceptable.recovery.lag": "5", "streams.task.offset.interval.ms": "20000",
                  "streams.num.warmup.replicas": "3", "streams.initial.rebalance.delay.ms": "0"}


def warmup_run(bootstrap: str, group: str, source: str, changelog: str) -> dict[str, object]:
    """Member a (v1) joins a 2-task stateful group alone and takes both tasks; member c (v0, another
    process) joins and one task has to move to it, which is where a coordinator that warms tasks up
    would hand c a warm-up task first. What each side answers."""
    topo = sr.topology(source, changelog)
    a = sr.StreamsMember(bootstrap, group, "a", "process-a", topo, version=1)
    c = sr.StreamsMember(bootstrap, group, "c", "process-c", topo, version=0)
    try:
        alone = sr.settle([a], bootstrap, group)
        settled = sr.settle([a, c], bootstrap, group)
        # every answer carries them; a later one, as Kafka's broker applies a GROUP config when
        # its metadata publisher gets the ConfigRecord, a moment after IncrementalAlterConfigs answered
        told_a, told_c = a.beat(), c.beat()
        return {
            "a_told": (told_a.acceptable_recovery_lag, told_a.task_offset_interval_ms),
            "c_told": (told_c.acceptable_recovery_lag_legacy, told_c.task_offset_interval_ms),
            "a_alone": sorted(p for t in alone["members"][0]["assignment"]["active_tasks"] for p in t["partitions"]),
            "active_each": sorted(sum(len(t["partitions"]) for t in m["assignment"]["active_tasks"])
                                  for m in settled["members"]),
            "warmups_described": [t for m in settled["members"] for t in m["assignment"]["warmup_tasks"]],
            "warmups_answered": a.warmups_seen + c.warmups_seen,
        }
    finally:
        a.leave()
        c.leave()
        a.close()
        c.close()


EXPECTED = {"a_told": (5, 20000), "c_told": (0, 20000), "a_alone": [0, 1], "active_each": [1, 1],
            "warmups_described": [], "warmups_answered": []}


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
