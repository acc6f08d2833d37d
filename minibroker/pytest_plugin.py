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

Config keys for the shared broker go in the ini file: `minibroker_overrides = num.partitions=3`
(one `key=value` per line). Nothing is imported from the broker until a fixture is used, so the
plugin costs nothing in test runs that do not use it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported on first use: a test session that uses no fixture imports no broker
    from minibroker.faults.client import BrokerFaults, InjectedFault
    from minibroker.testing import BrokerThread, ConfigValue, Namespace

# Tests want rebalances now, not after Kafka's 3 s production default (KIP-134).
_DEFAULTS = {"group.initial.rebalance.delay.ms": 0}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("minibroker_overrides", "Kafka config keys (key=value per line) for the kafka_broker fixture",
                  type="linelist", default=[])


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "minibroker(overrides=None, faults=None): config keys and faults (dicts "
                                       "as POST /api/faults takes them) for kafka_broker_isolated")


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
    from minibroker.testing import BrokerThread  # lazy: only when a fixture is used

    with BrokerThread(tmp_path_factory.mktemp("minibroker"), overrides=_ini_overrides(request.config)) as b:
        yield b


@pytest.fixture
def kafka_broker(request: pytest.FixtureRequest, kafka_broker_session: BrokerThread) -> Namespace:
    from minibroker.testing import Namespace  # lazy: only when a fixture is used

    return Namespace(kafka_broker_session, request.node.name)


@pytest.fixture
def kafka_broker_isolated(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Namespace]:
    from minibroker.testing import BrokerThread, Namespace  # lazy: only when a fixture is used

    overrides = _ini_overrides(request.config)
    marker = request.node.get_closest_marker("minibroker")
    if marker is not None:
        overrides.update(marker.kwargs.get("overrides") or {})
    with BrokerThread(tmp_path / "minibroker", overrides=overrides) as b:
        for spec in (marker.kwargs.get("faults") or ()) if marker is not None else ():
            b.faults.inject_json(spec)
        yield Namespace(b, request.node.name)


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
