"""The warm-up run of a streams group (KIP-1071), shared by tests/integration/test_streams_group_warmups.py
(minibroker) and tests/reference/test_group_configs_reference.py (minibroker and Kafka 4.4)."""

from __future__ import annotations

from tests.integration import streams_raw as sr

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
