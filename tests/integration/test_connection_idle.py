"""Broker socket settings that act on connections: connections.max.idle.ms closes quiet
connections (Kafka: Selector's idle expiry), socket.listen.backlog.size is the listen backlog
(KIP-764)."""

from __future__ import annotations

import logging
import shutil
import subprocess
import time

import pytest

from minibroker_protocol.apis import api_versions
from tests.integration.helpers import RawClient, module_broker

MAX_IDLE_MS = 300
BACKLOG = 7


@pytest.fixture(scope="module")
def mb(tmp_path_factory):
    with module_broker(tmp_path_factory, {"connections.max.idle.ms": MAX_IDLE_MS,
                                          "socket.listen.backlog.size": BACKLOG}) as b:
        yield b


def ask(raw: RawClient) -> None:
    body = raw.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="it-raw",
                                                              client_software_version="1"))
    assert body.error_code == 0


def test_idle_connection_is_closed_with_a_log_line(mb, caplog):
    with caplog.at_level(logging.INFO, logger="minibroker.network"), RawClient(mb.bootstrap) as raw:
        ask(raw)
        started = time.monotonic()
        raw.sock.settimeout(10)
        assert raw.sock.recv(1) == b""  # the broker closed it
        quiet = time.monotonic() - started
    # the sweep runs every half of the limit: closed after the limit, well before 10 s
    assert MAX_IDLE_MS / 1000 * 0.9 <= quiet < 5
    assert any("connections.max.idle.ms=300" in r.getMessage() for r in caplog.records)


def test_active_connection_is_not_closed(mb):
    with RawClient(mb.bootstrap) as raw:
        deadline = time.monotonic() + 4 * MAX_IDLE_MS / 1000
        while time.monotonic() < deadline:  # a request every third of the limit
            ask(raw)
            time.sleep(MAX_IDLE_MS / 3000)
        ask(raw)


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss (iproute2)")
def test_listen_backlog_is_the_configured_size(mb):
    port = mb.bootstrap.rsplit(":", 1)[1]
    out = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    # For a listening socket, ss shows the backlog as Send-Q (the 3rd column).
    assert [line.split()[2] for line in out.splitlines()] == [str(BACKLOG)]
