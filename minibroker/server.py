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
handling a request or still sending is never idle. The same kind of sweep drops a request whose
bytes keep arriving for longer than `socket.request.read.timeout.ms` (a slowloris client).

Limits at accept (minibroker.connection_quotas): max.connections, max.connections.per.ip (and its
overrides), the per-IP connection_creation_rate quota, and max.connection.creation.rate, which
pauses accepting. Every connection reads into the broker's memory pool
(queued.max.request.bytes, minibroker.memory_pool).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import TYPE_CHECKING

from minibroker.broker import Broker
from minibroker.config import BrokerConfig
from minibroker.connection import Connection

if TYPE_CHECKING:
    from minibroker.console import Console

log = logging.getLogger("minibroker.server")


class BrokerServer:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.broker: Broker | None = None
        self._sock: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.connections: set[Connection] = set()
        self._idle_sweep: asyncio.Task[None] | None = None
        self.console: Console | None = None  # the web console and /metrics, when console.port >= 0
        self._slow_sweep: asyncio.Task[None] | None = None
        self._accept_paused: asyncio.TimerHandle | None = None
        self.slow_requests_dropped = 0  # for /metrics
        self.idle_closed = 0
        self.host = config.listener_host
        self.port = config.listener_port

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    async def start(self) -> None:
        t0 = time.perf_counter()
        self._loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.listen(self.config.get("socket.listen.backlog.size"))
        sock.setblocking(False)
        self._sock = sock
        self.port = sock.getsockname()[1]
        if self.config.advertised_port == 0:
            self.config.advertised_port = self.port
        broker = Broker(self.config)
        broker.startup()
        self.broker = broker
        await broker.start_background()
        self._loop.add_reader(sock.fileno(), self._accept)
        if self.config.get("console.port") >= 0:
            # imported only when asked for: aiohttp costs most of a second to import, and the
            # startup bench (bench/startup.py) holds a broker without a console to ~10 ms
            from minibroker.console import Console

            self.console = Console(broker.services, broker.handlers, broker.trace_listeners,
                                   bootstrap=self.bootstrap, allow_writes=self.config.get("console.allow.writes"))
            await self.console.start(self.config.get("console.host"), self.config.get("console.port"))
        max_idle_ms = self.config.get("connections.max.idle.ms")
        if max_idle_ms >= 0:  # negative: never expire, as Kafka's Selector without an idle manager
            self._idle_sweep = self._loop.create_task(self._sweep_idle(max_idle_ms), name="idle-sweep")
        read_timeout_ms = self.config.get("socket.request.read.timeout.ms")
        if read_timeout_ms >= 0:
            self._slow_sweep = self._loop.create_task(self._sweep_slow(read_timeout_ms), name="slow-request-sweep")
        # Import what the first produce needs (crc32c reads its package metadata on import, 30 ms
        # quiet and most of a second on a loaded machine) in a worker thread, after listening.
        self._loop.run_in_executor(None, _warm_up)
        log.info("minibroker node %d (cluster %s) listening on %s, advertising %s:%d, data in %s (%.0f ms)",
                 broker.node_id, broker.cluster_id, self.bootstrap, broker.host, broker.port,
                 self.config.data_dir, (time.perf_counter() - t0) * 1000)

    def _accept(self) -> None:
        assert self._sock is not None and self._loop is not None and self.broker is not None
        limits = self.broker.connection_quotas
        for _ in range(64):
            try:
                conn_sock, addr = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                log.warning("accept failed: %s", e)
                return
            ip = addr[0]
            if not limits.admit(ip):
                conn_sock.close()
                continue
            conn = Connection(
                conn_sock, self._loop, self.broker.dispatch,
                max_frame_size=self.config.get("socket.request.max.bytes"),
                max_queued_requests=self.config.get("queued.max.requests"),
                on_close=self._closed,
                pool=self.broker.memory_pool,
            )
            conn.ip = ip
            self.connections.add(conn)
            delay_ms = limits.accept_delay_ms()
            if delay_ms > 0:
                # max.connection.creation.rate: leave the next ones in the backlog for a while
                self._loop.remove_reader(self._sock.fileno())
                self._accept_paused = self._loop.call_later(delay_ms / 1000, self._resume_accept)
                return

    def _resume_accept(self) -> None:
        self._accept_paused = None
        if self._sock is not None and self._loop is not None:
            self._loop.add_reader(self._sock.fileno(), self._accept)
            self._accept()

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
        if self._sock is not None and self._loop is not None:
            self._loop.remove_reader(self._sock.fileno())  # no-op while accepting is paused
            self._sock.close()
            self._sock = None
        deadline = time.monotonic() + timeout
        for conn in list(self.connections):
            conn.stop_reading()
        # Let each connection answer what it has already read (bounded by the timeout).
        while any(not c.idle for c in self.connections) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for conn in list(self.connections):
            conn.close(None)
        if self.broker is not None:
            await self.broker.shutdown()
            self.broker = None
        log.info("minibroker stopped")


def _warm_up() -> None:
    from protocol.records.batch import crc32c

    crc32c(b"")
