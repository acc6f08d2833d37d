"""Quotas and connection limits of issue 24 not covered by test_limits.py and
tests/reference/test_quotas.py: request_percentage, a user's quota once SASL has authenticated
them, the per-IP connection_creation_rate quota (refuses), and max.connection.creation.rate
(the listener stops accepting for a while). The brokers measure over quota.window.num=2 windows of
1 s, so a client's burst is one second's worth and the tests stay short; quotas are set on the
broker's quota store, the path AlterClientQuotas takes (kafka-configs drives that in
tests/reference/test_quotas.py)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest
from confluent_kafka import Producer

from minibroker.quotas.store import (
    CLIENT_ID,
    CONNECTION_CREATION_RATE,
    IP,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    USER,
)
from minibroker.testing import BrokerThread
from minibroker_protocol.apis import api_versions, metadata
from tests.integration.helpers import RawClient, module_broker, unique

SMALL_WINDOWS = {"quota.window.num": 2, "quota.window.size.seconds": 1}
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
SASL = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
}


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory: Any) -> Any:
    with module_broker(tmp_path_factory, {**SASL, **SMALL_WINDOWS}) as b:
        yield b


@pytest.fixture(scope="module")
def kafka_broker_module_accept_rate(tmp_path_factory: Any) -> Any:
    with module_broker(tmp_path_factory, {**SMALL_WINDOWS, "max.connection.creation.rate": 5}) as b:
        yield b


def set_quota(b: BrokerThread, entity: tuple[tuple[str, str | None], ...], key: str, value: float | None) -> None:
    b.call(lambda broker: broker.quota_store.apply([(entity, {key: value})]))


def _metadata(raw: RawClient) -> int:
    body = raw.call(metadata.API, 12, metadata.REQUEST(topics=[], allow_auto_topic_creation=False,
                                                       include_topic_authorized_operations=False))
    return body.throttle_time_ms


def _hammer(bootstrap: str, client_id: str, seconds: float, out: dict[str, Any]) -> None:
    throttles = []
    with RawClient(bootstrap, client_id=client_id) as raw:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            throttles.append(_metadata(raw))
    out[client_id] = throttles


def test_request_percentage_throttles_and_mutes(kafka_broker_module: BrokerThread) -> None:
    """Two clients send Metadata requests back to back for 1.5 s; the one held to 1 % of a thread
    (10 ms of handler time a second) sees throttle times and, muted for them (KIP-219), gets far
    fewer requests through than the other."""
    b = kafka_broker_module
    busy, idle = unique("busy"), unique("idle")
    entity = ((CLIENT_ID, busy),)
    set_quota(b, entity, REQUEST_PERCENTAGE, 1.0)
    out: dict[str, Any] = {}
    try:
        threads = [threading.Thread(target=_hammer, args=(b.bootstrap, cid, 1.5, out)) for cid in (busy, idle)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
    finally:
        set_quota(b, entity, REQUEST_PERCENTAGE, None)
    throttled = [t for t in out[busy] if t]
    assert throttled and sum(throttled) >= 500, (len(out[busy]), throttled[:20])  # muted most of the time
    assert not any(out[idle]), "another client id was throttled"
    assert len(out[busy]) * 3 < len(out[idle]), (len(out[busy]), len(out[idle]))


def _produce(bootstrap: str, n: int, conf: dict[str, Any]) -> list[int]:
    throttles: list[int] = []
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50,
                  "throttle_cb": lambda ev: throttles.append(int(ev.throttle_time * 1000)), **conf})
    topic = unique("uq")
    for _ in range(n):
        p.produce(topic, b"x" * 10_000)
    assert p.flush(20) == 0
    p.poll(0.2)  # the throttle callback is served by poll
    return throttles


def test_user_quota_applies_to_the_sasl_principal(kafka_broker_module: BrokerThread) -> None:
    """KIP-55: /users/alice applies to a client authenticated as alice, not to ANONYMOUS."""
    b = kafka_broker_module
    entity = ((USER, "alice"),)
    set_quota(b, entity, PRODUCER_BYTE_RATE, 50_000)
    cid = unique("both")
    try:
        alice = _produce(b.bootstrap_for("SASL_PLAINTEXT"), 20, {
            "client.id": cid, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": "alice", "sasl.password": "alice-secret"})
        anonymous = _produce(b.bootstrap, 20, {"client.id": cid})
        admin = _produce(b.bootstrap_for("SASL_PLAINTEXT"), 20, {
            "client.id": cid, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": "admin", "sasl.password": "admin-secret"})
    finally:
        set_quota(b, entity, PRODUCER_BYTE_RATE, None)
    assert alice and max(alice) > 0, alice
    assert not anonymous and not admin, (anonymous, admin)


def _connect_from(bootstrap: str, source: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    s = socket.socket()
    s.bind((source, 0))
    s.settimeout(5)
    s.connect((host, int(port)))
    return s


def _open(s: socket.socket, wait: float = 0.3) -> bool:
    """True if the broker keeps `s` open (nothing to read for `wait` seconds)."""
    s.settimeout(wait)
    try:
        return s.recv(1) != b""
    except TimeoutError:
        return True
    except OSError:
        return False


def test_ip_connection_creation_rate_quota_refuses(kafka_broker_module: BrokerThread, caplog: Any) -> None:
    b = kafka_broker_module
    entity = ((IP, "127.0.0.5"),)
    set_quota(b, entity, CONNECTION_CREATION_RATE, 2)
    socks: list[socket.socket] = []
    try:
        with caplog.at_level("WARNING", logger="minibroker.network.connection_quotas"):
            socks = [_connect_from(b.bootstrap, "127.0.0.5") for _ in range(3)]
            other = _connect_from(b.bootstrap, "127.0.0.6")
            socks.append(other)
            assert [_open(s) for s in socks] == [True, True, False, True]
            with RawClient(b.bootstrap) as raw:  # the listener keeps serving
                assert raw.call(api_versions.API, 3, api_versions.REQUEST(
                    client_software_name="it", client_software_version="1")).error_code == 0
    finally:
        set_quota(b, entity, CONNECTION_CREATION_RATE, None)
        for s in socks:
            s.close()
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "refused connection from 127.0.0.5: over its connection_creation_rate quota" in text


def test_max_connection_creation_rate_pauses_accepting(kafka_broker_module_accept_rate: BrokerThread) -> None:
    """Over max.connection.creation.rate the listener stops accepting for the throttle time: the
    connections wait in the backlog and are served late, none is refused (Kafka's acceptor)."""
    b = kafka_broker_module_accept_rate
    n = 10
    answered: dict[int, float] = {}
    start = time.monotonic()

    def ask(i: int) -> None:
        with RawClient(b.bootstrap, timeout=15) as raw:
            assert raw.call(api_versions.API, 3, api_versions.REQUEST(
                client_software_name="it", client_software_version="1")).error_code == 0
            answered[i] = time.monotonic() - start

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    times = sorted(answered.values())
    assert len(times) == n, "a connection was refused or not served"
    # 5 a second over a 1 s window: about 5 at once, then 0.2 s, 0.4 s, 0.6 s ... apart
    assert times[4] < 0.5 and times[-1] >= 0.8, times
