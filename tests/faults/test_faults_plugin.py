"""The pytest plugin's ways in to faults (issue 32): the `kafka_faults` fixture on the shared
broker (what a test sets is removed after it) and `@pytest.mark.minibroker(faults=[...])` on
`kafka_broker_isolated`, run in a child pytest as a project would run them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
pytest_plugins = ["pytester"]


@pytest.fixture
def plugin_installed(tmp_path_factory, monkeypatch):
    """The plugin found through the pytest11 entry point, as an installed minibroker offers it
    (as tests/test_testing_fixture.py does)."""
    import tomllib

    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    site = tmp_path_factory.mktemp("site")
    info = site / "minibroker_plugin_check-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: minibroker-plugin-check\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
    monkeypatch.setenv("PYTHONPATH", f"{site}{os.pathsep}{ROOT}")


def test_kafka_faults_fixture_and_marker(pytester, plugin_installed):
    pytester.makepyfile(test_faults="""
        import pytest
        from kafka import KafkaProducer

        def test_a(kafka_broker, kafka_faults):
            t = kafka_broker.new_topic("t")
            with kafka_faults.inject("Produce", error="NOT_LEADER_OR_FOLLOWER", topic=t) as f:
                p = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, retries=3, retry_backoff_ms=10)
                p.send(t, b"x").get(timeout=10)
                p.close()
                assert f.fired == 1
            assert kafka_broker.values(t) == [b"x"]
            kafka_faults.inject("Metadata", delay_ms=1, count=None)  # left set: the fixture removes it

        def test_b(kafka_faults):
            assert kafka_faults.all() == []

        @pytest.mark.minibroker(faults=[{"api": "ApiVersions", "delay_ms": 1, "count": 0}])
        def test_c(kafka_broker_isolated):
            (f,) = kafka_broker_isolated.faults.all()
            assert (f["api"], f["delay_ms"], f["count"]) == ("ApiVersions", 1, None)
    """)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=3)
