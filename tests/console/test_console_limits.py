"""/metrics for the broker's limits (issue 24's counters, issue 21's exposition): the request
memory pool, open and refused connections, throttled responses, slow requests and idle closes,
parsed with prometheus_client's own parser and moved by real sockets and a real client."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.testing import BrokerThread
from tests.console.helpers import CONSOLE_OVERRIDES, console_url, get
from tests.integration.helpers import Deadline, create_topic, module_broker, unique

POOL = 4 * 1024 * 1024


@pytest.fixture(scope="module")
def broker(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    with module_broker(tmp_path_factory, {**CONSOLE_OVERRIDES, "max.connections.per.ip": 3,
                                          "queued.max.request.bytes": POOL}) as b:
        yield b


def scrape(b: BrokerThread) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    status, _, body = get(f"{console_url(b)}/metrics")
    assert status == 200
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(body) for s in f.samples}


def test_limits_in_metrics(broker: BrokerThread) -> None:
    from confluent_kafka import Producer

    m = scrape(broker)
    assert m[("kafka_network_socketserver_memorypoolused", ())] == 0
    assert m[("kafka_network_socketserver_memorypoolavailable", ())] == POOL
    assert m[("minibroker_memorypool_waiting", ())] == 0
    assert m[("kafka_server_socket_server_metrics_connection_count", ())] == 0
    for quota in ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "connection_creation_rate"):
        assert m[("minibroker_quota_throttled_responses_total", (("quota", quota),))] == 0
    assert m[("minibroker_requests_slow_dropped_total", ())] == 0
    assert m[("minibroker_connections_idle_closed_total", ())] == 0
    # a real client's produce goes through the pool: its peak moves, and it is given back
    topic = unique("limits")
    create_topic(broker, topic, 1)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    p.produce(topic, value=b"x" * 50_000, partition=0)
    assert p.flush(10) == 0
    m = scrape(broker)
    assert m[("minibroker_memorypool_peak_bytes", ())] >= 50_000
    assert m[("kafka_network_socketserver_memorypoolused", ())] == 0
    assert m[("kafka_server_socket_server_metrics_connection_count", ())] >= 1
    del p
    # max.connections.per.ip = 3: with three open, a fourth is refused and counted by reason
    host, port = broker.bootstrap.split(":")
    deadline = Deadline(10)
    while scrape(broker)[("kafka_server_socket_server_metrics_connection_count", ())] != 0:
        assert deadline, "the producer's connections did not close"
        time.sleep(0.05)
    socks = [socket.create_connection((host, int(port)), timeout=5) for _ in range(4)]
    try:
        deadline = Deadline(10)
        while True:
            m = scrape(broker)
            refused = {dict(labels)["limit"]: v for (name, labels), v in m.items()
                       if name == "minibroker_connections_refused_total"}
            if sum(refused.values()) >= 1:
                break
            assert deadline, refused
            time.sleep(0.05)
        assert refused == {"max.connections.per.ip": 1}
        assert m[("kafka_server_socket_server_metrics_connection_count", ())] == 3
    finally:
        for s in socks:
            s.close()
