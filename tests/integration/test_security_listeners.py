"""Several named listeners (`listeners`, `advertised.listeners`, `listener.security.protocol.map`):
each is bound on its own port, and Metadata, FindCoordinator and DescribeCluster answer with the
advertised address of the listener the request came in on, as Kafka's do (the inside/outside
setup of docker-compose.yml)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from minibroker.testing import BrokerThread
from minibroker_protocol.apis import describe_cluster, find_coordinator, metadata
from tests.integration.helpers import RawClient, module_broker

# INSIDE is advertised as "localhost" and OUTSIDE as 127.0.0.1: both reach the broker here, and
# the answers tell which listener a client came in on.
LISTENERS = {
    "listeners": "INSIDE://127.0.0.1:0,OUTSIDE://127.0.0.1:0",
    "advertised.listeners": "INSIDE://localhost:0,OUTSIDE://127.0.0.1:0",
    "listener.security.protocol.map": "INSIDE:PLAINTEXT,OUTSIDE:PLAINTEXT",
}


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory: Any) -> Any:
    with module_broker(tmp_path_factory, LISTENERS) as b:
        yield b


def _addresses(bootstrap: str) -> tuple[tuple[str, int], tuple[str, int], tuple[str, int]]:
    with RawClient(bootstrap) as c:
        md = c.call(metadata.API, 12, metadata.REQUEST(topics=None, allow_auto_topic_creation=False))
        fc = c.call(find_coordinator.API, 4, find_coordinator.REQUEST(key_type=0, coordinator_keys=["g"]))
        dc = c.call(describe_cluster.API, 1, describe_cluster.REQUEST(include_cluster_authorized_operations=False,
                                                                       endpoint_type=1))
    [b] = md.brokers
    [coord] = fc.coordinators
    [dcb] = dc.brokers
    return (b.host, b.port), (coord.host, coord.port), (dcb.host, dcb.port)


def test_each_listener_answers_with_its_own_advertised_address(kafka_broker_module: BrokerThread) -> None:
    b = kafka_broker_module
    inside, outside = b.bootstrap_for("INSIDE"), b.bootstrap_for("OUTSIDE")
    assert inside != outside and b.bootstrap == inside  # the first listener is the bootstrap
    inside_port, outside_port = int(inside.rsplit(":", 1)[1]), int(outside.rsplit(":", 1)[1])
    assert _addresses(inside) == (("localhost", inside_port),) * 3
    assert _addresses(outside) == (("127.0.0.1", outside_port),) * 3


def test_a_real_client_is_sent_to_the_listener_it_came_in_on(kafka_broker_module: BrokerThread) -> None:
    b = kafka_broker_module
    for listener, host in (("INSIDE", "localhost"), ("OUTSIDE", "127.0.0.1")):
        bootstrap = b.bootstrap_for(listener)
        md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
        [broker] = md.brokers.values()
        assert f"{broker.host}:{broker.port}" == f"{host}:{bootstrap.rsplit(':', 1)[1]}"
