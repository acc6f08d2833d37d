"""Fixtures for running Kafka's own tools against Apache Kafka and minibroker side by side.

`kafka_reference` is one Apache Kafka broker (reference/kafka_reference.py) per session;
`minibroker_ref` is a minibroker of this package's own, also one per session, so that listings
(`--list`, groups, transactions) see only what these tests made. `pair` hands both to a test;
`pair.run(tool, args)` runs the same command against each broker at once and returns both results.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reference import kafka_reference as kr
from tests.reference.acl_helpers import acl_brokers
from tests.reference.differential import Differential
from tests.reference.helpers import Pair, Side


@pytest.fixture(scope="session")
def kafka_reference() -> Iterator[kr.KafkaReference]:
    """Apache Kafka (the version pinned in reference/pom.xml), one node, for the whole session."""
    why = kr.missing_prerequisites()
    if why is not None:
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
    k = kr.KafkaReference()
    k.start()
    try:
        yield k
    finally:
        k.stop()


@pytest.fixture(scope="session")
def minibroker_ref(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A minibroker of its own for these tests, with the same one setting as the reference."""
    from minibroker.testing import BrokerThread

    with BrokerThread(tmp_path_factory.mktemp("minibroker-ref") / "data",
                      overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        yield b


@pytest.fixture(scope="session")
def pair(kafka_reference: kr.KafkaReference, minibroker_ref: object) -> Pair:
    return Pair(Side("kafka", kafka_reference.bootstrap, kafka_reference.data_dir),
                Side("minibroker", minibroker_ref.bootstrap, Path(minibroker_ref.data_dir)))  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def differential(kafka_reference: kr.KafkaReference, minibroker_ref: object) -> Differential:
    """The raw-request harness (tests/reference/differential.py) over the session's two brokers."""
    return Differential(kafka_reference.bootstrap, minibroker_ref.bootstrap)  # type: ignore[attr-defined]


@pytest.fixture(scope="package")
def acl_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[str, str]]]:
    """Apache Kafka and minibroker with the same ACL setup (tests/reference/acl_helpers.py), shared
    by the ACL modules so that the JVM starts once: name -> (PLAINTEXT, SASL_PLAINTEXT bootstrap).
    Each module names its own topics and removes the ACLs it adds."""
    with acl_brokers(tmp_path_factory.mktemp("mini-acl") / "data") as b:
        yield b
