"""Issue 30, findings 1 and 2: one connection must not hold the memory pool, before or after
login. Against `python -m minibroker` as a child (its loop is not slowed by the test's own
threads), with a well-behaved client asking for Metadata all along (tests/integration/
stall_helpers.py). The bound on its wait is generous for a loaded 2-core machine; the broker as it
was made it wait 30 s (the read timeout) or forever."""

from __future__ import annotations

import logging
import socket
import struct
import time
from typing import Any

import pytest

from minibroker.testing import BrokerThread
from minibroker_protocol.apis import describe_configs
from tests.helpers import BrokerProcess
from tests.integration.helpers import RawClient
from tests.integration.limits_helpers import wait_for
from tests.integration.stall_helpers import MetadataProbe

WORST_WAIT_S = 5.0  # far below the freezes of the issue (30 s, 40 s), above a loaded machine's hiccups


@pytest.fixture(scope="module")
def broker_process(tmp_path_factory: Any) -> Any:
    b = BrokerProcess(tmp_path_factory.mktemp("bounds") / "data")
    b.start()
    yield b
    b.kill()


def _connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10)


def test_six_bytes_claiming_the_pool_stall_nobody(broker_process: BrokerProcess) -> None:
    """Finding 1: a size prefix of 100 MiB and two bytes, on ten connections. The pool charged
    each frame whole when its prefix arrived, so the first one held queued.max.request.bytes and
    nobody was read for socket.request.read.timeout.ms (30 s); now a frame is charged as it
    arrives and the others keep being answered."""
    b = broker_process
    attackers = [_connect(b.bootstrap) for _ in range(10)]
    try:
        for s in attackers:
            s.sendall(struct.pack(">i", 100 * 1024 * 1024))
        time.sleep(0.3)
        for s in attackers:  # the next read of each is charged for what the prefix claims
            s.sendall(b"\0\0")
        time.sleep(0.3)
        with MetadataProbe(b.bootstrap) as probe:
            time.sleep(3)
            assert probe.worst < WORST_WAIT_S, probe.summary()
        assert probe.error is None and probe.answers >= 5, probe.summary()
    finally:
        for s in attackers:
            s.close()


JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret";')


def test_sasl_listener_refuses_a_big_size_prefix_before_login(tmp_path: Any, caplog: Any) -> None:
    """Finding 1: before authentication a size prefix over sasl.server.max.receive.size closes
    the connection at once, as Kafka's SaslServerAuthenticator (InvalidReceiveException); the
    broker used to read the whole 10 MB body before refusing it."""
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                 "sasl.enabled.mechanisms": "PLAIN",
                 "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS}
    caplog.set_level(logging.WARNING, logger="minibroker.network.processor")
    with BrokerThread(tmp_path / "data", overrides=overrides) as b:
        for size, refused in ((10 * 1024 * 1024, True), (524288 + 1, True), (524288, False)):
            with RawClient(b.bootstrap_for("SASL_PLAINTEXT")) as c:
                c.send_raw(struct.pack(">i", size) + b"\0\x12")  # ApiVersions' key, nothing more
                assert c.closed_by_peer(timeout=2.0) is refused, size
    assert any("before authentication (sasl.server.max.receive.size=524288)" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]


@pytest.fixture(scope="module")
def small_pool_broker(tmp_path_factory: Any) -> Any:
    b = BrokerProcess(tmp_path_factory.mktemp("bounds-pool") / "data",
                      overrides={"queued.max.request.bytes": 8 * 1024 * 1024, "connections.max.idle.ms": 3000})
    b.start()
    yield b
    b.kill()


def _describe_broker_configs(raw: RawClient, cid: int) -> bytes:
    req = describe_configs.REQUEST(resources=[describe_configs.REQUEST.DescribeConfigsResource(
        resource_type=4, resource_name="1", configuration_keys=None)], include_synonyms=True,
        include_documentation=True)
    return raw.request_bytes(describe_configs.API, 4, req, cid)


def test_clients_that_do_not_read_their_answers_stall_nobody_and_are_closed(small_pool_broker: BrokerProcess) -> None:
    """Finding 2: two connections pipeline DescribeConfigs (a ~100 KB answer each) and read
    nothing. Their answers were charged to the pool without bound per connection: it filled, no
    connection was read any more, and the idle sweep closed the waiting victims. Now a connection
    is not served while more than 1 MiB of its answers wait (Kafka mutes a channel until its
    response is sent), others keep being answered, and the one that does not read is closed after
    connections.max.idle.ms with a log line."""
    b = small_pool_broker
    hogs = [RawClient(b.bootstrap) for _ in range(2)]
    ports = [h.sock.getsockname()[1] for h in hogs]
    try:
        for h in hogs:
            h.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            h.send_raw(b"".join(_describe_broker_configs(h, i) for i in range(400)))
        with MetadataProbe(b.bootstrap) as probe:
            time.sleep(5)
            assert probe.worst < WORST_WAIT_S, probe.summary()
            assert probe.error is None and probe.answers >= 5, probe.summary()
            for port in ports:  # the hogs are closed, the probe (reading its answers) is not
                line = f"closed connection from 127.0.0.1:{port}: it has read none of its answers"
                # 30 s, ten times connections.max.idle.ms: 10 s ran out with the 2 cores loaded by two
                # pytest-xdist workers (and other processes), though the test passes alone
                assert wait_for(lambda line=line: line in b.log_text(), 30), b.log_text()[-3000:]
            assert probe.error is None, probe.summary()
    finally:
        for h in hogs:
            h.close()
