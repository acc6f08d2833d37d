"""The `mini_cluster` fixture: a minibroker controller and three minibroker brokers, each a process
(tests/cluster/cluster_helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.cluster_helpers import MiniCluster


@pytest.fixture
def mini_cluster(tmp_path: Path) -> Iterator[MiniCluster]:
    cluster = MiniCluster(tmp_path, overrides={"offsets.topic.replication.factor": 3,
                                               "transaction.state.log.replication.factor": 3})
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
