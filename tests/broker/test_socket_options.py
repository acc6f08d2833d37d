"""The options of an accepted socket, as Kafka's Acceptor sets them: SO_KEEPALIVE and TCP_NODELAY,
and socket.send.buffer.bytes / socket.receive.buffer.bytes: the receive buffer on the listening
socket before it listens (accepted sockets inherit it, and the window scale offered in the
handshake depends on it), the send buffer on each accepted socket; -1 (minibroker's default)
leaves both to the kernel. Linux reports twice the size asked (socket(7))."""

from __future__ import annotations

import socket
import sys

import pytest

from minibroker.testing import BrokerThread
from minibroker_protocol.apis import api_versions
from tests.integration.helpers import RawClient

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux doubles the sizes asked; others differ")


def _options(b: BrokerThread) -> list[tuple[int, int, int, int]]:
    """(SO_SNDBUF, SO_RCVBUF, SO_KEEPALIVE, TCP_NODELAY) of each connection the broker holds."""
    def read(broker):
        return [(c.transport.sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
                 c.transport.sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF),
                 c.transport.sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                 c.transport.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                for c in broker.socket_server.connections]
    return b.call(read)


def _asked(b: BrokerThread) -> tuple[int, int, int, int]:
    """The options of a client's connection, once it has been answered."""
    with RawClient(b.bootstrap) as raw:
        assert raw.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="t", client_software_version="1")
                        ).error_code == 0
        (options,) = _options(b)
        return options


def test_keepalive_and_nodelay(tmp_path):
    with BrokerThread(tmp_path) as b:
        assert _asked(b)[2:] == (1, 1)


def test_kafkas_sizes_when_asked(tmp_path):
    with BrokerThread(tmp_path, overrides={"socket.send.buffer.bytes": 102400, "socket.receive.buffer.bytes": 102400}) as b:
        assert _asked(b)[:2] == (2 * 102400, 2 * 102400)


def test_the_sizes_asked_are_set(tmp_path):
    with BrokerThread(tmp_path, overrides={"socket.send.buffer.bytes": 48 * 1024,
                                           "socket.receive.buffer.bytes": 40 * 1024}) as b:
        assert _asked(b)[:2] == (2 * 48 * 1024, 2 * 40 * 1024)


def test_by_default_the_kernel_sizes_them(tmp_path):
    """-1, minibroker's default (docs/differences.md#socket-buffers-default): nothing is set, so the
    kernel's autotuning sizes them (tcp_wmem / tcp_rmem), not Kafka's 100 KiB."""
    with BrokerThread(tmp_path) as b:
        assert b.call(lambda broker: broker.config.get("socket.send.buffer.bytes")) == -1
        send, receive, _, _ = _asked(b)
    assert send != 2 * 102400 and receive != 2 * 102400
