"""The listening socket and the set of connections; start and graceful stop.

`BrokerServer` is what the CLI and the in-process test fixture both run: it opens the data
directory (recovery happens here), binds the listener (port 0 picks a free port, which is then
advertised), accepts connections with the loop's `add_reader` on the listening socket, and on
`stop()` stops accepting, lets every connection finish the request it is handling and send its
responses, then flushes the logs and writes the checkpoints and the clean-shutdown marker, so the
next start scans nothing.

The listen backlog is `socket.listen.backlog.size` (KIP-764). Connections quiet for longer than
`connections.max.idle.ms` are closed, as Kafka's Selector expires idle channels: one periodic sweep
over the connection set rather than a timer per connection or request; a connection that is
handling a request or still sending is never idle.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from minibroker.config import BrokerConfig, Endpoint

if TYPE_CHECKING:
    from minibroker.broker import Broker
    from minibroker.connection import Connection
    from minibroker.console import Console
    from minibroker.security.settings import SaslSettings
    from minibroker.security.tls import TlsSettings

log = logging.getLogger("minibroker.server")


class BrokerServer:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.broker: Broker | None = None
        self._sock: socket.socket | None = None  # the first listener's (the bootstrap address)
        self._socks: list[tuple[socket.socket, Endpoint]] = []  # every listener's, first included
        self._loop: asyncio.AbstractEventLoop | None = None
        self.connections: set[Connection] = set()
        self._idle_sweep: asyncio.Task[None] | None = None
        self._slow_sweep: asyncio.Task[None] | None = None
        self._accept_paused: asyncio.TimerHandle | None = None
        self.slow_requests_dropped = 0  # for /metrics
        self.idle_closed = 0
        self.console: Console | None = None  # the web console and /metrics, when console.port >= 0
        # SASL_* listeners' settings, by listener name (read before anything is bound: a bad
        # JAAS config fails the start). The security modules are imported only for listeners that
        # need them: a PLAINTEXT broker starts without them (issue 22, tests/test_startup_imports.py).
        self._sasl: dict[str, SaslSettings] = {}
        if any(e.security_protocol.startswith("SASL_") for e in config.listener_endpoints):
            from minibroker.security.settings import SaslSettings

            self._sasl = {e.listener_name: SaslSettings.for_listener(config, e) for e in config.listener_endpoints
                          if e.security_protocol.startswith("SASL_")}
        # SSL and SASL_SSL listeners' TLS contexts (a keystore that does not load fails the start)
        self._tls: dict[str, TlsSettings] = {}
        if any(e.security_protocol in ("SSL", "SASL_SSL") for e in config.listener_endpoints):
            from minibroker.security.tls import TlsSettings

            self._tls = {e.listener_name: TlsSettings.for_listener(config, e) for e in config.listener_endpoints
                         if e.security_protocol in ("SSL", "SASL_SSL")}
        self.host = config.listener_host
        self.port = config.listener_port

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def bootstrap_for(self, listener: str) -> str:
        """host:port that listener `listener` (a listener name, as in `listeners`) is bound to."""
        for sock, endpoint in self._socks:
            if endpoint.listener_name == listener.upper():
                host, port = sock.getsockname()[:2]
                return f"{host}:{port}"
        raise KeyError(f"no listener named {listener}")

    def _bind(self, endpoint: Endpoint) -> socket.socket:
        host = endpoint.host or "0.0.0.0"
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, endpoint.port))
            sock.listen(self.config.get("socket.listen.backlog.size"))
        except OSError:
            sock.close()
            raise
        sock.setblocking(False)
        return sock

    async def start(self) -> None:
        t0 = time.perf_counter()
        self._loop = asyncio.get_running_loop()
        # Every listener is bound before the broker is built: a listener on port 0 gets its port
        # here, and the broker advertises the bound ports (Kafka: SocketServer binds its acceptors,
        # then the broker registers its endpoints).
        try:
            for endpoint in self.config.listener_endpoints:
                self._socks.append((self._bind(endpoint), endpoint))
        except OSError:
            for sock, _ in self._socks:
                sock.close()
            self._socks = []
            raise
        self._sock = self._socks[0][0]
        self.port = self._sock.getsockname()[1]
        self.config.bind_ports({e.listener_name: s.getsockname()[1] for s, e in self._socks})
        # The broker's modules are imported once the listeners are bound (about 30 ms of a start
        # here, issue 22): a client that connects meanwhile waits in the backlog until the loop
        # accepts, as Kafka's acceptors take connections before request processing is enabled
        # (BrokerServer.startup), instead of being refused and backing off.
        from minibroker.broker import Broker

        broker = Broker(self.config)
        broker.startup()
        self.broker = broker
        await broker.start_background()
        for sock, endpoint in self._socks:
            self._loop.add_reader(sock.fileno(), self._accept, sock, endpoint)
        if self.config.get("console.port") >= 0:
            # imported only when asked for: aiohttp costs most of a second to import, and the
            # startup bench (bench/startup.py) holds a broker without a console to ~10 ms
            from minibroker.console import Console
            from minibroker.console.limits import Limits

            limits = Limits(broker.memory_pool, broker.connection_quotas, broker.client_quotas,
                            lambda: self.slow_requests_dropped, lambda: self.idle_closed)
            self.console = Console(broker.services, broker.handlers, broker.trace_listeners,
                                   bootstrap=self.bootstrap, allow_writes=self.config.get("console.allow.writes"),
                                   limits=limits,
                                   plain_users={u: pw for st in self._sasl.values() for u, pw in st.plain_users.items()})
            await self.console.start(self.config.get("console.host"), self.config.get("console.port"))
        max_idle_ms = self.config.get("connections.max.idle.ms")
        if max_idle_ms >= 0:  # negative: never expire, as Kafka's Selector without an idle manager
            self._idle_sweep = self._loop.create_task(self._sweep_idle(max_idle_ms), name="idle-sweep")
        read_timeout_ms = self.config.get("socket.request.read.timeout.ms")
        if read_timeout_ms >= 0:
            self._slow_sweep = self._loop.create_task(self._sweep_slow(read_timeout_ms), name="slow-request-sweep")
        log.info("minibroker node %d (cluster %s) listening on %s, advertising %s, data in %s (%.0f ms)",
                 broker.node_id, broker.cluster_id,
                 ",".join(f"{e.listener_name}://{s.getsockname()[0]}:{s.getsockname()[1]}" for s, e in self._socks),
                 ",".join(map(str, self.config.advertised_endpoints)),
                 self.config.data_dir, (time.perf_counter() - t0) * 1000)

    def _accept(self, listening: socket.socket, endpoint: Endpoint) -> None:
        assert self._loop is not None and self.broker is not None
        limits = self.broker.connection_quotas
        for _ in range(64):
            try:
                conn_sock, addr = listening.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                log.warning("accept failed: %s", e)
                return
            ip = addr[0]
            if not limits.admit(ip):
                conn_sock.close()
                continue
            handle: Callable[[Any, bytes | bytearray], Coroutine[Any, Any, list[Any] | None]] = self.broker.dispatch
            sasl = self._sasl.get(endpoint.listener_name)
            if sasl is not None:
                from minibroker.security.sasl import SaslAuthenticator  # loaded with the SASL settings

                handle = SaslAuthenticator(sasl, self.broker.scram_credentials, self.broker.dispatch).handle
            from minibroker.connection import Connection  # imported with the broker, after binding

            conn = Connection(
                conn_sock, self._loop, handle,
                max_frame_size=self.config.get("socket.request.max.bytes"),
                max_queued_requests=self.config.get("queued.max.requests"),
                on_close=self._closed,
                pool=self.broker.memory_pool,
                listener=endpoint.listener_name,
                tls=tls.session() if (tls := self._tls.get(endpoint.listener_name)) is not None else None,
            )
            conn.ip = ip
            self.connections.add(conn)
            delay_ms = limits.accept_delay_ms()
            if delay_ms > 0:
                # max.connection.creation.rate: leave the next ones in the backlog for a while
                for sock, _ in self._socks:
                    self._loop.remove_reader(sock.fileno())
                self._accept_paused = self._loop.call_later(delay_ms / 1000, self._resume_accept)
                return

    def _resume_accept(self) -> None:
        self._accept_paused = None
        if self._loop is not None:
            for sock, endpoint in self._socks:
                self._loop.add_reader(sock.fileno(), self._accept, sock, endpoint)

    def _closed(self, conn: Connection) -> None:
        if conn in self.connections:
            self.connections.discard(conn)
            if self.broker is not None:
                self.broker.connection_quotas.release(conn.ip)

    async def _sweep_slow(self, timeout_ms: int) -> None:
        """Drop requests still arriving after `timeout_ms` (slowloris), checked every half of it
        (at most every second)."""
        timeout = timeout_ms / 1000
        interval = min(max(timeout / 2, 0.01), 1.0)
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for conn in list(self.connections):
                started = conn.frame_started
                if started is not None and conn.reading and now - started > timeout:
                    self.slow_requests_dropped += 1
                    conn.close(f"request incomplete after {(now - started) * 1000:.0f} ms, longer than "
                               f"socket.request.read.timeout.ms={timeout_ms} ({conn.partial_bytes} bytes read)")

    async def _sweep_idle(self, max_idle_ms: int) -> None:
        """Close connections idle for longer than `max_idle_ms`. Checked every half of it (at most
        every 10 s, at least every 10 ms), so one closes between max_idle_ms and 1.5x that."""
        max_idle = max_idle_ms / 1000
        interval = min(max(max_idle / 2, 0.01), 10.0)
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for conn in list(self.connections):
                quiet = now - conn.last_active
                if quiet > max_idle and conn.idle:
                    self.idle_closed += 1
                    conn.close(f"idle for {quiet * 1000:.0f} ms, longer than connections.max.idle.ms="
                               f"{max_idle_ms}")

    async def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting, finish in-flight requests, then shut the broker down cleanly."""
        if self.console is not None:
            await self.console.stop()
            self.console = None
        for sweep in (self._idle_sweep, self._slow_sweep):
            if sweep is not None:
                sweep.cancel()
        self._idle_sweep = self._slow_sweep = None
        if self._accept_paused is not None:
            self._accept_paused.cancel()
            self._accept_paused = None
        if self._loop is not None:
            for sock, _ in self._socks:
                self._loop.remove_reader(sock.fileno())  # no-op while accepting is paused
                sock.close()
        self._socks = []
        self._sock = None
        deadline = time.monotonic() + timeout
        for conn in list(self.connections):
            conn.stop_reading()
        # Let each connection answer what it has already read (bounded by the timeout).
        while any(not c.idle for c in self.connections) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for conn in list(self.connections):
            # the broker goes, not the client: nothing tied to the connection is to be undone
            # (Kafka's shutdown releases no share session's records either)
            conn.drop_close_callbacks()
            conn.close(None)
        if self.broker is not None:
            await self.broker.shutdown()
            self.broker = None
        log.info("minibroker stopped")
