"""A KIP-1071 streams group outlives a broker restart (issue 35): its records in __consumer_offsets
are replayed, so the group comes back with its epochs, topology, members and assignment, its
members heartbeat on at their epochs (no rejoin), and its committed offsets are there. Raw
StreamsGroupHeartbeat/Describe/OffsetCommit over TCP (tests/integration/streams_raw.py)."""

from __future__ import annotations

from pathlib import Path

from minibroker.testing import BrokerThread
from tests.integration import streams_raw as sr

GROUP = "restart-app"


def test_streams_group_survives_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    topo = sr.topology("restart-in", "restart-app-store-changelog")
    with BrokerThread(data, overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        b.create_topic("restart-in", 4)
        a, c = (sr.StreamsMember(b.bootstrap, GROUP, m, f"process-{m}", topo) for m in ("a", "c"))
        before = sr.settle([a, c], b.bootstrap, GROUP)
        owner = a if a.active else c
        task_partition = owner.active["0"][0]
        assert owner.commit("restart-in", task_partition, 42) == 0
        a.close()
        c.close()
    with BrokerThread(data, overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        after = sr.describe(b.bootstrap, GROUP)
        assert after == before
        assert sr.committed(b.bootstrap, GROUP, "restart-in", task_partition) == 42
        # the members go on at their epochs, owning what they owned: nothing to rebalance
        for m in (a, c):
            m.client = sr.RawClient(b.bootstrap, client_id="streams-raw")
            epoch, active = m.epoch, m.active
            m.beat()
            assert (m.epoch, m.active) == (epoch, active)
            m.close()
        assert sr.describe(b.bootstrap, GROUP)["group_epoch"] == before["group_epoch"]
