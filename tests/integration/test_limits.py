"""Limits that keep the broker alive (issue 24), against `python -m minibroker` as a child so its
resident memory can be read: the memory attack (300 connections each claiming a 100 MB request
and sending its body as fast as the broker reads), 5,000 idle connections, slowloris frames; and
the connection limits on an in-process broker."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer

from minibroker_protocol.apis import api_versions
from tests.helpers import BrokerProcess
from tests.integration.helpers import RawClient, module_broker
from tests.integration.limits_helpers import MemoryAttack, open_idle, raise_fd_limit, rss_mb, wait_for

ATTACKERS = 300
# the broker's own ~40 MB, plus queued.max.request.bytes (100 MiB by default) and the one request
# over it the pool admits (socket.request.max.bytes, 100 MiB), an eighth more for bytearray growth,
# and the freed heap the command-line broker keeps for reuse (minibroker.malloc_tuning: 64 MiB at
# the top, and holes below it): peaks of 300-345 MB measured. Main reached 3 GB in 8 s; closing 300
# attackers once took it to 1.4 GB (each connection's partly read frame outlived its close)
RSS_BOUND_MB = 400
AFTER_CLOSE_S = 3.0  # that growth was ~80 MB per 100 ms while the broker read the closed sockets dry
READ_TIMEOUT_MS = 1000


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory):
    raise_fd_limit(12_000)  # the child inherits it
    b = BrokerProcess(tmp_path_factory.mktemp("limits") / "data", overrides={
        "socket.listen.backlog.size": 4096, "socket.request.read.timeout.ms": READ_TIMEOUT_MS})
    b.start()
    yield b
    b.kill()


def _ask(bootstrap: str) -> None:
    with RawClient(bootstrap) as raw:
        body = raw.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="it", client_software_version="1"))
        assert body.error_code == 0


def _kcat_metadata(bootstrap: str) -> str:
    out = subprocess.run(["kcat", "-b", bootstrap, "-L", "-m", "10"], capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _produce_consume(bootstrap: str, topic: str, n: int = 20) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(n):
        p.produce(topic, f"m{i}".encode())
    assert p.flush(20) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4()}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    assert got == [f"m{i}".encode() for i in range(n)]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="needs kcat")
def test_memory_attack_keeps_rss_bounded_and_others_served(kafka_broker_module):
    b = kafka_broker_module
    pid = b.proc.pid
    attack = MemoryAttack(b.bootstrap, ATTACKERS)
    attack.start()
    samples: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            samples.append(rss_mb(pid))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        time.sleep(1.5)  # the attack is under way: the pool is full, attackers wait
        assert "broker" in _kcat_metadata(b.bootstrap).lower()
        _produce_consume(b.bootstrap, f"under-attack-{uuid.uuid4().hex[:6]}")
        time.sleep(max(0.0, 6 - 1.5))
        sent = attack.bytes_sent
        attack.stop()  # the attackers close: the broker reads what they left in its sockets, and drops it
        time.sleep(AFTER_CLOSE_S)
    finally:
        stop.set()
        sampler.join()
        attack.stop()
    assert sent > 500e6, "the attack did not get going"
    assert max(samples) < RSS_BOUND_MB, f"RSS peaked at {max(samples):.0f} MB"
    # every attacker whose request was not read in full was paused (waiting for memory) or closed,
    # with a log line (a request read in full, past a full pool as its overflow, never waited; its
    # connection then closed between requests, which is not logged)
    def logged() -> set[int]:
        text = b.log_text()
        return {int(p) for p in re.findall(r"(?:pausing reads from|closed connection from) 127\.0\.0\.1:(\d+)", text)}
    held = attack.unfinished_ports()
    assert len(held) > ATTACKERS // 2
    assert wait_for(lambda: held <= logged(), 10), f"{len(held - logged())} attackers without a log line"
    _ask(b.bootstrap)  # and the broker is still up


def test_five_thousand_idle_connections(kafka_broker_module):
    b = kafka_broker_module
    before = rss_mb(b.proc.pid)
    socks = open_idle(b.bootstrap, 5000)
    try:
        _ask(b.bootstrap)
        assert "broker" in _kcat_metadata(b.bootstrap).lower() if shutil.which("kcat") else True
        grown = rss_mb(b.proc.pid) - before
        assert grown < 100, f"5,000 idle connections took {grown:.0f} MB"
    finally:
        for s in socks:
            s.close()
    _ask(b.bootstrap)


def test_slowloris_frame_is_dropped_with_a_log_line(kafka_broker_module):
    b = kafka_broker_module
    host, port = b.bootstrap.rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
    s.settimeout(0.1)
    s.sendall((1000).to_bytes(4, "big") + b"\0" * 10)  # claims 1000 bytes, trickles the rest
    started = time.monotonic()
    closed = False
    # the bound is the loop's, not a timing claim: on a loaded 2-core machine the close may come
    # seconds late (a 5 s bound failed a fresh CI run at load 20); never before the timeout
    while time.monotonic() - started < 60 and not closed:
        try:
            s.send(b"\0")
            closed = s.recv(1) == b""
        except TimeoutError:
            pass
        except OSError:
            closed = True
    elapsed = time.monotonic() - started
    s.close()
    assert closed and READ_TIMEOUT_MS / 1000 <= elapsed
    assert wait_for(lambda: "socket.request.read.timeout.ms=1000" in b.log_text(), 5)
    _ask(b.bootstrap)


@pytest.fixture(scope="module")
def kafka_broker_module_limited(tmp_path_factory):
    with module_broker(tmp_path_factory, {"max.connections": 9, "max.connections.per.ip": 3,
                                          "max.connections.per.ip.overrides": "127.0.0.2:5"}) as b:
        yield b


def _connect_from(bootstrap: str, source: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    s = socket.socket()
    s.bind((source, 0))
    s.settimeout(5)
    s.connect((host, int(port)))
    return s


def test_connection_limits_per_ip_and_overrides(kafka_broker_module_limited, caplog):
    b = kafka_broker_module_limited
    with caplog.at_level("WARNING", logger="minibroker.network.connection_quotas"):
        held = [_connect_from(b.bootstrap, "127.0.0.1") for _ in range(3)]
        for s in held:
            s.settimeout(0.3)
        extra = _connect_from(b.bootstrap, "127.0.0.1")
        assert extra.recv(1) == b""  # closed at once
        other = [_connect_from(b.bootstrap, "127.0.0.2") for _ in range(5)]  # its override is 5
        sixth = _connect_from(b.bootstrap, "127.0.0.2")
        assert sixth.recv(1) == b""
        ninth = _connect_from(b.bootstrap, "127.0.0.3")
        ninth.settimeout(0.3)
        with pytest.raises(TimeoutError):
            ninth.recv(1)  # accepted and open
        # max.connections=9 is reached (3 + 5 + 1): another address is refused too
        third = _connect_from(b.bootstrap, "127.0.0.3")
        assert third.recv(1) == b""
        for s in held:  # the ones accepted still work
            s.settimeout(5)
        for s in held[:1]:
            s.close()
        time.sleep(0.2)
        # a slot is free again: a new connection from 127.0.0.1 is served
        with RawClient(b.bootstrap) as raw:
            raw.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="it", client_software_version="1"))
        for s in held[1:] + other + [extra, sixth, ninth, third]:
            s.close()
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "refused connection from 127.0.0.1: the address already has the maximum of 3" in text
    assert "refused connection from 127.0.0.2: the address already has the maximum of 5" in text
    assert "refused connection from 127.0.0.3: the broker holds max.connections=9" in text
