"""The `mini_cluster` fixture: a minibroker controller and three minibroker brokers, each a process
(tests/cluster/cluster_helpers.py), one per module: each test names its own topics and groups, and
the cluster is healed after it (every broker serving again), as the `kafka_cluster` fixture does.
A start and a stop cost some 15 s on a loaded machine; per test they were most of these modules'
time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.cluster_helpers import MiniCluster

OVERRIDES = {"offsets.topic.replication.factor": 3, "transaction.state.log.replication.factor": 3,
             "share.coordinator.state.topic.replication.factor": 3}


@pytest.fixture(scope="module")
def mini_cluster_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniCluster]:
    cluster = MiniCluster(tmp_path_factory.mktemp("mini-cluster"), overrides=OVERRIDES)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def mini_cluster(mini_cluster_module: MiniCluster) -> Iterator[MiniCluster]:
    yield mini_cluster_module
    mini_cluster_module.heal()  # the next test of the module starts with every broker serving


@pytest.fixture
def mini_cluster_fresh(tmp_path: Path) -> Iterator[MiniCluster]:
    """A cluster of the test's own, for a test that fails on the module's shared one (its docstring
    says why)."""
    cluster = MiniCluster(tmp_path, overrides=OVERRIDES)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
