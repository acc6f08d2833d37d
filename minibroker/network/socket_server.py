"""`SocketServer`: the listening sockets and the set of connections (Kafka: SocketServer, its
Acceptors and the Selector's expiry of idle channels).

Theory of operation: `bind()` opens every listener (port 0 picks a free port, which is then
advertised) before the broker is built, and nothing is accepted yet: a client that connects while
the broker loads waits in the listen backlog (`socket.listen.backlog.size`, KIP-764), as Kafka's
acceptors take connections before request processing is enabled. `enable_request_processing`
starts accepting with the loop's `add_reader` on each listening socket; each accepted socket is
admitted by the connection quotas, then becomes a `Connection` (minibroker.network.processor)
whose frames go to the dispatcher, with a TLS session on SSL listeners and a SASL exchange on
SASL_* listeners (their settings are read here, before anything is bound: a bad JAAS config or a
keystore that does not load fails the start).

Two periodic sweeps over the connection set, rather than a timer per connection or request:
connections quiet for longer than `connections.max.idle.ms` are closed (a connection that is
handling a request or still sending is never idle), and a request still arriving after
`socket.request.read.timeout.ms` is dropped (slowloris). `stop()` stops accepting, lets every
connection finish the request it is handling and send its responses, then closes them.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import TYPE_CHECKING

from minibroker.config import BrokerConfig, Endpoint
from minibroker.network.processor import Connection, RequestHandler

if TYPE_CHECKING:
    from minibroker.network.connection_quotas import ConnectionQuotas
    from minibroker.network.memory_pool import MemoryPool
    from minibroker.security.credentials import ScramCredentialStore
    from minibroker.security.settings import SaslSettings
    from minibroker.security.tls import TlsSettings

log = logging.getLogger("minibroker.network.socket_server")

_ACCEPTS_PER_WAKEUP = 64  # connections taken per readable event before other work runs
USE_DEFAULT_BUFFER_SIZE = -1  # socket.send/receive.buffer.bytes: the OS sizes it (Kafka: Selectable)
_PAUSED_MS = 24 * 3600 * 1000  # a paused broker's connections are muted until it resumes


class ListenerBindError(OSError):
    """A listener could not be bound: the port is taken or the host is not an address of this
    machine. The message names the listener and its address (Kafka: SocketServer's
    "Socket server failed to bind to host:port")."""


class SocketServer:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self._socks: list[tuple[socket.socket, Endpoint]] = []  # every listener's, the first is the bootstrap
        self._loop: asyncio.AbstractEventLoop | None = None
        self.connections: set[Connection] = set()
        self._idle_sweep: asyncio.Task[None] | None = None
        self._slow_sweep: asyncio.Task[None] | None = None
        self._accept_paused: asyncio.TimerHandle | None = None
        self.paused = False  # by a fault (pause/resume)
        self.slow_requests_dropped = 0  # for /metrics
        self.idle_closed = 0
        self._send_buffer: int = config.get("socket.send.buffer.bytes")
        # set by enable_request_processing
        self._handle: RequestHandler | None = None
        self._pool: MemoryPool | None = None
        self._quotas: ConnectionQuotas | None = None
        self._scram: ScramCredentialStore | None = None
        # SASL_* listeners' settings and SSL/SASL_SSL listeners' TLS contexts, by listener name.
        # The security modules are imported only for listeners that need them: a PLAINTEXT broker
        # starts without them (issue 22, tests/test_startup_imports.py).
        self.sasl: dict[str, SaslSettings] = {}
        if any(e.security_protocol.startswith("SASL_") for e in config.listener_endpoints):
            from minibroker.security.settings import SaslSettings  # lazy: SASL listeners only

            self.sasl = {e.listener_name: SaslSettings.for_listener(config, e) for e in config.listener_endpoints
                         if e.security_protocol.startswith("SASL_")}
        self._tls: dict[str, TlsSettings] = {}
        if any(e.security_protocol in ("SSL", "SASL_SSL") for e in config.listener_endpoints):
            from minibroker.security.tls import TlsSettings  # lazy: TLS listeners only

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

    @property
    def listening(self) -> str:
        """The bound listeners, for the start-up log line."""
        return ",".join(f"{e.listener_name}://{s.getsockname()[0]}:{s.getsockname()[1]}" for s, e in self._socks)

    # -- binding ----------------------------------------------------------------------------
    def bind(self) -> None:
        """Bind every listener (accepting nothing yet) and record the ports bound to port 0 in the
        config, which then advertises them. Bound once (minibroker.cli binds before the broker's
        modules are imported; BrokerServer.startup then finds them bound)."""
        if self._socks:
            return
        try:
            for endpoint in self.config.listener_endpoints:
                self._socks.append((self._bind(endpoint), endpoint))
        except OSError:
            for sock, _ in self._socks:
                sock.close()
            self._socks = []
            raise
        self.port = self._socks[0][0].getsockname()[1]
        self.config.bind_ports({e.listener_name: s.getsockname()[1] for s, e in self._socks})

    def _bind(self, endpoint: Endpoint) -> socket.socket:
        host = endpoint.host or "0.0.0.0"
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        receive_buffer = self.config.get("socket.receive.buffer.bytes")
        if receive_buffer != USE_DEFAULT_BUFFER_SIZE:
            # on the listening socket, before listen, as Kafka's Acceptor: accepted sockets inherit
            # it, and a window scale chosen at the handshake must already know it
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        try:
            sock.bind((host, endpoint.port))
            sock.listen(self.config.get("socket.listen.backlog.size"))
        except OSError as e:
            sock.close()
            where = f"[{host}]:{endpoint.port}" if ":" in host else f"{host}:{endpoint.port}"
            err = ListenerBindError(f"Socket server failed to bind to {where} (listener "
                                    f"{endpoint.listener_name}): {e.strerror or e}.")
            err.errno = e.errno  # EADDRINUSE etc. stay readable; the message is one line
            raise err from e
        sock.setblocking(False)
        return sock

    # -- accepting --------------------------------------------------------------------------
    def enable_request_processing(self, handle: RequestHandler, pool: MemoryPool, quotas: ConnectionQuotas,
                                  scram: ScramCredentialStore) -> None:
        """Accept connections, whose frames go to `handle` (the dispatcher), and start the sweeps."""
        self._loop = asyncio.get_running_loop()
        self._handle, self._pool, self._quotas, self._scram = handle, pool, quotas, scram
        for sock, endpoint in self._socks:
            self._loop.add_reader(sock.fileno(), self._accept, sock, endpoint)
        max_idle_ms = self.config.get("connections.max.idle.ms")
        if max_idle_ms >= 0:  # negative: never expire, as Kafka's Selector without an idle manager
            self._idle_sweep = self._loop.create_task(self._sweep_idle(max_idle_ms), name="idle-sweep")
        read_timeout_ms = self.config.get("socket.request.read.timeout.ms")
        if read_timeout_ms >= 0:
            self._slow_sweep = self._loop.create_task(self._sweep_slow(read_timeout_ms), name="slow-request-sweep")

    def _accept(self, listening: socket.socket, endpoint: Endpoint) -> None:
        assert self._loop is not None and self._handle is not None and self._quotas is not None
        limits = self._quotas
        for _ in range(_ACCEPTS_PER_WAKEUP):
            try:
                conn_sock, addr = listening.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                # out of descriptors (EMFILE): the connection stays in the backlog and the socket
                # readable, so retrying at once would spin the loop and flood the log (issue 30)
                log.warning("accept failed: %s; accepting again in 100 ms", e)
                for sock, _ in self._socks:
                    self._loop.remove_reader(sock.fileno())
                self._accept_paused = self._loop.call_later(0.1, self._resume_accept)
                return
            ip = addr[0]
            if not limits.admit(ip):
                conn_sock.close()
                continue
            # as Kafka's Acceptor.configureAcceptedSocketChannel (TCP_NODELAY: the Connection)
            conn_sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            if self._send_buffer != USE_DEFAULT_BUFFER_SIZE:
                conn_sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self._send_buffer)
            sasl = self.sasl.get(endpoint.listener_name)
            authenticator = None
            if sasl is not None:
                assert self._scram is not None
                from minibroker.security.sasl import SaslAuthenticator  # lazy: SASL listeners only

                authenticator = SaslAuthenticator(sasl, self._scram)
            conn = Connection(
                conn_sock, self._loop, self._handle,
                max_frame_size=self.config.get("socket.request.max.bytes"),
                max_queued_requests=self.config.get("queued.max.requests"),
                on_close=self._closed,
                pool=self._pool,
                listener=endpoint.listener_name,
                tls=tls.session() if (tls := self._tls.get(endpoint.listener_name)) is not None else None,
                authenticator=authenticator,
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
        if self._loop is not None and not self.paused:
            for sock, endpoint in self._socks:
                self._loop.add_reader(sock.fileno(), self._accept, sock, endpoint)

    # -- a paused broker (minibroker.faults: broker.pause) -------------------------------------
    def pause(self) -> None:
        """Stop accepting and stop reading every connection, as a stopped process would (new
        connections wait in the backlog) until `resume`."""
        self.paused = True
        if self._loop is not None:
            for sock, _ in self._socks:
                self._loop.remove_reader(sock.fileno())
        for conn in self.connections:
            conn.mute(_PAUSED_MS)

    def resume(self) -> None:
        if not self.paused:
            return
        self.paused = False
        for conn in list(self.connections):
            conn.unmute()
        if self._accept_paused is None:
            self._resume_accept()

    def _closed(self, conn: Connection) -> None:
        if conn in self.connections:
            self.connections.discard(conn)
            if self._quotas is not None:
                self._quotas.release(conn.ip)

    # -- sweeps -----------------------------------------------------------------------------
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
            if self.paused:
                continue  # a stopped process closes nothing (a fault: pause)
            now = time.monotonic()
            for conn in list(self.connections):
                quiet = now - conn.last_active
                if quiet > max_idle and conn.idle:
                    self.idle_closed += 1
                    conn.close(f"idle for {quiet * 1000:.0f} ms, longer than connections.max.idle.ms="
                               f"{max_idle_ms}")
                elif (unread := conn.unread_since) is not None and now - unread > max_idle:
                    # the client that does not read its answers goes, not the ones waiting behind
                    # it (Kafka's Selector expires a channel by its last read or write)
                    self.idle_closed += 1
                    conn.close(f"it has read none of its answers ({conn.transport.out_bytes} bytes waiting) for "
                               f"{(now - unread) * 1000:.0f} ms, longer than connections.max.idle.ms={max_idle_ms}")

    # -- stopping ---------------------------------------------------------------------------
    async def stop(self, timeout: float) -> None:
        """Stop accepting, let each connection answer what it has already read (bounded by
        `timeout`), then close them all."""
        for sweep in (self._idle_sweep, self._slow_sweep):
            if sweep is not None:
                sweep.cancel()
        self._idle_sweep = self._slow_sweep = None
        if self._accept_paused is not None:
            self._accept_paused.cancel()
            self._accept_paused = None
        for sock, _ in self._socks:
            if self._loop is not None:
                self._loop.remove_reader(sock.fileno())  # no-op while accepting is paused
            sock.close()
        self._socks = []
        deadline = time.monotonic() + timeout
        for conn in list(self.connections):
            conn.stop_reading()
        while any(not c.idle for c in self.connections) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for conn in list(self.connections):
            # the broker goes, not the client: nothing tied to the connection is to be undone
            # (Kafka's shutdown releases no share session's records either)
            conn.drop_close_callbacks()
            conn.close(None)
