"""A TCP proxy (127.0.0.1) between clients and the broker that makes producers retry: after it has
forwarded a chosen Produce request, it closes both connections instead of forwarding that
request's response. The broker did write the batch; the client cannot know and sends it again.

The broker advertises the proxy's port (advertised.listeners), so every connection a client
opens goes through it. The proxy reads whole frames in both directions (size-prefixed, see
minibroker_protocol.framing) and looks only at the request header's api key and correlation id and the
response's correlation id. Tested here on its own with a raw Produce.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

from tests.helpers import free_port
from tests.integration.helpers import TIMEOUT

PRODUCE = 0


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except OSError:
            return None
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _read_frame(sock: socket.socket) -> bytes | None:
    head = _recv_exact(sock, 4)
    if head is None:
        return None
    body = _recv_exact(sock, struct.unpack(">i", head)[0])
    return None if body is None else head + body


class DroppingProxy:
    """`should_drop(n)` is asked for the n-th Produce request (from 1) seen on any connection;
    True makes the proxy cut that connection when the broker's response arrives."""

    def __init__(self, should_drop: Callable[[int], bool], port: int | None = None):
        self.should_drop = should_drop
        self.port = port or free_port()
        self.upstream: tuple[str, int] | None = None
        self.produce_requests = 0
        self.dropped = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._listener.settimeout(0.2)
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept_loop, name="dropping-proxy", daemon=True)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def advertised_listener(self) -> dict[str, Any]:
        return {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}"}

    def start(self, upstream: str) -> DroppingProxy:
        host, port = upstream.rsplit(":", 1)
        self.upstream = (host, int(port))
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._listener.close()
        with self._lock:
            for s in self._conns:
                _close(s)

    def __enter__(self) -> DroppingProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            assert self.upstream is not None
            try:
                server = socket.create_connection(self.upstream, timeout=TIMEOUT)
            except OSError:
                _close(client)
                continue
            server.settimeout(None)
            client.settimeout(None)
            doomed: set[int] = set()
            with self._lock:
                self._conns += [client, server]
            threading.Thread(target=self._pump_requests, args=(client, server, doomed), daemon=True).start()
            threading.Thread(target=self._pump_responses, args=(server, client, doomed), daemon=True).start()

    def _pump_requests(self, client: socket.socket, server: socket.socket, doomed: set[int]) -> None:
        while True:
            frame = _read_frame(client)
            if frame is None:
                break
            api_key, _, correlation_id = struct.unpack_from(">hhi", frame, 4)
            if api_key == PRODUCE:
                with self._lock:
                    self.produce_requests += 1
                    if self.should_drop(self.produce_requests):
                        doomed.add(correlation_id)
            try:
                server.sendall(frame)
            except OSError:
                break
        _close(client)
        _close(server)

    def _pump_responses(self, server: socket.socket, client: socket.socket, doomed: set[int]) -> None:
        while True:
            frame = _read_frame(server)
            if frame is None:
                break
            (correlation_id,) = struct.unpack_from(">i", frame, 4)
            if correlation_id in doomed:
                with self._lock:
                    self.dropped += 1
                break  # the broker has written the batch; the client never hears of it
            try:
                client.sendall(frame)
            except OSError:
                break
        _close(client)
        _close(server)


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()
