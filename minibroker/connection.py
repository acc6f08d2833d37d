"""One client connection: frames in, responses out, record bytes sent with sendfile.

Theory of operation: the connection owns a non-blocking socket and drives it with the event
loop's `add_reader` / `add_writer` rather than through an asyncio transport. That is what lets the
fetch path hand segment ranges to `os.sendfile` on any loop: uvloop implements neither
`loop.sendfile` nor `loop.sock_sendfile`, and neither loop lets us `add_writer` on a socket that a
transport owns (measured; see README "Why the connection owns its socket").

Reading: bytes go into a sans-IO `FrameReader`, which rejects a size prefix above
`socket.request.max.bytes` before buffering the body. Whole frames go on a queue, and requests on a
connection are handled one at a time and answered in order, as Kafka's processor does (clients
pipeline; the order of responses is the order of requests).

Handling runs eagerly: most handlers never suspend (a produce appends to the page cache and
returns), so the reader callback steps the handler's coroutine itself and sends the answer in the
same loop iteration, without the wake-up of a task per request. A handler that does suspend (a
long-polling fetch, an fsync in the executor) is finished by a task, and the queue waits for it.
At most `_EAGER_BATCH` requests are answered per callback before the rest is rescheduled, so one
client that pipelines hundreds of requests cannot hold the loop while others wait.

Writing: a response is a list of chunks — bytes, and `FileRegion`s for record data. Bytes go out
with `send`, regions with `os.sendfile`; whatever the socket does not take now waits for
writability. While more than `max_buffered` bytes wait, or too many requests are queued, the
connection stops reading (back-pressure instead of unbounded buffers).

TLS (SSL and SASL_SSL listeners): the connection is handed a `TlsSession`
(minibroker.security.tls, an `ssl.SSLObject` over memory BIOs). Bytes read go through it before the
frame reader; on the way out chunks are encrypted a slice at a time (file regions read into memory:
the kernel cannot encrypt for us, so there is no sendfile on this path) while less than
`_TLS_AHEAD` bytes of TLS records wait for the socket. Plaintext listeners keep sendfile.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import socket
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from minibroker.memory_pool import MemoryPool
from protocol.framing import FrameError, FrameReader

if TYPE_CHECKING:
    from minibroker.security.tls import TlsSession

log = logging.getLogger("minibroker.connection")

_BYTES_LIKE = (bytes, bytearray, memoryview)
_RECV_SIZE = 256 * 1024
_SENDFILE_CHUNK = 8 * 1024 * 1024
_EAGER_BATCH = 16  # requests answered per loop callback before yielding to other connections
# Bytes read beyond the frame in progress (the next size prefixes, pipelined small requests),
# charged to the memory pool like the frames themselves.
_READ_AHEAD = 64 * 1024
_TLS_SLICE = 64 * 1024  # plaintext encrypted per step (four 16 KiB TLS records)
_TLS_AHEAD = 1024 * 1024  # encrypted bytes allowed to wait for the socket before encrypting more
# With TCP_NODELAY every send is its own segment: a fetch response's header, its sendfile'd
# records and its trailing fields cost a one-record fetch three segments and the client three
# wake-ups (issue 22, end-to-end latency). TCP_CORK holds partial segments while a response with
# file regions is written and sends them together when the queue drains; the records stay
# zero-copy (Linux only; elsewhere the three sends go out as before).
_TCP_CORK: int | None = getattr(socket, "TCP_CORK", None)


class _Resume:
    """Awaitable that finishes a coroutine which was stepped by hand and suspended on `pending`:
    it hands `pending` to the task that awaits it, then delegates to the coroutine exactly as
    `await` would (PEP 380 semantics for send, throw and close)."""

    __slots__ = ("coro", "pending")

    def __init__(self, coro: Any, pending: Any):
        self.coro, self.pending = coro, pending

    def __await__(self) -> Any:
        coro, to_yield = self.coro, self.pending
        while True:
            try:
                sent = yield to_yield
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
    """A client connection. `handle(conn, frame)` returns the response chunks, or None for none."""

    def __init__(
        self,
        sock: socket.socket,
        loop: asyncio.AbstractEventLoop,
        handle: Callable[[Connection, bytes | bytearray], Coroutine[Any, Any, list[Any] | None]],
        *,
        max_frame_size: int,
        max_queued_requests: int = 500,
        max_buffered: int = 64 * 1024 * 1024,
        on_close: Callable[[Connection], None] | None = None,
        pool: MemoryPool | None = None,
        listener: str | None = None,
        tls: TlsSession | None = None,
    ):
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock
        self.fd = sock.fileno()
        self.loop = loop
        self.peer = _peer(sock)
        self.ip = self.peer.rsplit(":", 1)[0]  # the server sets the accepted address
        self.listener = listener  # the listener's name (None: the first, for connections made in tests)
        # who the client is (Kafka: KafkaPrincipal); a SASL listener's authenticator sets it
        self.principal = "User:ANONYMOUS"
        self._close_when_sent: str | None = None
        self._handle = handle
        self._frames = FrameReader(max_frame_size)
        self._queue: collections.deque[bytes | bytearray] = collections.deque()
        self._busy = False  # a request is being handled (eagerly or by self.task)
        self._pump_scheduled = False
        self.task: asyncio.Task[None] | None = None  # finishes a handler that suspended
        self._max_queued = max_queued_requests
        self._max_buffered = max_buffered
        self._out: collections.deque[Any] = collections.deque()  # bytes-like or regions, with progress
        self._out_offset = 0  # progress into the first chunk
        self._out_bytes = 0
        self._writing = False
        self._corked = False  # TCP_CORK set while a response with file regions is written
        self._reading = False
        self._read_stopped = False
        self._closed = False
        self._on_close = on_close
        self._close_callbacks: list[Callable[[], None]] = []  # add_close_callback (handlers' state)
        # queued.max.request.bytes (minibroker.memory_pool): this connection holds `_charged` bytes
        # of the pool, at least the bytes it has buffered; `_queued_bytes` of them are whole
        # frames (with their size prefix) read and not yet answered.
        self._pool = pool
        self._charged = 0
        self._queued_bytes = 0
        self._handling_bytes = 0  # the frame a suspended handler is working on
        self._out_mem = 0  # response bytes (not file regions) charged to the pool
        self._waiting_memory = False
        self._memory_pauses = 0
        # time.monotonic() the frame in progress started arriving (None: between frames); the
        # server's sweep drops a frame incomplete for longer than the slow-request bound
        self.frame_started: float | None = None
        # time.monotonic() until which the channel is muted by a quota (KIP-219)
        self._muted_until = 0.0
        self._mute_timer: asyncio.TimerHandle | None = None
        # time.monotonic() of the last bytes read or written; the server's idle sweep closes a
        # connection quiet for longer than connections.max.idle.ms (Kafka: Selector's idle expiry)
        self.last_active = time.monotonic()
        self.tls = tls
        self._tls_out = bytearray()  # TLS records not yet taken by the socket
        self._resume_reading()

    # -- reading ---------------------------------------------------------------------------
    def stop_reading(self) -> None:
        """Read no more requests (graceful shutdown); what is queued is still answered."""
        self._read_stopped = True
        self._pause_reading()

    def _resume_reading(self) -> None:
        if not self._reading and not self._closed and not self._read_stopped and not self._waiting_memory \
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
                and self._out_bytes <= self._max_buffered:
            self._resume_reading()

    # -- memory (queued.max.request.bytes) ---------------------------------------------------
    def _reserve(self) -> int:
        """Charge the pool for the next read; how many bytes may be read now (0: paused until
        memory frees). The frame in progress is charged whole once its size is known, plus a
        read-ahead slice."""
        held = self._queued_bytes + self._frame_bytes()
        if self._pool is None:
            return _RECV_SIZE
        need = self._frames.pending_size()
        base = self._queued_bytes + max(self._frame_bytes(), need + 4 if need is not None else 0)
        want = base + _READ_AHEAD
        if self._charged < want:
            # Without a frame in progress the read-ahead is what lets us read the next size prefix;
            # with one charged whole, the read-ahead is only taken if memory is free.
            required = need is None or self._charged < base
            if self._pool.available > 0 or required:
                if self._pool.try_allocate(want - self._charged):
                    self._charged = want
                elif required:
                    self._wait_for_memory(want - self._charged)
                    return 0
        return min(self._charged - held, _RECV_SIZE)

    def _frame_bytes(self) -> int:
        """Bytes of the frame in progress (and read-ahead) in the frame reader, prefix included."""
        return self._frames.buffered + (4 if self._frames.pending_size() is not None else 0)

    def _wait_for_memory(self, size: int) -> None:
        assert self._pool is not None
        self._pause_reading()
        self._waiting_memory = True
        self._memory_pauses += 1
        need = self._frames.pending_size()
        (log.info if self._memory_pauses == 1 else log.debug)(
            "pausing reads from %s: %d bytes of %s wait for memory (queued.max.request.bytes=%d, %d in use)",
            self.peer, size, f"a {need}-byte request" if need is not None else "read-ahead",
            self._pool.capacity, self._pool.in_use)
        self._pool.wait(size, self._memory_freed)

    def _memory_freed(self) -> None:
        """The pool woke us: take the memory now (so the pool's wake-up loop sees it taken)."""
        self._waiting_memory = False
        if self._closed:
            return
        if self._reserve() > 0:
            self._maybe_resume_reading()

    def _trim_charge(self) -> None:
        """Give back what is charged beyond the queued frames and the whole frame in progress."""
        if self._pool is None:
            return
        need = self._frames.pending_size()
        keep = self._queued_bytes + (need + 4 if need is not None else self._frames.buffered)
        if self._charged > keep:
            self._pool.release(self._charged - keep)
            self._charged = keep

    def _frame_done(self, size: int) -> None:
        """A request (`size` bytes with its prefix) has been answered: its memory is free."""
        if self._closed:
            return  # close() gave back everything
        self._queued_bytes -= size
        if self._pool is not None:
            self._charged -= size
            self._pool.release(size)

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
            data = self.sock.recv(allowed)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self.close(f"read failed: {e}")
            return
        if not data:
            if self.tls is not None and not self.tls.established:
                log.warning("closing connection from %s on listener %s: closed by the client during the TLS "
                            "handshake", self.peer, self.listener)
                self.close("TLS handshake incomplete")
                return
            partial = self._frames.buffered
            self.close(f"closed by the client in the middle of a request ({partial} bytes of it read)"
                       if partial or self._frames.pending_size() is not None else None)
            return
        now = self.last_active = time.monotonic()
        if self.tls is not None:
            plain = self._tls_receive(data)
            if not plain:
                return
            data = plain
        if self.frame_started is None:
            self.frame_started = now
        self._frames.feed(data)
        try:
            while (frame := self._frames.next_frame()) is not None:
                self._queue.append(frame)
                self._queued_bytes += len(frame) + 4
                self.frame_started = now if self._frames.buffered else None
        except FrameError as e:
            log.warning("closing connection from %s: %s", self.peer, e)
            self.close("bad frame")
            return
        self._trim_charge()
        if len(self._queue) >= self._max_queued or self._out_bytes > self._max_buffered:
            self._pause_reading()
        if self._queue and not self._busy:
            self._pump()

    def _tls_receive(self, data: bytes) -> bytes | None:
        """Decrypt what was read (driving the handshake); None when the session failed and the
        connection is closed."""
        from minibroker.security.tls import TlsError

        tls = self.tls
        assert tls is not None
        was_established = tls.established
        try:
            plain = tls.receive(data)
        except TlsError as e:
            self._tls_out += tls.outgoing()
            try:  # the alert, best effort: the peer learns why
                self.sock.send(self._tls_out)
            except OSError:
                pass
            log.warning("closing connection from %s on listener %s: %s", self.peer, self.listener, e)
            self.close(str(e))
            return None
        if tls.established and not was_established:
            if tls.principal is not None:
                self.principal = tls.principal
            log.debug("TLS session with %s on listener %s: %s %s, principal %s", self.peer, self.listener,
                      tls.version, tls.cipher, self.principal)
        pending = tls.outgoing()
        if tls.closed_by_peer:
            try:  # our close_notify, best effort
                self.sock.send(pending)
            except OSError:
                pass
            self.close(None)
            return None
        if pending:
            self._tls_out += pending
            if not self._writing:
                self._on_writable()
        return plain

    # -- handling --------------------------------------------------------------------------
    def _pump(self) -> None:
        """Answer queued requests in order, stepping each handler by hand (see the module
        docstring). Stops at a handler that suspends, and after _EAGER_BATCH requests."""
        self._pump_scheduled = False
        for _ in range(_EAGER_BATCH):
            if self._busy or self._closed or not self._queue or self._mute_timer is not None:
                return
            frame = self._queue.popleft()
            size = len(frame) + 4
            coro = self._handle(self, frame)
            del frame
            try:
                pending = coro.send(None)
            except StopIteration as e:
                self._frame_done(size)
                self._answer(e.value)
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

    def _answer(self, chunks: list[Any] | None) -> None:
        if self._closed:
            return
        if chunks:
            self.write(chunks)
        self._maybe_resume_reading()

    # -- writing ---------------------------------------------------------------------------
    def write(self, chunks: list[Any]) -> None:
        if (_TCP_CORK is not None and self.tls is None and not self._corked and len(chunks) > 1
                and not all(isinstance(c, _BYTES_LIKE) for c in chunks)):
            self._cork(True)
        for c in chunks:
            if isinstance(c, _BYTES_LIKE):
                n = len(c)
                if n and self._pool is not None:
                    self._pool.force(n)
                    self._out_mem += n
            else:
                n = c.size
            if n:
                self._out.append(c)
                self._out_bytes += n
        if not self._writing:
            self._on_writable()

    def _on_writable(self) -> None:
        if self.tls is not None:
            self._on_writable_tls()
            return
        out = self._out
        try:
            while out:
                chunk = out[0]
                if isinstance(chunk, _BYTES_LIKE):
                    view = memoryview(chunk)[self._out_offset:]
                    sent = self.sock.send(view)
                    remaining = len(view) - sent
                    if self._pool is not None and sent:
                        self._out_mem -= sent
                        self._pool.release(sent)
                else:
                    count = min(chunk.size - self._out_offset, _SENDFILE_CHUNK)
                    sent = os.sendfile(self.fd, chunk.fd, chunk.position + self._out_offset, count)
                    if sent == 0:
                        raise OSError("segment file shorter than the region being sent")
                    remaining = chunk.size - self._out_offset - sent
                self._out_bytes -= sent
                if remaining:
                    self._out_offset += sent
                    continue
                out.popleft()
                self._out_offset = 0
        except (BlockingIOError, InterruptedError):
            if not self._writing:
                self.loop.add_writer(self.fd, self._on_writable)
                self._writing = True
            return
        except OSError as e:
            self.close(f"write failed: {e}")
            return
        self._sent_all()

    def _on_writable_tls(self) -> None:
        """Encrypt a slice at a time while little waits for the socket, and send the records."""
        tls, out, buf = self.tls, self._out, self._tls_out
        assert tls is not None
        try:
            while True:
                while out and len(buf) < _TLS_AHEAD:
                    chunk = out[0]
                    if isinstance(chunk, _BYTES_LIKE):
                        piece: bytes | memoryview = memoryview(chunk)[self._out_offset:self._out_offset + _TLS_SLICE]
                        taken = len(piece)
                        if self._pool is not None and taken:
                            self._out_mem -= taken
                            self._pool.release(taken)
                        left = len(chunk) - self._out_offset - taken
                    else:
                        want = min(chunk.size - self._out_offset, _TLS_SLICE)
                        piece = os.pread(chunk.fd, want, chunk.position + self._out_offset)
                        taken = len(piece)
                        if taken == 0:
                            raise OSError("segment file shorter than the region being sent")
                        left = chunk.size - self._out_offset - taken
                    if taken:
                        tls.encrypt(piece)
                        buf += tls.outgoing()
                    self._out_bytes -= taken
                    if left:
                        self._out_offset += taken
                    else:
                        out.popleft()
                        self._out_offset = 0
                if not buf:
                    break
                sent = self.sock.send(buf)
                del buf[:sent]
        except (BlockingIOError, InterruptedError):
            if not self._writing:
                self.loop.add_writer(self.fd, self._on_writable)
                self._writing = True
            return
        except OSError as e:
            self.close(f"write failed: {e}")
            return
        self._sent_all()

    def _cork(self, on: bool) -> None:
        assert _TCP_CORK is not None
        try:
            self.sock.setsockopt(socket.IPPROTO_TCP, _TCP_CORK, 1 if on else 0)
        except OSError:
            return  # a closed socket: nothing left to hold back
        self._corked = on

    def _sent_all(self) -> None:
        if self._corked:
            self._cork(False)  # the queue drained: the held partial segment goes out now
        self.last_active = time.monotonic()
        if self._writing:
            self.loop.remove_writer(self.fd)
            self._writing = False
        if self._close_when_sent is not None:
            self.close(self._close_when_sent)
            return
        self._maybe_resume_reading()

    # -- closing ---------------------------------------------------------------------------
    def close(self, reason: str | None) -> None:
        if self._closed:
            return
        self._closed = True
        if reason:
            log.info("closed connection from %s: %s", self.peer, reason)
        self._pause_reading()
        if self._writing:
            self.loop.remove_writer(self.fd)
            self._writing = False
        self._out.clear()
        self._tls_out.clear()
        self._queue.clear()
        if self._mute_timer is not None:
            self._mute_timer.cancel()
            self._mute_timer = None
        if self._pool is not None:
            if self._waiting_memory:
                self._pool.cancel(self._memory_freed)
                self._waiting_memory = False
            held, self._charged, self._queued_bytes = self._charged + self._out_mem, 0, 0
            self._out_mem = 0
            self._pool.release(held)
        try:
            self.sock.close()
        except OSError:
            pass
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
        """Forget them: the broker is stopping, the client did not go (BrokerServer.stop)."""
        self._close_callbacks.clear()

    def close_when_sent(self, reason: str) -> None:
        """Read nothing more; close once what is being answered has been sent (a failed login's
        response goes out before the close, as Kafka's)."""
        self._close_when_sent = reason
        self.stop_reading()
        if not self._out and not self._busy and not self._queue:
            self.loop.call_soon(self._on_writable)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def reading(self) -> bool:
        return self._reading

    @property
    def partial_bytes(self) -> int:
        return self._frames.buffered

    @property
    def waiting_memory(self) -> bool:
        return self._waiting_memory

    @property
    def idle(self) -> bool:
        return not self._queue and not self._out and not self._busy and not self._tls_out


def _peer(sock: socket.socket) -> str:
    try:
        host, port = sock.getpeername()[:2]
        return f"{host}:{port}"
    except OSError:
        return "?"
