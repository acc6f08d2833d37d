"""pytest plugin: a Kafka broker for a project's test suite, in the test process.

Registered through the `pytest11` entry point, so installing minibroker is enough. Fixtures:

- `kafka_broker`: a `Namespace` on one broker shared by the whole session (started on first use,
  ephemeral port, temp dir). `kafka_broker.bootstrap` is the address for clients;
  `kafka_broker.new_topic("orders", 3)` creates this test's own topic and returns its full name,
  `kafka_broker.group("g")` a group id no other test uses. Every helper of
  minibroker.testing.BrokerThread is on it (records, end_offsets, committed, add_record,
  assert_produces, wait_for...).
- `kafka_broker_isolated`: the same helpers on a broker of the test's own, stopped after it.
  Config keys for it: `@pytest.mark.minibroker(overrides={"num.partitions": 3})`.
- `kafka_broker_session`: the shared BrokerThread itself (no namespace).
- `kafka_topic`: a fresh one-partition topic for the test (its name).
- `kafka_faults`: faults on the shared broker (minibroker.faults.client: `kafka_faults.inject("Produce",
  error="NOT_LEADER_OR_FOLLOWER")`); the faults a test set are removed after it. On
  `kafka_broker_isolated`, `@pytest.mark.minibroker(faults=[{"api": "Fetch", "delay_ms": 500}])` sets
  faults before the test runs (the keys of POST /api/faults, docs/testing.md); they are on
  `kafka_broker_isolated.faults`.
- `kafka_bootstrap`: the shared broker's bootstrap address.
- `kafka_cluster`: a `minibroker.testing.Cluster` of processes (one KRaft controller, 3 brokers by
  default), shared by the tests of a module (its start-up takes seconds) and healed after each
  test (stopped brokers started again, paused ones resumed). Its size and config keys:
  `pytestmark = pytest.mark.minibroker_cluster(brokers=5, overrides={...}, console=True)` in the
  module (console: broker 1's console with the faults HTTP API, `kafka_cluster.console_url`).
  `kafka_cluster_factory(brokers=1, overrides=...)` starts one of the test's own, stopped after it.

Config keys for the shared broker go in the ini file: `minibroker_overrides = num.partitions=3`
(one `key=value` per line). Nothing is imported from the broker until a fixture is used, so the
plugin costs nothing in test runs that do not use it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported on first use: a test session that uses no fixture imports no broker
    from minibroker.faults.client import BrokerFaults, InjectedFault
    from minibroker.testing import BrokerThread, Cluster, ConfigValue, Namespace

# Tests want rebalances now, not after Kafka's 3 s production default (KIP-134).
_DEFAULTS = {"group.initial.rebalance.delay.ms": 0}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("minibroker_overrides", "Kafka config keys (key=value per line) for the kafka_broker fixture",
                  type="linelist", default=[])


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "minibroker(overrides=None, faults=None): config keys and faults (dicts "
                                       "as POST /api/faults takes them) for kafka_broker_isolated")
    config.addinivalue_line("markers", "minibroker_cluster(brokers=3, overrides=None, console=False): the size, "
                                       "config keys and console (faults over HTTP) of a module's kafka_cluster")


def _testing() -> ModuleType:
    import minibroker.testing  # lazy: only when a fixture is used (the plugin costs nothing otherwise)

    return minibroker.testing


def _ini_overrides(config: pytest.Config) -> dict[str, ConfigValue]:
    out: dict[str, ConfigValue] = dict(_DEFAULTS)
    for line in config.getini("minibroker_overrides"):
        key, eq, value = line.partition("=")
        if not eq:
            raise pytest.UsageError(f"minibroker_overrides: expected key=value, got {line!r}")
        out[key.strip()] = value.strip()
    return out


@pytest.fixture(scope="session")
def kafka_broker_session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                         ) -> Iterator[BrokerThread]:
    with _testing().BrokerThread(tmp_path_factory.mktemp("minibroker"), overrides=_ini_overrides(request.config)) as b:
        yield b


@pytest.fixture
def kafka_broker(request: pytest.FixtureRequest, kafka_broker_session: BrokerThread) -> Namespace:
    return _testing().Namespace(kafka_broker_session, request.node.name)


@pytest.fixture
def kafka_broker_isolated(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Namespace]:
    testing = _testing()
    overrides = _ini_overrides(request.config)
    marker = request.node.get_closest_marker("minibroker")
    if marker is not None:
        overrides.update(marker.kwargs.get("overrides") or {})
    with testing.BrokerThread(tmp_path / "minibroker", overrides=overrides) as b:
        for spec in (marker.kwargs.get("faults") or ()) if marker is not None else ():
            b.faults.inject_json(spec)
        yield testing.Namespace(b, request.node.name)


@pytest.fixture
def kafka_topic(kafka_broker: Namespace) -> str:
    return kafka_broker.new_topic("topic")


@pytest.fixture
def kafka_faults(kafka_broker_session: BrokerThread) -> Iterator[BrokerFaults[InjectedFault]]:
    faults = kafka_broker_session.faults
    before = faults.ids()
    yield faults
    for fid in faults.ids() - before:
        faults.remove(fid)


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_broker_session: BrokerThread) -> str:
    return kafka_broker_session.bootstrap


@pytest.fixture(scope="module")
def kafka_cluster_module(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    marker = request.node.get_closest_marker("minibroker_cluster")
    kwargs = marker.kwargs if marker is not None else {}
    console = kwargs.get("console", False)  # broker 1's console, with the faults HTTP API
    cluster = _testing().Cluster(kwargs.get("brokers", 3), overrides=kwargs.get("overrides"),
                                 console_port=0 if console else None, console_allow_faults=console)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def kafka_cluster(kafka_cluster_module: Cluster) -> Iterator[Cluster]:
    yield kafka_cluster_module
    kafka_cluster_module.heal()  # the next test of the module starts with every broker serving


@pytest.fixture
def kafka_cluster_factory() -> Iterator[Callable[..., Cluster]]:
    started: list[Cluster] = []

    def make(brokers: int = 3, overrides: dict[str, str | int | bool] | None = None) -> Cluster:
        cluster = _testing().Cluster(brokers, overrides=overrides)
        started.append(cluster)
        return cluster.start()

    yield make
    for cluster in started:
        cluster.stop()
