"""`Connection`: one client connection, its requests handled one at a time and answered in order
(Kafka: SocketServer's Processor and the KafkaChannel it serves).

Theory of operation: the connection reads when its socket is readable (the loop's `add_reader`),
hands what it reads to its transport (minibroker.network.transport: plain TCP, or TLS) and the
plaintext to its request reader (minibroker.network.request_reader: size-prefixed frames, capped,
charged to the memory pool). Whole frames go on a queue, and requests on a connection are handled
one at a time and answered in order, as Kafka's processor does (clients pipeline; the order of
responses is the order of requests).

Handling runs eagerly: most handlers never suspend (a produce appends to the page cache and
returns), so the reader callback steps the handler's coroutine itself and sends the answer in the
same loop iteration, without the wake-up of a task per request. A handler that does suspend (a
long-polling fetch, an fsync in the executor) is finished by a task, and the queue waits for it.
At most `_EAGER_BATCH` requests are answered per callback before the rest is rescheduled, so one
client that pipelines hundreds of requests cannot hold the loop while others wait.

Reading stops (back-pressure instead of unbounded buffers) while more than `max_buffered` bytes of
responses wait for the socket, while too many requests are queued, while the memory pool cannot
hold the next frame, and while a quota mutes the channel (KIP-219); it resumes when all four
allow it. The socket server's sweeps read `last_active`, `frame_started`, `partial_bytes` and
`idle`.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import socket
import time
from collections.abc import Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any

from minibroker.network.channel import Answer, Authenticator
from minibroker.network.memory_pool import MemoryPool
from minibroker.network.request_reader import RequestReader
from minibroker.network.transport import Transport
from minibroker_protocol.framing import FrameError

if TYPE_CHECKING:
    from minibroker.security.tls import TlsSession
    from minibroker_protocol.codec import Chunk

log = logging.getLogger("minibroker.network.processor")

_EAGER_BATCH = 16  # requests answered per loop callback before yielding to other connections
# ... or fewer, once they took this long: 16 costly requests (DescribeConfigs with documentation,
# ~50 ms each on a loaded machine) held the loop for a second per connection (issue 30)
_EAGER_SECONDS = 0.005
# Response bytes (charged to the memory pool) a connection may have waiting for its client before
# its next request is handled. Kafka mutes a channel until its response is sent; we keep
# pipelining small answers, but a client that does not read holds at most this plus one answer
# of the pool (issue 30: two such clients filled it with 165 MB and stalled everyone for 40 s).
MAX_UNSENT_RESPONSE_BYTES = 1024 * 1024

# handle(connection, frame) -> the response's chunks, or None for no response. What the coroutine
# yields (a future, or None) is its task's business: we only pass it through, so it stays `object`.
RequestHandler = Callable[["Connection", bytes | bytearray], Coroutine[object, None, Answer]]


class _Resume:
    """Awaitable that finishes a coroutine which was stepped by hand and suspended on `pending`:
    it hands `pending` to the task that awaits it, then delegates to the coroutine exactly as
    `await` would (PEP 380 semantics for send, throw and close)."""

    __slots__ = ("coro", "pending")

    def __init__(self, coro: Coroutine[object, None, Answer], pending: object):
        self.coro, self.pending = coro, pending

    def __await__(self) -> Generator[object, None, Answer]:
        coro, to_yield = self.coro, self.pending
        while True:
            try:
                sent: Any = yield to_yield  # mypyc wants a declared type; a task sends None
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # thrown in by the task: cancellation
                try:
                    to_yield = coro.throw(exc)
                except StopIteration as e:
                    return e.value
            else:
                try:
                    to_yield = coro.send(sent)
                except StopIteration as e:
                    return e.value


class Connection:
    """A client connection (a `Channel`). `handle(conn, frame)` returns the response chunks, or
    None for none."""

    def __init__(
        self,
        sock: socket.socket,
        loop: asyncio.AbstractEventLoop,
        handle: RequestHandler,
        *,
        max_frame_size: int,
        max_queued_requests: int = 500,
        max_buffered: int = 64 * 1024 * 1024,
        on_close: Callable[[Connection], None] | None = None,
        pool: MemoryPool | None = None,
        listener: str | None = None,
        tls: TlsSession | None = None,
        authenticator: Authenticator | None = None,
    ):
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.fd = sock.fileno()
        self.loop = loop
        self.peer = _peer(sock)
        self.ip = self.peer.rsplit(":", 1)[0]  # the server sets the accepted address
        self.listener = listener  # the listener's name (None: the first, for connections made in tests)
        # who the client is (Kafka: KafkaPrincipal); TLS or the SASL exchange sets it
        self.principal = "User:ANONYMOUS"
        self.authenticator = authenticator  # the SASL exchange on SASL_* listeners (minibroker.security.sasl)
        self._close_when_sent: str | None = None
        self._handle = handle
        self.reader = RequestReader(max_frame_size, pool, self.peer, self._memory_freed)
        self._max_frame_size = max_frame_size
        if authenticator is not None:
            # Kafka's SaslServerAuthenticator reads with a NetworkReceive capped at
            # sasl.server.max.receive.size: a bigger size prefix closes the connection unread
            self.reader.max_frame_size = min(max_frame_size, authenticator.max_receive_size)
        self.transport: Transport
        if tls is not None:
            # the security modules stay out of a PLAINTEXT start (tests/test_startup_imports.py)
            from minibroker.network.tls_transport import TlsTransport  # lazy: TLS listeners only

            self.transport = TlsTransport(sock, loop, pool, self._sent_all, self.close, tls, peer=self.peer,
                                          listener=listener, on_principal=self._set_principal)
        else:
            self.transport = Transport(sock, loop, pool, self._sent_all, self.close)
        self._queue: collections.deque[bytes | bytearray] = collections.deque()
        self._busy = False  # a request is being handled (eagerly or by self.task)
        self._pump_scheduled = False
        self.task: asyncio.Task[None] | None = None  # finishes a handler that suspended
        self._max_queued = max_queued_requests
        self._max_buffered = max_buffered
        self._handling_bytes = 0  # the frame a suspended handler is working on
        self._reading = False
        self._read_stopped = False
        self._closed = False
        self._on_close = on_close
        self._close_callbacks: list[Callable[[], None]] = []  # add_close_callback (handlers' state)
        # time.monotonic() the frame in progress started arriving (None: between frames); the
        # server's sweep drops a frame incomplete for longer than the slow-request bound
        self.frame_started: float | None = None
        # time.monotonic() until which the channel is muted by a quota (KIP-219)
        self._muted_until = 0.0
        self._mute_timer: asyncio.TimerHandle | None = None
        # time.monotonic() of the last bytes read or written; the server's idle sweep closes a
        # connection quiet for longer than connections.max.idle.ms (Kafka: Selector's idle expiry)
        self.last_active = time.monotonic()
        self._resume_reading()

    def _set_principal(self, principal: str) -> None:
        self.principal = principal

    # -- reading ---------------------------------------------------------------------------
    def stop_reading(self) -> None:
        """Read no more requests (graceful shutdown); what is queued is still answered."""
        self._read_stopped = True
        self._pause_reading()

    def _resume_reading(self) -> None:
        if not self._reading and not self._closed and not self._read_stopped and not self.reader.waiting_memory \
                and self._mute_timer is None:
            if self.frame_started is not None:
                self.frame_started = time.monotonic()  # the pause was the broker's, not the client's
            self.loop.add_reader(self.fd, self._on_readable)
            self._reading = True

    def _pause_reading(self) -> None:
        if self._reading:
            self.loop.remove_reader(self.fd)
            self._reading = False

    def _maybe_resume_reading(self) -> None:
        """Read again once both the request queue and the output are back under their limits.
        Called after each request and whenever output drains: a connection paused by a full
        output with an empty queue is woken only by the drain."""
        if not self._reading and len(self._queue) < self._max_queued // 2 \
                and self.transport.out_bytes <= self._max_buffered:
            self._resume_reading()

    def _memory_freed(self) -> None:
        """The pool woke the reader: take the memory now (so the pool's wake-up loop sees it taken)."""
        if self._closed:
            return
        if self._reserve() > 0:
            self._maybe_resume_reading()

    def _reserve(self) -> int:
        allowed = self.reader.reserve()
        if allowed <= 0:
            self._pause_reading()  # until the pool calls _memory_freed
        return allowed

    def mute(self, ms: int) -> None:
        """Read no request for `ms` (a quota's throttle time: Kafka mutes the channel, KIP-219);
        what is queued still waits for the unmute."""
        if ms <= 0 or self._closed:
            return
        until = time.monotonic() + ms / 1000
        if until <= self._muted_until:
            return
        self._muted_until = until
        if self._mute_timer is not None:
            self._mute_timer.cancel()
        self._pause_reading()
        self._mute_timer = self.loop.call_later(ms / 1000, self._unmute)

    def unmute(self) -> None:
        """End a mute now (a paused broker resumed: minibroker.faults)."""
        if self._mute_timer is not None:
            self._mute_timer.cancel()
            self._muted_until = 0.0
            self._unmute()

    def _unmute(self) -> None:
        self._mute_timer = None
        self._maybe_resume_reading()
        if self._queue and not self._busy and not self._pump_scheduled:
            self._pump_scheduled = True
            self.loop.call_soon(self._pump)

    @property
    def muted(self) -> bool:
        return self._mute_timer is not None

    def _on_readable(self) -> None:
        allowed = self._reserve()
        if allowed <= 0:
            return
        try:
            data = self.transport.sock.recv(allowed)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self.close(f"read failed: {e}")
            return
        if not data:
            if self.transport.handshake_incomplete:
                log.warning("closing connection from %s on listener %s: closed by the client during the TLS "
                            "handshake", self.peer, self.listener)
                self.close("TLS handshake incomplete")
                return
            self.close(f"closed by the client in the middle of a request ({self.reader.partial_bytes} bytes of "
                       f"it read)" if self.reader.in_frame else None)
            return
        now = self.last_active = time.monotonic()
        plain = self.transport.receive(data)
        if not plain:
            return
        if self.frame_started is None:
            self.frame_started = now
        auth = self.authenticator
        if auth is not None and auth.authenticated and self.reader.max_frame_size != self._max_frame_size:
            self.reader.max_frame_size = self._max_frame_size
        try:
            frames = self.reader.feed(plain)
        except FrameError as bad:  # not `e`: mypyc types a name by its first except clause (OSError)
            if auth is not None and not auth.authenticated:
                log.warning("closing connection from %s on listener %s: %s before authentication "
                            "(sasl.server.max.receive.size=%d)", self.peer, self.listener, bad, auth.max_receive_size)
            else:
                log.warning("closing connection from %s: %s", self.peer, bad)
            self.close("bad frame")
            return
        if frames:
            self._queue.extend(frames)
            self.frame_started = now if self.reader.partial_bytes else None
        if len(self._queue) >= self._max_queued or self.transport.out_bytes > self._max_buffered:
            self._pause_reading()
        if self._queue and not self._busy:
            self._pump()

    # -- handling --------------------------------------------------------------------------
    def _pump(self) -> None:
        """Answer queued requests in order, stepping each handler by hand (see the module
        docstring). Stops at a handler that suspends, and after _EAGER_BATCH requests."""
        self._pump_scheduled = False
        started = time.monotonic()
        for _ in range(_EAGER_BATCH):
            if self._busy or self._closed or not self._queue or self._mute_timer is not None \
                    or self.transport.out_mem > MAX_UNSENT_RESPONSE_BYTES:
                return  # muted; a full output is resumed by _sent_all
            frame = self._queue.popleft()
            size = len(frame) + 4
            coro = self._handle(self, frame)
            del frame
            try:
                pending = coro.send(None)
            except StopIteration as e:
                self._frame_done(size)
                self._answer(e.value)
                if time.monotonic() - started > _EAGER_SECONDS:
                    break
                continue
            except Exception:
                log.exception("connection from %s failed", self.peer)
                self.close("internal error")
                return
            self._busy = True
            self._handling_bytes = size
            self.task = self.loop.create_task(self._finish(_Resume(coro, pending)), name=f"conn-{self.peer}")
            return
        if self._queue and not self._pump_scheduled:
            # Most handlers never suspend: without this a client that pipelines hundreds of
            # requests holds the loop until its whole queue is answered, and every other
            # connection waits (a 0.7 s p99 produce latency next to one flooding client).
            self._pump_scheduled = True
            self.loop.call_soon(self._pump)

    async def _finish(self, handling: _Resume) -> None:
        try:
            chunks = await handling
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("connection from %s failed", self.peer)
            self.close("internal error")
            return
        self._busy = False
        self._frame_done(self._handling_bytes)
        self._handling_bytes = 0
        self._answer(chunks)
        if self._queue and not self._pump_scheduled:
            self._pump_scheduled = True
            self.loop.call_soon(self._pump)

    def _frame_done(self, size: int) -> None:
        if not self._closed:  # close() gave back everything
            self.reader.frame_done(size)

    def _answer(self, chunks: Answer) -> None:
        if self._closed:
            return
        if chunks:
            self.write(chunks)
        self._maybe_resume_reading()

    # -- writing ---------------------------------------------------------------------------
    def write(self, chunks: list[Chunk]) -> None:
        self.transport.write(chunks)

    def _sent_all(self) -> None:
        """The transport's queue drained."""
        self.last_active = time.monotonic()
        if self._close_when_sent is not None:
            self.close(self._close_when_sent)
            return
        self._maybe_resume_reading()
        if self._queue and not self._busy and not self._pump_scheduled:
            self._pump_scheduled = True  # the pump stopped for a full output
            self.loop.call_soon(self._pump)

    # -- closing ---------------------------------------------------------------------------
    def close(self, reason: str | None) -> None:
        if self._closed:
            return
        self._closed = True
        if reason:
            log.info("closed connection from %s: %s", self.peer, reason)
        self._pause_reading()
        self._queue.clear()
        if self._mute_timer is not None:
            self._mute_timer.cancel()
            self._mute_timer = None
        self.reader.release_all()
        self.transport.close()
        if self.task is not None and not self.task.done() and asyncio.current_task() is not self.task:
            self.task.cancel()
        if self._on_close:
            self._on_close(self)
        callbacks, self._close_callbacks = self._close_callbacks, []
        for cb in callbacks:
            try:
                cb()
            except Exception:
                log.exception("a close callback of the connection from %s failed", self.peer)

    def add_close_callback(self, callback: Callable[[], None]) -> None:
        if self._closed:
            callback()
        else:
            self._close_callbacks.append(callback)

    def drop_close_callbacks(self) -> None:
        """Forget them: the broker is stopping, the client did not go (SocketServer.stop)."""
        self._close_callbacks.clear()

    def close_when_sent(self, reason: str) -> None:
        """Read nothing more; close once what is being answered has been sent (a failed login's
        response goes out before the close, as Kafka's)."""
        self._close_when_sent = reason
        self.stop_reading()
        if self.transport.idle and not self._busy and not self._queue:
            self.loop.call_soon(self.transport.on_writable)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def reading(self) -> bool:
        return self._reading

    @property
    def partial_bytes(self) -> int:
        return self.reader.partial_bytes

    @property
    def waiting_memory(self) -> bool:
        return self.reader.waiting_memory

    @property
    def idle(self) -> bool:
        """Nothing to do for it: a connection paused for memory waits for the broker, not idle."""
        return not self._queue and not self._busy and self.transport.idle and not self.reader.waiting_memory

    @property
    def unread_since(self) -> float | None:
        """time.monotonic() since which answers wait for a client that takes none of them (None:
        nothing waits, or the socket took some bytes lately)."""
        if self.transport.idle:
            return None
        return max(self.last_active, self.transport.last_progress)


def _peer(sock: socket.socket) -> str:
    try:
        host, port = sock.getpeername()[:2]
        return f"{host}:{port}"
    except OSError:
        return "?"
