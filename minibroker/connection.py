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
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import socket
import time
from collections.abc import Callable, Coroutine
from typing import Any

from protocol.framing import FrameError, FrameReader

log = logging.getLogger("minibroker.connection")

_BYTES_LIKE = (bytes, bytearray, memoryview)
_RECV_SIZE = 256 * 1024
_SENDFILE_CHUNK = 8 * 1024 * 1024
_EAGER_BATCH = 16  # requests answered per loop callback before yielding to other connections


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
        listener: str | None = None,
    ):
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock
        self.fd = sock.fileno()
        self.loop = loop
        self.peer = _peer(sock)
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
        self._reading = False
        self._read_stopped = False
        self._closed = False
        self._on_close = on_close
        # time.monotonic() of the last bytes read or written; the server's idle sweep closes a
        # connection quiet for longer than connections.max.idle.ms (Kafka: Selector's idle expiry)
        self.last_active = time.monotonic()
        self._resume_reading()

    # -- reading ---------------------------------------------------------------------------
    def stop_reading(self) -> None:
        """Read no more requests (graceful shutdown); what is queued is still answered."""
        self._read_stopped = True
        self._pause_reading()

    def _resume_reading(self) -> None:
        if not self._reading and not self._closed and not self._read_stopped:
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

    def _on_readable(self) -> None:
        try:
            data = self.sock.recv(_RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self.close(f"read failed: {e}")
            return
        if not data:
            self.close(None)
            return
        self.last_active = time.monotonic()
        self._frames.feed(data)
        try:
            while (frame := self._frames.next_frame()) is not None:
                self._queue.append(frame)
        except FrameError as e:
            log.warning("closing connection from %s: %s", self.peer, e)
            self.close("bad frame")
            return
        if len(self._queue) >= self._max_queued or self._out_bytes > self._max_buffered:
            self._pause_reading()
        if self._queue and not self._busy:
            self._pump()

    # -- handling --------------------------------------------------------------------------
    def _pump(self) -> None:
        """Answer queued requests in order, stepping each handler by hand (see the module
        docstring). Stops at a handler that suspends, and after _EAGER_BATCH requests."""
        self._pump_scheduled = False
        for _ in range(_EAGER_BATCH):
            if self._busy or self._closed or not self._queue:
                return
            coro = self._handle(self, self._queue.popleft())
            try:
                pending = coro.send(None)
            except StopIteration as e:
                self._answer(e.value)
                continue
            except Exception:
                log.exception("connection from %s failed", self.peer)
                self.close("internal error")
                return
            self._busy = True
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
        for c in chunks:
            n = len(c) if isinstance(c, _BYTES_LIKE) else c.size
            if n:
                self._out.append(c)
                self._out_bytes += n
        if not self._writing:
            self._on_writable()

    def _on_writable(self) -> None:
        out = self._out
        try:
            while out:
                chunk = out[0]
                if isinstance(chunk, _BYTES_LIKE):
                    view = memoryview(chunk)[self._out_offset:]
                    # Coalesce small trailing chunks into one send (headers + small bodies).
                    sent = self.sock.send(view)
                    remaining = len(view) - sent
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
        self._queue.clear()
        try:
            self.sock.close()
        except OSError:
            pass
        if self.task is not None and not self.task.done() and asyncio.current_task() is not self.task:
            self.task.cancel()
        if self._on_close:
            self._on_close(self)

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
    def idle(self) -> bool:
        return not self._queue and not self._out and not self._busy


def _peer(sock: socket.socket) -> str:
    try:
        host, port = sock.getpeername()[:2]
        return f"{host}:{port}"
    except OSError:
        return "?"
